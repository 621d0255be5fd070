//! Numeric functions as PostgreSQL has them: `div`, `width_bucket`, `to_number`, the
//! result scale of `ceil`, `floor` and `trunc` on numerics (`mod` and `sign` are
//! DataFusion's `%` and `signum`, see `rewrite`), and `sqrt`, `ln`, `log`, `exp` and `power`
//! raising PostgreSQL's errors outside their domain or range rather than giving NaN or
//! Infinity.

use super::row::{RowFunction, int, text};
use crate::error::Error;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{Cast, Expr, ExprSchemable, Signature, TypeSignature, Volatility};

pub(super) fn register(ctx: &SessionContext) {
    use datafusion::functions::math;
    for (inner, domain) in [
        (math::sqrt(), Domain::SquareRoot),
        (math::ln(), Domain::Logarithm),
        (math::log10(), Domain::Logarithm),
        (math::log(), Domain::Logarithm),
        (math::exp(), Domain::Exponential),
        (math::power(), Domain::Power),
    ] {
        ctx.register_udf(datafusion::logical_expr::ScalarUDF::new_from_impl(
            Checked { inner, domain },
        ));
    }
    ctx.register_udf(datafusion::logical_expr::ScalarUDF::new_from_impl(
        ToNumber {
            signature: Signature::exact(
                vec![DataType::Utf8, DataType::Utf8],
                Volatility::Immutable,
            ),
        },
    ));
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
        super::PERCENTILE_CONT,
        Signature::exact(
            vec![
                DataType::new_list(DataType::Float64, true),
                DataType::Float64,
            ],
            Volatility::Immutable,
        ),
        DataType::Float64,
        |args| {
            let ScalarValue::Float64(Some(fraction)) = args[1] else {
                return Ok(ScalarValue::Float64(None));
            };
            let ScalarValue::List(list) = &args[0] else {
                return Ok(ScalarValue::Float64(None));
            };
            use datafusion::arrow::array::AsArray;
            let values = list.value(0);
            let values = values.as_primitive::<datafusion::arrow::datatypes::Float64Type>();
            percentile_cont(values.values(), fraction)
                .map(ScalarValue::Float64)
                .map_err(|e| DataFusionError::External(Box::new(e)))
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

/// `ceil`, `floor`, `trunc` and `round` of a numeric have the scale PostgreSQL gives them
/// (0, or the constant second argument); DataFusion keeps the argument's scale (`ceil(2.1)`
/// would be `3.0`). `round(5, 2)` and `trunc(5, 2)` of an integer are numeric, `5.00`.
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
    if !matches!(f.name(), "ceil" | "floor" | "trunc" | "round") {
        return Ok(Transformed::no(expr));
    }
    // An integer (which coercion may have made a float already) is rounded as a numeric.
    let integer = |x: &Expr| -> Result<Option<Expr>> {
        let x = match x {
            Expr::Cast(Cast { expr: inner, .. }) if inner.get_type(schema)?.is_integer() => inner,
            x => x,
        };
        Ok(x.get_type(schema)?.is_integer().then(|| x.clone()))
    };
    let (expr, numeric) = match f.args.as_slice() {
        [x, digits] if matches!(f.name(), "round" | "trunc") && integer(x)?.is_some() => {
            let x = integer(x)?.unwrap_or_else(|| x.clone());
            let x = Expr::Cast(Cast::new(Box::new(x), DataType::Decimal128(38, 0)));
            (f.func.call(vec![x, digits.clone()]), true)
        }
        _ => (expr, false),
    };
    let Expr::ScalarFunction(f) = &expr else {
        return Ok(Transformed::new_transformed(expr, numeric));
    };
    let Some(DataType::Decimal128(p, s)) = f.args.first().and_then(|a| a.get_type(schema).ok())
    else {
        return Ok(Transformed::new_transformed(expr, numeric));
    };
    // `ceil(0.5)` needs a digit its argument's type has no room for (DataFusion keeps the
    // precision and overflows): the argument gets all 38.
    let widened = p < 38 && f.name() != "trunc";
    let expr = match widened {
        true => {
            let mut args = f.args.clone();
            args[0] = Expr::Cast(Cast::new(
                Box::new(args[0].clone()),
                DataType::Decimal128(38, s),
            ));
            f.func.call(args)
        }
        false => expr,
    };
    let Expr::ScalarFunction(f) = &expr else {
        return Ok(Transformed::new_transformed(expr, widened || numeric));
    };
    // The digits, a constant (which coercion may have cast to an integer type).
    let digits = match f.args.get(1) {
        Some(Expr::Cast(Cast { expr, .. })) if matches!(expr.as_ref(), Expr::Literal(..)) => {
            Some(expr.as_ref())
        }
        other => other,
    };
    let target = match digits {
        None => 0,
        Some(Expr::Literal(v, _)) => match int(v) {
            Some(n) => n.clamp(0, 38) as i8,
            None => return Ok(Transformed::new_transformed(expr, widened || numeric)),
        },
        Some(_) => return Ok(Transformed::new_transformed(expr, widened || numeric)),
    };
    match expr.get_type(schema)? {
        DataType::Decimal128(_, s) if s != target => Ok(Transformed::yes(Expr::Cast(Cast::new(
            Box::new(expr),
            DataType::Decimal128(38, target),
        )))),
        _ => Ok(Transformed::new_transformed(expr, widened || numeric)),
    }
}

/// `percentile_cont(fraction) WITHIN GROUP (ORDER BY x)` over the sorted values, as
/// PostgreSQL interpolates: between the values at the floor and the ceiling of `fraction *
/// (n - 1)`, by that number's fractional part; NULL of no values.
fn percentile_cont(sorted: &[f64], fraction: f64) -> std::result::Result<Option<f64>, Error> {
    if !(0.0..=1.0).contains(&fraction) {
        return Err(Error::NumericOverflow(format!(
            "percentile value {fraction} is not between 0 and 1"
        )));
    }
    if sorted.is_empty() {
        return Ok(None);
    }
    let at = fraction * (sorted.len() - 1) as f64;
    let (first, second) = (at.floor(), at.ceil());
    let (low, high) = (sorted[first as usize], sorted[second as usize]);
    Ok(Some(match first == second {
        true => low,
        false => low + (high - low) * (at - first),
    }))
}

/// `to_number(text, template)`: the number the text holds, read through the template as
/// PostgreSQL reads it, position by position: each `9` or `0` takes one character (a digit
/// counts, anything else is passed over; a sign before the first digit is the sign), `D` or
/// `.` the decimal point, `G` or `,` a non-digit separator, `S`/`MI`/`PL`/`SG` a sign, `L`
/// a currency symbol, any other template character one character. The result's scale is
/// the template's digit positions after its decimal point (PostgreSQL's per-value scale
/// drops the zeros the text did not have).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ToNumber {
    signature: Signature,
}

