//! Intervals compared and scaled as PostgreSQL compares and scales them. Arrow orders an interval by its months,
//! then days, then nanoseconds, so `interval '48 hours' > interval '1 day'` is false there and
//! `interval '1 day' = interval '24 hours'` too. PostgreSQL compares one span: a month counts
//! 30 days and a day 24 hours. Comparisons and ORDER BY keys of interval type go through
//! [`IntervalSpan`], that span in microseconds, and `min`/`max` of intervals pick by it.
//! `avg` of intervals ([`IntervalAvg`]) divides their sum as `interval / n` does.

use datafusion::arrow::array::{AsArray, Decimal128Array};
use datafusion::arrow::datatypes::{DataType, IntervalMonthDayNanoType, IntervalUnit};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use std::sync::Arc;

const MICROS_PER_DAY: i128 = 86_400_000_000;

/// The span of an interval in microseconds, as PostgreSQL's `interval_cmp_value` counts it.
pub fn span_micros(months: i32, days: i32, nanos: i64) -> i128 {
    (months as i128 * 30 + days as i128) * MICROS_PER_DAY + (nanos / 1_000) as i128
}

/// `partita_interval_span(interval)`: the span as a `numeric(38, 0)` of microseconds.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct IntervalSpan {
    signature: Signature,
}

impl Default for IntervalSpan {
    fn default() -> Self {
        IntervalSpan {
            signature: Signature::exact(
                vec![DataType::Interval(IntervalUnit::MonthDayNano)],
                Volatility::Immutable,
            ),
        }
    }
}

impl ScalarUDFImpl for IntervalSpan {
    fn name(&self) -> &str {
        "partita_interval_span"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(38, 0))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let span = |v: datafusion::arrow::datatypes::IntervalMonthDayNano| {
            span_micros(v.months, v.days, v.nanoseconds)
        };
        match &args.args[0] {
            ColumnarValue::Scalar(ScalarValue::IntervalMonthDayNano(v)) => Ok(
                ColumnarValue::Scalar(ScalarValue::Decimal128(v.map(span), 38, 0)),
            ),
            ColumnarValue::Scalar(_) => {
                Ok(ColumnarValue::Scalar(ScalarValue::Decimal128(None, 38, 0)))
            }
            ColumnarValue::Array(array) => {
                let intervals = array.as_primitive::<IntervalMonthDayNanoType>();
                let spans: Decimal128Array = intervals.iter().map(|v| v.map(span)).collect();
                Ok(ColumnarValue::Array(Arc::new(
                    spans.with_precision_and_scale(38, 0)?,
                )))
            }
        }
    }
}

/// Plans `interval * n`, `n * interval` and `interval / n` (which Arrow does not compute)
/// as PostgreSQL's `interval_mul` and `interval_div` compute them: fractions of months
/// carry into days, of days into time.
#[derive(Debug, Default)]
pub struct IntervalArithmetic;

