//! SQL column types: what a column was declared as, and how that maps to the store's physical
//! types and to Arrow.
//!
//! The declared type (with `varchar(n)`, `numeric(p,s)`, …) is kept in the catalog so that
//! length and scale rules are enforced and drivers see the type they created. Arrow fields
//! carry it in their metadata under `FIELD_TYPE_KEY`, so the wire layer can name the right
//! PostgreSQL type for columns Arrow cannot tell apart (text vs varchar, uuid, json).

use crate::error::{Error, Result};
use datafusion::arrow::datatypes::{DataType, Field, IntervalUnit, TimeUnit};
use datafusion::sql::sqlparser::ast::{self, CharacterLength, ExactNumberInfo, TimezoneInfo};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use storage::ScalarType;

/// Arrow field metadata key holding the declared SQL type.
pub const FIELD_TYPE_KEY: &str = "partita.type";
/// Arrow field metadata key of an enum column's type (its `EnumType` as JSON): ORDER BY
/// and `<`/`>` of its values follow its labels' order, and expressions planned over the
/// column's rows alone (CHECK, generated columns) know the type.
pub const ENUM_KEY: &str = "partita.enum";
/// Arrow field metadata key of a result column of unconstrained `numeric` computed from
/// values of known scales: the fractional digits each of its values shows at least.
pub const LEAST_SCALE_KEY: &str = "partita.least_scale";

/// Scale used for `numeric` declared without precision and scale (Arrow needs one): as many
/// fractional digits as PostgreSQL's quotients and averages show, leaving 22 integer digits.
pub const UNCONSTRAINED_NUMERIC_SCALE: u8 = 16;
/// The time zone stored timestamps are labelled with (values are UTC instants).
pub const UTC: &str = "+00:00";
/// Largest numeric precision (Arrow's Decimal128).
pub const MAX_NUMERIC_PRECISION: u8 = 38;

/// The Arrow precision of a declared numeric precision: at most 38.
pub fn arrow_precision(declared: u16) -> u8 {
    declared.min(u16::from(MAX_NUMERIC_PRECISION)) as u8
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SqlType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric {
        /// As declared, up to PostgreSQL's 1000; Arrow holds at most 38 digits.
        precision: Option<u16>,
        scale: Option<u8>,
    },
    Text,
    Varchar {
        length: Option<u32>,
    },
    Char {
        length: u32,
    },
    Bytea,
    Date,
    /// `timestamp(p)` keeps `p` fractional digits of its microseconds (`None`: all six).
    Timestamp {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        precision: Option<u8>,
    },
    TimestampTz {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        precision: Option<u8>,
    },
    Uuid,
    Json,
    Jsonb,
    /// `time(p)`: a time of day, `p` fractional digits of its microseconds kept.
    Time {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        precision: Option<u8>,
    },
    Interval,
    /// A one-dimensional array of `element`s (never itself an array: `int[][]` is `int[]`,
    /// as PostgreSQL does not enforce dimensions either). Element types are interned, so the
    /// type stays `Copy`.
    Array {
        #[serde(deserialize_with = "deserialize_element")]
        element: &'static SqlType,
    },
    /// A type made by CREATE TYPE … AS ENUM, stored as its labels' text. Interned as array
    /// element types are; ALTER TYPE … ADD VALUE makes a new one for the columns of the type.
    Enum {
        #[serde(rename = "enum", deserialize_with = "deserialize_enum")]
        ty: &'static EnumType,
    },
}

/// A type made by CREATE TYPE … AS ENUM: its name, the OID the catalogs show it under, and
/// its labels in their order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EnumType {
    pub name: String,
    pub oid: i32,
    pub labels: Vec<String>,
}

/// `value`, allocated once per distinct value a process meets and kept for its life, so
/// that `SqlType` can refer to it and stay `Copy`.
fn intern<T: Eq + std::hash::Hash + Send + Sync + 'static>(
    set: &std::sync::Mutex<std::collections::HashSet<&'static T>>,
    value: T,
) -> &'static T {
    let mut set = set.lock().unwrap_or_else(|e| e.into_inner());
    match set.get(&value) {
        Some(known) => known,
        None => {
            let leaked: &'static T = Box::leak(Box::new(value));
            set.insert(leaked);
            leaked
        }
    }
}

