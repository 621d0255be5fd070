//! A USING (or NATURAL) join's columns named in WHERE, and those of right and full joins.
//!
//! In `SELECT … FROM a JOIN b USING (k) WHERE k = 1` PostgreSQL reads `k` as the join's one
//! merged column. DataFusion's select list, GROUP BY and ORDER BY do too, but its WHERE calls
//! `k` ambiguous. Before planning, such a `k` in WHERE is written as the column it stands
//! for: the left side's (`a.k`) for an inner or left join, the right side's for a right
//! join, and `coalesce(a.k, b.k)` for a full one. DataFusion reads the merged column of a
//! right or full join as the left side's everywhere, NULL in the rows only the right side
//! has: there the select list (`*` too, written out when every item's columns are known),
//! GROUP BY and HAVING get the same treatment.
//!
//! Which relation on the left has the column is found from the tables' columns (the
//! catalog's), a derived table's select list, or alias column lists; when that cannot be
//! told, the reference is left as written.

use datafusion::sql::sqlparser::ast::{
    self, Expr, Ident, JoinConstraint, JoinOperator, SelectItem, SetExpr, Statement, TableFactor,
    VisitMut, VisitorMut,
};
use std::collections::HashMap;
use std::ops::ControlFlow;

/// Rewrites, in every SELECT of `stmt` over one FROM item with USING or NATURAL joins, the
/// WHERE clause's unqualified references to the joined columns (see the module comment).
/// `columns` gives a table's columns by name.
pub fn qualify_using_columns(stmt: &mut Statement, columns: &dyn Fn(&str) -> Option<Vec<String>>) {
    // One look over the statement: whether it has such a join at all (most have none, and
    // are left at that), and the WITH queries' names, whose columns are not a table's.
    #[derive(Default)]
    struct Scan {
        ctes: Vec<String>,
        joins: bool,
    }
    impl ast::Visitor for Scan {
        type Break = ();
        fn pre_visit_query(&mut self, query: &ast::Query) -> ControlFlow<()> {
            if let Some(with) = &query.with {
                self.ctes
                    .extend(with.cte_tables.iter().map(|c| folded(&c.alias.name)));
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_select(&mut self, select: &ast::Select) -> ControlFlow<()> {
            self.joins |= select.from.iter().flat_map(|f| &f.joins).any(|j| {
                matches!(
                    &j.join_operator,
                    JoinOperator::Join(c)
                        | JoinOperator::Inner(c)
                        | JoinOperator::Left(c)
                        | JoinOperator::LeftOuter(c)
                        | JoinOperator::Right(c)
                        | JoinOperator::RightOuter(c)
                        | JoinOperator::FullOuter(c)
                        if matches!(c, JoinConstraint::Using(_) | JoinConstraint::Natural)
                )
            });
            ControlFlow::Continue(())
        }
    }
    let mut scan = Scan::default();
    let _ = ast::Visit::visit(&*stmt, &mut scan);
    if !scan.joins {
        return;
    }
    let ctes = scan.ctes;
    let columns = &|name: &str| match ctes.iter().any(|c| c == name) {
        true => None,
        false => columns(name),
    };
    struct Queries<'a> {
        columns: &'a dyn Fn(&str) -> Option<Vec<String>>,
    }
    impl VisitorMut for Queries<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
            qualify_body(&mut query.body, query.order_by.as_mut(), self.columns);
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Queries { columns });
}

