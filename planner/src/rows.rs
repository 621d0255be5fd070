//! Whole-row references in the JSON functions: `row_to_json(t)`, `to_json(t)`,
//! `to_jsonb(t)`, `json_agg(t)` and `jsonb_agg(t)`, where `t` names a FROM item, take the
//! item's row as an object of its columns, as PostgreSQL's record does. DataFusion has no
//! row values, so the reference is written out as its columns: `row_to_json(t)` becomes
//! `partita_json_row('a', t.a, 'b', t.b)` (json's compact `{"a":1,"b":"x"}`), `to_jsonb(t)`
//! `jsonb_build_object('a', t.a, …)`.
//!
//! `count(t.*)` and `count(t)` count the rows where `t` has one: a row an outer join made
//! up for no match is not counted, as PostgreSQL's NULL record is not (DataFusion took
//! `t.*` there for `*`, counting every row).
//!
//! A FROM item's columns are a table's user columns (`columns_of`), a derived table's
//! column aliases, or the names of its select list when each item has one.

use crate::json::functions::{ROW_ARRAY, ROW_OBJECT, ROW_OBJECT_PRETTY};
use crate::pg_catalog::call;
use datafusion::sql::sqlparser::ast::{
    self, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName, Query, Select,
    SelectItem, SetExpr, Statement, TableFactor, Value, Visit, VisitMut, Visitor, VisitorMut,
};
use sql::ddl::{normalize_ident, table_name};
use std::ops::ControlFlow;

/// A table's user columns, and one a stored row never has NULL in, when it has one.
type RowColumns<'a> = &'a dyn Fn(&str) -> Option<(Vec<String>, Option<String>)>;

/// A row constructor where PostgreSQL reads it as a record: `ROW(1, 'a')::text` (and a
/// parenthesized `(1, 'a')::text`) is the record's text, `(1,a)`; `ROW(…) IS [NOT] NULL`
/// tests each field, as it does for a table's row.
pub fn row_constructors(stmt: &mut Statement) {
    struct Forms;
    impl VisitorMut for Forms {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            // A row's fields: `ROW(a, b)`, `(a, b)`, or a DO block's record,
            // `named_struct('x', a, 'y', b)`.
            let fields = |e: &Expr| match unnested(e) {
                Expr::Function(f) if f.name.to_string() == "named_struct" => {
                    let FunctionArguments::List(list) = &f.args else {
                        return None;
                    };
                    list.args
                        .iter()
                        .skip(1)
                        .step_by(2)
                        .map(|a| match a {
                            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                            _ => None,
                        })
                        .collect()
                }
                e => crate::functions::rewrite::row_fields(e),
            };
            match e {
                Expr::Cast {
                    expr, data_type, ..
                } if matches!(
                    data_type,
                    ast::DataType::Text
                        | ast::DataType::Varchar(None)
                        | ast::DataType::CharacterVarying(None)
                ) && fields(expr).is_some() =>
                {
                    let row = unnested(expr).clone();
                    *e = call(crate::output::OUTPUT_TEXT, vec![row]);
                }
                Expr::IsNull(inner) | Expr::IsNotNull(inner) => {
                    let Some(items) = fields(inner) else {
                        return ControlFlow::Continue(());
                    };
                    let null = matches!(e, Expr::IsNull(_));
                    let tests = items.into_iter().map(|item| {
                        let item = Box::new(Expr::Nested(Box::new(item)));
                        match null {
                            true => Expr::IsNull(item),
                            false => Expr::IsNotNull(item),
                        }
                    });
                    if let Some(all) = tests.reduce(|a, b| Expr::BinaryOp {
                        left: Box::new(a),
                        op: ast::BinaryOperator::And,
                        right: Box::new(b),
                    }) {
                        *e = Expr::Nested(Box::new(all));
                    }
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Forms);
}

/// Writes out the whole-row references above; `columns_of` gives a table's user columns.
/// `count(DISTINCT t.*)`, which would need rows compared whole, is refused (0A000).
pub fn expand_whole_rows(stmt: &mut Statement, columns_of: RowColumns) -> crate::Result<()> {
    /// What the expander keeps of a query being visited: the CTEs it put in scope, the
    /// CTE bodies still to come (by address, with their names and column lists), and its
    /// FROM clause, whose items the queries inside it may name.
    struct Frame {
        added: usize,
        pending: Vec<(*const Query, String, Vec<String>)>,
        from: Vec<ast::TableWithJoins>,
    }
    struct Expander<'a> {
        columns_of: RowColumns<'a>,
        /// The CTEs in scope, innermost last, with their columns when known.
        ctes: Vec<(String, Option<Vec<String>>)>,
        frames: Vec<Frame>,
    }
    impl Expander<'_> {
        fn lookup(&self, name: &str) -> Lookup {
            scoped(&self.ctes, self.columns_of, name)
        }
    }
    impl VisitorMut for Expander<'_> {
        type Break = crate::Error;
        fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<crate::Error> {
            // A CTE comes into scope when its body has been read: later ones and the
            // query's own body see it, its own body and earlier ones do not.
            let pending = q.with.as_ref().map_or(Vec::new(), |w| {
                w.cte_tables
                    .iter()
                    .map(|cte| {
                        let columns = cte.alias.columns.iter().map(|c| normalize_ident(&c.name));
                        (
                            &*cte.query as *const Query,
                            normalize_ident(&cte.alias.name),
                            columns.collect(),
                        )
                    })
                    .collect()
            });
            let from = match q.body.as_ref() {
                SetExpr::Select(select) => select.from.clone(),
                _ => Vec::new(),
            };
            self.frames.push(Frame {
                added: 0,
                pending,
                from,
            });
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, q: &mut Query) -> ControlFlow<crate::Error> {
            // The FROM items of the queries around this one, innermost first.
            let mut outer = Vec::new();
            let mut outer_unknown = false;
            for frame in self.frames.iter().rev().skip(1) {
                let (sources, unknown) = sources(&frame.from, &|n| self.lookup(n));
                outer.extend(sources);
                outer_unknown |= unknown;
            }
            let lookup = |name: &str| self.lookup(name);
            expand_set_expr(q.body.as_mut(), &lookup, &outer, outer_unknown)?;
            let frame = self.frames.pop().unwrap_or(Frame {
                added: 0,
                pending: Vec::new(),
                from: Vec::new(),
            });
            self.ctes.truncate(self.ctes.len() - frame.added);
            // A CTE's body read: the CTE is in scope from here on.
            let address = &*q as *const Query;
            let entry = self.frames.last().and_then(|parent| {
                parent
                    .pending
                    .iter()
                    .find(|(a, _, _)| *a == address)
                    .map(|(_, name, columns)| (name.clone(), columns.clone()))
            });
            if let Some((name, columns)) = entry {
                let columns = match columns.is_empty() {
                    true => select_list_names(q.body.as_ref(), &|n| self.lookup(n)),
                    false => Some(columns),
                };
                self.ctes.push((name, columns));
                if let Some(parent) = self.frames.last_mut() {
                    parent.added += 1;
                }
            }
            ControlFlow::Continue(())
        }
    }
    if !mentions_row_function(stmt) && !names_a_row(stmt) {
        return Ok(());
    }
    let mut expander = Expander {
        columns_of,
        ctes: Vec::new(),
        frames: Vec::new(),
    };
    match stmt.visit(&mut expander) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// The functions that take a whole row.
