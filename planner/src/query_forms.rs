//! Query forms DataFusion does not plan, written on the parsed statement as ones it does:
//!
//! - `FETCH FIRST n ROWS ONLY` is `LIMIT n` (`WITH TIES` and `PERCENT` are refused, 0A000);
//! - `(a, b) IN (SELECT x, y …)`, as a conjunct of WHERE or HAVING, is `EXISTS (SELECT 1
//!   FROM (SELECT x, y …) AS s(c1, c2) WHERE s.c1 = a AND s.c2 = b)` (DataFusion's IN takes
//!   one column; elsewhere, where its NULL would differ from EXISTS's false, it stays).

use crate::error::{Error, Result};
use datafusion::sql::sqlparser::ast::{
    self, BinaryOperator, Expr, Ident, LimitClause, Query, SelectItem, SetExpr, Statement,
    TableAlias, TableAliasColumnDef, TableFactor, TableWithJoins, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

/// The alias of the derived table a row-valued IN reads; its columns are `<alias>_<n>`.
const ROW_IN: &str = "__partita_in";

/// Rewrites the forms above in `stmt`.
pub fn rewrite(stmt: &mut Statement) -> Result<()> {
    match stmt.visit(&mut Rewriter) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct Rewriter;

impl VisitorMut for Rewriter {
    type Break = Error;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<Error> {
        let Some(fetch) = query.fetch.take() else {
            return ControlFlow::Continue(());
        };
        if fetch.with_ties || fetch.percent {
            let form = if fetch.with_ties {
                "WITH TIES"
            } else {
                "PERCENT"
            };
            return ControlFlow::Break(Error::Unsupported(format!("FETCH … {form}")));
        }
        // FETCH FIRST ROW ONLY is one row.
        let quantity = fetch
            .quantity
            .unwrap_or_else(|| Expr::value(ast::Value::Number("1".into(), false)));
        match &mut query.limit_clause {
            None => {
                query.limit_clause = Some(LimitClause::LimitOffset {
                    limit: Some(quantity),
                    offset: None,
                    limit_by: vec![],
                })
            }
            Some(LimitClause::LimitOffset { limit, .. }) if limit.is_none() => {
                *limit = Some(quantity)
            }
            Some(_) => {
                return ControlFlow::Break(Error::Syntax(
                    "syntax error: LIMIT and FETCH together".into(),
                ));
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, select: &mut ast::Select) -> ControlFlow<Error> {
        // Only where a condition's false and NULL mean the same (a conjunct of WHERE or
        // HAVING): EXISTS is never NULL, where a row-valued IN can be.
        for condition in [select.selection.as_mut(), select.having.as_mut()]
            .into_iter()
            .flatten()
        {
            conjuncts(condition);
        }
        ControlFlow::Continue(())
    }
}

/// Rewrites the row-valued INs among the AND-ed parts of `condition`.
fn conjuncts(condition: &mut Expr) {
    match condition {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left);
            conjuncts(right);
        }
        Expr::Nested(inner) => conjuncts(inner),
        other => row_in(other),
    }
}

/// `(a, b) IN (SELECT …)` as EXISTS (see the module comment).
fn row_in(e: &mut Expr) {
    let Expr::InSubquery {
        expr,
        subquery,
        negated: false,
    } = e
    else {
        return;
    };
    let Expr::Tuple(items) = expr.as_ref() else {
        return;
    };
    let column = |i: usize| Ident::new(format!("{ROW_IN}_{}", i + 1));
    let condition = items
        .iter()
        .enumerate()
        .map(|(i, item)| Expr::BinaryOp {
            left: Box::new(Expr::CompoundIdentifier(vec![
                Ident::new(ROW_IN),
                column(i),
            ])),
            op: BinaryOperator::Eq,
            right: Box::new(item.clone()),
        })
        .reduce(|a, b| Expr::BinaryOp {
            left: Box::new(a),
            op: BinaryOperator::And,
            right: Box::new(b),
        });
    let Some(condition) = condition else {
        return;
    };
    let derived = TableFactor::Derived {
        lateral: false,
        subquery: subquery.clone(),
        alias: Some(TableAlias {
            explicit: true,
            name: Ident::new(ROW_IN),
            columns: (0..items.len())
                .map(|i| TableAliasColumnDef::from_name(column(i).value))
                .collect(),
            at: None,
        }),
        sample: None,
    };
    let Ok(Statement::Query(mut exists)) =
        crate::session::parse_sql("SELECT 1").map(|mut s| s.remove(0))
    else {
        return;
    };
    if let SetExpr::Select(select) = exists.body.as_mut() {
        select.projection = vec![SelectItem::UnnamedExpr(Expr::value(ast::Value::Number(
            "1".into(),
            false,
        )))];
        select.from = vec![TableWithJoins {
            relation: derived,
            joins: vec![],
        }];
        select.selection = Some(condition);
    }
    *e = Expr::Exists {
        subquery: exists,
        negated: false,
    };
}

#[cfg(test)]
mod tests {
    use crate::session::rewritten;

    #[test]
    fn forms_become_what_datafusion_plans() {
        assert_eq!(
            rewritten("SELECT a FROM t ORDER BY a OFFSET 1 ROWS FETCH FIRST 2 ROWS ONLY"),
            "SELECT a FROM t ORDER BY a LIMIT 2 OFFSET 1 ROWS"
        );
        assert_eq!(
            rewritten("SELECT a FROM t WHERE (a, b) IN (SELECT x, y FROM u)"),
            "SELECT a FROM t WHERE EXISTS (SELECT 1 FROM (SELECT x, y FROM u) AS __partita_in \
             (__partita_in_1, __partita_in_2) WHERE __partita_in.__partita_in_1 = a AND \
             __partita_in.__partita_in_2 = b)"
        );
        assert!(crate::session::parse_sql("SELECT a FROM t FETCH FIRST 1 ROW WITH TIES").is_err());
    }
}
