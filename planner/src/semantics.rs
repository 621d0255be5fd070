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

/// PostgreSQL rounds a numeric or float cast to an integer type (`9.99::int` is 10, `-2.5`
/// gives -3; a float's exact halves go to even there, away from zero here); Arrow's cast
/// truncates. The operand is moved half a unit away from zero
/// first, so the truncating cast rounds half away from zero.
fn rounding_int_cast(
    expr: datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::ScalarValue;
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::{Cast, Expr, ExprSchemable, TryCast, lit, when};
    let (inner, to) = match &expr {
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field })
            if field.data_type().is_integer() =>
        {
            (expr.as_ref(), field)
        }
        _ => return Ok(Transformed::no(expr)),
    };
    // Zero and one half in the operand's own type: coercion has already run.
    let ty = inner.get_type(schema)?;
    let (zero, half) = match ty {
        DataType::Decimal128(p, s) if s > 0 => (
            ScalarValue::Decimal128(Some(0), p, s),
            ScalarValue::Decimal128(Some(5 * 10i128.pow(s as u32 - 1)), p, s),
        ),
        DataType::Float32 => (
            ScalarValue::Float32(Some(0.0)),
            ScalarValue::Float32(Some(0.5)),
        ),
        DataType::Float64 => (
            ScalarValue::Float64(Some(0.0)),
            ScalarValue::Float64(Some(0.5)),
        ),
        _ => return Ok(Transformed::no(expr)),
    };
    let rounded = when(
        inner.clone().lt(lit(zero)),
        inner.clone() - lit(half.clone()),
    )
    .otherwise(inner.clone() + lit(half))?;
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
