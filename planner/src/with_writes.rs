//! WITH queries around or holding writes, which DataFusion plans neither of:
//!
//! - `WITH x AS (SELECT …) INSERT … SELECT … FROM x` (and UPDATE, DELETE);
//! - `WITH moved AS (DELETE FROM t … RETURNING *) INSERT INTO archive SELECT * FROM moved`;
//! - `WITH n AS (INSERT … RETURNING id) SELECT … FROM n`.
//!
//! Each WITH query runs first, in its order and in the statement's transaction: a write is
//! made and its RETURNING rows kept, a query's rows are computed. Those rows become a table
//! of the statement under a name of its own (`StatementScope::local_tables`), and the FROM
//! items of the later parts that name the WITH query read that table. Then the main
//! statement runs.
//!
//! As in PostgreSQL every data-modifying WITH query runs once, whether or not it is read, a
//! query no later part reads does not run, and the statement is one transaction. Unlike PostgreSQL, which runs every part on one
//! snapshot, a later part sees the earlier parts' writes to tables (the rows a WITH query
//! computed are those of its turn).

use crate::dml::WriteResult;
use crate::error::{Error, Result};
use crate::session::Session;
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::datasource::MemTable;
use datafusion::sql::sqlparser::ast::{self, SetExpr, Statement, VisitMut, VisitorMut};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether `stmt` is a query whose WITH holds a write, or a write with a WITH.
pub(crate) fn applies(stmt: &Statement) -> bool {
    let Statement::Query(q) = stmt else {
        return false;
    };
    let Some(with) = &q.with else {
        return false;
    };
    is_write(&q.body) || with.cte_tables.iter().any(|cte| is_write(&cte.query.body))
}

fn is_write(body: &SetExpr) -> bool {
    matches!(
        body,
        SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_)
    )
}

/// The write a query body is, if it is one.
fn write_of(body: &SetExpr) -> Option<&Statement> {
    match body {
        SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) => Some(s),
        _ => None,
    }
}

/// The command a read-only transaction names refusing `stmt`, as PostgreSQL names it: its
/// main statement's (`SELECT` for a query around writes).
pub(crate) fn command_of(stmt: &Statement) -> Option<&Statement> {
    if !applies(stmt) {
        return None;
    }
    let Statement::Query(q) = stmt else {
        return None;
    };
    Some(write_of(&q.body).unwrap_or(stmt))
}

/// The WITH queries and the main statement of `stmt` (one that [`applies`]); a name given
/// twice is PostgreSQL's 42712, a write without RETURNING that a later part reads its 0A000.
fn split(stmt: &Statement) -> Result<(ast::With, ast::Query)> {
    let Statement::Query(query) = stmt else {
        return Err(Error::Internal("not a WITH statement".into()));
    };
    let mut main = query.as_ref().clone();
    let Some(with) = main.with.take() else {
        return Err(Error::Internal("not a WITH statement".into()));
    };
    for (i, cte) in with.cte_tables.iter().enumerate() {
        let name = sql::ddl::normalize_ident(&cte.alias.name);
        if with.cte_tables[..i]
            .iter()
            .any(|c| sql::ddl::normalize_ident(&c.alias.name) == name)
        {
            return Err(Error::DuplicateWithName(name));
        }
        let returns = match write_of(&cte.query.body) {
            Some(Statement::Insert(insert)) => insert.returning.is_some(),
            Some(Statement::Update(update)) => update.returning.is_some(),
            Some(Statement::Delete(delete)) => delete.returning.is_some(),
            _ => true,
        };
        if !returns && read_later(&with, i, &main) {
            return Err(Error::NotSupported {
                message: format!("WITH query \"{name}\" does not have a RETURNING clause"),
                detail: None,
            });
        }
    }
    Ok((with, main))
}

/// Whether a part after the `i`-th WITH query names it.
fn read_later(with: &ast::With, i: usize, main: &ast::Query) -> bool {
    let name = sql::ddl::normalize_ident(&with.cte_tables[i].alias.name);
    let mut read = false;
    let mut look = |relation: &ast::ObjectName| {
        if sql::ddl::table_name(relation).is_ok_and(|n| n == name) {
            read = true;
        }
        ControlFlow::<()>::Continue(())
    };
    for later in &with.cte_tables[i + 1..] {
        let _ = ast::visit_relations(&later.query, &mut look);
    }
    let _ = ast::visit_relations(main, &mut look);
    read
}

/// The name the rows of a WITH query are kept under while the statement runs: its own
/// would find them where PostgreSQL does not look for a WITH query (the table a DELETE
/// writes, `public.t`, a view's query).
fn internal_name(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "partita_with_{}_{name}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Points the FROM items naming earlier WITH queries at their rows (`names`: each query's
/// name and internal name), under the name they had.
struct Renamer<'a>(&'a [(String, String)]);

