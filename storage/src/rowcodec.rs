//! The encoding of a row's column values (the stored value under a row key).
//!
//! Layout: format byte, schema version (varint), column count (varint), then per column a type
//! tag (0 for NULL) and the value: fixed-width types little-endian, text/bytea/json as varint
//! length + bytes, numeric as 16-byte mantissa + scale. The tag makes rows self-describing, so a
//! row written before `ADD COLUMN` decodes with fewer columns and the SQL layer fills the rest
//! from the schema version's defaults. Decoding borrows strings from the stored bytes.

use crate::error::{Error, Result};
use crate::value::{Decimal, Interval, ScalarType, Value, ValueRef};

const FORMAT_V1: u8 = 1;

/// Encodes `values` as a row written under `schema_version`.
pub fn encode_row(schema_version: u32, values: &[Value]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + values.len() * 9);
    out.push(FORMAT_V1);
    put_varint(&mut out, u64::from(schema_version));
    put_varint(&mut out, values.len() as u64);
    for value in values {
        encode_field(&mut out, value.as_ref());
    }
    out
}

/// Encodes borrowed values; the same bytes as `encode_row`.
pub fn encode_row_refs(schema_version: u32, values: &[ValueRef<'_>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + values.len() * 9);
    out.push(FORMAT_V1);
    put_varint(&mut out, u64::from(schema_version));
    put_varint(&mut out, values.len() as u64);
    for value in values {
        encode_field(&mut out, *value);
    }
    out
}

fn encode_field(out: &mut Vec<u8>, value: ValueRef<'_>) {
    let Some(ty) = value_type(value) else {
        out.push(0);
        return;
    };
    out.push(ty.tag());
    match value {
        ValueRef::Null => {}
        ValueRef::Bool(v) => out.push(u8::from(v)),
        ValueRef::Int2(v) => out.extend_from_slice(&v.to_le_bytes()),
        ValueRef::Int4(v) | ValueRef::Date(v) => out.extend_from_slice(&v.to_le_bytes()),
        ValueRef::Int8(v)
        | ValueRef::Timestamp(v)
        | ValueRef::TimestampTz(v)
        | ValueRef::Time(v) => out.extend_from_slice(&v.to_le_bytes()),
        ValueRef::Interval(v) => {
            out.extend_from_slice(&v.months.to_le_bytes());
            out.extend_from_slice(&v.days.to_le_bytes());
            out.extend_from_slice(&v.micros.to_le_bytes());
        }
        ValueRef::Float4(v) => out.extend_from_slice(&v.to_le_bytes()),
        ValueRef::Float8(v) => out.extend_from_slice(&v.to_le_bytes()),
        ValueRef::Numeric(d) => {
            out.extend_from_slice(&d.mantissa.to_le_bytes());
            out.push(d.scale);
        }
        ValueRef::Text(s) | ValueRef::Json(s) => put_bytes(out, s.as_bytes()),
        ValueRef::Bytea(b) | ValueRef::Array(b) => put_bytes(out, b),
        ValueRef::Uuid(u) => out.extend_from_slice(&u),
    }
}

fn value_type(value: ValueRef<'_>) -> Option<ScalarType> {
    Some(match value {
        ValueRef::Null => return None,
        ValueRef::Bool(_) => ScalarType::Bool,
        ValueRef::Int2(_) => ScalarType::Int2,
        ValueRef::Int4(_) => ScalarType::Int4,
        ValueRef::Int8(_) => ScalarType::Int8,
        ValueRef::Float4(_) => ScalarType::Float4,
        ValueRef::Float8(_) => ScalarType::Float8,
        ValueRef::Numeric(_) => ScalarType::Numeric,
        ValueRef::Text(_) => ScalarType::Text,
        ValueRef::Bytea(_) => ScalarType::Bytea,
        ValueRef::Date(_) => ScalarType::Date,
        ValueRef::Timestamp(_) => ScalarType::Timestamp,
        ValueRef::TimestampTz(_) => ScalarType::TimestampTz,
        ValueRef::Uuid(_) => ScalarType::Uuid,
        ValueRef::Json(_) => ScalarType::Json,
        ValueRef::Time(_) => ScalarType::Time,
        ValueRef::Interval(_) => ScalarType::Interval,
        ValueRef::Array(_) => ScalarType::Array,
    })
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
pub(crate) fn get_varint(input: &mut &[u8]) -> Result<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = input
            .split_first()
            .ok_or_else(|| corrupt("truncated varint"))?;
        *input = rest;
        v |= u64::from(b & 0x7F) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(corrupt("varint too long"))
}

#[cold]
fn corrupt(what: &str) -> Error {
    Error::Corrupt(format!("row encoding: {what}"))
}

/// Walks the columns of an encoded row without copying.
pub struct RowReader<'a> {
    input: &'a [u8],
    schema_version: u32,
    remaining: usize,
}

