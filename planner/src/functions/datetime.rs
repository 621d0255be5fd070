//! Date and time functions as PostgreSQL has them: `age`, `make_timestamp`,
//! `make_interval`, `justify_days`/`_hours`/`_interval`, `timezone` (AT
//! TIME ZONE) and the session-local casts of timestamptz, and `to_date` /
//! `to_timestamp` reading text with a template (`YYYY-MM-DD HH24:MI:SS`). DataFusion's
//! `to_date` and `to_timestamp` take chrono's `%Y-%m-%d` and its `age` does not exist;
//! `rewrite` sends the template forms here and turns `to_timestamp`'s result into a
//! timestamptz in the session's zone.

use super::row::{RowFunction, int, text};
use crate::error::Error;
use crate::to_char::{DAYS, MONTHS, pattern_at};
use chrono::{
    Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone,
    Timelike,
};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{Array, AsArray, TimestampMicrosecondBuilder};
use datafusion::arrow::datatypes::TimestampMicrosecondType;
use datafusion::arrow::datatypes::{DataType, IntervalMonthDayNano, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::Transformed;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use std::sync::Arc;

/// The helper `to_date(text, template)` is planned as.
pub(crate) const TO_DATE: &str = "partita_to_date";
/// The helper `to_timestamp(text, template)` is planned as: a local timestamp.
pub(crate) const TO_TIMESTAMP: &str = "partita_to_timestamp";

const TIMESTAMP: DataType = DataType::Timestamp(TimeUnit::Microsecond, None);

pub(super) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(AtTimeZone::default()));
    // Dates and timestamps are infinite at `infinity` and `-infinity`; intervals never.
    ctx.register_udf(RowFunction::strict(
        "isfinite",
        Signature::any(1, Volatility::Immutable),
        DataType::Boolean,
        |args| match &args[0] {
            ScalarValue::Date32(Some(days)) => Ok(ScalarValue::Boolean(Some(
                !sql::types::infinite_date(*days),
            ))),
            ScalarValue::TimestampMicrosecond(Some(micros), _) => Ok(ScalarValue::Boolean(Some(
                !sql::types::infinite_timestamp(*micros),
            ))),
            v if matches!(
                v.data_type(),
                DataType::Date32 | DataType::Timestamp(..) | DataType::Interval(_)
            ) =>
            {
                Ok(ScalarValue::Boolean(Some(true)))
            }
            other => Err(DataFusionError::External(Box::new(
                Error::UndefinedFunction(format!("isfinite({})", other.data_type())),
            ))),
        },
    ));
    ctx.register_udf(RowFunction::strict(
        "age",
        // Partita plans timestamps in microseconds; DataFusion's own are nanoseconds.
        Signature::one_of(
            [TimeUnit::Microsecond, TimeUnit::Nanosecond]
                .into_iter()
                .flat_map(|a| {
                    [TimeUnit::Microsecond, TimeUnit::Nanosecond].map(|b| {
                        TypeSignature::Exact(vec![
                            DataType::Timestamp(a, None),
                            DataType::Timestamp(b, None),
                        ])
                    })
                })
                .collect(),
            Volatility::Immutable,
        ),
        DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano),
        |args| {
            let (a, b) = (local(&args[0])?, local(&args[1])?);
            Ok(ScalarValue::IntervalMonthDayNano(Some(age(a, b))))
        },
    ));
    ctx.register_udf(RowFunction::strict(
        "make_timestamp",
        Signature::exact(
            vec![
                DataType::Int64,
                DataType::Int64,
                DataType::Int64,
                DataType::Int64,
                DataType::Int64,
                DataType::Float64,
            ],
            Volatility::Immutable,
        ),
        TIMESTAMP,
        |args| {
            let field = |i: usize| int(&args[i]).unwrap_or_default();
            let ScalarValue::Float64(Some(seconds)) = args[5] else {
                return Err(DataFusionError::Internal("make_timestamp seconds".into()));
            };
            let at = make_timestamp([field(0), field(1), field(2), field(3), field(4)], seconds)
                .map_err(external)?;
            Ok(micros(at))
        },
    ));
    let interval = DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano);
    for (name, justify) in [
        ("justify_days", Justify::Days),
        ("justify_hours", Justify::Hours),
        ("justify_interval", Justify::Both),
    ] {
        ctx.register_udf(RowFunction::strict(
            name,
            Signature::exact(vec![interval.clone()], Volatility::Immutable),
            interval.clone(),
            move |args| match &args[0] {
                ScalarValue::IntervalMonthDayNano(Some(v)) => {
                    Ok(ScalarValue::IntervalMonthDayNano(Some(justify.apply(*v))))
                }
                other => Err(DataFusionError::Internal(format!("{name} of {other:?}"))),
            },
        ));
    }
    ctx.register_udf(RowFunction::strict(
        MAKE_INTERVAL,
        Signature::exact(
            std::iter::repeat_n(DataType::Int64, 6)
                .chain([DataType::Float64])
                .collect(),
            Volatility::Immutable,
        ),
        interval,
        |args| {
            let field = |i: usize| int(&args[i]).unwrap_or_default();
            let ScalarValue::Float64(Some(seconds)) = args[6] else {
                return Err(DataFusionError::Internal("make_interval seconds".into()));
            };
            let overflow = || external(Error::NumericOverflow("interval out of range".into()));
            let months = field(0)
                .checked_mul(12)
                .and_then(|m| m.checked_add(field(1)))
                .and_then(|m| i32::try_from(m).ok())
                .ok_or_else(overflow)?;
            let days = field(2)
                .checked_mul(7)
                .and_then(|d| d.checked_add(field(3)))
                .and_then(|d| i32::try_from(d).ok())
                .ok_or_else(overflow)?;
            let micros =
                (field(4) as f64 * 3_600e6 + field(5) as f64 * 60e6 + seconds * 1e6).round();
            if !micros.is_finite() || micros.abs() > 9.2e18 / 1000.0 {
                return Err(overflow());
            }
            Ok(ScalarValue::IntervalMonthDayNano(Some(
                IntervalMonthDayNano::new(months, days, micros as i64 * 1000),
            )))
        },
    ));
    let templated = || Signature::one_of(vec![TypeSignature::String(2)], Volatility::Immutable);
    ctx.register_udf(RowFunction::strict(
        TO_DATE,
        templated(),
        DataType::Date32,
        |args| {
            let input = text(&args[0]).unwrap_or_default();
            let template = text(&args[1]).unwrap_or_default();
            let at = from_template(input, template).map_err(external)?;
            Ok(ScalarValue::Date32(Some(
                (at.date() - NaiveDate::default()).num_days() as i32,
            )))
        },
    ));
    ctx.register_udf(RowFunction::strict(
        TO_TIMESTAMP,
        templated(),
        TIMESTAMP,
        |args| {
            let input = text(&args[0]).unwrap_or_default();
            let template = text(&args[1]).unwrap_or_default();
            Ok(micros(from_template(input, template).map_err(external)?))
        },
    ));
}

