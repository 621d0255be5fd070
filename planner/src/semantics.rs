//! The analyzer rule that gives planned expressions PostgreSQL's meaning where DataFusion's
//! differs: numeric result scales (`numeric`), timestamp text (`zone`), rounding casts to
//! integers, float arithmetic's range checks, interval comparisons and ordering
//! (`interval`). It runs after DataFusion's type coercion, so operand types are final.

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNode;
use datafusion::error::Result;
use datafusion::logical_expr::LogicalPlan;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct PostgresSemantics;

impl AnalyzerRule for PostgresSemantics {
    fn name(&self) -> &str {
        "partita_postgres_semantics"
    }

    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        let zone = config
            .execution
            .time_zone
            .clone()
            .unwrap_or_else(|| "UTC".into());
        rewrite_expressions(plan, |e, schema| {
            crate::zone::rewrite_timestamp_text(e, config)?
                .transform_data(|e| crate::functions::local_time_casts(e, schema, &zone))?
                .transform_data(|e| crate::numeric::rewrite_arithmetic(e, schema))?
                .transform_data(|e| crate::functions::rounding_scale(e, schema))?
                .transform_data(|e| rounding_int_cast(e, schema))?
                .transform_data(|e| negation(e, schema))?
                .transform_data(|e| to_hex_width(e, schema))?
                .transform_data(|e| checked_arithmetic(e, schema))?
                .transform_data(typeof_constant)?
                .transform_data(|e| crate::casts::typed_input(e, schema))?
                .transform_data(|e| crate::numeric::text_input(e, schema))?
                .transform_data(|e| crate::interval_input::interval_casts(e, schema))?
                .transform_data(|e| crate::casts::char_semantics(e, schema))?
                .transform_data(|e| crate::json::equality(e, schema))?
                .transform_data(|e| text_cast(e, schema))?
                .transform_data(|e| crate::interval::compare_spans(e, schema))?
                .transform_data(|e| crate::enums::compare_by_label_order(e, schema))?
                .transform_data(|e| crate::interval::extremes_by_span(e, schema))?
                .transform_data(nullable_scalar_subquery)
        })?
        .transform_up_with_subqueries(|plan| {
            crate::interval::sort_by_span(plan)?
                .transform_data(crate::json::sort_by_value)?
                .transform_data(crate::enums::sort_by_label_order)?
                .transform_data(crate::enums::aggregate_by_label_order)?
                .transform_data(crate::digits::own_digit_text)
        })
        .map(|t| t.data)
    }
}

/// Rewrites every expression of `plan` and its subqueries bottom-up with `rewrite`, given the
/// columns the expression can name. Output columns keep their names.
fn rewrite_expressions(
    plan: LogicalPlan,
    rewrite: impl Fn(
        datafusion::logical_expr::Expr,
        &datafusion::common::DFSchema,
    ) -> Result<
        datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>,
    >,
) -> Result<LogicalPlan> {
    // Once a rewrite has changed an expression (whose type may change: `round(5, 2)` is a
    // numeric now), the nodes visited after it have their schemas computed again, as they
    // may pass that column on. Plans nothing changed are left as they are.
    let changed = std::cell::Cell::new(false);
    plan.transform_up_with_subqueries(|plan| {
        let schema = input_schema(&plan);
        let rewritten = rewrite_node_expressions(plan, |e| rewrite(e, &schema))?;
        if rewritten.transformed {
            changed.set(true);
            return Ok(rewritten);
        }
        if !changed.get() || rewritten.data.inputs().is_empty() {
            return Ok(rewritten);
        }
        rewritten.map_data(|p| p.recompute_schema())
    })
    .map(|t| t.data)
}

/// Rewrites each expression of one plan node bottom-up with `rewrite`; the node's output
/// columns keep their names.
pub(crate) fn rewrite_node_expressions(
    plan: LogicalPlan,
    rewrite: impl Fn(
        datafusion::logical_expr::Expr,
    ) -> Result<
        datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>,
    >,
) -> Result<datafusion::common::tree_node::Transformed<LogicalPlan>> {
    let names = NamePreserver::new(&plan);
    let rewritten = plan.map_expressions(|expr| {
        let saved = names.save(&expr);
        let result = expr.transform_up(&rewrite)?;
        Ok(result.update_data(|e| saved.restore(e)))
    })?;
    if rewritten.transformed {
        rewritten.map_data(|p| match p {
            // A VALUES list's column types were fixed when it was planned: they are taken
            // again from its rows (`VALUES (ARRAY[1, 2])` is an integer[] now).
            LogicalPlan::Values(values) => values_retyped(values),
            p => p.recompute_schema(),
        })
    } else {
        Ok(rewritten)
    }
}

/// A VALUES list with each column typed as its rows now are, where they agree; a column
/// whose rows differ keeps its type, each row cast to it.
fn values_retyped(values: datafusion::logical_expr::Values) -> Result<LogicalPlan> {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::logical_expr::{ExprSchemable, Values};
    let empty = datafusion::common::DFSchema::empty();
    let mut rows = values.values;
    let mut fields = Vec::with_capacity(values.schema.fields().len());
    for (j, field) in values.schema.fields().iter().enumerate() {
        let types = rows
            .iter()
            .map(|row| row[j].get_type(&empty))
            .collect::<Result<Vec<_>>>()?;
        let mut typed = types.iter().filter(|t| **t != DataType::Null);
        let ty = match typed.next() {
            Some(first) if typed.all(|t| t == first) => first.clone(),
            _ => field.data_type().clone(),
        };
        for (row, row_type) in rows.iter_mut().zip(&types) {
            if *row_type != ty {
                row[j] = std::mem::take(&mut row[j]).cast_to(&ty, &empty)?;
            }
        }
        // A column whose type changed loses the old type's declared name.
        let field = match *field.data_type() == ty {
            true => field.as_ref().clone(),
            false => field
                .as_ref()
                .clone()
                .with_data_type(ty)
                .with_metadata(Default::default()),
        };
        fields.push(Arc::new(field));
    }
    let schema = datafusion::common::DFSchema::from_unqualified_fields(
        fields.into(),
        values.schema.metadata().clone(),
    )?;
    Ok(LogicalPlan::Values(Values {
        schema: Arc::new(schema),
        values: rows,
    }))
}

