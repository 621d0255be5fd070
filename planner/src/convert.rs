//! Conversions between stored values and Arrow: column builders for scans, and typed values
//! (with PostgreSQL's length, scale and syntax checks) for writes.

use crate::error::{Error, Result};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder,
    Float32Builder, Float64Builder, Int16Builder, Int32Builder, Int64Builder,
    IntervalMonthDayNanoBuilder, ListArray, StringArray, StringBuilder, Time64MicrosecondBuilder,
    TimestampMicrosecondBuilder,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, FieldRef, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, IntervalMonthDayNano, IntervalMonthDayNanoType, Time64MicrosecondType,
    TimestampMicrosecondType,
};
use sql::types::{MAX_NUMERIC_PRECISION, SqlType, UNCONSTRAINED_NUMERIC_SCALE};
use std::sync::Arc;
use storage::{Decimal, Value, ValueRef};

/// Builds one Arrow column of a declared SQL type from stored values.
pub enum ColumnBuilder {
    Bool(BooleanBuilder),
    Int2(Int16Builder),
    Int4(Int32Builder),
    Int8(Int64Builder),
    Float4(Float32Builder),
    Float8(Float64Builder),
    Numeric(Decimal128Builder, u8, u8),
    Text(StringBuilder),
    Bytea(BinaryBuilder),
    Date(Date32Builder),
    Timestamp(TimestampMicrosecondBuilder),
    Time(Time64MicrosecondBuilder),
    Interval(IntervalMonthDayNanoBuilder),
    /// An array column: its elements' builder, each row's end offset among them, and which
    /// rows are not NULL.
    List {
        element: Box<ColumnBuilder>,
        offsets: Vec<i32>,
        valid: Vec<bool>,
        item: FieldRef,
    },
}

/// Precision and scale Arrow uses for a numeric column.
pub fn numeric_params(ty: SqlType) -> (u8, u8) {
    match ty {
        SqlType::Numeric { precision, scale } => (
            precision.map_or(MAX_NUMERIC_PRECISION, sql::types::arrow_precision),
            scale.unwrap_or(UNCONSTRAINED_NUMERIC_SCALE),
        ),
        _ => (MAX_NUMERIC_PRECISION, 0),
    }
}

impl ColumnBuilder {
    /// A one-row array holding `value` as a column of type `ty`.
    pub fn single(ty: SqlType, value: &Value) -> Option<ArrayRef> {
        let mut builder = ColumnBuilder::new(ty, 1);
        builder.append(value.as_ref()).ok()?;
        Some(builder.finish())
    }

    pub fn new(ty: SqlType, capacity: usize) -> ColumnBuilder {
        match ty {
            SqlType::Bool => ColumnBuilder::Bool(BooleanBuilder::with_capacity(capacity)),
            SqlType::Int2 => ColumnBuilder::Int2(Int16Builder::with_capacity(capacity)),
            SqlType::Int4 => ColumnBuilder::Int4(Int32Builder::with_capacity(capacity)),
            SqlType::Int8 => ColumnBuilder::Int8(Int64Builder::with_capacity(capacity)),
            SqlType::Float4 => ColumnBuilder::Float4(Float32Builder::with_capacity(capacity)),
            SqlType::Float8 => ColumnBuilder::Float8(Float64Builder::with_capacity(capacity)),
            SqlType::Numeric { .. } => {
                let (p, s) = numeric_params(ty);
                ColumnBuilder::Numeric(Decimal128Builder::with_capacity(capacity), p, s)
            }
            SqlType::Text
            | SqlType::Varchar { .. }
            | SqlType::Char { .. }
            | SqlType::Uuid
            | SqlType::Json
            | SqlType::Jsonb
            | SqlType::Enum { .. } => {
                ColumnBuilder::Text(StringBuilder::with_capacity(capacity, capacity * 16))
            }
            SqlType::Bytea => {
                ColumnBuilder::Bytea(BinaryBuilder::with_capacity(capacity, capacity * 16))
            }
            SqlType::Date => ColumnBuilder::Date(Date32Builder::with_capacity(capacity)),
            SqlType::Timestamp { .. } => {
                ColumnBuilder::Timestamp(TimestampMicrosecondBuilder::with_capacity(capacity))
            }
            SqlType::TimestampTz { .. } => ColumnBuilder::Timestamp(
                TimestampMicrosecondBuilder::with_capacity(capacity).with_timezone("+00:00"),
            ),
            SqlType::Time { .. } => {
                ColumnBuilder::Time(Time64MicrosecondBuilder::with_capacity(capacity))
            }
            SqlType::Interval => {
                ColumnBuilder::Interval(IntervalMonthDayNanoBuilder::with_capacity(capacity))
            }
            SqlType::Array { element } => {
                let DataType::List(item) = ty.arrow() else {
                    unreachable!("an array type is a list in Arrow")
                };
                ColumnBuilder::List {
                    element: Box::new(ColumnBuilder::new(*element, capacity * 4)),
                    offsets: Vec::from([0]),
                    valid: Vec::with_capacity(capacity),
                    item,
                }
            }
        }
    }