/// `timezone(zone, t)`, which `t AT TIME ZONE zone` is planned as: a timestamp read as local
/// time in `zone` is a timestamptz; a timestamptz becomes the local time in `zone`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct AtTimeZone {
    signature: Signature,
}

impl Default for AtTimeZone {
    fn default() -> Self {
        AtTimeZone {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for AtTimeZone {
    fn name(&self) -> &str {
        "timezone"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        Ok(arg_types.to_vec())
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.get(1) {
            Some(DataType::Timestamp(_, Some(_))) => Ok(TIMESTAMP),
            Some(DataType::Timestamp(_, None) | DataType::Date32) => Ok(DataType::Timestamp(
                TimeUnit::Microsecond,
                Some("+00:00".into()),
            )),
            other => Err(DataFusionError::External(Box::new(
                Error::UndefinedFunction(format!(
                    "timezone(text, {})",
                    other.map(|t| t.to_string()).unwrap_or_default()
                )),
            ))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let zones = args.args[0].to_array(n)?;
        let zones = datafusion::arrow::compute::cast(&zones, &DataType::Utf8)?;
        let zones = zones.as_string::<i32>();
        let values = args.args[1].to_array(n)?;
        let aware = matches!(values.data_type(), DataType::Timestamp(_, Some(_)));
        let values = datafusion::arrow::compute::cast(&values, &TIMESTAMP)?;
        let values = values.as_primitive::<TimestampMicrosecondType>();
        let mut out = TimestampMicrosecondBuilder::with_capacity(n);
        let mut parsed: Option<(String, Tz)> = None;
        for r in 0..n {
            if zones.is_null(r) || values.is_null(r) {
                out.append_null();
                continue;
            }
            let name = zones.value(r);
            let tz = match &parsed {
                Some((known, tz)) if known == name => *tz,
                _ => {
                    let tz = crate::zone::Zone::parse(name)
                        .and_then(|z| z.arrow.parse::<Tz>().ok())
                        .ok_or_else(|| {
                            external(Error::InvalidParameterValue(format!(
                                "time zone \"{name}\" not recognized"
                            )))
                        })?;
                    parsed = Some((name.to_string(), tz));
                    tz
                }
            };
            let at = chrono::DateTime::from_timestamp_micros(values.value(r))
                .ok_or_else(|| {
                    DataFusionError::External(Box::new(Error::DatetimeOutOfRange(
                        "timestamp out of range".into(),
                    )))
                })?
                .naive_utc();
            let micros = if aware {
                // The instant's wall-clock time in the zone.
                tz.from_utc_datetime(&at)
                    .naive_local()
                    .and_utc()
                    .timestamp_micros()
            } else {
                // The instant that wall-clock time in the zone is, as PostgreSQL reads it:
                // a time that happens twice is the later one (standard time); one skipped
                // by the change to summer time has the offset before the change.
                match tz.from_local_datetime(&at) {
                    LocalResult::Single(t) | LocalResult::Ambiguous(_, t) => t.timestamp_micros(),
                    LocalResult::None => {
                        let before = at.checked_sub_signed(Duration::days(1)).unwrap_or(at);
                        let offset = tz.offset_from_utc_datetime(&before).fix().local_minus_utc();
                        at.checked_sub_signed(Duration::seconds(i64::from(offset)))
                            .unwrap_or(at)
                            .and_utc()
                            .timestamp_micros()
                    }
                }
            };
            out.append_value(micros);
        }
        let array = out.finish();
        let array: datafusion::arrow::array::ArrayRef = match args.return_field.data_type() {
            DataType::Timestamp(_, Some(label)) => Arc::new(array.with_timezone(label.clone())),
            _ => Arc::new(array),
        };
        if args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)))
        {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &array, 0,
            )?));
        }
        Ok(ColumnarValue::Array(array))
    }
}

/// A timestamptz cast to timestamp or date is the local time in the session's zone
/// `zone`, as in PostgreSQL (Arrow's cast keeps the UTC wall-clock time).
pub(crate) fn local_time_casts(
    expr: datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
    zone: &str,
) -> Result<Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::logical_expr::{Cast, Expr, ExprSchemable, lit};
    let Expr::Cast(Cast { expr: inner, field }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    if !matches!(
        field.data_type(),
        DataType::Timestamp(_, None) | DataType::Date32
    ) || !matches!(inner.get_type(schema)?, DataType::Timestamp(_, Some(_)))
    {
        return Ok(Transformed::no(expr));
    }
    let local = ScalarUDF::new_from_impl(AtTimeZone::default())
        .call(vec![lit(zone.to_string()), (**inner).clone()]);
    Ok(Transformed::yes(Expr::Cast(Cast {
        expr: Box::new(local),
        field: field.clone(),
    })))
}

