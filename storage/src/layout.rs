//! A keyspace's key layout: which typed columns form the partition key and the row key, their
//! directions, and whether partitions are hash-spread.
//!
//! A stored key is `[hash bucket (2 bytes, hash-spread only)] partition key, row key`, each part
//! encoded by `keycodec`. The keyspace itself stands for the table, so keys carry no table id.
//! Invariant: all keys of one partition share the prefix `partition_prefix`, and no other key
//! has that prefix, so a partition is one contiguous range and range partitions can split
//! between partitions without decoding rows.

use crate::error::{Error, Result};
use crate::keycodec::{self, KeyColumn, SortOrder};
use crate::rowcodec::{get_varint, put_varint};
use crate::value::{ScalarType, Value};

/// The longest encoded key (bucket + partition key + row key) the store accepts. Azure Tables
/// allows 1 KiB per key part; we allow the two parts 2 KiB together.
pub const MAX_KEY_BYTES: usize = 2048;

/// Default number of hash buckets for hash-spread partition keys.
pub const DEFAULT_HASH_BUCKETS: u16 = 16;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLayout {
    pub partition: Vec<KeyColumn>,
    pub row: Vec<KeyColumn>,
    /// 0 for ordered partition keys; otherwise the number of hash buckets.
    pub hash_buckets: u16,
}

impl KeyLayout {
    /// Checks that every key column may be part of a key.
    pub fn new(
        partition: Vec<KeyColumn>,
        row: Vec<KeyColumn>,
        hash_buckets: u16,
    ) -> Result<KeyLayout> {
        if partition.is_empty() {
            return Err(Error::Internal(
                "a key layout needs a partition key column".into(),
            ));
        }
        for col in partition.iter().chain(&row) {
            if !col.ty.is_keyable() {
                return Err(Error::UnsupportedKeyType { ty: col.ty });
            }
        }
        Ok(KeyLayout {
            partition,
            row,
            hash_buckets,
        })
    }

    pub fn is_hash_spread(&self) -> bool {
        self.hash_buckets > 0
    }

    fn bucket_len(&self) -> usize {
        if self.is_hash_spread() { 2 } else { 0 }
    }

    /// The hash bucket of an encoded partition key.
    pub fn bucket_of(&self, encoded_partition_key: &[u8]) -> u16 {
        debug_assert!(self.is_hash_spread());
        (fnv1a(encoded_partition_key) % u64::from(self.hash_buckets)) as u16
    }

    /// The prefix shared by all keys of the partition `pk` (bucket included).
    pub fn partition_prefix(&self, pk: &[Value]) -> Result<Vec<u8>> {
        if pk.len() != self.partition.len() {
            return Err(Error::Internal(format!(
                "partition key has {} values for {} columns",
                pk.len(),
                self.partition.len()
            )));
        }
        let mut encoded = Vec::with_capacity(32);
        keycodec::encode_key(&mut encoded, pk, &self.partition)?;
        if !self.is_hash_spread() {
            return Ok(encoded);
        }
        let mut out = Vec::with_capacity(encoded.len() + 2);
        out.extend_from_slice(&self.bucket_of(&encoded).to_be_bytes());
        out.extend_from_slice(&encoded);
        Ok(out)
    }

    /// The key of the row with partition key `pk` and row key `rk`.
    pub fn encode(&self, pk: &[Value], rk: &[Value]) -> Result<Vec<u8>> {
        if rk.len() != self.row.len() {
            return Err(Error::Internal(format!(
                "row key has {} values for {} columns",
                rk.len(),
                self.row.len()
            )));
        }
        let mut key = self.partition_prefix(pk)?;
        keycodec::encode_key(&mut key, rk, &self.row)?;
        check_key_size(key.len())?;
        Ok(key)
    }

    /// Extends a partition prefix with a prefix of the row key (for row range bounds).
    pub fn encode_row_prefix(
        &self,
        partition_prefix: &[u8],
        rk_prefix: &[Value],
    ) -> Result<Vec<u8>> {
        let mut key = partition_prefix.to_vec();
        keycodec::encode_key(&mut key, rk_prefix, &self.row)?;
        Ok(key)
    }

    /// Length of the partition prefix (bucket + partition key) at the front of `key`.
    pub fn partition_prefix_len(&self, key: &[u8]) -> Result<usize> {
        let bucket = self.bucket_len();
        if key.len() < bucket {
            return Err(Error::Corrupt("key shorter than its hash bucket".into()));
        }
        let mut rest = &key[bucket..];
        for col in &self.partition {
            keycodec::skip_value(&mut rest, *col)?;
        }
        Ok(key.len() - rest.len())
    }

