//! Set-returning functions in FROM that read an earlier FROM item's columns (PostgreSQL's
//! implicit LATERAL), as JSON documents are taken apart:
//!
//! ```sql
//! SELECT d.id, e.value->>'n' FROM docs d, jsonb_array_elements(d.doc->'items') e
//! SELECT d.id, k.key FROM docs d CROSS JOIN LATERAL jsonb_each(d.doc) k
//! ```
//!
//! DataFusion plans no FROM function over another item's columns, so the pair becomes one
//! derived table under the earlier item's name, the function unnested in its select list
//! under a name of its own:
//!
//! ```sql
//! SELECT d.id, d.__value_1->>'n'
//! FROM (SELECT d.*, unnest(partita_jsonb_elements(d.doc->'items')) AS __value_1
//!       FROM docs d) AS d
//! ```
//!
//! References to the function's columns (`e.value`, `e`, and bare `value` at the same query
//! level) name the derived table's; they keep their names in the select list, `d.*` leaves
//! the function's columns out and `*` lists them after `d`'s, as PostgreSQL does. A nested
//! query that names a FROM item `e` itself keeps its own `e`.
//!
//! The functions: the JSON ones, `regexp_matches`, `regexp_split_to_table`, `unnest` and
//! `generate_series`. `LEFT JOIN LATERAL … ON true` keeps an item whose function gives no
//! rows; `WITH ORDINALITY` numbers the function's rows in one more unnested list. Other
//! outer joins and a function over the columns of several items are refused (0A000).

use crate::json::{function_name, plain_args};
use crate::pg_catalog::call as call_expr;
use datafusion::sql::sqlparser::ast::{
    self, Expr, Ident, JoinConstraint, JoinOperator, ObjectName, Query, SelectItem, SetExpr,
    TableAlias, TableFactor, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

/// Rewrites the lateral functions of `query`'s SELECTs (see the module comment).
pub fn rewrite(query: &mut Query) -> crate::Result<()> {
    let mut counter = 0;
    let order_by = query.order_by.as_mut();
    rewrite_body(query.body.as_mut(), order_by, &mut counter)
}

fn rewrite_body(
    body: &mut SetExpr,
    mut order_by: Option<&mut ast::OrderBy>,
    counter: &mut usize,
) -> crate::Result<()> {
    match body {
        SetExpr::Select(select) => {
            crate::lateral_limit::rewrite_from(select);
            refuse_misread_subqueries(select)?;
            let mut done: Vec<Renames> = Vec::new();
            while let Some(found) = find(select)? {
                *counter += 1;
                let renames = apply(select, found, *counter)?;
                name_outputs(select, &renames);
                rename(select, order_by.as_deref_mut(), &renames);
                done.push(renames);
            }
            if !done.is_empty() {
                list_function_columns(select, &done);
            }
            Ok(())
        }
        // ORDER BY a set operation names its output columns, not FROM items.
        SetExpr::SetOperation { left, right, .. } => {
            rewrite_body(left, None, counter)?;
            rewrite_body(right, None, counter)
        }
        _ => Ok(()),
    }
}

/// An identifier as PostgreSQL compares it: folded to lower case unless quoted.
fn folded(id: &Ident) -> String {
    match id.quote_style {
        Some(_) => id.value.clone(),
        None => id.value.to_lowercase(),
    }
}

/// A FROM item: `from[item]`'s relation, or its join `join`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Place {
    item: usize,
    join: Option<usize>,
}

fn factor_at(select: &ast::Select, at: Place) -> &TableFactor {
    match at.join {
        None => &select.from[at.item].relation,
        Some(j) => &select.from[at.item].joins[j].relation,
    }
}

fn factor_at_mut(select: &mut ast::Select, at: Place) -> &mut TableFactor {
    match at.join {
        None => &mut select.from[at.item].relation,
        Some(j) => &mut select.from[at.item].joins[j].relation,
    }
}

/// The FROM items of `select` in order.
fn places(select: &ast::Select) -> Vec<Place> {
    let mut out = Vec::new();
    for (item, twj) in select.from.iter().enumerate() {
        out.push(Place { item, join: None });
        out.extend((0..twj.joins.len()).map(|j| Place {
            item,
            join: Some(j),
        }));
    }
    out
}

/// A lateral function: where it is, the earlier item whose columns it reads, whether it is
/// `LEFT JOIN LATERAL … ON true` (an item whose function gives no rows stays), and whether
/// an outer join pads its owner with NULLs, which the function gives no rows for.
struct Found {
    function: Place,
    owner: Place,
    outer: bool,
    padded: bool,
}

