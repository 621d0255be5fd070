//! Text read as an interval the way PostgreSQL reads it. Arrow's reader takes `1 day 2 hours`
//! but not the forms PostgreSQL writes and users type: a time of day (`1 day 04:05:06.789`,
//! `-01:30`), abbreviated units (`3 mins`, `2 hrs`), `ago`, `@`, a year-month (`1-2`), a bare
//! number of seconds, or ISO 8601 (`P1Y2M3DT4H5M6S`). A cast of text to interval (which is
//! also what `interval '…'` and a bound parameter are) goes through [`parse`].

use crate::error::Error;
use datafusion::arrow::array::{Array, AsArray, IntervalMonthDayNanoBuilder};
use datafusion::arrow::datatypes::{DataType, IntervalMonthDayNano, IntervalUnit};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    Cast, ColumnarValue, Expr, ExprSchemable, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, TryCast, Volatility,
};
use std::sync::Arc;

const MICROS_PER_SECOND: f64 = 1e6;
const MICROS_PER_DAY: f64 = 86_400e6;

/// An interval being read: whole months and days, and microseconds; fractions of a larger
/// unit carry into the smaller ones as PostgreSQL carries them (a month is 30 days).
#[derive(Default)]
struct Parts {
    months: f64,
    days: f64,
    micros: f64,
}

impl Parts {
    fn add_months(&mut self, months: f64) {
        let whole = months.trunc();
        self.months += whole;
        self.add_days((months - whole) * 30.0);
    }

    fn add_days(&mut self, days: f64) {
        let whole = days.trunc();
        self.days += whole;
        self.micros += (days - whole) * MICROS_PER_DAY;
    }

    fn add(&mut self, value: f64, unit: Unit) {
        match unit {
            Unit::Micro => self.micros += value,
            Unit::Milli => self.micros += value * 1e3,
            Unit::Second => self.micros += value * MICROS_PER_SECOND,
            Unit::Minute => self.micros += value * 60.0 * MICROS_PER_SECOND,
            Unit::Hour => self.micros += value * 3600.0 * MICROS_PER_SECOND,
            Unit::Day => self.add_days(value),
            Unit::Week => self.add_days(value * 7.0),
            Unit::Month => self.add_months(value),
            // Fractions of years are whole months, rounded, as PostgreSQL counts them.
            Unit::Year => self.months += (value * 12.0).round(),
            Unit::Decade => self.months += (value * 120.0).round(),
            Unit::Century => self.months += (value * 1200.0).round(),
            Unit::Millennium => self.months += (value * 12000.0).round(),
        }
    }

    fn finish(self, negate: bool) -> Option<IntervalMonthDayNano> {
        let sign = if negate { -1.0 } else { 1.0 };
        let months = (self.months * sign).round();
        let days = (self.days * sign).round();
        let micros = (self.micros * sign).round();
        if months.abs() > f64::from(i32::MAX)
            || days.abs() > f64::from(i32::MAX)
            || micros.abs() > 9.2e15
        {
            return None;
        }
        Some(IntervalMonthDayNano::new(
            months as i32,
            days as i32,
            micros as i64 * 1000,
        ))
    }
}

#[derive(Clone, Copy)]
enum Unit {
    Micro,
    Milli,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
    Decade,
    Century,
    Millennium,
}

fn unit(word: &str) -> Option<Unit> {
    Some(match word {
        "microsecond" | "microseconds" | "microsecon" | "us" | "usec" | "usecs" | "useconds" => {
            Unit::Micro
        }
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "mseconds" => Unit::Milli,
        "second" | "seconds" | "sec" | "secs" | "s" => Unit::Second,
        "minute" | "minutes" | "min" | "mins" | "m" => Unit::Minute,
        "hour" | "hours" | "hr" | "hrs" | "h" => Unit::Hour,
        "day" | "days" | "d" => Unit::Day,
        "week" | "weeks" | "w" => Unit::Week,
        "month" | "months" | "mon" | "mons" => Unit::Month,
        "year" | "years" | "yr" | "yrs" | "y" => Unit::Year,
        "decade" | "decades" | "dec" | "decs" => Unit::Decade,
        "century" | "centuries" | "cent" | "c" => Unit::Century,
        "millennium" | "millennia" | "mil" | "mils" => Unit::Millennium,
        _ => return None,
    })
}

