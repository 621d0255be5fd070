//! A subquery in FROM with LIMIT or OFFSET that reads an earlier FROM item's columns through
//! equalities: the top N rows per outer row, as ORMs load relations with a limit (Drizzle's
//! and Prisma's relation queries, `LEFT JOIN LATERAL (SELECT … WHERE p.author_id = u.id
//! ORDER BY … LIMIT 3) … ON true`). DataFusion decorrelates such a subquery only without a
//! LIMIT, so the subquery numbers its rows per correlation key instead, uncorrelated, and
//! the correlation and the limit become conditions of a query around it:
//!
//! ```sql
//! SELECT * FROM (
//!     SELECT … FROM posts p WHERE <the other conditions>
//!     QUALIFY row_number() OVER (PARTITION BY p.author_id ORDER BY …) > <offset>
//!         AND row_number() OVER (…) - <offset> <= <limit>) AS p
//! WHERE p.author_id = u.id
//! ```
//!
//! which DataFusion decorrelates as it does a subquery without LIMIT: each outer row gets
//! the rows of its key, numbered in the subquery's ORDER BY, as PostgreSQL's LIMIT per row
//! gives. The numbered query has the columns the subquery had. A key the subquery does not
//! list (`SELECT title … WHERE p.author_id = u.id`) is added to them and left out by
//! naming the rest around, in a LATERAL item's own subquery only.
//!
//! Only what is surely the same is rewritten: the correlation must be `inner = outer`
//! equalities of WHERE, and nothing else may read an outer item at any depth; no GROUP BY,
//! DISTINCT, aggregates, set-returning or window functions, and an ORDER BY whose names and
//! positions can be told. Anything else stays as it is (and DataFusion refuses it). An
//! unqualified column is taken as the subquery's own.

use datafusion::sql::sqlparser::ast::{
    self, BinaryOperator, Expr, Ident, LimitClause, Query, SelectItem, SetExpr, TableFactor,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use std::ops::ControlFlow;

/// The prefix of the key columns the rewrite adds, and the numbered rows' alias when the
/// subquery has none.
/// A placeholder for the numbering in the QUALIFY text.
const ROW_NUMBER: &str = "__partita_rn";
const KEY: &str = "__partita_key_";
const ALIAS: &str = "__partita_top";

/// Rewrites each subquery in `select`'s FROM (relations and joins) that takes the top rows
/// per outer row.
pub(crate) fn rewrite_from(select: &mut ast::Select) {
    for item in &mut select.from {
        let factors = std::iter::once(&mut item.relation)
            .chain(item.joins.iter_mut().map(|j| &mut j.relation));
        for factor in factors {
            if let TableFactor::Derived {
                subquery,
                lateral,
                alias,
                ..
            } = factor
                && let Some(rewritten) = top_rows(subquery, *lateral, alias.as_ref())
            {
                **subquery = rewritten;
            }
        }
    }
}

/// The names a FROM item and the items nested in its joins are qualified with, folded;
/// `None` when one has no name its columns could be qualified with.
fn item_names(factor: &TableFactor, out: &mut Vec<String>) -> Option<()> {
    match factor {
        TableFactor::NestedJoin {
            table_with_joins,
            alias,
        } => {
            if let Some(alias) = alias {
                out.push(folded(&alias.name));
            }
            item_names(&table_with_joins.relation, out)?;
            for join in &table_with_joins.joins {
                item_names(&join.relation, out)?;
            }
            Some(())
        }
        TableFactor::Table { alias: Some(a), .. }
        | TableFactor::Derived { alias: Some(a), .. }
        | TableFactor::Function { alias: Some(a), .. }
        | TableFactor::UNNEST { alias: Some(a), .. } => {
            out.push(folded(&a.name));
            Some(())
        }
        TableFactor::Table { name, .. } => {
            out.push(folded(name.0.last()?.as_ident()?));
            Some(())
        }
        _ => None,
    }
}

fn folded(id: &Ident) -> String {
    match id.quote_style {
        Some(_) => id.value.clone(),
        None => id.value.to_lowercase(),
    }
}

/// The qualifiers of the columns `e` names outside subqueries, and whether it names a
/// column without one.
fn qualifiers(e: &Expr) -> (Vec<String>, bool) {
    let mut found = Vec::new();
    let mut bare = false;
    crate::lateral::top_level_exprs(e, &mut |e| match e {
        Expr::CompoundIdentifier(parts) if parts.len() > 1 => {
            found.push(folded(&parts[parts.len() - 2]))
        }
        Expr::Identifier(_) => bare = true,
        _ => {}
    });
    (found, bare)
}

/// Whether `e` names a column of an item that is not one of `own`.
fn reads_outer(e: &Expr, own: &[String]) -> bool {
    qualifiers(e).0.iter().any(|q| !own.contains(q))
}

/// Whether a query reads only its own FROM items' columns, at any depth: every qualifier
/// it uses is the name of a FROM item somewhere inside it. (A name a nested query gives its
/// own item counts everywhere: it only makes the check more lenient where a query reuses
/// an inner name outside, which PostgreSQL would refuse.)
fn self_contained(query: &Query) -> bool {
    struct Names {
        defined: Vec<String>,
        used: Vec<String>,
    }
    impl ast::Visitor for Names {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            // An unnamed item (an unaliased derived table) gives no qualifier.
            if !matches!(factor, TableFactor::NestedJoin { .. }) {
                let _ = item_names(factor, &mut self.defined);
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::CompoundIdentifier(parts) = e
                && parts.len() > 1
            {
                self.used.push(folded(&parts[parts.len() - 2]));
            }
            ControlFlow::Continue(())
        }
    }
    let mut names = Names {
        defined: Vec::new(),
        used: Vec::new(),
    };
    let _ = ast::Visit::visit(query, &mut names);
    names.used.iter().all(|q| names.defined.contains(q))
}

/// Aggregate functions: a select list of one makes one row per group.
pub(crate) const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "array_agg",
    "string_agg",
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "jsonb_object_agg",
    "bool_and",
    "bool_or",
    "every",
    "bit_and",
    "bit_or",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "percentile_cont",
    "percentile_disc",
    "mode",
    "corr",
    "covar_pop",
    "covar_samp",
];