/// The first lateral function of `select`'s FROM.
fn find(select: &ast::Select) -> crate::Result<Option<Found>> {
    let all = places(select);
    for (n, &at) in all.iter().enumerate() {
        let factor = factor_at(select, at);
        let subquery = call_of(factor).is_none();
        let Some(args) = call_of(factor).and_then(|c| c.args).or_else(|| {
            select_list(factor).map(|(items, _)| items.into_iter().map(|(e, _)| e).collect())
        }) else {
            continue;
        };
        // A select list is folded into its owner only as an inner join, or as `LEFT JOIN
        // LATERAL … ON true` when it has no set-returning function (one row for each of the
        // owner's either way); DataFusion plans the others itself, or refuses them.
        if subquery && let Some(j) = at.join {
            let op = &select.from[at.item].joins[j].join_operator;
            let left_on_true =
                matches!(op, JoinOperator::Left(c) | JoinOperator::LeftOuter(c) if always_true(c));
            if !always_true_operator(op) && (!left_on_true || args.iter().any(unnests)) {
                continue;
            }
        }
        let earlier = &all[..n];
        let name_of = |p: &Place| item_name(factor_at(select, *p)).map(|i| folded(&i));
        // Qualifiers naming earlier items (others are an outer query's columns).
        let mut owners: Vec<Place> = Vec::new();
        for q in args.iter().flat_map(qualifiers) {
            if let Some(p) = earlier.iter().find(|p| name_of(p).as_deref() == Some(&q))
                && !owners.contains(p)
            {
                owners.push(*p);
            }
        }
        let owner = match owners.as_slice() {
            [owner] => *owner,
            [] if args.iter().any(names_column) && n > 0 => {
                // A bare column: of the item just before.
                all[n - 1]
            }
            [] => continue,
            // A select list over several items is left to DataFusion.
            _ if subquery => continue,
            _ => {
                return Err(crate::Error::Unsupported(
                    "a set-returning function over the columns of several FROM items".into(),
                ));
            }
        };
        // A select list's values are computed with its owner's rows, before later joins:
        // an owner an outer join pads with NULLs would give plain values wrong. (One with a
        // set-returning function is folded as a FROM function is.)
        let padded = nullable(select, owner, at);
        if subquery && !args.iter().any(unnests) && padded {
            continue;
        }
        let outer = match at.join {
            None => false,
            Some(j) => match &select.from[at.item].joins[j].join_operator {
                JoinOperator::CrossJoin(_) => false,
                JoinOperator::Join(c) | JoinOperator::Inner(c) if always_true(c) => false,
                JoinOperator::Left(c) | JoinOperator::LeftOuter(c) if always_true(c) => true,
                _ => {
                    return Err(crate::Error::Unsupported(
                        "a join other than CROSS JOIN or [LEFT] JOIN … ON true with a \
                         set-returning function over another item's columns"
                            .into(),
                    ));
                }
            },
        };
        // The function's rows are computed with its owner's, before the outer join pads
        // the owner: a padded row is one the function gives no rows for, dropped by WHERE
        // unless the function's join keeps it, or a later RIGHT or FULL join could.
        let later = match at.join {
            Some(j) => &select.from[at.item].joins[j + 1..],
            None => &select.from[at.item].joins[..],
        };
        let widened = later.iter().any(|j| {
            matches!(
                j.join_operator,
                JoinOperator::Right(_) | JoinOperator::RightOuter(_) | JoinOperator::FullOuter(_)
            )
        });
        // Only where the function certainly gives a padded row no rows: its arguments are
        // the owner's columns (NULL there) through strict operators. (A select list, or
        // `unnest(ARRAY[b.y, 0])`, keeps the padded row, as before.)
        let padded = padded
            && !subquery
            && call_of(factor).is_some_and(|c| {
                let args = c.args.unwrap_or_default();
                match c.name.as_str() {
                    "generate_series" => args.iter().any(null_when_padded),
                    _ => !args.is_empty() && args.iter().all(null_when_padded),
                }
            });
        if padded && !outer && widened {
            return Err(crate::Error::Unsupported(
                "a set-returning function over an outer join's padded side before a RIGHT or \
                 FULL join"
                    .into(),
            ));
        }
        return Ok(Some(Found {
            function: at,
            owner,
            outer: outer && !subquery,
            padded: padded && !outer,
        }));
    }
    Ok(None)
}