fn deserialize_enum<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<&'static EnumType, D::Error> {
    EnumType::deserialize(deserializer).map(|ty| match SqlType::enum_of(ty) {
        SqlType::Enum { ty } => ty,
        _ => unreachable!("enum_of gives an enum"),
    })
}

fn deserialize_element<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<&'static SqlType, D::Error> {
    SqlType::deserialize(deserializer).map(|element| match SqlType::array_of(element) {
        SqlType::Array { element } => element,
        _ => unreachable!("array_of gives an array"),
    })
}

impl SqlType {
    /// The type a name spells as PostgreSQL writes it (`character varying(5)[]`, `uuid`), as
    /// the catalog and field metadata keep declared types.
    pub fn parse(name: &str) -> Option<SqlType> {
        SqlType::parse_with(name, &[])
    }

    /// `parse`, with the types made by CREATE TYPE (`user`) among the names it knows.
    pub fn parse_with(name: &str, user: &[SqlType]) -> Option<SqlType> {
        use datafusion::sql::sqlparser::{dialect::PostgreSqlDialect, parser::Parser};
        let parsed = Parser::new(&PostgreSqlDialect {})
            .try_with_sql(name)
            .and_then(|mut p| p.parse_data_type())
            .ok()?;
        SqlType::from_ast_with(&parsed, user).ok()
    }

    /// The array type of `element`s (of `element`'s elements when it is an array).
    pub fn array_of(element: SqlType) -> SqlType {
        use std::collections::HashSet;
        use std::sync::{LazyLock, Mutex};
        static INTERNED: LazyLock<Mutex<HashSet<&'static SqlType>>> =
            LazyLock::new(Default::default);
        if let SqlType::Array { .. } = element {
            return element;
        }
        SqlType::Array {
            element: intern(&INTERNED, element),
        }
    }

    /// The type of enum `ty`.
    pub fn enum_of(ty: EnumType) -> SqlType {
        use std::collections::HashSet;
        use std::sync::{LazyLock, Mutex};
        static INTERNED: LazyLock<Mutex<HashSet<&'static EnumType>>> =
            LazyLock::new(Default::default);
        SqlType::Enum {
            ty: intern(&INTERNED, ty),
        }
    }