/// Set-returning functions: a select list of one makes more rows than its input.
pub(crate) const SET_RETURNING: &[&str] = &[
    "unnest",
    "generate_series",
    "generate_subscripts",
    "json_array_elements",
    "jsonb_array_elements",
    "json_array_elements_text",
    "jsonb_array_elements_text",
    "json_each",
    "jsonb_each",
    "json_each_text",
    "jsonb_each_text",
    "json_object_keys",
    "jsonb_object_keys",
    "regexp_matches",
    "regexp_split_to_table",
    "pg_listening_channels",
];

/// Whether `e` calls an aggregate, window or set-returning function outside subqueries.
fn not_row_for_row(e: &Expr) -> bool {
    let mut found = false;
    crate::lateral::top_level_exprs(e, &mut |e| {
        if let Expr::Function(f) = e {
            let name = f
                .name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(folded)
                .unwrap_or_default();
            found |= f.over.is_some()
                || AGGREGATES.contains(&name.as_str())
                || SET_RETURNING.contains(&name.as_str());
        }
    });
    found
}

/// Whether `e` names any column (a LIMIT or OFFSET must be a constant or parameter here).
fn names_any_column(e: &Expr) -> bool {
    let mut found = false;
    let _ = ast::visit_expressions(e, |e| {
        found |= matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
        ControlFlow::<()>::Continue(())
    });
    found
}