/// `concat` and `concat_ws` with their boolean and array arguments written by their output
/// functions (`t`, `{1,2}`), as PostgreSQL's take them.
fn output_text(
    e: &datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> Option<datafusion::logical_expr::Expr> {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::logical_expr::{Expr, ExprSchemable, ScalarUDF};
    let function = || ScalarUDF::new_from_impl(crate::output::OutputText::default());
    let is_list = |e: &Expr| {
        matches!(
            e.get_type(schema),
            Ok(DataType::List(_) | DataType::LargeList(_))
        )
    };
    match e {
        Expr::ScalarFunction(f) if matches!(f.name(), "concat" | "concat_ws") => {
            let written =
                |a: &Expr| is_list(a) || a.get_type(schema).ok() == Some(DataType::Boolean);
            if !f.args.iter().any(written) {
                return None;
            }
            let args = f
                .args
                .iter()
                .map(|a| match written(a) {
                    true => function().call(vec![a.clone()]),
                    false => a.clone(),
                })
                .collect();
            Some(f.func.call(args))
        }
        _ => None,
    }
}

/// The analyzer rule that runs before DataFusion's type coercion and gives arithmetic
/// operands the types PostgreSQL's operators take:
/// - a `real` with another kind of number is computed in double precision (`r * 10`,
///   `r - 7.2` are `double precision` there; `r * r` stays `real`), where DataFusion would
///   compute in `real`, overflowing and rounding where PostgreSQL does not;
/// - an integer constant that fits 32 bits, with an `integer` or `smallint` or another such
///   constant, is an `integer` (`i + 1`, `7 / 2` are `integer` there; DataFusion makes the
///   constant, and so the result, a BIGINT);
/// - `date_trunc` of a date is `date_trunc` of a timestamptz, and so is `generate_series`
///   of dates a series of timestamptz;
/// - `ARRAY[…]` of integer constants is an `integer[]`;
/// - a function's timestamp in another unit than microseconds is cast to microseconds.
#[derive(Debug, Default)]
pub struct ArithmeticOperands;

impl AnalyzerRule for ArithmeticOperands {
    fn name(&self) -> &str {
        "partita_arithmetic_operands"
    }

    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        use datafusion::arrow::datatypes::{DataType, TimeUnit};
        use datafusion::common::ScalarValue;
        use datafusion::common::tree_node::Transformed;
        use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, Operator, cast};
        let zone: Arc<str> = config
            .execution
            .time_zone
            .as_deref()
            .unwrap_or("UTC")
            .into();
        let small_constant = |e: &Expr| {
            matches!(e, Expr::Literal(ScalarValue::Int64(Some(n)), _)
                if i32::try_from(*n).is_ok())
        };
        rewrite_expressions(plan, |e, schema| {
            // A quoted literal compared with a boolean or a bytea is read as one.
            let literal = crate::casts::literal_operands(e, schema)?;
            if literal.transformed {
                return Ok(literal);
            }
            let e = literal.data;
            // A boolean or an array in concat and concat_ws is written by its output
            // function (`t`, `{1,2}`), not Arrow's cast.
            if let Some(written) = output_text(&e, schema) {
                return Ok(Transformed::yes(written));
            }
            // The difference of two dates or two timestamps refuses infinite ones; that of
            // dates is an integer.
            if let Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Minus,
                right,
            }) = &e
                && let (Ok(l), Ok(r)) = (left.get_type(schema), right.get_type(schema))
                && matches!(
                    (&l, &r),
                    (DataType::Date32, DataType::Date32)
                        | (DataType::Timestamp(..), DataType::Timestamp(..))
                )
                && !matches!(left.as_ref(), Expr::ScalarFunction(f)
                    if f.name() == crate::functions::FINITE_OPERAND)
            {
                let finite = datafusion::logical_expr::ScalarUDF::new_from_impl(
                    crate::functions::FiniteOperand::default(),
                );
                let difference = Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(finite.call(vec![left.as_ref().clone()])),
                    Operator::Minus,
                    Box::new(finite.call(vec![right.as_ref().clone()])),
                ));
                // Days between dates are an integer, as in PostgreSQL (drivers read a
                // bigint as text).
                return Ok(Transformed::yes(match l {
                    DataType::Date32 => Expr::Cast(datafusion::logical_expr::Cast::new(
                        Box::new(difference),
                        DataType::Int32,
                    )),
                    _ => difference,
                }));
            }
            // date_trunc of a date truncates the timestamptz of its midnight in the session's
            // zone, as PostgreSQL's implicit cast does (DataFusion's gives a timestamp).
            if let Expr::ScalarFunction(f) = &e
                && f.name() == "date_trunc"
                && f.args.len() == 2
                && f.args[1].get_type(schema).ok() == Some(DataType::Date32)
            {
                let mut args = f.args.clone();
                let timestamptz = DataType::Timestamp(TimeUnit::Microsecond, Some(zone.clone()));
                args[1] = cast(args[1].clone(), timestamptz);
                return Ok(Transformed::yes(f.func.call(args)));
            }
            // So is generate_series over dates: PostgreSQL's runs over timestamptz.
            if let Expr::ScalarFunction(f) = &e
                && f.name() == "generate_series"
                && f.args.len() == 3
                && f.args[..2]
                    .iter()
                    .any(|a| a.get_type(schema).ok() == Some(DataType::Date32))
            {
                let mut args = f.args.clone();
                let timestamptz = DataType::Timestamp(TimeUnit::Microsecond, Some(zone.clone()));
                for a in &mut args[..2] {
                    *a = cast(a.clone(), timestamptz.clone());
                }
                return Ok(Transformed::yes(f.func.call(args)));
            }
            // generate_series of integers (its constants are made integers before planning)
            // is a series of integers, as in PostgreSQL (DataFusion's is of bigints).
            let small =
                |a: &Expr| matches!(a.get_type(schema), Ok(DataType::Int32 | DataType::Int16));
            if let Expr::ScalarFunction(f) = &e
                && f.name() == "generate_series"
                && (2..=3).contains(&f.args.len())
                && f.args.iter().any(small)
                && f.args
                    .iter()
                    .all(|a| small(a) || matches!(a.get_type(schema), Ok(DataType::Null)))
            {
                let args = f
                    .args
                    .iter()
                    .map(|a| cast(a.clone(), DataType::Int64))
                    .collect();
                let integers = DataType::new_list(DataType::Int32, true);
                return Ok(Transformed::yes(cast(f.func.call(args), integers)));
            }
            // ARRAY[1, 2] of integer constants (and integer or smallint values) is an
            // integer[], as in PostgreSQL (DataFusion's is a bigint[]).
            if let Expr::ScalarFunction(f) = &e
                && f.name() == "make_array"
                && f.args.iter().any(small_constant)
                && f.args.iter().all(|a| {
                    small_constant(a)
                        || matches!(a.get_type(schema), Ok(DataType::Int32 | DataType::Int16))
                })
            {
                let args = f
                    .args
                    .iter()
                    .map(|a| match small_constant(a) {
                        true => cast(a.clone(), DataType::Int32),
                        false => a.clone(),
                    })
                    .collect();
                return Ok(Transformed::yes(f.func.call(args)));
            }
            // So is `integer[] || 3`.
            if let Expr::ScalarFunction(f) = &e
                && let Some((array, element)) = match (f.name(), f.args.as_slice()) {
                    ("array_append", [a, _]) => Some((a, 1)),
                    ("array_prepend", [_, a]) => Some((a, 0)),
                    _ => None,
                }
                && small_constant(&f.args[element])
                && matches!(array.get_type(schema), Ok(DataType::List(item)) if *item.data_type() == DataType::Int32)
            {
                let mut args = f.args.clone();
                args[element] = cast(args[element].clone(), DataType::Int32);
                return Ok(Transformed::yes(f.func.call(args)));
            }
            // Timestamps are microseconds, as PostgreSQL's are: a function DataFusion types
            // in another unit (`to_timestamp(n)`) is cast, so that nothing coerces columns to
            // nanoseconds, whose range ends in 2262.
            if let Expr::ScalarFunction(_) = &e
                && let Ok(DataType::Timestamp(unit, zone)) = e.get_type(schema)
                && unit != TimeUnit::Microsecond
            {
                return Ok(Transformed::yes(cast(
                    e,
                    DataType::Timestamp(TimeUnit::Microsecond, zone),
                )));
            }
            let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &e else {
                return Ok(Transformed::no(e));
            };
            if !matches!(
                op,
                Operator::Plus
                    | Operator::Minus
                    | Operator::Multiply
                    | Operator::Divide
                    | Operator::Modulo
            ) {
                return Ok(Transformed::no(e));
            }
            // A type that cannot be worked out here (a placeholder, say) is coercion's business.
            let (Ok(l), Ok(r)) = (left.get_type(schema), right.get_type(schema)) else {
                return Ok(Transformed::no(e));
            };
            let rebuilt = |to: DataType, retype: &dyn Fn(&Expr, &DataType) -> bool| {
                let side = |e: &Expr, t: &DataType| match retype(e, t) {
                    true => cast(e.clone(), to.clone()),
                    false => e.clone(),
                };
                Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                    left: Box::new(side(left, &l)),
                    op: *op,
                    right: Box::new(side(right, &r)),
                }))
            };
            // date ± interval is a timestamp, as in PostgreSQL (DataFusion keeps a date).
            let date_and_interval = |a: &DataType, b: &DataType| {
                *a == DataType::Date32 && matches!(b, DataType::Interval(_))
            };
            if matches!(op, Operator::Plus | Operator::Minus)
                && (date_and_interval(&l, &r) || date_and_interval(&r, &l))
            {
                let timestamp = DataType::Timestamp(TimeUnit::Microsecond, None);
                return Ok(rebuilt(timestamp, &|_, t| *t == DataType::Date32));
            }
            let other_number = |t: &DataType| {
                t.is_integer() || matches!(t, DataType::Float64 | DataType::Decimal128(..))
            };
            if *op != Operator::Modulo
                && ((l == DataType::Float32 && other_number(&r))
                    || (r == DataType::Float32 && other_number(&l)))
            {
                return Ok(rebuilt(DataType::Float64, &|_, t| *t == DataType::Float32));
            }
            let integer_like = |e: &Expr, t: &DataType| {
                small_constant(e) || matches!(t, DataType::Int16 | DataType::Int32)
            };
            if (small_constant(left) || small_constant(right))
                && integer_like(left, &l)
                && integer_like(right, &r)
            {
                return Ok(rebuilt(DataType::Int32, &|e, _| small_constant(e)));
            }
            Ok(Transformed::no(e))
        })
    }
}