    /// The enum type this type is, or is an array of.
    pub fn enum_type(self) -> Option<&'static EnumType> {
        match self {
            SqlType::Enum { ty } => Some(ty),
            SqlType::Array { element } => element.enum_type(),
            _ => None,
        }
    }

    /// The element type of an array type.
    pub fn element(self) -> Option<SqlType> {
        match self {
            SqlType::Array { element } => Some(*element),
            _ => None,
        }
    }

    /// Resolves a parsed type name, refusing the ones Partita does not store (0A000).
    pub fn from_ast(ty: &ast::DataType) -> Result<SqlType> {
        SqlType::from_ast_with(ty, &[])
    }

    /// `from_ast`, with the types made by CREATE TYPE (`user`) among the names it knows.
    pub fn from_ast_with(ty: &ast::DataType, user: &[SqlType]) -> Result<SqlType> {
        use ast::DataType as D;
        if let D::Custom(name, modifiers) = ty
            && modifiers.is_empty()
            && let Some(found) = user.iter().find(|t| match t {
                SqlType::Enum { ty } => {
                    name.0.last().and_then(|p| p.as_ident()).is_some_and(|id| {
                        match id.quote_style {
                            Some(_) => id.value == ty.name,
                            None => id.value.to_lowercase() == ty.name,
                        }
                    })
                }
                _ => false,
            })
        {
            return Ok(*found);
        }
        let char_len = |len: &Option<CharacterLength>| -> Result<Option<u32>> {
            match len {
                None => Ok(None),
                Some(CharacterLength::IntegerLength { length, .. }) => u32::try_from(*length)
                    .ok()
                    .filter(|l| *l > 0)
                    .map(Some)
                    .ok_or_else(|| {
                        Error::InvalidParameter(format!(
                            "length for type varchar must be at least 1 (got {length})"
                        ))
                    }),
                Some(CharacterLength::Max) => Ok(None),
            }
        };
        Ok(match ty {
            D::Bool | D::Boolean => SqlType::Bool,
            D::SmallInt(_) | D::Int2(_) => SqlType::Int2,
            D::Int(_) | D::Integer(_) | D::Int4(_) => SqlType::Int4,
            D::BigInt(_) | D::Int8(_) => SqlType::Int8,
            D::Real | D::Float4 => SqlType::Float4,
            D::DoublePrecision | D::Float8 | D::Double(_) => SqlType::Float8,
            D::Float(info) => match info {
                ExactNumberInfo::Precision(p) if *p <= 24 => SqlType::Float4,
                _ => SqlType::Float8,
            },
            D::Numeric(info) | D::Decimal(info) | D::Dec(info) => {
                let (precision, scale) = match info {
                    ExactNumberInfo::None => (None, None),
                    ExactNumberInfo::Precision(p) => (Some(*p), Some(0)),
                    ExactNumberInfo::PrecisionAndScale(p, s) => (Some(*p), Some(*s)),
                };
                if let Some(p) = precision
                    && (p == 0 || p > 1000)
                {
                    return Err(Error::InvalidParameter(format!(
                        "NUMERIC precision {p} must be between 1 and 1000"
                    )));
                }
                if let (Some(p), Some(s)) = (precision, scale)
                    && (s < 0 || s as u64 > p)
                {
                    return Err(Error::InvalidParameter(format!(
                        "NUMERIC scale {s} must be between 0 and precision {p}"
                    )));
                }
                // Arrow's decimals hold 38 digits: a wider precision keeps the scale and
                // takes values of up to 38 digits (numeric(65,30) up to 10^8).
                if let Some(s) = scale
                    && s > i64::from(MAX_NUMERIC_PRECISION)
                {
                    return Err(Error::Unsupported(format!(
                        "NUMERIC scale {s} (Partita's numeric holds {MAX_NUMERIC_PRECISION} digits)"
                    )));
                }
                SqlType::Numeric {
                    precision: precision.map(|p| p as u16),
                    scale: scale.map(|s| s as u8),
                }
            }
            D::Text | D::String(_) => SqlType::Text,
            D::Varchar(len) | D::CharacterVarying(len) | D::CharVarying(len) => SqlType::Varchar {
                length: char_len(len)?,
            },
            D::Char(len) | D::Character(len) => SqlType::Char {
                length: char_len(len)?.unwrap_or(1),
            },
            D::Bytea => SqlType::Bytea,
            D::Date => SqlType::Date,
            D::Timestamp(precision, tz) => {
                // More than six digits PostgreSQL reduces to six; `timestamp(6)` keeps its
                // precision in the catalog (Rails declares it), as every digit.
                let precision = precision.map(|p| p.min(6) as u8);
                match tz {
                    TimezoneInfo::None | TimezoneInfo::WithoutTimeZone => {
                        SqlType::Timestamp { precision }
                    }
                    TimezoneInfo::WithTimeZone | TimezoneInfo::Tz => {
                        SqlType::TimestampTz { precision }
                    }
                }
            }
            D::Time(precision, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => {
                SqlType::Time {
                    precision: precision.map(|p| p.min(6) as u8),
                }
            }
            D::Interval {
                fields: None,
                precision: None,
            } => SqlType::Interval,
            D::Uuid => SqlType::Uuid,
            D::JSON => SqlType::Json,
            D::JSONB => SqlType::Jsonb,
            D::Array(
                ast::ArrayElemTypeDef::SquareBracket(element, _)
                | ast::ArrayElemTypeDef::AngleBracket(element),
            ) => match SqlType::from_ast_with(element, user)? {
                // Elements the wire reads and writes in binary, and whose text Partita
                // reads and shows as PostgreSQL does.
                element @ (SqlType::Bool
                | SqlType::Int2
                | SqlType::Int4
                | SqlType::Int8
                | SqlType::Float4
                | SqlType::Float8
                | SqlType::Numeric {
                    precision: Some(_), ..
                }
                | SqlType::Text
                | SqlType::Varchar { .. }
                | SqlType::Char { .. }
                | SqlType::Date
                | SqlType::Timestamp { .. }
                | SqlType::TimestampTz { .. }
                | SqlType::Uuid
                | SqlType::Json
                | SqlType::Jsonb
                | SqlType::Enum { .. }
                | SqlType::Array { .. }) => SqlType::array_of(element),
                other => return Err(Error::Unsupported(format!("type {other}[]"))),
            },
            D::Custom(name, _) => match name.to_string().to_ascii_lowercase().as_str() {
                "timestamptz" => SqlType::TimestampTz { precision: None },
                "int" | "int4" => SqlType::Int4,
                "serial" | "serial4" => SqlType::Int4,
                "bigserial" | "serial8" => SqlType::Int8,
                "smallserial" | "serial2" => SqlType::Int2,
                "bpchar" => SqlType::Char { length: 1 },
                other => return Err(Error::UnknownType(other.to_string())),
            },
            other => return Err(Error::Unsupported(format!("type {other}"))),
        })
    }

    /// Whether PostgreSQL converts a value of this type to `to` by an assignment cast (as
    /// ALTER COLUMN … TYPE does without USING): within a type, between number types, between
    /// dates and timestamps, json and jsonb, and from any type to a string type.
    pub fn assigns_to(self, to: SqlType) -> bool {
        use SqlType as T;
        let number = |t| {
            matches!(
                t,
                T::Int2 | T::Int4 | T::Int8 | T::Float4 | T::Float8 | T::Numeric { .. }
            )
        };
        let instant = |t| matches!(t, T::Date | T::Timestamp { .. } | T::TimestampTz { .. });
        let json = |t| matches!(t, T::Json | T::Jsonb);
        std::mem::discriminant(&self) == std::mem::discriminant(&to)
            || matches!(to, T::Text | T::Varchar { .. } | T::Char { .. })
            || (number(self) && number(to))
            || (instant(self) && instant(to))
            || (json(self) && json(to))
    }

    /// The physical type the store keeps.
    pub fn scalar(self) -> ScalarType {
        match self {
            SqlType::Bool => ScalarType::Bool,
            SqlType::Int2 => ScalarType::Int2,
            SqlType::Int4 => ScalarType::Int4,
            SqlType::Int8 => ScalarType::Int8,
            SqlType::Float4 => ScalarType::Float4,
            SqlType::Float8 => ScalarType::Float8,
            SqlType::Numeric { .. } => ScalarType::Numeric,
            SqlType::Text | SqlType::Varchar { .. } | SqlType::Char { .. } => ScalarType::Text,
            SqlType::Bytea => ScalarType::Bytea,
            SqlType::Date => ScalarType::Date,
            SqlType::Timestamp { .. } => ScalarType::Timestamp,
            SqlType::TimestampTz { .. } => ScalarType::TimestampTz,
            SqlType::Uuid => ScalarType::Uuid,
            SqlType::Json | SqlType::Jsonb => ScalarType::Json,
            SqlType::Time { .. } => ScalarType::Time,
            SqlType::Interval => ScalarType::Interval,
            SqlType::Array { .. } => ScalarType::Array,
            SqlType::Enum { .. } => ScalarType::Text,
        }
    }

    /// The Arrow type of the column in query results.
    pub fn arrow(self) -> DataType {
        match self {
            SqlType::Bool => DataType::Boolean,
            SqlType::Int2 => DataType::Int16,
            SqlType::Int4 => DataType::Int32,
            SqlType::Int8 => DataType::Int64,
            SqlType::Float4 => DataType::Float32,
            SqlType::Float8 => DataType::Float64,
            SqlType::Numeric { precision, scale } => DataType::Decimal128(
                precision.map_or(MAX_NUMERIC_PRECISION, arrow_precision),
                scale.unwrap_or(UNCONSTRAINED_NUMERIC_SCALE) as i8,
            ),
            SqlType::Text
            | SqlType::Varchar { .. }
            | SqlType::Char { .. }
            | SqlType::Json
            | SqlType::Jsonb
            | SqlType::Uuid
            | SqlType::Enum { .. } => DataType::Utf8,
            SqlType::Bytea => DataType::Binary,
            SqlType::Date => DataType::Date32,
            SqlType::Timestamp { .. } => DataType::Timestamp(TimeUnit::Microsecond, None),
            SqlType::TimestampTz { .. } => {
                DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into()))
            }
            SqlType::Time { .. } => DataType::Time64(TimeUnit::Microsecond),
            SqlType::Interval => DataType::Interval(IntervalUnit::MonthDayNano),
            SqlType::Array { element } => {
                DataType::List(Arc::new(Field::new_list_field(element.arrow(), true)))
            }
        }
    }

    /// The Arrow type as a session in time zone `zone` sees it: `timestamptz` values are
    /// instants either way, the zone decides how text is read and what `date_trunc`,
    /// `extract` or `::date` mean.
    pub fn arrow_in(self, zone: &str) -> DataType {
        match self {
            SqlType::TimestampTz { .. } => {
                DataType::Timestamp(TimeUnit::Microsecond, Some(zone.into()))
            }
            SqlType::Array { element } => DataType::List(Arc::new(Field::new_list_field(
                element.arrow_in(zone),
                true,
            ))),
            other => other.arrow(),
        }
    }

    /// An Arrow field for a column of this type, with the declared type in its metadata.
    pub fn field(self, name: &str, nullable: bool) -> Field {
        self.field_in(name, nullable, UTC)
    }

    /// `field` as a session in time zone `zone` sees it (see `arrow_in`).
    pub fn field_in(self, name: &str, nullable: bool, zone: &str) -> Field {
        let mut metadata = HashMap::from([(FIELD_TYPE_KEY.to_string(), self.to_string())]);
        if let SqlType::Enum { ty } = self {
            metadata.insert(
                ENUM_KEY.to_string(),
                serde_json::to_string(ty).unwrap_or_default(),
            );
        }
        Field::new(name, self.arrow_in(zone), nullable).with_metadata(metadata)
    }

    /// PostgreSQL's OID of the type (`pg_type.oid`).
    pub fn pg_oid(self) -> i32 {
        match self {
            SqlType::Bool => 16,
            SqlType::Int2 => 21,
            SqlType::Int4 => 23,
            SqlType::Int8 => 20,
            SqlType::Float4 => 700,
            SqlType::Float8 => 701,
            SqlType::Numeric { .. } => 1700,
            SqlType::Text => 25,
            SqlType::Varchar { .. } => 1043,
            SqlType::Char { .. } => 1042,
            SqlType::Bytea => 17,
            SqlType::Date => 1082,
            SqlType::Timestamp { .. } => 1114,
            SqlType::TimestampTz { .. } => 1184,
            SqlType::Uuid => 2950,
            SqlType::Json => 114,
            SqlType::Jsonb => 3802,
            SqlType::Time { .. } => 1083,
            SqlType::Interval => 1186,
            // An enum's array type takes the OID after the enum's.
            SqlType::Array {
                element: SqlType::Enum { ty },
            } => ty.oid + 1,
            SqlType::Array { element } => array_oid(element.pg_oid()),
            SqlType::Enum { ty } => ty.oid,
        }
    }

    /// PostgreSQL's type modifier (`atttypmod`): varchar(n) and char(n) give n + 4,
    /// numeric(p,s) gives (p << 16 | s) + 4, timestamp(p) gives p, the others -1.
    pub fn type_modifier(self) -> i32 {
        match self {
            SqlType::Varchar { length: Some(n) } | SqlType::Char { length: n } => n as i32 + 4,
            SqlType::Numeric {
                precision: Some(p),
                scale,
            } => ((i32::from(p) << 16) | i32::from(scale.unwrap_or(0))) + 4,
            SqlType::Timestamp { precision: Some(p) }
            | SqlType::TimestampTz { precision: Some(p) }
            | SqlType::Time { precision: Some(p) } => i32::from(p),
            SqlType::Array { element } => element.type_modifier(),
            _ => -1,
        }
    }

    /// The SQL type to cast to, as sqlparser spells it.
    pub fn to_ast(self) -> ast::DataType {
        use ast::DataType as D;
        match self {
            SqlType::Bool => D::Boolean,
            SqlType::Int2 => D::SmallInt(None),
            SqlType::Int4 => D::Integer(None),
            SqlType::Int8 => D::BigInt(None),
            SqlType::Float4 => D::Real,
            SqlType::Float8 => D::DoublePrecision,
            SqlType::Numeric { precision, scale } => {
                D::Numeric(ExactNumberInfo::PrecisionAndScale(
                    u64::from(precision.map_or(MAX_NUMERIC_PRECISION, arrow_precision)),
                    i64::from(scale.unwrap_or(UNCONSTRAINED_NUMERIC_SCALE)),
                ))
            }
            SqlType::Text
            | SqlType::Varchar { .. }
            | SqlType::Char { .. }
            | SqlType::Uuid
            | SqlType::Json
            | SqlType::Jsonb
            | SqlType::Enum { .. } => D::Text,
            SqlType::Bytea => D::Bytea,
            SqlType::Date => D::Date,
            SqlType::Timestamp { precision } => {
                D::Timestamp(precision.map(u64::from), TimezoneInfo::None)
            }
            SqlType::TimestampTz { precision } => {
                D::Timestamp(precision.map(u64::from), TimezoneInfo::WithTimeZone)
            }
            // The precision is applied when the value is stored (DataFusion casts to no
            // `time(p)`).
            SqlType::Time { .. } => D::Time(None, TimezoneInfo::None),
            SqlType::Interval => D::Interval {
                fields: None,
                precision: None,
            },
            SqlType::Array { element } => D::Array(ast::ArrayElemTypeDef::SquareBracket(
                Box::new(element.to_ast()),
                None,
            )),
        }
    }
}