/// Reads PostgreSQL's interval text; `None` when it is not an interval.
pub fn parse(text: &str) -> Option<IntervalMonthDayNano> {
    let mut text = text.trim().to_ascii_lowercase();
    if let Some(rest) = text.strip_prefix('@') {
        text = rest.trim_start().to_string();
    }
    let mut ago = false;
    if let Some(rest) = text.strip_suffix("ago") {
        ago = true;
        text = rest.trim_end().to_string();
    }
    if let Some(iso) = text.strip_prefix('p') {
        return iso8601(iso)?.finish(ago);
    }
    let mut parts = Parts::default();
    let tokens = tokens(&text)?;
    if tokens.is_empty() {
        return None;
    }
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Time(micros) => parts.micros += micros,
            Token::YearMonth(months) => parts.months += months,
            Token::Number(n) => match tokens.get(i + 1) {
                Some(Token::Word(w)) => {
                    parts.add(*n, unit(w)?);
                    i += 1;
                }
                // A number before a time of day is days (`3 04:05:06`).
                Some(Token::Time(_)) => parts.add(*n, Unit::Day),
                // A number without a unit is seconds (only as the last item).
                None => parts.add(*n, Unit::Second),
                Some(_) => return None,
            },
            Token::Word(_) => return None,
        }
        i += 1;
    }
    parts.finish(ago)
}

enum Token {
    Number(f64),
    Word(String),
    /// `[-]h:mm[:ss[.f]]` in microseconds.
    Time(f64),
    /// `[-]y-m` in months.
    YearMonth(f64),
}

fn tokens(text: &str) -> Option<Vec<Token>> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() || c == ',' {
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_alphabetic() {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
            continue;
        }
        if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' {
            // A sign may stand apart from its number (`1 month - 1 day`).
            let sign = matches!(c, '-' | '+').then_some(c);
            if sign.is_some() {
                i += 1;
                while i < chars.len() && chars[i].is_whitespace() {
                    i += 1;
                }
            }
            let start = i;
            i += 1;
            while i < chars.len()
                && (chars[i].is_ascii_digit() || matches!(chars[i], '.' | ':' | '-'))
            {
                i += 1;
            }
            let word: String = sign
                .into_iter()
                .chain(chars[start..i.min(chars.len())].iter().copied())
                .collect();
            out.push(number_token(&word)?);
            continue;
        }
        return None;
    }
    Some(out)
}

fn number_token(word: &str) -> Option<Token> {
    let (negative, body) = match word.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, word.strip_prefix('+').unwrap_or(word)),
    };
    let sign = if negative { -1.0 } else { 1.0 };
    if body.contains(':') {
        let fields: Vec<&str> = body.split(':').collect();
        if fields.len() > 3 || fields.iter().any(|f| f.is_empty()) {
            return None;
        }
        // `h:mm`, `h:mm:ss[.f]`, and `mm:ss.f` (two fields with a fraction).
        let (hours, minutes, seconds): (f64, f64, f64) = match fields.as_slice() {
            [m, s] if s.contains('.') => (0.0, m.parse().ok()?, s.parse().ok()?),
            [h, m] => (h.parse().ok()?, m.parse().ok()?, 0.0),
            [h, m, s] => (h.parse().ok()?, m.parse().ok()?, s.parse().ok()?),
            _ => return None,
        };
        if minutes >= 60.0 || seconds >= 60.0 {
            return None;
        }
        let micros = ((hours * 60.0 + minutes) * 60.0 + seconds) * MICROS_PER_SECOND;
        return Some(Token::Time(sign * micros));
    }
    if let Some((years, months)) = body.split_once('-') {
        let years: f64 = years.parse().ok()?;
        let months: f64 = months.parse().ok()?;
        return Some(Token::YearMonth(sign * (years * 12.0 + months)));
    }
    Some(Token::Number(sign * body.parse::<f64>().ok()?))
}