const ROW_FUNCTIONS: &[&str] = &[
    "row_to_json",
    "to_json",
    "to_jsonb",
    "json_agg",
    "jsonb_agg",
];

/// The JSON builders, any of whose arguments may be a whole row (a nested object).
const BUILDERS: &[&str] = &[
    "json_build_object",
    "jsonb_build_object",
    "json_build_array",
    "jsonb_build_array",
];

/// Whether the statement calls one of them (most do not, and are left unvisited).
fn mentions_row_function(stmt: &Statement) -> bool {
    struct Finder;
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Function(f)
                    if f.name.0.last().and_then(|p| p.as_ident()).is_some_and(|i| {
                        let name = i.value.to_ascii_lowercase();
                        ROW_FUNCTIONS.contains(&name.as_str()) || BUILDERS.contains(&name.as_str())
                    }) || counted_row(f).is_some()
                        || whole_row_arguments(f).next().is_some() =>
                {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
    }
    stmt.visit(&mut Finder).is_break()
}

/// Whether a SELECT of the statement may name a FROM item's whole row outside a function:
/// a bare name in its select list, WHERE or HAVING that is also the name of one of its FROM
/// items (a column's name too, maybe: the catalog decides), or `(t).column`.
fn names_a_row(stmt: &Statement) -> bool {
    struct Finder;
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            match q.body.as_ref() {
                SetExpr::Select(select) => look_in(select),
                body => {
                    // A set operation's branches.
                    let mut found = ControlFlow::Continue(());
                    let mut branches = vec![body];
                    while let Some(branch) = branches.pop() {
                        match branch {
                            SetExpr::SetOperation { left, right, .. } => {
                                branches.push(left);
                                branches.push(right);
                            }
                            SetExpr::Select(select) if look_in(select).is_break() => {
                                found = ControlFlow::Break(());
                            }
                            _ => {}
                        }
                    }
                    found
                }
            }
        }
    }
    fn look_in(select: &Select) -> ControlFlow<()> {
        {
            let mut names = Vec::new();
            for twj in &select.from {
                for relation in
                    std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation))
                {
                    match relation {
                        TableFactor::Table { name, alias, .. } => names.push(match alias {
                            Some(a) => normalize_ident(&a.name),
                            None => name
                                .0
                                .last()
                                .and_then(|p| p.as_ident())
                                .map(normalize_ident)
                                .unwrap_or_default(),
                        }),
                        TableFactor::Derived { alias: Some(a), .. } => {
                            names.push(normalize_ident(&a.name))
                        }
                        _ => {}
                    }
                }
            }
            if names.is_empty() {
                return ControlFlow::Continue(());
            }
            let mut found = false;
            let mut look = |e: &Expr| {
                let _ = ast::visit_expressions(e, |x| {
                    found |= match x {
                        Expr::Identifier(id) => names.contains(&normalize_ident(id)),
                        Expr::CompoundFieldAccess { root, .. } => {
                            matches!(root.as_ref(), Expr::Identifier(_) | Expr::Nested(_))
                        }
                        _ => false,
                    };
                    ControlFlow::<()>::Continue(())
                });
            };
            for item in &select.projection {
                if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item
                {
                    look(e);
                }
            }
            for e in select.selection.iter().chain(&select.having) {
                look(e);
            }
            match found {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        }
    }
    stmt.visit(&mut Finder).is_break()
}