/// PostgreSQL's (element type, array type) OID pairs of the types Partita has.
const ARRAY_TYPES: [(i32, i32); 22] = [
    (16, 1000),
    (17, 1001),
    (18, 1002),
    (19, 1003),
    (20, 1016),
    (21, 1005),
    (23, 1007),
    (25, 1009),
    (26, 1028),
    (114, 199),
    (700, 1021),
    (701, 1022),
    (1042, 1014),
    (1043, 1015),
    (1082, 1182),
    (1083, 1183),
    (1114, 1115),
    (1184, 1185),
    (1186, 1187),
    (1700, 1231),
    (2950, 2951),
    (3802, 3807),
];

/// The OID of the array type whose elements have type `element_oid` (`text` → `_text`), 0
/// when PostgreSQL has none.
pub fn array_oid(element_oid: i32) -> i32 {
    ARRAY_TYPES
        .iter()
        .find(|(element, _)| *element == element_oid)
        .map_or(0, |(_, array)| *array)
}

/// The OID of the element type of array type `array_oid`, if it is one of those above.
pub fn element_oid(array_oid: i32) -> Option<i32> {
    ARRAY_TYPES
        .iter()
        .find(|(_, array)| *array == array_oid)
        .map(|(element, _)| *element)
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqlType::Bool => f.write_str("boolean"),
            SqlType::Int2 => f.write_str("smallint"),
            SqlType::Int4 => f.write_str("integer"),
            SqlType::Int8 => f.write_str("bigint"),
            SqlType::Float4 => f.write_str("real"),
            SqlType::Float8 => f.write_str("double precision"),
            SqlType::Numeric {
                precision: Some(p),
                scale,
            } => write!(f, "numeric({p},{})", scale.unwrap_or(0)),
            SqlType::Numeric { .. } => f.write_str("numeric"),
            SqlType::Text => f.write_str("text"),
            SqlType::Varchar { length: Some(n) } => write!(f, "character varying({n})"),
            SqlType::Varchar { length: None } => f.write_str("character varying"),
            SqlType::Char { length } => write!(f, "character({length})"),
            SqlType::Bytea => f.write_str("bytea"),
            SqlType::Date => f.write_str("date"),
            SqlType::Timestamp { precision: None } => f.write_str("timestamp without time zone"),
            SqlType::Timestamp { precision: Some(p) } => {
                write!(f, "timestamp({p}) without time zone")
            }
            SqlType::TimestampTz { precision: None } => f.write_str("timestamp with time zone"),
            SqlType::TimestampTz { precision: Some(p) } => {
                write!(f, "timestamp({p}) with time zone")
            }
            SqlType::Uuid => f.write_str("uuid"),
            SqlType::Json => f.write_str("json"),
            SqlType::Jsonb => f.write_str("jsonb"),
            SqlType::Time { precision: None } => f.write_str("time without time zone"),
            SqlType::Time { precision: Some(p) } => write!(f, "time({p}) without time zone"),
            SqlType::Interval => f.write_str("interval"),
            SqlType::Array { element } => write!(f, "{element}[]"),
            SqlType::Enum { ty } => f.write_str(&crate::catalog::regclass_text(&ty.name)),
        }
    }
}