impl VisitorMut for Renamer<'_> {
    type Break = ();
    fn pre_visit_table_factor(&mut self, t: &mut ast::TableFactor) -> ControlFlow<()> {
        if let ast::TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } = t
            && name.0.len() == 1
            && let Ok(plain) = sql::ddl::table_name(name)
            && let Some((_, internal)) = self.0.iter().find(|(n, _)| *n == plain)
        {
            *name = ast::ObjectName::from(vec![ast::Ident::with_quote('"', internal)]);
            if alias.is_none() {
                *alias = Some(ast::TableAlias {
                    explicit: true,
                    name: ast::Ident::with_quote('"', plain),
                    columns: vec![],
                    at: None,
                });
            }
        }
        ControlFlow::Continue(())
    }
}

/// `Renamer` over what a write reads: not the table it writes.
fn rename_in_write(write: &mut Statement, names: &[(String, String)]) {
    let mut renamer = Renamer(names);
    match write {
        Statement::Insert(insert) => {
            if let Some(source) = &mut insert.source {
                let _ = source.visit(&mut renamer);
            }
        }
        Statement::Update(update) => {
            if let Some(
                ast::UpdateTableFromKind::BeforeSet(from)
                | ast::UpdateTableFromKind::AfterSet(from),
            ) = &mut update.from
            {
                let _ = from.visit(&mut renamer);
            }
            let _ = update.assignments.visit(&mut renamer);
            let _ = update.selection.visit(&mut renamer);
        }
        Statement::Delete(delete) => {
            let _ = delete.using.visit(&mut renamer);
            let _ = delete.selection.visit(&mut renamer);
        }
        _ => {}
    }
}

/// A part of the statement as it runs: a write, or a query read whole.
enum Part {
    Write(Statement),
    Query(Statement),
}

/// The `i`-th WITH query as it runs, reading the earlier ones' rows; `None` for a query no
/// later part reads, which PostgreSQL does not run.
fn cte_part(
    with: &ast::With,
    i: usize,
    main: &ast::Query,
    names: &[(String, String)],
) -> Option<Part> {
    let mut cte = with.cte_tables[i].clone();
    if let Some(write) = write_mut(&mut cte.query.body) {
        rename_in_write(write, names);
        if let Some(inner) = &mut cte.query.with {
            for c in &mut inner.cte_tables {
                let _ = c.query.visit(&mut Renamer(names));
            }
            return Some(Part::Write(Statement::Query(cte.query)));
        }
        return write_mut(&mut cte.query.body).map(|w| Part::Write(w.clone()));
    }
    if !read_later(with, i, main) {
        return None;
    }
    let _ = cte.query.visit(&mut Renamer(names));
    Some(Part::Query(alone(with, &cte)))
}

/// The main statement as it runs, reading the WITH queries' rows.
fn main_part(mut main: ast::Query, names: &[(String, String)]) -> Part {
    if let Some(write) = write_mut(&mut main.body) {
        rename_in_write(write, names);
        return Part::Write(write.clone());
    }
    let _ = main.visit(&mut Renamer(names));
    Part::Query(Statement::Query(Box::new(main)))
}

fn write_mut(body: &mut SetExpr) -> Option<&mut Statement> {
    match body {
        SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) => Some(s),
        _ => None,
    }
}

/// The query a WITH query that is not a write is read as: itself as the only WITH query of
/// `SELECT * FROM name` (so it may be recursive).
fn alone(with: &ast::With, cte: &ast::Cte) -> Statement {
    let with = ast::With {
        with_token: with.with_token.clone(),
        recursive: with.recursive,
        cte_tables: vec![cte.clone()],
    };
    Statement::Query(Box::new(crate::dml::plain_query(
        Some(with),
        select_all(&cte.alias.name),
    )))
}

/// Runs `stmt` (one that [`applies`]) in the session's open transaction.
pub(crate) async fn run(session: &mut Session, stmt: &Statement) -> Result<WriteResult> {
    let (with, main) = split(stmt)?;
    let mut tables = LocalTables::new(session);
    let mut names = Vec::new();
    for (i, cte) in with.cte_tables.iter().enumerate() {
        let rows = match cte_part(&with, i, &main, &names) {
            None => continue,
            Some(Part::Write(write)) => {
                let mut result = match write {
                    Statement::Query(_) => Box::pin(run(session, &write)).await?,
                    write => Box::pin(session.exec_write(&write)).await?,
                };
                result.rows_now().await?
            }
            Some(Part::Query(query)) => Some(session.collect_statement(query).await?),
        };
        // A write without RETURNING has no rows to read: its name is left unbound.
        let Some((schema, batches)) = rows else {
            continue;
        };
        let name = sql::ddl::normalize_ident(&cte.alias.name);
        let (schema, batches) = conformed(schema, batches, &name, &cte.alias.columns)?;
        let internal = internal_name(&name);
        tables.insert(&internal, MemTable::try_new(schema, vec![batches])?);
        names.push((name, internal));
    }
    match main_part(main, &names) {
        Part::Write(write) => Box::pin(session.exec_write(&write)).await,
        Part::Query(query) => {
            let (schema, batches) = session.collect_statement(query).await?;
            Ok(WriteResult::rows(schema, batches, "SELECT"))
        }
    }
}