/// `e` without the parentheses around it.
fn unnested(mut e: &Expr) -> &Expr {
    while let Expr::Nested(inner) = e {
        e = inner;
    }
    e
}

/// The `t.*` arguments of a call.
fn whole_row_arguments(f: &ast::Function) -> impl Iterator<Item = &ObjectName> {
    let args = match &f.args {
        FunctionArguments::List(list) => &list.args[..],
        _ => &[],
    };
    args.iter().filter_map(|a| match a {
        FunctionArg::Unnamed(FunctionArgExpr::QualifiedWildcard(name))
        | FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::QualifiedWildcard(name, _))) => {
            Some(name)
        }
        _ => None,
    })
}

/// What `count(t.*)` or `count(t)` counts.
struct CountedRow {
    /// `t`, which in `count(t)` may still be a column's name.
    name: Ident,
    /// `t.*`: certainly a FROM item.
    wildcard: bool,
    distinct: bool,
}

/// The whole row a call of count counts; `None` for any other call.
fn counted_row(f: &ast::Function) -> Option<CountedRow> {
    if f.name.0.len() != 1 || !f.name.to_string().eq_ignore_ascii_case("count") {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let distinct = matches!(
        list.duplicate_treatment,
        Some(ast::DuplicateTreatment::Distinct)
    );
    let (name, wildcard) = match list.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::QualifiedWildcard(name))] => match &name.0[..] {
            [part] => (part.as_ident().cloned()?, true),
            _ => return None,
        },
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(id)))] => (id.clone(), false),
        _ => return None,
    };
    Some(CountedRow {
        name,
        wildcard,
        distinct,
    })
}

/// `c1 IS NULL AND c2 IS NULL …` over `qualifier`'s columns: whether the row is one an
/// outer join made up for no match (`None` when the item has no columns).
fn missing_row(qualifier: &str, columns: &[String]) -> Option<Expr> {
    columns
        .iter()
        .map(|c| {
            Expr::IsNull(Box::new(Expr::CompoundIdentifier(vec![
                Ident::with_quote('"', qualifier),
                Ident::with_quote('"', c.clone()),
            ])))
        })
        .reduce(|a, b| Expr::BinaryOp {
            left: Box::new(a),
            op: ast::BinaryOperator::And,
            right: Box::new(b),
        })
}

/// `CASE WHEN missing THEN NULL ELSE value END`.
fn unless_missing(missing: Expr, value: Expr) -> Expr {
    Expr::Case {
        case_token: ast::helpers::attached_token::AttachedToken::empty(),
        end_token: ast::helpers::attached_token::AttachedToken::empty(),
        operand: None,
        conditions: vec![ast::CaseWhen {
            condition: missing,
            result: Expr::value(Value::Null),
        }],
        else_result: Some(Box::new(value)),
    }
}