/// The helper `make_interval(…)` is planned as, with its seven arguments in order.
pub(crate) const MAKE_INTERVAL: &str = "partita_make_interval";

/// The parameter names of `make_interval`, in order.
pub(crate) const MAKE_INTERVAL_PARAMETERS: [&str; 7] =
    ["years", "months", "weeks", "days", "hours", "mins", "secs"];

/// Which of PostgreSQL's justify functions.
#[derive(Clone, Copy)]
enum Justify {
    /// Days beyond 30 into months.
    Days,
    /// Time beyond 24 hours into days.
    Hours,
    /// Both, with the signs made consistent.
    Both,
}

impl Justify {
    fn apply(self, v: IntervalMonthDayNano) -> IntervalMonthDayNano {
        const DAY: i64 = 86_400_000_000_000;
        let (mut months, mut days, mut nanos) = (v.months, v.days, v.nanoseconds);
        if matches!(self, Justify::Hours | Justify::Both) {
            days = days.saturating_add((nanos / DAY) as i32);
            nanos %= DAY;
        }
        if matches!(self, Justify::Days | Justify::Both) {
            months = months.saturating_add(days / 30);
            days %= 30;
        }
        match self {
            Justify::Days => {
                if months > 0 && days < 0 {
                    (days, months) = (days + 30, months - 1);
                } else if months < 0 && days > 0 {
                    (days, months) = (days - 30, months + 1);
                }
            }
            Justify::Hours => {}
            Justify::Both => {
                if months > 0 && (days < 0 || days == 0 && nanos < 0) {
                    (days, months) = (days + 30, months - 1);
                } else if months < 0 && (days > 0 || days == 0 && nanos > 0) {
                    (days, months) = (days - 30, months + 1);
                }
            }
        }
        if matches!(self, Justify::Hours | Justify::Both) {
            if days > 0 && nanos < 0 {
                (nanos, days) = (nanos + DAY, days - 1);
            } else if days < 0 && nanos > 0 {
                (nanos, days) = (nanos - DAY, days + 1);
            }
        }
        IntervalMonthDayNano::new(months, days, nanos)
    }
}