impl<'a> RowReader<'a> {
    #[inline]
    pub fn new(mut input: &'a [u8]) -> Result<RowReader<'a>> {
        let (&format, rest) = input.split_first().ok_or_else(|| corrupt("empty row"))?;
        if format != FORMAT_V1 {
            return Err(corrupt("unknown row format"));
        }
        input = rest;
        let schema_version =
            u32::try_from(get_varint(&mut input)?).map_err(|_| corrupt("schema version"))?;
        let remaining =
            usize::try_from(get_varint(&mut input)?).map_err(|_| corrupt("column count"))?;
        Ok(RowReader {
            input,
            schema_version,
            remaining,
        })
    }

    pub fn schema_version(&self) -> u32 {
        self.schema_version
    }

    /// Columns not yet read.
    pub fn remaining(&self) -> usize {
        self.remaining
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.input.len() < n {
            return Err(corrupt("truncated field"));
        }
        let (head, rest) = self.input.split_at(n);
        self.input = rest;
        Ok(head)
    }

    #[inline]
    fn take_array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let bytes = self.take(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    #[inline]
    fn take_len_prefixed(&mut self) -> Result<&'a [u8]> {
        let len =
            usize::try_from(get_varint(&mut self.input)?).map_err(|_| corrupt("field length"))?;
        self.take(len)
    }

    /// Steps over the next column without decoding it (a scan that does not need it);
    /// `false` past the last column.
    #[inline]
    pub fn skip_value(&mut self) -> Result<bool> {
        if self.remaining == 0 {
            return Ok(false);
        }
        self.remaining -= 1;
        let [tag] = self.take_array::<1>()?;
        if tag == 0 {
            return Ok(true);
        }
        let width = match ScalarType::from_tag(tag).ok_or_else(|| corrupt("unknown type tag"))? {
            ScalarType::Bool => 1,
            ScalarType::Int2 => 2,
            ScalarType::Int4 | ScalarType::Date | ScalarType::Float4 => 4,
            ScalarType::Int8
            | ScalarType::Timestamp
            | ScalarType::TimestampTz
            | ScalarType::Time
            | ScalarType::Float8 => 8,
            ScalarType::Numeric => 17,
            ScalarType::Uuid | ScalarType::Interval => 16,
            ScalarType::Text | ScalarType::Json | ScalarType::Bytea | ScalarType::Array => {
                self.take_len_prefixed()?;
                return Ok(true);
            }
        };
        self.take(width)?;
        Ok(true)
    }

    /// The next column's value, or `None` past the last column.
    #[inline]
    pub fn next_value(&mut self) -> Result<Option<ValueRef<'a>>> {
        if self.remaining == 0 {
            return Ok(None);
        }
        self.remaining -= 1;
        let [tag] = self.take_array::<1>()?;
        if tag == 0 {
            return Ok(Some(ValueRef::Null));
        }
        let ty = ScalarType::from_tag(tag).ok_or_else(|| corrupt("unknown type tag"))?;
        let value = match ty {
            ScalarType::Bool => ValueRef::Bool(self.take_array::<1>()?[0] != 0),
            ScalarType::Int2 => ValueRef::Int2(i16::from_le_bytes(self.take_array()?)),
            ScalarType::Int4 => ValueRef::Int4(i32::from_le_bytes(self.take_array()?)),
            ScalarType::Date => ValueRef::Date(i32::from_le_bytes(self.take_array()?)),
            ScalarType::Int8 => ValueRef::Int8(i64::from_le_bytes(self.take_array()?)),
            ScalarType::Timestamp => ValueRef::Timestamp(i64::from_le_bytes(self.take_array()?)),
            ScalarType::TimestampTz => {
                ValueRef::TimestampTz(i64::from_le_bytes(self.take_array()?))
            }
            ScalarType::Time => ValueRef::Time(i64::from_le_bytes(self.take_array()?)),
            ScalarType::Interval => ValueRef::Interval(Interval {
                months: i32::from_le_bytes(self.take_array()?),
                days: i32::from_le_bytes(self.take_array()?),
                micros: i64::from_le_bytes(self.take_array()?),
            }),
            ScalarType::Float4 => ValueRef::Float4(f32::from_le_bytes(self.take_array()?)),
            ScalarType::Float8 => ValueRef::Float8(f64::from_le_bytes(self.take_array()?)),
            ScalarType::Numeric => {
                let mantissa = i128::from_le_bytes(self.take_array()?);
                let [scale] = self.take_array::<1>()?;
                ValueRef::Numeric(Decimal::new(mantissa, scale))
            }
            ScalarType::Text => ValueRef::Text(
                std::str::from_utf8(self.take_len_prefixed()?)
                    .map_err(|_| corrupt("text is not UTF-8"))?,
            ),
            ScalarType::Json => ValueRef::Json(
                std::str::from_utf8(self.take_len_prefixed()?)
                    .map_err(|_| corrupt("json is not UTF-8"))?,
            ),
            ScalarType::Bytea => ValueRef::Bytea(self.take_len_prefixed()?),
            ScalarType::Array => ValueRef::Array(self.take_len_prefixed()?),
            ScalarType::Uuid => ValueRef::Uuid(self.take_array()?),
        };
        Ok(Some(value))
    }
}

