//! Arrow values on the wire: PostgreSQL type OIDs for Arrow fields, and each value in
//! PostgreSQL's text or binary format (floats as PostgreSQL prints them, `t`/`f`, `\x` bytea,
//! ISO timestamps, base-10000 binary numerics).

use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal128Type, Field, Float16Type, Float32Type, Float64Type,
    Int8Type, Int16Type, Int32Type, Int64Type, IntervalMonthDayNanoType, IntervalUnit,
    Time64MicrosecondType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use pgwire::api::Type;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::messages::data::DataRow;
use sql::types::declared_type_name;

/// Days from 1970-01-01 to 2000-01-01 (PostgreSQL's epoch).
const PG_EPOCH_DAYS: i64 = 10_957;
const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS * 86_400_000_000;

/// The PostgreSQL type a column is sent as.
pub fn pg_type(field: &Field) -> Type {
    if let Some(declared) = declared_type_name(field) {
        let base = declared.split('(').next().unwrap_or(declared);
        match base {
            "character varying" => return Type::VARCHAR,
            "character" => return Type::BPCHAR,
            "uuid" => return Type::UUID,
            "json" => return Type::JSON,
            "jsonb" => return Type::JSONB,
            "oid" => return Type::OID,
            "int2vector" => return Type::INT2_VECTOR,
            "oidvector" => return Type::OID_VECTOR,
            "name" => return Type::NAME,
            "\"char\"" => return Type::CHAR,
            _ => {}
        }
    }
    match field.data_type() {
        DataType::Boolean => Type::BOOL,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => Type::INT2,
        DataType::Int32 | DataType::UInt16 => Type::INT4,
        DataType::Int64 | DataType::UInt32 => Type::INT8,
        DataType::UInt64 | DataType::Decimal128(..) | DataType::Decimal256(..) => Type::NUMERIC,
        DataType::Float16 | DataType::Float32 => Type::FLOAT4,
        DataType::Float64 => Type::FLOAT8,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => Type::TEXT,
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => Type::BYTEA,
        DataType::Date32 | DataType::Date64 => Type::DATE,
        DataType::Timestamp(_, None) => Type::TIMESTAMP,
        DataType::Timestamp(_, Some(_)) => Type::TIMESTAMPTZ,
        DataType::Time32(_) | DataType::Time64(_) => Type::TIME,
        DataType::Interval(_) | DataType::Duration(_) => Type::INTERVAL,
        DataType::List(f) | DataType::LargeList(f) => match pg_type(f) {
            Type::INT4 => Type::INT4_ARRAY,
            Type::INT8 => Type::INT8_ARRAY,
            Type::INT2 => Type::INT2_ARRAY,
            Type::FLOAT8 => Type::FLOAT8_ARRAY,
            Type::BOOL => Type::BOOL_ARRAY,
            _ => Type::TEXT_ARRAY,
        },
        _ => Type::TEXT,
    }
}

/// `atttypmod` of a declared type: varchar(n)/char(n) → n + 4, numeric(p,s) → (p << 16 | s) + 4.
fn type_modifier(field: &Field) -> i32 {
    let Some(declared) = declared_type_name(field) else {
        return -1;
    };
    let Some(args) = declared
        .split_once('(')
        .and_then(|(_, rest)| rest.strip_suffix(')'))
    else {
        return -1;
    };
    let nums: Vec<i32> = args
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    match (declared.starts_with("numeric"), nums.as_slice()) {
        (true, [p, s]) => ((p << 16) | s) + 4,
        (false, [n]) => n + 4,
        _ => -1,
    }
}

/// Row description fields for a schema, each in the format the client asked for.
pub fn field_infos(
    schema: &datafusion::arrow::datatypes::Schema,
    format: impl Fn(usize) -> FieldFormat,
) -> Vec<FieldInfo> {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let ty = pg_type(f);
            let size = match ty {
                Type::BOOL => 1,
                Type::INT2 => 2,
                Type::INT4 | Type::FLOAT4 | Type::DATE => 4,
                Type::INT8 | Type::FLOAT8 | Type::TIMESTAMP | Type::TIMESTAMPTZ | Type::TIME => 8,
                Type::UUID => 16,
                _ => -1,
            };
            FieldInfo::new(f.name().clone(), None, None, ty, format(i))
                .with_type_size(size)
                .with_type_modifier(type_modifier(f))
        })
        .collect()
}

