//! Plain views: `CREATE [OR REPLACE] VIEW v [(cols)] AS query`, `DROP VIEW`. A view stores
//! nothing; a statement that names it reads its query in its place (`expand`), as
//! PostgreSQL's rewriter does, so a key condition on the view still reaches the store
//! (EXPLAIN shows the base table's scan class). Views are read-only: INSERT, UPDATE and
//! DELETE on one are refused. `ALTER VIEW … RENAME` renames a view or one of its columns;
//! renaming what views read rewrites their queries (`read_renamed`). (Materialized views, which Partita stores and maintains, are
//! `view`.)

use crate::dml::WriteResult;
use crate::error::{Error, Result};
use crate::session::{Session, parse_sql};
use datafusion::sql::sqlparser::ast::{
    self, Statement, TableAlias, TableAliasColumnDef, TableFactor, Visit, VisitMut, Visitor,
    VisitorMut,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;
use sql::PlainView;
use sql::ddl::{normalize_ident, table_name};
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;

/// How deep views may read views.
const MAX_DEPTH: usize = 64;

/// `CREATE [OR REPLACE] VIEW v [(cols)] AS query`. The view's columns are fixed now, as
/// PostgreSQL fixes them: their names (the list given, then the query's own names as
/// PostgreSQL gives them), and the query is kept wrapped so that a `*` in it keeps meaning
/// the columns it meant today.
pub async fn create(session: &mut Session, create: &ast::CreateView) -> Result<WriteResult> {
    let name = table_name(&create.name)?;
    if create.temporary {
        return Err(Error::Unsupported("CREATE TEMPORARY VIEW".into()));
    }
    let given: Vec<String> = create
        .columns
        .iter()
        .map(|c| normalize_ident(&c.name))
        .collect();
    let mut query = create.query.as_ref().clone();
    let renames = crate::naming::alias_query_columns(&mut query)?;
    let mut reads = relations_named(&Statement::Query(Box::new(query.clone())));
    reads.sort();
    reads.dedup();
    // PostgreSQL makes such a view temporary itself; Partita has no temporary views.
    if let Some(temporary) = reads.iter().find(|name| {
        session
            .table_def(name)
            .is_ok_and(|t| t.temp_schema.is_some())
    }) {
        return Err(Error::Unsupported(format!(
            "a view of temporary table \"{temporary}\" (temporary views)"
        )));
    }
    // Plan the query now, as PostgreSQL does: an unknown table or column is an error here.
    let mut check = Statement::Query(Box::new(query.clone()));
    session.expand_views(&mut check)?;
    let Statement::Query(check) = check else {
        return Err(Error::Internal("view query".into()));
    };
    let plan = session.plan(Statement::Query(check)).await?;
    let fields = plan.schema().fields().clone();
    if given.len() > fields.len() {
        return Err(Error::InvalidStatement(
            "CREATE VIEW specifies more column names than columns".into(),
        ));
    }
    let planned: Vec<String> = fields.iter().map(|f| f.name().clone()).collect();
    let columns: Vec<String> = (0..fields.len())
        .map(|i| match given.get(i) {
            Some(n) => n.clone(),
            None => renames
                .name_of(i, &planned[i])
                .map_or_else(|| planned[i].clone(), str::to_string),
        })
        .collect();
    for names in [&planned, &columns] {
        if let Some(dup) = names
            .iter()
            .enumerate()
            .find(|(i, n)| names[..*i].contains(n))
        {
            return Err(Error::Sql(sql::Error::DuplicateColumn(dup.1.clone())));
        }
    }
    let column_types: Vec<(String, String)> = fields
        .iter()
        .zip(&columns)
        .map(|(field, name)| {
            let ty = match sql::types::declared_type_name(field) {
                Some(declared) => declared.to_string(),
                None => crate::pg_catalog::format_type(
                    i64::from(crate::pg_catalog::field_type_oid(field)),
                    None,
                ),
            };
            (name.clone(), ty)
        })
        .collect();
    let quoted: Vec<String> = planned
        .iter()
        .map(|n| format!("\"{}\"", n.replace('"', "\"\"")))
        .collect();
    let stored = format!(
        "SELECT {} FROM ({query}) AS \"__partita_view\"",
        quoted.join(", ")
    );

    let catalog = session.db.catalog.clone();
    let txn = session.open_txn()?;
    let scope = Arc::clone(&session.scope);
    let (old, exists) = {
        let scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        (
            catalog.view(&name, &scope.changes),
            catalog.name_taken(&name, false, &scope.changes),
        )
    };
    match &old {
        Some(old) if create.or_replace => replaceable(old, &column_types)?,
        _ if exists => {
            if create.if_not_exists {
                session.notice_coded(
                    "42P07",
                    format!("relation \"{name}\" already exists, skipping"),
                );
                return Ok(WriteResult::command("CREATE VIEW"));
            }
            if create.or_replace {
                return Err(Error::WrongObjectType(format!("\"{name}\" is not a view")));
            }
            return Err(Error::Sql(sql::Error::DuplicateTable(name)));
        }
        _ => {}
    }
    let view = PlainView {
        name,
        columns,
        query: stored,
        reads,
        column_types,
    };
    crate::provider::with_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        // Read what the view reads (and its own name), so a concurrent DROP of one of them,
        // or a table made under its name, conflicts with this transaction.
        for relation in view.reads.iter().chain(std::iter::once(&view.name)) {
            catalog.track_relation(t, relation).map_err(storage_error)?;
        }
        catalog
            .write_view(t, &mut scope.changes, view)
            .map_err(storage_error)
    })?;
    Ok(WriteResult::command("CREATE VIEW"))
}