/// One element of a `to_number` template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumberPart {
    Digit,
    Point,
    Separator,
    Sign,
    Currency,
    /// `FM`, `PR`, `B`, `TH`: nothing to read.
    Nothing,
    Other,
}

fn number_template(template: &str) -> Result<Vec<NumberPart>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        let upper = rest.to_ascii_uppercase();
        let (part, len) = if upper.starts_with("EEEE") || upper.starts_with('V') {
            return Err(DataFusionError::External(Box::new(Error::Unsupported(
                format!(
                    "\"{}\" in to_number templates",
                    if upper.starts_with('V') { "V" } else { "EEEE" }
                ),
            ))));
        } else if upper.starts_with("FM") || upper.starts_with("PR") || upper.starts_with("TH") {
            (NumberPart::Nothing, 2)
        } else if upper.starts_with("MI") || upper.starts_with("PL") || upper.starts_with("SG") {
            (NumberPart::Sign, 2)
        } else {
            let part = match c.to_ascii_uppercase() {
                '9' | '0' => NumberPart::Digit,
                'D' | '.' => NumberPart::Point,
                'G' | ',' => NumberPart::Separator,
                'S' => NumberPart::Sign,
                'L' | '$' => NumberPart::Currency,
                'B' => NumberPart::Nothing,
                _ => NumberPart::Other,
            };
            (part, c.len_utf8())
        };
        parts.push(part);
        rest = &rest[len..];
    }
    Ok(parts)
}