/// The rewritten query for a subquery that takes the top rows per outer row, or `None`.
///
/// `lateral`: the subquery is a LATERAL item itself, not nested in one. A key the subquery
/// does not list must then be added to its columns and left out around; nested in one,
/// DataFusion's decorrelation reads the key above the subquery, so a key it does not list
/// leaves the subquery as it is.
///
/// The numbered rows take the subquery's own alias (`alias`): DataFusion's decorrelation
/// reads a correlation through one more alias in between as an outer reference it cannot
/// run.
fn top_rows(query: &Query, lateral: bool, alias: Option<&ast::TableAlias>) -> Option<Query> {
    let Some(LimitClause::LimitOffset {
        limit,
        offset,
        limit_by,
    }) = &query.limit_clause
    else {
        return None;
    };
    if !limit_by.is_empty()
        || query.with.is_some()
        || query.fetch.is_some()
        || !query.locks.is_empty()
        || limit.as_ref().is_some_and(names_any_column)
        || offset.as_ref().is_some_and(|o| names_any_column(&o.value))
    {
        return None;
    }
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let grouped = !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
    if grouped
        || select.having.is_some()
        || select.distinct.is_some()
        || select.qualify.is_some()
        || !select.named_window.is_empty()
        || select.top.is_some()
        || select.into.is_some()
    {
        return None;
    }
    let mut own: Vec<String> = Vec::new();
    for twj in &select.from {
        item_names(&twj.relation, &mut own)?;
        for join in &twj.joins {
            item_names(&join.relation, &mut own)?;
        }
    }
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                if not_row_for_row(e) {
                    return None;
                }
            }
            // `u.*` of an outer item would stay under the numbering.
            SelectItem::QualifiedWildcard(
                ast::SelectItemQualifiedWildcardKind::ObjectName(name),
                _,
            ) => {
                let qualifier = name.0.last()?.as_ident()?;
                if !own.contains(&folded(qualifier)) {
                    return None;
                }
            }
            SelectItem::Wildcard(_) => {}
            _ => return None,
        }
    }
    // Split WHERE into the correlation (inner = outer) and the rest.
    let mut all = Vec::new();
    if let Some(selection) = &select.selection {
        crate::fastpath::split_and(selection, &mut all);
    }
    let all: Vec<Expr> = all.into_iter().cloned().collect();
    let mut keys: Vec<(Expr, Expr)> = Vec::new();
    let mut rest = Vec::new();
    for c in all {
        if !reads_outer(&c, &own) {
            rest.push(c);
            continue;
        }
        let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = &c
        else {
            return None;
        };
        let outer_only = |e: &Expr| {
            let (q, bare) = qualifiers(e);
            !bare && !q.is_empty() && q.iter().all(|q| !own.contains(q))
        };
        let inner_only = |e: &Expr| !reads_outer(e, &own);
        if outer_only(right) && inner_only(left) {
            keys.push((*left.clone(), *right.clone()));
        } else if outer_only(left) && inner_only(right) {
            keys.push((*right.clone(), *left.clone()));
        } else {
            return None;
        }
    }
    if keys.is_empty() {
        return None;
    }
    // The numbered rows take the subquery's alias; an outer side naming it would be
    // captured.
    let numbered = match alias {
        Some(alias) if alias.columns.is_empty() => alias.name.clone(),
        Some(_) => return None,
        None => Ident::new(ALIAS),
    };
    if keys
        .iter()
        .any(|(_, outer)| qualifiers(outer).0.contains(&folded(&numbered)))
    {
        return None;
    }
    // The window's order: the subquery's ORDER BY, with output names and positions read
    // as the expressions they stand for.
    let mut order = Vec::new();
    if let Some(order_by) = &query.order_by {
        let ast::OrderByKind::Expressions(items) = &order_by.kind else {
            return None;
        };
        for item in items {
            if reads_outer(&item.expr, &own) || not_row_for_row(&item.expr) {
                return None;
            }
            let mut item = item.clone();
            item.expr = output_expression(&item.expr, &select.projection)?;
            order.push(item);
        }
    }
    // What is left must read nothing outside the subquery, at any depth: a correlated
    // condition under the numbering would number rows it later removes.
    let mut numbered_select = select.as_ref().clone();
    // Each condition in parentheses: printed and read again (a stored view's text), an OR
    // inside one must stay inside.
    numbered_select.selection =
        rest.into_iter()
            .map(|c| Expr::Nested(Box::new(c)))
            .reduce(|a, b| Expr::BinaryOp {
                left: Box::new(a),
                op: BinaryOperator::And,
                right: Box::new(b),
            });
    let mut check = query.clone();
    *check.body = SetExpr::Select(Box::new(numbered_select.clone()));
    if let Some(order_by) = &mut check.order_by {
        order_by.kind = ast::OrderByKind::Expressions(order.clone());
    }
    check.limit_clause = None;
    if !self_contained(&check) {
        return None;
    }
    // Each key as the rows around read it: a column the subquery lists, or one added.
    let single = select.from.len() == 1 && select.from[0].joins.is_empty();
    let mut added = Vec::new();
    let mut key_columns = Vec::new();
    for (n, (key, _)) in keys.iter().enumerate() {
        match listed_as(key, &select.projection, single) {
            Some(name) => key_columns.push(name),
            None => {
                let name = Ident::new(format!("{KEY}{}", n + 1));
                numbered_select.projection.push(SelectItem::ExprWithAlias {
                    expr: key.clone(),
                    alias: name.clone(),
                });
                key_columns.push(name.clone());
                added.push(name);
            }
        }
    }
    // An added key is left out around by listing the subquery's columns, which needs them
    // named, and only a LATERAL item's own columns may drop it (see above).
    let names = match added.is_empty() {
        true => None,
        false if !lateral => return None,
        false => {
            // Expressions without a name get PostgreSQL's, so they can be listed.
            for item in numbered_select.projection.iter_mut() {
                if let SelectItem::UnnamedExpr(e) = item
                    && !matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
                {
                    let name =
                        crate::naming::pg_column_name(e).unwrap_or_else(|| "?column?".into());
                    *item = SelectItem::ExprWithAlias {
                        expr: e.clone(),
                        alias: Ident::with_quote('"', name),
                    };
                }
            }
            let mut names = output_names(&numbered_select.projection)?;
            names.truncate(names.len() - added.len());
            Some(names)
        }
    };
    // The numbering, as a QUALIFY condition: no column of its own.
    let window = |text: &str| -> Option<Expr> {
        let partition: Vec<String> = keys.iter().map(|(inner, _)| inner.to_string()).collect();
        let order: Vec<String> = order.iter().map(|o| o.to_string()).collect();
        let order = match order.is_empty() {
            true => String::new(),
            false => format!(" ORDER BY {}", order.join(", ")),
        };
        let sql = text.replace(
            ROW_NUMBER,
            &format!(
                "row_number() OVER (PARTITION BY {}{order})",
                partition.join(", ")
            ),
        );
        Parser::new(&PostgreSqlDialect {})
            .try_with_sql(&sql)
            .ok()?
            .parse_expr()
            .ok()
    };
    // NULL (and LIMIT ALL) is no limit and offset 0, as in PostgreSQL; the difference with
    // the offset keeps a large limit from overflowing.
    let offset = offset
        .as_ref()
        .map(|o| format!("coalesce(CAST(({}) AS bigint), 0)", o.value));
    let qualify = match (limit, &offset) {
        (Some(limit), Some(offset)) => format!(
            "{ROW_NUMBER} > {offset} AND {ROW_NUMBER} - {offset} <= coalesce(CAST(({limit}) AS bigint), {ROW_NUMBER})"
        ),
        (Some(limit), None) => {
            format!("{ROW_NUMBER} <= coalesce(CAST(({limit}) AS bigint), {ROW_NUMBER})")
        }
        (None, Some(offset)) => format!("{ROW_NUMBER} > {offset}"),
        (None, None) => return None,
    };
    numbered_select.qualify = Some(window(&qualify)?);
    // Around: the rows of the outer row's keys.
    let projection = match &names {
        // Quoted: a bare `user` or `current_date` would read as a function.
        Some(names) => names
            .iter()
            .map(|n| Ident::with_quote('"', folded(n)).to_string())
            .collect::<Vec<_>>()
            .join(", "),
        None => "*".to_string(),
    };
    let conditions: Vec<String> = keys
        .iter()
        .zip(&key_columns)
        .map(|((_, outer), column)| {
            let column = Ident::with_quote('"', folded(column));
            format!("{numbered}.{column} = {outer}")
        })
        .collect();
    let text = format!(
        "SELECT {projection} FROM (SELECT 1) AS {numbered} WHERE {}",
        conditions.join(" AND ")
    );
    let mut rewritten = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&text)
        .ok()?
        .parse_query()
        .ok()?;
    let SetExpr::Select(around) = rewritten.body.as_mut() else {
        return None;
    };
    let TableFactor::Derived { subquery, .. } = &mut around.from.first_mut()?.relation else {
        return None;
    };
    *subquery.body = SetExpr::Select(Box::new(numbered_select));
    Some(*rewritten)
}

