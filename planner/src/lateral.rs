//! Set-returning functions in FROM that read an earlier FROM item's columns (PostgreSQL's
//! implicit LATERAL), as JSON documents are taken apart:
//!
//! ```sql
//! SELECT d.id, e.value->>'n' FROM docs d, jsonb_array_elements(d.doc->'items') e
//! SELECT d.id, k.key FROM docs d CROSS JOIN LATERAL jsonb_each(d.doc) k
//! ```
//!
//! DataFusion plans no FROM function over another item's columns, so the pair becomes one
//! derived table under the earlier item's name, the function unnested in its select list:
//!
//! ```sql
//! SELECT d.id, d.value->>'n'
//! FROM (SELECT d.*, unnest(partita_jsonb_elements(d.doc->'items')) AS value FROM docs d) AS d
//! ```
//!
//! and references to the function's name (`e.value`, `e`) name the derived table's columns.
//! The functions: the JSON ones, `regexp_matches`, `regexp_split_to_table`, `unnest` and
//! `generate_series`. An outer join (`LEFT JOIN LATERAL`), `WITH ORDINALITY`, and a function
//! over the columns of several items are refused (0A000).

use crate::json::{function_name, plain_args};
use crate::pg_catalog::call as call_expr;
use datafusion::sql::sqlparser::ast::{
    self, Expr, Ident, JoinConstraint, JoinOperator, Query, SelectItem, SetExpr, TableAlias,
    TableFactor, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

/// Rewrites the lateral functions of `query`'s FROM (see the module comment).
pub fn rewrite(query: &mut Query) -> crate::Result<()> {
    // The columns added so far, by owner: a second function's `value` is `value_2`.
    let mut added: Vec<(String, String)> = Vec::new();
    loop {
        let SetExpr::Select(select) = query.body.as_mut() else {
            return Ok(());
        };
        let Some(found) = find(select)? else {
            return Ok(());
        };
        let renames = apply(select, found, &mut added)?;
        rename(query, &renames);
    }
}

/// Where a lateral function is: `from[item]`'s relation (after a comma), or its join `join`;
/// `outer` for `LEFT JOIN LATERAL … ON true`, which keeps an item whose function gives no rows.
struct Found {
    item: usize,
    join: Option<usize>,
    outer: bool,
}

/// The first lateral function of `select`'s FROM, with the item before it its owner.
fn find(select: &ast::Select) -> crate::Result<Option<Found>> {
    // DataFusion cannot run a LATERAL subquery over an earlier item's columns.
    let mut earlier: Vec<String> = Vec::new();
    for item in &select.from {
        for factor in std::iter::once(&item.relation).chain(item.joins.iter().map(|j| &j.relation))
        {
            if let TableFactor::Derived {
                lateral: true,
                subquery,
                ..
            } = factor
                && mentions(subquery, &earlier)
            {
                return Err(crate::Error::Unsupported(
                    "a LATERAL subquery over another item's columns".into(),
                ));
            }
            earlier.extend(item_name(factor).map(|n| n.value));
        }
    }
    for (i, item) in select.from.iter().enumerate() {
        if i > 0 && item.joins.is_empty() && lateral(&item.relation) {
            return Ok(Some(Found {
                item: i,
                join: None,
                outer: false,
            }));
        }
        for (j, join) in item.joins.iter().enumerate() {
            if !lateral(&join.relation) {
                continue;
            }
            let outer = match &join.join_operator {
                JoinOperator::CrossJoin(_) => Some(false),
                JoinOperator::Join(c) | JoinOperator::Inner(c) if always_true(c) => Some(false),
                JoinOperator::Left(c) | JoinOperator::LeftOuter(c) if always_true(c) => Some(true),
                _ => None,
            };
            let Some(outer) = outer else {
                return Err(crate::Error::Unsupported(
                    "a join other than CROSS JOIN or [LEFT] JOIN … ON true with a set-returning \
                     function over another item's columns"
                        .into(),
                ));
            };
            return Ok(Some(Found {
                item: i,
                join: Some(j),
                outer,
            }));
        }
    }
    Ok(None)
}

/// Whether `query` qualifies a column with one of `names`.
fn mentions(query: &Query, names: &[String]) -> bool {
    struct Find<'a>(&'a [String], bool);
    impl ast::Visitor for Find<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::CompoundIdentifier(parts) = e
                && parts.len() >= 2
                && self.0.contains(&parts[parts.len() - 2].value)
            {
                self.1 = true;
            }
            ControlFlow::Continue(())
        }
    }
    let mut find = Find(names, false);
    let _ = ast::Visit::visit(query, &mut find);
    find.1
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

