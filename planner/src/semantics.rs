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
                        .transform_data(|e| crate::numeric::rewrite_arithmetic(e, &schema))
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