fn qualify_body(
    body: &mut SetExpr,
    order_by: Option<&mut ast::OrderBy>,
    columns: &dyn Fn(&str) -> Option<Vec<String>>,
) {
    match body {
        SetExpr::Select(select) => {
            let [from] = select.from.as_mut_slice() else {
                return;
            };
            let Merged {
                merged,
                widened,
                star,
            } = merged_columns(from, columns);
            if let Some(selection) = &mut select.selection
                && !merged.is_empty()
            {
                let _ = selection.visit(&mut Qualify::new(&merged, columns));
            }
            let widened: HashMap<String, Expr> = merged
                .into_iter()
                .filter(|(name, _)| widened.contains(name))
                .collect();
            if !widened.is_empty() {
                qualify_widened(select, &widened, star, columns);
                // ORDER BY names the output's columns first: only other names are the
                // merged columns there.
                if let Some(ast::OrderBy {
                    kind: ast::OrderByKind::Expressions(items),
                    ..
                }) = order_by
                    && let Some(outputs) = output_names(&select.projection)
                {
                    let widened: HashMap<String, Expr> = widened
                        .into_iter()
                        .filter(|(name, _)| !outputs.contains(name))
                        .collect();
                    for item in items {
                        let _ = item.expr.visit(&mut Qualify::new(&widened, columns));
                    }
                }
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            qualify_body(left, None, columns);
            qualify_body(right, None, columns);
        }
        _ => {}
    }
}

/// A FROM item's name and, when known, its columns.
struct Relation {
    name: Ident,
    columns: Option<Vec<String>>,
}

/// The select list, GROUP BY and HAVING of `select` with the merged columns of right and
/// full joins (`widened`) written as what they stand for; `*` written out as `star`.
fn qualify_widened(
    select: &mut ast::Select,
    widened: &HashMap<String, Expr>,
    star: Option<Vec<(String, Expr)>>,
    columns: &dyn Fn(&str) -> Option<Vec<String>>,
) {
    let mut projection = Vec::with_capacity(select.projection.len());
    for mut item in std::mem::take(&mut select.projection) {
        match &mut item {
            // A bare reference keeps its name.
            SelectItem::UnnamedExpr(Expr::Identifier(id)) if widened.contains_key(&folded(id)) => {
                projection.push(SelectItem::ExprWithAlias {
                    expr: widened[&folded(id)].clone(),
                    alias: id.clone(),
                });
            }
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                let _ = e.visit(&mut Qualify::new(widened, columns));
                projection.push(item);
            }
            SelectItem::Wildcard(o)
                if star.is_some()
                    && o.opt_ilike.is_none()
                    && o.opt_exclude.is_none()
                    && o.opt_except.is_none()
                    && o.opt_replace.is_none()
                    && o.opt_rename.is_none() =>
            {
                for (name, expr) in star.iter().flatten() {
                    projection.push(match expr {
                        Expr::CompoundIdentifier(_) => SelectItem::UnnamedExpr(expr.clone()),
                        _ => SelectItem::ExprWithAlias {
                            expr: expr.clone(),
                            alias: Ident::with_quote('"', name),
                        },
                    });
                }
            }
            _ => projection.push(item),
        }
    }
    select.projection = projection;
    if let ast::GroupByExpr::Expressions(exprs, _) = &mut select.group_by {
        for e in exprs {
            let _ = e.visit(&mut Qualify::new(widened, columns));
        }
    }
    if let Some(having) = &mut select.having {
        let _ = having.visit(&mut Qualify::new(widened, columns));
    }
}

/// The output names of a select list; `None` when it holds a `*` not written out.
fn output_names(projection: &[SelectItem]) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for item in projection {
        match item {
            SelectItem::ExprWithAlias { alias, .. } => names.push(folded(alias)),
            SelectItem::UnnamedExpr(Expr::Identifier(id)) => names.push(folded(id)),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                names.extend(parts.last().map(folded))
            }
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => return None,
            _ => {}
        }
    }
    Some(names)
}

/// What a FROM list's USING and NATURAL joins merge.
#[derive(Default)]
struct Merged {
    /// Each merged column, with what it stands for.
    merged: HashMap<String, Expr>,
    /// The merged columns of right and full joins.
    widened: std::collections::HashSet<String>,
    /// The columns `*` gives, in order, when every item's columns are known.
    star: Option<Vec<(String, Expr)>>,
}

