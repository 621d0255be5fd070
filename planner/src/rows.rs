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

/// Writes out the whole-row references above; `columns_of` gives a table's user columns.
/// `count(DISTINCT t.*)`, which would need rows compared whole, is refused (0A000).
pub fn expand_whole_rows(stmt: &mut Statement, columns_of: RowColumns) -> crate::Result<()> {
    struct Expander<'a> {
        columns_of: RowColumns<'a>,
    }
    impl VisitorMut for Expander<'_> {
        type Break = crate::Error;
        fn post_visit_query(&mut self, q: &mut Query) -> ControlFlow<crate::Error> {
            if let SetExpr::Select(select) = q.body.as_mut() {
                expand_select(select, self.columns_of)?;
            }
            ControlFlow::Continue(())
        }
    }
    if !mentions_row_function(stmt) {
        return Ok(());
    }
    match stmt.visit(&mut Expander { columns_of }) {
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
    /// The row's type, as PostgreSQL names it: the table's name, or `record`.
    ty: String,
    columns: Vec<String>,
    nullable: bool,
    never_null: Option<String>,
}

impl Source {
    /// Whether the row is one an outer join made up: its never-NULL column is NULL, or
    /// else all its columns are (`None` when it has none).
    fn missing(&self) -> Option<Expr> {
        match &self.never_null {
            Some(column) => missing_row(&self.qualifier, std::slice::from_ref(column)),
            None => missing_row(&self.qualifier, &self.columns),
        }
    }
}

/// The FROM items of `select`.
fn sources(select: &Select, columns_of: RowColumns) -> Vec<Source> {
    use ast::JoinOperator as J;
    let mut out = Vec::new();
    for twj in &select.from {
        let first_nullable = twj.joins.iter().any(|j| {
            matches!(
                j.join_operator,
                J::Right(_) | J::RightOuter(_) | J::FullOuter(_)
            )
        });
        let relations =
            std::iter::once((&twj.relation, first_nullable)).chain(twj.joins.iter().map(|j| {
                let nullable = matches!(
                    j.join_operator,
                    J::Left(_) | J::LeftOuter(_) | J::FullOuter(_)
                );
                (&j.relation, nullable)
            }));
        for (relation, nullable) in relations {
            let mut push = |qualifier: String,
                            ty: String,
                            columns: Vec<String>,
                            never_null: Option<String>| {
                out.push(Source {
                    qualifier,
                    ty,
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
                        continue;
                    };
                    let Some((mut columns, mut key)) = columns_of(&table) else {
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
                    let qualifier = alias
                        .as_ref()
                        .map_or(table.clone(), |a| normalize_ident(&a.name));
                    push(qualifier, table, columns, key);
                }
                TableFactor::Derived {
                    subquery,
                    alias: Some(alias),
                    ..
                } => {
                    let columns = if alias.columns.is_empty() {
                        select_list_names(subquery)
                    } else {
                        Some(
                            alias
                                .columns
                                .iter()
                                .map(|c| normalize_ident(&c.name))
                                .collect(),
                        )
                    };
                    if let Some(columns) = columns {
                        push(normalize_ident(&alias.name), "record".into(), columns, None);
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The names of a query's result columns when each item has one for sure.
fn select_list_names(q: &Query) -> Option<Vec<String>> {
    let SetExpr::Select(select) = q.body.as_ref() else {
        return None;
    };
    select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(normalize_ident(alias)),
            SelectItem::UnnamedExpr(Expr::Identifier(id)) => Some(normalize_ident(id)),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                parts.last().map(normalize_ident)
            }
            SelectItem::UnnamedExpr(e) => crate::naming::pg_column_name(e),
            _ => None,
        })
        .collect()
}

fn expand_select(select: &mut Select, columns_of: RowColumns) -> ControlFlow<crate::Error> {
    let sources = sources(select, columns_of);
    if sources.is_empty() {
        return ControlFlow::Continue(());
    }
    struct Rows<'a> {
        sources: &'a [Source],
    }
    impl Rows<'_> {
        /// The qualifier `e` names when it is a whole-row reference.
        fn row(&self, e: &Expr) -> Option<String> {
            let Expr::Identifier(id) = e else {
                return None;
            };
            let qualifier = normalize_ident(id);
            // A column of that name is what the name means.
            if self.sources.iter().any(|s| s.columns.contains(&qualifier)) {
                return None;
            }
            self.sources
                .iter()
                .any(|s| s.qualifier == qualifier)
                .then_some(qualifier)
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
            self.sources.iter().find(|s| s.qualifier == qualifier)
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

    /// The row of `source` as a JSON object (jsonb when `jsonb`): NULL for a row an outer
    /// join made up.
    fn row_object(source: &Source, jsonb: bool) -> Expr {
        let mut members = Vec::with_capacity(source.columns.len() * 2);
        for column in &source.columns {
            members.push(Expr::value(Value::SingleQuotedString(column.clone())));
            members.push(Expr::CompoundIdentifier(vec![
                Ident::with_quote('"', source.qualifier.clone()),
                Ident::with_quote('"', column.clone()),
            ]));
        }
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
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<crate::Error> {
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
                // No other function takes a row: DataFusion would take `t.*` for columns.
                if let Some(source) = whole_row_arguments(f)
                    .find_map(|n| self.row_argument(&FunctionArgExpr::QualifiedWildcard(n.clone())))
                {
                    return ControlFlow::Break(crate::Error::UndefinedFunction(format!(
                        "{name}({})",
                        source.ty
                    )));
                }
                return ControlFlow::Continue(());
            }
            let FunctionArguments::List(list) = &mut f.args else {
                return ControlFlow::Continue(());
            };
            let Some(FunctionArg::Unnamed(arg)) = list.args.first() else {
                return ControlFlow::Continue(());
            };
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
    let mut rows = Rows { sources: &sources };
    for item in &mut select.projection {
        item.visit(&mut rows)?;
    }
    if let Some(having) = &mut select.having {
        having.visit(&mut rows)?;
    }
    ControlFlow::Continue(())
}