impl datafusion::logical_expr::planner::ExprPlanner for IntervalArithmetic {
    fn plan_binary_op(
        &self,
        expr: datafusion::logical_expr::planner::RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<
        datafusion::logical_expr::planner::PlannerResult<
            datafusion::logical_expr::planner::RawBinaryExpr,
        >,
    > {
        use datafusion::logical_expr::cast;
        use datafusion::logical_expr::expr::Placeholder;
        use datafusion::logical_expr::planner::PlannerResult;
        use datafusion::sql::sqlparser::ast::BinaryOperator;
        let mut expr = expr;
        // A factor of unknown type (`$1 * interval '1 minute'`) is a float8, as in PostgreSQL.
        if matches!(expr.op, BinaryOperator::Multiply | BinaryOperator::Divide) {
            let (left, right) = (expr.left.get_type(schema), expr.right.get_type(schema));
            for (operand, other) in [(&mut expr.left, &right), (&mut expr.right, &left)] {
                if let Expr::Placeholder(p @ Placeholder { field: None, .. }) = operand
                    && other.as_ref().is_ok_and(is_interval)
                {
                    p.field = Some(Arc::new(datafusion::arrow::datatypes::Field::new(
                        "",
                        DataType::Float64,
                        true,
                    )));
                }
            }
        }
        let (Ok(l), Ok(r)) = (expr.left.get_type(schema), expr.right.get_type(schema)) else {
            return Ok(PlannerResult::Original(expr));
        };
        // A quoted constant is of unknown type too (`interval '1 hour' * '2'`).
        let unknown = |e: &Expr| matches!(e, Expr::Literal(ScalarValue::Utf8(Some(_)), _));
        let number = |t: &DataType| t.is_integer() || t.is_floating() || t.is_decimal();
        let is_interval = |t: &DataType| is_interval(t) || matches!(t, DataType::Duration(_));
        // `ended - started > '1 hour'`: a quoted constant compared with the difference of two
        // timestamps (a duration here) is an interval, as in PostgreSQL.
        if matches!(
            expr.op,
            BinaryOperator::Gt
                | BinaryOperator::GtEq
                | BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::Eq
                | BinaryOperator::NotEq
        ) {
            let interval =
                DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano);
            if matches!(l, DataType::Duration(_)) && unknown(&expr.right) {
                expr.right = cast(expr.right.clone(), interval);
            } else if matches!(r, DataType::Duration(_)) && unknown(&expr.left) {
                expr.left = cast(expr.left.clone(), interval);
            }
            return Ok(PlannerResult::Original(expr));
        }
        let (interval, factor, divide) = match expr.op {
            BinaryOperator::Multiply if is_interval(&l) && (number(&r) || unknown(&expr.right)) => {
                (&expr.left, &expr.right, false)
            }
            BinaryOperator::Multiply if (number(&l) || unknown(&expr.left)) && is_interval(&r) => {
                (&expr.right, &expr.left, false)
            }
            BinaryOperator::Divide if is_interval(&l) && (number(&r) || unknown(&expr.right)) => {
                (&expr.left, &expr.right, true)
            }
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let function = ScalarUDF::new_from_impl(IntervalScale::new(divide));
        Ok(PlannerResult::Planned(function.call(vec![
            interval.clone(),
            cast(factor.clone(), DataType::Float64),
        ])))
    }
}

/// `avg(interval)`: the fields summed apart (months, days, time), divided by the count as
/// `interval / n` divides. The sums are 128-bit (a window frame retracts from them too).
#[derive(Debug, Default)]
pub(crate) struct IntervalAvg {
    months: i128,
    days: i128,
    nanos: i128,
    count: i128,
}

impl IntervalAvg {
    /// The state's fields: the three sums and the count.
    pub(crate) fn state_fields(name: &str) -> Vec<datafusion::arrow::datatypes::FieldRef> {
        ["months", "days", "nanos", "count"]
            .iter()
            .map(|f| {
                Arc::new(datafusion::arrow::datatypes::Field::new(
                    format!("{name}[{f}]"),
                    DataType::Decimal128(38, 0),
                    true,
                ))
            })
            .collect()
    }

    /// Adds (or, with `sign` -1, takes away) the values of `values`.
    fn add_values(&mut self, values: &datafusion::arrow::array::ArrayRef, sign: i128) {
        use datafusion::arrow::array::Array;
        let values = values.as_primitive::<IntervalMonthDayNanoType>();
        for i in 0..values.len() {
            if values.is_valid(i) {
                let v = values.value(i);
                self.months += sign * i128::from(v.months);
                self.days += sign * i128::from(v.days);
                self.nanos += sign * i128::from(v.nanoseconds);
                self.count += sign;
            }
        }
    }
}

impl datafusion::logical_expr::Accumulator for IntervalAvg {
    fn update_batch(&mut self, values: &[datafusion::arrow::array::ArrayRef]) -> Result<()> {
        self.add_values(&values[0], 1);
        Ok(())
    }

