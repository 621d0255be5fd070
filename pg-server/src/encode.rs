//! Arrow values on the wire: PostgreSQL type OIDs for Arrow fields (from
//! `planner::pg_catalog::field_type_oid`), and each value in PostgreSQL's text format
//! (`planner::output`) or binary format (base-10000 numerics, one-dimensional arrays,
//! times and intervals as microseconds, days and months).

use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, Field, Float16Type, Float32Type, Float64Type, Int8Type,
    Int16Type, Int32Type, Int64Type, IntervalMonthDayNanoType, IntervalUnit, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimeUnit, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use pgwire::api::Type;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::messages::data::DataRow;
use planner::output::{TextStyle, trim_fraction, write_text};
use sql::types::declared_type_name;

/// Days from 1970-01-01 to 2000-01-01 (PostgreSQL's epoch).
const PG_EPOCH_DAYS: i64 = 10_957;
const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS * 86_400_000_000;

/// The PostgreSQL type a column is sent as.
pub fn pg_type(field: &Field) -> Type {
    let oid = planner::pg_catalog::field_type_oid(field);
    Type::from_oid(oid as u32).unwrap_or(Type::TEXT)
}

/// `atttypmod` of a declared type: varchar(n)/char(n) → n + 4, numeric(p,s) → (p << 16 | s) + 4.
fn type_modifier(field: &Field) -> i32 {
    let Some(declared) = declared_type_name(field) else {
        return -1;
    };
    // An array's is its element type's (`character varying(20)[]`: 24).
    let declared = declared.strip_suffix("[]").unwrap_or(declared);
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

/// Whether rows of `a` and `b` have the same columns' PostgreSQL types.
pub fn same_row_type(
    a: &datafusion::arrow::datatypes::Schema,
    b: &datafusion::arrow::datatypes::Schema,
) -> bool {
    a.fields().len() == b.fields().len()
        && a.fields()
            .iter()
            .zip(b.fields())
            .all(|(x, y)| pg_type(x) == pg_type(y))
}

/// For each result column: when it is an unconstrained `numeric` shown with its values' own
/// digits, the fractional digits each value shows at least (`sql::types::own_digits`). Arrow
/// stores such a column at a fixed scale, and its values are sent without the trailing
/// zeros that scale adds, so a stored 1.5 reads back as 1.5.
pub fn own_digit_columns(schema: &datafusion::arrow::datatypes::Schema) -> Vec<Option<usize>> {
    schema
        .fields()
        .iter()
        .map(|f| sql::types::own_digits(f))
        .collect()
}

/// Encodes every row of `batch` as DataRow messages; `trim` gives the columns shown with
/// their values' own digits (see `own_digit_columns`), timestamptz values are
/// shown in `style`.
pub fn encode_batch(
    batch: &RecordBatch,
    fields: &[FieldInfo],
    trim: &[Option<usize>],
    style: &TextStyle,
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
            let least = trim.get(c).copied().flatten();
            if binary {
                put_binary_field(array, r, fields[c].datatype(), least, style, &mut data)?;
            } else if let Some(least) = least {
                scratch.clear();
                write_text(array, r, style, &mut scratch)?;
                trim_fraction(&mut scratch, least);
                data.put_i32(scratch.len() as i32);
                data.put_slice(scratch.as_bytes());
            } else {
                scratch.clear();
                write_text(array, r, style, &mut scratch)?;
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

/// Appends `array[r]`, not NULL, as a field in binary: its length, then its binary form as
/// PostgreSQL type `ty` has it. `least`: the column is an unconstrained numeric shown with
/// its values' own digits (see `own_digit_columns`).
pub fn put_binary_field(
    array: &ArrayRef,
    r: usize,
    ty: &Type,
    least: Option<usize>,
    style: &TextStyle,
    out: &mut BytesMut,
) -> Result<(), String> {
    let start = out.len();
    out.put_i32(0);
    match least {
        Some(least) => {
            let mut text = String::new();
            write_text(array, r, style, &mut text)?;
            trim_fraction(&mut text, least);
            encode_numeric_binary(&text, out);
        }
        None => encode_binary(array, r, ty, style, out)?,
    }
    let len = (out.len() - start - 4) as i32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

/// Appends the binary form of `array[r]` as PostgreSQL type `ty` expects it.
fn encode_binary(
    array: &ArrayRef,
    r: usize,
    ty: &Type,
    style: &TextStyle,
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
            // Row numbers, ranks and lengths: far below i64::MAX.
            DataType::UInt64 => array.as_primitive::<UInt64Type>().value(r) as i64,
            _ => return None,
        })
    };
    match *ty {
        Type::BOOL => out.put_u8(u8::from(array.as_boolean().value(r))),
        Type::INT2 => out.put_i16(as_i64(array).ok_or("int2")? as i16),
        Type::INT4 => out.put_i32(as_i64(array).ok_or("int4")? as i32),
        Type::INT8 => out.put_i64(as_i64(array).ok_or("int8")?),
        Type::OID => out.put_u32(as_i64(array).ok_or("oid")? as u32),
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
            // Infinite dates are sent as PostgreSQL keeps them: the extremes, not offset.
            match i32::try_from(days) {
                Ok(d) if sql::types::infinite_date(d) => {
                    out.put_i32(if d > 0 { i32::MAX } else { i32::MIN })
                }
                _ => out.put_i32((days - PG_EPOCH_DAYS) as i32),
            }
        }
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            let DataType::Timestamp(unit, _) = array.data_type() else {
                return Err("timestamp".into());
            };
            let micros = planner::output::timestamp_micros(array, r, unit);
            match sql::types::infinite_timestamp(micros) {
                true => out.put_i64(if micros > 0 { i64::MAX } else { i64::MIN }),
                false => out.put_i64(micros - PG_EPOCH_MICROS),
            }
        }
        Type::UUID => {
            let mut text = String::new();
            write_text(array, r, style, &mut text)?;
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
            write_text(array, r, style, &mut text)?;
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
            write_text(array, r, style, &mut text)?;
            out.put_slice(text.as_bytes());
        }
        Type::TIME => out.put_i64(match array.data_type() {
            DataType::Time64(TimeUnit::Microsecond) => {
                array.as_primitive::<Time64MicrosecondType>().value(r)
            }
            DataType::Time64(TimeUnit::Nanosecond) => {
                array.as_primitive::<Time64NanosecondType>().value(r) / 1000
            }
            DataType::Time32(TimeUnit::Millisecond) => {
                i64::from(array.as_primitive::<Time32MillisecondType>().value(r)) * 1000
            }
            DataType::Time32(TimeUnit::Second) => {
                i64::from(array.as_primitive::<Time32SecondType>().value(r)) * 1_000_000
            }
            _ => return Err("time".into()),
        }),
        Type::INTERVAL => {
            let (months, days, micros) = match array.data_type() {
                DataType::Interval(IntervalUnit::MonthDayNano) => {
                    let v = array.as_primitive::<IntervalMonthDayNanoType>().value(r);
                    (v.months, v.days, v.nanoseconds / 1000)
                }
                DataType::Duration(unit) => {
                    let (days, micros) = planner::output::duration_days(array, r, unit);
                    (0, days, micros)
                }
                _ => return Err("interval".into()),
            };
            out.put_i64(micros);
            out.put_i32(days);
            out.put_i32(months);
        }
        _ if matches!(
            array.data_type(),
            DataType::List(_) | DataType::LargeList(_)
        ) =>
        {
            // One dimension from 1: ndim, has-nulls, element type, length and lower bound,
            // then each element's length and binary form (-1 for NULL).
            let (DataType::List(item) | DataType::LargeList(item)) = array.data_type() else {
                return Err("array".into());
            };
            // An array column's declared type names its element type; a computed list's
            // element field does.
            let element = &sql::types::element_oid(ty.oid() as i32)
                .and_then(|oid| Type::from_oid(oid as u32))
                .unwrap_or_else(|| pg_type(item));
            let values = match array.data_type() {
                DataType::List(_) => array.as_list::<i32>().value(r),
                _ => array.as_list::<i64>().value(r),
            };
            out.put_i32(i32::from(!values.is_empty()));
            out.put_i32(i32::from(values.null_count() > 0));
            out.put_u32(element.oid());
            if !values.is_empty() {
                out.put_i32(values.len() as i32);
                out.put_i32(1);
            }
            for i in 0..values.len() {
                if values.is_null(i) {
                    out.put_i32(-1);
                    continue;
                }
                let start = out.len();
                out.put_i32(0);
                encode_binary(&values, i, element, style, out)?;
                let len = (out.len() - start - 4) as i32;
                out[start..start + 4].copy_from_slice(&len.to_be_bytes());
            }
        }
        _ => {
            // text, varchar, bpchar, json, name and anything sent as text
            let mut text = String::new();
            write_text(array, r, style, &mut text)?;
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

    #[test]
    fn numerics_in_binary() {
        let mut b = BytesMut::new();
        encode_numeric_binary("12345.678", &mut b);
        assert_eq!(
            &b[..],
            &[0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1a, 0x7c]
        );
    }
}