/// A FROM item: its qualifier, its columns, whether an outer join can give it a row of
/// NULLs (its whole row is then NULL, not an object of NULLs), and a column never NULL in
/// a row it has (a table's key).
struct Source {
    qualifier: String,
    columns: Vec<String>,
    nullable: bool,
    never_null: Option<String>,
}

impl Source {
    /// `"qualifier"."column"`.
    fn column(&self, column: &str) -> Expr {
        Expr::CompoundIdentifier(vec![
            Ident::with_quote('"', self.qualifier.clone()),
            Ident::with_quote('"', column.to_string()),
        ])
    }

    /// Each column as a reference.
    fn columns(&self) -> impl Iterator<Item = Expr> + '_ {
        self.columns.iter().map(|c| self.column(c))
    }

    /// `'name', "qualifier"."name"` for each column: a builder's arguments.
    fn members(&self) -> Vec<Expr> {
        self.columns
            .iter()
            .flat_map(|c| {
                [
                    Expr::value(Value::SingleQuotedString(c.clone())),
                    self.column(c),
                ]
            })
            .collect()
    }

    /// Whether the row is one an outer join made up: its never-NULL column is NULL, or
    /// else all its columns are (`None` when it has none).
    fn missing(&self) -> Option<Expr> {
        match &self.never_null {
            Some(column) => missing_row(&self.qualifier, std::slice::from_ref(column)),
            None => missing_row(&self.qualifier, &self.columns),
        }
    }
}

/// What `name` stands for with `ctes` in scope: a CTE's name hides a table's.
fn scoped(ctes: &[(String, Option<Vec<String>>)], columns_of: RowColumns, name: &str) -> Lookup {
    match ctes.iter().rev().find(|(n, _)| n == name) {
        Some((_, Some(columns))) => Lookup::Found(columns.clone(), None),
        Some((_, None)) => Lookup::Unknown,
        None => match columns_of(name) {
            Some((columns, key)) => Lookup::Found(columns, key),
            None => Lookup::Unknown,
        },
    }
}

/// What a FROM item's name stands for: a table's or CTE's columns (with a table's
/// never-NULL column), or columns that cannot be known here.
enum Lookup {
    Found(Vec<String>, Option<String>),
    Unknown,
}

/// The FROM items of a FROM clause, and whether any has columns that cannot be known here
/// (a function's, a CTE's or subquery's unnamed ones): a bare name may then be one of them.
fn sources(from: &[ast::TableWithJoins], lookup: &dyn Fn(&str) -> Lookup) -> (Vec<Source>, bool) {
    use ast::JoinOperator as J;
    let mut out = Vec::new();
    let mut unknown = false;
    for twj in from {
        let right = |j: &ast::Join| {
            matches!(
                j.join_operator,
                J::Right(_) | J::RightOuter(_) | J::FullOuter(_)
            )
        };
        let left = |j: &ast::Join| {
            matches!(
                j.join_operator,
                J::Left(_) | J::LeftOuter(_) | J::FullOuter(_)
            )
        };
        // An item is padded by its own LEFT or FULL join, or by a RIGHT or FULL join after it.
        let relations = std::iter::once(&twj.relation)
            .chain(twj.joins.iter().map(|j| &j.relation))
            .enumerate()
            .map(|(i, relation)| {
                let own = i > 0 && left(&twj.joins[i - 1]);
                (relation, own || twj.joins[i..].iter().any(right))
            });
        for (relation, nullable) in relations {
            let mut push = |qualifier: String, columns: Vec<String>, never_null: Option<String>| {
                out.push(Source {
                    qualifier,
                    columns,
                    nullable,
                    never_null,
                })
            };
            match relation {
                TableFactor::Table {
                    name,
                    alias,
                    args: None,
                    ..
                } => {
                    let Ok(table) = table_name(name) else {
                        unknown = true;
                        continue;
                    };
                    let Lookup::Found(mut columns, mut key) = lookup(&table) else {
                        unknown = true;
                        continue;
                    };
                    if let Some(alias) = alias {
                        for (column, renamed) in columns.iter_mut().zip(&alias.columns) {
                            let renamed = normalize_ident(&renamed.name);
                            if key.as_ref() == Some(column) {
                                key = Some(renamed.clone());
                            }
                            *column = renamed;
                        }
                    }
                    let qualifier = alias.as_ref().map_or(table, |a| normalize_ident(&a.name));
                    push(qualifier, columns, key);
                }
                TableFactor::Derived {
                    subquery,
                    alias: Some(alias),
                    ..
                } => {
                    let columns = if alias.columns.is_empty() {
                        select_list_names(subquery.body.as_ref(), lookup)
                    } else {
                        Some(
                            alias
                                .columns
                                .iter()
                                .map(|c| normalize_ident(&c.name))
                                .collect(),
                        )
                    };
                    match columns {
                        Some(columns) => push(normalize_ident(&alias.name), columns, None),
                        None => unknown = true,
                    }
                }
                // A function in FROM (`generate_series(1, 3) g`) has the columns its alias
                // gives, or one named by its alias: a scalar function's.
                TableFactor::Table {
                    alias: Some(alias),
                    args: Some(_),
                    ..
                }
                | TableFactor::Function {
                    alias: Some(alias), ..
                }
                | TableFactor::UNNEST {
                    alias: Some(alias), ..
                } => {
                    let columns = match alias.columns.is_empty() {
                        true => vec![normalize_ident(&alias.name)],
                        false => alias
                            .columns
                            .iter()
                            .map(|c| normalize_ident(&c.name))
                            .collect(),
                    };
                    push(normalize_ident(&alias.name), columns, None);
                }
                _ => unknown = true,
            }
        }
    }
    (out, unknown)
}