    /// Decodes a stored key into its partition key and row key values.
    pub fn decode(&self, key: &[u8]) -> Result<(Vec<Value>, Vec<Value>)> {
        let bucket = self.bucket_len();
        if key.len() < bucket {
            return Err(Error::Corrupt("key shorter than its hash bucket".into()));
        }
        let mut rest = &key[bucket..];
        let mut pk = Vec::with_capacity(self.partition.len());
        for col in &self.partition {
            pk.push(keycodec::decode_value(&mut rest, *col)?);
        }
        let mut rk = Vec::with_capacity(self.row.len());
        for col in &self.row {
            rk.push(keycodec::decode_value(&mut rest, *col)?);
        }
        if !rest.is_empty() {
            return Err(Error::Corrupt("trailing bytes after key".into()));
        }
        Ok((pk, rk))
    }

    pub(crate) fn write_to(&self, out: &mut Vec<u8>) {
        put_varint(out, u64::from(self.hash_buckets));
        for cols in [&self.partition, &self.row] {
            put_varint(out, cols.len() as u64);
            for col in cols {
                out.push(col.ty.tag());
                out.push(u8::from(col.order == SortOrder::Desc));
            }
        }
    }

    pub(crate) fn read_from(input: &mut &[u8]) -> Result<KeyLayout> {
        let hash_buckets = u16::try_from(get_varint(input)?).map_err(|_| corrupt_layout())?;
        let mut parts = Vec::with_capacity(2);
        for _ in 0..2 {
            let n = get_varint(input)? as usize;
            let mut cols = Vec::with_capacity(n.min(64));
            for _ in 0..n {
                if input.len() < 2 {
                    return Err(corrupt_layout());
                }
                let ty = ScalarType::from_tag(input[0]).ok_or_else(corrupt_layout)?;
                let order = if input[1] == 1 {
                    SortOrder::Desc
                } else {
                    SortOrder::Asc
                };
                *input = &input[2..];
                cols.push(KeyColumn { ty, order });
            }
            parts.push(cols);
        }
        let row = parts.pop().unwrap_or_default();
        let partition = parts.pop().unwrap_or_default();
        Ok(KeyLayout {
            partition,
            row,
            hash_buckets,
        })
    }
}

pub(crate) fn check_key_size(size: usize) -> Result<()> {
    if size > MAX_KEY_BYTES {
        return Err(Error::KeyTooLarge {
            size,
            limit: MAX_KEY_BYTES,
        });
    }
    Ok(())
}

fn corrupt_layout() -> Error {
    Error::Corrupt("key layout".into())
}

/// FNV-1a, 64 bits: stable across versions and platforms, which the on-disk bucket needs.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(hash: u16) -> KeyLayout {
        KeyLayout::new(
            vec![
                KeyColumn::asc(ScalarType::Text),
                KeyColumn::asc(ScalarType::Int4),
            ],
            vec![KeyColumn::desc(ScalarType::Int8)],
            hash,
        )
        .unwrap()
    }

    #[test]
    fn keys_decode_and_share_partition_prefix() {
        for hash in [0, 16] {
            let l = layout(hash);
            let pk = vec![Value::Text("NYC".into()), Value::Int4(42)];
            let k1 = l.encode(&pk, &[Value::Int8(1)]).unwrap();
            let k2 = l.encode(&pk, &[Value::Int8(2)]).unwrap();
            let prefix = l.partition_prefix(&pk).unwrap();
            assert!(k1.starts_with(&prefix) && k2.starts_with(&prefix));
            assert!(k2 < k1, "row key is DESC");
            assert_eq!(l.partition_prefix_len(&k1).unwrap(), prefix.len());
            assert_eq!(l.decode(&k1).unwrap(), (pk.clone(), vec![Value::Int8(1)]));
        }
    }

    #[test]
    fn layout_round_trips_and_refuses_bad_keys() {
        let l = layout(16);
        let mut buf = Vec::new();
        l.write_to(&mut buf);
        assert_eq!(KeyLayout::read_from(&mut buf.as_slice()).unwrap(), l);
        let long = "x".repeat(MAX_KEY_BYTES);
        assert!(matches!(
            l.encode(&[Value::Text(long), Value::Int4(1)], &[Value::Int8(1)]),
            Err(Error::KeyTooLarge { .. })
        ));
        assert!(matches!(
            l.encode(&[Value::Null, Value::Int4(1)], &[Value::Int8(1)]),
            Err(Error::NullKeyPart)
        ));
        assert!(KeyLayout::new(vec![KeyColumn::asc(ScalarType::Json)], vec![], 0).is_err());
    }
}
