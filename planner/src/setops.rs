//! `EXCEPT ALL` and `INTERSECT ALL` with PostgreSQL's multiplicities.
//!
//! DataFusion plans both as an anti or semi join without counting: `{1,1,1,2} EXCEPT ALL
//! {1,2}` gives no rows, where PostgreSQL gives `1` twice. Numbering each side's duplicates
//! makes them distinct rows, and the distinct operation on numbered rows has the counting
//! answer: the n-th copy of a row survives EXCEPT when the other side has fewer than n
//! copies, and INTERSECT when it has at least n. So
//!
//! ```sql
//! A EXCEPT ALL B
//! ```
//!
//! is rewritten on the parsed statement into
//!
//! ```sql
//! (SELECT c1 AS a1, … FROM (
//!     SELECT c1, …, row_number() OVER (PARTITION BY c1, …) FROM (A) AS l (c1, …)
//!     EXCEPT
//!     SELECT c1, …, row_number() OVER (PARTITION BY c1, …) FROM (B) AS r (c1, …)) AS s)
//! ```
//!
//! which needs the column names of `A` (`a1`, …): the caller plans each left side first
//! ([`left_sides`]) and hands the names to [`rewrite`].

use crate::{Error, Result};
use datafusion::sql::sqlparser::ast::{
    Ident, Query, SetExpr, SetOperator, SetQuantifier, Statement, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

/// Whether `e` is an `EXCEPT ALL` or `INTERSECT ALL`.
fn counting(e: &SetExpr) -> bool {
    matches!(
        e,
        SetExpr::SetOperation {
            op: SetOperator::Except | SetOperator::Intersect,
            set_quantifier: SetQuantifier::All,
            ..
        }
    )
}

/// Calls `f` on every set operation of `e`, operands before the operation.
fn post_order(e: &mut SetExpr, f: &mut dyn FnMut(&mut SetExpr) -> Result<()>) -> Result<()> {
    if let SetExpr::SetOperation { left, right, .. } = e {
        post_order(left, f)?;
        post_order(right, f)?;
    }
    if counting(e) {
        f(e)?;
    }
    Ok(())
}

/// Applies `f` to the counting operations of every query of `stmt`, in one fixed order.
fn each_counting(
    stmt: &mut Statement,
    f: &mut dyn FnMut(&mut SetExpr) -> Result<()>,
) -> Result<()> {
    struct Walk<'a>(&'a mut dyn FnMut(&mut SetExpr) -> Result<()>);
    impl VisitorMut for Walk<'_> {
        type Break = Error;
        fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<Error> {
            match post_order(&mut query.body, self.0) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(e),
            }
        }
    }
    match stmt.visit(&mut Walk(f)) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// The left operands of the statement's `EXCEPT ALL` and `INTERSECT ALL` operations, as
/// queries of their own, in the order [`rewrite`] takes their column names.
pub fn left_sides(stmt: &mut Statement) -> Vec<String> {
    let mut lefts = Vec::new();
    let _ = each_counting(stmt, &mut |e| {
        if let SetExpr::SetOperation { left, .. } = e {
            lefts.push(left.to_string());
        }
        Ok(())
    });
    lefts
}

/// Rewrites each counting operation (see the module comment), given the column names of
/// its left operand, in [`left_sides`]' order.
pub fn rewrite(stmt: &mut Statement, names: &[Vec<String>]) -> Result<()> {
    let mut names = names.iter();
    each_counting(stmt, &mut |e| {
        let SetExpr::SetOperation {
            left, op, right, ..
        } = e
        else {
            return Ok(());
        };
        let columns = names
            .next()
            .ok_or_else(|| Error::Internal("a set operation's column names are missing".into()))?;
        let positions: Vec<String> = (1..=columns.len())
            .map(|i| format!("__partita_c{i}"))
            .collect();
        let list = positions.join(", ");
        let side = |operand: &SetExpr, alias: &str| {
            format!(
                "SELECT {list}, row_number() OVER (PARTITION BY {list}) AS __partita_n \
                 FROM ({operand}) AS {alias} ({list})"
            )
        };
        let outputs: Vec<String> = positions
            .iter()
            .zip(columns)
            .map(|(p, name)| format!("{p} AS {}", Ident::with_quote('"', name)))
            .collect();
        let text = format!(
            "SELECT {} FROM ({} {op} {}) AS __partita_set",
            outputs.join(", "),
            side(left, "__partita_l"),
            side(right, "__partita_r"),
        );
        let parsed = crate::session::parse_sql(&text)?.pop();
        match parsed {
            Some(Statement::Query(query)) => {
                *e = SetExpr::Query(query);
                Ok(())
            }
            _ => Err(Error::Internal(format!("not a query: {text}"))),
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn counting_operations_number_their_rows() {
        let mut stmt = crate::session::parse_sql("SELECT a FROM t EXCEPT ALL SELECT b FROM u")
            .unwrap()
            .remove(0);
        assert_eq!(super::left_sides(&mut stmt), vec!["SELECT a FROM t"]);
        super::rewrite(&mut stmt, &[vec!["a".into()]]).unwrap();
        assert_eq!(
            stmt.to_string(),
            "(SELECT __partita_c1 AS \"a\" FROM (SELECT __partita_c1, row_number() OVER \
             (PARTITION BY __partita_c1) AS __partita_n FROM (SELECT a FROM t) AS __partita_l \
             (__partita_c1) EXCEPT SELECT __partita_c1, row_number() OVER (PARTITION BY \
             __partita_c1) AS __partita_n FROM (SELECT b FROM u) AS __partita_r \
             (__partita_c1)) AS __partita_set)"
        );
        // UNION ALL and the distinct forms stay as they are.
        let mut stmt = crate::session::parse_sql("SELECT 1 UNION ALL SELECT 2 EXCEPT SELECT 3")
            .unwrap()
            .remove(0);
        assert!(super::left_sides(&mut stmt).is_empty());
    }
}