/// The names of a query's result columns when each item has one for sure.
/// `*` and `t.*` stand for their FROM items' columns, when those are known.
fn select_list_names(body: &SetExpr, lookup: &dyn Fn(&str) -> Lookup) -> Option<Vec<String>> {
    let select = match body {
        SetExpr::Select(select) => select,
        // A set operation's columns are named by its first branch, as in PostgreSQL.
        SetExpr::SetOperation { left, .. } => return select_list_names(left, lookup),
        SetExpr::Query(q) => return select_list_names(q.body.as_ref(), lookup),
        _ => return None,
    };
    let mut names = Vec::new();
    // The FROM items' columns, read when a wildcard needs them.
    let from = std::cell::OnceCell::new();
    let from = || {
        from.get_or_init(|| match sources(&select.from, lookup) {
            (sources, false) => Some(sources),
            (_, true) => None,
        })
    };
    for item in &select.projection {
        match item {
            SelectItem::ExprWithAlias { alias, .. } => names.push(normalize_ident(alias)),
            SelectItem::UnnamedExpr(Expr::Identifier(id)) => names.push(normalize_ident(id)),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                names.push(parts.last().map(normalize_ident)?)
            }
            SelectItem::UnnamedExpr(e) => names.push(crate::naming::pg_column_name(e)?),
            SelectItem::Wildcard(_) => {
                for source in from().as_ref()? {
                    names.extend(source.columns.iter().cloned());
                }
            }
            SelectItem::QualifiedWildcard(
                ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                _,
            ) => {
                let qualifier = normalize_ident(n.0.last()?.as_ident()?);
                let source = from().as_ref()?.iter().find(|s| s.qualifier == qualifier)?;
                names.extend(source.columns.iter().cloned());
            }
            _ => return None,
        }
    }
    Some(names)
}

/// Expands each SELECT of a query's body (a set operation's branches too).
fn expand_set_expr(
    body: &mut SetExpr,
    lookup: &dyn Fn(&str) -> Lookup,
    outer: &[Source],
    outer_unknown: bool,
) -> ControlFlow<crate::Error> {
    match body {
        SetExpr::Select(select) => expand_select(select, lookup, outer, outer_unknown),
        SetExpr::SetOperation { left, right, .. } => {
            expand_set_expr(left, lookup, outer, outer_unknown)?;
            expand_set_expr(right, lookup, outer, outer_unknown)
        }
        _ => ControlFlow::Continue(()),
    }
}