/// Whether `e` is NULL when the columns it reads are: a column, or casts, JSON operators
/// and arithmetic over one.
fn null_when_padded(e: &Expr) -> bool {
    use ast::BinaryOperator as B;
    match e {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => true,
        Expr::Nested(inner) | Expr::Cast { expr: inner, .. } => null_when_padded(inner),
        Expr::UnaryOp { expr, .. } => null_when_padded(expr),
        Expr::BinaryOp { left, op, right } => match op {
            B::Arrow | B::LongArrow | B::HashArrow | B::HashLongArrow => null_when_padded(left),
            B::Plus | B::Minus | B::Multiply | B::Divide => {
                null_when_padded(left) || null_when_padded(right)
            }
            _ => false,
        },
        _ => false,
    }
}

/// Whether an outer join between `owner` and `at` (or `owner`'s own) can make its columns
/// NULL.
fn nullable(select: &ast::Select, owner: Place, at: Place) -> bool {
    let joins = &select.from[owner.item].joins;
    let end = match at.item == owner.item {
        true => at.join.unwrap_or(0),
        false => joins.len(),
    };
    let own = owner.join.map(|j| &joins[j].join_operator);
    let after = owner.join.map_or(0, |j| j + 1);
    own.is_some_and(|op| {
        !matches!(
            op,
            JoinOperator::Join(_)
                | JoinOperator::Inner(_)
                | JoinOperator::CrossJoin(_)
                | JoinOperator::Right(_)
                | JoinOperator::RightOuter(_)
        )
    }) || joins[after.min(end)..end].iter().any(|j| {
        matches!(
            j.join_operator,
            JoinOperator::Right(_) | JoinOperator::RightOuter(_) | JoinOperator::FullOuter(_)
        )
    })
}

fn always_true_operator(op: &JoinOperator) -> bool {
    match op {
        JoinOperator::CrossJoin(c) | JoinOperator::Join(c) | JoinOperator::Inner(c) => {
            always_true(c)
        }
        _ => false,
    }
}

fn always_true(c: &JoinConstraint) -> bool {
    match c {
        JoinConstraint::None => true,
        JoinConstraint::On(Expr::Value(v)) => {
            matches!(v.value, ast::Value::Boolean(true))
        }
        _ => false,
    }
}

/// Whether `e` calls a set-returning function outside subqueries.
fn unnests(e: &Expr) -> bool {
    let mut found = false;
    top_level_exprs(e, &mut |e| {
        found |= matches!(e, Expr::Function(f)
            if function_name(&f.name).is_some_and(|n| set_returning_name(&n)))
    });
    found
}

/// Whether `name` is a set-returning function's (which a select list unnests).
fn set_returning_name(name: &str) -> bool {
    crate::lateral_limit::SET_RETURNING.contains(&name)
}

/// A select list's item and its `AS` name.
type Item = (Expr, Option<Ident>);

/// A LATERAL subquery that is only a select list over an earlier item's columns
/// (`LATERAL (SELECT unnest(i.indkey), generate_subscripts(i.indkey, 1) + 1) AS k(a, n)`,
/// whose set-returning functions run in step, or `LATERAL (SELECT t.x + 1 AS y) s`): the
/// items, with their names, and the alias.
fn select_list(factor: &TableFactor) -> Option<(Vec<Item>, Option<&TableAlias>)> {
    let TableFactor::Derived {
        lateral: true,
        subquery,
        alias,
        ..
    } = factor
    else {
        return None;
    };
    let SetExpr::Select(inner) = subquery.body.as_ref() else {
        return None;
    };
    let plain = inner.from.is_empty()
        && inner.selection.is_none()
        && inner.having.is_none()
        && inner.distinct.is_none()
        && matches!(&inner.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty())
        && subquery.with.is_none()
        && subquery.order_by.is_none()
        && subquery.limit_clause.is_none()
        && subquery.fetch.is_none();
    if !plain {
        return None;
    }
    let items = inner
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(e) => Some((e.clone(), None)),
            SelectItem::ExprWithAlias { expr, alias } => Some((expr.clone(), Some(alias.clone()))),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    // Not one with an aggregate or a window (whose rows are its own), which is left to
    // DataFusion.
    use crate::lateral_limit::AGGREGATES;
    let aggregates = |e: &Expr| {
        let mut found = false;
        top_level_exprs(e, &mut |e| {
            found |= matches!(e, Expr::Function(f)
                if f.over.is_some()
                    || function_name(&f.name).is_some_and(|n| AGGREGATES.contains(&n.as_str())))
        });
        found
    };
    if items.iter().any(|(e, _)| aggregates(e)) {
        return None;
    }
    Some((items, alias.as_ref()))
}

