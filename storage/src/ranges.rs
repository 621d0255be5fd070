//! Range partitions: each keyspace's key space as contiguous ranges with row and byte counts.
//!
//! A range partition is the physical shard (the seeds' "range partition"): the unit of parallel
//! scans now and of placement on servers later. Ranges start out as one range covering the
//! whole keyspace and split when one passes `split_bytes_max`, always at the first key of a
//! partition, never inside one partition-key value.
//!
//! Invariant: the counts are updated in the same atomic batch as the data they count (the
//! commit leader writes the changed range records into the group's batch), and splits run
//! while no other commit is applied, so after any crash the records match the data.

use crate::engine::{KeyRange, KeyspaceId};
use crate::error::{Error, Result};
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

/// One range partition of a keyspace, as listed for system views, EXPLAIN and parallel scans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangePartition {
    pub keyspace: KeyspaceId,
    pub id: u64,
    /// Inclusive lower bound; empty means the start of the keyspace.
    pub start: Bytes,
    /// Exclusive upper bound; `None` means the end of the keyspace.
    pub end: Option<Bytes>,
    pub rows: i64,
    pub bytes: i64,
}

impl RangePartition {
    pub fn key_range(&self) -> KeyRange {
        KeyRange {
            lower: if self.start.is_empty() {
                Bound::Unbounded
            } else {
                Bound::Included(self.start.clone())
            },
            upper: match &self.end {
                Some(end) => Bound::Excluded(end.clone()),
                None => Bound::Unbounded,
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RangeStats {
    pub id: u64,
    pub rows: i64,
    pub bytes: i64,
}

/// System-keyspace key of a range record: `r`, keyspace id, range start.
pub(crate) fn record_key(keyspace: KeyspaceId, start: &[u8]) -> Bytes {
    let mut key = Vec::with_capacity(5 + start.len());
    key.push(b'r');
    key.extend_from_slice(&keyspace.to_be_bytes());
    key.extend_from_slice(start);
    Bytes::from(key)
}

pub(crate) fn record_value(stats: RangeStats) -> Bytes {
    let mut v = Vec::with_capacity(24);
    v.extend_from_slice(&stats.id.to_le_bytes());
    v.extend_from_slice(&stats.rows.to_le_bytes());
    v.extend_from_slice(&stats.bytes.to_le_bytes());
    Bytes::from(v)
}

pub(crate) fn parse_record(key: &[u8], value: &[u8]) -> Result<(KeyspaceId, Bytes, RangeStats)> {
    let bad = || Error::Corrupt("range partition record".into());
    if key.len() < 5 || key[0] != b'r' || value.len() != 24 {
        return Err(bad());
    }
    let keyspace = KeyspaceId::from_be_bytes(key[1..5].try_into().map_err(|_| bad())?);
    let field =
        |i: usize| -> Result<[u8; 8]> { value[i * 8..i * 8 + 8].try_into().map_err(|_| bad()) };
    let stats = RangeStats {
        id: u64::from_le_bytes(field(0)?),
        rows: i64::from_le_bytes(field(1)?),
        bytes: i64::from_le_bytes(field(2)?),
    };
    Ok((keyspace, Bytes::copy_from_slice(&key[5..]), stats))
}

/// In-memory map of every keyspace's range partitions, keyed by range start.
#[derive(Default)]
pub(crate) struct RangeMap {
    by_keyspace: HashMap<KeyspaceId, BTreeMap<Bytes, RangeStats>>,
    next_id: u64,
    /// Ranges whose last split attempt found no boundary, with the size to try again at.
    retry_at_bytes: HashMap<(KeyspaceId, Bytes), i64>,
}

impl RangeMap {
    pub fn insert_loaded(&mut self, keyspace: KeyspaceId, start: Bytes, stats: RangeStats) {
        self.next_id = self.next_id.max(stats.id + 1);
        self.by_keyspace
            .entry(keyspace)
            .or_default()
            .insert(start, stats);
    }

    fn ranges_mut(&mut self, keyspace: KeyspaceId) -> &mut BTreeMap<Bytes, RangeStats> {
        let next_id = &mut self.next_id;
        self.by_keyspace.entry(keyspace).or_insert_with(|| {
            let id = *next_id;
            *next_id += 1;
            BTreeMap::from([(
                Bytes::new(),
                RangeStats {
                    id,
                    rows: 0,
                    bytes: 0,
                },
            )])
        })
    }

    /// Adds a row/byte delta to the range holding `key`; returns that range's start.
    pub fn apply_delta(
        &mut self,
        keyspace: KeyspaceId,
        key: &[u8],
        rows: i64,
        bytes: i64,
    ) -> Bytes {
        let ranges = self.ranges_mut(keyspace);
        let (start, stats) = ranges
            .range_mut::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()
            .expect("the first range starts at the empty key");
        stats.rows += rows;
        stats.bytes += bytes;
        start.clone()
    }

    pub fn stats(&self, keyspace: KeyspaceId, start: &[u8]) -> Option<RangeStats> {
        self.by_keyspace.get(&keyspace)?.get(start).copied()
    }

    /// The range after the one starting at `start`, as its exclusive end.
    pub fn end_of(&self, keyspace: KeyspaceId, start: &[u8]) -> Option<Bytes> {
        self.by_keyspace
            .get(&keyspace)?
            .range::<[u8], _>((Bound::Excluded(start), Bound::Unbounded))
            .next()
            .map(|(k, _)| k.clone())
    }

    /// Records a split of the range at `start` into `[start, boundary)` and `[boundary, end)`.
    pub fn split(
        &mut self,
        keyspace: KeyspaceId,
        start: &[u8],
        boundary: Bytes,
        left: (i64, i64),
        right: (i64, i64),
    ) -> (RangeStats, RangeStats) {
        let id = self.next_id;
        self.next_id += 1;
        let ranges = self.ranges_mut(keyspace);
        let left_stats = {
            let stats = ranges.get_mut(start).expect("split of an existing range");
            stats.rows = left.0;
            stats.bytes = left.1;
            *stats
        };
        let right_stats = RangeStats {
            id,
            rows: right.0,
            bytes: right.1,
        };
        ranges.insert(boundary, right_stats);
        (left_stats, right_stats)
    }

    pub fn should_try_split(
        &self,
        keyspace: KeyspaceId,
        start: &Bytes,
        bytes: i64,
        split_bytes_max: u64,
    ) -> bool {
        if bytes <= split_bytes_max as i64 {
            return false;
        }
        match self.retry_at_bytes.get(&(keyspace, start.clone())) {
            Some(&at) => bytes >= at,
            None => true,
        }
    }

    pub fn defer_split(&mut self, keyspace: KeyspaceId, start: Bytes, bytes: i64) {
        self.retry_at_bytes
            .insert((keyspace, start), bytes.saturating_mul(2));
    }

    /// Forgets a dropped keyspace; returns the starts of its ranges (to delete their records).
    pub fn remove_keyspace(&mut self, keyspace: KeyspaceId) -> Vec<Bytes> {
        self.retry_at_bytes.retain(|(ks, _), _| *ks != keyspace);
        self.by_keyspace
            .remove(&keyspace)
            .map(|r| r.into_keys().collect())
            .unwrap_or_default()
    }

    pub fn list(&self, keyspace: KeyspaceId) -> Vec<RangePartition> {
        let Some(ranges) = self.by_keyspace.get(&keyspace) else {
            return vec![RangePartition {
                keyspace,
                id: 0,
                start: Bytes::new(),
                end: None,
                rows: 0,
                bytes: 0,
            }];
        };
        let starts: Vec<_> = ranges.keys().cloned().collect();
        ranges
            .iter()
            .enumerate()
            .map(|(i, (start, stats))| RangePartition {
                keyspace,
                id: stats.id,
                start: start.clone(),
                end: starts.get(i + 1).cloned(),
                rows: stats.rows,
                bytes: stats.bytes,
            })
            .collect()
    }
}

/// A split boundary and the (rows, bytes) left and right of it.
pub(crate) type SplitPoint = (Bytes, (i64, i64), (i64, i64));

/// Where to split a range whose rows arrive in key order, given a function that returns the
/// partition prefix of a key. Returns the boundary and the (rows, bytes) on each side, or
/// `None` when the whole range is one partition.
pub(crate) fn choose_split(
    rows: impl Iterator<Item = Result<(Bytes, usize)>>,
    half_bytes: i64,
    partition_prefix: impl Fn(&[u8]) -> Result<usize>,
) -> Result<Option<SplitPoint>> {
    let mut acc = (0i64, 0i64);
    let mut group: Option<Bytes> = None;
    let mut group_start_acc = (0i64, 0i64);
    let mut chosen: Option<(Bytes, (i64, i64))> = None;
    for row in rows {
        let (key, size) = row?;
        let prefix_len = partition_prefix(&key)?;
        let prefix = key.slice(..prefix_len);
        if group.as_ref() != Some(&prefix) {
            if chosen.is_none() && group.is_some() && acc.1 >= half_bytes {
                // Of the partition starts around the middle, take the one closer to it.
                let previous_is_closer =
                    group_start_acc.0 > 0 && half_bytes - group_start_acc.1 < acc.1 - half_bytes;
                chosen = if previous_is_closer {
                    group.clone().map(|g| (g, group_start_acc))
                } else {
                    Some((prefix.clone(), acc))
                };
            }
            group = Some(prefix);
            group_start_acc = acc;
        }
        acc.0 += 1;
        acc.1 += size as i64;
    }
    if chosen.is_none() && group_start_acc.0 > 0 {
        // The second half is one partition: split at its first key instead.
        chosen = group.map(|g| (g, group_start_acc));
    }
    Ok(chosen.map(|(boundary, left)| (boundary, left, (acc.0 - left.0, acc.1 - left.1))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(keys: &[&str]) -> impl Iterator<Item = Result<(Bytes, usize)>> {
        keys.iter()
            .map(|k| Ok((Bytes::copy_from_slice(k.as_bytes()), 10)))
            .collect::<Vec<_>>()
            .into_iter()
    }

    /// Partition prefix = the text before '/'.
    fn prefix(key: &[u8]) -> Result<usize> {
        Ok(key.iter().position(|&b| b == b'/').unwrap_or(key.len()))
    }

    #[test]
    fn splits_between_partitions_only() {
        let keys = ["a/1", "a/2", "b/1", "b/2", "b/3", "c/1"];
        let (boundary, left, right) = choose_split(rows(&keys), 30, prefix).unwrap().unwrap();
        assert_eq!(&boundary[..], b"b");
        assert_eq!(left, (2, 20));
        assert_eq!(right, (4, 40));
    }

    #[test]
    fn falls_back_to_last_partition_start() {
        let keys = ["a/1", "b/1", "b/2", "b/3", "b/4"];
        let (boundary, left, right) = choose_split(rows(&keys), 25, prefix).unwrap().unwrap();
        assert_eq!(&boundary[..], b"b");
        assert_eq!((left, right), ((1, 10), (4, 40)));
    }

    #[test]
    fn one_partition_never_splits() {
        assert!(
            choose_split(rows(&["a/1", "a/2", "a/3"]), 10, prefix)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn deltas_land_in_the_right_range() {
        let mut map = RangeMap::default();
        map.apply_delta(7, b"m", 1, 100);
        let (l, r) = map.split(7, b"", Bytes::from_static(b"k"), (0, 0), (1, 100));
        assert_ne!(l.id, r.id);
        assert_eq!(map.apply_delta(7, b"a", 1, 5), Bytes::new());
        assert_eq!(&map.apply_delta(7, b"z", 1, 5)[..], b"k");
        let list = map.list(7);
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].end.as_deref(), Some(&b"k"[..]));
        assert_eq!((list[1].rows, list[1].bytes), (2, 105));
    }
}
