//! PostgreSQL's text output of Arrow values: what the wire layer sends for each value in the
//! text format and COPY writes, and what a cast to text gives (`ts::text`, `'x' || 2.5::float8`).
//! Floats print their shortest round-trip digits, timestamps as `2024-01-01 10:00:00+00` in
//! the zone they carry, intervals as `1 day 02:00:00`, bytea as `\x…`.

use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal128Type, Float16Type, Float32Type, Float64Type,
    Int8Type, Int16Type, Int32Type, Int64Type, IntervalMonthDayNanoType, IntervalUnit,
    Time64MicrosecondType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use std::sync::Arc;

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

pub(crate) fn push_date(days: i64, out: &mut String) {
    use std::fmt::Write;
    if let Ok(days) = i32::try_from(days)
        && sql::types::infinite_date(days)
    {
        out.push_str(if days > 0 { "infinity" } else { "-infinity" });
        return;
    }
    let (y, m, d) = civil_from_days(days);
    if y <= 0 {
        let _ = write!(out, "{:04}-{m:02}-{d:02} BC", 1 - y);
    } else {
        let _ = write!(out, "{y:04}-{m:02}-{d:02}");
    }
}

pub(crate) fn push_time_of_day(micros: i64, out: &mut String) {
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
pub(crate) fn push_timestamp(micros: i64, zone: Option<&Tz>, out: &mut String) {
    if sql::types::infinite_timestamp(micros) {
        out.push_str(if micros > 0 { "infinity" } else { "-infinity" });
        return;
    }
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
pub(crate) fn push_offset(seconds: i32, out: &mut String) {
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

pub fn timestamp_micros(array: &ArrayRef, r: usize, unit: &TimeUnit) -> i64 {
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

/// A duration as whole days (toward zero) and the microseconds left.
pub fn duration_days(array: &ArrayRef, r: usize, unit: &TimeUnit) -> (i32, i64) {
    use datafusion::arrow::datatypes::{
        DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType,
        DurationSecondType,
    };
    let micros = match unit {
        TimeUnit::Second => array
            .as_primitive::<DurationSecondType>()
            .value(r)
            .saturating_mul(1_000_000),
        TimeUnit::Millisecond => array
            .as_primitive::<DurationMillisecondType>()
            .value(r)
            .saturating_mul(1000),
        TimeUnit::Microsecond => array.as_primitive::<DurationMicrosecondType>().value(r),
        TimeUnit::Nanosecond => array.as_primitive::<DurationNanosecondType>().value(r) / 1000,
    };
    const DAY: i64 = 86_400_000_000;
    ((micros / DAY) as i32, micros % DAY)
}

/// An interval as PostgreSQL writes it; only a count of exactly 1 is singular (`-1 days`),
/// and a positive field after a negative one has a `+` (`-1 days +02:00:00`).
pub(crate) fn push_interval(months: i32, days: i32, nanos: i64, out: &mut String) {
    use std::fmt::Write;
    let mut parts = Vec::new();
    let (years, mons) = (months / 12, months % 12);
    // Whether the last field written was negative.
    let mut after_negative = false;
    for (value, unit) in [(years, "year"), (mons, "mon"), (days, "day")] {
        if value != 0 {
            let sign = if after_negative && value > 0 { "+" } else { "" };
            let plural = if value == 1 { "" } else { "s" };
            parts.push(format!("{sign}{value} {unit}{plural}"));
            after_negative = value < 0;
        }
    }
    let micros = nanos / 1000;
    if micros != 0 || parts.is_empty() {
        let mut t = String::new();
        if micros < 0 {
            t.push('-');
        } else if after_negative {
            t.push('+');
        }
        push_time_of_day(micros.abs(), &mut t);
        parts.push(t);
    }
    let _ = write!(out, "{}", parts.join(" "));
}

/// How a session shows values as text: timestamps with a time zone in its zone, intervals
/// in its IntervalStyle (`postgres`, or `iso_8601` as Rails sets it).
#[derive(Debug, Clone)]
pub struct TextStyle {
    pub zone: Tz,
    pub iso_intervals: bool,
}

impl TextStyle {
    /// Timestamps in `zone`, intervals in PostgreSQL's default style.
    pub fn in_zone(zone: Tz) -> TextStyle {
        TextStyle {
            zone,
            iso_intervals: false,
        }
    }
}

/// An interval in ISO 8601's format with designators, as PostgreSQL's `iso_8601`
/// IntervalStyle writes it: `P1Y2M3DT4H5M6.5S`, `PT0S` for zero, each field with its own
/// sign (`P-1DT2H`).
fn push_interval_iso(months: i32, days: i32, nanos: i64, out: &mut String) {
    use std::fmt::Write;
    let micros = nanos / 1000;
    if months == 0 && days == 0 && micros == 0 {
        out.push_str("PT0S");
        return;
    }
    out.push('P');
    let part = |value: i64, unit: char, out: &mut String| {
        if value != 0 {
            let _ = write!(out, "{value}{unit}");
        }
    };
    part(i64::from(months / 12), 'Y', out);
    part(i64::from(months % 12), 'M', out);
    part(i64::from(days), 'D', out);
    if micros != 0 {
        out.push('T');
    }
    const HOUR: i64 = 3_600_000_000;
    part(micros / HOUR, 'H', out);
    part(micros % HOUR / 60_000_000, 'M', out);
    let seconds = micros % 60_000_000;
    if seconds != 0 {
        if seconds < 0 {
            out.push('-');
        }
        let _ = write!(out, "{}", seconds.abs() / 1_000_000);
        let fraction = seconds.abs() % 1_000_000;
        if fraction != 0 {
            let digits = format!("{fraction:06}");
            let _ = write!(out, ".{}", digits.trim_end_matches('0'));
        }
        out.push('S');
    }
}

/// Appends the text form of `array[r]` in `style`.
pub fn write_text(
    array: &ArrayRef,
    r: usize,
    style: &TextStyle,
    out: &mut String,
) -> Result<(), String> {
    use std::fmt::Write;
    let zone = &style.zone;
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
        DataType::Time64(TimeUnit::Nanosecond) => push_time_of_day(
            array
                .as_primitive::<datafusion::arrow::datatypes::Time64NanosecondType>()
                .value(r)
                / 1000,
            out,
        ),
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = array.as_primitive::<IntervalMonthDayNanoType>().value(r);
            match style.iso_intervals {
                true => push_interval_iso(v.months, v.days, v.nanoseconds, out),
                false => push_interval(v.months, v.days, v.nanoseconds, out),
            }
        }
        DataType::Duration(unit) => {
            // A difference of timestamps: whole days, then the time (`1 day 10:00:00`), as
            // PostgreSQL's timestamp subtraction gives it.
            let (days, micros) = duration_days(array, r, unit);
            match style.iso_intervals {
                true => push_interval_iso(0, days, micros * 1000, out),
                false => push_interval(0, days, micros * 1000, out),
            }
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
                    write_text(&values, i, style, &mut item)?;
                    out.push_str(&crate::text::array_item(&item));
                }
            }
            out.push('}');
        }
        // A row value, as PostgreSQL's record output writes it: `(1,"a b",)`.
        DataType::Struct(_) => {
            let row = array.as_struct();
            out.push('(');
            for (i, column) in row.columns().iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if column.is_null(r) || *column.data_type() == DataType::Null {
                    continue;
                }
                let mut item = String::new();
                write_text(column, r, style, &mut item)?;
                // An unconstrained numeric shows its own digits, as at the top level.
                if unconstrained_numeric(column.data_type()) {
                    trim_fraction(&mut item, 0);
                }
                let needs_quotes = item.is_empty()
                    || item
                        .chars()
                        .any(|c| matches!(c, '"' | '\\' | '(' | ')' | ',') || c.is_whitespace());
                if needs_quotes {
                    out.push('"');
                    out.push_str(&item.replace('"', "\"\"").replace('\\', "\\\\"));
                    out.push('"');
                } else {
                    out.push_str(&item);
                }
            }
            out.push(')');
        }
        _ => {
            let formatted = datafusion::arrow::util::display::array_value_to_string(array, r)
                .map_err(|e| e.to_string())?;
            out.push_str(&formatted);
        }
    }
    Ok(())
}

