//! Denormalized (materialized) views: `CREATE MATERIALIZED VIEW v WITH (primary_key =
//! '((actor), title)') AS SELECT cols FROM base [WHERE condition]` stores the base rows
//! that meet the condition again, projected, under the view's own key — the seeds' "store
//! the data twice under another key" — and keeps them exact in the same transaction as
//! every base row change, rows entering or leaving the condition and key changes included.
//!
//! A view is a table of the catalog (queried, classified and indexed like one; DML on it is
//! 42809) whose definition carries `ViewDef`; the base table holds a copy of each of its
//! views' definitions to maintain them. The select list names base columns (renamed with AS
//! or a column list); every base key column must be among them and is appended to the
//! view's row key when the declared key lacks it, so two base rows never share a view row.
//! Rows with a NULL in a view key column are not in the view. Joins, aggregates, DISTINCT,
//! expressions in the select list and volatile functions are refused (0A000).

use crate::dml::WriteResult;
use crate::error::{Error, Result};
use crate::provider::{in_txn, stored_values};
use crate::session::Session;
use datafusion::sql::sqlparser::ast::{self, Visit, Visitor};
use sql::catalog::{RowKeyPart, TableDef, ViewDef};
use std::ops::ControlFlow;
use std::sync::Arc;
use storage::{Direction, KeyRange, KeyspaceKind, Transaction, Value};

/// Functions whose value can change between evaluations of the same row.
const VOLATILE: &[&str] = &[
    "random",
    "now",
    "current_timestamp",
    "current_date",
    "current_time",
    "localtimestamp",
    "clock_timestamp",
    "statement_timestamp",
    "transaction_timestamp",
    "timeofday",
    "nextval",
    "uuid",
    "gen_random_uuid",
    "partita_uuid_generate_v1",
    "partita_uuid_generate_v1mc",
    "partita_uuid_generate_v4",
];