/// Which result columns are unconstrained `numeric` columns. Arrow stores them at a fixed
/// scale; they are shown without the trailing zeros that scale adds, so a stored 1.5 reads
/// back as 1.5 (PostgreSQL keeps each value's own scale; Partita keeps its digits).
pub fn unconstrained_numeric_columns(schema: &datafusion::arrow::datatypes::Schema) -> Vec<bool> {
    schema
        .fields()
        .iter()
        .map(|f| {
            matches!(f.data_type(), DataType::Decimal128(..))
                && declared_type_name(f) == Some("numeric")
        })
        .collect()
}

/// Drops a decimal text's trailing fractional zeros ("1.500" → "1.5", "2.00" → "2").
pub(crate) fn trim_fraction(text: &mut String) {
    if text.contains('.') {
        let kept = text.trim_end_matches('0').trim_end_matches('.').len();
        text.truncate(kept);
    }
}

/// Encodes every row of `batch` as DataRow messages; `trim` marks the columns shown without
/// trailing fractional zeros (see `unconstrained_numeric_columns`), timestamptz values are
/// shown in `zone`.
pub fn encode_batch(
    batch: &RecordBatch,
    fields: &[FieldInfo],
    trim: &[bool],
    zone: &Tz,
) -> Result<Vec<DataRow>, String> {
    let mut rows = Vec::with_capacity(batch.num_rows());
    let columns = batch.columns();
    let mut scratch = String::new();
    for r in 0..batch.num_rows() {
        let mut data = BytesMut::with_capacity(columns.len() * 12);
        for (c, array) in columns.iter().enumerate() {
            if array.is_null(r) || array.data_type() == &DataType::Null {
                data.put_i32(-1);
                continue;
            }
            let binary = fields
                .get(c)
                .map(|f| f.format() == FieldFormat::Binary)
                .unwrap_or(false);
            if trim.get(c).copied().unwrap_or(false) {
                scratch.clear();
                encode_text(array, r, zone, &mut scratch)?;
                trim_fraction(&mut scratch);
                if binary {
                    let start = data.len();
                    data.put_i32(0);
                    encode_numeric_binary(&scratch, &mut data);
                    let len = (data.len() - start - 4) as i32;
                    data[start..start + 4].copy_from_slice(&len.to_be_bytes());
                } else {
                    data.put_i32(scratch.len() as i32);
                    data.put_slice(scratch.as_bytes());
                }
            } else if binary {
                let start = data.len();
                data.put_i32(0);
                encode_binary(array, r, fields[c].datatype(), zone, &mut data)?;
                let len = (data.len() - start - 4) as i32;
                data[start..start + 4].copy_from_slice(&len.to_be_bytes());
            } else {
                scratch.clear();
                encode_text(array, r, zone, &mut scratch)?;
                if matches!(
                    fields.get(c).map(|f| f.datatype()),
                    Some(&Type::INT2_VECTOR | &Type::OID_VECTOR)
                ) {
                    // int2vector and oidvector print as "1 2 3".
                    scratch = scratch
                        .trim_matches(|c| c == '{' || c == '}')
                        .replace(',', " ");
                }
                data.put_i32(scratch.len() as i32);
                data.put_slice(scratch.as_bytes());
            }
        }
        rows.push(DataRow::new(data, columns.len() as i16));
    }
    Ok(rows)
}

/// PostgreSQL's float output (extra_float_digits ≥ 1): the shortest digits that round-trip,
/// fixed notation for decimal exponents in [-4, threshold), else `d.ddde±XX`.
pub fn format_float(v: f64, threshold: i32, out: &mut String) {
    if v.is_nan() {
        out.push_str("NaN");
        return;
    }
    if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    let sci = format!("{v:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..threshold).contains(&exp) {
        out.push_str(&v.to_string());
    } else {
        out.push_str(mantissa);
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let abs = exp.unsigned_abs();
        if abs < 10 {
            out.push('0');
        }
        out.push_str(&abs.to_string());
    }
}