fn storage_error(e: sql::Error) -> storage::Error {
    match e {
        sql::Error::Storage(e) => e,
        other => storage::Error::Internal(other.to_string()),
    }
}

/// CREATE OR REPLACE VIEW keeps the view's columns, as PostgreSQL does: it may add columns
/// at the end, not drop, rename or retype one (42P16).
fn replaceable(old: &PlainView, new: &[(String, String)]) -> Result<()> {
    if new.len() < old.column_types.len() {
        return Err(Error::Sql(sql::Error::InvalidDefinition(
            "cannot drop columns from view".into(),
        )));
    }
    for ((old_name, old_type), (new_name, new_type)) in old.column_types.iter().zip(new) {
        if old_name != new_name {
            return Err(Error::Sql(sql::Error::InvalidDefinition(format!(
                "cannot change name of view column \"{old_name}\" to \"{new_name}\""
            ))));
        }
        if old_type != new_type {
            return Err(Error::Sql(sql::Error::InvalidDefinition(format!(
                "cannot change data type of view column \"{old_name}\" from {old_type} to {new_type}"
            ))));
        }
    }
    Ok(())
}

/// `DROP VIEW [IF EXISTS] v, … [CASCADE]`: a view other views read needs CASCADE, which
/// drops them too.
pub async fn drop(
    session: &mut Session,
    names: &[ast::ObjectName],
    if_exists: bool,
    cascade: bool,
) -> Result<WriteResult> {
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    let listed = names
        .iter()
        .map(table_name)
        .collect::<sql::Result<Vec<_>>>()?;
    let mut dropped: Vec<String> = Vec::new();
    for name in listed.iter().cloned() {
        if dropped.contains(&name) {
            continue;
        }
        let (view, is_table) = {
            let scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            (
                catalog.view(&name, &scope.changes),
                catalog.relation_exists(&name, &scope.changes),
            )
        };
        if view.is_none() {
            if is_table {
                return Err(Error::WrongObjectType(format!("\"{name}\" is not a view")));
            }
            if if_exists {
                session.notice(format!("view \"{name}\" does not exist, skipping"));
                continue;
            }
            return Err(Error::UnknownView(name));
        }
        let doomed = dependents(session, &name, cascade, "view", &listed)?;
        crate::provider::in_txn(&txn, |t| {
            let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            for v in doomed.iter().chain(std::iter::once(&name)) {
                if !dropped.contains(v) {
                    catalog.drop_view(t, &mut scope.changes, v)?;
                    dropped.push(v.clone());
                }
            }
            Ok(())
        })?;
    }
    Ok(WriteResult::command("DROP VIEW"))
}