fn expand_select(
    select: &mut Select,
    lookup: &dyn Fn(&str) -> Lookup,
    outer: &[Source],
    outer_unknown: bool,
) -> ControlFlow<crate::Error> {
    let (sources, unknown) = sources(&select.from, lookup);
    if sources.is_empty() && outer.is_empty() {
        return ControlFlow::Continue(());
    }
    struct Rows<'a> {
        sources: &'a [Source],
        /// The FROM items of the queries around this one, innermost first.
        outer: &'a [Source],
        /// Some FROM item's columns (here or around) are not known: a bare name alone may
        /// be one of them.
        unknown: bool,
        /// How deep in subqueries the visit is: their names are theirs, and each SELECT is
        /// expanded on its own.
        depth: usize,
    }
    impl Rows<'_> {
        /// The FROM item named `qualifier`, here or in a query around this one.
        fn source(&self, qualifier: &str) -> Option<&Source> {
            self.sources
                .iter()
                .chain(self.outer)
                .find(|s| s.qualifier == qualifier)
        }

        /// The qualifier `e` names when it is a whole-row reference in a function's
        /// arguments (`row_to_json(t)`): a FROM item's name that is no column's, here or
        /// around.
        fn row(&self, e: &Expr) -> Option<String> {
            let Expr::Identifier(id) = e else {
                return None;
            };
            let qualifier = normalize_ident(id);
            // A column of that name is what the name means.
            let column = |s: &Source| s.columns.contains(&qualifier);
            if self.sources.iter().chain(self.outer).any(column) {
                return None;
            }
            self.source(&qualifier).map(|_| qualifier)
        }

        /// [`Rows::row`] for a name standing alone (`SELECT t`, `t IS NULL`): only when
        /// every FROM item's columns are known, since it may be a column of another.
        fn bare_row(&self, e: &Expr) -> Option<String> {
            match self.unknown {
                true => None,
                false => self.row(e),
            }
        }

        /// The FROM item a function argument names whole: `t`, or `t.*`.
        fn row_argument(&self, arg: &FunctionArgExpr) -> Option<&Source> {
            let qualifier = match arg {
                FunctionArgExpr::Expr(Expr::QualifiedWildcard(name, _))
                | FunctionArgExpr::QualifiedWildcard(name) => match &name.0[..] {
                    [part] => normalize_ident(part.as_ident()?),
                    _ => return None,
                },
                FunctionArgExpr::Expr(e) => self.row(e)?,
                _ => return None,
            };
            self.source(&qualifier)
        }

        /// The FROM item a name standing alone names whole.
        fn bare_source(&self, e: &Expr) -> Option<&Source> {
            let qualifier = self.bare_row(e)?;
            self.source(&qualifier)
        }

        /// Whether `f` is `json_agg(array_agg(to_json(<row>) …))`.
        fn aggregates_row(&self, f: &ast::Function) -> bool {
            let first = |f: &ast::Function| match &f.args {
                FunctionArguments::List(l) => match l.args.first() {
                    Some(FunctionArg::Unnamed(x)) => Some(x.clone()),
                    _ => None,
                },
                _ => None,
            };
            let Some(FunctionArgExpr::Expr(Expr::Function(collect))) = first(f) else {
                return false;
            };
            let Some(FunctionArgExpr::Expr(Expr::Function(to_json))) = first(&collect) else {
                return false;
            };
            to_json.name.to_string().eq_ignore_ascii_case("to_json")
                && first(&to_json).is_some_and(|x| self.row_argument(&x).is_some())
        }
    }

    /// The row of `source` as a record (a struct of its columns, which is written as
    /// PostgreSQL writes a record): NULL for a row an outer join made up.
    fn row_record(source: &Source) -> Expr {
        let members = source.members();
        let row = call("named_struct", members);
        match source.missing().filter(|_| source.nullable) {
            Some(missing) => Expr::Nested(Box::new(unless_missing(missing, row))),
            None => row,
        }
    }

    /// The row of `source` as a JSON object (jsonb when `jsonb`): NULL for a row an outer
    /// join made up.
    fn row_object(source: &Source, jsonb: bool) -> Expr {
        let members = source.members();
        let builder = if jsonb {
            "jsonb_build_object"
        } else {
            ROW_OBJECT
        };
        let row = call(builder, members);
        // The row an outer join made up for no match is NULL, as a whole.
        match source.missing().filter(|_| source.nullable) {
            // (A cast back to the builder's type, which CASE does not keep.)
            Some(missing) => Expr::Cast {
                kind: ast::CastKind::DoubleColon,
                expr: Box::new(Expr::Nested(Box::new(unless_missing(missing, row)))),
                data_type: if jsonb {
                    ast::DataType::JSONB
                } else {
                    ast::DataType::JSON
                },
                array: false,
                format: None,
            },
            None => row,
        }
    }

    impl VisitorMut for Rows<'_> {
        type Break = crate::Error;
        fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<crate::Error> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<crate::Error> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<crate::Error> {
            if self.depth > 0 {
                return ControlFlow::Continue(());
            }
            // `t IS [NOT] NULL`: every column of the row is (not) NULL, as PostgreSQL has it.
            if let Expr::IsNull(inner) | Expr::IsNotNull(inner) = e
                && let Some(source) = self.bare_source(inner)
                && !source.columns.is_empty()
            {
                let not = matches!(e, Expr::IsNotNull(_));
                let column = |c: &String| {
                    let c = Box::new(source.column(c));
                    if not {
                        Expr::IsNotNull(c)
                    } else {
                        Expr::IsNull(c)
                    }
                };
                let all = source
                    .columns
                    .iter()
                    .map(column)
                    .reduce(|a, b| Expr::BinaryOp {
                        left: Box::new(a),
                        op: ast::BinaryOperator::And,
                        right: Box::new(b),
                    });
                if let Some(all) = all {
                    *e = Expr::Nested(Box::new(all));
                }
                return ControlFlow::Continue(());
            }
            // `(t).column` is `t.column`, `t.column[1]` (parsed as t's access chain) is
            // `(t.column)[1]`: the name is the FROM item's, not its whole row.
            if let Expr::CompoundFieldAccess { root, access_chain } = e
                && let Some(ast::AccessExpr::Dot(Expr::Identifier(field))) = access_chain.first()
                && let Some(source) = self.bare_source(unnested(root))
            {
                let column = Expr::CompoundIdentifier(vec![
                    Ident::with_quote('"', source.qualifier.clone()),
                    field.clone(),
                ]);
                *e = match access_chain.len() {
                    1 => column,
                    _ => Expr::CompoundFieldAccess {
                        root: Box::new(column),
                        access_chain: access_chain[1..].to_vec(),
                    },
                };
                return ControlFlow::Continue(());
            }
            // `t::text`: the record's text, as PostgreSQL's record output writes it.
            if let Expr::Cast {
                expr, data_type, ..
            } = e
                && matches!(
                    data_type,
                    ast::DataType::Text
                        | ast::DataType::Varchar(_)
                        | ast::DataType::CharacterVarying(_)
                )
                && let Some(source) = self.bare_source(expr)
            {
                *e = call(crate::output::OUTPUT_TEXT, vec![row_record(source)]);
                return ControlFlow::Continue(());
            }
            // `t` alone: the row as a record, `(1,ann,)`.
            if let Expr::Identifier(_) = e
                && let Some(source) = self.bare_source(e)
            {
                *e = row_record(source);
                return ControlFlow::Continue(());
            }
            let Expr::Function(f) = e else {
                return ControlFlow::Continue(());
            };
            let Some(name) = f.name.0.last().and_then(|p| p.as_ident()) else {
                return ControlFlow::Continue(());
            };
            let name = name.value.to_ascii_lowercase();
            if let Some(counted) = counted_row(f)
                && let Some(source) = match counted.wildcard {
                    true => Some(normalize_ident(&counted.name)),
                    false => self.row(&Expr::Identifier(counted.name.clone())),
                }
                .and_then(|q| self.sources.iter().find(|s| s.qualifier == q))
            {
                if counted.distinct {
                    return ControlFlow::Break(crate::Error::Unsupported(
                        "count(DISTINCT) of a whole row".into(),
                    ));
                }
                // A row of a FROM item no outer join pads is always there: `count(*)`.
                let arg = match source.nullable {
                    true => match source.missing() {
                        Some(missing) => FunctionArgExpr::Expr(unless_missing(
                            missing,
                            Expr::value(Value::Number("1".into(), false)),
                        )),
                        None => return ControlFlow::Continue(()),
                    },
                    false => FunctionArgExpr::Wildcard,
                };
                if let FunctionArguments::List(list) = &mut f.args {
                    list.args = vec![FunctionArg::Unnamed(arg)];
                }
                return ControlFlow::Continue(());
            }
            // `json_agg(t)`, as the JSON rewrite left it (`json_agg(array_agg(to_json(t)))`):
            // rows are separated as PostgreSQL separates them; `to_json(t)` is expanded
            // below.
            if name == "json_agg" && self.aggregates_row(f) {
                f.name = ObjectName::from(vec![Ident::new(ROW_ARRAY)]);
                return ControlFlow::Continue(());
            }
            if BUILDERS.contains(&name.as_str()) {
                // Each whole row among the builder's arguments is an object of its own.
                let jsonb = name.starts_with("jsonb");
                if let FunctionArguments::List(list) = &mut f.args {
                    for arg in &mut list.args {
                        if let FunctionArg::Unnamed(a) = arg
                            && let Some(source) = self.row_argument(a)
                        {
                            *a = FunctionArgExpr::Expr(row_object(source, jsonb));
                        }
                    }
                }
                return ControlFlow::Continue(());
            }
            if !ROW_FUNCTIONS.contains(&name.as_str()) {
                // `ROW(t.*)` is the row of t's columns; another function given `t.*` gets
                // the row as a record (`array_agg(t.*)`, `coalesce(t.*, …)`).
                let FunctionArguments::List(list) = &mut f.args else {
                    return ControlFlow::Continue(());
                };
                let mut args = Vec::with_capacity(list.args.len());
                for arg in std::mem::take(&mut list.args) {
                    let source = match &arg {
                        FunctionArg::Unnamed(a @ FunctionArgExpr::QualifiedWildcard(_))
                        | FunctionArg::Unnamed(
                            a @ FunctionArgExpr::Expr(Expr::QualifiedWildcard(..)),
                        ) => self.row_argument(a),
                        _ => None,
                    };
                    match source {
                        Some(source) if name == "row" => args.extend(
                            source
                                .columns()
                                .map(|c| FunctionArg::Unnamed(FunctionArgExpr::Expr(c))),
                        ),
                        Some(source) => args.push(FunctionArg::Unnamed(FunctionArgExpr::Expr(
                            row_record(source),
                        ))),
                        None => args.push(arg),
                    }
                }
                list.args = args;
                return ControlFlow::Continue(());
            }
            let FunctionArguments::List(list) = &mut f.args else {
                return ControlFlow::Continue(());
            };
            let Some(FunctionArg::Unnamed(arg)) = list.args.first() else {
                return ControlFlow::Continue(());
            };
            // `row_to_json(ROW(t.*, …))`: an anonymous record of t's columns and the rest.
            if let FunctionArgExpr::Expr(Expr::Function(r)) = arg
                && matches!(name.as_str(), "row_to_json" | "to_json" | "to_jsonb")
                && r.name.to_string().eq_ignore_ascii_case("row")
                && let FunctionArguments::List(fields) = &r.args
                && fields.args.iter().any(|a| {
                    matches!(
                        a,
                        FunctionArg::Unnamed(
                            FunctionArgExpr::QualifiedWildcard(_)
                                | FunctionArgExpr::Expr(Expr::QualifiedWildcard(..))
                        )
                    )
                })
            {
                let mut expanded = Vec::new();
                for field in &fields.args {
                    match field {
                        FunctionArg::Unnamed(a) => match self.row_argument(a) {
                            Some(source) => expanded.extend(source.columns()),
                            None => match a {
                                FunctionArgExpr::Expr(x) => expanded.push(x.clone()),
                                _ => return ControlFlow::Continue(()),
                            },
                        },
                        _ => return ControlFlow::Continue(()),
                    }
                }
                let pretty = matches!(
                    list.args.get(1),
                    Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v))))
                        if v.value == Value::Boolean(true)
                );
                *e = crate::json::record_object(&name, expanded, pretty);
                return ControlFlow::Continue(());
            }
            let Some(source) = self.row_argument(arg) else {
                return ControlFlow::Continue(());
            };
            let mut row = row_object(source, name.contains("jsonb"));
            if name == "row_to_json" {
                // row_to_json(t) is the row object itself; `row_to_json(t, true)` has a line
                // break after each member's comma.
                let pretty = match list.args.get(1) {
                    None => false,
                    Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))) => {
                        match &v.value {
                            Value::Boolean(pretty) => *pretty,
                            _ => return ControlFlow::Continue(()),
                        }
                    }
                    Some(_) => return ControlFlow::Continue(()),
                };
                if pretty {
                    let _ = ast::visit_expressions_mut(&mut row, |x| {
                        if let Expr::Function(f) = x
                            && f.name.to_string() == ROW_OBJECT
                        {
                            f.name = ObjectName::from(vec![Ident::new(ROW_OBJECT_PRETTY)]);
                        }
                        ControlFlow::<()>::Continue(())
                    });
                }
                *e = row;
            } else {
                list.args[0] = FunctionArg::Unnamed(FunctionArgExpr::Expr(row));
            }
            ControlFlow::Continue(())
        }
    }
    let mut rows = Rows {
        sources: &sources,
        outer,
        unknown: unknown || outer_unknown,
        depth: 0,
    };
    for item in &mut select.projection {
        // A whole row in the select list keeps its name (`t`, or the column of `(t).c`).
        if let SelectItem::UnnamedExpr(e) = item
            && let Some(name) = match &*e {
                Expr::Identifier(id) => rows.bare_row(e).map(|_| id.clone()),
                Expr::CompoundFieldAccess { root, access_chain } => match access_chain.as_slice() {
                    [ast::AccessExpr::Dot(Expr::Identifier(field))]
                        if rows.bare_row(unnested(root)).is_some() =>
                    {
                        Some(field.clone())
                    }
                    _ => None,
                },
                _ => None,
            }
        {
            *item = SelectItem::ExprWithAlias {
                expr: e.clone(),
                alias: name,
            };
        }
        item.visit(&mut rows)?;
    }
    if let Some(selection) = &mut select.selection {
        selection.visit(&mut rows)?;
    }
    if let Some(having) = &mut select.having {
        having.visit(&mut rows)?;
    }
    ControlFlow::Continue(())
}
