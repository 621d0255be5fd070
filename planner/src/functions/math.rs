//! Numeric functions as PostgreSQL has them: `div`, `width_bucket`, and the result scale of
//! `ceil`, `floor` and `trunc` on numerics (`mod` and `sign` are DataFusion's `%` and
//! `signum`, see `rewrite`).

use super::row::{RowFunction, int, text};
use crate::error::Error;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{Cast, Expr, ExprSchemable, Signature, TypeSignature, Volatility};

pub(super) fn register(ctx: &SessionContext) {
    ctx.register_udf(RowFunction::strict(
        "div",
        Signature::any(2, Volatility::Immutable),
        DataType::Decimal128(38, 0),
        |args| {
            let (a, sa) = decimal(&args[0])?;
            let (b, sb) = decimal(&args[1])?;
            let q = crate::numeric::integer_quotient(a, sa, b, sb)?;
            Ok(ScalarValue::Decimal128(Some(q), 38, 0))
        },
    ));
    ctx.register_udf(RowFunction::strict(
        "width_bucket",
        Signature::one_of(
            vec![TypeSignature::Exact(vec![
                DataType::Float64,
                DataType::Float64,
                DataType::Float64,
                DataType::Int64,
            ])],
            Volatility::Immutable,
        ),
        DataType::Int32,
        |args| {
            let float = |v: &ScalarValue| match v {
                ScalarValue::Float64(Some(x)) => Ok(*x),
                other => Err(DataFusionError::Internal(format!(
                    "width_bucket got {other:?}"
                ))),
            };
            let count = int(&args[3]).unwrap_or(0);
            width_bucket(float(&args[0])?, float(&args[1])?, float(&args[2])?, count)
                .map(|b| ScalarValue::Int32(Some(b)))
                .map_err(|e| DataFusionError::External(Box::new(e)))
        },
    ));
}

/// A number as a decimal mantissa and scale.
fn decimal(v: &ScalarValue) -> Result<(i128, i8)> {
    if let Some(i) = int(v) {
        return Ok((i128::from(i), 0));
    }
    let written = match v {
        ScalarValue::Decimal128(Some(m), _, s) => return Ok((*m, *s)),
        ScalarValue::Float64(Some(f)) => f.to_string(),
        ScalarValue::Float32(Some(f)) => f.to_string(),
        other => text(other).unwrap_or_default().trim().to_string(),
    };
    parse_decimal(&written).ok_or_else(|| {
        DataFusionError::External(Box::new(Error::InvalidText {
            ty: "numeric".into(),
            value: written,
        }))
    })
}

/// `-12.50` → (-1250, 2).
fn parse_decimal(s: &str) -> Option<(i128, i8)> {
    let (negative, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .chars()
            .chain(fraction.chars())
            .all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let scale = i8::try_from(fraction.len()).ok().filter(|s| *s <= 38)?;
    let mut mantissa: i128 = 0;
    for c in whole.chars().chain(fraction.chars()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(i128::from(c as u8 - b'0'))?;
    }
    Some((if negative { -mantissa } else { mantissa }, scale))
}

/// PostgreSQL's `width_bucket(operand, b1, b2, count)` for doubles: which of `count`
/// equal-width buckets between the bounds holds the operand, 0 below and `count + 1` above.
fn width_bucket(operand: f64, b1: f64, b2: f64, count: i64) -> Result<i32, Error> {
    let invalid = |m: &str| Error::InvalidWidthBucket(m.into());
    if count <= 0 {
        return Err(invalid("count must be greater than zero"));
    }
    if operand.is_nan() || b1.is_nan() || b2.is_nan() {
        return Err(invalid(
            "operand, lower bound, and upper bound cannot be NaN",
        ));
    }
    if b1.is_infinite() || b2.is_infinite() {
        return Err(invalid("lower and upper bounds must be finite"));
    }
    let count =
        i32::try_from(count).map_err(|_| Error::NumericOverflow("integer out of range".into()))?;
    let top = || {
        count
            .checked_add(1)
            .ok_or_else(|| Error::NumericOverflow("integer out of range".into()))
    };
    let inside = |fraction: f64| {
        // The quotient can round up to 1.0, which would name the bucket above.
        let bucket = (f64::from(count) * fraction) as i32;
        bucket.min(count - 1) + 1
    };
    if b1 < b2 {
        if operand < b1 {
            Ok(0)
        } else if operand >= b2 {
            top()
        } else {
            Ok(inside((operand - b1) / (b2 - b1)))
        }
    } else if b1 > b2 {
        if operand > b1 {
            Ok(0)
        } else if operand <= b2 {
            top()
        } else {
            Ok(inside((b1 - operand) / (b1 - b2)))
        }
    } else {
        Err(invalid("lower bound cannot equal upper bound"))
    }
}

/// `ceil`, `floor` and `trunc` of a numeric have the scale PostgreSQL gives them (0, or
/// `trunc`'s constant second argument); DataFusion keeps the argument's scale (`ceil(2.1)`
/// would be `3.0`).
///
/// `round` of a float rounds halves to even, as C's `rint` does for PostgreSQL
/// (`round(2.5::float8)` is 2); DataFusion's rounds them away from zero.
pub(crate) fn rounding_scale(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::ScalarFunction(f) = &expr else {
        return Ok(Transformed::no(expr));
    };
    if f.name() == "round"
        && let [x] = f.args.as_slice()
        && matches!(x.get_type(schema)?, DataType::Float64 | DataType::Float32)
    {
        let half_even = datafusion::logical_expr::ScalarUDF::new_from_impl(
            crate::semantics::RoundHalfEven::default(),
        );
        return Ok(Transformed::yes(half_even.call(vec![x.clone()])));
    }
    if !matches!(f.name(), "ceil" | "floor" | "trunc") {
        return Ok(Transformed::no(expr));
    }
    let Some(DataType::Decimal128(..)) = f.args.first().and_then(|a| a.get_type(schema).ok())
    else {
        return Ok(Transformed::no(expr));
    };
    let target = match f.args.get(1) {
        None => 0,
        Some(Expr::Literal(v, _)) => match int(v) {
            Some(n) => n.clamp(0, 38) as i8,
            None => return Ok(Transformed::no(expr)),
        },
        Some(_) => return Ok(Transformed::no(expr)),
    };
    match expr.get_type(schema)? {
        DataType::Decimal128(_, s) if s != target => Ok(Transformed::yes(Expr::Cast(Cast::new(
            Box::new(expr),
            DataType::Decimal128(38, target),
        )))),
        _ => Ok(Transformed::no(expr)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_bucket_matches_postgres() {
        assert_eq!(width_bucket(5.35, 0.024, 10.06, 5).unwrap(), 3);
        assert_eq!(width_bucket(-1.0, 0.0, 10.0, 5).unwrap(), 0);
        assert_eq!(width_bucket(10.0, 0.0, 10.0, 5).unwrap(), 6);
        // Descending bounds count from the first.
        assert_eq!(width_bucket(1.0, 10.0, 0.0, 5).unwrap(), 5);
        assert!(width_bucket(1.0, 0.0, 0.0, 5).is_err());
        assert!(width_bucket(1.0, 0.0, 1.0, 0).is_err());
    }

    #[test]
    fn decimals_parse_with_their_scale() {
        assert_eq!(parse_decimal("-12.50"), Some((-1250, 2)));
        assert_eq!(parse_decimal("7"), Some((7, 0)));
        assert_eq!(parse_decimal("1e5"), None);
    }
}
