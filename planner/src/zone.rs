//! Session time zones: what `SET TIME ZONE` and the `TimeZone` startup parameter accept,
//! how SHOW spells the setting, and the zone name Arrow timestamps carry.
//!
//! Accepted: IANA names in any case (`Europe/Berlin`, `america/new_york`), `UTC` and its
//! aliases, and a number of hours east of Greenwich (`SET TIME ZONE -8`), as PostgreSQL
//! accepts them. POSIX strings such as `'+05:30'` (where PostgreSQL counts hours *west*)
//! are refused rather than read with the sign users rarely expect.

use chrono_tz::TZ_VARIANTS;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::Transformed;
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, TryCast};

/// A parsed time zone setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zone {
    /// The setting as SHOW TimeZone reports it.
    pub shown: String,
    /// The zone in Arrow's spelling: an IANA name or a `+HH:MM` offset.
    pub arrow: String,
}

impl Zone {
    pub fn utc() -> Zone {
        Zone {
            shown: "UTC".into(),
            arrow: "UTC".into(),
        }
    }

    /// Reads a setting value; `None` when it names no zone.
    pub fn parse(value: &str) -> Option<Zone> {
        let value = value.trim();
        if ["utc", "gmt", "z", "etc/utc", "zulu", "universal"]
            .contains(&value.to_ascii_lowercase().as_str())
        {
            return Some(Zone::utc());
        }
        if let Ok(hours) = value.parse::<f64>() {
            return Zone::hours_east(hours);
        }
        let tz = TZ_VARIANTS
            .iter()
            .find(|tz| tz.name().eq_ignore_ascii_case(value))?;
        Some(Zone {
            shown: tz.name().into(),
            arrow: tz.name().into(),
        })
    }

    /// A fixed offset of `hours` east of Greenwich, shown as PostgreSQL shows it
    /// (`SET TIME ZONE -8` → `<-08>+08`).
    fn hours_east(hours: f64) -> Option<Zone> {
        if !hours.is_finite() || hours.abs() > 15.0 {
            return None;
        }
        let minutes = (hours * 60.0).round() as i32;
        // PostgreSQL shows the offset west with a sign of its own: `<+00>-00` for 0.
        let text = |m: i32, zero: char| {
            let sign = match m {
                0 => zero,
                m if m < 0 => '-',
                _ => '+',
            };
            match m.abs() % 60 {
                0 => format!("{sign}{:02}", m.abs() / 60),
                rest => format!("{sign}{:02}:{rest:02}", m.abs() / 60),
            }
        };
        let sign = if minutes < 0 { '-' } else { '+' };
        Some(Zone {
            shown: format!("<{}>{}", text(minutes, '+'), text(-minutes, '-')),
            arrow: format!("{sign}{:02}:{:02}", minutes.abs() / 60, minutes.abs() % 60),
        })
    }
}