/// `CREATE MATERIALIZED VIEW`: creates the view table and fills it from the base rows the
/// transaction sees.
pub async fn create_view(session: &mut Session, create: &ast::CreateView) -> Result<WriteResult> {
    if !create.materialized {
        return crate::plain_view::create(session, create).await;
    }
    let name = sql::ddl::table_name(&create.name)?;
    let key_spec = primary_key_option(&create.options).ok_or_else(|| {
        Error::Unsupported(
            "a materialized view without WITH (primary_key = '((partition cols), row cols)')"
                .into(),
        )
    })?;
    let select = simple_select(&create.query)?;
    let base_name = match select.from.as_slice() {
        [
            ast::TableWithJoins {
                relation: ast::TableFactor::Table { name, .. },
                joins,
            },
        ] if joins.is_empty() => sql::ddl::table_name(name)?,
        _ => {
            return Err(Error::Unsupported(
                "a materialized view over anything but one table (joins)".into(),
            ));
        }
    };
    let base = session.table_def(&base_name)?;
    if base.temp_schema.is_some() {
        // PostgreSQL's words: a materialized view lives longer than the session.
        return Err(Error::Unsupported(
            "materialized views must not use temporary tables or views".into(),
        ));
    }
    if base.view.is_some() {
        return Err(Error::Unsupported(
            "a materialized view of a materialized view".into(),
        ));
    }
    // The select list: base columns, maybe renamed.
    let mut columns: Vec<(String, usize)> = Vec::new();
    for item in &select.projection {
        match item {
            ast::SelectItem::Wildcard(_) => {
                for (i, c) in base.columns.iter().enumerate().filter(|(_, c)| !c.hidden) {
                    columns.push((c.name.clone(), i));
                }
            }
            ast::SelectItem::UnnamedExpr(ast::Expr::Identifier(ident)) => {
                let (i, c) = base.column(&sql::ddl::normalize_ident(ident))?;
                columns.push((c.name.clone(), i));
            }
            ast::SelectItem::ExprWithAlias {
                expr: ast::Expr::Identifier(ident),
                alias,
            } => {
                let (i, _) = base.column(&sql::ddl::normalize_ident(ident))?;
                columns.push((sql::ddl::normalize_ident(alias), i));
            }
            other => {
                return Err(Error::Unsupported(format!(
                    "expressions in a materialized view's select list ({other})"
                )));
            }
        }
    }
    if !create.columns.is_empty() {
        if create.columns.len() != columns.len() {
            return Err(Error::Syntax(
                "the view's column list does not match its select list".into(),
            ));
        }
        for (c, named) in columns.iter_mut().zip(&create.columns) {
            c.0 = sql::ddl::normalize_ident(&named.name);
        }
    }
    for &k in base
        .partition_key
        .iter()
        .chain(base.row_key.iter().map(|p| &p.column))
    {
        if !columns.iter().any(|(_, c)| *c == k) {
            return Err(Error::Unsupported(format!(
                "a materialized view without the base key column \"{}\"",
                base.columns[k].name
            )));
        }
    }
    let predicate = select.selection.as_ref().map(|p| p.to_string());
    if let Some(p) = &select.selection {
        check_deterministic(p)?;
    }
    // The view's own definition, from the key spec as CREATE TABLE reads it.
    let column_sql: Vec<String> = columns
        .iter()
        .map(|(n, c)| format!("\"{n}\" {}", base.columns[*c].ty))
        .collect();
    let ddl = format!(
        "CREATE TABLE \"{name}\" ({}, PRIMARY KEY {key_spec})",
        column_sql.join(", ")
    );
    let ast::Statement::CreateTable(table) = crate::session::parse_sql(&ddl)?.remove(0) else {
        return Err(Error::Internal("view definition did not parse".into()));
    };
    // The base columns' enum types, which the definition names.
    let user: Vec<_> = base.columns.iter().map(|c| c.ty).collect();
    let mut view = sql::ddl::table_def_from_create(&table, &user)?;
    for (position, (_, base_column)) in columns.iter().enumerate() {
        let is_key = view.partition_key.contains(&position)
            || view.row_key.iter().any(|p| p.column == position);
        let base_key = base.is_key_column(*base_column);
        if base_key && !is_key {
            view.row_key.push(RowKeyPart {
                column: position,
                desc: false,
            });
            view.columns[position].nullable = false;
        }
    }
    view.view = Some(ViewDef {
        base: base.name.clone(),
        columns: columns.iter().map(|(_, c)| *c).collect(),
        predicate,
    });
    // Check the condition compiles before anything is written.
    if let Some(text) = view.view.as_ref().and_then(|v| v.predicate.as_deref()) {
        crate::conditions::condition(
            crate::conditions::Kind::ViewWhere,
            text,
            &crate::conditions::row_schema(&base),
        )?;
    }

    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    {
        let scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        if catalog.name_taken(&name, false, &scope.changes) {
            drop(scope);
            if create.if_not_exists {
                session.notice_coded(
                    "42P07",
                    format!("relation \"{name}\" already exists, skipping"),
                );
                return Ok(WriteResult::command("CREATE MATERIALIZED VIEW"));
            }
            return Err(Error::Sql(sql::Error::DuplicateTable(name)));
        }
    }
    let layout = view.layout()?;
    in_txn(&txn, |t| {
        catalog.track_read(t, &base.name)?;
        view.keyspace = t.create_keyspace(KeyspaceKind::View, &view.name, layout)?;
        fill(&base, &view, t)?;
        let mut new_base = base.as_ref().clone();
        new_base.views.push(view.clone());
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        catalog.write(t, &mut scope.changes, new_base)?;
        catalog.write(t, &mut scope.changes, view)?;
        Ok(())
    })?;
    Ok(WriteResult::command("CREATE MATERIALIZED VIEW"))
}