fn format_f32(v: f32, out: &mut String) {
    if v.is_finite() && v != 0.0 {
        // Shortest digits of the f32 itself, not of its f64 widening.
        let sci = format!("{v:e}");
        let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        if (-4..6).contains(&exp) {
            out.push_str(&v.to_string());
        } else {
            out.push_str(mantissa);
            out.push('e');
            out.push(if exp < 0 { '-' } else { '+' });
            if exp.unsigned_abs() < 10 {
                out.push('0');
            }
            out.push_str(&exp.unsigned_abs().to_string());
        }
    } else {
        format_float(f64::from(v), 6, out);
    }
}

pub fn format_decimal(mantissa: i128, scale: i8, out: &mut String) {
    let digits = mantissa.unsigned_abs().to_string();
    if mantissa < 0 {
        out.push('-');
    }
    if scale <= 0 {
        out.push_str(&digits);
        for _ in 0..(-scale) {
            out.push('0');
        }
        return;
    }
    let scale = scale as usize;
    if digits.len() <= scale {
        out.push_str("0.");
        for _ in 0..(scale - digits.len()) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let (int, frac) = digits.split_at(digits.len() - scale);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    }
}

/// Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn push_date(days: i64, out: &mut String) {
    use std::fmt::Write;
    let (y, m, d) = civil_from_days(days);
    if y <= 0 {
        let _ = write!(out, "{:04}-{m:02}-{d:02} BC", 1 - y);
    } else {
        let _ = write!(out, "{y:04}-{m:02}-{d:02}");
    }
}