/// PostgreSQL rounds a numeric or float cast to an integer type (`9.99::int` is 10); Arrow's
/// cast truncates. A numeric's halves go away from zero (`-2.5` gives -3): the operand is
/// moved half a unit away from zero first, so the truncating cast rounds. A float's halves go
/// to even (`2.5::float8::int` is 2, as C's `rint`): the operand is rounded by
/// [`RoundHalfEven`] first.
fn rounding_int_cast(
    expr: datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::ScalarValue;
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::{Cast, Expr, ExprSchemable, ScalarUDF, TryCast, lit, when};
    let (inner, to) = match &expr {
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field })
            if field.data_type().is_integer() =>
        {
            (expr.as_ref(), field)
        }
        _ => return Ok(Transformed::no(expr)),
    };
    // Coercion has already run: the operand's type is final.
    let rounded = match inner.get_type(schema)? {
        DataType::Decimal128(p, s) if s > 0 => {
            let zero = ScalarValue::Decimal128(Some(0), p, s);
            let half = ScalarValue::Decimal128(Some(5 * 10i128.pow(s as u32 - 1)), p, s);
            when(
                inner.clone().lt(lit(zero)),
                inner.clone() - lit(half.clone()),
            )
            .otherwise(inner.clone() + lit(half))?
        }
        DataType::Float32 | DataType::Float64 => {
            // Already rounded: this rule runs again over its own output.
            if let Expr::ScalarFunction(f) = inner
                && f.func.name() == ROUND_HALF_EVEN
            {
                return Ok(Transformed::no(expr));
            }
            ScalarUDF::new_from_impl(RoundHalfEven::default()).call(vec![inner.clone()])
        }
        _ => return Ok(Transformed::no(expr)),
    };
    let rebuilt = match &expr {
        Expr::TryCast(_) => Expr::TryCast(TryCast {
            expr: Box::new(rounded),
            field: to.clone(),
        }),
        _ => Expr::Cast(Cast {
            expr: Box::new(rounded),
            field: to.clone(),
        }),
    };
    Ok(Transformed::yes(rebuilt))
}

const ROUND_HALF_EVEN: &str = "partita_round_half_even";

/// Rounds a float to the nearest integral value, halves to even: what PostgreSQL's float to
/// integer casts do (`rint`) before checking the range.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct RoundHalfEven {
    signature: datafusion::logical_expr::Signature,
}

impl Default for RoundHalfEven {
    fn default() -> Self {
        use datafusion::arrow::datatypes::DataType;
        use datafusion::logical_expr::{Signature, Volatility};
        RoundHalfEven {
            signature: Signature::uniform(
                1,
                vec![DataType::Float32, DataType::Float64],
                Volatility::Immutable,
            ),
        }
    }
}

