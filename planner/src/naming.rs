//! Result column names as PostgreSQL chooses them (its FigureColname): a column reference
//! names the column, a function call the function, CASE its ELSE's name or "case", a scalar
//! subquery its own first column, anything else "?column?". Unnamed expressions of the top-level SELECT are
//! given unique internal aliases before planning (DataFusion refuses two projections with the
//! same name, such as two sub-selects) and renamed back in the result schema.

use crate::error::{Error, Result};
use datafusion::sql::sqlparser::ast::{
    self, Expr, Ident, OrderByKind, Query, SelectItem, SetExpr, Statement,
};

const INTERNAL_PREFIX: &str = "__partita_col_";

/// The names to show for result columns planned under internal aliases.
#[derive(Debug, Default, PartialEq)]
pub struct ResultNames {
    /// By output position.
    pub positional: Vec<(usize, String)>,
    /// By internal alias: a select list with `*`, whose output positions are not known
    /// before planning.
    pub aliased: Vec<(String, String)>,
}

impl ResultNames {
    pub fn is_empty(&self) -> bool {
        self.positional.is_empty() && self.aliased.is_empty()
    }

    /// The name of output column `i`, planned as `planned`, when it is not that.
    pub fn name_of(&self, i: usize, planned: &str) -> Option<&str> {
        self.positional
            .iter()
            .find(|(p, _)| *p == i)
            .map(|(_, n)| n)
            .or_else(|| {
                self.aliased
                    .iter()
                    .find(|(a, _)| a == planned)
                    .map(|(_, n)| n)
            })
            .map(String::as_str)
    }
}

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
        // An OID-alias cast, which `pg_catalog` made a call: named as the cast would be.
        Expr::Function(f) if let Some(alias) = alias_cast_type(f) => {
            let ast::FunctionArguments::List(list) = &f.args else {
                return None;
            };
            match list.args.first() {
                Some(ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(inner))) => {
                    match figure_name(inner) {
                        Some((name, 2)) => (name, 2),
                        _ => (alias.into(), 1),
                    }
                }
                _ => (alias.into(), 1),
            }
        }
        // `row_to_json(ROW(…))`, written out as the row's object.
        Expr::Function(f)
            if [
                crate::json::functions::ROW_OBJECT,
                crate::json::functions::ROW_OBJECT_PRETTY,
            ]
            .contains(&f.name.to_string().as_str()) =>
        {
            ("row_to_json".into(), 2)
        }
        // `ROW(…)::text`, written as the record's output text, is named by the row.
        Expr::Function(f) if row_text(f) => ("row".into(), 2),
        // `json_agg(ROW(…))`, whose rows are separated as records are.
        Expr::Function(f) if f.name.to_string() == crate::json::functions::ROW_ARRAY => {
            ("json_agg".into(), 2)
        }
        Expr::Function(f) => (f.name.0.last()?.as_ident()?.value.to_lowercase(), 2),
        Expr::Nested(inner) => return figure_name(inner),
        // `(t).column`, `(x).field`: named by the field.
        Expr::CompoundFieldAccess { access_chain, .. }
            if let Some(ast::AccessExpr::Dot(Expr::Identifier(field))) = access_chain.last() =>
        {
            (field.value.clone(), 2)
        }
        // PostgreSQL's grammar makes it a call of overlaps().
        Expr::BinaryOp {
            op: ast::BinaryOperator::Overlaps,
            ..
        } => ("overlaps".into(), 2),
        Expr::Cast {
            expr, data_type, ..
        } => match figure_name(expr) {
            Some((name, 2)) => (name, 2),
            _ => (cast_type_name(&data_type.to_string()), 1),
        },
        // A CASE is named by its ELSE result when that names itself for good.
        Expr::Case { else_result, .. } => match else_result.as_deref().and_then(figure_name) {
            Some((name, 2)) => (name, 2),
            _ => ("case".into(), 1),
        },
        Expr::Tuple(_) => ("row".into(), 2),
        // The SQL-syntax forms of functions are named by the function PostgreSQL calls.
        Expr::Position { .. } => ("position".into(), 2),
        Expr::Substring { shorthand, .. } => {
            (if *shorthand { "substr" } else { "substring" }.into(), 2)
        }
        Expr::Overlay { .. } => ("overlay".into(), 2),
        Expr::Trim { trim_where, .. } => (
            match trim_where {
                Some(ast::TrimWhereField::Leading) => "ltrim",
                Some(ast::TrimWhereField::Trailing) => "rtrim",
                _ => "btrim",
            }
            .into(),
            2,
        ),
        Expr::Ceil { .. } => ("ceil".into(), 2),
        Expr::Floor { .. } => ("floor".into(), 2),
        Expr::Extract { .. } => ("extract".into(), 2),
        Expr::AtTimeZone { .. } => ("timezone".into(), 2),
        Expr::TypedString(t) => (cast_type_name(&t.data_type.to_string()), 1),
        Expr::Interval(_) => ("interval".into(), 1),
        Expr::Array(_) => ("array".into(), 2),
        // `(ARRAY[1, 2])[1]` is named by what it subscripts.
        Expr::CompoundFieldAccess { root, .. } => return figure_name(root),
        Expr::Exists { .. } => ("exists".into(), 2),
        Expr::Subquery(q) => (first_column_name(q)?, 2),
        _ => return None,
    })
}