/// The views that read relation `name`, directly or through other views, in the order
/// they can be dropped; without `cascade` any not `listed` in the same statement is 2BP01,
/// as in PostgreSQL. With it, each gets a notice.
pub(crate) fn dependents(
    session: &mut Session,
    name: &str,
    cascade: bool,
    kind: &str,
    listed: &[String],
) -> Result<Vec<String>> {
    let views = {
        let scope = session.scope.lock().unwrap_or_else(|e| e.into_inner());
        session.db.catalog.views(&scope.changes)
    };
    let mut found: Vec<String> = Vec::new();
    // Each found view with what it depends on ("table t", "view v").
    let mut depends = Vec::new();
    let mut frontier = vec![name.to_string()];
    while let Some(relation) = frontier.pop() {
        for v in &views {
            if v.reads.contains(&relation) && !found.contains(&v.name) && v.name != name {
                found.push(v.name.clone());
                depends.push(match relation == name {
                    true => format!("view {} depends on {kind} {name}", v.name),
                    false => format!("view {} depends on view {relation}", v.name),
                });
                frontier.push(v.name.clone());
            }
        }
    }
    if found.is_empty() {
        return Ok(found);
    }
    let unlisted: Vec<&String> = found.iter().filter(|v| !listed.contains(v)).collect();
    if !cascade && !unlisted.is_empty() {
        return Err(Error::DependentObjects {
            message: format!("cannot drop {kind} {name} because other objects depend on it"),
            detail: depends.join("\n"),
        });
    }
    for v in unlisted {
        session.cascades_to(format!("view {v}"));
    }
    found.reverse();
    Ok(found)
}

/// The plain views that read relation `name` directly.
pub(crate) fn readers(session: &Session, name: &str) -> Vec<Arc<PlainView>> {
    let scope = session.scope.lock().unwrap_or_else(|e| e.into_inner());
    session
        .db
        .catalog
        .views(&scope.changes)
        .into_iter()
        .filter(|v| v.reads.iter().any(|r| r == name))
        .collect()
}

/// Whether view `v` may read column `column` of what it reads: it names it, or reads `*`.
pub(crate) fn may_read_column(v: &PlainView, column: &str) -> bool {
    let Ok(Some(stmt)) = parse_sql(&v.query).map(|mut s| s.pop()) else {
        return true;
    };
    struct Reads<'a> {
        column: &'a str,
        found: bool,
    }
    impl Visitor for Reads<'_> {
        type Break = ();
        fn pre_visit_select(&mut self, s: &ast::Select) -> ControlFlow<()> {
            self.found |= s.projection.iter().any(|i| {
                matches!(
                    i,
                    ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..)
                )
            });
            // JOIN … USING and NATURAL JOIN read columns no expression names (a word in
            // a string constant may count too: this only refuses more renames).
            self.found |= s.from.iter().any(|t| {
                let text = t.to_string().to_ascii_uppercase();
                text.contains(" USING") || text.contains("NATURAL ")
            });
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
            self.found |= sql::ddl::columns_read(e).iter().any(|c| c == self.column);
            ControlFlow::Continue(())
        }
    }
    let mut reads = Reads {
        column,
        found: false,
    };
    let _ = stmt.visit(&mut reads);
    reads.found
}

/// The WITH query names in scope while walking a statement: one set per query level.
#[derive(Default)]
struct Scopes(Vec<HashSet<String>>);

impl Scopes {
    fn enter(&mut self, q: &ast::Query) {
        let names = q.with.iter().flat_map(|w| &w.cte_tables);
        self.0
            .push(names.map(|cte| normalize_ident(&cte.alias.name)).collect());
    }