/// The columns a FROM list's USING and NATURAL joins merge, each with what it stands for.
/// A later join's ON condition has its references to them qualified too.
fn merged_columns(
    from: &mut ast::TableWithJoins,
    columns: &dyn Fn(&str) -> Option<Vec<String>>,
) -> Merged {
    let mut merged: HashMap<String, Expr> = HashMap::new();
    let mut widened = std::collections::HashSet::new();
    if !from.joins.iter_mut().any(|j| {
        matches!(
            constraint_mut(&mut j.join_operator),
            Some((JoinConstraint::Using(_) | JoinConstraint::Natural, _))
        )
    }) {
        return Merged::default();
    }
    let own_columns = |r: &Option<Relation>| -> Option<Vec<(String, Expr)>> {
        let r = r.as_ref()?;
        let names = r.columns.as_ref()?;
        Some(
            names
                .iter()
                .map(|c| (c.clone(), qualified(&r.name, c)))
                .collect(),
        )
    };
    let mut left = vec![relation(&from.relation, columns)];
    let mut star = own_columns(&left[0]);
    for join in &mut from.joins {
        let right = relation(&join.relation, columns);
        // In its ON condition the joined item's own columns are in scope too: a name it has
        // is ambiguous there, as in PostgreSQL.
        let outside: HashMap<String, Expr> = merged
            .iter()
            .filter(|(name, _)| {
                right
                    .as_ref()
                    .and_then(|r| r.columns.as_ref())
                    .is_some_and(|c| !c.contains(name))
            })
            .map(|(name, e)| (name.clone(), e.clone()))
            .collect();
        if let Some((JoinConstraint::On(on), _)) = constraint_mut(&mut join.join_operator)
            && !outside.is_empty()
        {
            let _ = on.visit(&mut Qualify::new(&outside, columns));
        }
        let names: Vec<String> = match constraint_mut(&mut join.join_operator) {
            Some((JoinConstraint::Using(names), _)) => names
                .iter()
                .filter_map(|n| n.0.last()?.as_ident().map(folded))
                .collect(),
            Some((JoinConstraint::Natural, _)) => match natural_columns(&left, right.as_ref()) {
                Some(names) => names,
                // Which columns it merges is not known: none is read as merged after it.
                None => {
                    merged.clear();
                    Vec::new()
                }
            },
            _ => Vec::new(),
        };
        // A later item that has a merged column's name makes the name ambiguous, unless
        // this join merges it again. (An item whose columns are not known, such as a catalog
        // view or a WITH query, is taken not to have it.)
        merged.retain(|name, _| {
            names.contains(name)
                || !right
                    .as_ref()
                    .and_then(|r| r.columns.as_ref())
                    .is_some_and(|c| c.contains(name))
        });
        let right_star = own_columns(&right);
        if let Some((_, side)) = constraint_mut(&mut join.join_operator) {
            for name in names.iter().cloned() {
                let on_left = merged
                    .get(&name)
                    .cloned()
                    .or_else(|| column_of(&left, &name));
                let on_right = right
                    .as_ref()
                    .map(|r| qualified(&r.name, &name))
                    .filter(|_| {
                        right
                            .as_ref()
                            .is_some_and(|r| r.columns.as_ref().is_none_or(|c| c.contains(&name)))
                    });
                let stands_for = match (side, on_left, on_right) {
                    (Side::Left, Some(l), _) => Some(l),
                    (Side::Right, _, Some(r)) => Some(r),
                    (Side::Full, Some(l), Some(r)) => Some(coalesce(l, r)),
                    _ => None,
                };
                match stands_for {
                    Some(e) => {
                        // A left side's merged column stays what it was.
                        if matches!(side, Side::Right | Side::Full) {
                            widened.insert(name.clone());
                        }
                        merged.insert(name, e)
                    }
                    None => {
                        widened.remove(&name);
                        merged.remove(&name)
                    }
                };
            }
        }
        // `*` over this join: its merged columns first, then the left side's others and the
        // right side's, as PostgreSQL lists them.
        star = match (star, right_star) {
            (Some(l), Some(r)) => {
                let mut out = Vec::with_capacity(l.len() + r.len());
                for name in &names {
                    out.push((name.clone(), merged.get(name).cloned()));
                }
                out.extend(
                    l.into_iter()
                        .chain(r)
                        .filter(|(n, _)| !names.contains(n))
                        .map(|(n, e)| (n, Some(e))),
                );
                out.into_iter()
                    .map(|(n, e)| e.map(|e| (n, e)))
                    .collect::<Option<Vec<_>>>()
            }
            _ => None,
        };
        left.push(right);
    }
    Merged {
        merged,
        widened,
        star,
    }
}

/// Which side's column a merged column is: the left one for inner and left joins.
#[derive(Clone, Copy)]
enum Side {
    Left,
    Right,
    Full,
}