/// Whether `f` is a row constructor's output text (`ROW(1, 'a')::text`, see
/// `rows::row_constructors`).
fn row_text(f: &ast::Function) -> bool {
    let ast::FunctionArguments::List(list) = &f.args else {
        return false;
    };
    f.name.to_string() == crate::output::OUTPUT_TEXT
        && match list.args.as_slice() {
            [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] => match arg {
                Expr::Tuple(_) => true,
                Expr::Function(g) => g.name.to_string().eq_ignore_ascii_case("row"),
                _ => false,
            },
            _ => false,
        }
}

/// The OID-alias type (regclass, regtype, regnamespace) whose cast a call stands for (or
/// `text`, for a regclass cast to text).
fn alias_cast_type(f: &ast::Function) -> Option<&'static str> {
    match f.name.0.last()?.as_ident()?.value.as_str() {
        "partita_relname" | "partita_regclass" => Some("regclass"),
        "partita_typname" | "partita_regtype" => Some("regtype"),
        "partita_nspname" => Some("regnamespace"),
        // `x::regclass::text`.
        "partita_regclass_name" => Some("text"),
        _ => None,
    }
}

fn cast_type_name(ty: &str) -> String {
    // An array type is named by its element type (`x::int[]` is "int4").
    if let Some(element) = ty.trim().strip_suffix("[]") {
        return cast_type_name(element);
    }
    match ty.to_ascii_lowercase().as_str() {
        "int" | "integer" => "int4".into(),
        "bigint" => "int8".into(),
        "smallint" => "int2".into(),
        "double precision" | "float8" => "float8".into(),
        "real" => "float4".into(),
        "boolean" | "bool" => "bool".into(),
        "text" => "text".into(),
        other => match other.split('(').next().unwrap_or("").trim() {
            "character varying" | "varchar" => "varchar".into(),
            "decimal" | "dec" => "numeric".into(),
            "character" | "char" => "bpchar".into(),
            "timestamp with time zone" => "timestamptz".into(),
            "timestamp" | "timestamp without time zone" => "timestamp".into(),
            _ => other
                .split('(')
                .next()
                .unwrap_or("?column?")
                .trim()
                .to_string(),
        },
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

/// Aliases the top-level SELECT's unnamed, non-column expressions, and the items whose
/// output name repeats (`SELECT t.id, u.id`, `SELECT a, b AS a`, two items `AS n`); returns
/// the names to show for them, by output position. An ORDER BY of a repeated name sorts by
/// the first of them when they are one expression, and is an error (42702) otherwise, as in
/// PostgreSQL.
pub fn alias_result_columns(stmt: &mut Statement) -> Result<ResultNames> {
    match stmt {
        Statement::Query(query) => alias_query_columns(query),
        _ => Ok(ResultNames::default()),
    }
}

/// An identifier as PostgreSQL folds it: unquoted names are lower-cased.
fn folded(id: &Ident) -> String {
    match id.quote_style {
        Some(_) => id.value.clone(),
        None => id.value.to_lowercase(),
    }
}

/// `expr` with its unquoted identifiers lower-cased, to compare expressions as PostgreSQL
/// sees them (`a` and `A` are one column).
fn identifiers_folded(expr: &Expr) -> Expr {
    use datafusion::sql::sqlparser::ast::{VisitMut, VisitorMut};
    use std::ops::ControlFlow;
    struct Fold;
    impl VisitorMut for Fold {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            let fold = |id: &mut Ident| {
                if id.quote_style.is_none() {
                    id.value = id.value.to_lowercase();
                }
            };
            match expr {
                Expr::Identifier(id) => fold(id),
                Expr::CompoundIdentifier(parts) => parts.iter_mut().for_each(fold),
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut expr = expr.clone();
    let _ = expr.visit(&mut Fold);
    expr
}

/// `alias_result_columns` for a query (an INSERT's source, say).
pub fn alias_query_columns(query: &mut Query) -> Result<ResultNames> {
    let mut body = query.body.as_mut();
    let select = loop {
        match body {
            SetExpr::Select(s) => break s,
            SetExpr::SetOperation { left, .. } => body = left.as_mut(),
            SetExpr::Query(q) => body = q.body.as_mut(),
            _ => return Ok(ResultNames::default()),
        }
    };
    if select.projection.iter().any(|i| {
        matches!(
            i,
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
        )
    }) {
        // `SELECT *, count(*) OVER ()`, `SELECT *, g`: the expressions beside `*` are named
        // by their internal aliases (the columns `*` gives are not known yet, and may repeat
        // theirs).
        let mut aliased = Vec::new();
        for (i, item) in select.projection.iter_mut().enumerate() {
            if let SelectItem::UnnamedExpr(expr) = item {
                let alias = format!("{INTERNAL_PREFIX}{i}");
                let name = match expr {
                    Expr::Identifier(id) => folded(id),
                    Expr::CompoundIdentifier(parts) => parts.last().map(folded).unwrap_or_default(),
                    _ => pg_column_name(expr).unwrap_or_else(|| "?column?".into()),
                };
                *item = SelectItem::ExprWithAlias {
                    expr: expr.clone(),
                    alias: Ident::with_quote('"', alias.clone()),
                };
                aliased.push((alias, name));
            }
        }
        return Ok(ResultNames {
            positional: vec![],
            aliased,
        });
    }
    // Each item's output name where it has one for sure: a column's, or its alias.
    let names: Vec<Option<String>> = select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(Expr::Identifier(id)) => Some(folded(id)),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => parts.last().map(folded),
            SelectItem::ExprWithAlias { alias, .. } => Some(folded(alias)),
            _ => None,
        })
        .collect();
    let repeated = |name: &String| names.iter().flatten().filter(|n| *n == name).count() > 1;
    // ORDER BY a repeated name: the items must be one expression; it then sorts by the first.
    let mut order_targets = Vec::new();
    if let Some(order) = &query.order_by
        && let OrderByKind::Expressions(items) = &order.kind
    {
        for (k, item) in items.iter().enumerate() {
            let Expr::Identifier(id) = &item.expr else {
                continue;
            };
            let name = folded(id);
            if !repeated(&name) {
                continue;
            }
            let mut exprs = select
                .projection
                .iter()
                .zip(&names)
                .filter(|(_, n)| n.as_ref() == Some(&name))
                .map(|(item, _)| match item {
                    SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                        identifiers_folded(e)
                    }
                    _ => unreachable!("only named items have a name"),
                });
            let first = exprs.next().expect("a repeated name names items");
            if exprs.any(|e| e != first) {
                return Err(Error::AmbiguousColumn(format!(
                    "ORDER BY \"{name}\" is ambiguous"
                )));
            }
            let position = names.iter().position(|n| n.as_ref() == Some(&name));
            order_targets.push((k, position.expect("a repeated name names items")));
        }
    }
    let internal = |i: usize| Ident::with_quote('"', format!("{INTERNAL_PREFIX}{i}"));
    let mut renames = Vec::new();
    for (i, item) in select.projection.iter_mut().enumerate() {
        match item {
            SelectItem::UnnamedExpr(expr) => {
                let name = match &names[i] {
                    Some(column) if !repeated(column) => continue,
                    Some(column) => column.clone(),
                    None => pg_column_name(expr).unwrap_or_else(|| "?column?".into()),
                };
                *item = SelectItem::ExprWithAlias {
                    expr: expr.clone(),
                    alias: internal(i),
                };
                renames.push((i, name));
            }
            SelectItem::ExprWithAlias { alias, .. } => {
                let name = folded(alias);
                if repeated(&name) {
                    *alias = internal(i);
                    renames.push((i, name));
                }
            }
            _ => {}
        }
    }
    if let Some(order) = &mut query.order_by
        && let OrderByKind::Expressions(items) = &mut order.kind
    {
        for (k, position) in order_targets {
            items[k].expr = Expr::Identifier(internal(position));
        }
    }
    Ok(ResultNames {
        positional: renames,
        aliased: vec![],
    })
}

/// `FROM generate_series(1, 10) g` names the function's column `g`, as PostgreSQL does for
/// functions returning one column (DataFusion would call it `value`); so does `unnest`. A
/// WITH query's or derived table's column list names its query's columns where their own
/// names repeat (`WITH r(a, b) AS (SELECT 1, 1)`), which DataFusion would refuse.
pub fn name_function_columns(stmt: &mut Statement) {
    use datafusion::sql::sqlparser::ast::{TableAliasColumnDef, TableFactor, VisitMut, VisitorMut};
    use std::ops::ControlFlow;
    struct Namer;
    impl VisitorMut for Namer {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            for cte in query.with.iter_mut().flat_map(|w| w.cte_tables.iter_mut()) {
                complete_column_list(cte.query.body.as_ref(), &mut cte.alias.columns);
                name_listed_columns(cte.query.body.as_mut(), &cte.alias.columns);
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if let TableFactor::Derived {
                subquery, alias, ..
            } = factor
            {
                if let Some(alias) = alias.as_mut() {
                    complete_column_list(subquery.body.as_ref(), &mut alias.columns);
                }
                let columns = alias.as_ref().map_or(&[][..], |a| &a.columns[..]);
                name_listed_columns(subquery.body.as_mut(), columns);
            }
            if let TableFactor::Table {
                name,
                args: Some(_),
                alias,
                ..
            } = factor
                && name
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .is_some_and(|i| i.value.eq_ignore_ascii_case("generate_series"))
            {
                let alias =
                    alias.get_or_insert_with(|| datafusion::sql::sqlparser::ast::TableAlias {
                        explicit: true,
                        name: Ident::new("generate_series"),
                        columns: vec![],
                        at: None,
                    });
                if alias.columns.is_empty() {
                    alias.columns = vec![TableAliasColumnDef::from_name(alias.name.value.as_str())];
                }
            }
            // `FROM unnest(a) x` likewise; without an alias its column is "unnest".
            if let TableFactor::UNNEST {
                alias, array_exprs, ..
            } = factor
                && array_exprs.len() == 1
            {
                let alias =
                    alias.get_or_insert_with(|| datafusion::sql::sqlparser::ast::TableAlias {
                        explicit: true,
                        name: Ident::new("unnest"),
                        columns: vec![],
                        at: None,
                    });
                if alias.columns.is_empty() {
                    alias.columns = vec![TableAliasColumnDef::from_name(alias.name.value.as_str())];
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Namer);
}

/// A column list shorter than the query's columns (`s(a, b)` over three) names the rest by
/// their own names, as PostgreSQL does (DataFusion wants every one named).
fn complete_column_list(body: &SetExpr, columns: &mut Vec<ast::TableAliasColumnDef>) {
    if columns.is_empty() {
        return;
    }
    let select = match body {
        SetExpr::Select(select) => select,
        SetExpr::SetOperation { left, .. } => return complete_column_list(left, columns),
        SetExpr::Query(q) => return complete_column_list(q.body.as_ref(), columns),
        _ => return,
    };
    let mut rest = Vec::new();
    for item in select.projection.iter().skip(columns.len()) {
        rest.push(match item {
            SelectItem::UnnamedExpr(Expr::Identifier(id)) => folded(id),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                parts.last().map(folded).unwrap_or_default()
            }
            SelectItem::UnnamedExpr(e) => pg_column_name(e).unwrap_or_else(|| "?column?".into()),
            SelectItem::ExprWithAlias { alias, .. } => folded(alias),
            // The columns `*` gives are not known here.
            _ => return,
        });
    }
    columns.extend(rest.into_iter().map(|name| ast::TableAliasColumnDef {
        name: Ident::with_quote('"', name),
        data_type: None,
    }));
}

/// Aliases the select lists of `body` (each branch of a set operation) by `columns` when
/// their output names repeat; without `columns`, by PostgreSQL's names, a repeated one
/// suffixed `:n` as DataFusion suffixes the columns `*` reads twice (the result shows them
/// without).
fn name_listed_columns(body: &mut SetExpr, columns: &[ast::TableAliasColumnDef]) {
    let select = match body {
        SetExpr::Select(select) => select,
        SetExpr::SetOperation { left, right, .. } => {
            name_listed_columns(left, columns);
            return name_listed_columns(right, columns);
        }
        SetExpr::Query(q) => return name_listed_columns(q.body.as_mut(), columns),
        _ => return,
    };
    // The name DataFusion gives each item: a column's, an alias, or the expression's text.
    let mut names = Vec::with_capacity(select.projection.len());
    for item in &select.projection {
        names.push(match item {
            SelectItem::UnnamedExpr(Expr::Identifier(id)) => folded(id),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                parts.last().map(folded).unwrap_or_default()
            }
            SelectItem::UnnamedExpr(e) => e.to_string(),
            SelectItem::ExprWithAlias { alias, .. } => folded(alias),
            // The columns `*` gives are not known here.
            _ => return,
        });
    }
    if !names
        .iter()
        .enumerate()
        .any(|(i, n)| names[..i].contains(n))
    {
        return;
    }
    if columns.is_empty() {
        let mut given: Vec<String> = Vec::with_capacity(names.len());
        for item in select.projection.iter_mut() {
            let name = match item {
                SelectItem::UnnamedExpr(Expr::Identifier(id)) => folded(id),
                SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                    parts.last().map(folded).unwrap_or_default()
                }
                SelectItem::UnnamedExpr(e) => {
                    pg_column_name(e).unwrap_or_else(|| "?column?".into())
                }
                SelectItem::ExprWithAlias { alias, .. } => folded(alias),
                _ => return,
            };
            let repeats = given.iter().filter(|g| **g == name).count();
            let unique = match repeats {
                0 => name.clone(),
                n => format!("{name}:{n}"),
            };
            given.push(name);
            match item {
                SelectItem::UnnamedExpr(expr) => {
                    *item = SelectItem::ExprWithAlias {
                        expr: expr.clone(),
                        alias: Ident::with_quote('"', unique),
                    }
                }
                SelectItem::ExprWithAlias { alias, .. } if repeats > 0 => {
                    *alias = Ident::with_quote('"', unique)
                }
                _ => {}
            }
        }
        return;
    }
    for (item, column) in select.projection.iter_mut().zip(columns) {
        match item {
            SelectItem::UnnamedExpr(expr) => {
                *item = SelectItem::ExprWithAlias {
                    expr: expr.clone(),
                    alias: column.name.clone(),
                }
            }
            SelectItem::ExprWithAlias { alias, .. } => *alias = column.name.clone(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sql: &str) -> Vec<(usize, String)> {
        let mut stmt = crate::session::parse_sql(sql).unwrap().remove(0);
        alias_result_columns(&mut stmt).unwrap().positional
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
        // Beside `*`, an expression is named through its internal alias.
        let mut stmt = crate::session::parse_sql("SELECT *, upper(g), ID, t.* FROM t")
            .unwrap()
            .remove(0);
        let named = alias_result_columns(&mut stmt).unwrap();
        assert_eq!(
            named.aliased,
            vec![
                (format!("{INTERNAL_PREFIX}1"), "upper".to_string()),
                (format!("{INTERNAL_PREFIX}2"), "id".to_string())
            ]
        );
        assert_eq!(
            named.name_of(7, &format!("{INTERNAL_PREFIX}1")),
            Some("upper")
        );
        // An outer cast's type names the column over an inner one's, not over a column's.
        assert_eq!(
            names("SELECT 2.5::float8::int, x::text::int, (1::int2)::bigint FROM t"),
            vec![(0, "int4".into()), (1, "x".into()), (2, "int8".into())]
        );
    }

    #[test]
    fn repeated_output_names_are_aliased_and_order_by_follows() {
        let mut stmt = crate::session::parse_sql("SELECT a AS x, A AS X, b FROM t ORDER BY x")
            .unwrap()
            .remove(0);
        let renames = alias_result_columns(&mut stmt).unwrap();
        assert_eq!(renames.positional, vec![(0, "x".into()), (1, "x".into())]);
        let text = stmt.to_string();
        assert!(
            text.ends_with(&format!("ORDER BY \"{INTERNAL_PREFIX}0\"")),
            "{text}"
        );

        for ambiguous in [
            "SELECT a, b AS a FROM t ORDER BY a",
            "SELECT t.a, u.a FROM t, u ORDER BY a",
        ] {
            let mut stmt = crate::session::parse_sql(ambiguous).unwrap().remove(0);
            let err = alias_result_columns(&mut stmt).unwrap_err();
            assert_eq!(err.to_string(), "ORDER BY \"a\" is ambiguous");
        }
    }
}