/// A FROM function: its name, arguments, alias and WITH ORDINALITY; `f(…)` and
/// `LATERAL f(…)` parse differently, `unnest(…)` differently again.
struct Call<'a> {
    name: String,
    args: Option<Vec<Expr>>,
    alias: Option<&'a TableAlias>,
    with_ordinality: bool,
}

fn call_of(factor: &TableFactor) -> Option<Call<'_>> {
    match factor {
        TableFactor::Table {
            name,
            args: Some(args),
            alias,
            with_ordinality,
            ..
        } => Some(Call {
            name: function_name(name)?,
            args: plain_args(&args.args),
            alias: alias.as_ref(),
            with_ordinality: *with_ordinality,
        }),
        TableFactor::Function {
            name,
            args,
            alias,
            with_ordinality,
            ..
        } => Some(Call {
            name: function_name(name)?,
            args: plain_args(args),
            alias: alias.as_ref(),
            with_ordinality: *with_ordinality,
        }),
        TableFactor::UNNEST {
            alias,
            array_exprs,
            with_ordinality,
            ..
        } => Some(Call {
            name: "unnest".into(),
            args: Some(array_exprs.clone()),
            alias: alias.as_ref(),
            with_ordinality: *with_ordinality,
        }),
        _ => None,
    }
}

/// The qualifiers of the columns `e` names (`d` of `d.doc`), folded, outside subqueries.
fn qualifiers(e: &Expr) -> Vec<String> {
    let mut found = Vec::new();
    top_level_exprs(e, &mut |e| {
        if let Expr::CompoundIdentifier(parts) = e
            && parts.len() >= 2
        {
            found.push(folded(&parts[parts.len() - 2]));
        }
    });
    found
}

/// Whether `e` names a column without a qualifier, outside subqueries.
fn names_column(e: &Expr) -> bool {
    let mut found = false;
    top_level_exprs(e, &mut |e| found |= matches!(e, Expr::Identifier(_)));
    found
}

/// Calls `f` with each expression of `e` that is not inside a subquery.
pub(crate) fn top_level_exprs(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    struct Walk<'a> {
        f: &'a mut dyn FnMut(&Expr),
        depth: usize,
    }
    impl ast::Visitor for Walk<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if self.depth == 0 {
                (self.f)(e);
            }
            ControlFlow::Continue(())
        }
    }
    let _ = ast::Visit::visit(e, &mut Walk { f, depth: 0 });
}

/// Refuses (0A000) a LATERAL subquery that reads an earlier FROM item's columns and has a
/// HAVING clause or a window function: DataFusion decorrelates those into a join that drops
/// the HAVING and computes the windows over every outer row's rows together.
fn refuse_misread_subqueries(select: &ast::Select) -> crate::Result<()> {
    let outer = places(select);
    for (i, at) in outer.iter().enumerate() {
        let TableFactor::Derived {
            lateral: true,
            subquery,
            ..
        } = factor_at(select, *at)
        else {
            continue;
        };
        let SetExpr::Select(inner) = subquery.body.as_ref() else {
            continue;
        };
        // Names the subquery's own FROM items take are its own.
        let own: Vec<String> = places(inner)
            .iter()
            .filter_map(|p| item_name(factor_at(inner, *p)))
            .map(|n| folded(&n))
            .collect();
        let earlier: Vec<String> = outer[..i]
            .iter()
            .filter_map(|p| item_name(factor_at(select, *p)))
            .map(|n| folded(&n))
            .filter(|n| !own.contains(n))
            .collect();
        let mut correlated = false;
        let _ = ast::visit_expressions(subquery.as_ref(), |e| {
            if let Expr::CompoundIdentifier(parts) = e
                && parts.len() > 1
                && earlier.contains(&folded(&parts[0]))
            {
                correlated = true
            }
            ControlFlow::<()>::Continue(())
        });
        // A query at any depth with window functions of its own that reads an earlier
        // item (at any depth below it): DataFusion lifts the correlation above the window.
        // An uncorrelated one, as `lateral_limit`'s numberings are, is computed first.
        let windowed = correlated_window(subquery, &earlier);
        let refused = match (inner.having.is_some(), windowed) {
            (true, _) => "HAVING",
            (_, true) => "a window function",
            _ => continue,
        };
        if correlated {
            return Err(crate::Error::Unsupported(format!(
                "{refused} in a LATERAL subquery that reads an earlier FROM item"
            )));
        }
    }
    Ok(())
}