    fn leave(&mut self) {
        self.0.pop();
    }

    /// Whether `name` (as written) names a WITH query in scope: only a bare name can.
    fn is_cte(&self, name: &ast::ObjectName) -> bool {
        match name.0.as_slice() {
            [part] => part
                .as_ident()
                .is_some_and(|id| self.0.iter().any(|s| s.contains(&normalize_ident(id)))),
            _ => false,
        }
    }
}

/// Calls `f` on each FROM item of `stmt`, with the WITH query names in scope there; `f`
/// breaking stops the walk.
fn each_table_factor(
    stmt: &mut Statement,
    f: impl FnMut(&mut TableFactor, &Scopes) -> ControlFlow<()>,
) {
    struct Walker<F> {
        f: F,
        scopes: Scopes,
    }
    impl<F: FnMut(&mut TableFactor, &Scopes) -> ControlFlow<()>> VisitorMut for Walker<F> {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
            self.scopes.enter(q);
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.scopes.leave();
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
            (self.f)(t, &self.scopes)
        }
    }
    let _ = stmt.visit(&mut Walker {
        f,
        scopes: Scopes::default(),
    });
}

/// The relations a statement names in FROM clauses (WITH query names left out).
fn relations_named(stmt: &Statement) -> Vec<String> {
    struct Names {
        scopes: Scopes,
        found: Vec<String>,
    }
    impl Visitor for Names {
        type Break = ();
        fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
            self.scopes.enter(q);
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &ast::Query) -> ControlFlow<()> {
            self.scopes.leave();
            ControlFlow::Continue(())
        }
        fn pre_visit_relation(&mut self, name: &ast::ObjectName) -> ControlFlow<()> {
            if !self.scopes.is_cte(name)
                && let Ok(n) = table_name(name)
            {
                self.found.push(n);
            }
            ControlFlow::Continue(())
        }
    }
    let mut names = Names {
        scopes: Scopes::default(),
        found: Vec::new(),
    };
    let _ = stmt.visit(&mut names);
    names.found
}

/// The write a statement makes to a view, if any (EXPLAIN's statement too).
fn view_written(
    stmt: &Statement,
    view_of: &dyn Fn(&str) -> Option<Arc<PlainView>>,
) -> Option<(&'static str, String)> {
    let (what, name) = match stmt {
        Statement::Explain { statement, .. } => return view_written(statement, view_of),
        Statement::Insert(i) => match &i.table {
            ast::TableObject::TableName(n) => ("INSERT into", n),
            _ => return None,
        },
        Statement::Update(u) => match &u.table.relation {
            TableFactor::Table { name, .. } => ("UPDATE of", name),
            _ => return None,
        },
        Statement::Delete(d) => {
            let from = match &d.from {
                ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
            };
            match from.first().map(|t| &t.relation) {
                Some(TableFactor::Table { name, .. }) => ("DELETE from", name),
                _ => return None,
            }
        }
        _ => return None,
    };
    let name = table_name(name).ok()?;
    view_of(&name).is_some().then_some((what, name))
}

/// Replaces each view a statement reads with its query, as a subquery under the view's
/// name (or the alias given), its columns named as the view names them. Refuses writes to
/// a view.
pub(crate) fn expand(
    stmt: &mut Statement,
    view_of: &dyn Fn(&str) -> Option<Arc<PlainView>>,
) -> Result<()> {
    // A view's own query keeps the names it reads: they are expanded when it is read.
    if matches!(stmt, Statement::CreateView(_)) {
        return Ok(());
    }
    if let Some((what, name)) = view_written(stmt, view_of) {
        return Err(Error::Unsupported(format!(
            "{what} view \"{name}\" (views are read-only: write to the table it reads)"
        )));
    }
    expand_within(stmt, view_of, &[])
}

