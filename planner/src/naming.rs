//! Result column names as PostgreSQL chooses them (its FigureColname): a column reference
//! names the column, a function call the function, CASE "case", a scalar subquery its own
//! first column, anything else "?column?". Unnamed expressions of the top-level SELECT are
//! given unique internal aliases before planning (DataFusion refuses two projections with the
//! same name, such as two sub-selects) and renamed back in the result schema.

use datafusion::sql::sqlparser::ast::{Expr, Ident, Query, SelectItem, SetExpr, Statement};

const INTERNAL_PREFIX: &str = "__partita_col_";

/// PostgreSQL's name for an unaliased result expression.
pub fn pg_column_name(expr: &Expr) -> Option<String> {
    figure_name(expr).map(|(name, _)| name)
}

/// A name and its strength, as in PostgreSQL's FigureColnameInternal: a column, function or
/// CASE names the result for good (2); a cast's type name (1) gives way to a name from
/// inside the cast, and an outer cast's type replaces an inner one's (`2.5::float8::int` is
/// "int4").
fn figure_name(expr: &Expr) -> Option<(String, u8)> {
    Some(match expr {
        Expr::Identifier(id) => (id.value.clone(), 2),
        Expr::CompoundIdentifier(parts) => (parts.last()?.value.clone(), 2),
        Expr::Function(f) => (f.name.0.last()?.as_ident()?.value.to_lowercase(), 2),
        Expr::Nested(inner) => return figure_name(inner),
        Expr::Cast {
            expr, data_type, ..
        } => match figure_name(expr) {
            Some((name, 2)) => (name, 2),
            _ => (cast_type_name(&data_type.to_string()), 1),
        },
        Expr::Case { .. } => ("case".into(), 2),
        Expr::Exists { .. } => ("exists".into(), 2),
        Expr::Subquery(q) => (first_column_name(q)?, 2),
        _ => return None,
    })
}

fn cast_type_name(ty: &str) -> String {
    match ty.to_ascii_lowercase().as_str() {
        "int" | "integer" => "int4".into(),
        "bigint" => "int8".into(),
        "smallint" => "int2".into(),
        "double precision" | "float8" => "float8".into(),
        "real" => "float4".into(),
        "boolean" | "bool" => "bool".into(),
        "text" => "text".into(),
        other => other
            .split('(')
            .next()
            .unwrap_or("?column?")
            .trim()
            .to_string(),
    }
}

fn first_column_name(q: &Query) -> Option<String> {
    match q.body.as_ref() {
        SetExpr::Select(s) => match s.projection.first()? {
            SelectItem::UnnamedExpr(e) => pg_column_name(e),
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
            _ => None,
        },
        SetExpr::Query(q) => first_column_name(q),
        _ => None,
    }
}

/// Aliases the top-level SELECT's unnamed, non-column expressions, and column references
/// whose name repeats; returns the names to show for them, by output position.
pub fn alias_result_columns(stmt: &mut Statement) -> Vec<(usize, String)> {
    match stmt {
        Statement::Query(query) => alias_query_columns(query),
        _ => vec![],
    }
}

/// `alias_result_columns` for a query (an INSERT's source, say).
pub fn alias_query_columns(query: &mut Query) -> Vec<(usize, String)> {
    let mut body = query.body.as_mut();
    let select = loop {
        match body {
            SetExpr::Select(s) => break s,
            SetExpr::SetOperation { left, .. } => body = left.as_mut(),
            SetExpr::Query(q) => body = q.body.as_mut(),
            _ => return vec![],
        }
    };
    if select.projection.iter().any(|i| {
        matches!(
            i,
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
        )
    }) {
        return vec![];
    }
    let column_name = |item: &SelectItem| match item {
        SelectItem::UnnamedExpr(e @ (Expr::Identifier(_) | Expr::CompoundIdentifier(_))) => {
            pg_column_name(e)
        }
        _ => None,
    };
    let columns: Vec<Option<String>> = select.projection.iter().map(column_name).collect();
    let repeated = |name: &String| columns.iter().flatten().filter(|n| *n == name).count() > 1;
    let mut renames = Vec::new();
    for (i, item) in select.projection.iter_mut().enumerate() {
        if let SelectItem::UnnamedExpr(expr) = item {
            let name = match &columns[i] {
                Some(column) if !repeated(column) => continue,
                Some(column) => column.clone(),
                None => pg_column_name(expr).unwrap_or_else(|| "?column?".into()),
            };
            *item = SelectItem::ExprWithAlias {
                expr: expr.clone(),
                alias: Ident::with_quote('"', format!("{INTERNAL_PREFIX}{i}")),
            };
            renames.push((i, name));
        }
    }
    renames
}

/// `FROM generate_series(1, 10) g` names the function's column `g`, as PostgreSQL does for
/// functions returning one column (DataFusion would call it `value`).
pub fn name_function_columns(stmt: &mut Statement) {
    use datafusion::sql::sqlparser::ast::{TableAliasColumnDef, TableFactor, VisitMut, VisitorMut};
    use std::ops::ControlFlow;
    struct Namer;
    impl VisitorMut for Namer {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table {
                name,
                args: Some(_),
                alias: Some(alias),
                ..
            } = factor
            {
                let is_series = name
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .is_some_and(|i| i.value.eq_ignore_ascii_case("generate_series"));
                if is_series && alias.columns.is_empty() {
                    alias.columns = vec![TableAliasColumnDef::from_name(alias.name.value.as_str())];
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Namer);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sql: &str) -> Vec<(usize, String)> {
        let mut stmt = crate::session::parse_sql(sql).unwrap().remove(0);
        alias_result_columns(&mut stmt)
    }

    #[test]
    fn names_follow_postgres() {
        assert_eq!(
            names(
                "SELECT a, count(*), a + 1, (SELECT max(b) FROM t), CASE WHEN a THEN 1 END, '1'::int, x::text FROM t"
            ),
            vec![
                (1, "count".into()),
                (2, "?column?".into()),
                (3, "max".into()),
                (4, "case".into()),
                (5, "int4".into()),
                (6, "x".into())
            ]
        );
        assert!(names("SELECT * FROM t").is_empty());
        // An outer cast's type names the column over an inner one's, not over a column's.
        assert_eq!(
            names("SELECT 2.5::float8::int, x::text::int, (1::int2)::bigint FROM t"),
            vec![(0, "int4".into()), (1, "x".into()), (2, "int8".into())]
        );
    }
}