/// The scale of `to_number`'s result: the digit positions after the template's point.
fn template_scale(parts: &[NumberPart]) -> i8 {
    let after = parts.iter().skip_while(|p| **p != NumberPart::Point);
    after.filter(|p| **p == NumberPart::Digit).count().min(38) as i8
}

/// `text` read through `parts`: the mantissa at `scale`.
fn read_number(text: &str, parts: &[NumberPart], scale: i8) -> Result<i128> {
    let chars: Vec<char> = text.chars().collect();
    let (mut at, mut negative, mut signed) = (0, false, false);
    let (mut whole, mut fraction, mut in_fraction) = (String::new(), String::new(), false);
    for part in parts {
        let Some(&c) = chars.get(at) else {
            break;
        };
        match part {
            NumberPart::Digit => {
                let mut c = c;
                if !signed && whole.is_empty() && fraction.is_empty() && (c == '-' || c == '+') {
                    (negative, signed) = (c == '-', true);
                    at += 1;
                    match chars.get(at) {
                        Some(&next) => c = next,
                        None => break,
                    }
                }
                at += 1;
                if c.is_ascii_digit() {
                    match in_fraction {
                        true => fraction.push(c),
                        false => whole.push(c),
                    }
                }
            }
            NumberPart::Point => {
                if c == '.' {
                    at += 1;
                }
                in_fraction = true;
            }
            NumberPart::Separator | NumberPart::Currency => {
                if !c.is_ascii_digit() {
                    at += 1;
                }
            }
            NumberPart::Sign => {
                if c == '-' || c == '+' {
                    (negative, signed) = (c == '-', true);
                    at += 1;
                }
            }
            NumberPart::Nothing => {}
            NumberPart::Other => at += 1,
        }
    }
    if whole.is_empty() && fraction.is_empty() {
        return Err(DataFusionError::External(Box::new(Error::InvalidText {
            ty: "numeric".into(),
            value: " ".into(),
        })));
    }
    fraction.truncate(scale as usize);
    let digits = format!("{whole}{fraction:0<width$}", width = scale as usize);
    let magnitude: i128 = digits.trim_start_matches('0').parse().or_else(|_| {
        match digits.trim_start_matches('0').is_empty() {
            true => Ok(0),
            false => Err(DataFusionError::External(Box::new(Error::NumericOverflow(
                "value overflows numeric format".into(),
            )))),
        }
    })?;
    Ok(if negative { -magnitude } else { magnitude })
}

impl datafusion::logical_expr::ScalarUDFImpl for ToNumber {
    fn name(&self) -> &str {
        "to_number"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(38, 16))
    }

    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        // A template given at planning decides the scale; else PostgreSQL's 16 digits.
        let scale = match args.scalar_arguments.get(1) {
            Some(Some(ScalarValue::Utf8(Some(t)))) => template_scale(&number_template(t)?),
            _ => 16,
        };
        Ok(std::sync::Arc::new(
            datafusion::arrow::datatypes::Field::new(
                "to_number",
                DataType::Decimal128(38, scale),
                true,
            ),
        ))
    }

    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> Result<datafusion::logical_expr::ColumnarValue> {
        use datafusion::arrow::array::{Array, AsArray, Decimal128Builder};
        let DataType::Decimal128(_, scale) = *args.return_field.data_type() else {
            return Err(DataFusionError::Internal(
                "to_number returns a decimal".into(),
            ));
        };
        let n = args.number_rows;
        let texts = args.args[0].to_array(n)?;
        let templates = args.args[1].to_array(n)?;
        let (texts, templates) = (texts.as_string::<i32>(), templates.as_string::<i32>());
        let mut out = Decimal128Builder::with_capacity(n);
        for r in 0..n {
            if texts.is_null(r) || templates.is_null(r) {
                out.append_null();
                continue;
            }
            let parts = number_template(templates.value(r))?;
            out.append_value(read_number(texts.value(r), &parts, scale)?);
        }
        Ok(datafusion::logical_expr::ColumnarValue::Array(
            std::sync::Arc::new(out.finish().with_precision_and_scale(38, scale)?),
        ))
    }
}

/// Which of PostgreSQL's argument and result checks a wrapped DataFusion function gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Domain {
    SquareRoot,
    /// `ln`, `log10`, `log(x)` and `log(b, x)`: every argument above zero.
    Logarithm,
    Exponential,
    Power,
}

