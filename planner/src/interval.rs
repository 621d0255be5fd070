//! Intervals compared as PostgreSQL compares them. Arrow orders an interval by its months,
//! then days, then nanoseconds, so `interval '48 hours' > interval '1 day'` is false there and
//! `interval '1 day' = interval '24 hours'` too. PostgreSQL compares one span: a month counts
//! 30 days and a day 24 hours. Comparisons and ORDER BY keys of interval type go through
//! [`IntervalSpan`], that span in microseconds, and `min`/`max` of intervals pick by it.

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