fn external(e: Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

fn micros(at: NaiveDateTime) -> ScalarValue {
    ScalarValue::TimestampMicrosecond(Some(at.and_utc().timestamp_micros()), None)
}

/// A timestamp argument as local date and time.
fn local(v: &ScalarValue) -> Result<NaiveDateTime> {
    match v {
        ScalarValue::TimestampMicrosecond(Some(us), _) => {
            chrono::DateTime::from_timestamp_micros(*us)
                .map(|t| t.naive_utc())
                .ok_or_else(|| {
                    DataFusionError::External(Box::new(Error::DatetimeOutOfRange(
                        "timestamp out of range".into(),
                    )))
                })
        }
        ScalarValue::TimestampNanosecond(Some(ns), _) => {
            Ok(chrono::DateTime::from_timestamp_nanos(*ns).naive_utc())
        }
        other => Err(DataFusionError::Internal(format!(
            "expected a timestamp, got {other:?}"
        ))),
    }
}

/// PostgreSQL's `age(a, b)`: `a - b` in years, months and days counted on the calendar
/// (field by field, borrowing from the next larger one), then the time of day.
fn age(a: NaiveDateTime, b: NaiveDateTime) -> IntervalMonthDayNano {
    let negative = a < b;
    let fields = |t: NaiveDateTime| {
        [
            i64::from(t.year()),
            i64::from(t.month()),
            i64::from(t.day()),
            i64::from(t.hour()),
            i64::from(t.minute()),
            i64::from(t.second()),
            i64::from(t.nanosecond() / 1000),
        ]
    };
    let (fa, fb) = (fields(a), fields(b));
    let sign = if negative { -1 } else { 1 };
    let mut d: Vec<i64> = fa.iter().zip(fb).map(|(x, y)| (x - y) * sign).collect();
    let [year, month, day, hour, minute, second, micro] = &mut d[..] else {
        unreachable!("seven fields")
    };
    while *micro < 0 {
        *micro += 1_000_000;
        *second -= 1;
    }
    while *second < 0 {
        *second += 60;
        *minute -= 1;
    }
    while *minute < 0 {
        *minute += 60;
        *hour -= 1;
    }
    while *hour < 0 {
        *hour += 24;
        *day -= 1;
    }
    // A day borrowed is a month of the earlier date's length.
    let earlier = if negative { a } else { b };
    while *day < 0 {
        *day += i64::from(days_in_month(earlier.year(), earlier.month()));
        *month -= 1;
    }
    while *month < 0 {
        *month += 12;
        *year -= 1;
    }
    let months = (*year * 12 + *month) * sign;
    let days = *day * sign;
    let nanos = ((((*hour * 60) + *minute) * 60 + *second) * 1_000_000 + *micro) * 1000 * sign;
    IntervalMonthDayNano::new(months as i32, days as i32, nanos)
}

fn days_in_month(year: i32, month: u32) -> u32 {
    let first = NaiveDate::from_ymd_opt(year, month, 1).unwrap_or_default();
    let next = first
        .checked_add_months(chrono::Months::new(1))
        .unwrap_or(first);
    (next - first).num_days() as u32
}

/// `make_timestamp(year, month, day, hour, min, sec)`.
fn make_timestamp(fields: [i64; 5], seconds: f64) -> Result<NaiveDateTime, Error> {
    let [year, month, day, hour, minute] = fields;
    let date = i32::try_from(year)
        .ok()
        .zip(u32::try_from(month).ok())
        .zip(u32::try_from(day).ok())
        .and_then(|((y, m), d)| NaiveDate::from_ymd_opt(y, m, d))
        .filter(|_| year != 0)
        .ok_or_else(|| {
            Error::DatetimeOutOfRange(format!(
                "date field value out of range: {year}-{month:02}-{day:02}"
            ))
        })?;
    let micros = (seconds * 1e6).round();
    let time = (0.0..60_000_000.0)
        .contains(&micros)
        .then_some(())
        .and_then(|_| u32::try_from(hour).ok())
        .zip(u32::try_from(minute).ok())
        .and_then(|(h, m)| NaiveTime::from_hms_opt(h, m, 0))
        .ok_or_else(|| {
            Error::DatetimeOutOfRange(format!(
                "time field value out of range: {hour}:{minute:02}:{seconds:02}"
            ))
        })?;
    Ok(date.and_time(time) + Duration::microseconds(micros as i64))
}

/// The fields a template read.
#[derive(Default)]
struct Fields {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    day_of_year: Option<i64>,
    julian: Option<i64>,
    hour: i64,
    minute: i64,
    second: i64,
    micros: i64,
    /// Some(true) after PM, Some(false) after AM; the hour was on a 12-hour clock.
    afternoon: Option<bool>,
    twelve_hour: bool,
}

/// Reads `input` with a PostgreSQL template, as `to_timestamp(input, template)` does: each
/// pattern reads its field; a separator in the template matches any one separator in the
/// input (or none); spaces are skipped; a quoted text skips as many characters.
fn from_template(input: &str, template: &str) -> Result<NaiveDateTime, Error> {
    let input: Vec<char> = input.chars().collect();
    let mut at = 0usize;
    let mut fields = Fields::default();
    let mut rest = template;
    let invalid = |value: &str, pattern: &str| {
        Error::InvalidDatetimeFormat(format!("invalid value \"{value}\" for \"{pattern}\""))
    };
    // Template left over when the input ends reads nothing, as in PostgreSQL.
    while !rest.is_empty() && at < input.len() {
        let upper = rest.get(..2).map(str::to_ascii_uppercase);
        if matches!(upper.as_deref(), Some("FM" | "FX")) {
            rest = &rest[2..];
            continue;
        }
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').unwrap_or(quoted.len());
            at = (at + quoted[..end].chars().count()).min(input.len());
            rest = quoted.get(end + 1..).unwrap_or("");
            continue;
        }
        let Some(pattern) = pattern_at(rest) else {
            let c = rest.chars().next().unwrap_or_default();
            rest = &rest[c.len_utf8()..];
            if c.is_whitespace() {
                while at < input.len() && input[at].is_whitespace() {
                    at += 1;
                }
            } else if at < input.len() && (!input[at].is_alphanumeric() || c.is_alphanumeric()) {
                at += 1;
            }
            continue;
        };
        rest = &rest[pattern.len()..];
        let upper = pattern.to_ascii_uppercase();
        let remaining: String = input[at..].iter().collect();
        match upper.as_str() {
            "AM" | "PM" | "A.M." | "P.M." => {
                let word = remaining
                    .get(..pattern.len())
                    .unwrap_or("")
                    .to_ascii_uppercase();
                let afternoon = match word.as_str() {
                    "AM" | "A.M." => false,
                    "PM" | "P.M." => true,
                    _ => return Err(invalid(&remaining, pattern)),
                };
                fields.afternoon = Some(afternoon);
                at += pattern.len();
                continue;
            }
            "MONTH" | "MON" => {
                let (index, length) = name_at(&remaining, &MONTHS, upper == "MON")
                    .ok_or_else(|| invalid(&remaining, pattern))?;
                fields.month = Some(index as i64 + 1);
                at += length;
                continue;
            }
            "DAY" | "DY" => {
                let (_, length) = name_at(&remaining, &DAYS, upper == "DY")
                    .ok_or_else(|| invalid(&remaining, pattern))?;
                at += length;
                continue;
            }
            "TZ" | "OF" => {
                return Err(Error::Unsupported(format!(
                    "the \"{pattern}\" pattern in to_timestamp and to_date"
                )));
            }
            _ => {}
        }
        // A number: leading spaces skipped; as many digits as the field has when another
        // field follows directly, else every digit.
        while at < input.len() && input[at] == ' ' {
            at += 1;
        }
        if upper == "Y,YYY" {
            // The year with a thousands comma: `2,020`.
            let mut end = at;
            while end < input.len() && (input[end].is_ascii_digit() || input[end] == ',') {
                end += 1;
            }
            let digits: String = input[at..end].iter().filter(|c| **c != ',').collect();
            match digits.parse::<i64>() {
                Ok(year) if digits.len() <= 9 => fields.year = Some(year),
                _ => return Err(invalid(&remaining, pattern)),
            }
            at = end;
            continue;
        }
        let width = match upper.as_str() {
            "YYYY" | "IYYY" | "SSSS" => 4,
            "YYY" | "DDD" | "MS" => 3,
            "US" => 6,
            "Y" | "D" | "ID" | "Q" | "W" => 1,
            "J" => 7,
            _ => 2,
        };
        let adjacent = pattern_at(rest).is_some();
        let negative = upper == "YYYY" && input.get(at) == Some(&'-');
        let start = at + usize::from(negative);
        let mut end = start;
        while end < input.len() && input[end].is_ascii_digit() && (!adjacent || end - start < width)
        {
            end += 1;
        }
        let digits: String = input[start..end].iter().collect();
        let Ok(mut value) = digits.parse::<i64>() else {
            return Err(invalid(&remaining, pattern));
        };
        // PostgreSQL reads fields as 32-bit integers, and fractions of a second to their
        // precision.
        let precision = match upper.as_str() {
            "MS" => 3,
            "US" => 6,
            _ => 9,
        };
        if digits.len() > precision {
            return Err(Error::DatetimeOutOfRange(format!(
                "value for \"{pattern}\" in source string is out of range"
            )));
        }
        at = end;
        if negative {
            value = -value;
        }
        let count = digits.len() as u32;
        match upper.as_str() {
            "YYYY" | "IYYY" => fields.year = Some(value),
            "YYY" | "YY" | "Y" if count < 4 => fields.year = Some(partial_year(value)),
            "YYY" | "YY" | "Y" => fields.year = Some(value),
            "MM" => fields.month = Some(value),
            "DD" => fields.day = Some(value),
            "DDD" => fields.day_of_year = Some(value),
            "J" => fields.julian = Some(value),
            "HH" | "HH12" => {
                fields.hour = value;
                fields.twelve_hour = true;
            }
            "HH24" => fields.hour = value,
            "MI" => fields.minute = value,
            "SS" => fields.second = value,
            "SSSS" => {
                fields.hour = value / 3600;
                fields.minute = value / 60 % 60;
                fields.second = value % 60;
            }
            "MS" => fields.micros = value * 10i64.pow(3u32.saturating_sub(count)) * 1000,
            "US" => fields.micros = value * 10i64.pow(6u32.saturating_sub(count)),
            // Fields that say nothing a date does not already say.
            _ => {}
        }
    }
    fields.resolve()
}