/// `expand`, inside the views of `chain` (a view met again inside its own query reads
/// itself: 42P17).
fn expand_within(
    stmt: &mut Statement,
    view_of: &dyn Fn(&str) -> Option<Arc<PlainView>>,
    chain: &[String],
) -> Result<()> {
    let mut error = None;
    each_table_factor(stmt, |t, scopes| {
        let TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } = t
        else {
            return ControlFlow::Continue(());
        };
        if scopes.is_cte(name) {
            return ControlFlow::Continue(());
        }
        let Ok(n) = table_name(name) else {
            return ControlFlow::Continue(());
        };
        let Some(view) = view_of(&n) else {
            return ControlFlow::Continue(());
        };
        if chain.contains(&n) || chain.len() >= MAX_DEPTH {
            error = Some(Error::InvalidObjectDefinition(format!(
                "infinite recursion detected in rules for relation \"{n}\""
            )));
            return ControlFlow::Break(());
        }
        let mut query = match parse_sql(&view.query).map(|mut s| s.pop()) {
            Ok(Some(q @ Statement::Query(_))) => q,
            Ok(_) => {
                error = Some(Error::Internal(format!("view \"{n}\" query")));
                return ControlFlow::Break(());
            }
            Err(e) => {
                error = Some(e);
                return ControlFlow::Break(());
            }
        };
        // The view's query sees its own WITH names only, and the views it reads.
        let mut chain = chain.to_vec();
        chain.push(n.clone());
        if let Err(e) = expand_within(&mut query, view_of, &chain) {
            error = Some(e);
            return ControlFlow::Break(());
        }
        let Statement::Query(query) = query else {
            return ControlFlow::Continue(());
        };
        let mut alias = alias.clone().unwrap_or(TableAlias {
            explicit: true,
            name: ast::Ident::with_quote('"', &view.name),
            columns: vec![],
            at: None,
        });
        // The view's names, after any the reference gives (`FROM v AS x(a)`).
        let given = alias.columns.len();
        alias.columns.extend(
            view.columns
                .iter()
                .skip(given)
                .map(|c| TableAliasColumnDef {
                    name: ast::Ident::with_quote('"', c),
                    data_type: None,
                }),
        );
        *t = TableFactor::Derived {
            lateral: false,
            subquery: query,
            alias: Some(alias),
            sample: None,
        };
        ControlFlow::Continue(())
    });
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `ALTER [MATERIALIZED] VIEW`, which sqlparser does not read, runs as a CALL of this
/// procedure with the statement's text, read again (`parse_alter`) when it runs.
pub const ALTER_PROCEDURE: &str = "partita_alter_view";

/// The text of the ALTER VIEW `call` carries, when it is one.
pub fn altered(call: &ast::Function) -> Option<String> {
    crate::session::internal_call_text(call, ALTER_PROCEDURE)
}

/// An `ALTER [MATERIALIZED] VIEW [IF EXISTS] name …` statement.
pub(crate) struct AlterView {
    materialized: bool,
    if_exists: bool,
    name: ast::ObjectName,
    action: ViewAction,
}

enum ViewAction {
    /// `RENAME TO to`
    Rename(ast::ObjectName),
    /// `RENAME [COLUMN] old TO new`
    RenameColumn(ast::Ident, ast::Ident),
    /// Any other action, named for the 0A000 it gets.
    Other(String),
}

/// Reads `ALTER [MATERIALIZED] VIEW …` after ALTER, up to the statement's end.
pub(crate) fn parse_alter(parser: &mut Parser) -> std::result::Result<AlterView, ParserError> {
    let materialized = parser.parse_keyword(Keyword::MATERIALIZED);
    parser.expect_keyword_is(Keyword::VIEW)?;
    let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = parser.parse_object_name(false)?;
    let action = if parser.parse_keyword(Keyword::RENAME) {
        if parser.parse_keyword(Keyword::TO) {
            ViewAction::Rename(parser.parse_object_name(false)?)
        } else {
            let _ = parser.parse_keyword(Keyword::COLUMN);
            let old = parser.parse_identifier()?;
            parser.expect_keyword_is(Keyword::TO)?;
            ViewAction::RenameColumn(old, parser.parse_identifier()?)
        }
    } else {
        // The other actions (OWNER TO, SET SCHEMA, ALTER COLUMN … SET DEFAULT, SET (…))
        // are named by their first words and refused when the statement runs.
        let mut words = Vec::new();
        while !matches!(parser.peek_token().token, Token::EOF | Token::SemiColon) {
            let token = parser.next_token().token;
            if words.len() < 2 {
                match token {
                    Token::Word(w) => words.push(w.value.to_uppercase()),
                    _ => return parser.expected("an ALTER VIEW action", parser.peek_token()),
                }
            }
        }
        if words.is_empty() {
            return parser.expected("an ALTER VIEW action", parser.peek_token());
        }
        ViewAction::Other(words.join(" "))
    };
    Ok(AlterView {
        materialized,
        if_exists,
        name,
        action,
    })
}

