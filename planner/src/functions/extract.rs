//! `EXTRACT(field FROM x)` and `date_part('field', x)` as PostgreSQL computes them: from the
//! value's own fields, exactly, with fractional seconds (DataFusion's `date_part` truncates
//! `second` to whole seconds and computes `epoch` in floating point). EXTRACT returns a
//! numeric (`5.500000` seconds), date_part a double, as in PostgreSQL 15.

use crate::error::Error;
use crate::output::timestamp_micros;
use chrono::{Datelike, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Builder, Float64Builder};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Field, FieldRef, IntervalMonthDayNanoType, IntervalUnit,
};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use std::sync::Arc;

/// The function `EXTRACT` is planned as.
pub(crate) const EXTRACT: &str = "partita_extract";

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Extract {
    /// EXTRACT's numeric result, or date_part's double.
    numeric: bool,
    signature: Signature,
}

impl Extract {
    pub(crate) fn new(numeric: bool) -> Extract {
        Extract {
            numeric,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

/// A value's fields: a calendar moment (with its UTC offset for timestamptz), or an
/// interval's months, days and microseconds.
enum Moment {
    Date(NaiveDate),
    Timestamp(NaiveDateTime, Option<i32>),
    Interval(i32, i32, i64),
    /// A time of day, in microseconds.
    Time(i64),
}

/// A decimal result: mantissa and scale.
type Decimal = (i128, i8);

/// A field's name as PostgreSQL's units table spells its abbreviations and plurals.
fn canonical(field: &str) -> &str {
    match field {
        "seconds" | "sec" | "secs" | "s" => "second",
        "minutes" | "min" | "mins" | "m" => "minute",
        "hours" | "hr" | "hrs" | "h" => "hour",
        "days" | "d" => "day",
        "months" | "mon" | "mons" => "month",
        "years" | "yr" | "yrs" | "y" => "year",
        "milliseconds" | "ms" | "msec" | "msecs" => "millisecond",
        "microseconds" | "us" | "usec" | "usecs" => "microsecond",
        "decades" => "decade",
        "centuries" => "century",
        "millennia" => "millennium",
        "j" => "julian",
        "tz" => "timezone",
        other => other,
    }
}

/// The scale EXTRACT gives `field` of a value of `ty`.
fn scale(field: &str, ty: &DataType) -> i8 {
    let date = matches!(ty, DataType::Date32);
    match canonical(field) {
        "second" => 6,
        "julian" | "epoch" if !date => 6,
        "millisecond" => 3,
        _ => 0,
    }
}

impl ScalarUDFImpl for Extract {
    fn name(&self) -> &str {
        if self.numeric { EXTRACT } else { "date_part" }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Err(DataFusionError::Internal(
            "the type of extract comes from return_field_from_args".into(),
        ))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let ty = if self.numeric {
            let field = match args.scalar_arguments.first() {
                Some(Some(v)) => super::row::text(v).unwrap_or_default().to_ascii_lowercase(),
                _ => String::new(),
            };
            DataType::Decimal128(38, scale(&field, args.arg_fields[1].data_type()))
        } else {
            DataType::Float64
        };
        Ok(Arc::new(Field::new(self.name(), ty, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let fields = datafusion::arrow::compute::cast(&args.args[0].to_array(n)?, &DataType::Utf8)?;
        let fields = fields.as_string::<i32>();
        let values = args.args[1].to_array(n)?;
        let zone = match values.data_type() {
            DataType::Timestamp(_, Some(tz)) => Some(
                tz.parse::<Tz>()
                    .map_err(|e| DataFusionError::Execution(e.to_string()))?,
            ),
            _ => None,
        };
        let result_scale = match args.return_field.data_type() {
            DataType::Decimal128(_, s) => *s,
            _ => 0,
        };
        let mut decimals = Decimal128Builder::with_capacity(n);
        let mut doubles = Float64Builder::with_capacity(n);
        for r in 0..n {
            if fields.is_null(r) || values.is_null(r) {
                decimals.append_null();
                doubles.append_null();
                continue;
            }
            let field = fields.value(r).to_ascii_lowercase();
            let moment = moment(&values, r, zone.as_ref())?;
            let (mantissa, s) =
                extract(&field, &moment).map_err(|e| DataFusionError::External(Box::new(e)))?;
            if self.numeric {
                let m = rescale(mantissa, s, result_scale);
                decimals.append_value(m);
            } else {
                doubles.append_value(mantissa as f64 / 10f64.powi(i32::from(s)));
            }
        }
        let array: ArrayRef = if self.numeric {
            Arc::new(
                decimals
                    .finish()
                    .with_precision_and_scale(38, result_scale)?,
            )
        } else {
            Arc::new(doubles.finish())
        };
        if matches!(&args.args[1], ColumnarValue::Scalar(_))
            && matches!(&args.args[0], ColumnarValue::Scalar(_))
        {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &array, 0,
            )?));
        }
        Ok(ColumnarValue::Array(array))
    }
}

fn rescale(mantissa: i128, from: i8, to: i8) -> i128 {
    if to >= from {
        mantissa * 10i128.pow((to - from) as u32)
    } else {
        mantissa / 10i128.pow((from - to) as u32)
    }
}

fn moment(values: &ArrayRef, r: usize, zone: Option<&Tz>) -> Result<Moment> {
    let out_of_range = || {
        DataFusionError::External(Box::new(Error::DatetimeOutOfRange(
            "timestamp out of range".into(),
        )))
    };
    Ok(match values.data_type() {
        DataType::Date32 => {
            let days = values.as_primitive::<Date32Type>().value(r);
            Moment::Date(
                days.checked_add(719_163)
                    .and_then(NaiveDate::from_num_days_from_ce_opt)
                    .ok_or_else(out_of_range)?,
            )
        }
        DataType::Timestamp(unit, _) => {
            let micros = timestamp_micros(values, r, unit);
            let utc = chrono::DateTime::from_timestamp_micros(micros)
                .ok_or_else(out_of_range)?
                .naive_utc();
            match zone {
                Some(tz) => {
                    let local = tz.from_utc_datetime(&utc);
                    let offset = local.offset().fix().local_minus_utc();
                    Moment::Timestamp(local.naive_local(), Some(offset))
                }
                None => Moment::Timestamp(utc, None),
            }
        }
        // A difference of timestamps: the interval of its days and time.
        DataType::Duration(unit) => {
            let (days, micros) = crate::output::duration_days(values, r, unit);
            Moment::Interval(0, days, micros)
        }
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = values.as_primitive::<IntervalMonthDayNanoType>().value(r);
            Moment::Interval(v.months, v.days, v.nanoseconds / 1000)
        }
        DataType::Time64(_) | DataType::Time32(_) => {
            let micros = datafusion::arrow::compute::cast(
                &values.slice(r, 1),
                &DataType::Time64(datafusion::arrow::datatypes::TimeUnit::Microsecond),
            )?;
            Moment::Time(
                micros
                    .as_primitive::<datafusion::arrow::datatypes::Time64MicrosecondType>()
                    .value(0),
            )
        }
        other => {
            return Err(DataFusionError::External(Box::new(
                Error::UndefinedFunction(format!("extract(text, {other})")),
            )));
        }
    })
}

/// `field` of the moment, as a decimal.
fn extract(field: &str, moment: &Moment) -> Result<Decimal, Error> {
    let written = field;
    let field = canonical(field);
    let type_name = match moment {
        Moment::Date(_) => "date",
        Moment::Timestamp(_, None) => "timestamp without time zone",
        Moment::Timestamp(_, Some(_)) => "timestamp with time zone",
        Moment::Interval(..) => "interval",
        Moment::Time(_) => "time without time zone",
    };
    let unsupported = || Error::Unsupported(format!("unit \"{written}\" for type {type_name}"));
    let unknown = || {
        Error::InvalidParameterValue(format!(
            "unit \"{written}\" not recognized for type {type_name}"
        ))
    };
    let int = |v: i64| Ok((i128::from(v), 0));
    match moment {
        Moment::Time(micros) => {
            let micros = *micros;
            match field {
                "hour" => int(micros / 3_600_000_000),
                "minute" => int(micros / 60_000_000 % 60),
                "second" => Ok((i128::from(micros % 60_000_000), 6)),
                "millisecond" => Ok((i128::from(micros % 60_000_000), 3)),
                "microsecond" => int(micros % 60_000_000),
                "epoch" => Ok((i128::from(micros), 6)),
                "day" | "month" | "year" | "quarter" | "decade" | "century" | "millennium"
                | "dow" | "doy" | "isodow" | "isoyear" | "week" | "julian" | "timezone"
                | "timezone_hour" | "timezone_minute" => Err(unsupported()),
                _ => Err(unknown()),
            }
        }
        Moment::Interval(months, days, micros) => {
            let (months, days, micros) = (i64::from(*months), i64::from(*days), *micros);
            match field {
                "epoch" => {
                    // A year is 365.25 days, a month 30, as PostgreSQL counts them.
                    let years = months / 12;
                    let seconds_micros = i128::from(years) * 31_557_600_000_000
                        + i128::from(months % 12) * 2_592_000_000_000
                        + i128::from(days) * 86_400_000_000
                        + i128::from(micros);
                    Ok((seconds_micros, 6))
                }
                "year" | "years" => int(months / 12),
                "month" | "months" | "mon" | "mons" => int(months % 12),
                "quarter" => int((months % 12) / 3 + 1),
                "decade" | "decades" => int(months / 120),
                "century" | "centuries" => int(months / 1200),
                "millennium" | "millennia" => int(months / 12000),
                "day" | "days" => int(days),
                "hour" | "hours" => int(micros / 3_600_000_000),
                "minute" | "minutes" => int(micros / 60_000_000 % 60),
                "second" | "seconds" => Ok((i128::from(micros % 60_000_000), 6)),
                "millisecond" | "milliseconds" => Ok((i128::from(micros % 60_000_000), 3)),
                "microsecond" | "microseconds" => int(micros % 60_000_000),
                "dow" | "doy" | "isodow" | "isoyear" | "week" | "julian" | "timezone"
                | "timezone_hour" | "timezone_minute" => Err(unsupported()),
                _ => Err(unknown()),
            }
        }
        Moment::Date(date) => {
            let at = date.and_hms_opt(0, 0, 0).unwrap_or_default();
            match field {
                // A date's Julian day is a whole number.
                "julian" => calendar(field, &at)
                    .ok_or_else(unknown)?
                    .map(|(m, s)| (m / 10i128.pow(s as u32), 0)),
                "hour" | "minute" | "second" | "millisecond" | "milliseconds" | "microsecond"
                | "microseconds" | "timezone" | "timezone_hour" | "timezone_minute" => {
                    Err(unsupported())
                }
                "epoch" => int(at.and_utc().timestamp()),
                _ => calendar(field, &at).ok_or_else(unknown)?,
            }
        }
        Moment::Timestamp(at, offset) => match field {
            "epoch" => {
                let utc = at
                    .checked_sub_signed(chrono::Duration::seconds(i64::from(offset.unwrap_or(0))))
                    .unwrap_or(*at);
                Ok((i128::from(utc.and_utc().timestamp_micros()), 6))
            }
            "hour" | "hours" => int(i64::from(at.hour())),
            "minute" | "minutes" => int(i64::from(at.minute())),
            "second" | "seconds" => Ok((second_micros(at), 6)),
            "millisecond" | "milliseconds" => Ok((second_micros(at), 3)),
            "microsecond" | "microseconds" => Ok((second_micros(at), 0)),
            "timezone" | "timezone_hour" | "timezone_minute" => {
                let Some(offset) = offset else {
                    return Err(unsupported());
                };
                let offset = i64::from(*offset);
                int(match field {
                    "timezone" => offset,
                    "timezone_hour" => offset / 3600,
                    _ => offset / 60 % 60,
                })
            }
            _ => calendar(field, at).ok_or_else(unknown)?,
        },
    }
}

/// Seconds with their fraction, in microseconds.
fn second_micros(at: &NaiveDateTime) -> i128 {
    i128::from(at.second()) * 1_000_000 + i128::from(at.nanosecond() / 1000)
}

/// The calendar fields of a date or timestamp; `None` for a field name there is none of.
fn calendar(field: &str, at: &NaiveDateTime) -> Option<Result<Decimal, Error>> {
    // Astronomical years (0 is 1 BC) for the arithmetic; `year` itself as PostgreSQL
    // counts, without a year 0.
    let year = i64::from(at.year());
    let value = match field {
        "year" if year <= 0 => year - 1,
        "year" | "years" => year,
        "month" | "months" | "mon" | "mons" => i64::from(at.month()),
        "day" | "days" => i64::from(at.day()),
        "quarter" => i64::from((at.month() - 1) / 3 + 1),
        "dow" => i64::from(at.weekday().num_days_from_sunday()),
        "isodow" => i64::from(at.weekday().number_from_monday()),
        "doy" => i64::from(at.ordinal()),
        "week" => i64::from(at.iso_week().week()),
        "isoyear" => i64::from(at.iso_week().year()),
        "decade" | "decades" => year.div_euclid(10),
        "century" | "centuries" => {
            if year > 0 {
                (year + 99) / 100
            } else {
                -((99 - (year - 1)) / 100)
            }
        }
        "millennium" | "millennia" => {
            if year > 0 {
                (year + 999) / 1000
            } else {
                -((999 - (year - 1)) / 1000)
            }
        }
        "julian" => {
            // Julian day 2451545 is 2000-01-01; the time of day is its fraction.
            let days = (at.date() - NaiveDate::from_ymd_opt(2000, 1, 1)?).num_days() + 2_451_545;
            let micros = i128::from(at.num_seconds_from_midnight()) * 1_000_000
                + i128::from(at.nanosecond() / 1000);
            return Some(Ok((
                i128::from(days) * 1_000_000 + micros * 1_000_000 / 86_400_000_000,
                6,
            )));
        }
        _ => return None,
    };
    Some(Ok((i128::from(value), 0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_exact() {
        let at =
            NaiveDateTime::parse_from_str("2020-03-01 10:00:05.5", "%Y-%m-%d %H:%M:%S%.f").unwrap();
        let ts = Moment::Timestamp(at, None);
        assert_eq!(extract("second", &ts).unwrap(), (5_500_000, 6));
        assert_eq!(extract("dow", &ts).unwrap(), (0, 0));
        assert_eq!(extract("century", &ts).unwrap(), (21, 0));
        assert_eq!(
            extract("epoch", &Moment::Interval(0, 1, 7_200_000_000)).unwrap(),
            (93_600_000_000, 6)
        );
        assert!(matches!(
            extract("hour", &Moment::Date(at.date())),
            Err(Error::Unsupported(_))
        ));
        assert!(matches!(
            extract("fortnight", &ts),
            Err(Error::InvalidParameterValue(_))
        ));
        assert_eq!(extract("secs", &ts).unwrap(), (5_500_000, 6));
        assert_eq!(scale("seconds", &DataType::Null), 6);
        assert_eq!(
            extract("hour", &Moment::Time(37_800_000_000)).unwrap(),
            (10, 0)
        );
        let bc = NaiveDate::from_ymd_opt(0, 6, 1)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap();
        assert_eq!(
            extract("year", &Moment::Timestamp(bc, None)).unwrap(),
            (-1, 0)
        );
    }
}
