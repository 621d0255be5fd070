//! PostgreSQL's numeric arithmetic over Arrow's fixed-scale decimals.
//!
//! PostgreSQL's `numeric` carries a display scale per value and picks the scale of a quotient
//! from the operands' values (`select_div_scale`: at least 16 significant digits). An Arrow
//! column has one scale, so Partita decides the scale when the query is planned:
//!
//! - `a / b` on numerics: PostgreSQL's rule applied to the operands' values when both are
//!   constants (`1.0 / 3` gives 20 digits, `100000.0 / 3` gives 12), otherwise
//!   `max(16, scale(a), scale(b))`; the quotient is rounded half away from zero, as there.
//! - `a * b`: scale `scale(a) + scale(b)` as in PostgreSQL, but at most
//!   `max(MAX_PRODUCT_SCALE, scale(a), scale(b))` so that 38 digits leave room for the
//!   integer part (DataFusion would keep every digit and overflow above 100).
//! - `avg(numeric)` and `avg` of integers: numeric at scale `max(16, scale)`, rounded, where
//!   DataFusion gives `scale + 4` truncated (and doubles for integers); bigints are averaged
//!   in 256 bits. `sum(bigint)` is an exact numeric, not a bigint that wraps on overflow.
//!
//! - `x::numeric` (no precision): `numeric(x)`, which keeps the scale `x` has (a decimal's
//!   own, 0 for integers, the digits of a text constant) where DataFusion would use 10.
//!
//! Intermediate results are computed in 256 bits; a result beyond 38 digits is an error
//! (22003), a zero divisor is "division by zero" (22012).

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Decimal128Type, Decimal256Type, Field, FieldRef, IntervalUnit, i256,
};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, ScalarValue, exec_err, plan_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, BinaryExpr, ColumnarValue, EmitTo, Expr,
    ExprSchemable, GroupsAccumulator, Operator, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility, lit,
};
use datafusion::sql::sqlparser::ast::{self, VisitMut, VisitorMut};
use std::ops::ControlFlow;
use std::sync::Arc;

/// Decimal digits Arrow's Decimal128 holds.
const MAX_DIGITS: u8 = 38;
/// Decimal digits Arrow's Decimal256 holds: the width of bigint averages.
const WIDE_DIGITS: u8 = 76;
/// PostgreSQL's NUMERIC_MIN_SIG_DIGITS: a quotient or average has at least this many.
const MIN_SIG_DIGITS: i32 = 16;
/// Largest product scale kept when the operands' scales add up to more.
const MAX_PRODUCT_SCALE: i8 = 20;

/// Numeric `/` and `*` as `numeric_div` / `numeric_mul` with the result scale fixed at
/// planning time (after DataFusion's type coercion).
pub fn rewrite_arithmetic(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    let op = match op {
        Operator::Divide => NumericOp::Div,
        Operator::Multiply => NumericOp::Mul,
        _ => return Ok(Transformed::no(expr)),
    };
    let (lt, rt) = (left.get_type(schema)?, right.get_type(schema)?);
    let (Some(s1), Some(s2)) = (decimal_scale(&lt), decimal_scale(&rt)) else {
        return Ok(Transformed::no(expr));
    };
    if !matches!(lt, DataType::Decimal128(..)) && !matches!(rt, DataType::Decimal128(..)) {
        return Ok(Transformed::no(expr));
    }
    let scale = match op {
        NumericOp::Div => div_scale(constant(left), constant(right), s1, s2),
        NumericOp::Mul if s1 + s2 <= MAX_PRODUCT_SCALE.max(s1).max(s2) => {
            // DataFusion's own product is exact here and keeps PostgreSQL's scale.
            return Ok(Transformed::no(expr));
        }
        NumericOp::Mul => MAX_PRODUCT_SCALE.max(s1).max(s2),
    };
    let udf = Arc::new(ScalarUDF::new_from_impl(NumericFunction::new(op)));
    Ok(Transformed::yes(Expr::ScalarFunction(
        ScalarFunction::new_udf(
            udf,
            vec![
                left.as_ref().clone(),
                right.as_ref().clone(),
                lit(i64::from(scale)),
            ],
        ),
    )))
}

/// Replaces casts to `numeric` without precision, and `numeric '1.10'` constants, by
/// `numeric(x)` (see the module comment).
pub fn rewrite_numeric_casts(stmt: &mut ast::Statement) {
    struct Rewriter;
    impl VisitorMut for Rewriter {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
            if let ast::Expr::TypedString(typed) = e
                && matches!(
                    typed.data_type,
                    ast::DataType::Numeric(ast::ExactNumberInfo::None)
                        | ast::DataType::Decimal(ast::ExactNumberInfo::None)
                        | ast::DataType::Dec(ast::ExactNumberInfo::None)
                )
            {
                *e = ast::Expr::Cast {
                    kind: ast::CastKind::DoubleColon,
                    expr: Box::new(ast::Expr::Value(typed.value.clone())),
                    data_type: typed.data_type.clone(),
                    array: false,
                    format: None,
                };
            }
            // A precision above Arrow's 38 digits keeps its scale in 38 (numeric(65,30)
            // holds values below 10^8), as a column declared so does.
            if let ast::Expr::Cast {
                data_type:
                    ast::DataType::Numeric(info)
                    | ast::DataType::Decimal(info)
                    | ast::DataType::Dec(info),
                ..
            } = e
            {
                let max = u64::from(MAX_DIGITS);
                match info {
                    ast::ExactNumberInfo::PrecisionAndScale(p, s)
                        if *p > max && (0..=max as i64).contains(s) =>
                    {
                        *p = max
                    }
                    ast::ExactNumberInfo::Precision(p) if *p > max => *p = max,
                    _ => {}
                }
            }
            if let ast::Expr::Cast {
                expr,
                data_type:
                    ast::DataType::Numeric(ast::ExactNumberInfo::None)
                    | ast::DataType::Decimal(ast::ExactNumberInfo::None)
                    | ast::DataType::Dec(ast::ExactNumberInfo::None),
                format: None,
                ..
            } = e
            {
                let arg = std::mem::replace(expr.as_mut(), ast::Expr::value(ast::Value::Null));
                *e = ast::Expr::Function(ast::Function {
                    name: ast::ObjectName::from(vec![ast::Ident::new("numeric")]),
                    uses_odbc_syntax: false,
                    parameters: ast::FunctionArguments::None,
                    args: ast::FunctionArguments::List(ast::FunctionArgumentList {
                        duplicate_treatment: None,
                        args: vec![ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))],
                        clauses: vec![],
                    }),
                    filter: None,
                    null_treatment: None,
                    over: None,
                    within_group: vec![],
                });
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Rewriter);
}