impl datafusion::logical_expr::ScalarUDFImpl for RoundHalfEven {
    fn name(&self) -> &str {
        ROUND_HALF_EVEN
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(
        &self,
        arg_types: &[datafusion::arrow::datatypes::DataType],
    ) -> Result<datafusion::arrow::datatypes::DataType> {
        Ok(arg_types[0].clone())
    }

    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> Result<datafusion::logical_expr::ColumnarValue> {
        use datafusion::arrow::array::AsArray;
        use datafusion::arrow::datatypes::{Float32Type, Float64Type};
        use datafusion::common::ScalarValue;
        use datafusion::logical_expr::ColumnarValue;
        Ok(match &args.args[0] {
            ColumnarValue::Scalar(ScalarValue::Float64(v)) => {
                ColumnarValue::Scalar(ScalarValue::Float64(v.map(f64::round_ties_even)))
            }
            ColumnarValue::Scalar(ScalarValue::Float32(v)) => {
                ColumnarValue::Scalar(ScalarValue::Float32(v.map(f32::round_ties_even)))
            }
            ColumnarValue::Array(a) if a.as_primitive_opt::<Float64Type>().is_some() => {
                ColumnarValue::Array(std::sync::Arc::new(
                    a.as_primitive::<Float64Type>()
                        .unary::<_, Float64Type>(f64::round_ties_even),
                ))
            }
            ColumnarValue::Array(a) => ColumnarValue::Array(std::sync::Arc::new(
                a.as_primitive::<Float32Type>()
                    .unary::<_, Float32Type>(f32::round_ties_even),
            )),
            ColumnarValue::Scalar(other) => {
                return datafusion::common::plan_err!("{ROUND_HALF_EVEN}({other:?})");
            }
        })
    }
}

/// A cast to text writes the value as PostgreSQL's output function does where Arrow's cast
/// differs: `ts::text` is `2024-01-01 10:00:00`, not `2024-01-01T10:00:00`; an interval is
/// `1 day 02:00:00`; a float `2`, not `2.0`; bytea `\x41ff`, not its bytes as UTF-8; an
/// array `{1,2}`, not `[1, 2]`. The cast becomes [`crate::output::OutputText`].
pub(crate) fn text_cast(
    expr: datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    use crate::output::OutputText;
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::{Cast, Expr, ExprSchemable, ScalarUDF, TryCast, cast};
    let (inner, to) = match &expr {
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
            (expr.as_ref(), field.data_type())
        }
        _ => return Ok(Transformed::no(expr)),
    };
    if !matches!(
        to,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) || !OutputText::handles(&inner.get_type(schema)?)
    {
        return Ok(Transformed::no(expr));
    }
    let text = ScalarUDF::new_from_impl(OutputText::default()).call(vec![inner.clone()]);
    Ok(Transformed::yes(match to {
        DataType::Utf8 => text,
        other => cast(text, other.clone()),
    }))
}

/// A scalar subquery is NULL when it returns no rows, but DataFusion gives it its first
/// column's nullability, and a result column of `(SELECT 1 WHERE false)` or `(SELECT id FROM t
/// WHERE id = 99)` then fails as "non-nullable but contains null values". The subquery's
/// column goes through [`Nullable`] so that it is nullable.
fn nullable_scalar_subquery(
    expr: datafusion::logical_expr::Expr,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::common::Column;
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::{Expr, LogicalPlanBuilder, ScalarUDF, Subquery};
    let Expr::ScalarSubquery(sq) = &expr else {
        return Ok(Transformed::no(expr));
    };
    let schema = sq.subquery.schema();
    if schema.fields().len() != 1 || schema.field(0).is_nullable() {
        return Ok(Transformed::no(expr));
    }
    let (qualifier, field) = schema.qualified_field(0);
    let column = Expr::Column(Column::from((qualifier, field)));
    let nullable = ScalarUDF::new_from_impl(Nullable::default())
        .call(vec![column])
        .alias_qualified(qualifier.cloned(), field.name());
    let plan = LogicalPlanBuilder::from(sq.subquery.as_ref().clone())
        .project(vec![nullable])?
        .build()?;
    Ok(Transformed::yes(Expr::ScalarSubquery(Subquery {
        subquery: Arc::new(plan),
        outer_ref_columns: sq.outer_ref_columns.clone(),
        spans: sq.spans.clone(),
    })))
}

/// Its argument, as a nullable value.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Nullable {
    signature: datafusion::logical_expr::Signature,
}

impl Default for Nullable {
    fn default() -> Self {
        use datafusion::logical_expr::{Signature, Volatility};
        Nullable {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl datafusion::logical_expr::ScalarUDFImpl for Nullable {
    fn name(&self) -> &str {
        "partita_nullable"
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(
        &self,
        arg_types: &[datafusion::arrow::datatypes::DataType],
    ) -> Result<datafusion::arrow::datatypes::DataType> {
        Ok(arg_types[0].clone())
    }

    fn invoke_with_args(
        &self,
        mut args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> Result<datafusion::logical_expr::ColumnarValue> {
        Ok(args.args.remove(0))
    }
}

/// `pg_typeof` of a constant as PostgreSQL types it: a bare integer that fits 32 bits is an
/// `integer` (DataFusion plans it as a BIGINT), a quoted string or NULL is `unknown`.
fn typeof_constant(
    expr: datafusion::logical_expr::Expr,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::ScalarValue;
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::{Expr, ExprSchemable, lit};
    let Expr::ScalarFunction(f) = &expr else {
        return Ok(Transformed::no(expr));
    };
    if f.name() != "pg_typeof" {
        return Ok(Transformed::no(expr));
    }
    match f.args.as_slice() {
        [Expr::Literal(ScalarValue::Int64(Some(n)), _)] if i32::try_from(*n).is_ok() => {
            let integer =
                lit(*n).cast_to(&DataType::Int32, &datafusion::common::DFSchema::empty())?;
            Ok(Transformed::yes(f.func.call(vec![integer])))
        }
        [Expr::Literal(ScalarValue::Utf8(_) | ScalarValue::Null, _)] => {
            Ok(Transformed::yes(lit("unknown")))
        }
        _ => Ok(Transformed::no(expr)),
    }
}

/// `to_hex` of an integer or smallint writes its 32 bits (`to_hex(-1)` is `ffffffff`), as
/// PostgreSQL's `to_hex(integer)` does; DataFusion's widens it to 64 bits first.
fn to_hex_width(
    expr: datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::{BinaryExpr, Cast, Expr, ExprSchemable, Operator, lit};
    let Expr::ScalarFunction(f) = &expr else {
        return Ok(Transformed::no(expr));
    };
    let [arg] = f.args.as_slice() else {
        return Ok(Transformed::no(expr));
    };
    if f.name() != "to_hex" {
        return Ok(Transformed::no(expr));
    }
    // An integer constant that fits 32 bits is an `integer` in PostgreSQL.
    let narrow = |e: &Expr| {
        matches!(e.get_type(schema), Ok(DataType::Int32 | DataType::Int16))
            || matches!(e, Expr::Literal(datafusion::common::ScalarValue::Int64(Some(n)), _)
                if i32::try_from(*n).is_ok())
    };
    if !narrow(arg) {
        return Ok(Transformed::no(expr));
    }
    let wide = Expr::Cast(Cast::new(Box::new(arg.clone()), DataType::Int64));
    let bits = Expr::BinaryExpr(BinaryExpr::new(
        Box::new(wide),
        Operator::BitwiseAnd,
        Box::new(lit(0xFFFF_FFFF_i64)),
    ));
    Ok(Transformed::yes(f.func.call(vec![bits])))
}

/// `-x` as `0 - x`: an integer's is checked (`-(-2147483648)` is 22003, where Arrow's wraps
/// around) and an interval's negates every field (Arrow's leaves the days alone).
fn negation(
    expr: datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::arrow::datatypes::{DataType, IntervalMonthDayNano, IntervalUnit};
    use datafusion::common::ScalarValue;
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, Operator, lit};
    let Expr::Negative(inner) = &expr else {
        return Ok(Transformed::no(expr));
    };
    let zero = match inner.get_type(schema)? {
        DataType::Int16 => ScalarValue::Int16(Some(0)),
        DataType::Int32 => ScalarValue::Int32(Some(0)),
        DataType::Int64 => ScalarValue::Int64(Some(0)),
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(0, 0, 0)))
        }
        _ => return Ok(Transformed::no(expr)),
    };
    // Checked by `checked_arithmetic`, which comes next.
    Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
        Box::new(lit(zero)),
        Operator::Minus,
        inner.clone(),
    ))))
}