fn push_time_of_day(micros: i64, out: &mut String) {
    use std::fmt::Write;
    let secs = micros / 1_000_000;
    let frac = micros % 1_000_000;
    let _ = write!(
        out,
        "{:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    );
    if frac != 0 {
        let f = format!("{frac:06}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
}

/// A timestamp; `zone` is given for timestamptz, which is shown in that zone with its
/// offset (`2024-01-01 07:00:00-05`, `+05:30`), as PostgreSQL shows it.
fn push_timestamp(micros: i64, zone: Option<&Tz>, out: &mut String) {
    let offset = zone.map(|z| utc_offset_seconds(z, micros));
    let micros = micros.saturating_add(i64::from(offset.unwrap_or(0)) * 1_000_000);
    let days = micros.div_euclid(86_400_000_000);
    let rem = micros.rem_euclid(86_400_000_000);
    let (y, _, _) = civil_from_days(days);
    let bc = y <= 0;
    if bc {
        // BC dates put the era after the time.
        let mut date = String::new();
        push_date(days, &mut date);
        out.push_str(date.trim_end_matches(" BC"));
    } else {
        push_date(days, out);
    }
    out.push(' ');
    push_time_of_day(rem, out);
    if let Some(offset) = offset {
        push_offset(offset, out);
    }
    if bc {
        out.push_str(" BC");
    }
}

/// Seconds `zone` is ahead of UTC at the instant `micros`.
fn utc_offset_seconds(zone: &Tz, micros: i64) -> i32 {
    use chrono::{Offset, TimeZone};
    match chrono::DateTime::from_timestamp_micros(micros) {
        Some(t) => zone
            .offset_from_utc_datetime(&t.naive_utc())
            .fix()
            .local_minus_utc(),
        None => 0,
    }
}

/// `+HH`, `+HH:MM` or `+HH:MM:SS`, as PostgreSQL writes a UTC offset.
fn push_offset(seconds: i32, out: &mut String) {
    use std::fmt::Write;
    let sign = if seconds < 0 { '-' } else { '+' };
    let s = seconds.unsigned_abs();
    let _ = write!(out, "{sign}{:02}", s / 3600);
    if !s.is_multiple_of(3600) {
        let _ = write!(out, ":{:02}", (s / 60) % 60);
    }
    if !s.is_multiple_of(60) {
        let _ = write!(out, ":{:02}", s % 60);
    }
}

fn timestamp_micros(array: &ArrayRef, r: usize, unit: &TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => array
            .as_primitive::<TimestampSecondType>()
            .value(r)
            .saturating_mul(1_000_000),
        TimeUnit::Millisecond => array
            .as_primitive::<TimestampMillisecondType>()
            .value(r)
            .saturating_mul(1000),
        TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().value(r),
        TimeUnit::Nanosecond => array.as_primitive::<TimestampNanosecondType>().value(r) / 1000,
    }
}

fn push_interval(months: i32, days: i32, nanos: i64, out: &mut String) {
    use std::fmt::Write;
    let mut parts = Vec::new();
    let (years, mons) = (months / 12, months % 12);
    if years != 0 {
        parts.push(format!(
            "{years} year{}",
            if years.abs() == 1 { "" } else { "s" }
        ));
    }
    if mons != 0 {
        parts.push(format!(
            "{mons} mon{}",
            if mons.abs() == 1 { "" } else { "s" }
        ));
    }
    if days != 0 {
        parts.push(format!(
            "{days} day{}",
            if days.abs() == 1 { "" } else { "s" }
        ));
    }
    let micros = nanos / 1000;
    if micros != 0 || parts.is_empty() {
        let mut t = String::new();
        if micros < 0 {
            t.push('-');
        }
        push_time_of_day(micros.abs(), &mut t);
        parts.push(t);
    }
    let _ = write!(out, "{}", parts.join(" "));
}

/// Appends the text form of `array[r]`.
/// Timestamps with a time zone are shown in `zone`, the session's.
pub fn encode_text(array: &ArrayRef, r: usize, zone: &Tz, out: &mut String) -> Result<(), String> {
    use std::fmt::Write;
    match array.data_type() {
        DataType::Boolean => out.push(if array.as_boolean().value(r) {
            't'
        } else {
            'f'
        }),
        DataType::Int8 => {
            let _ = write!(out, "{}", array.as_primitive::<Int8Type>().value(r));
        }
        DataType::Int16 => {
            let _ = write!(out, "{}", array.as_primitive::<Int16Type>().value(r));
        }
        DataType::Int32 => {
            let _ = write!(out, "{}", array.as_primitive::<Int32Type>().value(r));
        }
        DataType::Int64 => {
            let _ = write!(out, "{}", array.as_primitive::<Int64Type>().value(r));
        }
        DataType::UInt8 => {
            let _ = write!(out, "{}", array.as_primitive::<UInt8Type>().value(r));
        }
        DataType::UInt16 => {
            let _ = write!(out, "{}", array.as_primitive::<UInt16Type>().value(r));
        }
        DataType::UInt32 => {
            let _ = write!(out, "{}", array.as_primitive::<UInt32Type>().value(r));
        }
        DataType::UInt64 => {
            let _ = write!(out, "{}", array.as_primitive::<UInt64Type>().value(r));
        }
        DataType::Float16 => {
            format_f32(f32::from(array.as_primitive::<Float16Type>().value(r)), out)
        }
        DataType::Float32 => format_f32(array.as_primitive::<Float32Type>().value(r), out),
        DataType::Float64 => format_float(array.as_primitive::<Float64Type>().value(r), 15, out),
        DataType::Decimal128(_, scale) => {
            format_decimal(array.as_primitive::<Decimal128Type>().value(r), *scale, out)
        }
        DataType::Utf8 => out.push_str(array.as_string::<i32>().value(r)),
        DataType::LargeUtf8 => out.push_str(array.as_string::<i64>().value(r)),
        DataType::Utf8View => out.push_str(array.as_string_view().value(r)),
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => {
            let bytes: &[u8] = match array.data_type() {
                DataType::Binary => array.as_binary::<i32>().value(r),
                DataType::LargeBinary => array.as_binary::<i64>().value(r),
                DataType::BinaryView => array.as_binary_view().value(r),
                _ => array.as_fixed_size_binary().value(r),
            };
            out.push_str("\\x");
            for b in bytes {
                let _ = write!(out, "{b:02x}");
            }
        }
        DataType::Date32 => push_date(i64::from(array.as_primitive::<Date32Type>().value(r)), out),
        DataType::Date64 => push_date(
            array
                .as_primitive::<Date64Type>()
                .value(r)
                .div_euclid(86_400_000),
            out,
        ),
        DataType::Timestamp(unit, tz) => push_timestamp(
            timestamp_micros(array, r, unit),
            tz.as_ref().map(|_| zone),
            out,
        ),
        DataType::Time64(TimeUnit::Microsecond) => {
            push_time_of_day(array.as_primitive::<Time64MicrosecondType>().value(r), out)
        }
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = array.as_primitive::<IntervalMonthDayNanoType>().value(r);
            push_interval(v.months, v.days, v.nanoseconds, out);
        }
        DataType::List(_) | DataType::LargeList(_) => {
            let values = match array.data_type() {
                DataType::List(_) => array.as_list::<i32>().value(r),
                _ => array.as_list::<i64>().value(r),
            };
            out.push('{');
            for i in 0..values.len() {
                if i > 0 {
                    out.push(',');
                }
                if values.is_null(i) {
                    out.push_str("NULL");
                } else {
                    let mut item = String::new();
                    encode_text(&values, i, zone, &mut item)?;
                    let needs_quotes = item.is_empty()
                        || item.contains([',', '"', '{', '}', ' ', '\\'])
                        || item.eq_ignore_ascii_case("null");
                    if needs_quotes {
                        out.push('"');
                        out.push_str(&item.replace('\\', "\\\\").replace('"', "\\\""));
                        out.push('"');
                    } else {
                        out.push_str(&item);
                    }
                }
            }
            out.push('}');
        }
        _ => {
            let formatted = datafusion::arrow::util::display::array_value_to_string(array, r)
                .map_err(|e| e.to_string())?;
            out.push_str(&formatted);
        }
    }
    Ok(())
}

/// Appends the binary form of `array[r]` as PostgreSQL type `ty` expects it.
fn encode_binary(
    array: &ArrayRef,
    r: usize,
    ty: &Type,
    zone: &Tz,
    out: &mut BytesMut,
) -> Result<(), String> {
    let as_i64 = |array: &ArrayRef| -> Option<i64> {
        Some(match array.data_type() {
            DataType::Int8 => i64::from(array.as_primitive::<Int8Type>().value(r)),
            DataType::Int16 => i64::from(array.as_primitive::<Int16Type>().value(r)),
            DataType::Int32 => i64::from(array.as_primitive::<Int32Type>().value(r)),
            DataType::Int64 => array.as_primitive::<Int64Type>().value(r),
            DataType::UInt8 => i64::from(array.as_primitive::<UInt8Type>().value(r)),
            DataType::UInt16 => i64::from(array.as_primitive::<UInt16Type>().value(r)),
            DataType::UInt32 => i64::from(array.as_primitive::<UInt32Type>().value(r)),
            _ => return None,
        })
    };
    match *ty {
        Type::BOOL => out.put_u8(u8::from(array.as_boolean().value(r))),
        Type::INT2 => out.put_i16(as_i64(array).ok_or("int2")? as i16),
        Type::INT4 => out.put_i32(as_i64(array).ok_or("int4")? as i32),
        Type::INT8 => out.put_i64(as_i64(array).ok_or("int8")?),
        Type::FLOAT4 => out.put_f32(match array.data_type() {
            DataType::Float16 => f32::from(array.as_primitive::<Float16Type>().value(r)),
            _ => array.as_primitive::<Float32Type>().value(r),
        }),
        Type::FLOAT8 => out.put_f64(array.as_primitive::<Float64Type>().value(r)),
        Type::DATE => {
            let days = match array.data_type() {
                DataType::Date64 => array
                    .as_primitive::<Date64Type>()
                    .value(r)
                    .div_euclid(86_400_000),
                _ => i64::from(array.as_primitive::<Date32Type>().value(r)),
            };
            out.put_i32((days - PG_EPOCH_DAYS) as i32);
        }
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            let DataType::Timestamp(unit, _) = array.data_type() else {
                return Err("timestamp".into());
            };
            out.put_i64(timestamp_micros(array, r, unit) - PG_EPOCH_MICROS);
        }
        Type::UUID => {
            let mut text = String::new();
            encode_text(array, r, zone, &mut text)?;
            let hex: String = text.chars().filter(|c| *c != '-').collect();
            for i in 0..16 {
                out.put_u8(
                    u8::from_str_radix(hex.get(i * 2..i * 2 + 2).ok_or("uuid")?, 16)
                        .map_err(|e| e.to_string())?,
                );
            }
        }
        Type::NUMERIC => {
            let mut text = String::new();
            encode_text(array, r, zone, &mut text)?;
            encode_numeric_binary(&text, out);
        }
        Type::BYTEA => {
            let bytes: &[u8] = match array.data_type() {
                DataType::Binary => array.as_binary::<i32>().value(r),
                DataType::LargeBinary => array.as_binary::<i64>().value(r),
                DataType::BinaryView => array.as_binary_view().value(r),
                DataType::FixedSizeBinary(_) => array.as_fixed_size_binary().value(r),
                _ => return Err("bytea".into()),
            };
            out.put_slice(bytes);
        }
        Type::JSONB => {
            out.put_u8(1);
            let mut text = String::new();
            encode_text(array, r, zone, &mut text)?;
            out.put_slice(text.as_bytes());
        }
        _ => {
            // text, varchar, bpchar, json, name and anything sent as text
            let mut text = String::new();
            encode_text(array, r, zone, &mut text)?;
            out.put_slice(text.as_bytes());
        }
    }
    Ok(())
}

