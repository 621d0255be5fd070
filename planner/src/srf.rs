//! Set-returning functions PostgreSQL allows in a select list and in FROM, planned as
//! DataFusion's `unnest` of lists their helpers compute:
//!
//! - in a select list, `f(…)` (also inside an expression, as in `(regexp_matches(s, p))[1]`)
//!   is `unnest(list)`, named as PostgreSQL names the item;
//! - in FROM, `f(…) AS a(…)` is a derived table of the unnested lists (several zip, as
//!   `json_each`'s keys and values).
//!
//! The functions: the JSON ones (`json::set_returning`), `regexp_matches`,
//! `regexp_split_to_table` and `pg_listening_channels`.
//!
//! FROM functions take constants or outer columns DataFusion can plan in a derived table;
//! a lateral reference to a column of an earlier FROM item is not supported. Any FROM
//! function (`generate_series` and `unnest` too) may be numbered `WITH ORDINALITY`.

use crate::functions::regex::MATCHES;
use crate::json::{function_name, plain_args};
use crate::pg_catalog::call;
use datafusion::sql::sqlparser::ast::{
    self, Expr, FunctionArguments, Ident, SelectItem, Statement, TableFactor, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

/// Rewrites the set-returning functions of `stmt` (see the module comment).
pub fn rewrite(stmt: &mut Statement) -> crate::Result<()> {
    match stmt.visit(&mut Rewriter) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// A set-returning function's lists to unnest, each with its column name.
pub(crate) fn set_returning(name: &str, args: &[Expr]) -> Option<Vec<(Expr, &'static str)>> {
    if let [arg] = args
        && let Some(lists) = crate::json::set_returning(name, arg)
    {
        return Some(lists);
    }
    if name == "pg_listening_channels" && args.is_empty() {
        return Some(vec![(
            call(crate::functions::LISTENING_CHANNELS, vec![]),
            "pg_listening_channels",
        )]);
    }
    let (helper, column) = match name {
        "regexp_matches" => (MATCHES, "regexp_matches"),
        "regexp_split_to_table" => ("regexp_split_to_array", "regexp_split_to_table"),
        _ => return None,
    };
    (2..=3)
        .contains(&args.len())
        .then(|| vec![(call(helper, args.to_vec()), column)])
}

/// The one list a set-returning call in a select list unnests.
fn select_list_unnest(e: &Expr) -> Option<Expr> {
    let Expr::Function(f) = e else {
        return None;
    };
    let (Some(name), FunctionArguments::List(list)) = (function_name(&f.name), &f.args) else {
        return None;
    };
    let lists = set_returning(&name, &plain_args(&list.args)?)?;
    // `json_each` in a select list returns records, which Partita does not have.
    let [(list, _)] = lists.as_slice() else {
        return None;
    };
    Some(unnest(list.clone()))
}

fn unnest(list: Expr) -> Expr {
    call("unnest", vec![list])
}

struct Rewriter;

impl VisitorMut for Rewriter {
    type Break = crate::Error;

    fn post_visit_select(&mut self, select: &mut ast::Select) -> ControlFlow<crate::Error> {
        struct Unnest(bool);
        impl VisitorMut for Unnest {
            type Break = ();
            fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
                if let Some(unnested) = select_list_unnest(e) {
                    *e = unnested;
                    self.0 = true;
                }
                ControlFlow::Continue(())
            }
        }
        for item in &mut select.projection {
            let (mut expr, alias) = match item {
                SelectItem::UnnamedExpr(e) => (e.clone(), None),
                SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), Some(alias.clone())),
                _ => continue,
            };
            let name = crate::naming::pg_column_name(&expr);
            let mut found = Unnest(false);
            let _ = expr.visit(&mut found);
            if !found.0 {
                continue;
            }
            *item = match alias.or_else(|| name.map(Ident::new)) {
                Some(alias) => SelectItem::ExprWithAlias { expr, alias },
                None => SelectItem::UnnamedExpr(expr),
            };
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<crate::Error> {
        match crate::lateral::rewrite(query) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(e),
        }
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<crate::Error> {
        if let Err(e) = with_ordinality(factor) {
            return ControlFlow::Break(e);
        }
        let TableFactor::Table {
            name,
            args: Some(args),
            alias,
            with_ordinality,
            ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let Some(function) = function_name(name) else {
            return ControlFlow::Continue(());
        };
        let Some(args) = plain_args(&args.args) else {
            return ControlFlow::Continue(());
        };
        if let Some(set) = record_function(&function) {
            match records(&function, set, &args, alias.as_ref()) {
                Ok(derived) => *factor = derived,
                Err(e) => return ControlFlow::Break(e),
            }
            return ControlFlow::Continue(());
        }
        let Some(lists) = set_returning(&function, &args) else {
            return ControlFlow::Continue(());
        };
        // A function of one unnamed column (`regexp_split_to_table`, not `json_each`'s
        // `value`) names it by the FROM item's alias, as PostgreSQL does for functions
        // returning a base type.
        let named_by_alias = match (lists.as_slice(), alias.as_ref()) {
            ([(_, column)], Some(alias)) if *column == function && alias.columns.is_empty() => {
                Some(alias.name.to_string())
            }
            _ => None,
        };
        let columns: Vec<String> = lists
            .iter()
            .map(|(list, column)| {
                let column = named_by_alias.clone().unwrap_or_else(|| column.to_string());
                format!("{} AS {column}", unnest(list.clone()))
            })
            .collect();
        debug_assert!(!*with_ordinality, "rewritten by with_ordinality");
        let alias = alias.clone().unwrap_or_else(|| ast::TableAlias {
            explicit: true,
            name: Ident::new(&function),
            columns: vec![],
            at: None,
        });
        match derived_table(&format!("(SELECT {})", columns.join(", ")), alias) {
            Ok(derived) => *factor = derived,
            Err(e) => return ControlFlow::Break(e),
        }
        ControlFlow::Continue(())
    }
}

/// Whether `function` is `json[b]_to_record` (false) or `json[b]_to_recordset` (true).
fn record_function(function: &str) -> Option<bool> {
    match function {
        "json_to_record" | "jsonb_to_record" => Some(false),
        "json_to_recordset" | "jsonb_to_recordset" => Some(true),
        _ => None,
    }
}

/// `json[b]_to_record(doc) AS r(a int, b text)`: the row the object's members make, each
/// column its member's value (by the column's name) cast to the column's type, NULL when
/// missing; `json[b]_to_recordset(doc)` makes one such row per element of an array. A
/// json or jsonb column takes the member's JSON, others its text, as PostgreSQL does.
fn records(
    function: &str,
    set: bool,
    args: &[Expr],
    alias: Option<&ast::TableAlias>,
) -> crate::Result<TableFactor> {
    let [doc] = args else {
        return Err(crate::Error::UndefinedFunction(format!(
            "function {function} takes one argument"
        )));
    };
    let columns = alias.map(|a| a.columns.as_slice()).unwrap_or_default();
    let typed: Option<Vec<(String, &ast::DataType)>> = columns
        .iter()
        .map(|c| Some((sql::ddl::normalize_ident(&c.name), c.data_type.as_ref()?)))
        .collect();
    let (Some(alias), Some(typed)) = (alias, typed.filter(|t| !t.is_empty())) else {
        return Err(crate::Error::InvalidStatement(
            "a column definition list is required for functions returning \"record\"".into(),
        ));
    };
    let row = if set {
        "__partita_element"
    } else {
        "__partita_doc"
    };
    // The document as its function reads it, json or jsonb (which also types a parameter).
    let family = if function.starts_with("jsonb") {
        "jsonb"
    } else {
        "json"
    };
    let items: Vec<String> = typed
        .iter()
        .map(|(name, ty)| {
            let key = format!("'{}'", name.replace('\'', "''"));
            let column = crate::functions::text::quote_ident(name);
            let text = format!("{row} ->> {key}");
            // A JSON null member is SQL NULL in a json column, as PostgreSQL gives it.
            // PostgreSQL reads other members' text with the type's input function, which
            // refuses a string longer than varchar(n) or char(n) allows; a cast would cut
            // it, so those take their type without the length (a write then refuses it).
            let (value, ty) = match sql::SqlType::from_ast(ty) {
                Ok(sql::SqlType::Json | sql::SqlType::Jsonb) => (
                    format!(
                        "CASE WHEN {family}_typeof({row} -> {key}) = 'null' THEN NULL \
                         ELSE {row} -> {key} END"
                    ),
                    ty.to_string(),
                ),
                Ok(sql::SqlType::Varchar { length: Some(_) }) => (text, "varchar".into()),
                Ok(sql::SqlType::Char { .. }) => (text, "text".into()),
                _ => (text, ty.to_string()),
            };
            format!("CAST({value} AS {ty}) AS {column}")
        })
        .collect();
    let doc = format!("CAST({doc} AS {family})");
    let source = match set {
        true => format!("(SELECT unnest(partita_{family}_elements({doc})) AS {row})"),
        false => format!("(SELECT {doc} AS {row})"),
    };
    let alias = ast::TableAlias {
        explicit: true,
        name: alias.name.clone(),
        columns: vec![],
        at: None,
    };
    derived_table(
        &format!(
            "(SELECT {} FROM {source} AS __partita_records)",
            items.join(", ")
        ),
        alias,
    )
}

/// The derived table of the parenthesized query `text`, named by `alias`.
fn derived_table(text: &str, alias: ast::TableAlias) -> crate::Result<TableFactor> {
    let dialect = datafusion::sql::sqlparser::dialect::PostgreSqlDialect {};
    let parsed = datafusion::sql::sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(text)
        .and_then(|mut p| p.parse_table_factor());
    match parsed {
        Ok(TableFactor::Derived {
            lateral, subquery, ..
        }) => Ok(TableFactor::Derived {
            lateral,
            subquery,
            alias: Some(alias),
            sample: None,
        }),
        Ok(other) => unreachable!("a parenthesized query is a derived table: {other}"),
        Err(e) => Err(crate::Error::Syntax(e.to_string())),
    }
}

/// `f(…) WITH ORDINALITY AS t(a, …, n)`: the function's rows numbered from 1 in a bigint
/// column after its own (`ordinality` unless the alias names it), as a derived table
/// `(SELECT *, row_number() OVER () AS n FROM f(…) AS t(a, …)) AS t`. The function's own
/// columns take as many of the alias's names as it has columns.
fn with_ordinality(factor: &mut TableFactor) -> crate::Result<()> {
    let (alias, columns) = match factor {
        TableFactor::Table {
            name,
            args: Some(args),
            alias,
            with_ordinality: ordinality @ true,
            ..
        } => {
            *ordinality = false;
            let function = function_name(name).unwrap_or_default();
            if record_function(&function).is_some() {
                return Err(crate::Error::InvalidStatement(
                    "WITH ORDINALITY cannot be used with a column definition list".into(),
                ));
            }
            let columns = plain_args(&args.args)
                .and_then(|args| set_returning(&function, &args))
                .map_or(1, |lists| lists.len());
            let alias = alias.get_or_insert_with(|| ast::TableAlias {
                explicit: true,
                name: Ident::new(function),
                columns: vec![],
                at: None,
            });
            (alias, columns)
        }
        TableFactor::UNNEST {
            alias,
            array_exprs,
            with_ordinality: ordinality @ true,
            ..
        } => {
            *ordinality = false;
            let alias = alias.get_or_insert_with(|| ast::TableAlias {
                explicit: true,
                name: Ident::new("unnest"),
                columns: vec![],
                at: None,
            });
            (alias, array_exprs.len())
        }
        _ => return Ok(()),
    };
    let number = match alias.columns.get(columns) {
        Some(column) => column.name.clone(),
        None => Ident::new("ordinality"),
    };
    if alias.columns.len() > columns + 1 {
        return Err(crate::Error::Syntax(format!(
            "table \"{}\" has {} columns available but {} columns specified",
            alias.name,
            columns + 1,
            alias.columns.len()
        )));
    }
    alias.columns.truncate(columns);
    let outer = ast::TableAlias {
        explicit: true,
        name: alias.name.clone(),
        columns: vec![],
        at: None,
    };
    let text =
        format!("(SELECT *, CAST(row_number() OVER () AS BIGINT) AS {number} FROM {factor})");
    *factor = derived_table(&text, outer)?;
    Ok(())
}

/// A scalar function in FROM (`SELECT * FROM current_schema()`, as TypeORM sends): one row
/// of one column, named as PostgreSQL names it (the table alias, else the function), as a
/// derived table `(SELECT f(…) AS name) AS alias`. `table_function` and `scalar_function`
/// say which names the session knows as which.
pub(crate) fn scalar_functions_in_from(
    stmt: &mut Statement,
    table_function: &dyn Fn(&str) -> bool,
    scalar_function: &dyn Fn(&str) -> bool,
) {
    struct Scalars<'a> {
        table_function: &'a dyn Fn(&str) -> bool,
        scalar_function: &'a dyn Fn(&str) -> bool,
    }
    impl VisitorMut for Scalars<'_> {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            let TableFactor::Table {
                name,
                args: Some(args),
                alias,
                with_ordinality: false,
                ..
            } = factor
            else {
                return ControlFlow::Continue(());
            };
            let [part] = name.0.as_slice() else {
                return ControlFlow::Continue(());
            };
            let Some(function) = part.as_ident().map(sql::ddl::normalize_ident) else {
                return ControlFlow::Continue(());
            };
            if (self.table_function)(&function) || !(self.scalar_function)(&function) {
                return ControlFlow::Continue(());
            }
            let column = match alias {
                Some(a) => match a.columns.first() {
                    Some(c) => c.name.clone(),
                    None => a.name.clone(),
                },
                None => Ident::with_quote('"', function.clone()),
            };
            let call = Expr::Function(ast::Function {
                name: name.clone(),
                uses_odbc_syntax: false,
                parameters: FunctionArguments::None,
                args: FunctionArguments::List(ast::FunctionArgumentList {
                    duplicate_treatment: None,
                    args: args.args.clone(),
                    clauses: vec![],
                }),
                filter: None,
                null_treatment: None,
                over: None,
                within_group: vec![],
            });
            let mut select = crate::session::parse_sql("SELECT 1")
                .ok()
                .and_then(|mut s| s.pop());
            let Some(Statement::Query(query)) = select.as_mut() else {
                return ControlFlow::Continue(());
            };
            if let ast::SetExpr::Select(s) = query.body.as_mut() {
                s.projection = vec![SelectItem::ExprWithAlias {
                    expr: call,
                    alias: column,
                }];
            }
            let alias = match alias.take() {
                Some(mut a) => {
                    a.columns.clear();
                    a
                }
                None => ast::TableAlias {
                    explicit: true,
                    name: Ident::with_quote('"', function),
                    columns: vec![],
                    at: None,
                },
            };
            *factor = TableFactor::Derived {
                lateral: false,
                subquery: query.clone(),
                alias: Some(alias),
                sample: None,
            };
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Scalars {
        table_function,
        scalar_function,
    });
}