/// A year written with fewer than four digits, as PostgreSQL places it near 2020: 0-69 in
/// the 2000s, 70-99 in the 1900s, 100-519 in the 2000s, 520-999 in the 1000s.
fn partial_year(year: i64) -> i64 {
    match year {
        0..70 => year + 2000,
        70..100 => year + 1900,
        100..520 => year + 2000,
        520..1000 => year + 1000,
        _ => year,
    }
}

/// Which of `names` the text starts with (case-insensitive), by full name or, where
/// `abbreviated`, the first three letters; with the length read.
fn name_at(text: &str, names: &[&str], abbreviated: bool) -> Option<(usize, usize)> {
    let lower = text.to_ascii_lowercase();
    names.iter().enumerate().find_map(|(i, name)| {
        let name = name.to_ascii_lowercase();
        if !abbreviated && lower.starts_with(&name) {
            Some((i, name.len()))
        } else if lower.starts_with(&name[..3]) {
            Some((i, 3))
        } else {
            None
        }
    })
}

impl Fields {
    fn resolve(self) -> Result<NaiveDateTime, Error> {
        let out_of_range = |what: String| {
            Error::DatetimeOutOfRange(format!("date/time field value out of range: \"{what}\""))
        };
        let mut hour = self.hour;
        if self.twelve_hour || self.afternoon.is_some() {
            if !(1..=12).contains(&hour) {
                return Err(Error::DatetimeOutOfRange(format!(
                    "hour \"{hour}\" is invalid for the 12-hour clock"
                )));
            }
            hour %= 12;
            if self.afternoon == Some(true) {
                hour += 12;
            }
        }
        let year = self.year.unwrap_or(1);
        let date = if let Some(julian) = self.julian {
            // Julian day 2451545 is 2000-01-01.
            NaiveDate::from_ymd_opt(2000, 1, 1)
                .and_then(|d| d.checked_add_signed(Duration::try_days(julian - 2_451_545)?))
        } else if let (Some(doy), None, None) = (self.day_of_year, self.month, self.day) {
            i32::try_from(year).ok().and_then(|y| {
                u32::try_from(doy)
                    .ok()
                    .and_then(|d| NaiveDate::from_yo_opt(y, d))
            })
        } else {
            let (month, day) = (self.month.unwrap_or(1), self.day.unwrap_or(1));
            i32::try_from(year)
                .ok()
                .zip(u32::try_from(month).ok())
                .zip(u32::try_from(day).ok())
                .and_then(|((y, m), d)| NaiveDate::from_ymd_opt(y, m, d))
        };
        let date = date.ok_or_else(|| {
            out_of_range(format!(
                "{year:04}-{:02}-{:02}",
                self.month.unwrap_or(1),
                self.day.unwrap_or(1)
            ))
        })?;
        let time = u32::try_from(hour)
            .ok()
            .zip(u32::try_from(self.minute).ok())
            .zip(u32::try_from(self.second).ok())
            .and_then(|((h, m), s)| NaiveTime::from_hms_opt(h, m, s))
            .ok_or_else(|| out_of_range(format!("{hour}:{}:{}", self.minute, self.second)))?;
        date.and_time(time)
            .checked_add_signed(Duration::microseconds(self.micros))
            .ok_or_else(|| out_of_range(format!("{year}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").unwrap()
    }

    #[test]
    fn age_counts_calendar_fields() {
        let show = |i: IntervalMonthDayNano| (i.months, i.days, i.nanoseconds / 1_000_000_000);
        assert_eq!(
            show(age(at("2020-03-01 00:00:00"), at("2019-01-15 00:00:00"))),
            (13, 17, 0)
        );
        assert_eq!(
            show(age(at("2019-01-15 00:00:00"), at("2020-03-01 00:00:00"))),
            (-13, -17, 0)
        );
        assert_eq!(
            show(age(at("2020-01-02 01:00:00"), at("2020-01-01 02:00:00"))),
            (0, 0, 23 * 3600)
        );
    }

    #[test]
    fn templates_read_postgres_patterns() {
        let read = |i: &str, t: &str| from_template(i, t).unwrap();
        assert_eq!(read("2020-03-01", "YYYY-MM-DD"), at("2020-03-01 00:00:00"));
        assert_eq!(read("2020-3-1", "YYYY-MM-DD"), at("2020-03-01 00:00:00"));
        assert_eq!(read("20200301", "YYYYMMDD"), at("2020-03-01 00:00:00"));
        assert_eq!(
            read("05 Mar 2021 11:30:15.5 PM", "DD Mon YYYY HH12:MI:SS.MS AM"),
            at("2021-03-05 23:30:15.5")
        );
        assert_eq!(read("2020/03/01", "YYYY-MM-DD"), at("2020-03-01 00:00:00"));
        assert_eq!(
            read("2020-03-01 10:00", "YYYY-MM-DD HH24:MI:SS.MS"),
            at("2020-03-01 10:00:00")
        );
        assert_eq!(read("99-12-31", "YY-MM-DD"), at("1999-12-31 00:00:00"));
        assert_eq!(
            read("March 1, 2020", "Month DD, YYYY"),
            at("2020-03-01 00:00:00")
        );
        assert!(matches!(
            from_template("2020-13-01", "YYYY-MM-DD"),
            Err(Error::DatetimeOutOfRange(_))
        ));
        assert!(matches!(
            from_template("x", "YYYY"),
            Err(Error::InvalidDatetimeFormat(_))
        ));
        // Values no date has are errors, not panics.
        for (input, template) in [
            ("200000000000", "J"),
            ("9000000000000000000", "US"),
            ("9000000000000000", "MS"),
            ("1234567", "US"),
            ("99999999999", "YYYY"),
        ] {
            assert!(
                matches!(
                    from_template(input, template),
                    Err(Error::DatetimeOutOfRange(_) | Error::InvalidDatetimeFormat(_))
                ),
                "{input} {template}"
            );
        }
        assert_eq!(read("150", "YYY"), at("2150-01-01 00:00:00"));
        assert_eq!(read("080", "YYY"), at("1980-01-01 00:00:00"));
        assert_eq!(read("2,020", "Y,YYY"), at("2020-01-01 00:00:00"));
    }
}

/// `generate_series` in FROM, as PostgreSQL runs it over dates: a series of timestamptz from
/// the dates' midnights in the session's zone (DataFusion's gives dates or timestamps). Other
/// arguments go to DataFusion's function as they are.
/// A series of bigints read as integers: each column cast to `integer` (the values are
/// between two integer bounds).
#[derive(Debug)]
struct IntegerSeries {
    series: Arc<dyn datafusion::catalog::TableProvider>,
    schema: datafusion::arrow::datatypes::SchemaRef,
}

impl IntegerSeries {
    fn new(series: Arc<dyn datafusion::catalog::TableProvider>) -> IntegerSeries {
        use datafusion::arrow::datatypes::{Field, Schema};
        let fields: Vec<Field> = series
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_data_type(DataType::Int32))
            .collect();
        IntegerSeries {
            series,
            schema: Arc::new(Schema::new(fields)),
        }
    }
}

#[async_trait::async_trait]
impl datafusion::catalog::TableProvider for IntegerSeries {
    fn schema(&self) -> datafusion::arrow::datatypes::SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> datafusion::logical_expr::TableType {
        self.series.table_type()
    }

