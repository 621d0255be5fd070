//! A subquery in FROM with LIMIT or OFFSET that reads an earlier FROM item's columns through
//! equalities: the top N rows per outer row, as ORMs load relations with a limit (Drizzle's
//! and Prisma's relation queries, `LEFT JOIN LATERAL (SELECT … WHERE p.author_id = u.id
//! ORDER BY … LIMIT 3) … ON true`). DataFusion decorrelates such a subquery only without a
//! LIMIT, so the subquery numbers its rows per correlation key instead, uncorrelated, and
//! the correlation and the limit become conditions of a query around it:
//!
//! ```sql
//! SELECT <its columns> FROM (
//!     SELECT …, p.author_id AS __partita_key_1,
//!            row_number() OVER (PARTITION BY p.author_id ORDER BY …) AS __partita_rn
//!     FROM posts p WHERE <the uncorrelated conditions>) AS __partita_top
//! WHERE __partita_top.__partita_key_1 = u.id
//!   AND __partita_rn > <offset> AND __partita_rn <= <offset> + <limit>
//! ```
//!
//! which DataFusion decorrelates as it does a subquery without LIMIT. A key the subquery
//! lists (`p.*`) is read by its name instead of an added column. A subquery of a `*` is
//! `SELECT * EXCLUDE (…)` around, which DataFusion reads; nested deeper inside a LATERAL
//! item, where DataFusion's decorrelation does not see through EXCLUDE, it is `SELECT *` and
//! shows the added columns. Each outer row gets
//! the rows of its key, numbered in the subquery's ORDER BY, as PostgreSQL's LIMIT per row
//! gives. A subquery it cannot rewrite (a correlation other than `inner = outer`, GROUP BY,
//! DISTINCT, aggregates, an outer column in its select list) stays as it is.

use datafusion::sql::sqlparser::ast::{
    self, BinaryOperator, Expr, Ident, LimitClause, Query, SelectItem, SetExpr, TableFactor,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

/// The row number column and the prefix of the key columns the rewrite adds.
const ROW_NUMBER: &str = "__partita_rn";
const KEY: &str = "__partita_key_";
const ALIAS: &str = "__partita_top";

/// Aggregates whose presence makes a select list one row per group: such a subquery's LIMIT
/// is not a per-key row limit.
const AGGREGATES: &[&str] = &[
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
];

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

/// The name a FROM item's columns are qualified with, folded.
fn item_name(factor: &TableFactor) -> Option<String> {
    let ident = match factor {
        TableFactor::Table { alias: Some(a), .. }
        | TableFactor::Derived { alias: Some(a), .. }
        | TableFactor::Function { alias: Some(a), .. }
        | TableFactor::UNNEST { alias: Some(a), .. } => a.name.clone(),
        TableFactor::Table { name, .. } => name.0.last()?.as_ident()?.clone(),
        _ => return None,
    };
    Some(folded(&ident))
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

/// The conjuncts of a WHERE clause (ANDs, through parentheses).
fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(*left, out);
            conjuncts(*right, out);
        }
        Expr::Nested(inner)
            if matches!(
                inner.as_ref(),
                Expr::BinaryOp {
                    op: BinaryOperator::And,
                    ..
                }
            ) =>
        {
            conjuncts(*inner, out)
        }
        e => out.push(e),
    }
}

/// Whether `e` calls an aggregate or window function outside subqueries.
fn aggregates(e: &Expr) -> bool {
    let mut found = false;
    crate::lateral::top_level_exprs(e, &mut |e| {
        if let Expr::Function(f) = e {
            let name = f.name.to_string().to_ascii_lowercase();
            found |= f.over.is_some() || AGGREGATES.contains(&name.as_str());
        }
    });
    found
}