/// Whether `query` or a query inside it computes window functions of its own (in its
/// select list, QUALIFY or ORDER BY) and reads a column of one of `earlier` at any depth.
fn correlated_window(query: &Query, earlier: &[String]) -> bool {
    struct Find<'a> {
        earlier: &'a [String],
        found: bool,
    }
    /// Whether `exprs` compute window functions of their own (outside subqueries).
    fn windowed<'e>(exprs: impl Iterator<Item = &'e Expr>) -> bool {
        let mut windowed = false;
        for e in exprs {
            top_level_exprs(e, &mut |e| {
                windowed |= matches!(e, Expr::Function(f) if f.over.is_some())
            });
        }
        windowed
    }
    /// Whether `node` reads a column of one of `earlier`, at any depth.
    fn reads_earlier<V: ast::Visit>(node: &V, earlier: &[String]) -> bool {
        let mut found = false;
        let _ = ast::visit_expressions(node, |e| {
            if let Expr::CompoundIdentifier(parts) = e
                && parts.len() > 1
                && earlier.contains(&folded(&parts[0]))
            {
                found = true;
            }
            ControlFlow::<()>::Continue(())
        });
        found
    }
    impl ast::Visitor for Find<'_> {
        type Break = ();
        // Each SELECT, set operations' members too: its select list and QUALIFY.
        fn pre_visit_select(&mut self, select: &ast::Select) -> ControlFlow<()> {
            let exprs = select
                .projection
                .iter()
                .filter_map(|item| match item {
                    SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                        Some(e)
                    }
                    _ => None,
                })
                .chain(select.qualify.as_ref());
            if windowed(exprs) && reads_earlier(select, self.earlier) {
                self.found = true;
            }
            ControlFlow::Continue(())
        }
        // A query's ORDER BY.
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            if let Some(ast::OrderBy {
                kind: ast::OrderByKind::Expressions(items),
                ..
            }) = &query.order_by
                && windowed(items.iter().map(|i| &i.expr))
                && reads_earlier(query, self.earlier)
            {
                self.found = true;
            }
            ControlFlow::Continue(())
        }
    }
    let mut find = Find {
        earlier,
        found: false,
    };
    let _ = ast::Visit::visit(query, &mut find);
    find.found
}

/// The name a FROM item's columns are qualified with.
fn item_name(factor: &TableFactor) -> Option<Ident> {
    match factor {
        TableFactor::Table { alias: Some(a), .. }
        | TableFactor::Derived { alias: Some(a), .. }
        | TableFactor::Function { alias: Some(a), .. }
        | TableFactor::UNNEST { alias: Some(a), .. } => Some(a.name.clone()),
        TableFactor::Table {
            name, args: None, ..
        } => name.0.last()?.as_ident().cloned(),
        _ => None,
    }
}

/// What references to a folded function become: `function` names `owner`, its columns
/// (by the names the query gives them) the derived table's own.
struct Renames {
    function: String,
    owner: Ident,
    /// The function's columns: the name the query gives each, and the derived table's.
    columns: Vec<(Ident, Ident)>,
    /// The derived table's column that tells its rows from an outer join's padding, not
    /// listed by `*`.
    present: Option<Ident>,
}

impl Renames {
    /// The derived table's column of a one-column function (a bare reference's value).
    fn single(&self) -> Option<&Ident> {
        match self.columns.as_slice() {
            [(_, column)] => Some(column),
            _ => None,
        }
    }

    /// The derived table's column for the function's column `name`.
    fn renamed(&self, name: &Ident) -> Option<&Ident> {
        let name = folded(name);
        self.columns
            .iter()
            .find(|(given, _)| folded(given) == name)
            .map(|(_, column)| column)
    }

    fn column(&self, column: &Ident) -> Expr {
        Expr::CompoundIdentifier(vec![self.owner.clone(), column.clone()])
    }

    /// Whether `parts` qualify a column with the function's name.
    fn qualified(&self, parts: &[Ident]) -> bool {
        parts.len() >= 2 && folded(&parts[parts.len() - 2]) == self.function
    }
}