    async fn scan(
        &self,
        state: &dyn datafusion::catalog::Session,
        projection: Option<&Vec<usize>>,
        filters: &[datafusion::logical_expr::Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        use datafusion::physical_expr::PhysicalExpr;
        use datafusion::physical_expr::expressions::{CastExpr, Column};
        let plan = self.series.scan(state, projection, filters, limit).await?;
        let exprs: Vec<(Arc<dyn PhysicalExpr>, String)> = plan
            .schema()
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let column = Arc::new(Column::new(f.name(), i));
                let cast: Arc<dyn PhysicalExpr> =
                    Arc::new(CastExpr::new(column, DataType::Int32, None));
                (cast, f.name().clone())
            })
            .collect();
        Ok(Arc::new(
            datafusion::physical_plan::projection::ProjectionExec::try_new(exprs, plan)?,
        ))
    }
}

#[derive(Debug)]
pub struct DateSeries {
    pub inner: Arc<dyn datafusion::catalog::TableFunctionImpl>,
}

impl datafusion::catalog::TableFunctionImpl for DateSeries {
    fn call_with_args(
        &self,
        args: datafusion::catalog::TableFunctionArgs,
    ) -> Result<Arc<dyn datafusion::catalog::TableProvider>> {
        use chrono::TimeZone;
        use datafusion::logical_expr::Expr;
        let exprs = args.exprs();
        // A series of integers (`generate_series(1, 3)`, whose constants are integers) is
        // DataFusion's series of bigints, read as integers.
        let int4 = |e: &Expr| match e {
            Expr::Literal(ScalarValue::Int32(v), _) => Some(v.map(i64::from)),
            Expr::Literal(ScalarValue::Int16(v), _) => Some(v.map(i64::from)),
            Expr::Literal(ScalarValue::Null, _) => Some(None),
            _ => None,
        };
        let widen = |e: &Expr| match e {
            Expr::Literal(ScalarValue::Int32(Some(v)), _) => {
                Expr::Literal(ScalarValue::Int64(Some(i64::from(*v))), None)
            }
            Expr::Literal(ScalarValue::Int16(Some(v)), _) => {
                Expr::Literal(ScalarValue::Int64(Some(i64::from(*v))), None)
            }
            Expr::Literal(ScalarValue::Int32(None) | ScalarValue::Int16(None), _) => {
                Expr::Literal(ScalarValue::Null, None)
            }
            e => e.clone(),
        };
        let bounds: Option<Vec<Option<i64>>> = exprs.iter().map(int4).collect();
        if let Some(bounds) = bounds
            && exprs.len() >= 2
            && exprs
                .iter()
                .any(|e| !matches!(e, Expr::Literal(ScalarValue::Null, _)))
        {
            // DataFusion's series takes a NULL bound as an untyped NULL.
            let widened: Vec<Expr> = bounds
                .into_iter()
                .map(|b| match b {
                    Some(b) => Expr::Literal(ScalarValue::Int64(Some(b)), None),
                    None => Expr::Literal(ScalarValue::Null, None),
                })
                .collect();
            let series = self
                .inner
                .call_with_args(datafusion::catalog::TableFunctionArgs::new(
                    &widened,
                    args.session(),
                ))?;
            return Ok(Arc::new(IntegerSeries::new(series)));
        }
        let is_date = |e: &Expr| matches!(e, Expr::Literal(ScalarValue::Date32(_), _));
        let mut converted: Vec<Expr> = exprs.iter().map(widen).collect();
        // DataFusion's series takes nanosecond timestamps; Partita's are microseconds.
        for e in converted.iter_mut().take(2) {
            if let Expr::Literal(ScalarValue::TimestampMicrosecond(micros, zone), _) = e {
                let nanos = match micros {
                    Some(m) => Some(m.checked_mul(1000).ok_or_else(|| {
                        DataFusionError::External(Box::new(Error::DatetimeOutOfRange(
                            "timestamp out of range for generate_series".into(),
                        )))
                    })?),
                    None => None,
                };
                *e = Expr::Literal(ScalarValue::TimestampNanosecond(nanos, zone.clone()), None);
            }
        }
        if exprs.len() != 3 || !exprs[..2].iter().any(is_date) {
            return self
                .inner
                .call_with_args(datafusion::catalog::TableFunctionArgs::new(
                    &converted,
                    args.session(),
                ));
        }
        let zone: Arc<str> = args
            .session()
            .config_options()
            .execution
            .time_zone
            .as_deref()
            .unwrap_or("UTC")
            .into();
        let tz: datafusion::arrow::array::timezone::Tz = zone.parse()?;
        for e in &mut converted[..2] {
            if let Expr::Literal(ScalarValue::Date32(days), _) = e {
                let nanos = days
                    .and_then(|d| chrono::DateTime::from_timestamp(i64::from(d) * 86_400, 0))
                    .and_then(|midnight| tz.from_local_datetime(&midnight.naive_utc()).earliest())
                    .and_then(|t| t.timestamp_nanos_opt());
                *e = Expr::Literal(
                    ScalarValue::TimestampNanosecond(nanos, Some(Arc::clone(&zone))),
                    None,
                );
            }
        }
        self.inner
            .call_with_args(datafusion::catalog::TableFunctionArgs::new(
                &converted,
                args.session(),
            ))
    }
}

