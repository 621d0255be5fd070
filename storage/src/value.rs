//! Typed values as the store sees them: the physical scalar types of columns and the values
//! that key and row codecs encode.
//!
//! These are physical types. `varchar(n)`, `char(n)` and `text` are all `Text` here; `json` and
//! `jsonb` are `Json`; the SQL layer keeps the declared type and its modifiers. Dates and
//! timestamps use the Unix epoch (as Arrow does), not PostgreSQL's 2000-01-01.

use std::cmp::Ordering;
use std::fmt;

/// The physical type of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric,
    Text,
    Bytea,
    /// Days since 1970-01-01.
    Date,
    /// Microseconds since 1970-01-01 00:00:00, no time zone.
    Timestamp,
    /// Microseconds since 1970-01-01 00:00:00 UTC.
    TimestampTz,
    Uuid,
    Json,
    /// Microseconds since midnight, no time zone.
    Time,
    /// Months, days and microseconds, kept apart as PostgreSQL keeps them.
    Interval,
    /// A one-dimensional array: its elements, each with its own type tag (see
    /// `rowcodec::encode_array`).
    Array,
}

impl ScalarType {
    /// Whether values of this type may be part of a key.
    pub fn is_keyable(self) -> bool {
        // An interval's order is by its span, which its fields' bytes do not give.
        !matches!(
            self,
            ScalarType::Json | ScalarType::Interval | ScalarType::Array
        )
    }

    /// The one-byte tag used by the row codec.
    pub(crate) fn tag(self) -> u8 {
        match self {
            ScalarType::Bool => 1,
            ScalarType::Int2 => 2,
            ScalarType::Int4 => 3,
            ScalarType::Int8 => 4,
            ScalarType::Float4 => 5,
            ScalarType::Float8 => 6,
            ScalarType::Numeric => 7,
            ScalarType::Text => 8,
            ScalarType::Bytea => 9,
            ScalarType::Date => 10,
            ScalarType::Timestamp => 11,
            ScalarType::TimestampTz => 12,
            ScalarType::Uuid => 13,
            ScalarType::Json => 14,
            ScalarType::Time => 15,
            ScalarType::Interval => 16,
            ScalarType::Array => 17,
        }
    }

    pub(crate) fn from_tag(tag: u8) -> Option<ScalarType> {
        Some(match tag {
            1 => ScalarType::Bool,
            2 => ScalarType::Int2,
            3 => ScalarType::Int4,
            4 => ScalarType::Int8,
            5 => ScalarType::Float4,
            6 => ScalarType::Float8,
            7 => ScalarType::Numeric,
            8 => ScalarType::Text,
            9 => ScalarType::Bytea,
            10 => ScalarType::Date,
            11 => ScalarType::Timestamp,
            12 => ScalarType::TimestampTz,
            13 => ScalarType::Uuid,
            14 => ScalarType::Json,
            15 => ScalarType::Time,
            16 => ScalarType::Interval,
            17 => ScalarType::Array,
            _ => return None,
        })
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            ScalarType::Bool => "boolean",
            ScalarType::Int2 => "smallint",
            ScalarType::Int4 => "integer",
            ScalarType::Int8 => "bigint",
            ScalarType::Float4 => "real",
            ScalarType::Float8 => "double precision",
            ScalarType::Numeric => "numeric",
            ScalarType::Text => "text",
            ScalarType::Bytea => "bytea",
            ScalarType::Date => "date",
            ScalarType::Timestamp => "timestamp",
            ScalarType::TimestampTz => "timestamptz",
            ScalarType::Uuid => "uuid",
            ScalarType::Json => "json",
            ScalarType::Time => "time",
            ScalarType::Interval => "interval",
            ScalarType::Array => "array",
        };
        f.write_str(name)
    }
}