    fn retract_batch(&mut self, values: &[datafusion::arrow::array::ArrayRef]) -> Result<()> {
        self.add_values(&values[0], -1);
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn merge_batch(&mut self, states: &[datafusion::arrow::array::ArrayRef]) -> Result<()> {
        use datafusion::arrow::array::Array;
        use datafusion::arrow::datatypes::Decimal128Type;
        let [months, days, nanos, count] = states else {
            return datafusion::common::internal_err!("avg(interval) state of four fields");
        };
        let field =
            |a: &datafusion::arrow::array::ArrayRef, i| a.as_primitive::<Decimal128Type>().value(i);
        for i in 0..count.len() {
            if count.is_valid(i) {
                self.months += field(months, i);
                self.days += field(days, i);
                self.nanos += field(nanos, i);
                self.count += field(count, i);
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok([self.months, self.days, self.nanos, self.count]
            .map(|v| ScalarValue::Decimal128(Some(v), 38, 0))
            .to_vec())
    }

    /// The sum divided as `interval / n` divides it (a sum beyond one interval's fields is
    /// out of range, as in PostgreSQL).
    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.count == 0 {
            return Ok(ScalarValue::IntervalMonthDayNano(None));
        }
        let out_of_range = || {
            datafusion::error::DataFusionError::External(Box::new(crate::Error::NumericOverflow(
                "interval out of range".into(),
            )))
        };
        let (Ok(months), Ok(days)) = (i32::try_from(self.months), i32::try_from(self.days)) else {
            return Err(out_of_range());
        };
        let scale = IntervalScale::new(true);
        let n = self.count;
        let avg = match i64::try_from(self.nanos) {
            Ok(nanos) => scale.apply(
                datafusion::arrow::datatypes::IntervalMonthDayNano::new(months, days, nanos),
                n as f64,
            )?,
            // Times summing past 292 years of nanoseconds: the time divided on its own.
            Err(_) => {
                let dated = scale.apply(
                    datafusion::arrow::datatypes::IntervalMonthDayNano::new(months, days, 0),
                    n as f64,
                )?;
                let micros = (self.nanos / 1000 + n / 2) / n;
                let nanos = i64::try_from(micros * 1000 + i128::from(dated.nanoseconds))
                    .map_err(|_| out_of_range())?;
                datafusion::arrow::datatypes::IntervalMonthDayNano::new(
                    dated.months,
                    dated.days,
                    nanos,
                )
            }
        };
        Ok(ScalarValue::IntervalMonthDayNano(Some(avg)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// `partita_interval_mul(interval, factor)` / `partita_interval_div(interval, divisor)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalScale {
    divide: bool,
    signature: Signature,
}

impl IntervalScale {
    fn new(divide: bool) -> IntervalScale {
        IntervalScale {
            divide,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }

    /// PostgreSQL's arithmetic: each field scaled and truncated, the fractions carried down
    /// (a month is 30 days) and rounded to microseconds.
    fn apply(
        &self,
        v: datafusion::arrow::datatypes::IntervalMonthDayNano,
        factor: f64,
    ) -> Result<datafusion::arrow::datatypes::IntervalMonthDayNano> {
        let scaled = |x: f64| if self.divide { x / factor } else { x * factor };
        if self.divide && factor == 0.0 {
            return Err(datafusion::error::DataFusionError::ArrowError(
                Box::new(datafusion::arrow::error::ArrowError::DivideByZero),
                None,
            ));
        }
        let round_micros = |x: f64| (x * 1e6).round() / 1e6;
        const SECONDS_PER_DAY: f64 = 86_400.0;
        let months = scaled(f64::from(v.months));
        let days = scaled(f64::from(v.days));
        let (out_months, mut out_days) = (months.trunc(), days.trunc());
        let month_remainder_days = round_micros((months - out_months) * 30.0);
        let mut seconds = round_micros(
            (days - out_days + month_remainder_days - month_remainder_days.trunc())
                * SECONDS_PER_DAY,
        );
        if seconds.abs() >= SECONDS_PER_DAY {
            let whole = (seconds / SECONDS_PER_DAY).trunc();
            out_days += whole;
            seconds -= whole * SECONDS_PER_DAY;
        }
        out_days += month_remainder_days.trunc();
        let micros = (scaled((v.nanoseconds / 1000) as f64) + seconds * 1e6).round();
        let range = f64::from(i32::MIN)..=f64::from(i32::MAX);
        if !range.contains(&out_months) || !range.contains(&out_days) || micros.abs() > 9.2e15 {
            return Err(datafusion::error::DataFusionError::External(Box::new(
                crate::Error::NumericOverflow("interval out of range".into()),
            )));
        }
        Ok(datafusion::arrow::datatypes::IntervalMonthDayNano::new(
            out_months as i32,
            out_days as i32,
            micros as i64 * 1000,
        ))
    }
}

impl ScalarUDFImpl for IntervalScale {
    fn name(&self) -> &str {
        if self.divide {
            "partita_interval_div"
        } else {
            "partita_interval_mul"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Interval(IntervalUnit::MonthDayNano))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::array::{Array, IntervalMonthDayNanoBuilder};
        use datafusion::arrow::datatypes::Float64Type;
        let n = args.number_rows;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let rows = if scalar { 1 } else { n };
        let values = args.args[0].to_array(rows)?;
        // A difference of timestamps (an Arrow duration) is the interval of its days and
        // time, as PostgreSQL's timestamp subtraction gives.
        let interval_at = |i: usize| match values.data_type() {
            DataType::Duration(unit) => {
                let (days, micros) = crate::output::duration_days(&values, i, unit);
                datafusion::arrow::datatypes::IntervalMonthDayNano::new(0, days, micros * 1000)
            }
            _ => values.as_primitive::<IntervalMonthDayNanoType>().value(i),
        };
        let factors = args.args[1].to_array(rows)?;
        let factors = factors.as_primitive::<Float64Type>();
        let mut out = IntervalMonthDayNanoBuilder::with_capacity(rows);
        for i in 0..rows {
            if values.is_null(i) || factors.is_null(i) {
                out.append_null();
            } else {
                out.append_value(self.apply(interval_at(i), factors.value(i))?);
            }
        }
        let array = out.finish();
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &array, 0,
            )?));
        }
        Ok(ColumnarValue::Array(Arc::new(array)))
    }
}

fn is_interval(t: &DataType) -> bool {
    matches!(t, DataType::Interval(IntervalUnit::MonthDayNano))
}

fn span(e: Expr) -> Expr {
    ScalarUDF::new_from_impl(IntervalSpan::default()).call(vec![e])
}

/// A comparison of two intervals compares their spans.
pub fn compare_spans(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    if !crate::semantics::is_comparison(op) {
        return Ok(Transformed::no(expr));
    }
    let (Ok(l), Ok(r)) = (left.get_type(schema), right.get_type(schema)) else {
        return Ok(Transformed::no(expr));
    };
    if !is_interval(&l) || !is_interval(&r) {
        return Ok(Transformed::no(expr));
    }
    Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr {
        left: Box::new(span(left.as_ref().clone())),
        op: *op,
        right: Box::new(span(right.as_ref().clone())),
    })))
}