/// Text constants cast to a date or timestamp in PostgreSQL's spellings Arrow's parser
/// lacks (`2024-07-01 19:00` without seconds, `Jan 5 2024`, `today`; see
/// `datetime_input`); the cast itself then reads them in the zone of its target type, the
/// session's.
pub fn rewrite_timestamp_text(
    expr: Expr,
    config: &datafusion::config::ConfigOptions,
) -> Result<Transformed<Expr>> {
    let (inner, target) = match &expr {
        Expr::Cast(c) => (c.expr.as_ref(), c.field.data_type()),
        Expr::TryCast(TryCast { expr, field }) => (expr.as_ref(), field.data_type()),
        _ => return Ok(Transformed::no(expr)),
    };
    let (
        Expr::Literal(ScalarValue::Utf8(Some(text)), meta),
        DataType::Timestamp(..) | DataType::Date32,
    ) = (inner, target)
    else {
        return Ok(Transformed::no(expr));
    };
    if let Some(special) = crate::datetime_input::special(text) {
        use crate::datetime_input::Special;
        let value = match special {
            // The date as text, read in the target's zone: midnight there.
            Special::Today(days) => {
                let date = datafusion::functions::datetime::current_date().call(vec![]);
                let date = match days {
                    0 => date,
                    n => date + datafusion::logical_expr::lit(ScalarValue::new_interval_dt(n, 0)),
                };
                datafusion::logical_expr::cast(date, DataType::Utf8)
            }
            // The instant, in the session's zone as `now()` is.
            Special::Now => datafusion::functions::datetime::now(config).call(vec![]),
            // Of the target's own type, so that the cast keeps it as it is.
            Special::Infinity(later) => Expr::Literal(
                match target {
                    DataType::Date32 => ScalarValue::Date32(Some(match later {
                        true => sql::types::DATE_INFINITY,
                        false => -sql::types::DATE_INFINITY,
                    })),
                    _ => ScalarValue::TimestampMicrosecond(
                        Some(match later {
                            true => sql::types::TIMESTAMP_INFINITY,
                            false => -sql::types::TIMESTAMP_INFINITY,
                        }),
                        match target {
                            DataType::Timestamp(_, zone) => zone.clone(),
                            _ => None,
                        },
                    ),
                },
                None,
            ),
        };
        return Ok(Transformed::yes(with_operand(expr, value)));
    }
    let text = match crate::datetime_input::iso_text(text) {
        Some(iso) => iso,
        None => match (with_seconds(text), target) {
            (Some(text), DataType::Timestamp(..) | DataType::Date32) => text,
            _ if text.trim() != text => text.trim().to_string(),
            _ => text.clone(),
        },
    };
    // A timestamp without time zone, or a date, ignores a zone the text gives, as
    // PostgreSQL's does (`2024-02-01T00:00:00+01:00` is the date 2024-02-01).
    let text = match target {
        DataType::Timestamp(_, None) | DataType::Date32 => without_zone(&text).to_string(),
        _ => text,
    };
    // The value, still under the cast, which may round it (`timestamp(p)`).
    if let Some(value) = far_year(&text, target) {
        return Ok(Transformed::yes(with_operand(
            expr,
            Expr::Literal(value, None),
        )));
    }
    if let DataType::Timestamp(_, zone) = target
        && let Some(micros) = beyond_microseconds(&text, zone.as_deref())
    {
        let value = ScalarValue::TimestampMicrosecond(Some(micros), zone.clone());
        return Ok(Transformed::yes(with_operand(
            expr,
            Expr::Literal(value, None),
        )));
    }
    if let DataType::Timestamp(_, Some(zone)) = target
        && let Some(micros) = across_transition(&text, zone)
    {
        let value = ScalarValue::TimestampMicrosecond(Some(micros), Some(zone.clone()));
        return Ok(Transformed::yes(with_operand(
            expr,
            Expr::Literal(value, None),
        )));
    }
    if matches!(inner, Expr::Literal(ScalarValue::Utf8(Some(original)), _) if *original == text) {
        return Ok(Transformed::no(expr));
    }
    let literal = Expr::Literal(ScalarValue::Utf8(Some(text)), meta.clone());
    Ok(Transformed::yes(with_operand(expr, literal)))
}

