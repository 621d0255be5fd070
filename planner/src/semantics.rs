//! The analyzer rule that gives planned expressions PostgreSQL's meaning where DataFusion's
//! differs: numeric result scales (`numeric`) and timestamp text (`zone`). It runs after
//! DataFusion's type coercion, so operand types are final.

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNode;
use datafusion::error::Result;
use datafusion::logical_expr::LogicalPlan;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::optimizer::AnalyzerRule;

#[derive(Debug, Default)]
pub struct PostgresSemantics;

impl AnalyzerRule for PostgresSemantics {
    fn name(&self) -> &str {
        "partita_postgres_semantics"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| {
            let schema = if plan.inputs().is_empty() {
                plan.schema().as_ref().clone()
            } else {
                merge_schema(&plan.inputs())
            };
            // Output columns keep their names when their expressions are rewritten.
            let names = NamePreserver::new(&plan);
            let rewritten = plan.map_expressions(|expr| {
                let saved = names.save(&expr);
                let result = expr.transform_up(|e| {
                    crate::zone::rewrite_timestamp_text(e)?
                        .transform_data(|e| crate::numeric::rewrite_arithmetic(e, &schema))?
                        .transform_data(|e| rounding_int_cast(e, &schema))
                })?;
                Ok(result.update_data(|e| saved.restore(e)))
            })?;
            if rewritten.transformed {
                rewritten.map_data(|p| p.recompute_schema())
            } else {
                Ok(rewritten)
            }
        })
        .map(|t| t.data)
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
struct RoundHalfEven {
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

/// PostgreSQL types an integer constant that fits in 32 bits as `integer`, DataFusion as
/// BIGINT. A constant that is a result column of the statement (`SELECT 1 AS one`, which
/// drivers read as a number or as text depending on its type) gets PostgreSQL's type.
pub fn int4_result_constants(stmt: &mut datafusion::sql::sqlparser::ast::Statement) {
    use datafusion::sql::sqlparser::ast::{self, Expr, SelectItem, SetExpr, Statement, Value};
    let Statement::Query(q) = stmt else {
        return;
    };
    let SetExpr::Select(select) = q.body.as_mut() else {
        return;
    };
    for item in &mut select.projection {
        let (SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }) = item else {
            continue;
        };
        if let Expr::Value(v) = e
            && let Value::Number(n, false) = &v.value
            && n.parse::<i32>().is_ok()
        {
            let literal = std::mem::replace(e, Expr::value(Value::Null));
            *e = Expr::Cast {
                kind: ast::CastKind::DoubleColon,
                expr: Box::new(literal),
                data_type: ast::DataType::Integer(None),
                array: false,
                format: None,
            };
        }
    }
}