/// `numeric(x)`: `x` as a decimal of the scale it has.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ToNumeric {
    signature: Signature,
}

impl Default for ToNumeric {
    fn default() -> Self {
        ToNumeric {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ToNumeric {
    fn name(&self) -> &str {
        "numeric"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        plan_err!("numeric() is typed from its argument")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let scale = match args.arg_fields.first().map(|f| f.data_type()) {
            Some(DataType::Decimal128(_, s)) => *s,
            Some(ty) if decimal_scale(ty).is_some() || ty.is_null() => 0,
            Some(DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8) => {
                match args.scalar_arguments.first() {
                    Some(Some(value)) => text_scale(&value.to_string()),
                    _ => UNKNOWN_SCALE,
                }
            }
            _ => UNKNOWN_SCALE,
        };
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        Ok(Arc::new(Field::new(
            "numeric",
            DataType::Decimal128(MAX_DIGITS, scale),
            nullable,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let target = args.return_field.data_type();
        if matches!(
            args.args[0].data_type(),
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
        ) {
            return numeric_from_text(&args.args[0], args.number_rows, target);
        }
        // A float is the number its shortest text to 15 significant digits (6 for real)
        // writes, as PostgreSQL's float8_numeric reads it, not its binary expansion.
        let digits = match args.args[0].data_type() {
            DataType::Float64 => Some(15),
            DataType::Float32 => Some(6),
            _ => None,
        };
        if let Some(digits) = digits {
            let floats = cast(
                &args.args[0].to_array(args.number_rows)?,
                &DataType::Float64,
            )?;
            let texts: datafusion::arrow::array::StringArray = floats
                .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                .iter()
                .map(|v| v.map(|v| format!("{v:.*e}", digits - 1)))
                .collect();
            let texts = match &args.args[0] {
                ColumnarValue::Scalar(_) => {
                    ColumnarValue::Scalar(ScalarValue::try_from_array(&texts, 0)?)
                }
                ColumnarValue::Array(_) => ColumnarValue::Array(Arc::new(texts)),
            };
            return numeric_from_text(&texts, args.number_rows, target);
        }
        match &args.args[0] {
            ColumnarValue::Scalar(v) => Ok(ColumnarValue::Scalar(v.cast_to(target)?)),
            ColumnarValue::Array(a) => Ok(ColumnarValue::Array(cast(a, target)?)),
        }
    }
}

/// A cast of text to a decimal (`'1.5e3'::numeric(10,2)`, an INSERT's or COPY's text for a
/// numeric column) becomes `numeric_in`, PostgreSQL's input function, where Arrow's cast
/// knows no exponents and gives NULL for bad text under `numeric(x)`.
pub fn text_input(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::Cast(datafusion::logical_expr::Cast { expr: inner, field }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    let DataType::Decimal128(precision, scale) = field.data_type() else {
        return Ok(Transformed::no(expr));
    };
    if !matches!(
        inner.get_type(schema)?,
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
    ) {
        return Ok(Transformed::no(expr));
    }
    let input = NumericInput::new(*precision, *scale);
    Ok(Transformed::yes(
        ScalarUDF::new_from_impl(input).call(vec![inner.as_ref().clone()]),
    ))
}

/// `numeric_in(text)`: PostgreSQL's numeric input function, to `numeric(precision, scale)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct NumericInput {
    signature: Signature,
    precision: u8,
    scale: i8,
}

impl NumericInput {
    fn new(precision: u8, scale: i8) -> NumericInput {
        NumericInput {
            signature: Signature::any(1, Volatility::Immutable),
            precision,
            scale,
        }
    }
}

impl ScalarUDFImpl for NumericInput {
    fn name(&self) -> &str {
        "numeric_in"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(self.precision, self.scale))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let target = DataType::Decimal128(self.precision, self.scale);
        numeric_from_text(&args.args[0], args.number_rows, &target)
    }
}

/// Text values read as decimals of type `target` by PostgreSQL's numeric input rules.
pub(crate) fn numeric_from_text(
    arg: &ColumnarValue,
    rows: usize,
    target: &DataType,
) -> Result<ColumnarValue> {
    let DataType::Decimal128(precision, scale) = *target else {
        return exec_err!("numeric input to {target}");
    };
    let scalar = matches!(arg, ColumnarValue::Scalar(_));
    let texts = cast(
        &arg.to_array(if scalar { 1 } else { rows })?,
        &DataType::Utf8,
    )?;
    let limit = 10i128.pow(u32::from(precision));
    let values = texts
        .as_string::<i32>()
        .iter()
        .map(|text| {
            let Some(text) = text else {
                return Ok(None);
            };
            let error = match parse_numeric(text, scale) {
                Ok(value) if value.unsigned_abs() < limit.unsigned_abs() => return Ok(Some(value)),
                Ok(_) | Err(NumericText::Overflow) => {
                    crate::convert::field_overflow(precision, scale.max(0) as u8)
                }
                Err(NumericText::Invalid) => crate::Error::InvalidText {
                    ty: "numeric".into(),
                    value: text.into(),
                },
                Err(NumericText::Special) => {
                    crate::Error::Unsupported("numeric NaN and infinity".into())
                }
            };
            Err(DataFusionError::External(Box::new(error)))
        })
        .collect::<Result<Decimal128Array>>()?
        .with_precision_and_scale(precision, scale)?;
    Ok(if scalar {
        ColumnarValue::Scalar(ScalarValue::try_from_array(&values, 0)?)
    } else {
        ColumnarValue::Array(Arc::new(values))
    })
}

/// Why a text is not a numeric value.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NumericText {
    /// Not a number (22P02).
    Invalid,
    /// NaN or infinity, which Arrow's decimals do not hold (0A000).
    Special,
    /// A number too large for 38 digits at the scale (22003).
    Overflow,
}

/// PostgreSQL's numeric input: blanks around, a sign, digits with or without a point, an
/// exponent (`-1.5e3`), as a mantissa at `scale` places rounded half away from zero.
pub(crate) fn parse_numeric(text: &str, scale: i8) -> std::result::Result<i128, NumericText> {
    use NumericText::{Invalid, Overflow};
    let trimmed = text.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b');
    let lower = trimmed.to_ascii_lowercase();
    let unsigned_lower = lower.trim_start_matches(['+', '-']);
    if lower == "nan" || matches!(unsigned_lower, "infinity" | "inf") {
        return Err(NumericText::Special);
    }
    let (negative, unsigned) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let (number, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => {
            let exponent: i64 = unsigned[at + 1..].parse().map_err(|_| Invalid)?;
            // PostgreSQL's limit on exponents (NUMERIC_MAX_PRECISION).
            if exponent.abs() > 1000 {
                return Err(Overflow);
            }
            (&unsigned[..at], exponent)
        }
        None => (unsigned, 0),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return Err(Invalid);
    }
    // Its digits without leading zeros, and the place of the last: value = digits × 10^-places.
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    let places = fraction.len() as i64 - exponent;
    let shift = i64::from(scale) - places;
    let (kept, round_up) = if shift >= 0 {
        (digits, false)
    } else {
        let cut = digits.len() as i64 + shift;
        let next = |at: i64| {
            usize::try_from(at)
                .ok()
                .and_then(|i| digits.as_bytes().get(i))
        };
        let round_up = next(cut).is_some_and(|d| *d >= b'5');
        (
            &digits[..cut.clamp(0, digits.len() as i64) as usize],
            round_up,
        )
    };
    let mut value: i128 = 0;
    for d in kept.bytes() {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i128::from(d - b'0')))
            .ok_or(Overflow)?;
    }
    if shift > 0 && value != 0 {
        let factor = u32::try_from(shift)
            .ok()
            .and_then(|s| 10i128.checked_pow(s))
            .ok_or(Overflow)?;
        value = value.checked_mul(factor).ok_or(Overflow)?;
    }
    if round_up {
        value = value.checked_add(1).ok_or(Overflow)?;
    }
    Ok(if negative { -value } else { value })
}

/// Scale of `numeric(x)` when `x`'s digits are not known at planning time (a float or a
/// text column): that of an unconstrained numeric column.
const UNKNOWN_SCALE: i8 = sql::types::UNCONSTRAINED_NUMERIC_SCALE as i8;

/// Fractional digits written in a numeric text ("1.50" → 2, "1e-3" → 3, "12" → 0).
fn text_scale(text: &str) -> i8 {
    let text = text.trim().to_ascii_lowercase();
    let (mantissa, exponent) = match text.split_once('e') {
        Some((m, e)) => (m, e.parse::<i64>().unwrap_or(0)),
        None => (text.as_str(), 0),
    };
    let fraction = mantissa.split_once('.').map_or(0, |(_, f)| f.len() as i64);
    fraction
        .saturating_sub(exponent)
        .clamp(0, i64::from(MAX_DIGITS)) as i8
}

/// The scale of a decimal or integer type (integers are decimals of scale 0).
fn decimal_scale(ty: &DataType) -> Option<i8> {
    match ty {
        DataType::Decimal128(_, s) => Some(*s),
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32 => Some(0),
        _ => None,
    }
}

/// The value of a constant operand as (mantissa, scale), looking through casts.
fn constant(expr: &Expr) -> Option<(i128, i8)> {
    let value = match expr {
        Expr::Literal(v, _) => v.clone(),
        Expr::Cast(c) => match c.expr.as_ref() {
            Expr::Literal(v, _) => v.cast_to(c.field.data_type()).ok()?,
            _ => return None,
        },
        // numeric(2) keeps the value and scale of its decimal or integer argument.
        Expr::ScalarFunction(f) if f.name() == "numeric" && f.args.len() == 1 => {
            return constant(&f.args[0]);
        }
        Expr::Negative(inner) => {
            let (m, s) = constant(inner)?;
            return Some((m.checked_neg()?, s));
        }
        _ => return None,
    };
    match value {
        ScalarValue::Decimal128(Some(m), _, s) => Some((m, s)),
        ScalarValue::Int8(Some(v)) => Some((v.into(), 0)),
        ScalarValue::Int16(Some(v)) => Some((v.into(), 0)),
        ScalarValue::Int32(Some(v)) => Some((v.into(), 0)),
        ScalarValue::Int64(Some(v)) => Some((v.into(), 0)),
        _ => None,
    }
}

/// PostgreSQL's `select_div_scale` when both values are known; otherwise the scale it gives
/// when the dividend's leading digits are the larger (at least 16 significant digits).
fn div_scale(a: Option<(i128, i8)>, b: Option<(i128, i8)>, s1: i8, s2: i8) -> i8 {
    let rscale = match (a, b) {
        (Some(a), Some(b)) => {
            let (w1, d1) = base10000_lead(a.0, a.1);
            let (w2, d2) = base10000_lead(b.0, b.1);
            let mut qweight = w1 - w2;
            if d1 <= d2 {
                qweight -= 1;
            }
            MIN_SIG_DIGITS - qweight * 4
        }
        _ => MIN_SIG_DIGITS,
    };
    rscale
        .max(i32::from(s1))
        .max(i32::from(s2))
        .clamp(0, i32::from(MAX_DIGITS)) as i8
}

/// Weight and value of the leading base-10000 digit of `mantissa × 10^-scale`, as
/// PostgreSQL stores numerics; (0, 0) for zero.
fn base10000_lead(mantissa: i128, scale: i8) -> (i32, u128) {
    let m = mantissa.unsigned_abs();
    if m == 0 {
        return (0, 0);
    }
    let exponent = m.ilog10() as i32 - i32::from(scale);
    let weight = exponent.div_euclid(4);
    let shift = i32::from(scale) + 4 * weight;
    let lead = if shift >= 0 {
        m / 10u128.pow(shift as u32)
    } else {
        m * 10u128.pow((-shift) as u32)
    };
    (weight, lead)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum NumericOp {
    Div,
    Mul,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct NumericFunction {
    op: NumericOp,
    signature: Signature,
}

impl NumericFunction {
    fn new(op: NumericOp) -> NumericFunction {
        NumericFunction {
            op,
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for NumericFunction {
    fn name(&self) -> &str {
        match self.op {
            NumericOp::Div => "numeric_div",
            NumericOp::Mul => "numeric_mul",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        plan_err!("{} needs its scale argument", self.name())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let Some(Some(ScalarValue::Int64(Some(scale)))) = args.scalar_arguments.get(2) else {
            return plan_err!("{} needs a constant scale", self.name());
        };
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        Ok(Arc::new(Field::new(
            self.name(),
            DataType::Decimal128(MAX_DIGITS, *scale as i8),
            nullable,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let DataType::Decimal128(_, scale) = args.return_field.data_type() else {
            return exec_err!("{} returns a decimal", self.name());
        };
        let scale = *scale;
        let rows = args.number_rows;
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let left = as_decimal(&args.args[0], rows)?;
        let right = as_decimal(&args.args[1], rows)?;
        let (l, s1) = left;
        let (r, s2) = right;
        let mut out = Vec::with_capacity(rows);
        for i in 0..rows {
            if l.is_null(i) || r.is_null(i) {
                out.push(None);
                continue;
            }
            let (a, b) = (l.value(i), r.value(i));
            let value = match self.op {
                NumericOp::Div => divide(a, s1, b, s2, scale)?,
                NumericOp::Mul => multiply(a, s1, b, s2, scale)?,
            };
            out.push(Some(value));
        }
        let array = Decimal128Array::from(out).with_precision_and_scale(MAX_DIGITS, scale)?;
        if all_scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &array, 0,
            )?));
        }
        Ok(ColumnarValue::Array(Arc::new(array)))
    }
}

/// An argument as a Decimal128 array of `rows` values, with its scale.
fn as_decimal(arg: &ColumnarValue, rows: usize) -> Result<(Decimal128Array, i8)> {
    let array = arg.to_array(rows)?;
    let scale = match array.data_type() {
        DataType::Decimal128(_, s) => *s,
        _ => 0,
    };
    let array = cast(&array, &DataType::Decimal128(MAX_DIGITS, scale))?;
    Ok((array.as_primitive::<Decimal128Type>().clone(), scale))
}

fn overflow() -> DataFusionError {
    DataFusionError::Execution(format!(
        "numeric field overflow: the result needs more than {MAX_DIGITS} digits"
    ))
}

fn pow10(exp: u32) -> Result<i256> {
    i256::from_i128(10).checked_pow(exp).ok_or_else(overflow)
}

/// `n / d` rounded half away from zero.
fn round_div(n: i256, d: i256) -> Result<i256> {
    let q = n.checked_div(d).ok_or_else(overflow)?;
    let r = n.checked_rem(d).ok_or_else(overflow)?;
    let twice = r.wrapping_abs().wrapping_mul(i256::from_i128(2));
    if twice >= d.wrapping_abs() {
        let away = if (n < i256::ZERO) == (d < i256::ZERO) {
            i256::ONE
        } else {
            i256::MINUS_ONE
        };
        return Ok(q.wrapping_add(away));
    }
    Ok(q)
}

/// Scales `value` (at `from` decimal places) to `to` places, rounding when digits go.
fn rescale(value: i256, from: i32, to: i32) -> Result<i256> {
    if to >= from {
        value
            .checked_mul(pow10((to - from) as u32)?)
            .ok_or_else(overflow)
    } else {
        round_div(value, pow10((from - to) as u32)?)
    }
}

fn fit(value: i256) -> Result<i128> {
    let limit = pow10(u32::from(MAX_DIGITS))?;
    if value >= limit || value <= limit.wrapping_neg() {
        return Err(overflow());
    }
    value.to_i128().ok_or_else(overflow)
}

/// `a / b` at `scale` decimal places, each operand given as mantissa and scale.
fn divide(a: i128, sa: i8, b: i128, sb: i8, scale: i8) -> Result<i128> {
    if b == 0 {
        return Err(DataFusionError::ArrowError(
            Box::new(datafusion::arrow::error::ArrowError::DivideByZero),
            None,
        ));
    }
    // a·10^-sa / (b·10^-sb) = (a·10^(scale - sa + sb) / b)·10^-scale
    let exponent = i32::from(scale) - i32::from(sa) + i32::from(sb);
    let (n, d) = if exponent >= 0 {
        (
            rescale(i256::from_i128(a), 0, exponent)?,
            i256::from_i128(b),
        )
    } else {
        (
            i256::from_i128(a),
            rescale(i256::from_i128(b), 0, -exponent)?,
        )
    };
    fit(round_div(n, d)?)
}

/// `a / b` truncated to an integer (PostgreSQL's `div`), each operand given as mantissa and
/// scale; the quotient's mantissa at scale 0.
pub(crate) fn integer_quotient(a: i128, sa: i8, b: i128, sb: i8) -> Result<i128> {
    if b == 0 {
        return Err(DataFusionError::ArrowError(
            Box::new(datafusion::arrow::error::ArrowError::DivideByZero),
            None,
        ));
    }
    let common = i32::from(sa.max(sb));
    let n = rescale(i256::from_i128(a), i32::from(sa), common)?;
    let d = rescale(i256::from_i128(b), i32::from(sb), common)?;
    fit(n.checked_div(d).ok_or_else(overflow)?)
}

/// `a * b` at `scale` decimal places.
fn multiply(a: i128, sa: i8, b: i128, sb: i8, scale: i8) -> Result<i128> {
    let product = i256::from_i128(a)
        .checked_mul(i256::from_i128(b))
        .ok_or_else(overflow)?;
    fit(rescale(
        product,
        i32::from(sa) + i32::from(sb),
        i32::from(scale),
    )?)
}

/// `avg` with PostgreSQL's types and numeric result scale: integers of every width and
/// numerics average as numeric; floats and intervals as in DataFusion's avg.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgAvg {
    inner: Arc<AggregateUDF>,
    /// User-defined, so that DataFusion asks [`PgAvg::coerce_types`] for the input type
    /// (DataFusion's own avg coerces integers to double).
    signature: Signature,
}

impl PgAvg {
    pub fn new() -> PgAvg {
        PgAvg {
            inner: datafusion::functions_aggregate::average::avg_udaf(),
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    /// The type DataFusion's avg accumulates a decimal input as, and the scale it returns.
    /// Bigints come as Decimal256 (see `coerce_types`), still returned as a Decimal128.
    fn widened(input: &DataType) -> Option<(DataType, i8)> {
        match input {
            DataType::Decimal128(_, s) => {
                let scale = (*s).max(MIN_SIG_DIGITS as i8);
                Some((DataType::Decimal128(MAX_DIGITS, scale), scale))
            }
            DataType::Decimal256(_, s) => {
                let scale = (*s).max(MIN_SIG_DIGITS as i8);
                Some((DataType::Decimal256(WIDE_DIGITS, scale), scale))
            }
            _ => None,
        }
    }

    /// The arguments DataFusion's avg sees: its own wider return type for decimals, of the
    /// input's width (its accumulators pair Decimal128 with Decimal128, 256 with 256).
    fn inner_return(args: &AccumulatorArgs) -> Option<(FieldRef, i8)> {
        let DataType::Decimal128(_, scale) = args.return_field.data_type() else {
            return None;
        };
        let inner = match args.expr_fields.first().map(|f| f.data_type()) {
            Some(DataType::Decimal256(..)) => DataType::Decimal256(WIDE_DIGITS, *scale + 4),
            _ => DataType::Decimal128(MAX_DIGITS, (*scale + 4).min(MAX_DIGITS as i8)),
        };
        Some((
            Arc::new(args.return_field.as_ref().clone().with_data_type(inner)),
            *scale,
        ))
    }
}

impl Default for PgAvg {
    fn default() -> Self {
        PgAvg::new()
    }
}

impl AggregateUDFImpl for PgAvg {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [input] = arg_types else {
            return plan_err!("avg takes one argument");
        };
        let input = match input {
            // PostgreSQL averages integers as numeric (DataFusion: as double).
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::UInt8
            | DataType::UInt16 => DataType::Decimal128(MAX_DIGITS, 0),
            // A bigint average has up to 19 integer digits and 16 fractional ones, which
            // fits 38; DataFusion's intermediate average (4 more fractional digits) does
            // not, so bigints are averaged in 256 bits and rounded back.
            t if t.is_integer() => DataType::Decimal256(WIDE_DIGITS, 0),
            // So are decimals of many fractional digits (numeric(38,30)), whose intermediate
            // scale would leave too few integer digits.
            DataType::Decimal128(_, s) if *s > MAX_DIGITS as i8 - 20 => {
                DataType::Decimal256(WIDE_DIGITS, *s)
            }
            // Decimal256 only as this function's own coercions, seen again.
            DataType::Decimal128(..)
            | DataType::Decimal256(..)
            | DataType::Duration(_)
            | DataType::Interval(IntervalUnit::MonthDayNano) => input.clone(),
            t if t.is_floating() || t.is_null() => DataType::Float64,
            t => return plan_err!("function avg({t}) does not exist"),
        };
        Ok(vec![
            PgAvg::widened(&input).map(|(w, _)| w).unwrap_or(input),
        ])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if let Some(interval @ DataType::Interval(_)) = arg_types.first() {
            return Ok(interval.clone());
        }
        match arg_types.first().and_then(PgAvg::widened) {
            // Bigint averages too: 19 integer digits and 16 fractional ones fit.
            Some((_, scale)) => Ok(DataType::Decimal128(MAX_DIGITS, scale)),
            None => self.inner.return_type(arg_types),
        }
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if is_interval(&args) {
            return Ok(Box::new(crate::interval::IntervalAvg::default()));
        }
        match PgAvg::inner_return(&args) {
            Some((return_field, scale)) => {
                let inner = self.inner.accumulator(AccumulatorArgs {
                    return_field: Arc::clone(&return_field),
                    ..args
                })?;
                Ok(Box::new(Adapted {
                    inner,
                    input: None,
                    output: Output::Round {
                        scale,
                        from: return_field,
                    },
                }))
            }
            None => self.inner.accumulator(args),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        if let Some(DataType::Interval(_)) = args.input_fields.first().map(|f| f.data_type()) {
            return Ok(crate::interval::IntervalAvg::state_fields(args.name));
        }
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        if is_interval(&args) {
            return false;
        }
        match PgAvg::inner_return(&args) {
            Some((return_field, _)) => self.inner.groups_accumulator_supported(AccumulatorArgs {
                return_field,
                ..args
            }),
            None => self.inner.groups_accumulator_supported(args),
        }
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        match PgAvg::inner_return(&args) {
            Some((return_field, scale)) => {
                let inner = self.inner.create_groups_accumulator(AccumulatorArgs {
                    return_field: Arc::clone(&return_field),
                    ..args
                })?;
                Ok(Box::new(Adapted {
                    inner,
                    input: None,
                    output: Output::Round {
                        scale,
                        from: return_field,
                    },
                }))
            }
            None => self.inner.create_groups_accumulator(args),
        }
    }

    fn reverse_expr(&self) -> datafusion::logical_expr::ReversedUDAF {
        datafusion::logical_expr::ReversedUDAF::Identical
    }
}

/// Whether the aggregate's argument is an interval.
fn is_interval(args: &AccumulatorArgs) -> bool {
    matches!(
        args.expr_fields.first().map(|f| f.data_type()),
        Some(DataType::Interval(_))
    )
}

/// `sum` with PostgreSQL's result types: a bigint sum is numeric, exact, where DataFusion's
/// is a bigint that wraps around on overflow; smaller integers sum as bigint, as in both; a
/// real sum is real, where DataFusion's is double precision. DataFusion sums only bigints
/// and doubles, so a smaller integer or real input is widened on its way in ([`Adapted`])
/// rather than by a cast coercion would add: coercion may run twice over a plan, and would
/// then take the widened bigint for a bigint sum. A real sum is a double sum of the values,
/// rounded to real at the end ([`Output::Real`]).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgSum {
    inner: Arc<AggregateUDF>,
    signature: Signature,
}

impl PgSum {
    pub fn new() -> PgSum {
        PgSum {
            inner: datafusion::functions_aggregate::sum::sum_udaf(),
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl Default for PgSum {
    fn default() -> Self {
        PgSum::new()
    }
}

/// The type DataFusion's sum adds values of type `input` in, when it is not `input`.
fn summed_as(input: &DataType) -> Option<DataType> {
    match input {
        DataType::Float32 => Some(DataType::Float64),
        DataType::Int8 | DataType::Int16 | DataType::Int32 => Some(DataType::Int64),
        _ => None,
    }
}

impl AggregateUDFImpl for PgSum {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [input] = arg_types else {
            return plan_err!("sum takes one argument");
        };
        Ok(vec![match input {
            DataType::Int64 | DataType::UInt64 => DataType::Decimal128(MAX_DIGITS, 0),
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Float32 => input.clone(),
            DataType::Null => DataType::Int64,
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 => DataType::UInt64,
            t if t.is_floating() => DataType::Float64,
            DataType::Decimal128(..)
            | DataType::Decimal256(..)
            | DataType::Duration(_)
            | DataType::Interval(_) => input.clone(),
            t => return plan_err!("function sum({t}) does not exist"),
        }])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [DataType::Float32] => Ok(DataType::Float32),
            [t] => match summed_as(t) {
                Some(wide) => self.inner.return_type(&[wide]),
                None => self.inner.return_type(arg_types),
            },
            _ => self.inner.return_type(arg_types),
        }
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        match Widening::of(&args) {
            Some(w) => w
                .make(&args, |a| self.inner.accumulator(a))
                .map(|inner| Box::new(w.adapt(inner)) as Box<dyn Accumulator>),
            None => self.inner.accumulator(args),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let Some(wide) = args
            .input_fields
            .first()
            .and_then(|f| summed_as(f.data_type()))
        else {
            return self.inner.state_fields(args);
        };
        let inputs: Vec<FieldRef> = args
            .input_fields
            .iter()
            .map(|f| retyped(f, &wide))
            .collect();
        let return_field = match is_real(args.return_field.data_type()) {
            true => retyped(&args.return_field, &wide),
            false => Arc::clone(&args.return_field),
        };
        self.inner.state_fields(StateFieldsArgs {
            input_fields: &inputs,
            return_field,
            ..args
        })
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        match Widening::of(&args) {
            Some(w) => w
                .make(&args, |a| Ok(self.inner.groups_accumulator_supported(a)))
                .unwrap_or(false),
            None => self.inner.groups_accumulator_supported(args),
        }
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        match Widening::of(&args) {
            Some(w) => w
                .make(&args, |a| self.inner.create_groups_accumulator(a))
                .map(|inner| Box::new(w.adapt(inner)) as Box<dyn GroupsAccumulator>),
            None => self.inner.create_groups_accumulator(args),
        }
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        match Widening::of(&args) {
            Some(w) => w
                .make(&args, |a| self.inner.inner().create_sliding_accumulator(a))
                .map(|inner| Box::new(w.adapt(inner)) as Box<dyn Accumulator>),
            None => self.inner.inner().create_sliding_accumulator(args),
        }
    }

    fn reverse_expr(&self) -> datafusion::logical_expr::ReversedUDAF {
        datafusion::logical_expr::ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> datafusion::logical_expr::utils::AggregateOrderSensitivity {
        datafusion::logical_expr::utils::AggregateOrderSensitivity::Insensitive
    }
}

fn is_real(ty: &DataType) -> bool {
    matches!(ty, DataType::Float32)
}

/// `field` with type `ty`, same name.
fn retyped(field: &FieldRef, ty: &DataType) -> FieldRef {
    Arc::new(field.as_ref().clone().with_data_type(ty.clone()))
}

/// How a sum's input reaches DataFusion's sum: widened to `to`.
#[derive(Debug, Clone)]
struct Widening {
    to: DataType,
    /// A real sum: its result is real, computed in double precision.
    real: bool,
}

impl Widening {
    fn of(args: &AccumulatorArgs) -> Option<Widening> {
        let input = args.expr_fields.first()?.data_type();
        Some(Widening {
            to: summed_as(input)?,
            real: is_real(input),
        })
    }

    /// Builds the sum over widened input: calls `make` with `args` as for a sum of the wider
    /// type. What DataFusion evaluates is the narrow input; [`Adapted`] widens the values
    /// before they reach the sum, and the arguments describe them as the sum expects.
    fn make<T>(
        &self,
        args: &AccumulatorArgs,
        make: impl FnOnce(AccumulatorArgs) -> Result<T>,
    ) -> Result<T> {
        let fields: Vec<FieldRef> = args
            .expr_fields
            .iter()
            .map(|f| retyped(f, &self.to))
            .collect();
        let exprs: Vec<Arc<dyn datafusion::physical_expr::PhysicalExpr>> = args
            .exprs
            .iter()
            .map(|e| {
                Arc::new(datafusion::physical_expr::expressions::CastExpr::new(
                    Arc::clone(e),
                    self.to.clone(),
                    None,
                )) as Arc<dyn datafusion::physical_expr::PhysicalExpr>
            })
            .collect();
        let return_field = match self.real {
            true => retyped(&args.return_field, &self.to),
            false => Arc::clone(&args.return_field),
        };
        make(AccumulatorArgs {
            return_field,
            exprs: &exprs,
            expr_fields: &fields,
            ..*args
        })
    }

    fn adapt<A: ?Sized>(&self, inner: Box<A>) -> Adapted<A> {
        Adapted {
            inner,
            input: Some(self.to.clone()),
            output: match self.real {
                true => Output::Real,
                false => Output::Same,
            },
        }
    }
}

/// One of DataFusion's accumulators whose result PostgreSQL types differently: the input
/// reaches it widened to `input` when that is set, and its results pass through `output`.
struct Adapted<A: ?Sized> {
    inner: Box<A>,
    input: Option<DataType>,
    output: Output,
}

/// How an [`Adapted`] accumulator's results become PostgreSQL's.
#[derive(Debug)]
enum Output {
    /// DataFusion's decimal average (4 extra digits, truncated), of type `from`, rounded to
    /// PostgreSQL's scale.
    Round { scale: i8, from: FieldRef },
    /// A real sum computed in double precision (PostgreSQL adds in single precision, so a
    /// long sum may differ from it in the last digits), rounded to real.
    Real,
    /// The inner accumulator's own results.
    Same,
}

impl<A: ?Sized> std::fmt::Debug for Adapted<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adapted")
            .field("input", &self.input)
            .field("output", &self.output)
            .finish()
    }
}

impl Output {
    fn apply(&self, array: &ArrayRef) -> Result<ArrayRef> {
        let (scale, from) = match self {
            Output::Real => return Ok(cast(array, &DataType::Float32)?),
            Output::Same => return Ok(Arc::clone(array)),
            Output::Round { scale, from } => (*scale, from),
        };
        let round = |v: i256, from: i8| -> Result<i128> {
            fit(rescale(v, i32::from(from), i32::from(scale))?)
        };
        let rounded: Vec<Option<i128>> = match from.data_type() {
            DataType::Decimal128(_, from) => array
                .as_primitive::<Decimal128Type>()
                .iter()
                .map(|v| v.map(|v| round(i256::from_i128(v), *from)).transpose())
                .collect::<Result<_>>()?,
            DataType::Decimal256(_, from) => array
                .as_primitive::<Decimal256Type>()
                .iter()
                .map(|v| v.map(|v| round(v, *from)).transpose())
                .collect::<Result<_>>()?,
            _ => return Ok(Arc::clone(array)),
        };
        Ok(Arc::new(
            Decimal128Array::from(rounded).with_precision_and_scale(MAX_DIGITS, scale)?,
        ))
    }
}

impl<A: ?Sized> Adapted<A> {
    /// `values` as the inner accumulator takes them.
    fn input<'a>(&self, values: &'a [ArrayRef]) -> Result<std::borrow::Cow<'a, [ArrayRef]>> {
        Ok(match &self.input {
            None => std::borrow::Cow::Borrowed(values),
            Some(ty) => std::borrow::Cow::Owned(
                values
                    .iter()
                    .map(|v| Ok(cast(v, ty)?))
                    .collect::<Result<_>>()?,
            ),
        })
    }
}

impl Accumulator for Adapted<dyn Accumulator> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let values = self.input(values)?;
        self.inner.update_batch(&values)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let value = self.inner.evaluate()?.to_array()?;
        ScalarValue::try_from_array(&self.output.apply(&value)?, 0)
    }

    fn size(&self) -> usize {
        self.inner.size()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.inner.state()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.inner.merge_batch(states)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let values = self.input(values)?;
        self.inner.retract_batch(&values)
    }

    fn supports_retract_batch(&self) -> bool {
        self.inner.supports_retract_batch()
    }
}

impl GroupsAccumulator for Adapted<dyn GroupsAccumulator> {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&datafusion::arrow::array::BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        let values = self.input(values)?;
        self.inner
            .update_batch(&values, group_indices, opt_filter, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let values = self.inner.evaluate(emit_to)?;
        self.output.apply(&values)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.inner.state(emit_to)
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .merge_batch(values, group_indices, total_num_groups)
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&datafusion::arrow::array::BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let values = self.input(values)?;
        self.inner.convert_to_state(&values, opt_filter)
    }

    fn size(&self) -> usize {
        self.inner.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_input_reads_what_postgres_reads() {
        assert_eq!(parse_numeric("1e2", 0).unwrap(), 100);
        assert_eq!(parse_numeric(" -1.5E-3 ", 4).unwrap(), -15);
        assert_eq!(parse_numeric("+.5", 2).unwrap(), 50);
        assert_eq!(parse_numeric("7.", 0).unwrap(), 7);
        // Rounded half away from zero at the scale, also past every digit.
        assert_eq!(parse_numeric("2.555", 2).unwrap(), 256);
        assert_eq!(parse_numeric("-2.5", 0).unwrap(), -3);
        assert_eq!(parse_numeric("0.004", 2).unwrap(), 0);
        assert_eq!(parse_numeric("5e-3", 2).unwrap(), 1);
        assert_eq!(parse_numeric("0005e-4", 2).unwrap(), 0);
        assert_eq!(parse_numeric("0.000", 16).unwrap(), 0);
        for bad in [
            "", ".", "e5", "1e", "1.2.3", "--1", "1 2", "x1", "1e2.5", "-NaN",
        ] {
            assert_eq!(parse_numeric(bad, 2), Err(NumericText::Invalid), "{bad:?}");
        }
        assert_eq!(parse_numeric("1e40", 0), Err(NumericText::Overflow));
        assert_eq!(
            parse_numeric("1e-2147483648", 0),
            Err(NumericText::Overflow)
        );
        assert_eq!(parse_numeric("1e-999", 0), Ok(0));
        assert_eq!(parse_numeric("NaN", 0), Err(NumericText::Special));
        assert_eq!(parse_numeric("-Infinity", 0), Err(NumericText::Special));
        assert_eq!(text_scale("1e-2147483648"), 38);
    }

    #[test]
    fn division_scale_follows_postgres() {
        // select 1.0/3 → 0.33333333333333333333 (20 digits)
        assert_eq!(div_scale(Some((10, 1)), Some((3, 0)), 1, 0), 20);
        // select 10.0/4 → 2.5000000000000000 (16)
        assert_eq!(div_scale(Some((100, 1)), Some((4, 0)), 1, 0), 16);
        // select 100000.0/3 → 33333.333333333333 (12)
        assert_eq!(div_scale(Some((1_000_000, 1)), Some((3, 0)), 1, 0), 12);
        // select 1/3::numeric → 20; a column operand → 16
        assert_eq!(div_scale(Some((1, 0)), Some((3, 0)), 0, 0), 20);
        assert_eq!(div_scale(None, Some((3, 0)), 2, 0), 16);
        // the operands' own scales are a floor
        assert_eq!(div_scale(None, None, 18, 0), 18);
    }

    #[test]
    fn division_and_product_round_half_away_from_zero() {
        assert_eq!(divide(2, 0, 3, 0, 20).unwrap(), 66_666_666_666_666_666_667);
        assert_eq!(divide(-2, 0, 3, 0, 2).unwrap(), -67);
        assert_eq!(divide(635, 2, 3, 0, 16).unwrap(), 21_166_666_666_666_667);
        assert!(divide(1, 0, 0, 0, 2).is_err());
        assert_eq!(multiply(15, 1, 235, 2, 3).unwrap(), 3525);
        // 1.5 × 1.5e-19 = 2.25e-19 = 22.5e-20, rounded away from zero
        assert_eq!(multiply(15, 1, 15, 20, 20).unwrap(), 23);
        assert!(multiply(10i128.pow(30), 0, 10i128.pow(30), 0, 0).is_err());
    }

    #[test]
    fn text_constants_keep_their_digits() {
        assert_eq!(text_scale("1.50"), 2);
        assert_eq!(text_scale(" 12 "), 0);
        assert_eq!(text_scale("1e-3"), 3);
        assert_eq!(text_scale("1.5E2"), 0);
    }

    #[test]
    fn leading_base_10000_digit() {
        assert_eq!(base10000_lead(10, 1), (0, 1));
        assert_eq!(base10000_lead(1_000_000, 1), (1, 10));
        assert_eq!(base10000_lead(123, 6), (-1, 1));
        assert_eq!(base10000_lead(0, 0), (0, 0));
    }
}