/// Encodes an array's elements (NULLs among them) for `Value::Array`: their count, then each
/// as a row's column is encoded. An element that is itself an array is not expected (arrays are
/// one-dimensional), though it would encode.
pub fn encode_array(elements: &[Value]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + elements.len() * 9);
    put_varint(&mut out, elements.len() as u64);
    for element in elements {
        encode_field(&mut out, element.as_ref());
    }
    out
}

/// The elements of an array `encode_array` wrote, borrowing their text.
pub fn array_elements(mut encoded: &[u8]) -> Result<Vec<ValueRef<'_>>> {
    let count = usize::try_from(get_varint(&mut encoded)?).map_err(|_| corrupt("array length"))?;
    let mut reader = RowReader {
        input: encoded,
        schema_version: 0,
        remaining: count,
    };
    let mut elements = Vec::with_capacity(count.min(encoded.len()));
    while let Some(v) = reader.next_value()? {
        elements.push(v);
    }
    Ok(elements)
}

/// Decodes a whole row into owned values, with its schema version.
pub fn decode_row(input: &[u8]) -> Result<(u32, Vec<Value>)> {
    let mut reader = RowReader::new(input)?;
    let mut values = Vec::with_capacity(reader.remaining());
    while let Some(v) = reader.next_value()? {
        values.push(v.to_owned());
    }
    Ok((reader.schema_version(), values))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row with a value of every stored type.
    fn every_type() -> Vec<Value> {
        vec![
            Value::Null,
            Value::Bool(true),
            Value::Int2(-2),
            Value::Int4(-4),
            Value::Int8(i64::MIN),
            Value::Float4(1.5),
            Value::Float8(-0.25),
            Value::Numeric(Decimal::new(-12345, 2)),
            Value::Text("héllo\0".into()),
            Value::Bytea(vec![0, 1, 255]),
            Value::Date(-1),
            Value::Timestamp(1_700_000_000_000_000),
            Value::TimestampTz(-5),
            Value::Uuid([7; 16]),
            Value::Json("{\"a\": 1}".into()),
            Value::Time(86_399_999_999),
            Value::Interval(Interval {
                months: 14,
                days: -3,
                micros: -7_200_000_001,
            }),
            Value::Array(encode_array(&[
                Value::Text("a".into()),
                Value::Null,
                Value::Text("{b}".into()),
            ])),
        ]
    }

    #[test]
    fn skipping_a_column_lands_on_the_next() {
        let row = every_type();
        let encoded = encode_row(1, &row);
        // Skip every column but one, for each column in turn.
        for keep in 0..row.len() {
            let mut reader = RowReader::new(&encoded).unwrap();
            for (i, expected) in row.iter().enumerate() {
                if i == keep {
                    assert_eq!(reader.next_value().unwrap().unwrap().to_owned(), *expected);
                } else {
                    assert!(reader.skip_value().unwrap());
                }
            }
            assert!(!reader.skip_value().unwrap());
        }
    }

    #[test]
    fn round_trip_every_type() {
        let row = every_type();
        let bytes = encode_row(3, &row);
        let refs: Vec<_> = row.iter().map(Value::as_ref).collect();
        assert_eq!(encode_row_refs(3, &refs), bytes);
        let (version, back) = decode_row(&bytes).unwrap();
        assert_eq!(version, 3);
        assert_eq!(back, row);
        let Value::Array(encoded) = &row[row.len() - 1] else {
            unreachable!()
        };
        assert_eq!(
            array_elements(encoded).unwrap(),
            [ValueRef::Text("a"), ValueRef::Null, ValueRef::Text("{b}")]
        );
    }

    #[test]
    fn corrupt_rows_are_errors_not_panics() {
        let bytes = encode_row(1, &[Value::Text("abc".into()), Value::Int8(9)]);
        for cut in 0..bytes.len() {
            assert!(decode_row(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(decode_row(&[9]).is_err());
    }
}