/// ISO date or timestamp text of a year before 1 AD (`0044-03-15 BC`) or after 9999, which
/// Arrow's parser does not read, as a value of `target`: the text is read with a year of the
/// same place in the Gregorian calendar's 400-year cycle, and the cycles between added back.
fn far_year(text: &str, target: &DataType) -> Option<ScalarValue> {
    const CYCLE_DAYS: i64 = 146_097;
    let text = text.trim();
    let (text, bc) = match text.len().checked_sub(3).map(|i| text.split_at(i)) {
        Some((rest, suffix)) if suffix.eq_ignore_ascii_case(" bc") => (rest.trim_end(), true),
        _ => (text, false),
    };
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if (digits <= 4 && !bc) || digits > 9 || text.as_bytes().get(digits) != Some(&b'-') {
        return None;
    }
    let year: i64 = text[..digits].parse().ok()?;
    if bc && year == 0 {
        return None;
    }
    let astronomical = if bc { 1 - year } else { year };
    let stand_in = astronomical.rem_euclid(400) + 2000;
    let cycles = (astronomical - stand_in) / 400;
    let stand_in_text = format!("{stand_in}{}", &text[digits..]);
    let shift_days = cycles * CYCLE_DAYS;
    match target {
        DataType::Date32 => {
            let date = chrono::NaiveDate::parse_from_str(&stand_in_text, "%Y-%m-%d").ok()?;
            let days = date
                .signed_duration_since(chrono::NaiveDate::default())
                .num_days()
                + shift_days;
            Some(ScalarValue::Date32(Some(i32::try_from(days).ok()?)))
        }
        DataType::Timestamp(_, zone) => {
            use datafusion::arrow::compute::kernels::cast_utils::string_to_datetime;
            let instant = match zone {
                Some(zone) => {
                    let tz: datafusion::arrow::array::timezone::Tz = zone.parse().ok()?;
                    string_to_datetime(&tz, &stand_in_text).ok()?.naive_utc()
                }
                None => string_to_datetime(&chrono::Utc, &stand_in_text)
                    .ok()?
                    .naive_utc(),
            };
            let micros = instant
                .and_utc()
                .timestamp_micros()
                .checked_add(shift_days.checked_mul(86_400_000_000)?)?;
            Some(ScalarValue::TimestampMicrosecond(
                Some(micros),
                zone.clone(),
            ))
        }
        _ => None,
    }
}

/// ISO timestamp text with more than six fractional digits, as microseconds rounded half to
/// even as PostgreSQL rounds them (Arrow's cast cuts the digits off); `None` for other text.
fn beyond_microseconds(text: &str, zone: Option<&str>) -> Option<i64> {
    let fraction = text.split_once('.')?.1;
    let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
    if digits <= 6 {
        return None;
    }
    use datafusion::arrow::compute::kernels::cast_utils::string_to_datetime;
    let instant = match zone {
        Some(zone) => {
            let tz: datafusion::arrow::array::timezone::Tz = zone.parse().ok()?;
            string_to_datetime(&tz, text).ok()?.naive_utc()
        }
        None => string_to_datetime(&chrono::Utc, text).ok()?.naive_utc(),
    }
    .and_utc();
    let micros = instant.timestamp_micros();
    let rest = instant.timestamp_subsec_nanos() % 1000;
    Some(match rest > 500 || (rest == 500 && micros % 2 != 0) {
        true => micros + 1,
        false => micros,
    })
}

/// ISO timestamp text without an offset, of a local time `zone` skips or repeats where its
/// clocks change (which Arrow's parser refuses), read as PostgreSQL reads it: a repeated
/// time as the later instant (standard time, `2024-10-27 02:30` in Berlin is `+01`), a
/// skipped one with the offset in force before the change (`2024-03-31 02:30` is `03:30+02`).
/// `None` for other text.
fn across_transition(text: &str, zone: &str) -> Option<i64> {
    use chrono::{LocalResult, Offset, TimeZone};
    let tz: chrono_tz::Tz = zone.parse().ok()?;
    let local = ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(text.trim(), f).ok())?;
    let instant = match tz.from_local_datetime(&local) {
        LocalResult::Single(_) => return None,
        LocalResult::Ambiguous(_, later) => later.naive_utc(),
        LocalResult::None => {
            let before = tz
                .offset_from_utc_datetime(&(local - chrono::Duration::days(1)))
                .fix();
            local - chrono::Duration::seconds(i64::from(before.local_minus_utc()))
        }
    };
    Some(instant.and_utc().timestamp_micros())
}

/// ISO timestamp text without the zone offset after its time (`+05`, `-03:30`, `Z`).
fn without_zone(text: &str) -> &str {
    let Some(time) = text
        .get(10..)
        .and_then(|t| t.find([' ', 'T']).map(|i| i + 11))
    else {
        return text;
    };
    let rest = &text[time..];
    let end = rest.find(['+', '-']).map_or(text.len(), |i| time + i);
    let text = text[..end].trim_end();
    text.strip_suffix(['Z', 'z']).unwrap_or(text)
}