/// An exact decimal: `mantissa × 10^-scale`. Up to 38 significant digits, as in Arrow's
/// Decimal128; equality and order are by numeric value, so 1.5 = 1.50.
#[derive(Debug, Clone, Copy)]
pub struct Decimal {
    pub mantissa: i128,
    pub scale: u8,
}

/// The largest scale a `Decimal` may carry.
pub const DECIMAL_MAX_SCALE: u8 = 38;

impl Decimal {
    pub fn new(mantissa: i128, scale: u8) -> Decimal {
        Decimal { mantissa, scale }
    }

    /// The same value with trailing fractional zeros removed.
    pub fn normalized(self) -> Decimal {
        let mut d = self;
        while d.scale > 0 && d.mantissa % 10 == 0 {
            d.mantissa /= 10;
            d.scale -= 1;
        }
        d
    }

    /// The same value at `scale`, if it is representable without loss or overflow.
    pub fn rescaled(self, scale: u8) -> Option<Decimal> {
        let mut d = self;
        while d.scale < scale {
            d.mantissa = d.mantissa.checked_mul(10)?;
            d.scale += 1;
        }
        while d.scale > scale {
            if d.mantissa % 10 != 0 {
                return None;
            }
            d.mantissa /= 10;
            d.scale -= 1;
        }
        Some(d)
    }

    /// Decimal digits of the magnitude, without leading zeros ("0" for zero).
    pub(crate) fn magnitude_digits(self) -> String {
        self.mantissa.unsigned_abs().to_string()
    }
}

impl PartialEq for Decimal {
    fn eq(&self, other: &Decimal) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Decimal {}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Decimal) -> Ordering {
        let (a, b) = (self.normalized(), other.normalized());
        // Bring both to the larger scale; widen through i128 checked math and fall back to
        // comparing sign and digit strings when that overflows.
        let scale = a.scale.max(b.scale);
        match (a.rescaled(scale), b.rescaled(scale)) {
            (Some(x), Some(y)) => x.mantissa.cmp(&y.mantissa),
            _ => crate::keycodec::compare_decimals_by_encoding(a, b),
        }
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.magnitude_digits();
        let sign = if self.mantissa < 0 { "-" } else { "" };
        let scale = self.scale as usize;
        if scale == 0 {
            return write!(f, "{sign}{digits}");
        }
        let padded = format!("{digits:0>width$}", width = scale + 1);
        let (int, frac) = padded.split_at(padded.len() - scale);
        write!(f, "{sign}{int}.{frac}")
    }
}

/// An interval as PostgreSQL keeps one: months, days and microseconds, each with its own
/// sign (`1 mon -2 days`), since a month's days and a day's hours vary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

/// An owned value of one column. `Null` is a value here; keys refuse it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int2(i16),
    Int4(i32),
    Int8(i64),
    Float4(f32),
    Float8(f64),
    Numeric(Decimal),
    Text(String),
    Bytea(Vec<u8>),
    Date(i32),
    Timestamp(i64),
    TimestampTz(i64),
    Uuid([u8; 16]),
    Json(String),
    Time(i64),
    Interval(Interval),
    /// An array's elements as `rowcodec::encode_array` writes them; read them with
    /// `rowcodec::array_elements`.
    Array(Vec<u8>),
}