/// Whether `t` is how an unconstrained `numeric` is held (a record's field, which carries
/// no declared type, is told by this alone).
pub fn unconstrained_numeric(t: &DataType) -> bool {
    *t == DataType::Decimal128(
        sql::types::MAX_NUMERIC_PRECISION,
        sql::types::UNCONSTRAINED_NUMERIC_SCALE as i8,
    )
}

/// Drops a decimal text's trailing fractional zeros beyond `least` digits after the point
/// ("1.500" → "1.5" or, with `least` 2, "1.50"; "2.00" → "2").
pub fn trim_fraction(text: &mut String, least: usize) {
    let Some(point) = text.find('.') else {
        return;
    };
    let digits = text[point + 1..].trim_end_matches('0').len().max(least);
    text.truncate(if digits == 0 {
        point
    } else {
        point + 1 + digits
    });
}

/// The name [`OutputText`] is called by.
pub const OUTPUT_TEXT: &str = "partita_text";

/// `partita_text(x)`: `x` as PostgreSQL's output function writes it, for the casts to text
/// whose Arrow form differs (timestamps, intervals, floats, bytea, arrays) and the text of
/// `format`'s, `concat`'s and `concat_ws`'s arguments (`t` for true, where the cast says
/// `true`); a timestamptz in the zone its type carries, the session's.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct OutputText {
    signature: Signature,
    /// For an unconstrained numeric: shown with its own digits, at least these many after
    /// the point (see `digits`).
    own_digits: Option<i8>,
}