/// A join's constraint and which side its merged columns are.
fn constraint_mut(op: &mut JoinOperator) -> Option<(&mut JoinConstraint, Side)> {
    Some(match op {
        JoinOperator::Join(c)
        | JoinOperator::Inner(c)
        | JoinOperator::Left(c)
        | JoinOperator::LeftOuter(c) => (c, Side::Left),
        JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (c, Side::Right),
        JoinOperator::FullOuter(c) => (c, Side::Full),
        _ => return None,
    })
}

/// The columns a NATURAL join matches: those both sides have. `None` when some side's
/// columns are not known.
fn natural_columns(left: &[Option<Relation>], right: Option<&Relation>) -> Option<Vec<String>> {
    let right = right.and_then(|r| r.columns.as_ref())?;
    let mut names: Vec<String> = Vec::new();
    for relation in left {
        let columns = relation.as_ref().and_then(|r| r.columns.as_ref())?;
        for c in columns.iter().filter(|c| right.contains(c)) {
            if !names.contains(c) {
                names.push(c.clone());
            }
        }
    }
    Some(names)
}

/// `name` of the one relation on the left that has that column (or of the only relation,
/// when its columns are not known).
fn column_of(left: &[Option<Relation>], name: &str) -> Option<Expr> {
    let known: Vec<&Relation> = left.iter().flatten().collect();
    if known.len() != left.len() {
        return None;
    }
    let having: Vec<&&Relation> = known
        .iter()
        .filter(|r| {
            r.columns
                .as_ref()
                .is_some_and(|c| c.iter().any(|c| c == name))
        })
        .collect();
    match (having.as_slice(), known.as_slice()) {
        ([one], _) => Some(qualified(&one.name, name)),
        ([], [only]) if only.columns.is_none() => Some(qualified(&only.name, name)),
        _ => None,
    }
}

fn relation(
    factor: &TableFactor,
    columns: &dyn Fn(&str) -> Option<Vec<String>>,
) -> Option<Relation> {
    let alias_columns = |alias: &ast::TableAlias| {
        (!alias.columns.is_empty()).then(|| alias.columns.iter().map(|c| folded(&c.name)).collect())
    };
    match factor {
        TableFactor::Table { name, alias, .. } => {
            let table = name.0.last()?.as_ident()?;
            // Only `public`'s tables are the catalog's.
            let public = match name.0.as_slice() {
                [_] => true,
                [schema, _] => schema.as_ident().is_some_and(|s| folded(s) == "public"),
                _ => false,
            };
            Some(Relation {
                name: alias
                    .as_ref()
                    .map_or_else(|| table.clone(), |a| a.name.clone()),
                columns: alias
                    .as_ref()
                    .and_then(alias_columns)
                    .or_else(|| public.then(|| columns(&folded(table))).flatten()),
            })
        }
        TableFactor::Derived {
            subquery,
            alias: Some(alias),
            ..
        } => Some(Relation {
            name: alias.name.clone(),
            columns: alias_columns(alias).or_else(|| select_list_names(&subquery.body)),
        }),
        _ => None,
    }
}

/// The column names a derived table's select list gives, when each is plain.
fn select_list_names(body: &SetExpr) -> Option<Vec<String>> {
    match body {
        SetExpr::Select(select) => select
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::ExprWithAlias { alias, .. } => Some(folded(alias)),
                SelectItem::UnnamedExpr(Expr::Identifier(i)) => Some(folded(i)),
                SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                    parts.last().map(folded)
                }
                SelectItem::UnnamedExpr(e) => {
                    Some(crate::naming::pg_column_name(e).unwrap_or_else(|| "?column?".into()))
                }
                _ => None,
            })
            .collect(),
        SetExpr::SetOperation { left, .. } => select_list_names(left),
        SetExpr::Query(q) => select_list_names(&q.body),
        _ => None,
    }
}

/// An identifier as PostgreSQL resolves it: unquoted ones fold to lower case.
fn folded(i: &Ident) -> String {
    match i.quote_style {
        Some(_) => i.value.clone(),
        None => i.value.to_lowercase(),
    }
}