/// PostgreSQL checks arithmetic where Arrow wraps integers and gives floats infinities and
/// zeros: an integer result out of its type's range is 22003 ("integer out of range"), so is
/// a float result that overflows or underflows, and a float divided by zero is 22012 (unless
/// the dividend is NaN). Integer `+`, `-`, `*` and float `+`, `-`, `*`, `/` of one type become
/// [`CheckedArithmetic`]; integer division by zero DataFusion already refuses.
fn checked_arithmetic(
    expr: datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, ScalarUDF};
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    let Some(op) = ArithmeticOp::of(*op) else {
        return Ok(Transformed::no(expr));
    };
    let (l, r) = (left.get_type(schema)?, right.get_type(schema)?);
    let checked = match l {
        DataType::Float32 | DataType::Float64 => true,
        DataType::Int16 | DataType::Int32 | DataType::Int64 => op != ArithmeticOp::Divide,
        _ => false,
    };
    // Coercion has made both operands one type; anything else is left as it is.
    if !checked || l != r {
        return Ok(Transformed::no(expr));
    }
    Ok(Transformed::yes(
        ScalarUDF::new_from_impl(CheckedArithmetic::new(op))
            .call(vec![left.as_ref().clone(), right.as_ref().clone()]),
    ))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ArithmeticOp {
    Add,
    Subtract,
    Multiply,
    Divide,
}

impl ArithmeticOp {
    fn of(op: datafusion::logical_expr::Operator) -> Option<ArithmeticOp> {
        use datafusion::logical_expr::Operator;
        Some(match op {
            Operator::Plus => ArithmeticOp::Add,
            Operator::Minus => ArithmeticOp::Subtract,
            Operator::Multiply => ArithmeticOp::Multiply,
            Operator::Divide => ArithmeticOp::Divide,
            _ => return None,
        })
    }

    /// Why PostgreSQL's float8pl, float8mi, float8mul or float8div (and their float4 forms)
    /// refuse `result` of `l` and `r`: an infinite result of finite operands overflowed; a zero
    /// product of nonzero factors, or a zero quotient of a nonzero dividend and finite
    /// divisor, underflowed.
    fn out_of_range(self, result: f64, l: f64, r: f64) -> Option<&'static str> {
        let infinite_operand = match self {
            ArithmeticOp::Divide => l.is_infinite(),
            _ => l.is_infinite() || r.is_infinite(),
        };
        let zero_allowed = match self {
            ArithmeticOp::Add | ArithmeticOp::Subtract => true,
            ArithmeticOp::Multiply => l == 0.0 || r == 0.0,
            ArithmeticOp::Divide => l == 0.0 || r.is_infinite(),
        };
        if result.is_infinite() && !infinite_operand {
            Some("overflow")
        } else if result == 0.0 && !zero_allowed {
            Some("underflow")
        } else {
            None
        }
    }
}

/// `a + b`, `a - b`, `a * b` or `a / b` for numbers of one type, as PostgreSQL computes
/// them: an integer result out of the type's range is refused ("integer out of range",
/// 22003), and so is a float result that overflows or underflows, or a float zero divisor
/// ("division by zero", 22012) unless the dividend is NaN.
#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedArithmetic {
    op: ArithmeticOp,
    signature: datafusion::logical_expr::Signature,
}

impl CheckedArithmetic {
    fn new(op: ArithmeticOp) -> CheckedArithmetic {
        use datafusion::arrow::datatypes::DataType;
        use datafusion::logical_expr::{Signature, TypeSignature, Volatility};
        let same = |t: DataType| TypeSignature::Exact(vec![t.clone(), t]);
        CheckedArithmetic {
            op,
            signature: Signature::one_of(
                vec![
                    same(DataType::Float64),
                    same(DataType::Float32),
                    same(DataType::Int64),
                    same(DataType::Int32),
                    same(DataType::Int16),
                ],
                Volatility::Immutable,
            ),
        }
    }

    /// Floats: refuses a zero divisor before, and a result out of range after.
    fn float(
        &self,
        left: &datafusion::arrow::array::ArrayRef,
        right: &datafusion::arrow::array::ArrayRef,
    ) -> Result<datafusion::arrow::array::ArrayRef> {
        use datafusion::arrow::array::{Array, ArrayRef, AsArray};
        use datafusion::arrow::compute::kernels::numeric;
        use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
        let rows = left.len();
        // Row i's operands as f64 (a float4's widening is exact).
        let value = |a: &ArrayRef, i: usize| match a.data_type() {
            DataType::Float64 => a.as_primitive::<Float64Type>().value(i),
            _ => f64::from(a.as_primitive::<Float32Type>().value(i)),
        };
        if self.op == ArithmeticOp::Divide {
            let zero_divisor = (0..rows).any(|i| {
                left.is_valid(i)
                    && right.is_valid(i)
                    && value(right, i) == 0.0
                    && !value(left, i).is_nan()
            });
            if zero_divisor {
                return Err(datafusion::error::DataFusionError::ArrowError(
                    Box::new(datafusion::arrow::error::ArrowError::DivideByZero),
                    None,
                ));
            }
        }
        let result = match self.op {
            ArithmeticOp::Add => numeric::add(left, right)?,
            ArithmeticOp::Subtract => numeric::sub(left, right)?,
            ArithmeticOp::Multiply => numeric::mul(left, right)?,
            ArithmeticOp::Divide => numeric::div(left, right)?,
        };
        let out_of_range = (0..rows).filter(|&i| result.is_valid(i)).find_map(|i| {
            self.op
                .out_of_range(value(&result, i), value(left, i), value(right, i))
        });
        match out_of_range {
            Some(kind) => Err(datafusion::error::DataFusionError::Execution(format!(
                "value out of range: {kind}"
            ))),
            None => Ok(result),
        }
    }