/// A DataFusion math function with PostgreSQL's checks around it, on constant arguments: an
/// argument outside the function's domain is 2201E/2201F, a finite argument whose result
/// overflows (or, for `exp` and `power` of floats, underflows to zero) is 22003.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Checked {
    inner: std::sync::Arc<datafusion::logical_expr::ScalarUDF>,
    domain: Domain,
}

impl Checked {
    /// PostgreSQL's error for arguments `x` (one row's, as floats), if any.
    fn argument_error(&self, x: &[f64]) -> Option<Error> {
        let power = |m: &str| Some(Error::InvalidPowerArgument(m.into()));
        let log = |m: &str| Some(Error::InvalidLogarithmArgument(m.into()));
        match (self.domain, x) {
            (Domain::SquareRoot, [v]) if *v < 0.0 => {
                power("cannot take square root of a negative number")
            }
            (Domain::Logarithm, _) if x.contains(&0.0) => log("cannot take logarithm of zero"),
            (Domain::Logarithm, _) if x.iter().any(|v| *v < 0.0) => {
                log("cannot take logarithm of a negative number")
            }
            (Domain::Power, [base, exponent]) if *base == 0.0 && *exponent < 0.0 => {
                power("zero raised to a negative power is undefined")
            }
            (Domain::Power, [base, exponent])
                if *base < 0.0 && exponent.is_finite() && exponent.fract() != 0.0 =>
            {
                power("a negative number raised to a non-integer power yields a complex result")
            }
            _ => None,
        }
    }

    /// PostgreSQL's error for result `y` of finite arguments `x`, if any.
    /// A numeric (`decimal`) argument's tiny result is a value in PostgreSQL, not an
    /// underflow.
    fn result_error(&self, x: &[f64], y: f64, decimal: bool) -> Option<Error> {
        let range = |m: &str| Some(Error::NumericOverflow(format!("value out of range: {m}")));
        if x.iter().any(|v| !v.is_finite()) {
            return None;
        }
        match self.domain {
            _ if y.is_infinite() => range("overflow"),
            Domain::Exponential if y == 0.0 && !decimal => range("underflow"),
            Domain::Power if y == 0.0 && x[0] != 0.0 && !decimal => range("underflow"),
            _ => None,
        }
    }
}

impl datafusion::logical_expr::ScalarUDFImpl for Checked {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> Result<datafusion::logical_expr::ColumnarValue> {
        use datafusion::arrow::array::{Array, AsArray};
        use datafusion::arrow::datatypes::Float64Type;
        // Only constant arguments are checked: DataFusion evaluates both sides of AND and
        // both branches of CASE on every row, so a guarded `x > 0 AND ln(x) > 1` would fail
        // on the rows its guard leaves out.
        if !args
            .args
            .iter()
            .all(|a| matches!(a, datafusion::logical_expr::ColumnarValue::Scalar(_)))
        {
            return self.inner.invoke_with_args(args);
        }
        let decimal = args.args.iter().any(|a| a.data_type().is_decimal());
        let n = args.number_rows;
        let floats = |v: &datafusion::logical_expr::ColumnarValue| -> Result<_> {
            let array = datafusion::arrow::compute::cast(&v.to_array(n)?, &DataType::Float64)?;
            Ok(array.as_primitive::<Float64Type>().clone())
        };
        let inputs = args.args.iter().map(floats).collect::<Result<Vec<_>>>()?;
        let row = |r: usize| -> Option<Vec<f64>> {
            inputs
                .iter()
                .map(|a| a.is_valid(r).then(|| a.value(r)))
                .collect()
        };
        let raise = |e: Error| DataFusionError::External(Box::new(e));
        for r in 0..n {
            if let Some(e) = row(r).and_then(|x| self.argument_error(&x)) {
                return Err(raise(e));
            }
        }
        let result = self.inner.invoke_with_args(args)?;
        if matches!(result.data_type(), DataType::Float64 | DataType::Float32) {
            let outputs = floats(&result)?;
            for r in 0..n {
                if let Some(x) = row(r)
                    && outputs.is_valid(r)
                    && let Some(e) = self.result_error(&x, outputs.value(r), decimal)
                {
                    return Err(raise(e));
                }
            }
        }
        Ok(result)
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