/// Folds the lateral function `found` into its owner, numbering its columns with `n`.
fn apply(select: &mut ast::Select, found: Found, n: usize) -> crate::Result<Renames> {
    let unsupported = |what: &str| Err(crate::Error::Unsupported(what.into()));
    let Some(owner_name) = item_name(factor_at(select, found.owner)) else {
        return unsupported("a set-returning function over this FROM item's columns");
    };
    let (function, alias, lists) = function_columns(factor_at(select, found.function))?;
    match found.function.join {
        // `d, f(d.x) e JOIN x ON …`: the joins after the function follow its owner's item.
        None => {
            let removed = select.from.remove(found.function.item);
            select.from[found.owner.item].joins.extend(removed.joins);
        }
        Some(j) => {
            select.from[found.function.item].joins.remove(j);
        }
    }
    let mut items = vec![format!("{owner_name}.*")];
    let mut columns = Vec::new();
    for (i, (list, default)) in lists.iter().enumerate() {
        let (list, unnested) = match list {
            Column::List(list) => (list, false),
            Column::Value(value) => (value, true),
        };
        let given = alias
            .as_ref()
            .and_then(|a| a.columns.get(i))
            .map_or_else(|| default.clone(), |c| c.name.clone());
        // A name of its own: the owner may have a column of the same name. A select list's
        // items are numbered (their names may repeat, or be `?column?`).
        let column = match unnested {
            true => Ident::new(format!("__column{i}_{n}")),
            false => Ident::new(format!("__{}_{n}", folded(&given))),
        };
        // Outer: an empty or NULL list gives one row of NULL.
        items.push(match (unnested, found.outer) {
            (true, _) => format!("{list} AS {column}"),
            (false, true) => format!(
                "unnest(CASE WHEN cardinality({list}) > 0 THEN {list} ELSE make_array(NULL) END) \
                 AS {column}"
            ),
            (false, false) => format!("unnest({list}) AS {column}"),
        });
        columns.push((given, column));
    }
    let present = found.padded.then(|| Ident::new(format!("__present_{n}")));
    if let Some(present) = &present {
        items.push(format!("true AS {present}"));
        let test = Expr::IsNotNull(Box::new(Expr::CompoundIdentifier(vec![
            owner_name.clone(),
            present.clone(),
        ])));
        select.selection = Some(match select.selection.take() {
            Some(w) => Expr::BinaryOp {
                left: Box::new(Expr::Nested(Box::new(w))),
                op: ast::BinaryOperator::And,
                right: Box::new(test),
            },
            None => test,
        });
    }
    let owner = factor_at_mut(select, found.owner);
    let text = format!("(SELECT {} FROM {owner})", items.join(", "));
    let dialect = datafusion::sql::sqlparser::dialect::PostgreSqlDialect {};
    let parsed = datafusion::sql::sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(&text)
        .and_then(|mut p| p.parse_table_factor())
        .map_err(|e| crate::Error::Syntax(e.to_string()))?;
    let TableFactor::Derived { subquery, .. } = parsed else {
        unreachable!("a parenthesized query is a derived table");
    };
    *owner = TableFactor::Derived {
        lateral: false,
        subquery,
        alias: Some(TableAlias {
            explicit: true,
            name: owner_name.clone(),
            columns: vec![],
            at: None,
        }),
        sample: None,
    };
    let function_alias = alias.map_or(function, |a| folded(&a.name));
    Ok(Renames {
        function: function_alias,
        owner: owner_name,
        columns,
        present,
    })
}

/// A column of a lateral item: a list a function's rows are the elements of, or (a select
/// list's item) the value itself, set-returning functions in it unnested in step.
enum Column {
    List(Expr),
    Value(Expr),
}

/// A lateral function's (or select list's) name and alias, and its columns with the
/// default name of each.
type Unnested = (String, Option<TableAlias>, Vec<(Column, Ident)>);

/// The function of `factor`, as [`Unnested`].
fn function_columns(factor: &TableFactor) -> crate::Result<Unnested> {
    let unsupported = |what: String| Err(crate::Error::Unsupported(what));
    if let Some((values, alias)) = select_list(factor) {
        let Some(alias) = alias else {
            return unsupported("a LATERAL subquery without an alias".into());
        };
        let columns = values
            .into_iter()
            .map(|(v, alias)| {
                // An AS name as written (quoted or not).
                let name = alias.unwrap_or_else(|| {
                    Ident::new(
                        crate::naming::pg_column_name(&v).unwrap_or_else(|| "?column?".into()),
                    )
                });
                (Column::Value(v), name)
            })
            .collect();
        return Ok((folded(&alias.name), Some(alias.clone()), columns));
    }
    let call = call_of(factor).expect("find() takes only functions and select lists");
    let function = call.name;
    let Some(args) = call.args else {
        return unsupported(format!("{function} with named arguments over a column"));
    };
    // A column of a function without an OUT name takes the alias's.
    let alias_name = call
        .alias
        .map_or(function.clone(), |a| a.name.value.clone());
    let mut lists: Vec<(Expr, String)> = match function.as_str() {
        "generate_series" => vec![(call_expr("generate_series", args), alias_name)],
        "unnest" => args.into_iter().map(|a| (a, alias_name.clone())).collect(),
        _ => match crate::srf::set_returning(&function, &args) {
            Some(lists) => lists
                .into_iter()
                .map(|(list, column)| match column == function {
                    true => (list, alias_name.clone()),
                    false => (list, column.to_string()),
                })
                .collect(),
            None => {
                return unsupported(format!("{function} in FROM over another item's columns"));
            }
        },
    };
    if call.with_ordinality {
        lists.push((ordinality(&lists)?, "ordinality".into()));
    }
    let columns = lists
        .into_iter()
        .map(|(list, name)| (Column::List(list), Ident::new(name)))
        .collect();
    Ok((function, call.alias.cloned(), columns))
}

