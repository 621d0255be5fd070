//! Literals as PostgreSQL reads them where DataFusion reads them otherwise, rewritten on the
//! parsed statement:
//!
//! - a number with an exponent (`1e5`, `-1.5E-3`) is numeric, like any other number with a
//!   decimal point: it is written out in plain digits when it fits a numeric of 38 digits
//!   (DataFusion refuses decimal literals with a negative scale), and read as double
//!   precision beyond that;
//! - `'…'::bytea` and `CAST('…' AS bytea)` read the text with bytea's input syntax (`\x`
//!   and hex digits, or escapes) instead of taking the text's own bytes; text that is not
//!   valid bytea input gets PostgreSQL's errors (22023 for hex digits, 22P02 otherwise).

use crate::{Error, Result};
use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, Expr, Statement, Value, ValueWithSpan, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

/// Digits a numeric literal may have and stay numeric (DataFusion's Decimal128).
const MAX_DIGITS: usize = 38;

/// Applies the rewrites above to `stmt`.
pub fn normalize(stmt: &mut Statement) -> Result<()> {
    match stmt.visit(&mut Literals) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct Literals;

impl VisitorMut for Literals {
    type Break = Error;

    fn pre_visit_query(
        &mut self,
        query: &mut datafusion::sql::sqlparser::ast::Query,
    ) -> ControlFlow<Error> {
        use datafusion::sql::sqlparser::ast::LimitClause;
        // LIMIT 1e1 is a count: plain digits, not the numeric other exponents become.
        if let Some(LimitClause::LimitOffset { limit, offset, .. }) = &mut query.limit_clause {
            for e in limit
                .iter_mut()
                .chain(offset.iter_mut().map(|o| &mut o.value))
            {
                if let Expr::Value(ValueWithSpan {
                    value: Value::Number(text, _),
                    ..
                }) = e
                    && text.contains(['e', 'E'])
                    && let Some(plain) = plain_digits(text)
                {
                    *text = plain;
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(
        &mut self,
        select: &mut datafusion::sql::sqlparser::ast::Select,
    ) -> ControlFlow<Error> {
        use datafusion::sql::sqlparser::ast::{Ident, SelectItem};
        // A number with an exponent becomes a cast below; its column is still "?column?".
        for item in &mut select.projection {
            if let SelectItem::UnnamedExpr(
                e @ Expr::Value(ValueWithSpan {
                    value: Value::Number(..),
                    ..
                }),
            ) = item
                && e.to_string().contains(['e', 'E'])
            {
                *item = SelectItem::ExprWithAlias {
                    expr: e.clone(),
                    alias: Ident::with_quote('"', "?column?"),
                };
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<Error> {
        match e {
            Expr::Value(ValueWithSpan {
                value: Value::Number(text, _),
                ..
            }) if text.contains(['e', 'E']) => match plain_digits(text) {
                // Whole digits would read as an integer: a numeric of scale 0 (`1e3 / 7`
                // divides as numerics).
                Some(plain) if !plain.contains('.') => {
                    let precision = plain.len() as u64;
                    *e = Expr::Cast {
                        kind: CastKind::DoubleColon,
                        expr: Box::new(Expr::value(Value::Number(plain, false))),
                        data_type: DataType::Numeric(
                            datafusion::sql::sqlparser::ast::ExactNumberInfo::PrecisionAndScale(
                                precision, 0,
                            ),
                        ),
                        array: false,
                        format: None,
                    }
                }
                Some(plain) => *text = plain,
                None => {
                    *e = Expr::Cast {
                        kind: CastKind::DoubleColon,
                        expr: Box::new(Expr::value(Value::SingleQuotedString(text.clone()))),
                        data_type: DataType::DoublePrecision,
                        array: false,
                        format: None,
                    }
                }
            },
            // `interval '1 day 04:05'` is read as PostgreSQL reads it (`interval_input`) and
            // stays an interval literal, in the units DataFusion's reader takes (window
            // frames take only literals).
            Expr::Interval(datafusion::sql::sqlparser::ast::Interval {
                value,
                leading_field: None,
                leading_precision: None,
                last_field: None,
                fractional_seconds_precision: None,
            }) => {
                if let Expr::Value(ValueWithSpan {
                    value: Value::SingleQuotedString(text),
                    ..
                }) = value.as_mut()
                    && !already_read(text)
                {
                    let Some(v) = crate::interval_input::parse(text) else {
                        return ControlFlow::Break(Error::InvalidDatetimeFormat(format!(
                            "invalid input syntax for type interval: \"{text}\""
                        )));
                    };
                    *text = format!(
                        "{} months {} days {} nanoseconds",
                        v.months, v.days, v.nanoseconds
                    );
                }
            }
            // `- interval '1 day'`: DataFusion negates an interval constant's months and time
            // but not its days; negated as an expression (`semantics::negation`), it is whole.
            Expr::UnaryOp {
                op: datafusion::sql::sqlparser::ast::UnaryOperator::Minus,
                expr,
            } if matches!(expr.as_ref(), Expr::Interval(_)) => {
                **expr = Expr::Nested(expr.clone());
            }
            Expr::Cast {
                expr,
                data_type: DataType::Bytea,
                ..
            } => {
                if let Expr::Value(ValueWithSpan {
                    value: Value::SingleQuotedString(text) | Value::EscapedStringLiteral(text),
                    ..
                }) = expr.as_ref()
                {
                    match crate::convert::parse_bytea(text) {
                        // Still a cast, so the result column is named "bytea".
                        Some(bytes) => {
                            **expr = Expr::value(Value::HexStringLiteral(
                                crate::provider::encode_hex(&bytes),
                            ))
                        }
                        None => return ControlFlow::Break(bad_bytea(text)),
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// PostgreSQL's error for bytea input it cannot read: 22023 naming the digit in the hex
/// format, 22P02 in the escape format.
pub(crate) fn bad_bytea(text: &str) -> Error {
    match text.strip_prefix("\\x") {
        Some(hex) => {
            let bad = hex
                .chars()
                .find(|c| !c.is_ascii_hexdigit() && !c.is_ascii_whitespace());
            Error::Sql(sql::Error::InvalidParameter(match bad {
                Some(c) => format!("invalid hexadecimal digit: \"{c}\""),
                None => "invalid hexadecimal data: odd number of digits".into(),
            }))
        }
        None => Error::InvalidText {
            ty: "bytea".into(),
            value: text.to_string(),
        },
    }
}

/// `text`, a number with an exponent, in plain digits (`1.5e3` → `1500`, `15e-4` →
/// `0.0015`) when it has at most [`MAX_DIGITS`] digits so written; `None` otherwise.
fn plain_digits(text: &str) -> Option<String> {
    let (mantissa, exponent) = text.split_once(['e', 'E'])?;
    let exponent: i64 = exponent.parse().ok()?;
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if !(int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())) {
        return None;
    }
    // The value is digits × 10^-scale.
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    let scale = frac.len() as i64 - exponent;
    if digits.is_empty() {
        return Some("0".into());
    }
    let (digits, scale) = if scale < 0 {
        if digits.len() as i64 - scale > MAX_DIGITS as i64 {
            return None;
        }
        (format!("{digits}{}", "0".repeat((-scale) as usize)), 0)
    } else {
        (digits.to_string(), scale as usize)
    };
    if digits.len().max(scale + 1) > MAX_DIGITS {
        return None;
    }
    Some(if scale == 0 {
        digits
    } else if digits.len() > scale {
        let (i, f) = digits.split_at(digits.len() - scale);
        format!("{i}.{f}")
    } else {
        format!("0.{}{digits}", "0".repeat(scale - digits.len()))
    })
}

/// Interval text this module wrote already (`1 months 2 days 3 nanoseconds`), which a
/// statement read back from its text holds: it is not read again.
fn already_read(text: &str) -> bool {
    let words: Vec<&str> = text.split(' ').collect();
    matches!(
        words.as_slice(),
        [months, "months", days, "days", nanos, "nanoseconds"]
            if months.parse::<i32>().is_ok()
                && days.parse::<i32>().is_ok()
                && nanos.parse::<i64>().is_ok()
    )
}

#[cfg(test)]
mod tests {
    use super::plain_digits;

    #[test]
    fn exponents_become_plain_digits_while_they_fit() {
        assert_eq!(plain_digits("1e5").as_deref(), Some("100000"));
        assert_eq!(plain_digits("1.5E3").as_deref(), Some("1500"));
        assert_eq!(plain_digits("15e-4").as_deref(), Some("0.0015"));
        assert_eq!(plain_digits("1.25e1").as_deref(), Some("12.5"));
        assert_eq!(plain_digits("1.50e0").as_deref(), Some("1.50"));
        assert_eq!(plain_digits("0e10").as_deref(), Some("0"));
        assert_eq!(plain_digits("1e37").map(|s| s.len()), Some(38));
        assert_eq!(plain_digits("1e38"), None);
        assert_eq!(plain_digits("1e300"), None);
        assert_eq!(plain_digits("1e-40"), None);
        assert_eq!(plain_digits("1e99999999999999999999"), None);
    }
}