    pub fn append(&mut self, value: ValueRef<'_>) -> Result<()> {
        match (self, value) {
            (ColumnBuilder::Bool(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Int2(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Int4(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Int8(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Float4(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Float8(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Numeric(b, ..), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Text(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Bytea(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Date(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Timestamp(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Time(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Interval(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::List { offsets, valid, .. }, ValueRef::Null) => {
                offsets.push(offsets.last().copied().unwrap_or(0));
                valid.push(false);
            }
            (
                ColumnBuilder::List {
                    element,
                    offsets,
                    valid,
                    ..
                },
                ValueRef::Array(encoded),
            ) => {
                let elements = storage::rowcodec::array_elements(encoded)
                    .map_err(|e| Error::Internal(format!("stored array: {e}")))?;
                for e in &elements {
                    element.append(*e)?;
                }
                let end = offsets.last().copied().unwrap_or(0) + elements.len() as i32;
                offsets.push(end);
                valid.push(true);
            }
            (ColumnBuilder::Time(b), ValueRef::Time(v)) => b.append_value(v),
            (ColumnBuilder::Interval(b), ValueRef::Interval(v)) => b.append_value(
                IntervalMonthDayNano::new(v.months, v.days, v.micros.saturating_mul(1000)),
            ),
            (ColumnBuilder::Bool(b), ValueRef::Bool(v)) => b.append_value(v),
            (ColumnBuilder::Int2(b), ValueRef::Int2(v)) => b.append_value(v),
            (ColumnBuilder::Int4(b), ValueRef::Int4(v)) => b.append_value(v),
            (ColumnBuilder::Int8(b), ValueRef::Int8(v)) => b.append_value(v),
            (ColumnBuilder::Float4(b), ValueRef::Float4(v)) => b.append_value(v),
            (ColumnBuilder::Float8(b), ValueRef::Float8(v)) => b.append_value(v),
            (ColumnBuilder::Numeric(b, _, scale), ValueRef::Numeric(d)) => {
                let d = d.rescaled(*scale).ok_or_else(|| {
                    Error::Internal(format!("stored numeric {d} does not fit scale {scale}"))
                })?;
                b.append_value(d.mantissa)
            }
            (ColumnBuilder::Text(b), ValueRef::Text(v) | ValueRef::Json(v)) => b.append_value(v),
            (ColumnBuilder::Text(b), ValueRef::Uuid(u)) => b.append_value(format_uuid(&u)),
            (ColumnBuilder::Bytea(b), ValueRef::Bytea(v)) => b.append_value(v),
            (ColumnBuilder::Date(b), ValueRef::Date(v)) => b.append_value(v),
            (ColumnBuilder::Timestamp(b), ValueRef::Timestamp(v) | ValueRef::TimestampTz(v)) => {
                b.append_value(v)
            }
            (_, other) => {
                return Err(Error::Internal(format!(
                    "stored value {other:?} does not match its column type"
                )));
            }
        }
        Ok(())
    }

    pub fn finish(self) -> ArrayRef {
        match self {
            ColumnBuilder::Bool(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Int2(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Int4(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Int8(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Float4(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Float8(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Numeric(mut b, p, s) => Arc::new(
                b.finish()
                    .with_precision_and_scale(p, s as i8)
                    .expect("precision and scale were validated at CREATE TABLE"),
            ),
            ColumnBuilder::Text(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Bytea(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Date(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Timestamp(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Time(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Interval(mut b) => Arc::new(b.finish()),
            ColumnBuilder::List {
                element,
                offsets,
                valid,
                item,
            } => Arc::new(ListArray::new(
                item,
                OffsetBuffer::new(offsets.into()),
                element.finish(),
                Some(NullBuffer::from(valid)),
            )),
        }
    }
}

pub fn format_uuid(u: &[u8; 16]) -> String {
    let hex: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

pub fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let t = text.trim();
    let t = t
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or(t);
    let hex: String = t.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[i * 2..i * 2 + 2], 16).ok()?;
    }
    Some(out)
}

/// Reads row `row` of `array` (already cast to `ty`'s Arrow type) as a value to store,
/// applying the declared type's rules: varchar/char length (22001), numeric precision
/// (22003), uuid and json syntax (22P02). `char(n)` is blank-padded as PostgreSQL does.
pub fn value_from_array(array: &ArrayRef, row: usize, ty: SqlType, column: &str) -> Result<Value> {
    if array.is_null(row) {
        return Ok(Value::Null);
    }
    let wanted = ty.arrow();
    let string_like = matches!(
        array.data_type(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    );
    let binary_like = matches!(
        array.data_type(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    );
    // A decimal of another precision or scale is rounded and checked below: a cast to the
    // column's would make an overflowing value NULL.
    let decimal = matches!(array.data_type(), DataType::Decimal128(..))
        && matches!(wanted, DataType::Decimal128(..));
    if let SqlType::Array { element } = ty {
        return array_value(array, row, *element, column);
    }
    // Interval text is read as PostgreSQL reads it (`01:30:00`, `1 day 2 hours ago`).
    if string_like && ty == SqlType::Interval {
        let text = string_at(array, row).unwrap_or_default();
        let v = crate::interval_input::parse(text).ok_or_else(|| Error::InvalidText {
            ty: "interval".into(),
            value: text.to_string(),
        })?;
        return Ok(Value::Interval(storage::Interval {
            months: v.months,
            days: v.days,
            micros: v.nanoseconds / 1000,
        }));
    }
    // Time text that does not read is bad input, not NULL (Arrow's lenient cast).
    if string_like && matches!(ty, SqlType::Time { .. }) {
        let options = datafusion::arrow::compute::CastOptions {
            safe: false,
            ..Default::default()
        };
        let one =
            datafusion::arrow::compute::cast_with_options(&array.slice(row, 1), &wanted, &options)
                .map_err(|_| Error::InvalidText {
                    ty: "time".into(),
                    value: string_at(array, row).unwrap_or_default().to_string(),
                })?;
        return value_from_array(&one, 0, ty, column);
    }
    let readable = string_like || decimal || (binary_like && wanted == DataType::Binary);
    if array.data_type() != &wanted && !readable {
        // DataFusion picked another width or unit (a CAST to timestamp yields nanoseconds).
        let one = datafusion::arrow::compute::cast(&array.slice(row, 1), &wanted)
            .map_err(|e| Error::DataFusion(e.into()))?;
        return value_from_array(&one, 0, ty, column);
    }
    let mismatch = || {
        Error::Internal(format!(
            "column {column}: got {} for {ty}",
            array.data_type()
        ))
    };
    Ok(match ty {
        SqlType::Bool => Value::Bool(array.as_boolean_opt().ok_or_else(mismatch)?.value(row)),
        SqlType::Int2 => Value::Int2(
            array
                .as_primitive_opt::<Int16Type>()
                .ok_or_else(mismatch)?
                .value(row),
        ),
        SqlType::Int4 => Value::Int4(
            array
                .as_primitive_opt::<Int32Type>()
                .ok_or_else(mismatch)?
                .value(row),
        ),
        SqlType::Int8 => Value::Int8(
            array
                .as_primitive_opt::<Int64Type>()
                .ok_or_else(mismatch)?
                .value(row),
        ),
        SqlType::Float4 => Value::Float4(
            array
                .as_primitive_opt::<Float32Type>()
                .ok_or_else(mismatch)?
                .value(row),
        ),
        SqlType::Float8 => Value::Float8(
            array
                .as_primitive_opt::<Float64Type>()
                .ok_or_else(mismatch)?
                .value(row),
        ),
        SqlType::Numeric { .. } => {
            let arr = array
                .as_primitive_opt::<Decimal128Type>()
                .ok_or_else(mismatch)?;
            let (precision, scale) = numeric_params(ty);
            let DataType::Decimal128(_, array_scale) = arr.data_type() else {
                return Err(mismatch());
            };
            let d = Decimal::new(arr.value(row), (*array_scale).max(0) as u8);
            let d = round_decimal(d, scale).ok_or_else(|| {
                Error::NumericOverflow(format!("numeric field overflow in column \"{column}\""))
            })?;
            // An unconstrained numeric keeps only the digits the value has.
            let d = match ty {
                SqlType::Numeric { scale: None, .. } => d.normalized(),
                _ => d,
            };
            if d.mantissa.unsigned_abs() >= 10u128.pow(u32::from(precision)) {
                return Err(field_overflow(precision, scale));
            }
            Value::Numeric(d)
        }
        SqlType::Text
        | SqlType::Varchar { .. }
        | SqlType::Char { .. }
        | SqlType::Uuid
        | SqlType::Json
        | SqlType::Jsonb
        | SqlType::Enum { .. } => {
            let text = string_at(array, row).ok_or_else(mismatch)?;
            match ty {
                SqlType::Enum { ty } if !ty.labels.iter().any(|l| l == text) => {
                    return Err(Error::InvalidEnumValue {
                        ty: sql::catalog::regclass_text(&ty.name),
                        value: text.to_string(),
                    });
                }
                SqlType::Varchar { length: Some(n) } => {
                    let trimmed = text.trim_end_matches(' ');
                    if text.chars().count() > n as usize {
                        if trimmed.chars().count() > n as usize {
                            return Err(Error::StringTooLong(format!(
                                "value too long for type character varying({n})"
                            )));
                        }
                        Value::Text(text.chars().take(n as usize).collect())
                    } else {
                        Value::Text(text.to_string())
                    }
                }
                SqlType::Char { length } => {
                    let n = length as usize;
                    let count = text.chars().count();
                    if count > n {
                        if text.trim_end_matches(' ').chars().count() > n {
                            return Err(Error::StringTooLong(format!(
                                "value too long for type character({length})"
                            )));
                        }
                        Value::Text(text.chars().take(n).collect())
                    } else {
                        let mut padded = text.to_string();
                        padded.extend(std::iter::repeat_n(' ', n - count));
                        Value::Text(padded)
                    }
                }
                SqlType::Uuid => {
                    Value::Uuid(parse_uuid(text).ok_or_else(|| Error::InvalidText {
                        ty: "uuid".into(),
                        value: text.to_string(),
                    })?)
                }
                SqlType::Json | SqlType::Jsonb => {
                    let invalid = |_| Error::InvalidText {
                        ty: ty.to_string(),
                        value: text.to_string(),
                    };
                    // json keeps its text; jsonb is stored in its normal form.
                    match ty {
                        SqlType::Json => {
                            crate::json::value::Json::parse(text).map_err(invalid)?;
                            Value::Json(text.to_string())
                        }
                        _ => Value::Json(
                            crate::json::value::Json::parse_jsonb(text)
                                .map_err(invalid)?
                                .to_jsonb_text(),
                        ),
                    }
                }
                _ => Value::Text(text.to_string()),
            }
        }
        SqlType::Bytea if string_like => {
            let text = string_at(array, row).ok_or_else(mismatch)?;
            Value::Bytea(parse_bytea(text).ok_or_else(|| Error::InvalidText {
                ty: "bytea".into(),
                value: text.to_string(),
            })?)
        }
        SqlType::Bytea => Value::Bytea(match array.data_type() {
            DataType::Binary => array.as_binary::<i32>().value(row).to_vec(),
            DataType::LargeBinary => array.as_binary::<i64>().value(row).to_vec(),
            DataType::BinaryView => array.as_binary_view().value(row).to_vec(),
            _ => return Err(mismatch()),
        }),
        SqlType::Date => Value::Date(
            array
                .as_primitive_opt::<Date32Type>()
                .ok_or_else(mismatch)?
                .value(row),
        ),
        SqlType::Timestamp { precision } => Value::Timestamp(sql::types::round_timestamp(
            array
                .as_primitive_opt::<TimestampMicrosecondType>()
                .ok_or_else(mismatch)?
                .value(row),
            precision,
        )),
        SqlType::TimestampTz { precision } => Value::TimestampTz(sql::types::round_timestamp(
            array
                .as_primitive_opt::<TimestampMicrosecondType>()
                .ok_or_else(mismatch)?
                .value(row),
            precision,
        )),
        SqlType::Time { precision } => {
            let micros = array
                .as_primitive_opt::<Time64MicrosecondType>()
                .ok_or_else(mismatch)?
                .value(row);
            let unit = 10i64.pow(u32::from(6 - precision.unwrap_or(6).min(6)));
            Value::Time((micros + unit / 2) / unit * unit)
        }
        SqlType::Interval => {
            let v = array
                .as_primitive_opt::<IntervalMonthDayNanoType>()
                .ok_or_else(mismatch)?
                .value(row);
            Value::Interval(storage::Interval {
                months: v.months,
                days: v.days,
                micros: v.nanoseconds / 1000,
            })
        }
        SqlType::Array { .. } => unreachable!("arrays are read by array_value"),
    })
}

/// Row `row` of `array` (a list, or array text such as `{a,"b c",NULL}`) as an array of
/// `element`s to store, each element checked as a column of that type would be.
fn array_value(array: &ArrayRef, row: usize, element: SqlType, column: &str) -> Result<Value> {
    let items: ArrayRef = match array.data_type() {
        DataType::List(item) | DataType::LargeList(item)
            if matches!(item.data_type(), DataType::List(_) | DataType::LargeList(_)) =>
        {
            return Err(Error::Unsupported("a multidimensional array value".into()));
        }
        DataType::List(_) => array.as_list::<i32>().value(row),
        DataType::LargeList(_) => array.as_list::<i64>().value(row),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let text = string_at(array, row).unwrap_or_default();
            let items = crate::arrays::parse_text_array(text)
                .ok_or_else(|| Error::MalformedArray(text.to_string()))?;
            Arc::new(StringArray::from(items))
        }
        other => {
            return Err(Error::DatatypeMismatch(format!(
                "column \"{column}\" is of type {} but expression is of type {other}",
                SqlType::array_of(element)
            )));
        }
    };
    // Elements of the types kept as text (strings, uuids, json, enums) are read from their
    // text below; the others are converted as a cast to the element type would, refusing
    // bad text (22P02).
    let text_element = element.arrow() == DataType::Utf8;
    let items = match text_element || items.data_type() == &element.arrow() {
        true => items,
        false => {
            let one = ListArray::new(
                Arc::new(datafusion::arrow::datatypes::Field::new_list_field(
                    items.data_type().clone(),
                    true,
                )),
                OffsetBuffer::from_lengths([items.len()]),
                items,
                None,
            );
            // A bad element's error (22P02) is reported through DataFusion's, as a cast's.
            let converted = crate::arrays::to_list(&(Arc::new(one) as ArrayRef), &element.arrow())?;
            converted.as_list::<i32>().value(0)
        }
    };
    let mut elements = Vec::with_capacity(items.len());
    for i in 0..items.len() {
        elements.push(value_from_array(&items, i, element, column)?);
    }
    Ok(Value::Array(storage::rowcodec::encode_array(&elements)))
}

fn string_at(array: &ArrayRef, row: usize) -> Option<&str> {
    match array.data_type() {
        DataType::Utf8 => Some(array.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => Some(array.as_string::<i64>().value(row)),
        DataType::Utf8View => Some(array.as_string_view().value(row)),
        _ => None,
    }
}

/// PostgreSQL's bytea input: `\x` followed by hex digits, or the escape format where `\\`
/// is a backslash and `\nnn` an octal byte.
pub fn parse_bytea(text: &str) -> Option<Vec<u8>> {
    if let Some(hex) = text.strip_prefix("\\x") {
        let hex: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        if !hex.len().is_multiple_of(2) {
            return None;
        }
        return hex
            .chunks(2)
            .map(|c| {
                std::str::from_utf8(c)
                    .ok()
                    .and_then(|s| u8::from_str_radix(s, 16).ok())
            })
            .collect();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            if bytes.get(i + 1) == Some(&b'\\') {
                out.push(b'\\');
                i += 2;
            } else {
                let oct = std::str::from_utf8(bytes.get(i + 1..i + 4)?).ok()?;
                out.push(u8::from_str_radix(oct, 8).ok()?);
                i += 4;
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// A value too large for `numeric(precision, scale)`, in PostgreSQL's words.
pub fn field_overflow(precision: u8, scale: u8) -> Error {
    Error::FieldOverflow { precision, scale }
}

/// The DETAIL of a [`field_overflow`] error, as PostgreSQL words it.
pub fn field_overflow_detail(precision: u8, scale: u8) -> String {
    let bound = match precision.saturating_sub(scale) {
        0 => "1".to_string(),
        digits => format!("10^{digits}"),
    };
    format!(
        "A field with precision {precision}, scale {scale} must round to an absolute value less than {bound}."
    )
}

/// Rounds half away from zero to `scale` digits, as PostgreSQL's numeric does.
pub fn round_decimal(d: Decimal, scale: u8) -> Option<Decimal> {
    if d.scale <= scale {
        return d.rescaled(scale);
    }
    let drop = u32::from(d.scale - scale);
    let factor = 10i128.checked_pow(drop)?;
    let q = d.mantissa / factor;
    let r = d.mantissa % factor;
    let q = if r.abs() * 2 >= factor {
        q + d.mantissa.signum()
    } else {
        q
    };
    Some(Decimal::new(q, scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_round_trip_and_rounding() {
        let u = parse_uuid("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11").unwrap();
        assert_eq!(format_uuid(&u), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
        assert!(parse_uuid("not-a-uuid").is_none());
        assert_eq!(
            round_decimal(Decimal::new(12345, 3), 2),
            Some(Decimal::new(1235, 2))
        );
        assert_eq!(
            round_decimal(Decimal::new(-12345, 3), 2),
            Some(Decimal::new(-1235, 2))
        );
        assert_eq!(
            round_decimal(Decimal::new(5, 0), 2),
            Some(Decimal::new(500, 2))
        );
    }
}