/// `min(i)` and `max(i)` of intervals are the value with the least or greatest span:
/// `first_value(i ORDER BY span(i) [DESC] NULLS LAST)`, which skips NULLs as they do.
pub fn extremes_by_span(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    use datafusion::logical_expr::expr::{AggregateFunction, AggregateFunctionParams};
    let Expr::AggregateFunction(AggregateFunction { func, params }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    let ascending = match func.name() {
        "min" => true,
        "max" => false,
        _ => return Ok(Transformed::no(expr)),
    };
    let [arg] = params.args.as_slice() else {
        return Ok(Transformed::no(expr));
    };
    if !arg.get_type(schema).is_ok_and(|t| is_interval(&t)) {
        return Ok(Transformed::no(expr));
    }
    let first = datafusion::functions_aggregate::first_last::first_value_udaf();
    Ok(Transformed::yes(Expr::AggregateFunction(
        AggregateFunction {
            func: first,
            params: AggregateFunctionParams {
                args: vec![arg.clone()],
                distinct: false,
                filter: params.filter.clone(),
                order_by: vec![span(arg.clone()).sort(ascending, false)],
                null_treatment: None,
            },
        },
    )))
}

/// ORDER BY an interval orders by its span.
pub fn sort_by_span(plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Sort(mut sort) = plan else {
        return Ok(Transformed::no(plan));
    };
    let schema = sort.input.schema().clone();
    let mut changed = false;
    for key in &mut sort.expr {
        if key.expr.get_type(&schema).is_ok_and(|t| is_interval(&t)) {
            key.expr = span(key.expr.clone());
            changed = true;
        }
    }
    Ok(Transformed::new_transformed(
        LogicalPlan::Sort(sort),
        changed,
    ))
}

#[cfg(test)]
mod tests {
    use super::span_micros;

    #[test]
    fn spans_count_thirty_day_months_and_whole_days() {
        assert!(span_micros(0, 0, 48 * 3_600_000_000_000) > span_micros(0, 1, 0));
        assert_eq!(
            span_micros(0, 1, 0),
            span_micros(0, 0, 24 * 3_600_000_000_000)
        );
        assert_eq!(span_micros(1, 0, 0), span_micros(0, 30, 0));
        assert!(span_micros(-1, 0, 0) < span_micros(0, -29, 0));
    }
}