/// `DROP MATERIALIZED VIEW [IF EXISTS] v, …`.
pub async fn drop_views(
    session: &mut Session,
    names: &[ast::ObjectName],
    if_exists: bool,
) -> Result<WriteResult> {
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    for name in names {
        let name = sql::ddl::table_name(name)?;
        let view = match session.table_def(&name) {
            Ok(def) if def.view.is_some() => def,
            Ok(_) => {
                return Err(Error::WrongObjectType(format!(
                    "\"{name}\" is not a materialized view"
                )));
            }
            Err(_) if if_exists => {
                session.notice(format!(
                    "materialized view \"{name}\" does not exist, skipping"
                ));
                continue;
            }
            Err(e) => return Err(e),
        };
        crate::plain_view::dependents(session, &name, false, "materialized view", &[])?;
        let base_name = view
            .view
            .as_ref()
            .map(|v| v.base.clone())
            .unwrap_or_default();
        let base = session.table_def(&base_name)?;
        let mut new_base = base.as_ref().clone();
        new_base.views.retain(|v| v.name != name);
        in_txn(&txn, |t| {
            let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            catalog.drop_table(t, &mut scope.changes, &name)?;
            catalog.write(t, &mut scope.changes, new_base)?;
            Ok(())
        })?;
    }
    Ok(WriteResult::command("DROP MATERIALIZED VIEW"))
}

/// The procedure `REFRESH MATERIALIZED VIEW v` is parsed into a CALL of.
pub const REFRESH_PROCEDURE: &str = "partita_refresh_materialized_view";

/// `CALL partita_refresh_materialized_view('v')`, what `REFRESH MATERIALIZED VIEW v` means
/// (the name as the catalog spells it).
pub fn refresh_call(view: &ast::ObjectName) -> Result<ast::Statement> {
    Ok(crate::session::internal_call(
        REFRESH_PROCEDURE,
        &sql::ddl::table_name(view)?,
    ))
}

/// The view a refresh CALL names.
pub fn refreshed_view(call: &ast::Function) -> Option<String> {
    crate::session::internal_call_text(call, REFRESH_PROCEDURE)
}

/// `REFRESH MATERIALIZED VIEW v`: rebuilds the view's rows from its base rows. The view is
/// kept exact by every write, so this changes nothing unless the view was damaged (which
/// `partita_check` would show).
pub async fn refresh(session: &mut Session, name: &str) -> Result<WriteResult> {
    let view = session.table_def(name)?;
    let Some(v) = &view.view else {
        return Err(Error::WrongObjectType(format!(
            "\"{name}\" is not a materialized view"
        )));
    };
    let base = session.table_def(&v.base)?;
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    in_txn(&txn, |t| {
        catalog.track_read(t, &base.name)?;
        catalog.track_read(t, &view.name)?;
        let stale: Vec<bytes::Bytes> = t
            .scan(view.keyspace, &KeyRange::all(), Direction::Forward)?
            .map(|row| row.map(|r| r.key))
            .collect::<storage::Result<_>>()?;
        for key in stale {
            t.delete(view.keyspace, &key)?;
        }
        fill(&base, &view, t)?;
        Ok(())
    })?;
    Ok(WriteResult::command("REFRESH MATERIALIZED VIEW"))
}

/// Writes the view rows of every base row the transaction sees.
fn fill(base: &TableDef, view: &TableDef, t: &mut Transaction) -> Result<()> {
    let rows: Vec<Vec<Value>> = t
        .scan(base.keyspace, &KeyRange::all(), Direction::Forward)?
        .map(|row| stored_values(base, &row?.value))
        .collect::<storage::Result<_>>()?;
    for values in &rows {
        if let Some((key, value)) = entry(base, view, values)? {
            t.put(view.keyspace, &key, value)?;
        }
    }
    Ok(())
}

/// Brings every view of `base` in line with a base row going from `old` to `new`.
pub fn maintain(
    base: &TableDef,
    t: &mut Transaction,
    old: Option<&[Value]>,
    new: Option<&[Value]>,
) -> Result<()> {
    for view in &base.views {
        let old_row = old.map(|v| entry(base, view, v)).transpose()?.flatten();
        let new_row = new.map(|v| entry(base, view, v)).transpose()?.flatten();
        if old_row == new_row {
            continue;
        }
        if let Some((key, _)) = &old_row {
            t.delete(view.keyspace, key)?;
        }
        if let Some((key, value)) = new_row {
            t.put(view.keyspace, &key, value)?;
        }
    }
    Ok(())
}