#[cfg(test)]
mod tests {
    use crate::session::rewritten;

    #[test]
    fn set_returning_functions_unnest() {
        assert_eq!(
            rewritten("SELECT jsonb_array_elements(doc) FROM t"),
            "SELECT unnest(partita_jsonb_elements(doc)) AS jsonb_array_elements FROM t"
        );
        assert_eq!(
            rewritten("SELECT * FROM json_each_text('{}') AS e(k, v)"),
            "SELECT * FROM (SELECT unnest(partita_json_object_keys('{}')) AS key, \
             unnest(partita_json_object_values_text('{}')) AS value) AS e (k, v)"
        );
        assert_eq!(
            rewritten("SELECT value FROM jsonb_array_elements_text('[]')"),
            "SELECT value FROM (SELECT unnest(partita_jsonb_elements_text('[]')) AS value) AS \
             jsonb_array_elements_text"
        );
        assert_eq!(
            rewritten("SELECT (regexp_matches(s, '(a)(b)', 'g'))[2] FROM t"),
            "SELECT (unnest(partita_regexp_matches(s, '(a)(b)', 'g')))[2] AS regexp_matches FROM t"
        );
    }

    #[test]
    fn with_ordinality_numbers_the_rows() {
        assert_eq!(
            rewritten("SELECT * FROM generate_series(1, 3) WITH ORDINALITY AS g(v, n)"),
            "SELECT * FROM (SELECT *, CAST(row_number() OVER () AS BIGINT) AS n \
             FROM generate_series(1::INTEGER, 3::INTEGER) AS g (v)) AS g"
        );
        assert_eq!(
            rewritten("SELECT * FROM unnest(a) WITH ORDINALITY"),
            "SELECT * FROM (SELECT *, CAST(row_number() OVER () AS BIGINT) AS ordinality \
             FROM UNNEST(a) AS unnest) AS unnest"
        );
    }
}