/// The part of ISO 8601's `PnYnMnDTnHnMnS` after the `P`.
fn iso8601(text: &str) -> Option<Parts> {
    let mut parts = Parts::default();
    let mut in_time = false;
    let mut number = String::new();
    for c in text.chars() {
        match c {
            't' => in_time = true,
            '0'..='9' | '.' | '-' => number.push(c),
            unit_char => {
                let value: f64 = number.parse().ok()?;
                number.clear();
                let unit = match (unit_char, in_time) {
                    ('y', false) => Unit::Year,
                    ('m', false) => Unit::Month,
                    ('w', false) => Unit::Week,
                    ('d', false) => Unit::Day,
                    ('h', true) => Unit::Hour,
                    ('m', true) => Unit::Minute,
                    ('s', true) => Unit::Second,
                    _ => return None,
                };
                parts.add(value, unit);
            }
        }
    }
    number.is_empty().then_some(parts)
}

/// The interval's input function, given text.
#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalInput {
    signature: Signature,
}

impl ScalarUDFImpl for IntervalInput {
    fn name(&self) -> &str {
        "partita_interval_in"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Interval(IntervalUnit::MonthDayNano))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let text = args.args[0].to_array(if scalar { 1 } else { n })?;
        let text = datafusion::arrow::compute::cast(&text, &DataType::Utf8)?;
        let text = text.as_string::<i32>();
        let mut out = IntervalMonthDayNanoBuilder::with_capacity(text.len());
        for r in 0..text.len() {
            if text.is_null(r) {
                out.append_null();
                continue;
            }
            let value = parse(text.value(r)).ok_or_else(|| {
                DataFusionError::External(Box::new(Error::InvalidDatetimeFormat(format!(
                    "invalid input syntax for type interval: \"{}\"",
                    text.value(r)
                ))))
            })?;
            out.append_value(value);
        }
        let array = Arc::new(out.finish());
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                array.as_ref(),
                0,
            )?));
        }
        Ok(ColumnarValue::Array(array))
    }
}

/// A cast of text to interval reads the text with [`parse`].
pub fn interval_casts(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let (inner, field) = match &expr {
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
            (expr.as_ref(), field)
        }
        _ => return Ok(Transformed::no(expr)),
    };
    if !matches!(
        field.data_type(),
        DataType::Interval(IntervalUnit::MonthDayNano)
    ) || !matches!(
        inner.get_type(schema)?,
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
    ) {
        return Ok(Transformed::no(expr));
    }
    let input = ScalarUDF::new_from_impl(IntervalInput {
        signature: Signature::any(1, Volatility::Immutable),
    });
    Ok(Transformed::yes(input.call(vec![inner.clone()])))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (i32, i32, i64) {
        let v = parse(text).unwrap_or_else(|| panic!("{text} is an interval"));
        (v.months, v.days, v.nanoseconds / 1000)
    }

    #[test]
    fn postgres_forms_read() {
        const H: i64 = 3_600_000_000;
        assert_eq!(
            read("1 year 2 months 3 days 04:05:06.789"),
            (14, 3, 4 * H + 306_789_000)
        );
        assert_eq!(read("1 day 02:03"), (0, 1, 2 * H + 180_000_000));
        assert_eq!(read("-01:30"), (0, 0, -(H + H / 2)));
        assert_eq!(read("90 minutes"), (0, 0, H * 3 / 2));
        assert_eq!(read("3 mins 2 hrs"), (0, 0, 2 * H + 180_000_000));
        assert_eq!(read("@ 2 days ago"), (0, -2, 0));
        assert_eq!(read("1.5 days"), (0, 1, 12 * H));
        assert_eq!(read("1.5 months"), (1, 15, 0));
        assert_eq!(read("1-2"), (14, 0, 0));
        assert_eq!(read("5"), (0, 0, 5_000_000));
        assert_eq!(read("P1Y2M3DT4H5M6S"), (14, 3, 4 * H + 306_000_000));
        assert_eq!(read("2 weeks"), (0, 14, 0));
        assert_eq!(read("-1 day +02:00"), (0, -1, 2 * H));
        assert_eq!(read("05:06.789"), (0, 0, 306_789_000));
        assert_eq!(read("1.1 years"), (13, 0, 0));
        assert_eq!(read("3 04:05:06"), (0, 3, 4 * H + 306_000_000));
        assert_eq!(read("1 month - 1 day"), (1, -1, 0));
        assert_eq!(read("- 1 day + 2 hours"), (0, -1, 2 * H));
        assert!(parse("1 day -").is_none());
        assert!(parse("abc").is_none());
        assert!(parse("1 fortnight").is_none());
        assert!(parse("").is_none());
    }
}