/// `micros` with `precision` fractional digits of a second (all six when `None`), rounded
/// as PostgreSQL's `timestamp(p)` rounds: half away from its epoch, 2000-01-01.
/// PostgreSQL's `infinity` timestamp, in microseconds (`-infinity` is its negative; its
/// `DT_NOEND` and `DT_NOBEGIN` are i64's extremes, which Partita keeps apart from the
/// smallest value so that negating one gives the other).
pub const TIMESTAMP_INFINITY: i64 = i64::MAX;
/// PostgreSQL's `infinity` date, in days.
pub const DATE_INFINITY: i32 = i32::MAX;

/// Whether a timestamp is `infinity` or `-infinity`.
pub fn infinite_timestamp(micros: i64) -> bool {
    micros == TIMESTAMP_INFINITY || micros == -TIMESTAMP_INFINITY
}

/// Whether a date is `infinity` or `-infinity`.
pub fn infinite_date(days: i32) -> bool {
    days == DATE_INFINITY || days == -DATE_INFINITY
}

pub fn round_timestamp(micros: i64, precision: Option<u8>) -> i64 {
    if infinite_timestamp(micros) {
        return micros;
    }
    const POSTGRES_EPOCH: i128 = 946_684_800_000_000;
    let Some(p) = precision.filter(|p| *p < 6) else {
        return micros;
    };
    let unit = 10i128.pow(u32::from(6 - p));
    let since = i128::from(micros) - POSTGRES_EPOCH;
    let magnitude = (since.abs() + unit / 2) / unit * unit;
    i64::try_from(magnitude * since.signum() + POSTGRES_EPOCH).unwrap_or(micros)
}