impl Value {
    /// The physical type of this value, `None` for `Null`.
    pub fn scalar_type(&self) -> Option<ScalarType> {
        Some(match self {
            Value::Null => return None,
            Value::Bool(_) => ScalarType::Bool,
            Value::Int2(_) => ScalarType::Int2,
            Value::Int4(_) => ScalarType::Int4,
            Value::Int8(_) => ScalarType::Int8,
            Value::Float4(_) => ScalarType::Float4,
            Value::Float8(_) => ScalarType::Float8,
            Value::Numeric(_) => ScalarType::Numeric,
            Value::Text(_) => ScalarType::Text,
            Value::Bytea(_) => ScalarType::Bytea,
            Value::Date(_) => ScalarType::Date,
            Value::Timestamp(_) => ScalarType::Timestamp,
            Value::TimestampTz(_) => ScalarType::TimestampTz,
            Value::Uuid(_) => ScalarType::Uuid,
            Value::Json(_) => ScalarType::Json,
            Value::Time(_) => ScalarType::Time,
            Value::Interval(_) => ScalarType::Interval,
            Value::Array(_) => ScalarType::Array,
        })
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Bool(v) => ValueRef::Bool(*v),
            Value::Int2(v) => ValueRef::Int2(*v),
            Value::Int4(v) => ValueRef::Int4(*v),
            Value::Int8(v) => ValueRef::Int8(*v),
            Value::Float4(v) => ValueRef::Float4(*v),
            Value::Float8(v) => ValueRef::Float8(*v),
            Value::Numeric(v) => ValueRef::Numeric(*v),
            Value::Text(v) => ValueRef::Text(v),
            Value::Bytea(v) => ValueRef::Bytea(v),
            Value::Date(v) => ValueRef::Date(*v),
            Value::Timestamp(v) => ValueRef::Timestamp(*v),
            Value::TimestampTz(v) => ValueRef::TimestampTz(*v),
            Value::Uuid(v) => ValueRef::Uuid(*v),
            Value::Json(v) => ValueRef::Json(v),
            Value::Time(v) => ValueRef::Time(*v),
            Value::Interval(v) => ValueRef::Interval(*v),
            Value::Array(v) => ValueRef::Array(v),
        }
    }
}

/// A borrowed value, as the row codec yields it without copying strings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    Null,
    Bool(bool),
    Int2(i16),
    Int4(i32),
    Int8(i64),
    Float4(f32),
    Float8(f64),
    Numeric(Decimal),
    Text(&'a str),
    Bytea(&'a [u8]),
    Date(i32),
    Timestamp(i64),
    TimestampTz(i64),
    Uuid([u8; 16]),
    Json(&'a str),
    Time(i64),
    Interval(Interval),
    /// Encoded elements (see `Value::Array`).
    Array(&'a [u8]),
}

impl ValueRef<'_> {
    pub fn to_owned(self) -> Value {
        match self {
            ValueRef::Null => Value::Null,
            ValueRef::Bool(v) => Value::Bool(v),
            ValueRef::Int2(v) => Value::Int2(v),
            ValueRef::Int4(v) => Value::Int4(v),
            ValueRef::Int8(v) => Value::Int8(v),
            ValueRef::Float4(v) => Value::Float4(v),
            ValueRef::Float8(v) => Value::Float8(v),
            ValueRef::Numeric(v) => Value::Numeric(v),
            ValueRef::Text(v) => Value::Text(v.to_owned()),
            ValueRef::Bytea(v) => Value::Bytea(v.to_vec()),
            ValueRef::Date(v) => Value::Date(v),
            ValueRef::Timestamp(v) => Value::Timestamp(v),
            ValueRef::TimestampTz(v) => Value::TimestampTz(v),
            ValueRef::Uuid(v) => Value::Uuid(v),
            ValueRef::Json(v) => Value::Json(v.to_owned()),
            ValueRef::Time(v) => Value::Time(v),
            ValueRef::Interval(v) => Value::Interval(v),
            ValueRef::Array(v) => Value::Array(v.to_vec()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_display_and_equality() {
        assert_eq!(Decimal::new(-1234, 2).to_string(), "-12.34");
        assert_eq!(Decimal::new(5, 3).to_string(), "0.005");
        assert_eq!(Decimal::new(0, 2).to_string(), "0.00");
        assert_eq!(Decimal::new(150, 2), Decimal::new(15, 1));
        assert!(Decimal::new(-1, 0) < Decimal::new(1, 38));
        assert_eq!(Decimal::new(150, 2).rescaled(1), Some(Decimal::new(15, 1)));
        assert_eq!(Decimal::new(151, 2).rescaled(1), None);
    }
}