/// The view row for a base row: `None` when the row fails the condition or has a NULL in
/// a view key column.
pub fn entry(
    base: &TableDef,
    view: &TableDef,
    values: &[Value],
) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    let Some(v) = &view.view else {
        return Ok(None);
    };
    let row: Vec<Value> = v.columns.iter().map(|&c| values[c].clone()).collect();
    let key_columns = view
        .partition_key
        .iter()
        .copied()
        .chain(view.row_key.iter().map(|p| p.column));
    if key_columns.clone().any(|c| row[c].is_null()) {
        return Ok(None);
    }
    if v.predicate.is_some() && !accepts(base, view, values)? {
        return Ok(None);
    }
    let layout = view.layout()?;
    let pk: Vec<Value> = view.partition_key.iter().map(|&c| row[c].clone()).collect();
    let rk: Vec<Value> = view.row_key.iter().map(|p| row[p.column].clone()).collect();
    let key = layout.encode(&pk, &rk)?;
    Ok(Some((
        key,
        storage::rowcodec::encode_row(view.schema_version, &row),
    )))
}

/// Whether a base row meets the view's condition (NULL counts as not met, as in WHERE).
fn accepts(base: &TableDef, view: &TableDef, values: &[Value]) -> Result<bool> {
    let Some(text) = view.view.as_ref().and_then(|v| v.predicate.as_deref()) else {
        return Ok(true);
    };
    let schema = crate::conditions::row_schema(base);
    let condition =
        crate::conditions::condition(crate::conditions::Kind::ViewWhere, text, &schema)?;
    let batch = crate::conditions::row_batch(base, &schema, values)?;
    Ok(crate::conditions::holds(&condition, &batch)? == Some(true))
}

/// The WITH (primary_key = '…') option.
fn primary_key_option(options: &ast::CreateTableOptions) -> Option<String> {
    let ast::CreateTableOptions::With(options) = options else {
        return None;
    };
    options.iter().find_map(|o| match o {
        ast::SqlOption::KeyValue {
            key,
            value: ast::Expr::Value(v),
        } if key.value.eq_ignore_ascii_case("primary_key") => match &v.value {
            ast::Value::SingleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    })
}

/// The query as one plain SELECT, or the reason it cannot be maintained row by row.
fn simple_select(query: &ast::Query) -> Result<&ast::Select> {
    let refuse = |what: &str| Err(Error::Unsupported(format!("{what} in a materialized view")));
    if query.with.is_some() {
        return refuse("WITH");
    }
    if query.order_by.is_some() || query.limit_clause.is_some() || query.fetch.is_some() {
        return refuse("ORDER BY, LIMIT or FETCH");
    }
    let ast::SetExpr::Select(select) = query.body.as_ref() else {
        return refuse("UNION, INTERSECT, EXCEPT or VALUES");
    };
    if select.distinct.is_some() {
        return refuse("DISTINCT");
    }
    let grouped = !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty());
    if grouped || select.having.is_some() {
        return refuse("aggregates (GROUP BY, HAVING)");
    }
    let mut aggregate = false;
    for item in &select.projection {
        let _ = item.visit(&mut FunctionFinder(&mut |name: &str| {
            aggregate |= ["count", "sum", "avg", "min", "max"].contains(&name)
        }));
    }
    if aggregate {
        return refuse("aggregates");
    }
    Ok(select)
}

struct FunctionFinder<'a>(&'a mut dyn FnMut(&str));

impl Visitor for FunctionFinder<'_> {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
        if let ast::Expr::Function(f) = e {
            (self.0)(&f.name.to_string().to_ascii_lowercase());
        }
        ControlFlow::Continue(())
    }
}

fn check_deterministic(predicate: &ast::Expr) -> Result<()> {
    let mut volatile = None;
    let _ = predicate.visit(&mut FunctionFinder(&mut |name: &str| {
        if VOLATILE.contains(&name) {
            volatile = Some(name.to_string());
        }
    }));
    let subquery = predicate
        .to_string()
        .to_ascii_lowercase()
        .contains("select ");
    match (volatile, subquery) {
        (Some(f), _) => Err(Error::Unsupported(format!(
            "the volatile function {f}() in a materialized view"
        ))),
        (None, true) => Err(Error::Unsupported(
            "subqueries in a materialized view".into(),
        )),
        (None, false) => Ok(()),
    }
}