fn qualified(relation: &Ident, column: &str) -> Expr {
    Expr::CompoundIdentifier(vec![relation.clone(), Ident::with_quote('"', column)])
}

fn coalesce(left: Expr, right: Expr) -> Expr {
    crate::pg_catalog::call("coalesce", vec![left, right])
}

/// Replaces the merged columns' unqualified references, also in subqueries whose own FROM
/// items are known not to have a column of that name.
struct Qualify<'a> {
    merged: &'a HashMap<String, Expr>,
    columns: &'a dyn Fn(&str) -> Option<Vec<String>>,
    /// The columns of each subquery's FROM items the reference is inside (None: not known),
    /// with the subquery's output names (its ORDER BY may name them).
    scopes: Vec<Option<Vec<String>>>,
    /// Field names after a dot (`(b).k`), which are not columns.
    fields: std::collections::HashSet<*const Expr>,
}

impl<'a> Qualify<'a> {
    fn new(
        merged: &'a HashMap<String, Expr>,
        columns: &'a dyn Fn(&str) -> Option<Vec<String>>,
    ) -> Qualify<'a> {
        Qualify {
            merged,
            columns,
            scopes: Vec::new(),
            fields: Default::default(),
        }
    }

    /// The columns of a query's FROM items, when all are known.
    fn columns_in_from(&self, query: &ast::Query) -> Option<Vec<String>> {
        let SetExpr::Select(select) = query.body.as_ref() else {
            return None;
        };
        let mut names = Vec::new();
        for from in &select.from {
            let factors =
                std::iter::once(&from.relation).chain(from.joins.iter().map(|j| &j.relation));
            for factor in factors {
                names.extend(relation(factor, self.columns)?.columns?);
            }
        }
        names.extend(select.projection.iter().filter_map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(folded(alias)),
            _ => None,
        }));
        Some(names)
    }
}