/// The instants the clock functions give for the running statement, in microseconds since
/// the epoch: the start of the session's transaction block (`None` outside one, where
/// `now()` is the statement's start) and of the statement. The session sets them as each
/// statement begins.
#[derive(Debug, Clone, Default)]
pub(crate) struct TransactionStart {
    instants: Arc<std::sync::Mutex<(Option<i64>, i64)>>,
    /// No statement sets it: each evaluation reads the clock (plans kept across statements,
    /// such as CHECK constraints').
    live: bool,
}

impl TransactionStart {
    /// A clock for plans kept across statements: `now()` is the moment it is evaluated.
    pub(crate) fn live() -> TransactionStart {
        TransactionStart {
            live: true,
            ..TransactionStart::default()
        }
    }

    pub(crate) fn set(&self, transaction: Option<i64>) {
        let statement = chrono::Utc::now().timestamp_micros();
        *self.instants.lock().unwrap_or_else(|e| e.into_inner()) = (transaction, statement);
    }

    fn get(&self) -> (Option<i64>, i64) {
        match self.live {
            true => (None, chrono::Utc::now().timestamp_micros()),
            false => *self.instants.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }
}

/// Which instant a clock function gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Clock {
    /// `now()`, `current_timestamp`, `transaction_timestamp()`: the transaction's start.
    Transaction,
    /// `statement_timestamp()`: the statement's start.
    Statement,
    /// `clock_timestamp()`: the moment it is evaluated.
    Wall,
}

/// PostgreSQL's clock functions, timestamptz in microseconds in the session's zone
/// (DataFusion's `now()` is in nanoseconds, which coerced microsecond columns to a range
/// ending in 2262, and gives each statement's start even inside a transaction).
#[derive(Debug)]
pub(crate) struct ClockFunction {
    clock: Clock,
    zone: Option<Arc<str>>,
    start: TransactionStart,
    signature: Signature,
    aliases: Vec<String>,
}

impl PartialEq for ClockFunction {
    fn eq(&self, other: &Self) -> bool {
        self.clock == other.clock && self.zone == other.zone
    }
}

impl Eq for ClockFunction {}

impl std::hash::Hash for ClockFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.clock.hash(state);
        self.zone.hash(state);
    }
}

/// The clock functions, reading the transaction's start from `start`.
pub(crate) fn clock_functions(start: &TransactionStart) -> Vec<ScalarUDF> {
    [Clock::Transaction, Clock::Statement, Clock::Wall]
        .into_iter()
        .map(|clock| ScalarUDF::new_from_impl(ClockFunction::new(clock, None, start.clone())))
        .collect()
}