/// Describes `stmt` (one that [`applies`]) without running it: each WITH query is
/// described in turn and stands, empty, for its rows while the later parts are.
pub(crate) async fn describe(
    session: &Session,
    stmt: &Statement,
    params: usize,
) -> Result<crate::session::Description> {
    let (with, main) = split(stmt)?;
    let mut tables = LocalTables::new(session);
    let mut described = crate::session::Description {
        params: vec![None; params],
        declared: vec![None; params],
        schema: None,
    };
    let mut merge = |part: crate::session::Description| {
        for (i, (ty, declared)) in part.params.into_iter().zip(part.declared).enumerate() {
            if i < params && described.params[i].is_none() {
                described.params[i] = ty;
                described.declared[i] = declared;
            }
        }
        part.schema
    };
    let mut names = Vec::new();
    for (i, cte) in with.cte_tables.iter().enumerate() {
        let part = match cte_part(&with, i, &main, &names) {
            None => continue,
            Some(Part::Write(s) | Part::Query(s)) => Box::pin(session.describe(&s)).await?,
        };
        let Some(schema) = merge(part) else {
            continue;
        };
        let name = sql::ddl::normalize_ident(&cte.alias.name);
        let (schema, _) = conformed(schema, vec![], &name, &cte.alias.columns)?;
        let internal = internal_name(&name);
        tables.insert(&internal, MemTable::try_new(schema, vec![vec![]])?);
        names.push((name, internal));
    }
    let (Part::Write(main) | Part::Query(main)) = main_part(main, &names);
    let part = Box::pin(session.describe(&main)).await?;
    described.schema = merge(part);
    Ok(described)
}

/// `SELECT * FROM name`.
fn select_all(name: &ast::Ident) -> SetExpr {
    let text = format!("SELECT * FROM {name}");
    match crate::session::parse_sql(&text)
        .ok()
        .and_then(|mut s| s.pop())
    {
        Some(Statement::Query(q)) => *q.body,
        _ => SetExpr::Values(ast::Values {
            explicit_row: false,
            value_keyword: false,
            rows: vec![],
        }),
    }
}

/// The rows as a table: each column named as the result names it (or as the WITH query's
/// column list does, `WITH n(id) AS …`) and typed as its values are (a result's described
/// type may be PostgreSQL's where the values are DataFusion's, `id + 1` of an integer).
fn conformed(
    schema: Arc<Schema>,
    batches: Vec<RecordBatch>,
    name: &str,
    columns: &[ast::TableAliasColumnDef],
) -> Result<(Arc<Schema>, Vec<RecordBatch>)> {
    if columns.len() > schema.fields().len() {
        return Err(Error::WithColumnCount {
            name: name.to_string(),
            available: schema.fields().len(),
            given: columns.len(),
        });
    }
    let typed = batches.first().map(|b| b.schema());
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let name = columns
                .get(i)
                .map_or_else(|| f.name().clone(), |c| sql::ddl::normalize_ident(&c.name));
            let ty = typed
                .as_ref()
                .and_then(|t| t.fields().get(i).map(|f| f.data_type().clone()))
                .unwrap_or_else(|| f.data_type().clone());
            Field::new(name, ty, true).with_metadata(f.metadata().clone())
        })
        .collect();
    let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let batches = batches
        .into_iter()
        .map(|b| RecordBatch::try_new(Arc::clone(&schema), b.columns().to_vec()))
        .collect::<std::result::Result<_, _>>()
        .map_err(datafusion::error::DataFusionError::from)?;
    Ok((schema, batches))
}

/// The statement's tables, forgotten when it ends (also when it fails).
struct LocalTables {
    scope: Arc<std::sync::Mutex<crate::schema::StatementScope>>,
    names: Vec<String>,
}

impl LocalTables {
    fn new(session: &Session) -> LocalTables {
        LocalTables {
            scope: Arc::clone(&session.scope),
            names: Vec::new(),
        }
    }

    fn insert(&mut self, name: &str, table: MemTable) {
        self.scope
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .local_tables
            .insert(name.to_string(), Arc::new(table) as Arc<dyn TableProvider>);
        self.names.push(name.to_string());
    }
}

impl Drop for LocalTables {
    fn drop(&mut self) {
        let mut scope = self.scope.lock().unwrap_or_else(|e| e.into_inner());
        for name in &self.names {
            scope.local_tables.remove(name);
        }
    }
}