/// The names of a select list's columns, when it has no `*` and they are distinct.
fn output_names(projection: &[SelectItem]) -> Option<Vec<Ident>> {
    let mut names = Vec::new();
    for item in projection {
        names.push(match item {
            SelectItem::ExprWithAlias { alias, .. } => alias.clone(),
            SelectItem::UnnamedExpr(Expr::Identifier(c)) => c.clone(),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => parts.last()?.clone(),
            _ => return None,
        });
    }
    let mut seen: Vec<String> = names.iter().map(folded).collect();
    seen.sort();
    seen.dedup();
    (seen.len() == names.len()).then_some(names)
}

/// The output column of the select list that is the key column `key` (`t.k` or `k`): an
/// item naming it, or a `*` (over the subquery's one FROM item, `single`) or `t.*` that
/// lists it. `None` for a key that is an expression or not listed.
fn listed_as(key: &Expr, projection: &[SelectItem], single: bool) -> Option<Ident> {
    let (qualifier, column) = match key {
        Expr::Identifier(c) => (None, c),
        Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
            (Some(&parts[parts.len() - 2]), &parts[parts.len() - 1])
        }
        _ => return None,
    };
    let same_column = |e: &Expr| match e {
        Expr::Identifier(c) => folded(c) == folded(column),
        Expr::CompoundIdentifier(parts) => {
            parts.last().is_some_and(|c| folded(c) == folded(column))
                && match (qualifier, parts.len()) {
                    (Some(q), n) if n >= 2 => folded(&parts[n - 2]) == folded(q),
                    _ => single,
                }
        }
        _ => false,
    };
    projection.iter().find_map(|item| match item {
        SelectItem::Wildcard(options) if single && options.opt_exclude.is_none() => {
            Some(column.clone())
        }
        SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(q), _)
            if qualifier.is_some_and(|k| {
                q.0.last()
                    .and_then(|p| p.as_ident())
                    .is_some_and(|p| folded(p) == folded(k))
            }) =>
        {
            Some(column.clone())
        }
        SelectItem::UnnamedExpr(e) if same_column(e) => Some(column.clone()),
        SelectItem::ExprWithAlias { expr, alias } if same_column(expr) => Some(alias.clone()),
        _ => None,
    })
}