    /// Integers: Arrow's checked kernels, their overflow in PostgreSQL's words.
    fn integer(
        &self,
        left: &datafusion::arrow::array::ArrayRef,
        right: &datafusion::arrow::array::ArrayRef,
    ) -> Result<datafusion::arrow::array::ArrayRef> {
        use datafusion::arrow::compute::kernels::numeric;
        use datafusion::arrow::datatypes::DataType;
        use datafusion::arrow::error::ArrowError;
        let result = match self.op {
            ArithmeticOp::Add => numeric::add(left, right),
            ArithmeticOp::Subtract => numeric::sub(left, right),
            ArithmeticOp::Multiply => numeric::mul(left, right),
            ArithmeticOp::Divide => numeric::div(left, right),
        };
        match result {
            Err(ArrowError::ArithmeticOverflow(_)) => {
                let ty = match left.data_type() {
                    DataType::Int16 => "smallint",
                    DataType::Int32 => "integer",
                    _ => "bigint",
                };
                Err(datafusion::error::DataFusionError::Execution(format!(
                    "{ty} out of range"
                )))
            }
            other => Ok(other?),
        }
    }
}

impl datafusion::logical_expr::ScalarUDFImpl for CheckedArithmetic {
    fn name(&self) -> &str {
        match self.op {
            ArithmeticOp::Add => "partita_add",
            ArithmeticOp::Subtract => "partita_subtract",
            ArithmeticOp::Multiply => "partita_multiply",
            ArithmeticOp::Divide => "partita_divide",
        }
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(
        &self,
        arg_types: &[datafusion::arrow::datatypes::DataType],
    ) -> Result<datafusion::arrow::datatypes::DataType> {
        Ok(arg_types[0].clone())
    }

    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> Result<datafusion::logical_expr::ColumnarValue> {
        use datafusion::logical_expr::ColumnarValue;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let rows = if scalar { 1 } else { args.number_rows };
        let left = args.args[0].to_array(rows)?;
        let right = args.args[1].to_array(rows)?;
        let result = if left.data_type().is_floating() {
            self.float(&left, &right)?
        } else {
            self.integer(&left, &right)?
        };
        Ok(if scalar {
            ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&result, 0)?)
        } else {
            ColumnarValue::Array(result)
        })
    }
}

/// Makes an integer constant that fits in 32 bits (`5`, `-5`) an explicit `integer`, as
/// PostgreSQL types it (DataFusion's constants are bigints). Says whether it did.
pub(crate) fn int4_constant(e: &mut datafusion::sql::sqlparser::ast::Expr) -> bool {
    use datafusion::sql::sqlparser::ast::{self, Expr, Value};
    let fits = match &*e {
        Expr::Value(v) => matches!(&v.value, Value::Number(n, false) if n.parse::<i32>().is_ok()),
        // `-5`, and `-2147483648`, which is an integer too.
        Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => matches!(expr.as_ref(), Expr::Value(v)
            if matches!(&v.value, Value::Number(n, false) if format!("-{n}").parse::<i32>().is_ok())),
        _ => false,
    };
    if fits {
        let literal = std::mem::replace(e, Expr::value(Value::Null));
        *e = Expr::Cast {
            kind: ast::CastKind::DoubleColon,
            expr: Box::new(literal),
            data_type: ast::DataType::Integer(None),
            array: false,
            format: None,
        };
    }
    fits
}

/// PostgreSQL types an integer constant that fits in 32 bits as `integer`, DataFusion as
/// BIGINT. A constant that is a column of a query's rows (`SELECT 1 AS one`, which drivers
/// read as a number or as text depending on its type; a VALUES list's, `FROM (VALUES (1,
/// 'a')) v(id, name)`; a set operation's branches) gets PostgreSQL's type, in the statement's
/// query and the queries inside it; so does one that is a value of CASE, coalesce and the
/// like anywhere in them.
pub fn int4_result_constants(stmt: &mut datafusion::sql::sqlparser::ast::Statement) {
    use datafusion::sql::sqlparser::ast::{self, SelectItem, SetExpr, Statement};
    use datafusion::sql::sqlparser::ast::{VisitMut, VisitorMut};
    use int4_constant as integer;
    fn body(set: &mut SetExpr) {
        match set {
            SetExpr::Select(select) => {
                for item in &mut select.projection {
                    if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } =
                        item
                    {
                        integer(e);
                    }
                }
            }
            SetExpr::Values(values) => values
                .rows
                .iter_mut()
                .flat_map(|row| row.content.iter_mut())
                .for_each(|e| {
                    integer(e);
                }),
            SetExpr::SetOperation { left, right, .. } => {
                body(left);
                body(right);
            }
            _ => {}
        }
    }
    struct Queries;
    impl VisitorMut for Queries {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut ast::Query) -> std::ops::ControlFlow<()> {
            body(&mut query.body);
            std::ops::ControlFlow::Continue(())
        }
        /// Constants that are a value of CASE, coalesce, greatest, least or nullif, an
        /// element of ARRAY[…], or the argument of sum, min and max (`sum(CASE WHEN … THEN 1 ELSE 0 END)` sums integers
        /// into a bigint), wherever they are: GROUP BY, HAVING and ORDER BY must stay equal
        /// to the select list's expressions.
        fn post_visit_expr(&mut self, e: &mut ast::Expr) -> std::ops::ControlFlow<()> {
            use ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments};
            match e {
                Expr::Case {
                    conditions,
                    else_result,
                    ..
                } => {
                    for c in conditions {
                        integer(&mut c.result);
                    }
                    if let Some(e) = else_result {
                        integer(e);
                    }
                }
                // `ARRAY[1]` is an integer[] when the query is planned, as the analyzer
                // makes it later: a recursive query's static term fixes its columns' types
                // before the analyzer runs (`WITH RECURSIVE w(path) AS (SELECT ARRAY[1] …
                // SELECT path || n …)`).
                Expr::Array(array) => {
                    for element in &mut array.elem {
                        integer(element);
                    }
                }
                Expr::Function(f) => {
                    let name = f.name.to_string().to_lowercase();
                    let values = match name.as_str() {
                        "coalesce" | "greatest" | "least" | "nullif" => usize::MAX,
                        "sum" | "min" | "max" | "pg_typeof" => 1,
                        _ => 0,
                    };
                    if let FunctionArguments::List(list) = &mut f.args {
                        for arg in list.args.iter_mut().take(values) {
                            if let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = arg {
                                integer(e);
                            }
                        }
                    }
                }
                _ => {}
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    if let Statement::Query(_) = stmt {
        let _ = stmt.visit(&mut Queries);
    }
}

/// The analyzer rule that runs before DataFusion's type coercion and refuses comparisons
/// PostgreSQL has no operator for: a text value against a number (`city = 2013`,
/// `name IN (1, 2)`) is 42883 there, where DataFusion would cast the text and fail (or
/// match) row by row. A quoted literal is not text yet in PostgreSQL (`age = '30'` is
/// fine), so string literals are left to coercion.
#[derive(Debug, Default)]
pub struct OperandTypes;