/// PostgreSQL's binary numeric: ndigits, weight, sign, dscale, then base-10000 digits.
pub fn encode_numeric_binary(text: &str, out: &mut BytesMut) {
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if text == "NaN" {
        out.put_i16(0);
        out.put_i16(0);
        out.put_u16(0xC000);
        out.put_i16(0);
        return;
    }
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let dscale = frac.len() as i16;
    let int = int.trim_start_matches('0');
    // Pad the integer part on the left and the fraction on the right to groups of 4.
    let int_pad = (4 - int.len() % 4) % 4;
    let frac_pad = (4 - frac.len() % 4) % 4;
    let digits_str = format!(
        "{}{}{}{}",
        "0".repeat(int_pad),
        int,
        frac,
        "0".repeat(frac_pad)
    );
    let mut groups: Vec<i16> = digits_str
        .as_bytes()
        .chunks(4)
        .map(|c| {
            std::str::from_utf8(c)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0)
        })
        .collect();
    let mut weight = ((int.len() + int_pad) / 4) as i16 - 1;
    while groups.first() == Some(&0) {
        groups.remove(0);
        weight -= 1;
    }
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    out.put_i16(groups.len() as i16);
    out.put_i16(weight);
    out.put_u16(if negative && !groups.is_empty() {
        0x4000
    } else {
        0
    });
    out.put_i16(dscale);
    for g in groups {
        out.put_i16(g);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: f64) -> String {
        let mut s = String::new();
        format_float(v, 15, &mut s);
        s
    }

    #[test]
    fn floats_print_like_postgres() {
        assert_eq!(f(1.5), "1.5");
        assert_eq!(f(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(f(1e20), "1e+20");
        assert_eq!(f(1.5e-7), "1.5e-07");
        assert_eq!(f(123456789012345.0), "123456789012345");
        assert_eq!(f(1e15), "1e+15");
        assert_eq!(f(f64::NAN), "NaN");
        assert_eq!(f(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(f(0.0001), "0.0001");
    }

    #[test]
    fn dates_and_decimals() {
        let mut s = String::new();
        let utc: Tz = "UTC".parse().unwrap();
        push_timestamp(1_700_000_000_123_000, Some(&utc), &mut s);
        assert_eq!(s, "2023-11-14 22:13:20.123+00");
        let mut s = String::new();
        let new_york: Tz = "America/New_York".parse().unwrap();
        push_timestamp(1_700_000_000_000_000, Some(&new_york), &mut s);
        assert_eq!(s, "2023-11-14 17:13:20-05");
        let mut s = String::new();
        let india: Tz = "+05:30".parse().unwrap();
        push_timestamp(1_700_000_000_000_000, Some(&india), &mut s);
        assert_eq!(s, "2023-11-15 03:43:20+05:30");
        let mut s = String::new();
        format_decimal(-5, 2, &mut s);
        assert_eq!(s, "-0.05");
        let mut b = BytesMut::new();
        encode_numeric_binary("12345.678", &mut b);
        assert_eq!(
            &b[..],
            &[0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1a, 0x7c]
        );
    }
}