/// Parses the `FIELD_TYPE_KEY` metadata value back (for the wire layer).
pub fn declared_type_name(field: &Field) -> Option<&str> {
    field.metadata().get(FIELD_TYPE_KEY).map(String::as_str)
}

/// The enum type whose values a field holds (`ENUM_KEY`).
pub fn enum_type(field: &Field) -> Option<SqlType> {
    let ty: EnumType = serde_json::from_str(field.metadata().get(ENUM_KEY)?).ok()?;
    Some(SqlType::enum_of(ty))
}

/// For a decimal column of unconstrained `numeric`, whose values are shown with their own
/// digits rather than at the column's Arrow scale: the fractional digits each value shows at
/// least (`LEAST_SCALE_KEY`, 0 when absent). `None` for every other column.
pub fn own_digits(field: &Field) -> Option<usize> {
    if !matches!(field.data_type(), DataType::Decimal128(..))
        || declared_type_name(field) != Some("numeric")
    {
        return None;
    }
    let least = field.metadata().get(LEAST_SCALE_KEY);
    Some(least.and_then(|s| s.parse().ok()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_precision_rounds_half_away_from_postgres_epoch() {
        // Microseconds of `seconds` after 1970-01-01 00:00:00 plus `micros`.
        let at = |seconds: i64, micros: i64| seconds * 1_000_000 + micros;
        let day = 86_400;
        // 2024-01-01 10:00:00, 1999-12-31 23:59:59, 2024-03-03 10:11:12, 1500-06-01.
        let (y2024, y1999, march, y1500) =
            (1_704_103_200, 946_684_799, 1_709_460_672, -14_818_723_200);
        let rounded = |micros, p| round_timestamp(micros, Some(p));
        assert_eq!(rounded(at(y2024, 500_000), 0), at(y2024 + 1, 0));
        assert_eq!(rounded(at(y1999, 500_000), 0), at(y1999, 0));
        assert_eq!(rounded(at(march, 345_678), 2), at(march, 350_000));
        assert_eq!(rounded(at(y1500, 4_000), 2), at(y1500, 0));
        assert_eq!(rounded(at(y1500 - day, 996_000), 2), at(y1500 - day + 1, 0));
        assert_eq!(round_timestamp(123, None), 123);
        assert_eq!(round_timestamp(i64::MAX, Some(0)), i64::MAX);
    }

    #[test]
    fn catalogs_written_before_timestamp_precision_still_read() {
        let old: SqlType = serde_json::from_str(r#"{"type":"timestamp"}"#).unwrap();
        assert_eq!(old, SqlType::Timestamp { precision: None });
        let tz: SqlType = serde_json::from_str(r#"{"type":"timestamp_tz"}"#).unwrap();
        assert_eq!(tz, SqlType::TimestampTz { precision: None });
        let declared = SqlType::Timestamp { precision: Some(3) };
        let text = serde_json::to_string(&declared).unwrap();
        assert_eq!(serde_json::from_str::<SqlType>(&text).unwrap(), declared);
        assert_eq!(
            serde_json::to_string(&SqlType::Timestamp { precision: None }).unwrap(),
            r#"{"type":"timestamp"}"#
        );
    }
}