/// `WITH ORDINALITY`'s column as one more list to unnest beside `lists`: 1 up to the
/// longest list's length, in a bigint.
fn ordinality(lists: &[(Expr, String)]) -> crate::Result<Expr> {
    let lengths: Vec<String> = lists
        .iter()
        .map(|(list, _)| format!("CAST(cardinality({list}) AS BIGINT)"))
        .collect();
    let length = match lengths.as_slice() {
        [one] => one.clone(),
        more => format!("greatest({})", more.join(", ")),
    };
    crate::dml::parse_expr(&format!("generate_series(CAST(1 AS BIGINT), {length})"))
}

/// Select-list items that name the function's columns keep their names: `e.value` is
/// `value`, `e` is `e`, `e.*` is the function's columns by name.
fn name_outputs(select: &mut ast::Select, renames: &Renames) {
    let mut projection = Vec::with_capacity(select.projection.len());
    for item in std::mem::take(&mut select.projection) {
        match item {
            SelectItem::UnnamedExpr(Expr::Identifier(id))
                if folded(&id) == renames.function && renames.single().is_some() =>
            {
                projection.push(SelectItem::ExprWithAlias {
                    expr: renames.column(renames.single().expect("checked")),
                    alias: id,
                });
            }
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts))
                if parts.len() == 2
                    && renames.qualified(&parts)
                    && renames.renamed(&parts[1]).is_some() =>
            {
                let column = renames.renamed(&parts[1]).expect("checked");
                projection.push(SelectItem::ExprWithAlias {
                    expr: renames.column(column),
                    alias: parts[1].clone(),
                });
            }
            SelectItem::UnnamedExpr(Expr::Identifier(id)) if renames.renamed(&id).is_some() => {
                let column = renames.renamed(&id).expect("checked");
                projection.push(SelectItem::ExprWithAlias {
                    expr: renames.column(column),
                    alias: id,
                });
            }
            SelectItem::QualifiedWildcard(
                ast::SelectItemQualifiedWildcardKind::ObjectName(name),
                _,
            ) if function_name(&name).is_some_and(|n| n == renames.function) => {
                projection.extend(renames.columns.iter().map(|(given, column)| {
                    SelectItem::ExprWithAlias {
                        expr: renames.column(column),
                        alias: given.clone(),
                    }
                }));
            }
            other => projection.push(other),
        }
    }
    select.projection = projection;
}