impl AnalyzerRule for OperandTypes {
    fn name(&self) -> &str {
        "partita_operand_types"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        use datafusion::common::tree_node::TreeNodeRecursion;
        use datafusion::logical_expr::{Between, BinaryExpr, Expr};
        plan.apply_with_subqueries(|node| {
            let schema = input_schema(node);
            node.apply_expressions(|expr| {
                expr.apply(|e| {
                    match e {
                        Expr::BinaryExpr(BinaryExpr { left, op, right }) if is_comparison(op) => {
                            refuse_text_number(left, &op.to_string(), right, &schema)?
                        }
                        Expr::InList(list) => {
                            for item in &list.list {
                                refuse_text_number(&list.expr, "=", item, &schema)?;
                            }
                        }
                        Expr::Between(Between {
                            expr, low, high, ..
                        }) => {
                            refuse_text_number(expr, ">=", low, &schema)?;
                            refuse_text_number(expr, "<=", high, &schema)?;
                        }
                        _ => {}
                    }
                    Ok(TreeNodeRecursion::Continue)
                })
            })
        })?;
        Ok(plan)
    }
}

/// 42883 when one operand is text (other than a quoted literal) and the other a number.
fn refuse_text_number(
    left: &datafusion::logical_expr::Expr,
    op: &str,
    right: &datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<()> {
    use datafusion::error::DataFusionError;
    use datafusion::logical_expr::ExprSchemable;
    // A type that cannot be worked out here (a placeholder, say) is coercion's business.
    let (Ok(l), Ok(r)) = (left.get_type(schema), right.get_type(schema)) else {
        return Ok(());
    };
    let (Some(l_name), Some(r_name)) = (operand_type(left, &l), operand_type(right, &r)) else {
        return Ok(());
    };
    let is_text = |n: &str| n == "text";
    if is_text(l_name) != is_text(r_name) {
        return Err(DataFusionError::External(Box::new(
            crate::Error::UndefinedOperator(format!("{l_name} {op} {r_name}")),
        )));
    }
    Ok(())
}

/// PostgreSQL's name for an operand's type when it is text or a number; `None` for other
/// types, for quoted literals, whose type PostgreSQL infers from the other side, and for
/// the OID aliases (`x::regclass`, which the catalog emulation renders as a name but which
/// compares with OIDs in PostgreSQL).
fn operand_type(
    expr: &datafusion::logical_expr::Expr,
    ty: &datafusion::arrow::datatypes::DataType,
) -> Option<&'static str> {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::Expr;
    Some(match ty {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            match expr {
                Expr::Literal(..) => return None,
                Expr::ScalarFunction(f)
                    if matches!(
                        f.name(),
                        "partita_relname" | "partita_typname" | "partita_nspname"
                    ) =>
                {
                    return None;
                }
                _ => {}
            }
            "text"
        }
        DataType::Int16 => "smallint",
        DataType::Int32 => "integer",
        // A bare integer constant is an integer in PostgreSQL when it fits one.
        DataType::Int64 => match expr {
            Expr::Literal(ScalarValue::Int64(Some(n)), _) if i32::try_from(*n).is_ok() => "integer",
            _ => "bigint",
        },
        DataType::Float32 => "real",
        DataType::Float64 => "double precision",
        DataType::Decimal128(..) | DataType::Decimal256(..) => "numeric",
        _ => return None,
    })
}

/// `=`, `<>`, `<`, `<=`, `>`, `>=` and IS [NOT] DISTINCT FROM.
pub(crate) fn is_comparison(op: &datafusion::logical_expr::Operator) -> bool {
    use datafusion::logical_expr::Operator;
    matches!(
        op,
        Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq
            | Operator::IsDistinctFrom
            | Operator::IsNotDistinctFrom
    )
}

/// The analyzer rule that reads a quoted literal beside an array as an array, before
/// DataFusion's type coercion would refuse the pair (see `arrays::text_operands`).
#[derive(Debug, Default)]
pub struct ArrayOperands;

impl AnalyzerRule for ArrayOperands {
    fn name(&self) -> &str {
        "partita_array_operands"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        rewrite_expressions(plan, crate::arrays::text_operands)
    }
}

/// The analyzer rule that gives `array_agg` of a column of a declared type (`oid`, `uuid`,
/// `jsonb`, `varchar(n)`) an array of that type, as PostgreSQL's is: `array_agg(atttypid)`
/// is an `oid[]`. DataFusion's array_agg makes a list of the Arrow type alone, which the
/// wire names `int4[]` or `text[]`; asyncpg's type lookup reads an `oid[]` column and has
/// to look up `int4[]` itself first, with that same query. A projection above the
/// aggregate casts those columns to lists whose element carries the declared type.
#[derive(Debug, Default)]
pub struct AggregatedArrayTypes;

impl AnalyzerRule for AggregatedArrayTypes {
    fn name(&self) -> &str {
        "partita_aggregated_array_types"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        // Nodes above a changed aggregate (a scalar subquery's reader) compute their
        // schemas again.
        let changed = std::cell::Cell::new(false);
        typed_array_aggregates(plan, &changed).map(|t| t.data)
    }
}

/// `AggregatedArrayTypes` over `plan` and its correlated subqueries. An uncorrelated scalar
/// subquery (`(SELECT array_agg(uuid_col) FROM t)`, `ARRAY(SELECT …)`) keeps DataFusion's
/// list: the join it becomes drops the cast, and its rows would not match the schema.
fn typed_array_aggregates(
    plan: LogicalPlan,
    changed: &std::cell::Cell<bool>,
) -> Result<datafusion::common::tree_node::Transformed<LogicalPlan>> {
    use datafusion::common::tree_node::Transformed;
    plan.transform_up(|node| {
        node.map_subqueries(|sub| match &sub {
            LogicalPlan::Subquery(s) if s.outer_ref_columns.is_empty() => Ok(Transformed::no(sub)),
            _ => typed_array_aggregates(sub, changed),
        })?
        .transform_data(|node| typed_array_aggregate(node, changed))
    })
}