/// Runs the `ALTER [MATERIALIZED] VIEW` statement `text`.
pub async fn alter(session: &mut Session, text: &str) -> Result<WriteResult> {
    let dialect = datafusion::sql::sqlparser::dialect::PostgreSqlDialect {};
    let mut parser = Parser::new(&dialect)
        .try_with_sql(text)
        .and_then(|mut p| p.expect_keyword_is(Keyword::ALTER).map(|_| p))
        .map_err(|e| Error::Syntax(e.to_string()))?;
    let alter = parse_alter(&mut parser).map_err(|e| Error::Syntax(e.to_string()))?;
    let kind = match alter.materialized {
        true => "materialized view",
        false => "view",
    };
    let tag = match alter.materialized {
        true => "ALTER MATERIALIZED VIEW",
        false => "ALTER VIEW",
    };
    let name = table_name(&alter.name)?;
    let (view, table) = {
        let scope = session.scope.lock().unwrap_or_else(|e| e.into_inner());
        let catalog = &session.db.catalog;
        (
            catalog.view(&name, &scope.changes),
            catalog.table(&name, &scope.changes),
        )
    };
    let found = match alter.materialized {
        true => table.as_ref().is_some_and(|t| t.view.is_some()),
        false => view.is_some(),
    };
    if !found {
        if view.is_some() || table.is_some() {
            return Err(Error::WrongObjectType(format!(
                "\"{name}\" is not a {kind}"
            )));
        }
        if alter.if_exists {
            session.notice(format!("relation \"{name}\" does not exist, skipping"));
            return Ok(WriteResult::command(tag));
        }
        return Err(Error::Sql(sql::Error::UnknownTable(name)));
    }
    match (alter.action, view, table) {
        (ViewAction::Other(what), ..) => Err(Error::Unsupported(format!("{tag} … {what}"))),
        (ViewAction::Rename(to), Some(view), _) => {
            rename(session, &view, &table_name(&to)?)?;
            Ok(WriteResult::command(tag))
        }
        (ViewAction::Rename(to), None, Some(def)) => {
            Ok(crate::ddl::rename_table(session, &def, &table_name(&to)?)?.with_tag(tag))
        }
        (ViewAction::RenameColumn(old, new), Some(view), _) => {
            rename_column(
                session,
                &view,
                &normalize_ident(&old),
                &normalize_ident(&new),
            )?;
            Ok(WriteResult::command(tag))
        }
        (ViewAction::RenameColumn(..), ..) => Err(Error::Unsupported(
            "renaming a column of a materialized view".into(),
        )),
        (_, None, None) => Err(Error::Internal("ALTER VIEW of nothing".into())),
    }
}

/// `ALTER VIEW v RENAME TO to` (ALTER TABLE's too): the view's record moves to the new
/// name, and the views that read it read it under that name.
pub(crate) fn rename(session: &mut Session, view: &PlainView, to: &str) -> Result<()> {
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    let readers = readers(session, &view.name);
    crate::provider::in_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        if catalog.name_taken(to, false, &scope.changes) {
            return Err(Error::Sql(sql::Error::DuplicateTable(to.to_string())));
        }
        catalog.track_relation(t, to)?;
        catalog.drop_view(t, &mut scope.changes, &view.name)?;
        let mut renamed = view.clone();
        renamed.name = to.to_string();
        Ok(catalog.write_view(t, &mut scope.changes, renamed)?)
    })?;
    read_renamed(session, &readers, &view.name, to)
}