/// Points the references to the function in `select` (and its query's ORDER BY) at the
/// derived table: qualified ones, unless a nested query names an item the same; bare ones
/// at this level only.
fn rename(select: &mut ast::Select, order_by: Option<&mut ast::OrderBy>, renames: &Renames) {
    struct Rename<'a> {
        renames: &'a Renames,
        /// For each nested query entered: whether it names an item as the function.
        nested: Vec<bool>,
    }
    impl VisitorMut for Rename<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            let shadows = match query.body.as_ref() {
                SetExpr::Select(s) => places(s).iter().any(|p| {
                    item_name(factor_at(s, *p)).is_some_and(|n| folded(&n) == self.renames.function)
                }),
                _ => false,
            };
            self.nested.push(shadows);
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
            self.nested.pop();
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let r = self.renames;
            match e {
                Expr::CompoundIdentifier(parts)
                    if r.qualified(parts) && !self.nested.iter().any(|s| *s) =>
                {
                    let at = parts.len() - 2;
                    if let Some(column) = r.renamed(&parts[at + 1]) {
                        parts[at + 1] = column.clone();
                    }
                    parts[at] = r.owner.clone();
                }
                Expr::Identifier(id) if self.nested.is_empty() => {
                    if folded(id) == r.function
                        && let Some(column) = r.single()
                    {
                        *e = r.column(column);
                    } else if let Some(column) = r.renamed(id) {
                        *e = r.column(column);
                    }
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut visitor = Rename {
        renames,
        nested: Vec::new(),
    };
    let _ = select.visit(&mut visitor);
    if let Some(order_by) = order_by {
        let _ = order_by.visit(&mut visitor);
    }
}

/// `*` lists each FROM item's columns and, after an owner's, its functions' (by their
/// names); `owner.*` leaves the functions' columns out.
fn list_function_columns(select: &mut ast::Select, done: &[Renames]) {
    let added = |owner: &str| -> Vec<&(Ident, Ident)> {
        done.iter()
            .filter(|r| folded(&r.owner) == owner)
            .flat_map(|r| r.columns.iter())
            .collect()
    };
    let owner_wildcard = |owner: &Ident| {
        let present = done
            .iter()
            .filter(|r| folded(&r.owner) == folded(owner))
            .filter_map(|r| r.present.clone());
        let excluded: Vec<ObjectName> = added(&folded(owner))
            .iter()
            .map(|(_, c)| c.clone())
            .chain(present)
            .map(|c| ObjectName::from(vec![c]))
            .collect();
        SelectItem::QualifiedWildcard(
            ast::SelectItemQualifiedWildcardKind::ObjectName(ObjectName::from(vec![owner.clone()])),
            ast::WildcardAdditionalOptions {
                opt_exclude: (!excluded.is_empty())
                    .then_some(ast::ExcludeSelectItem::Multiple(excluded)),
                ..Default::default()
            },
        )
    };
    let names: Option<Vec<Ident>> = places(select)
        .iter()
        .map(|p| item_name(factor_at(select, *p)))
        .collect();
    let mut projection = Vec::with_capacity(select.projection.len());
    for item in std::mem::take(&mut select.projection) {
        match item {
            SelectItem::Wildcard(_) if names.is_some() => {
                for name in names.iter().flatten() {
                    projection.push(owner_wildcard(name));
                    for (given, column) in added(&folded(name)) {
                        projection.push(SelectItem::ExprWithAlias {
                            expr: Expr::CompoundIdentifier(vec![name.clone(), column.clone()]),
                            alias: given.clone(),
                        });
                    }
                }
            }
            SelectItem::QualifiedWildcard(
                ast::SelectItemQualifiedWildcardKind::ObjectName(ref name),
                _,
            ) if function_name(name).is_some_and(|n| !added(&n).is_empty()) => {
                let owner = name.0.last().and_then(|p| p.as_ident()).cloned();
                match owner {
                    Some(owner) => projection.push(owner_wildcard(&owner)),
                    None => projection.push(item),
                }
            }
            other => projection.push(other),
        }
    }
    select.projection = projection;
}

#[cfg(test)]
mod tests {
    use crate::session::rewritten;

    #[test]
    fn lateral_functions_fold_into_their_item() {
        assert_eq!(
            rewritten("SELECT d.id, e.value FROM docs d, jsonb_array_elements(d.doc) e"),
            "SELECT d.id, d.__value_1 AS value FROM (SELECT d.*, \
             unnest(partita_jsonb_elements(d.doc)) AS __value_1 FROM docs d) AS d"
        );
        assert_eq!(
            rewritten("SELECT x.k FROM t LEFT JOIN LATERAL unnest(t.a) x(k) ON true"),
            "SELECT t.__k_1 AS k FROM (SELECT t.*, unnest(CASE WHEN cardinality(t.a) > 0 \
             THEN t.a ELSE make_array(NULL) END) AS __k_1 FROM t) AS t"
        );
        // A nested query's own `e` is its own; an outer query's column is not lateral.
        assert_eq!(
            rewritten(
                "SELECT e.value FROM docs d, jsonb_array_elements(d.doc) e \
                 WHERE NOT EXISTS (SELECT 1 FROM stock e WHERE e.sku = 'x')"
            ),
            "SELECT d.__value_1 AS value FROM (SELECT d.*, \
             unnest(partita_jsonb_elements(d.doc)) AS __value_1 FROM docs d) AS d \
             WHERE NOT EXISTS (SELECT 1 FROM stock e WHERE e.sku = 'x')"
        );
        assert_eq!(
            rewritten("SELECT (SELECT count(*) FROM unnest(o.ids) x) FROM orders o"),
            "SELECT (SELECT count(*) FROM UNNEST(o.ids) x) FROM orders o"
        );
    }
}