/// Whether `factor` is a FROM function whose arguments name columns.
fn lateral(factor: &TableFactor) -> bool {
    call_of(factor).and_then(|c| c.args).is_some_and(|args| {
        args.iter()
            .any(|a| !qualifiers(a).is_empty() || names_column(a))
    })
}

/// The table qualifiers of the columns `e` names (`d` of `d.doc`).
fn qualifiers(e: &Expr) -> Vec<String> {
    struct Collect(Vec<String>);
    impl ast::Visitor for Collect {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::CompoundIdentifier(parts) = e
                && parts.len() >= 2
            {
                self.0.push(parts[parts.len() - 2].value.clone());
            }
            ControlFlow::Continue(())
        }
    }
    let mut found = Collect(Vec::new());
    let _ = ast::Visit::visit(e, &mut found);
    found.0
}

/// Whether `e` names a column without a qualifier.
fn names_column(e: &Expr) -> bool {
    struct Find(bool);
    impl ast::Visitor for Find {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if matches!(e, Expr::Identifier(_)) {
                self.0 = true;
            }
            ControlFlow::Continue(())
        }
    }
    let mut found = Find(false);
    let _ = ast::Visit::visit(e, &mut found);
    found.0
}

/// The name a FROM item's columns are qualified with.
fn item_name(factor: &TableFactor) -> Option<Ident> {
    match factor {
        TableFactor::Table {
            alias: Some(a),
            args: None,
            ..
        }
        | TableFactor::Derived { alias: Some(a), .. } => Some(a.name.clone()),
        TableFactor::Table {
            name, args: None, ..
        } => name.0.last()?.as_ident().cloned(),
        _ => None,
    }
}

/// The references to the function's name to rewrite: `function` becomes `owner`, and a bare
/// `function` (a one-column function's value) becomes `owner.column`.
struct Renames {
    function: String,
    owner: Ident,
    /// The function's columns: the name the query gives each, and the derived table's.
    columns: Vec<(String, Ident)>,
}

impl Renames {
    /// The column a bare reference to a one-column function names.
    fn single(&self) -> Option<&Ident> {
        match self.columns.as_slice() {
            [(_, column)] => Some(column),
            _ => None,
        }
    }

    /// The derived table's name for the function's column `name`.
    fn renamed(&self, name: &Ident) -> Ident {
        self.columns
            .iter()
            .find(|(given, _)| *given == name.value)
            .map_or_else(|| name.clone(), |(_, column)| column.clone())
    }

    fn column(&self, column: &Ident) -> Expr {
        Expr::CompoundIdentifier(vec![self.owner.clone(), column.clone()])
    }
}

/// Folds the lateral function `found` into the item before it.
fn apply(
    select: &mut ast::Select,
    found: Found,
    added: &mut Vec<(String, String)>,
) -> crate::Result<Renames> {
    let unsupported = |what: &str| Err(crate::Error::Unsupported(what.into()));
    let factor = match found.join {
        None => select.from.remove(found.item).relation,
        Some(j) => select.from[found.item].joins.remove(j).relation,
    };
    let owner_item = match found.join {
        None => found.item - 1,
        Some(_) => found.item,
    };
    // The owner is the relation just before the function.
    if found.join.is_some_and(|j| j > 0)
        || found.join.is_none() && !select.from[owner_item].joins.is_empty()
    {
        return unsupported("a set-returning function over a joined item's columns");
    }
    let owner = &mut select.from[owner_item].relation;
    let Some(owner_name) = item_name(owner) else {
        return unsupported("a set-returning function over this FROM item's columns");
    };
    let (function, alias, columns) = function_columns(&factor)?;
    let named = |i: usize, default: &str| {
        alias
            .as_ref()
            .and_then(|a| a.columns.get(i))
            .map_or_else(|| Ident::new(default), |c| c.name.clone())
    };
    let mut items = vec![format!("{}.*", owner_name)];
    let mut names = Vec::new();
    for (i, (list, column)) in columns.iter().enumerate() {
        let given = named(i, column);
        let mut name = given.clone();
        let taken = |n: &str| added.iter().any(|(o, a)| *o == owner_name.value && a == n);
        if taken(&name.value) {
            let base = name.value.clone();
            let free = (2..)
                .find(|k| !taken(&format!("{base}_{k}")))
                .expect("unbounded");
            name = Ident::new(format!("{base}_{free}"));
        }
        added.push((owner_name.value.clone(), name.value.clone()));
        // Outer: an empty or NULL list gives one row of NULL.
        let list = match found.outer {
            true => {
                format!("CASE WHEN cardinality({list}) > 0 THEN {list} ELSE make_array(NULL) END")
            }
            false => list.to_string(),
        };
        items.push(format!("unnest({list}) AS {name}"));
        names.push((given.value, name));
    }
    for q in columns.iter().flat_map(|(list, _)| qualifiers(list)) {
        if q != owner_name.value {
            return unsupported("a set-returning function over the columns of several items");
        }
    }
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
    let function_alias = alias.map_or(function, |a| a.name.value);
    Ok(Renames {
        function: function_alias,
        owner: owner_name,
        columns: names,
    })
}