impl VisitorMut for Qualify<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
        let scope = self.columns_in_from(query);
        self.scopes.push(scope);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
        self.scopes.pop();
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Expr::CompoundFieldAccess { access_chain, .. } = e {
            for access in access_chain {
                if let ast::AccessExpr::Dot(field) = access {
                    self.fields.insert(field as *const Expr);
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if self.fields.contains(&(e as *const Expr)) {
            return ControlFlow::Continue(());
        }
        if let Expr::Identifier(i) = e {
            let name = folded(i);
            if let Some(column) = self.merged.get(&name)
                && self
                    .scopes
                    .iter()
                    .all(|s| s.as_ref().is_some_and(|s| !s.contains(&name)))
            {
                *e = column.clone();
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        let mut stmt = crate::session::parse_sql(sql).unwrap().remove(0);
        qualify_using_columns(&mut stmt, &|name| match name {
            "a" => Some(vec!["k".into(), "x".into()]),
            "b" => Some(vec!["k".into(), "y".into()]),
            "c" => Some(vec!["y".into(), "z".into()]),
            _ => None,
        });
        stmt.to_string()
    }

    #[test]
    fn where_reads_the_merged_column() {
        assert_eq!(
            rewritten("SELECT 1 FROM a JOIN b USING (k) JOIN c ON c.y = b.y AND k = 1"),
            "SELECT 1 FROM a JOIN b USING(k) JOIN c ON c.y = b.y AND a.\"k\" = 1"
        );
        assert_eq!(
            rewritten("SELECT k FROM a JOIN b USING (k) WHERE k = 1"),
            "SELECT k FROM a JOIN b USING(k) WHERE a.\"k\" = 1"
        );
        assert_eq!(
            rewritten("SELECT 1 FROM a JOIN b USING (k) JOIN c USING (y) WHERE y > k"),
            "SELECT 1 FROM a JOIN b USING(k) JOIN c USING(y) WHERE b.\"y\" > a.\"k\""
        );
        assert_eq!(
            rewritten("SELECT 1 FROM a x RIGHT JOIN b USING (k) WHERE k = 1"),
            "SELECT 1 FROM a x RIGHT JOIN b USING(k) WHERE b.\"k\" = 1"
        );
        assert_eq!(
            rewritten("SELECT 1 FROM a FULL JOIN b USING (k) WHERE k = 1"),
            "SELECT 1 FROM a FULL JOIN b USING(k) WHERE coalesce(a.\"k\", b.\"k\") = 1"
        );
        assert_eq!(
            rewritten("SELECT 1 FROM a NATURAL JOIN b WHERE k = 1 AND x = 2"),
            "SELECT 1 FROM a NATURAL JOIN b WHERE a.\"k\" = 1 AND x = 2"
        );
    }

    #[test]
    fn right_and_full_joins_merge_everywhere() {
        assert_eq!(
            rewritten("SELECT k, count(*) FROM a FULL JOIN b USING (k) GROUP BY k HAVING k > 1"),
            "SELECT coalesce(a.\"k\", b.\"k\") AS k, count(*) FROM a FULL JOIN b USING(k) \
             GROUP BY coalesce(a.\"k\", b.\"k\") HAVING coalesce(a.\"k\", b.\"k\") > 1"
        );
        assert_eq!(
            rewritten("SELECT * FROM a NATURAL FULL JOIN b"),
            "SELECT coalesce(a.\"k\", b.\"k\") AS \"k\", a.\"x\", b.\"y\" FROM a NATURAL FULL JOIN b"
        );
        assert_eq!(
            rewritten("SELECT *, k + 1 FROM a RIGHT JOIN b USING (k)"),
            "SELECT b.\"k\", a.\"x\", b.\"y\", b.\"k\" + 1 FROM a RIGHT JOIN b USING(k)"
        );
        // An inner or left join's column is the left side's, as DataFusion reads it.
        assert_eq!(
            rewritten("SELECT *, k FROM a LEFT JOIN b USING (k)"),
            "SELECT *, k FROM a LEFT JOIN b USING(k)"
        );
    }

    #[test]
    fn other_references_stay() {
        // A subquery's own FROM comes first; another FROM item may have the column too.
        assert_eq!(
            rewritten(
                "SELECT 1 FROM a JOIN b USING (k) WHERE EXISTS (SELECT 1 FROM b WHERE k = 1)"
            ),
            "SELECT 1 FROM a JOIN b USING(k) WHERE EXISTS (SELECT 1 FROM b WHERE k = 1)"
        );
        // Unless it has no such column.
        assert_eq!(
            rewritten(
                "SELECT 1 FROM a JOIN b USING (k) WHERE EXISTS (SELECT 1 FROM c WHERE y = k)"
            ),
            "SELECT 1 FROM a JOIN b USING(k) WHERE EXISTS (SELECT 1 FROM c WHERE y = a.\"k\")"
        );
        assert_eq!(
            rewritten(
                "SELECT 1 FROM a JOIN b USING (k) WHERE EXISTS (SELECT 1 FROM d WHERE y = k)"
            ),
            "SELECT 1 FROM a JOIN b USING(k) WHERE EXISTS (SELECT 1 FROM d WHERE y = k)"
        );
        assert_eq!(
            rewritten("SELECT 1 FROM a JOIN b USING (k), c WHERE k = 1"),
            "SELECT 1 FROM a JOIN b USING(k), c WHERE k = 1"
        );
        // A later item with a column of the name makes it ambiguous, as in PostgreSQL.
        assert_eq!(
            rewritten("SELECT 1 FROM a JOIN b USING (k) CROSS JOIN b AS d WHERE k = 1"),
            "SELECT 1 FROM a JOIN b USING(k) CROSS JOIN b AS d WHERE k = 1"
        );
        // A WITH query is not the table of its name; a field is not a column.
        assert_eq!(
            rewritten(
                "WITH c AS (SELECT 1 AS k) SELECT 1 FROM a JOIN b USING (k) WHERE EXISTS (SELECT 1 FROM c WHERE k = 2) AND (b).k = 1"
            ),
            "WITH c AS (SELECT 1 AS k) SELECT 1 FROM a JOIN b USING(k) WHERE EXISTS (SELECT 1 FROM c WHERE k = 2) AND (b).k = 1"
        );
        assert_eq!(
            rewritten("SELECT 1 FROM a JOIN b ON a.k = b.k WHERE a.k = 1"),
            "SELECT 1 FROM a JOIN b ON a.k = b.k WHERE a.k = 1"
        );
    }
}