impl ClockFunction {
    fn new(clock: Clock, zone: Option<Arc<str>>, start: TransactionStart) -> ClockFunction {
        let volatility = match clock {
            Clock::Wall => Volatility::Volatile,
            _ => Volatility::Stable,
        };
        let aliases = match clock {
            Clock::Transaction => vec!["current_timestamp".into(), "transaction_timestamp".into()],
            _ => Vec::new(),
        };
        ClockFunction {
            clock,
            zone,
            start,
            signature: Signature::nullary(volatility),
            aliases,
        }
    }

    fn value(&self) -> ScalarValue {
        let (transaction, statement) = self.start.get();
        let micros = match self.clock {
            Clock::Transaction => transaction.unwrap_or(statement),
            Clock::Statement => statement,
            Clock::Wall => chrono::Utc::now().timestamp_micros(),
        };
        ScalarValue::TimestampMicrosecond(Some(micros), self.zone.clone())
    }
}

impl ScalarUDFImpl for ClockFunction {
    fn name(&self) -> &str {
        match self.clock {
            Clock::Transaction => "now",
            Clock::Statement => "statement_timestamp",
            Clock::Wall => "clock_timestamp",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn with_updated_config(&self, config: &datafusion::config::ConfigOptions) -> Option<ScalarUDF> {
        let zone = config.execution.time_zone.as_deref().map(Arc::from);
        Some(ScalarUDF::new_from_impl(ClockFunction::new(
            self.clock,
            zone,
            self.start.clone(),
        )))
    }

    fn return_field_from_args(
        &self,
        _args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        let ty = DataType::Timestamp(TimeUnit::Microsecond, self.zone.clone());
        Ok(Arc::new(datafusion::arrow::datatypes::Field::new(
            self.name(),
            ty,
            false,
        )))
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Timestamp(
            TimeUnit::Microsecond,
            self.zone.clone(),
        ))
    }

    /// The transaction's and the statement's instants are constants of the statement, so
    /// `ts > now() - interval '1 hour'` is still a key range.
    fn simplify(
        &self,
        args: Vec<datafusion::logical_expr::Expr>,
        _info: &datafusion::logical_expr::simplify::SimplifyContext,
    ) -> Result<datafusion::logical_expr::simplify::ExprSimplifyResult> {
        use datafusion::logical_expr::simplify::ExprSimplifyResult;
        Ok(match self.clock {
            _ if self.start.live => ExprSimplifyResult::Original(args),
            Clock::Wall => ExprSimplifyResult::Original(args),
            _ => ExprSimplifyResult::Simplified(datafusion::logical_expr::Expr::Literal(
                self.value(),
                None,
            )),
        })
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Scalar(self.value()))
    }
}

/// `timestamp(p)`'s rounding of a timestamp to `p` fractional digits, which a cast to
/// `timestamp(p)` or `timestamptz(p)` is planned as.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct TimestampPrecision {
    precision: u8,
    signature: Signature,
}

impl TimestampPrecision {
    pub(crate) fn new(precision: u8) -> TimestampPrecision {
        TimestampPrecision {
            precision,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for TimestampPrecision {
    fn name(&self) -> &str {
        "partita_timestamp_precision"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let precision = Some(self.precision);
        let round = |m: Option<i64>| m.map(|m| sql::types::round_timestamp(m, precision));
        match &args.args[0] {
            ColumnarValue::Scalar(ScalarValue::TimestampMicrosecond(m, zone)) => Ok(
                ColumnarValue::Scalar(ScalarValue::TimestampMicrosecond(round(*m), zone.clone())),
            ),
            ColumnarValue::Array(array) => {
                let values = array
                    .as_primitive_opt::<TimestampMicrosecondType>()
                    .ok_or_else(|| {
                        DataFusionError::Internal(format!("timestamp(p) of {}", array.data_type()))
                    })?;
                let rounded: datafusion::arrow::array::TimestampMicrosecondArray = values
                    .iter()
                    .map(round)
                    .collect::<datafusion::arrow::array::TimestampMicrosecondArray>()
                    .with_timezone_opt(values.timezone());
                Ok(ColumnarValue::Array(Arc::new(rounded)))
            }
            other => Err(DataFusionError::Internal(format!(
                "timestamp(p) of {}",
                other.data_type()
            ))),
        }
    }
}

/// `partita_finite(x)`: `x`, a date or timestamp operand of a subtraction, refused when it is
/// `infinity` or `-infinity`, as PostgreSQL refuses to subtract them (the difference of the
/// stored extremes would be a wrong number).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct FiniteOperand {
    signature: Signature,
}

pub(crate) const FINITE_OPERAND: &str = "partita_finite";

impl Default for FiniteOperand {
    fn default() -> Self {
        FiniteOperand {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for FiniteOperand {
    fn name(&self) -> &str {
        FINITE_OPERAND
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let value = args.args[0].clone();
        let array = value.to_array(args.number_rows)?;
        let infinite = match array.data_type() {
            DataType::Date32 => array
                .as_primitive::<datafusion::arrow::datatypes::Date32Type>()
                .iter()
                .flatten()
                .any(sql::types::infinite_date),
            DataType::Timestamp(TimeUnit::Microsecond, _) => array
                .as_primitive::<TimestampMicrosecondType>()
                .iter()
                .flatten()
                .any(sql::types::infinite_timestamp),
            _ => false,
        };
        if infinite {
            let what = match array.data_type() {
                DataType::Date32 => "dates",
                _ => "timestamps",
            };
            return Err(DataFusionError::External(Box::new(
                Error::DatetimeOutOfRange(format!("cannot subtract infinite {what}")),
            )));
        }
        Ok(value)
    }
}