/// The views of `readers` (views that read relation `old`) read it as `new` from now on:
/// each `FROM old` in their queries becomes `FROM new AS old`, so the names they qualify
/// columns with keep meaning what they meant.
pub(crate) fn read_renamed(
    session: &mut Session,
    readers: &[Arc<PlainView>],
    old: &str,
    new: &str,
) -> Result<()> {
    if readers.is_empty() {
        return Ok(());
    }
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    for reader in readers {
        let mut query = match parse_sql(&reader.query)?.pop() {
            Some(q @ Statement::Query(_)) => q,
            _ => return Err(Error::Internal(format!("view \"{}\" query", reader.name))),
        };
        if !rename_relation(&mut query, old, new) {
            return Err(Error::Unsupported(format!(
                "renaming {old} to {new}: view {} has a WITH query named {new}",
                reader.name
            )));
        }
        let mut renamed = (**reader).clone();
        renamed.query = query.to_string();
        for read in &mut renamed.reads {
            if read == old {
                *read = new.to_string();
            }
        }
        renamed.reads.sort();
        renamed.reads.dedup();
        crate::provider::in_txn(&txn, |t| {
            let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            Ok(catalog.write_view(t, &mut scope.changes, renamed)?)
        })?;
    }
    Ok(())
}

/// Makes each reference to relation `old` in `stmt` (not a WITH query of that name) a
/// reference to `new` under the name `old`; `false`, leaving the rest, where a WITH query
/// named `new` is in scope, which the new name would read instead.
fn rename_relation(stmt: &mut Statement, old: &str, new: &str) -> bool {
    let mut clear = true;
    each_table_factor(stmt, |t, scopes| {
        let TableFactor::Table { name, alias, .. } = t else {
            return ControlFlow::Continue(());
        };
        if scopes.is_cte(name) || table_name(name).ok().as_deref() != Some(old) {
            return ControlFlow::Continue(());
        }
        let renamed = ast::ObjectName::from(vec![ast::Ident::with_quote('"', new)]);
        if scopes.is_cte(&renamed) {
            clear = false;
            return ControlFlow::Break(());
        }
        *name = ast::ObjectName::from(vec![ast::Ident::with_quote('"', new)]);
        if alias.is_none() {
            *alias = Some(TableAlias {
                explicit: true,
                name: ast::Ident::with_quote('"', old),
                columns: vec![],
                at: None,
            });
        }
        ControlFlow::Continue(())
    });
    clear
}

/// `ALTER VIEW v RENAME COLUMN old TO new` (ALTER TABLE's too). A column another view may
/// read keeps its name (0A000): that view's query names it.
pub(crate) fn rename_column(
    session: &mut Session,
    view: &PlainView,
    old: &str,
    new: &str,
) -> Result<()> {
    let Some(i) = view.columns.iter().position(|c| c == old) else {
        return Err(Error::UndefinedColumn(format!(
            "column \"{old}\" does not exist"
        )));
    };
    if view.columns.iter().any(|c| c == new) {
        return Err(Error::Sql(sql::Error::ColumnExists {
            table: view.name.clone(),
            column: new.to_string(),
        }));
    }
    if let Some(reader) = readers(session, &view.name)
        .iter()
        .find(|r| may_read_column(r, old))
    {
        return Err(Error::Unsupported(format!(
            "renaming a column that views read (view {} reads {}; drop the view first)",
            reader.name, view.name
        )));
    }
    let mut renamed = view.clone();
    renamed.columns[i] = new.to_string();
    if let Some(typed) = renamed.column_types.get_mut(i) {
        typed.0 = new.to_string();
    }
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    crate::provider::in_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        Ok(catalog.write_view(t, &mut scope.changes, renamed)?)
    })
}