/// The rewritten query for a subquery that takes the top rows per outer row, or `None`.
/// `lateral`: the subquery is a LATERAL item itself, not nested in one. A key the subquery
/// does not list is then an added column its `*` leaves out; in a nested subquery
/// DataFusion's decorrelation reads the key above it, so the added column stays listed.
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
    {
        return None;
    }
    let own: Vec<String> = select
        .from
        .iter()
        .flat_map(|t| std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)))
        .filter_map(item_name)
        .collect();
    // The select list's expressions: none may read an outer item or aggregate.
    let mut listed = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                if reads_outer(e, &own) || aggregates(e) {
                    return None;
                }
                listed.push(item);
            }
            SelectItem::QualifiedWildcard(..) | SelectItem::Wildcard(_) => {}
            _ => return None,
        }
    }
    // Split WHERE into the correlation (inner = outer) and the rest.
    let mut all = Vec::new();
    if let Some(selection) = select.selection.clone() {
        conjuncts(selection, &mut all);
    }
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
    // The window's order: the subquery's ORDER BY, with output names and positions read
    // as the expressions they stand for.
    let mut order = Vec::new();
    if let Some(order_by) = &query.order_by {
        let ast::OrderByKind::Expressions(items) = &order_by.kind else {
            return None;
        };
        for item in items {
            if reads_outer(&item.expr, &own) {
                return None;
            }
            let mut item = item.clone();
            if let Some(e) = output_expression(&item.expr, &listed) {
                item.expr = e;
            }
            order.push(item.to_string());
        }
    }
    let key_list: Vec<String> = keys.iter().map(|(inner, _)| inner.to_string()).collect();
    let numbered = match alias {
        Some(alias) if alias.columns.is_empty() => alias.name.to_string(),
        _ => ALIAS.to_string(),
    };
    let mut inner = select.as_ref().clone();
    inner.selection = None;
    // The select list, each expression named as PostgreSQL names its column, and the
    // names, when it lists no `*`.
    let mut projection = Vec::new();
    let mut names: Option<Vec<Ident>> = Some(Vec::new());
    for item in &select.projection {
        let name = match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.clone()),
            SelectItem::UnnamedExpr(Expr::Identifier(c)) => Some(c.clone()),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => parts.last().cloned(),
            SelectItem::UnnamedExpr(e) => {
                let name = Ident::with_quote(
                    '"',
                    crate::naming::pg_column_name(e).unwrap_or_else(|| "?column?".into()),
                );
                projection.push(format!("{e} AS {name}"));
                if let Some(names) = &mut names {
                    names.push(name);
                }
                continue;
            }
            _ => None,
        };
        projection.push(item.to_string());
        match (name, &mut names) {
            (Some(name), Some(names)) => names.push(name),
            _ => names = None,
        }
    }
    if let Some(names) = &names {
        let mut seen: Vec<String> = names.iter().map(folded).collect();
        seen.sort();
        seen.dedup();
        if seen.len() != names.len() {
            return None;
        }
    }
    // Each key as the wrapper reads it: a column the subquery lists, or one added.
    let single = select.from.len() == 1 && select.from[0].joins.is_empty();
    let mut added = Vec::new();
    let mut key_columns = Vec::new();
    for (n, (key, _)) in keys.iter().enumerate() {
        match listed_as(key, &select.projection, single) {
            Some(name) => key_columns.push(name.to_string()),
            None => {
                let name = format!("{KEY}{}", n + 1);
                projection.push(format!("{key} AS {name}"));
                key_columns.push(name.clone());
                added.push(name);
            }
        }
    }
    let order = match order.is_empty() {
        true => String::new(),
        false => format!(" ORDER BY {}", order.join(", ")),
    };
    projection.push(format!(
        "row_number() OVER (PARTITION BY {}{order}) AS {ROW_NUMBER}",
        key_list.join(", ")
    ));
    let from: Vec<String> = select.from.iter().map(|f| f.to_string()).collect();
    let mut text = format!(
        "SELECT * FROM (SELECT {} FROM {}",
        projection.join(", "),
        from.join(", ")
    );
    if !rest.is_empty() {
        let rest: Vec<String> = rest.iter().map(|c| format!("({c})")).collect();
        text.push_str(&format!(" WHERE {}", rest.join(" AND ")));
    }
    text.push_str(&format!(") AS {numbered} WHERE "));
    let mut conditions: Vec<String> = keys
        .iter()
        .zip(&key_columns)
        .map(|((_, outer), column)| format!("{numbered}.{column} = {outer}"))
        .collect();
    let offset = offset
        .as_ref()
        .map(|o| format!("CAST(({}) AS bigint)", o.value));
    if let Some(offset) = &offset {
        conditions.push(format!("{ROW_NUMBER} > {offset}"));
    }
    if let Some(limit) = limit {
        let limit = format!("CAST(({limit}) AS bigint)");
        conditions.push(match &offset {
            Some(offset) => format!("{ROW_NUMBER} <= {offset} + {limit}"),
            None => format!("{ROW_NUMBER} <= {limit}"),
        });
    }
    text.push_str(&conditions.join(" AND "));
    let dialect = PostgreSqlDialect {};
    let mut rewritten = Parser::new(&dialect)
        .try_with_sql(&text)
        .ok()?
        .parse_query()
        .ok()?;
    // The added columns stay out of the subquery's own: listed by name, or `SELECT *
    // EXCLUDE (…)` (which PostgreSQL's grammar has no words for) for a LATERAL item's `*`.
    // Nested in one, DataFusion reads the keys above the subquery, and does not see
    // through EXCLUDE: the added columns are listed there.
    let SetExpr::Select(outer) = rewritten.body.as_mut() else {
        return None;
    };
    let added: Vec<Ident> = added.into_iter().map(Ident::new).collect();
    outer.projection = match names {
        Some(mut names) => {
            if !lateral {
                names.extend(added);
            }
            names
                .into_iter()
                .map(|n| SelectItem::UnnamedExpr(Expr::Identifier(n)))
                .collect()
        }
        None if lateral => {
            let excluded = std::iter::once(Ident::new(ROW_NUMBER))
                .chain(added)
                .map(|name| ast::ObjectName::from(vec![name]))
                .collect();
            vec![SelectItem::Wildcard(ast::WildcardAdditionalOptions {
                opt_exclude: Some(ast::ExcludeSelectItem::Multiple(excluded)),
                ..Default::default()
            })]
        }
        None => vec![SelectItem::Wildcard(Default::default())],
    };
    // The rest of the inner select (its FROM with joins, hints, …) as it was, where the
    // text form might read differently: only its WHERE and select list changed.
    if let SetExpr::Select(outer) = rewritten.body.as_mut()
        && let Some(twj) = outer.from.first_mut()
        && let TableFactor::Derived { subquery, .. } = &mut twj.relation
        && let SetExpr::Select(numbered) = subquery.body.as_mut()
    {
        inner.projection = std::mem::take(&mut numbered.projection);
        inner.selection = numbered.selection.take();
        **numbered = inner;
    }
    Some(*rewritten)
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

/// The select-list expression an ORDER BY item names by its output name or position.
fn output_expression(e: &Expr, listed: &[&SelectItem]) -> Option<Expr> {
    match e {
        Expr::Identifier(name) => listed.iter().find_map(|item| match item {
            SelectItem::ExprWithAlias { expr, alias } if folded(alias) == folded(name) => {
                Some(expr.clone())
            }
            _ => None,
        }),
        Expr::Value(v) => {
            let ast::Value::Number(n, _) = &v.value else {
                return None;
            };
            let position: usize = n.parse().ok()?;
            match listed.get(position.checked_sub(1)?)? {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    Some(e.clone())
                }
                _ => None,
            }
        }
        _ => None,
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
            "SELECT a.name, b.title FROM author a CROSS JOIN LATERAL (SELECT title, p FROM \
             (SELECT title, pages AS p, book.author_id AS \
             __partita_key_1, row_number() OVER (PARTITION BY book.author_id ORDER BY pages \
             DESC) AS __partita_rn FROM book WHERE (pages > 1)) AS b WHERE \
             b.__partita_key_1 = a.id AND __partita_rn > CAST((1) AS BIGINT) AND \
             __partita_rn <= CAST((1) AS BIGINT) + CAST((2) AS BIGINT)) b"
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