/// A cast (or TRY_CAST) of `operand` instead of what it cast.
/// A parameter's text as a value of `target` (a date or timestamp), read as
/// [`rewrite_timestamp_text`] reads a constant (`2024-02-01T10:00`, `infinity`,
/// `Feb 1, 2024`); `None` when the text stands for no constant (`now`, `today`).
pub fn timestamp_value(
    text: &str,
    target: &DataType,
    config: &datafusion::config::ConfigOptions,
) -> Result<Option<ScalarValue>> {
    let cast = datafusion::logical_expr::cast(datafusion::logical_expr::lit(text), target.clone());
    let Expr::Cast(read) = rewrite_timestamp_text(cast, config)?.data else {
        return Ok(None);
    };
    match *read.expr {
        Expr::Literal(value, _) => Ok(Some(value.cast_to(target)?)),
        _ => Ok(None),
    }
}

fn with_operand(cast: Expr, operand: Expr) -> Expr {
    match cast {
        Expr::Cast(mut c) => {
            c.expr = Box::new(operand);
            Expr::Cast(c)
        }
        Expr::TryCast(mut c) => {
            c.expr = Box::new(operand);
            Expr::TryCast(c)
        }
        other => other,
    }
}

/// `2024-07-01 19:00[+02]` → `2024-07-01 19:00:00[+02]`; `None` when nothing is missing.
pub(crate) fn with_seconds(text: &str) -> Option<String> {
    let text = text.trim();
    let split = text
        .char_indices()
        .skip(8)
        .find(|(_, c)| *c == ' ' || *c == 'T')?
        .0;
    let time_start = split + 1;
    let time_len = text[time_start..]
        .find(|c: char| !(c.is_ascii_digit() || c == ':'))
        .unwrap_or(text.len() - time_start);
    let time = &text[time_start..time_start + time_len];
    if time.matches(':').count() != 1 || time.ends_with(':') {
        return None;
    }
    let end = time_start + time_len;
    Some(format!("{}:00{}", &text[..end], &text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_without_seconds_get_them() {
        assert_eq!(
            with_seconds("2024-07-01 19:00").as_deref(),
            Some("2024-07-01 19:00:00")
        );
        assert_eq!(
            with_seconds("2024-07-01T19:00+02").as_deref(),
            Some("2024-07-01T19:00:00+02")
        );
        assert_eq!(with_seconds("2024-07-01 19:00:05"), None);
        assert_eq!(with_seconds("2024-07-01"), None);
    }

    #[test]
    fn local_times_at_clock_changes_read_as_postgres_reads_them() {
        let utc = |text: &str| {
            chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M")
                .unwrap()
                .and_utc()
                .timestamp_micros()
        };
        // Repeated: the later instant (+01). Skipped: the offset before the change (+01).
        let berlin = |text| across_transition(text, "Europe/Berlin");
        assert_eq!(berlin("2024-10-27 02:30:00"), Some(utc("2024-10-27 01:30")));
        assert_eq!(berlin("2024-03-31 02:30:00"), Some(utc("2024-03-31 01:30")));
        assert_eq!(berlin("2024-03-31 04:30:00"), None);
        assert_eq!(across_transition("2024-03-31 02:30:00", "+02:00"), None);
    }

    #[test]
    fn zones_parse_as_postgres_accepts_them() {
        assert_eq!(Zone::parse("utc"), Some(Zone::utc()));
        let berlin = Zone::parse("europe/berlin").unwrap();
        assert_eq!(berlin.shown, "Europe/Berlin");
        assert_eq!(berlin.arrow, "Europe/Berlin");
        let west = Zone::parse("-8").unwrap();
        assert_eq!(
            (west.shown.as_str(), west.arrow.as_str()),
            ("<-08>+08", "-08:00")
        );
        let india = Zone::parse("5.5").unwrap();
        assert_eq!(
            (india.shown.as_str(), india.arrow.as_str()),
            ("<+05:30>-05:30", "+05:30")
        );
        assert_eq!(Zone::parse("Mars/Olympus"), None);
        assert_eq!(Zone::parse("+05:30"), None);
    }
}
