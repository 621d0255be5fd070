//! `to_char` with PostgreSQL's template patterns. DataFusion's `to_char` takes chrono's
//! `%Y-%m-%d` patterns and returns a PostgreSQL pattern such as `YYYY-MM-DD` unchanged; this
//! one, registered under the same name, formats timestamps, timestamptz (in their zone),
//! dates, intervals and numbers as PostgreSQL does for the common template patterns.

use crate::output::timestamp_micros;
use chrono::{Datelike, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, IntervalMonthDayNanoType,
    IntervalUnit,
};
use datafusion::arrow::datatypes::{Int16Type, Int32Type, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use std::fmt::Write;
use std::sync::Arc;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ToChar {
    signature: Signature,
}

impl Default for ToChar {
    fn default() -> Self {
        ToChar {
            signature: Signature::any(2, Volatility::Stable),
        }
    }
}

impl ScalarUDFImpl for ToChar {
    fn name(&self) -> &str {
        "to_char"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let value = args.args[0].to_array(n)?;
        let format = datafusion::arrow::compute::cast(&args.args[1].to_array(n)?, &DataType::Utf8)?;
        let format = format.as_string::<i32>();
        let zone = match value.data_type() {
            DataType::Timestamp(_, Some(tz)) => Some(
                tz.parse::<Tz>()
                    .map_err(|e| DataFusionError::Execution(e.to_string()))?,
            ),
            _ => None,
        };
        // A named zone's abbreviations (EST, CEST) come from its IANA rules.
        let named: Option<chrono_tz::Tz> = match value.data_type() {
            DataType::Timestamp(_, Some(tz)) => tz.parse().ok(),
            _ => None,
        };
        let mut out = StringBuilder::new();
        let mut text = String::new();
        for r in 0..n {
            if value.is_null(r) || format.is_null(r) {
                out.append_null();
                continue;
            }
            // `infinity` has no fields to write: PostgreSQL's to_char is NULL.
            let infinite = match value.data_type() {
                DataType::Timestamp(unit, _) => {
                    sql::types::infinite_timestamp(timestamp_micros(&value, r, unit))
                }
                DataType::Date32 => {
                    sql::types::infinite_date(value.as_primitive::<Date32Type>().value(r))
                }
                _ => false,
            };
            if infinite {
                out.append_null();
                continue;
            }
            text.clear();
            let template = format.value(r);
            match value.data_type() {
                DataType::Timestamp(unit, _) => {
                    let micros = timestamp_micros(&value, r, unit);
                    let utc = chrono::DateTime::from_timestamp_micros(micros).ok_or_else(|| {
                        DataFusionError::Execution("timestamp out of range".into())
                    })?;
                    match &zone {
                        Some(tz) => {
                            let local = tz.from_utc_datetime(&utc.naive_utc());
                            let offset = local.offset().fix().local_minus_utc();
                            // A named zone's abbreviation (EST); a fixed offset is written
                            // as PostgreSQL names it (UTC, +05).
                            let mut abbreviation = match &named {
                                Some(named) => {
                                    use chrono_tz::OffsetName;
                                    (named.offset_from_utc_datetime(&utc.naive_utc()))
                                        .abbreviation()
                                        .unwrap_or_default()
                                        .to_string()
                                }
                                None => local.offset().to_string(),
                            };
                            if abbreviation.is_empty() || abbreviation.starts_with(['+', '-']) {
                                abbreviation = match offset {
                                    0 => "UTC".to_string(),
                                    _ => {
                                        let mut text = String::new();
                                        crate::output::push_offset(offset, &mut text);
                                        text
                                    }
                                };
                            }
                            let moment = Moment {
                                at: local.naive_local(),
                                zone: Some((offset, abbreviation)),
                                span: None,
                            };
                            format_datetime(&moment, template, &mut text)?;
                        }
                        None => {
                            let moment = Moment {
                                at: utc.naive_utc(),
                                zone: None,
                                span: None,
                            };
                            format_datetime(&moment, template, &mut text)?;
                        }
                    }
                }
                DataType::Date32 => {
                    let days = value.as_primitive::<Date32Type>().value(r);
                    let date = days
                        .checked_add(719_163)
                        .and_then(NaiveDate::from_num_days_from_ce_opt)
                        .ok_or_else(|| DataFusionError::Execution("date out of range".into()))?;
                    let moment = Moment {
                        at: date.and_hms_opt(0, 0, 0).unwrap_or_default(),
                        zone: None,
                        span: None,
                    };
                    format_datetime(&moment, template, &mut text)?;
                }
                DataType::Interval(IntervalUnit::MonthDayNano) => {
                    let v = value.as_primitive::<IntervalMonthDayNanoType>().value(r);
                    let moment = Moment {
                        at: NaiveDateTime::default(),
                        zone: None,
                        span: Some(Span::of(v.months, v.days, v.nanoseconds)),
                    };
                    format_datetime(&moment, template, &mut text)?;
                }
                _ => format_number(&number(&value, r)?, template, &mut text),
            }
            out.append_value(&text);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

/// A local date and time with, for timestamptz, its UTC offset in seconds and zone name;
/// or an interval's fields (`span`).
struct Moment {
    at: NaiveDateTime,
    zone: Option<(i32, String)>,
    span: Option<Span>,
}

/// An interval's fields as PostgreSQL's `to_char` reads them: years and months from its
/// months, its days, and hours (beyond 24 too) down to nanoseconds from its time.
struct Span {
    years: i64,
    months: i64,
    days: i64,
    hours: i64,
    minutes: i64,
    seconds: i64,
    nanos: i64,
}

impl Span {
    fn of(months: i32, days: i32, nanos: i64) -> Span {
        const SECOND: i64 = 1_000_000_000;
        Span {
            years: i64::from(months / 12),
            months: i64::from(months % 12),
            days: i64::from(days),
            hours: nanos / (3600 * SECOND),
            minutes: nanos / (60 * SECOND) % 60,
            seconds: nanos / SECOND % 60,
            nanos: nanos % SECOND,
        }
    }
}

/// The template patterns of dates and times, longest first where one begins another.
const DATETIME_PATTERNS: &[&str] = &[
    "Y,YYY", "YYYY", "YYY", "YY", "Y", "IYYY", "HH24", "HH12", "HH", "MI", "SSSS", "SS", "MS",
    "US", "A.M.", "P.M.", "AM", "PM", "MONTH", "MON", "MM", "DAY", "DDD", "DD", "DY", "D", "IW",
    "ID", "WW", "W", "Q", "J", "CC", "TZH", "TZM", "TZ", "OF",
];

pub(crate) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
pub(crate) const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// The pattern `template` starts with (case-insensitive), if any.
pub(crate) fn pattern_at(template: &str) -> Option<&'static str> {
    DATETIME_PATTERNS.iter().copied().find(|p| {
        template.len() >= p.len()
            && template.is_char_boundary(p.len())
            && template[..p.len()].eq_ignore_ascii_case(p)
    })
}

/// A name in the case its pattern was written in: `MONTH`, `Month` or `month`.
fn cased(name: &str, written: &str, out: &mut String) {
    let mut letters = written.chars().filter(|c| c.is_ascii_alphabetic());
    let first_upper = letters.next().is_some_and(|c| c.is_ascii_uppercase());
    let second_upper = letters.next().is_some_and(|c| c.is_ascii_uppercase());
    match (first_upper, second_upper) {
        (true, true) => out.push_str(&name.to_ascii_uppercase()),
        (true, false) => out.push_str(name),
        _ => out.push_str(&name.to_ascii_lowercase()),
    }
}

fn ordinal_suffix(n: i64, upper: bool) -> &'static str {
    let suffix = match (n % 100, n % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    };
    match (upper, suffix) {
        (false, s) => s,
        (true, "st") => "ST",
        (true, "nd") => "ND",
        (true, "rd") => "RD",
        (true, _) => "TH",
    }
}

fn format_datetime(moment: &Moment, template: &str, out: &mut String) -> Result<()> {
    let at = moment.at;
    // The fields the patterns write: an interval's own, or the moment's.
    let (month, day, hour, minute, second, nanos) = match &moment.span {
        Some(s) => (s.months, s.days, s.hours, s.minutes, s.seconds, s.nanos),
        None => (
            i64::from(at.month()),
            i64::from(at.day()),
            i64::from(at.hour()),
            i64::from(at.minute()),
            i64::from(at.second()),
            i64::from(at.nanosecond()),
        ),
    };
    let mut rest = template;
    while !rest.is_empty() {
        // FM: no padding for the pattern that follows.
        let fill = !(rest.len() >= 2 && rest[..2].eq_ignore_ascii_case("FM"));
        if !fill {
            rest = &rest[2..];
        }
        if let Some(stripped) = rest.strip_prefix('"') {
            let end = stripped.find('"').unwrap_or(stripped.len());
            out.push_str(&stripped[..end]);
            rest = stripped.get(end + 1..).unwrap_or("");
            continue;
        }
        if let Some(stripped) = rest.strip_prefix('\\')
            && let Some(c) = stripped.chars().next()
        {
            out.push(c);
            rest = &stripped[c.len_utf8()..];
            continue;
        }
        let Some(pattern) = pattern_at(rest) else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        let written = &rest[..pattern.len()];
        rest = &rest[pattern.len()..];
        if moment.span.is_some() {
            match pattern {
                "DAY" | "DY" | "D" | "ID" => {
                    return Err(DataFusionError::External(Box::new(
                        crate::Error::InvalidDatetimeFormat(
                            "invalid format specification for an interval value".into(),
                        ),
                    )));
                }
                "Y,YYY" | "YYYY" | "YYY" | "YY" | "Y" | "HH24" | "HH12" | "HH" | "MI" | "SSSS"
                | "SS" | "MS" | "US" | "AM" | "PM" | "A.M." | "P.M." | "MM" | "DD" | "DDD" => {}
                other => {
                    return Err(DataFusionError::External(Box::new(
                        crate::Error::Unsupported(format!(
                            "to_char pattern \"{other}\" of an interval"
                        )),
                    )));
                }
            }
        }
        let number = |value: i64, width: usize, out: &mut String| {
            if fill {
                // A negative (an interval's field) has its digits and the sign.
                let width = width + usize::from(value < 0);
                let _ = write!(out, "{value:0width$}");
            } else {
                let _ = write!(out, "{value}");
            }
        };
        let hour12 = match hour % 12 {
            0 => 12,
            h => h,
        };
        // Years BC count back from 1 BC, as PostgreSQL writes them.
        let year = match (&moment.span, at.year()) {
            (Some(s), _) => s.years,
            (None, y) if y <= 0 => 1 - y as i64,
            (None, y) => y as i64,
        };
        let numeric: Option<i64> = match pattern {
            "Y,YYY" => {
                let y = year;
                let _ = write!(out, "{},{:03}", y / 1000, y % 1000);
                None
            }
            "YYYY" => {
                number(year, 4, out);
                Some(year)
            }
            "YYY" => {
                number(year % 1000, 3, out);
                Some(year % 1000)
            }
            "YY" => {
                number(year % 100, 2, out);
                Some(year % 100)
            }
            "Y" => {
                number(year % 10, 1, out);
                Some(year % 10)
            }
            "IYYY" => {
                number(at.iso_week().year() as i64, 4, out);
                Some(at.iso_week().year() as i64)
            }
            "HH24" => {
                number(hour, 2, out);
                Some(hour)
            }
            "HH12" | "HH" => {
                number(hour12, 2, out);
                Some(hour12)
            }
            "MI" => {
                number(minute, 2, out);
                Some(minute)
            }
            "SSSS" => {
                let s = hour * 3600 + minute * 60 + second;
                number(s, 1, out);
                Some(s)
            }
            "SS" => {
                number(second, 2, out);
                Some(second)
            }
            "MS" => {
                number(nanos / 1_000_000, 3, out);
                None
            }
            "US" => {
                number(nanos / 1_000, 6, out);
                None
            }
            "AM" | "PM" | "A.M." | "P.M." => {
                let pm = hour % 24 >= 12;
                let text = match (pattern.len() == 2, pm) {
                    (true, false) => "AM",
                    (true, true) => "PM",
                    (false, false) => "A.M.",
                    (false, true) => "P.M.",
                };
                cased(text, &written.replace('.', ""), out);
                None
            }
            "MONTH" | "MON" => {
                let name = MONTHS[at.month0() as usize];
                let name = if pattern == "MON" { &name[..3] } else { name };
                let start = out.len();
                cased(name, written, out);
                if fill && pattern == "MONTH" {
                    let width = out.len() - start;
                    out.extend(std::iter::repeat_n(' ', 9usize.saturating_sub(width)));
                }
                None
            }
            "DAY" | "DY" => {
                let name = DAYS[at.weekday().num_days_from_sunday() as usize];
                let name = if pattern == "DY" { &name[..3] } else { name };
                let start = out.len();
                cased(name, written, out);
                if fill && pattern == "DAY" {
                    let width = out.len() - start;
                    out.extend(std::iter::repeat_n(' ', 9usize.saturating_sub(width)));
                }
                None
            }
            "MM" => {
                number(month, 2, out);
                Some(month)
            }
            "DDD" => {
                // Of an interval, its span in days with 30-day months.
                let d = match &moment.span {
                    Some(s) => (s.years * 12 + s.months) * 30 + s.days,
                    None => i64::from(at.ordinal()),
                };
                number(d, 3, out);
                Some(d)
            }
            "DD" => {
                number(day, 2, out);
                Some(day)
            }
            "D" => {
                let d = at.weekday().number_from_sunday() as i64;
                number(d, 1, out);
                Some(d)
            }
            "ID" => {
                let d = at.weekday().number_from_monday() as i64;
                number(d, 1, out);
                Some(d)
            }
            "IW" => {
                number(at.iso_week().week() as i64, 2, out);
                Some(at.iso_week().week() as i64)
            }
            "WW" => {
                let w = (at.ordinal0() / 7 + 1) as i64;
                number(w, 2, out);
                Some(w)
            }
            "W" => {
                let w = (at.day0() / 7 + 1) as i64;
                number(w, 1, out);
                Some(w)
            }
            "Q" => {
                let q = (at.month0() / 3 + 1) as i64;
                number(q, 1, out);
                Some(q)
            }
            "J" => {
                let j = at.date().num_days_from_ce() as i64 + 1_721_425;
                number(j, 1, out);
                Some(j)
            }
            "CC" => {
                let y = at.year() as i64;
                let c = if y > 0 {
                    (y + 99) / 100
                } else {
                    -((99 - y) / 100)
                };
                number(c, 2, out);
                Some(c)
            }
            // A timestamp without time zone has no zone name, and offset +00.
            "TZ" | "OF" | "TZH" | "TZM" => {
                let utc = (0, String::new());
                let (offset, name) = moment.zone.as_ref().unwrap_or(&utc);
                match pattern {
                    "TZ" => cased(name, if written == "tz" { "tz" } else { "TZ" }, out),
                    "TZH" => {
                        out.push(if *offset < 0 { '-' } else { '+' });
                        number(i64::from(offset.abs() / 3600), 2, out);
                    }
                    "TZM" => number(i64::from(offset.abs() % 3600 / 60), 2, out),
                    _ => crate::output::push_offset(*offset, out),
                }
                None
            }
            _ => None,
        };
        // TH / th after a number: its ordinal suffix.
        if let Some(n) = numeric
            && rest.len() >= 2
            && rest[..2].eq_ignore_ascii_case("TH")
        {
            out.push_str(ordinal_suffix(n, &rest[..2] == "TH"));
            rest = &rest[2..];
        }
    }
    Ok(())
}

/// A number as its sign and decimal digits (exact for integers and numerics).
enum Number {
    Exact {
        negative: bool,
        digits: String,
        scale: usize,
    },
    Float(f64),
}

fn number(array: &ArrayRef, r: usize) -> Result<Number> {
    let exact = |v: i128, scale: usize| Number::Exact {
        negative: v < 0,
        digits: v.unsigned_abs().to_string(),
        scale,
    };
    Ok(match array.data_type() {
        DataType::Int16 => exact(array.as_primitive::<Int16Type>().value(r) as i128, 0),
        DataType::Int32 => exact(array.as_primitive::<Int32Type>().value(r) as i128, 0),
        DataType::Int64 => exact(array.as_primitive::<Int64Type>().value(r) as i128, 0),
        DataType::Decimal128(_, scale) => exact(
            array.as_primitive::<Decimal128Type>().value(r),
            (*scale).max(0) as usize,
        ),
        DataType::Float32 => Number::Float(array.as_primitive::<Float32Type>().value(r) as f64),
        DataType::Float64 => Number::Float(array.as_primitive::<Float64Type>().value(r)),
        other => {
            return Err(DataFusionError::Plan(format!(
                "function to_char({other}, text) does not exist"
            )));
        }
    })
}

/// The integer and fraction digits of `n` rounded to `frac` places (half away from zero).
fn rounded(n: &Number, frac: usize) -> (bool, String, String) {
    let (negative, mut digits, scale) = match n {
        Number::Exact {
            negative,
            digits,
            scale,
        } => (*negative, digits.clone(), *scale),
        Number::Float(v) => {
            let text = format!("{:.*}", frac, v.abs());
            let (int, fraction) = text.split_once('.').unwrap_or((&text, ""));
            return (
                *v < 0.0,
                int.trim_start_matches('0').to_string(),
                fraction.to_string(),
            );
        }
    };
    if digits.len() <= scale {
        digits = format!("{}{digits}", "0".repeat(scale + 1 - digits.len()));
    }
    let mut all: Vec<u8> = digits.bytes().map(|b| b - b'0').collect();
    let point = all.len() - scale;
    if scale > frac {
        let round_up = all[point + frac] >= 5;
        all.truncate(point + frac);
        if round_up {
            let mut i = all.len();
            loop {
                if i == 0 {
                    all.insert(0, 1);
                    break;
                }
                i -= 1;
                if all[i] == 9 {
                    all[i] = 0;
                } else {
                    all[i] += 1;
                    break;
                }
            }
        }
    } else {
        all.extend(std::iter::repeat_n(0, frac - scale));
    }
    let point = all.len() - frac;
    let text: String = all.iter().map(|d| (b'0' + d) as char).collect();
    let int = text[..point].trim_start_matches('0').to_string();
    let zero = text.bytes().all(|b| b == b'0');
    (negative && !zero, int, text[point..].to_string())
}

/// A number under a numeric template: `9` a digit (a blank when a leading zero), `0` a
/// digit, `.`/`D` the point, `,`/`G` a separator, `S`/`MI`/`PL` the sign, `TH`/`th` the
/// ordinal suffix, `FM` no padding.
fn format_number(n: &Number, template: &str, out: &mut String) {
    let upper = template.to_ascii_uppercase();
    let fm = upper.contains("FM");
    let point = upper.find(['.', 'D']);
    let is_digit = |c: char| c == '9' || c == '0';
    let int_slots = upper[..point.unwrap_or(upper.len())]
        .chars()
        .filter(|&c| is_digit(c))
        .count();
    let frac_slots = point.map_or(0, |p| upper[p..].chars().filter(|&c| is_digit(c)).count());
    let (negative, mut int, frac) = rounded(n, frac_slots);
    if int.is_empty() && frac_slots == 0 {
        int.push('0');
    }
    let explicit_sign = upper.contains('S') || upper.contains("MI") || upper.contains("PL");
    let overflow = int.len() > int_slots;
    let first_zero = upper[..point.unwrap_or(upper.len())]
        .chars()
        .filter(|&c| is_digit(c))
        .position(|c| c == '0')
        .unwrap_or(int_slots);
    let lead = int_slots.saturating_sub(int.len());
    let mut body = String::new();
    let mut slot = 0usize;
    let mut frac_digit = 0usize;
    let mut in_fraction = false;
    let mut started = false;
    let mut leading_sign = None;
    let bytes = upper.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        if upper[i..].starts_with("FM") {
            i += 2;
            continue;
        }
        if upper[i..].starts_with("MI") {
            body.push(if negative { '-' } else { ' ' });
            i += 2;
            continue;
        }
        if upper[i..].starts_with("PL") {
            body.push(if negative { ' ' } else { '+' });
            i += 2;
            continue;
        }
        // The integer's ordinal suffix; none for a negative or fractional number.
        if let Some(th) = template.get(i..i + 2).filter(|t| *t == "TH" || *t == "th") {
            if !negative && point.is_none() && !overflow {
                let last_two = int[int.len().saturating_sub(2)..].parse().unwrap_or(0);
                body.push_str(ordinal_suffix(last_two, th == "TH"));
            }
            i += 2;
            continue;
        }
        match c {
            '9' | '0' if !in_fraction => {
                let ch = if overflow {
                    '#'
                } else if slot >= lead {
                    started = true;
                    int.as_bytes()[slot - lead] as char
                } else if slot >= first_zero {
                    started = true;
                    '0'
                } else {
                    ' '
                };
                body.push(ch);
                slot += 1;
            }
            '9' | '0' => {
                let ch = if overflow {
                    '#'
                } else {
                    frac.as_bytes().get(frac_digit).map_or('0', |b| *b as char)
                };
                body.push(ch);
                frac_digit += 1;
            }
            '.' | 'D' if !in_fraction => {
                in_fraction = true;
                body.push('.');
            }
            ',' | 'G' => body.push(if started || in_fraction { ',' } else { ' ' }),
            // A leading S puts the sign just before the first digit, as the default does.
            'S' if slot == 0 && !in_fraction => {
                leading_sign = Some(if negative { '-' } else { '+' })
            }
            'S' => body.push(if negative { '-' } else { '+' }),
            // The currency symbol: none in the C locale.
            'L' => body.push(' '),
            _ => body.push(template[i..].chars().next().unwrap_or(' ')),
        }
        i += template[i..].chars().next().map_or(1, char::len_utf8);
    }
    if let Some(sign) = leading_sign {
        let first = body
            .find(|c: char| c.is_ascii_digit() || c == '.' || c == '#')
            .unwrap_or(body.len());
        body.insert(first, sign);
    }
    if !explicit_sign {
        // One place for the sign, just before the first digit.
        let mut with_sign = String::with_capacity(body.len() + 1);
        with_sign.push(' ');
        with_sign.push_str(&body);
        if negative
            && let Some(first) =
                with_sign.find(|c: char| c.is_ascii_digit() || c == '.' || c == '#')
        {
            with_sign.replace_range(first - 1..first, "-");
        }
        body = with_sign;
    }
    if fm {
        // No padding: leading blanks go, so do the fraction's trailing zeros written as 9.
        let mut trimmed = body.trim_start().to_string();
        if let Some(p) = point {
            let nines_after = upper[p..].ends_with('9');
            if nines_after && trimmed.contains('.') {
                while trimmed.ends_with('0') {
                    trimmed.pop();
                }
            }
        }
        body = trimmed;
    }
    out.push_str(&body);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dt(template: &str) -> String {
        let moment = Moment {
            at: NaiveDate::from_ymd_opt(2024, 3, 5)
                .unwrap()
                .and_hms_micro_opt(14, 7, 9, 123_456)
                .unwrap(),
            zone: None,
            span: None,
        };
        let mut out = String::new();
        format_datetime(&moment, template, &mut out).unwrap();
        out
    }

    fn iv(months: i32, days: i32, seconds: i64, template: &str) -> String {
        let moment = Moment {
            at: NaiveDateTime::default(),
            zone: None,
            span: Some(Span::of(months, days, seconds * 1_000_000_000)),
        };
        let mut out = String::new();
        format_datetime(&moment, template, &mut out).unwrap();
        out
    }

    #[test]
    fn interval_patterns_as_postgresql_writes_them() {
        assert_eq!(iv(0, 1, 3 * 3600, "HH24:MI"), "03:00");
        assert_eq!(iv(0, 0, 27 * 3600 + 62, "HH24:MI:SS"), "27:01:02");
        assert_eq!(iv(14, 3, 0, "YYYY-MM-DD"), "0001-02-03");
        assert_eq!(iv(0, 0, 13 * 3600, "HH12 AM"), "01 PM");
        assert_eq!(iv(0, 0, -3 * 3600, "HH24:MI"), "-03:00");
        assert_eq!(iv(0, 5, 0, "DDD"), "005");
    }

    fn num(v: i128, scale: usize, template: &str) -> String {
        let n = Number::Exact {
            negative: v < 0,
            digits: v.unsigned_abs().to_string(),
            scale,
        };
        let mut out = String::new();
        format_number(&n, template, &mut out);
        out
    }

    #[test]
    fn datetime_patterns_as_postgresql_writes_them() {
        assert_eq!(dt("YYYY-MM-DD HH24:MI:SS"), "2024-03-05 14:07:09");
        assert_eq!(dt("Day, DD Month YYYY"), "Tuesday  , 05 March     2024");
        assert_eq!(dt("FMDay, FMDD FMMonth"), "Tuesday, 5 March");
        assert_eq!(dt("HH12:MI am"), "02:07 pm");
        assert_eq!(dt("Mon DDth \"of\" YY"), "Mar 05th of 24");
        assert_eq!(dt("MS US Q IW DDD"), "123 123456 1 10 065");
    }

    #[test]
    fn numeric_patterns_as_postgresql_writes_them() {
        assert_eq!(num(12345, 1, "9999.99"), " 1234.50");
        assert_eq!(num(-12345, 1, "9999.99"), "-1234.50");
        assert_eq!(num(5, 0, "9999"), "    5");
        assert_eq!(num(-5, 0, "9999"), "   -5");
        assert_eq!(num(5, 0, "0009"), " 0005");
        assert_eq!(num(12345, 1, "FM9999.99"), "1234.5");
        assert_eq!(num(1234567, 0, "9,999,999"), " 1,234,567");
        assert_eq!(num(12345, 0, "999"), " ###");
        assert_eq!(num(5, 1, "9.99"), "  .50");
        assert_eq!(num(-12, 0, "S999"), " -12");
        assert_eq!(num(12, 0, "999MI"), " 12 ");
        assert_eq!(num(1, 0, "9th"), " 1st");
        assert_eq!(num(3, 0, "9TH"), " 3RD");
        assert_eq!(num(112, 0, "FM999th"), "112th");
        assert_eq!(num(22, 0, "99th"), " 22nd");
    }
}