/// The expression an ORDER BY item sorts by: the select-list expression it names by an
/// output name (explicit or implicit, as PostgreSQL matches output names first) or by
/// position, or the item itself. `None` when that cannot be told (a position at or past a
/// `*`, a name two different columns have).
fn output_expression(e: &Expr, projection: &[SelectItem]) -> Option<Expr> {
    match e {
        Expr::Identifier(name) => {
            let mut found: Option<&Expr> = None;
            for item in projection {
                let (expr, output) = match item {
                    SelectItem::ExprWithAlias { expr, alias } => (expr, Some(folded(alias))),
                    SelectItem::UnnamedExpr(expr) => (
                        expr,
                        match expr {
                            Expr::Identifier(c) => Some(folded(c)),
                            Expr::CompoundIdentifier(parts) => parts.last().map(folded),
                            e => crate::naming::pg_column_name(e),
                        },
                    ),
                    _ => continue,
                };
                if output.as_deref() == Some(folded(name).as_str()) {
                    if found.is_some_and(|f| f != expr) {
                        return None;
                    }
                    found = Some(expr);
                }
            }
            Some(found.cloned().unwrap_or_else(|| e.clone()))
        }
        Expr::Value(v) => {
            let ast::Value::Number(n, _) = &v.value else {
                return Some(e.clone());
            };
            let position: usize = n.parse().ok().filter(|&p| p > 0)?;
            let mut items = projection.iter();
            for _ in 1..position {
                match items.next()? {
                    SelectItem::UnnamedExpr(_) | SelectItem::ExprWithAlias { .. } => {}
                    _ => return None,
                }
            }
            match items.next()? {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    Some(e.clone())
                }
                _ => None,
            }
        }
        e => Some(e.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        let mut stmt = Parser::new(&PostgreSqlDialect {})
            .try_with_sql(sql)
            .unwrap()
            .parse_statement()
            .unwrap();
        let ast::Statement::Query(query) = &mut stmt else {
            panic!("not a query");
        };
        let SetExpr::Select(select) = query.body.as_mut() else {
            panic!("not a select");
        };
        rewrite_from(select);
        stmt.to_string()
    }

    #[test]
    fn numbers_rows_per_correlation_key() {
        assert_eq!(
            rewritten(
                "SELECT a.name, b.title FROM author a CROSS JOIN LATERAL (SELECT title, pages AS p \
                 FROM book WHERE book.author_id = a.id AND pages > 1 ORDER BY p DESC LIMIT 2 \
                 OFFSET 1) b"
            ),
            "SELECT a.name, b.title FROM author a CROSS JOIN LATERAL (SELECT \"title\", \"p\" \
             FROM (SELECT title, pages AS p, book.author_id AS __partita_key_1 FROM book WHERE \
             (pages > 1) QUALIFY row_number() OVER (PARTITION BY book.author_id ORDER BY pages DESC) > \
             coalesce(CAST((1) AS BIGINT), 0) AND row_number() OVER (PARTITION BY \
             book.author_id ORDER BY pages DESC) - coalesce(CAST((1) AS BIGINT), 0) <= \
             coalesce(CAST((2) AS BIGINT), row_number() OVER (PARTITION BY book.author_id \
             ORDER BY pages DESC))) AS b WHERE b.\"__partita_key_1\" = a.id) b"
        );
        // A listed key needs no column of its own, nested in a LATERAL item too.
        assert_eq!(
            rewritten("SELECT count(*) FROM (SELECT * FROM p WHERE p.uid = u.id LIMIT 3) p"),
            "SELECT count(*) FROM (SELECT * FROM (SELECT * FROM p QUALIFY row_number() OVER \
             (PARTITION BY p.uid) <= coalesce(CAST((3) AS BIGINT), row_number() OVER \
             (PARTITION BY p.uid))) AS p WHERE p.\"uid\" = u.id) p"
        );
    }

    #[test]
    fn leaves_what_it_cannot_rewrite() {
        for sql in [
            // Uncorrelated.
            "SELECT * FROM a, LATERAL (SELECT x FROM t ORDER BY x LIMIT 1) b",
            // Not an equality.
            "SELECT * FROM a, LATERAL (SELECT x FROM t WHERE t.k > a.k LIMIT 1) b",
            // An outer column in the select list.
            "SELECT * FROM a, LATERAL (SELECT a.y FROM t WHERE t.k = a.k LIMIT 1) b",
            // An aggregate.
            "SELECT * FROM a, LATERAL (SELECT count(*) FROM t WHERE t.k = a.k LIMIT 1) b",
            // An outer item read elsewhere, at any depth.
            "SELECT * FROM a, LATERAL (SELECT x FROM t WHERE t.k = a.k AND EXISTS (SELECT 1 \
             FROM s WHERE s.y = a.y) LIMIT 1) b",
            "SELECT * FROM a, LATERAL (SELECT x FROM t JOIN s ON s.o = a.o WHERE t.k = a.k \
             LIMIT 1) b",
            // A position at a `*`; a set-returning function.
            "SELECT * FROM a, LATERAL (SELECT *, 1 AS d FROM t WHERE t.k = a.k ORDER BY 1 \
             LIMIT 1) b",
            "SELECT * FROM a, LATERAL (SELECT unnest(t.tags) FROM t WHERE t.k = a.k LIMIT 1) b",
            // An item without a name: its columns cannot be told from outer ones.
            "SELECT * FROM (SELECT * FROM (a JOIN b ON a.id = b.aid) WHERE a.kind = 'x' \
             ORDER BY a.id LIMIT 10) s",
        ] {
            let before = Parser::new(&PostgreSqlDialect {})
                .try_with_sql(sql)
                .unwrap()
                .parse_statement()
                .unwrap()
                .to_string();
            assert_eq!(rewritten(sql), before, "{sql}");
        }
    }
}