/// A lateral function's name and alias, and the lists it unnests with the default name of
/// each column.
type Unnested = (String, Option<TableAlias>, Vec<(Expr, String)>);

/// The function of `factor`, as [`Unnested`].
fn function_columns(factor: &TableFactor) -> crate::Result<Unnested> {
    let unsupported = |what: String| Err(crate::Error::Unsupported(what));
    let call = call_of(factor).expect("lateral() takes only functions");
    let function = call.name;
    if call.with_ordinality {
        return unsupported(format!("WITH ORDINALITY on {function} over a column"));
    }
    let Some(args) = call.args else {
        return unsupported(format!("{function} with named arguments over a column"));
    };
    // A column of a function without an OUT name takes the alias's.
    let alias_name = call
        .alias
        .map_or(function.clone(), |a| a.name.value.clone());
    let lists: Vec<(Expr, String)> = match function.as_str() {
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
    Ok((function, call.alias.cloned(), lists))
}

/// Points `query`'s references to the function at the derived table.
fn rename(query: &mut Query, renames: &Renames) {
    struct Rename<'a>(&'a Renames);
    impl VisitorMut for Rename<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            // `SELECT e` is named `e`, as the function's value was; `e.*` is its columns; a
            // column the derived table renamed keeps its name (`e.value`, not `value_2`).
            let SetExpr::Select(select) = query.body.as_mut() else {
                return ControlFlow::Continue(());
            };
            let mut projection = Vec::with_capacity(select.projection.len());
            for item in std::mem::take(&mut select.projection) {
                match item {
                    SelectItem::UnnamedExpr(Expr::Identifier(id))
                        if id.value == self.0.function && self.0.single().is_some() =>
                    {
                        let column = self.0.single().expect("checked");
                        projection.push(SelectItem::ExprWithAlias {
                            expr: self.0.column(column),
                            alias: id,
                        });
                    }
                    SelectItem::QualifiedWildcard(
                        ast::SelectItemQualifiedWildcardKind::ObjectName(name),
                        _,
                    ) if function_name(&name).is_some_and(|n| n == self.0.function) => {
                        projection.extend(self.0.columns.iter().map(|(given, c)| {
                            SelectItem::ExprWithAlias {
                                expr: self.0.column(c),
                                alias: Ident::new(given),
                            }
                        }));
                    }
                    SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts))
                        if parts.len() == 2
                            && parts[0].value == self.0.function
                            && self.0.renamed(&parts[1]) != parts[1] =>
                    {
                        projection.push(SelectItem::ExprWithAlias {
                            expr: self.0.column(&self.0.renamed(&parts[1])),
                            alias: parts[1].clone(),
                        });
                    }
                    other => projection.push(other),
                }
            }
            select.projection = projection;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            match e {
                Expr::CompoundIdentifier(parts)
                    if parts.len() >= 2 && parts[parts.len() - 2].value == self.0.function =>
                {
                    let at = parts.len() - 2;
                    parts[at] = self.0.owner.clone();
                    parts[at + 1] = self.0.renamed(&parts[at + 1]);
                }
                Expr::Identifier(id) if id.value == self.0.function => {
                    if let Some(column) = self.0.single() {
                        *e = self.0.column(column);
                    }
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let _ = query.visit(&mut Rename(renames));
}

#[cfg(test)]
mod tests {
    use crate::session::rewritten;

    #[test]
    fn lateral_functions_fold_into_their_item() {
        assert_eq!(
            rewritten("SELECT d.id, e.value FROM docs d, jsonb_array_elements(d.doc) e"),
            "SELECT d.id, d.value FROM (SELECT d.*, unnest(partita_jsonb_elements(d.doc)) AS \
             value FROM docs d) AS d"
        );
        assert_eq!(
            rewritten("SELECT t, x.k FROM t LEFT JOIN LATERAL unnest(t.a) x(k) ON true"),
            "SELECT t, t.k FROM (SELECT t.*, unnest(CASE WHEN cardinality(t.a) > 0 THEN t.a \
             ELSE make_array(NULL) END) AS k FROM t) AS t"
        );
    }
}