impl Default for OutputText {
    fn default() -> Self {
        OutputText {
            signature: Signature::any(1, Volatility::Stable),
            own_digits: None,
        }
    }
}

impl OutputText {
    /// The text of unconstrained numerics, without the trailing zeros beyond `least`
    /// fractional digits.
    pub fn own_digits(least: i8) -> OutputText {
        OutputText {
            own_digits: Some(least),
            ..OutputText::default()
        }
    }

    /// Whether a cast from `from` to text goes through this function.
    pub fn handles(from: &DataType) -> bool {
        matches!(
            from,
            DataType::Timestamp(..)
                | DataType::Date32
                | DataType::Interval(_)
                | DataType::Duration(_)
                | DataType::Float32
                | DataType::Float64
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::BinaryView
                | DataType::List(_)
                | DataType::LargeList(_)
        )
    }
}

impl ScalarUDFImpl for OutputText {
    fn name(&self) -> &str {
        OUTPUT_TEXT
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let array = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let zone: Tz = match array.data_type() {
            DataType::Timestamp(_, Some(tz)) => tz.parse()?,
            DataType::List(item) | DataType::LargeList(item) => match item.data_type() {
                DataType::Timestamp(_, Some(tz)) => tz.parse()?,
                _ => "UTC".parse()?,
            },
            _ => "UTC".parse()?,
        };
        let mut texts = StringBuilder::with_capacity(array.len(), array.len() * 16);
        let mut text = String::new();
        for r in 0..array.len() {
            // An untyped NULL's array has no null buffer: every value of it is NULL.
            if array.is_null(r) || array.data_type() == &DataType::Null {
                texts.append_null();
                continue;
            }
            text.clear();
            write_text(&array, r, &TextStyle::in_zone(zone), &mut text)
                .map_err(DataFusionError::Execution)?;
            if let Some(least) = self.own_digits {
                trim_fraction(&mut text, least.max(0) as usize);
            }
            texts.append_value(&text);
        }
        let texts: ArrayRef = Arc::new(texts.finish());
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&texts, 0)?)
        } else {
            ColumnarValue::Array(texts)
        })
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
    fn own_digits_keep_the_least_scale() {
        let trimmed = |text: &str, least| {
            let mut text = text.to_string();
            trim_fraction(&mut text, least);
            text
        };
        assert_eq!(trimmed("3.7500000000000000", 0), "3.75");
        assert_eq!(trimmed("13.0000000000000000", 0), "13");
        assert_eq!(trimmed("11.0000000000000000", 2), "11.00");
        assert_eq!(trimmed("99.8650000000000000", 2), "99.865");
        assert_eq!(trimmed("-0.1250", 1), "-0.125");
        assert_eq!(trimmed("100", 0), "100");
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
    }
}