/// One node of `typed_array_aggregates`.
fn typed_array_aggregate(
    plan: LogicalPlan,
    changed: &std::cell::Cell<bool>,
) -> Result<datafusion::common::tree_node::Transformed<LogicalPlan>> {
    use datafusion::arrow::datatypes::{DataType, Field};
    use datafusion::common::Column;
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::{Cast, Expr, ExprSchemable, LogicalPlanBuilder};
    let LogicalPlan::Aggregate(aggregate) = &plan else {
        if changed.get() && !plan.inputs().is_empty() {
            return Ok(Transformed::yes(plan.recompute_schema()?));
        }
        return Ok(Transformed::no(plan));
    };
    let input = aggregate.input.schema();
    let first = plan.schema().fields().len() - aggregate.aggr_expr.len();
    let mut elements = Vec::new();
    for (j, e) in aggregate.aggr_expr.iter().enumerate() {
        let Expr::AggregateFunction(f) = e.clone().unalias() else {
            continue;
        };
        if f.func.name() != "array_agg" || f.params.args.len() != 1 {
            continue;
        }
        let (_, field) = f.params.args[0].to_field(input)?;
        // Only where the declared type is not the one the Arrow type says anyway (a text
        // column's list is text[] as it is): a consumer planned over DataFusion's list
        // (`coalesce(array_agg(x), '{}')`) would not take the typed one.
        let plain = Field::new("", field.data_type().clone(), true);
        if sql::types::declared_type_name(&field).is_some()
            && crate::pg_catalog::field_type_oid(&field)
                != crate::pg_catalog::field_type_oid(&plain)
        {
            elements.push((first + j, field));
        }
    }
    if elements.is_empty() {
        return Ok(Transformed::no(plan));
    }
    let schema = Arc::clone(plan.schema());
    let columns = schema.iter().enumerate().map(|(i, (qualifier, field))| {
        let column = Expr::Column(Column::from((qualifier, field)));
        let Some((_, element)) = elements.iter().find(|(at, _)| *at == i) else {
            return column;
        };
        let item = Field::new_list_field(element.data_type().clone(), true)
            .with_metadata(element.metadata().clone());
        let list = field
            .as_ref()
            .clone()
            .with_data_type(DataType::List(Arc::new(item)));
        Expr::Cast(Cast::new_from_field(Box::new(column), Arc::new(list)))
            .alias_qualified(qualifier.cloned(), field.name())
    });
    let projected = LogicalPlanBuilder::from(plan).project(columns)?.build()?;
    changed.set(true);
    Ok(Transformed::yes(projected))
}

/// The analyzer rules of a Partita session: ours around DataFusion's defaults.
pub fn analyzer_rules() -> Vec<Arc<dyn AnalyzerRule + Send + Sync>> {
    let mut rules: Vec<Arc<dyn AnalyzerRule + Send + Sync>> = vec![
        Arc::new(ArrayOperands),
        Arc::new(OperandTypes),
        Arc::new(ArithmeticOperands),
    ];
    rules.extend(datafusion::optimizer::Analyzer::new().rules);
    rules.push(Arc::new(PostgresSemantics));
    rules.push(Arc::new(RecursiveTermFields));
    rules.push(Arc::new(AggregatedArrayTypes));
    rules
}

/// DataFusion's optimizer rules, after `UnnestKeys`.
pub fn optimizer_rules() -> Vec<Arc<dyn datafusion::optimizer::OptimizerRule + Send + Sync>> {
    let mut rules: Vec<Arc<dyn datafusion::optimizer::OptimizerRule + Send + Sync>> =
        vec![Arc::new(UnnestKeys)];
    rules.extend(datafusion::optimizer::Optimizer::new().rules);
    rules
}

/// The optimizer rule that takes the input's keys off an unnest's output. DataFusion keeps
/// them, and so believes a table's primary key still determines every column after
/// `FROM t, unnest(t.list) x` repeated its rows: its rule pruning sort keys then drops `x`
/// from `ORDER BY t.id, x` as already decided by `t.id`. It runs first in each optimizer
/// pass, as other rules build unnests anew.
#[derive(Debug, Default)]
pub struct UnnestKeys;

impl datafusion::optimizer::OptimizerRule for UnnestKeys {
    fn name(&self) -> &str {
        "partita_unnest_keys"
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn datafusion::optimizer::OptimizerConfig,
    ) -> Result<datafusion::common::tree_node::Transformed<LogicalPlan>> {
        use datafusion::common::FunctionalDependencies;
        use datafusion::common::tree_node::{Transformed, TreeNode};
        let keyed_unnest = |p: &LogicalPlan| matches!(p, LogicalPlan::Unnest(u) if !u.schema.functional_dependencies().is_empty());
        if !plan.exists(|p| Ok(keyed_unnest(p)))? {
            return Ok(Transformed::no(plan));
        }
        // Every node takes its schema again from its inputs, bottom up; an unnest's then
        // loses its keys.
        plan.transform_up(|plan| match plan.recompute_schema()? {
            LogicalPlan::Unnest(mut unnest) => {
                let schema = unnest.schema.as_ref().clone();
                unnest.schema =
                    Arc::new(schema.with_functional_dependencies(FunctionalDependencies::empty())?);
                Ok(Transformed::yes(LogicalPlan::Unnest(unnest)))
            }
            plan => Ok(Transformed::yes(plan)),
        })
    }
}

/// The analyzer rule that gives a recursive CTE's recursive term the field metadata of its
/// static term. DataFusion takes the output fields from the static term and refuses a
/// recursive term whose fields carry other metadata, which ours do whenever one term reads a
/// table column (`partita.type`) and the other a constant:
/// `WITH RECURSIVE r(id) AS (SELECT 1 UNION ALL SELECT t.id FROM t JOIN r …)`.
#[derive(Debug, Default)]
pub struct RecursiveTermFields;

impl AnalyzerRule for RecursiveTermFields {
    fn name(&self) -> &str {
        "partita_recursive_term_fields"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        use datafusion::common::tree_node::Transformed;
        use datafusion::logical_expr::{Cast, Expr, LogicalPlanBuilder, RecursiveQuery};
        plan.transform_up_with_subqueries(|plan| {
            let LogicalPlan::RecursiveQuery(query) = &plan else {
                return Ok(Transformed::no(plan));
            };
            let wanted = Arc::clone(query.static_term.schema());
            let given = Arc::clone(query.recursive_term.schema());
            let same = wanted
                .fields()
                .iter()
                .zip(given.fields())
                .all(|(w, g)| w.metadata() == g.metadata());
            if same {
                return Ok(Transformed::no(plan));
            }
            let columns = wanted
                .fields()
                .iter()
                .zip(given.columns())
                .map(|(w, column)| {
                    let name = column.name.clone();
                    Expr::Cast(Cast::new_from_field(
                        Box::new(Expr::Column(column)),
                        Arc::new(w.as_ref().clone().with_name(&name)),
                    ))
                    .alias(name)
                });
            let LogicalPlan::RecursiveQuery(query) = plan else {
                unreachable!("matched above")
            };
            let recursive_term = LogicalPlanBuilder::from(query.recursive_term.as_ref().clone())
                .project(columns)?
                .build()?;
            let rebuilt = RecursiveQuery::try_new(
                query.name,
                query.static_term,
                Arc::new(recursive_term),
                query.is_distinct,
            )?;
            Ok(Transformed::yes(LogicalPlan::RecursiveQuery(rebuilt)))
        })
        .map(|t| t.data)
    }
}

/// The columns a plan node's expressions can name: its inputs' (its own for a leaf).
pub(crate) fn input_schema(plan: &LogicalPlan) -> datafusion::common::DFSchema {
    if plan.inputs().is_empty() {
        plan.schema().as_ref().clone()
    } else {
        merge_schema(&plan.inputs())
    }
}
