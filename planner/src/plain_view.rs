//! Plain views: `CREATE [OR REPLACE] VIEW v [(cols)] AS query`, `DROP VIEW`. A view stores
//! nothing; a statement that names it reads its query in its place (`expand`), as
//! PostgreSQL's rewriter does, so a key condition on the view still reaches the store
//! (EXPLAIN shows the base table's scan class). Views are read-only: INSERT, UPDATE and
//! DELETE on one are refused. (Materialized views, which Partita stores and maintains, are
//! `view`.)

use crate::dml::WriteResult;
use crate::error::{Error, Result};
use crate::session::{Session, parse_sql};
use datafusion::sql::sqlparser::ast::{
    self, Statement, TableAlias, TableAliasColumnDef, TableFactor, Visit, VisitMut, Visitor,
    VisitorMut,
};
use sql::PlainView;
use sql::ddl::{normalize_ident, table_name};
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;

/// How many views one statement may read, counting those views read: more is taken as a
/// view that reads itself.
const MAX_EXPANSIONS: usize = 256;

pub async fn create(session: &mut Session, create: &ast::CreateView) -> Result<WriteResult> {
    let name = table_name(&create.name)?;
    let columns: Vec<String> = create
        .columns
        .iter()
        .map(|c| normalize_ident(&c.name))
        .collect();
    let query = create.query.as_ref().clone();
    let mut reads = relations_named(&Statement::Query(Box::new(query.clone())));
    reads.sort();
    reads.dedup();
    // Plan the query now, as PostgreSQL does: an unknown table or column is an error here.
    let mut check = Statement::Query(Box::new(query.clone()));
    session.expand_views(&mut check)?;
    let Statement::Query(check) = check else {
        return Err(Error::Internal("view query".into()));
    };
    let plan = session.plan(Statement::Query(check)).await?;
    let width = plan.schema().fields().len();
    if columns.len() > width {
        return Err(Error::InvalidStatement(
            "CREATE VIEW specifies more column names than columns".into(),
        ));
    }
    let catalog = session.db.catalog.clone();
    let txn = session.open_txn()?;
    let scope = Arc::clone(&session.scope);
    let (exists_as_view, exists) = {
        let scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        (
            catalog.view(&name, &scope.changes).is_some(),
            catalog.relation_exists(&name, &scope.changes),
        )
    };
    if exists && !(exists_as_view && create.or_replace) {
        if create.if_not_exists {
            session.notice(format!("relation \"{name}\" already exists, skipping"));
            return Ok(WriteResult::command("CREATE VIEW"));
        }
        return Err(Error::Sql(sql::Error::DuplicateTable(name)));
    }
    let column_types = plan
        .schema()
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let name = columns.get(i).unwrap_or(field.name()).clone();
            let ty = match sql::types::declared_type_name(field) {
                Some(declared) => declared.to_string(),
                None => crate::pg_catalog::format_type(
                    i64::from(crate::pg_catalog::field_type_oid(field)),
                    None,
                ),
            };
            (name, ty)
        })
        .collect();
    let view = PlainView {
        name,
        columns,
        query: query.to_string(),
        reads,
        column_types,
    };
    crate::provider::with_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        catalog
            .write_view(t, &mut scope.changes, view)
            .map_err(|e| match e {
                sql::Error::Storage(e) => e,
                other => storage::Error::Internal(other.to_string()),
            })
    })?;
    Ok(WriteResult::command("CREATE VIEW"))
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
    for name in names {
        let name = table_name(name)?;
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
        let doomed = dependents(session, &name, cascade, "view")?;
        crate::provider::in_txn(&txn, |t| {
            let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            for v in doomed.iter().chain(std::iter::once(&name)) {
                catalog.drop_view(t, &mut scope.changes, v)?;
            }
            Ok(())
        })?;
    }
    Ok(WriteResult::command("DROP VIEW"))
}

/// The views that read relation `name`, directly or through other views, in the order
/// they can be dropped; without `cascade` any is 2BP01, as in PostgreSQL. With it, each
/// gets a notice.
pub(crate) fn dependents(
    session: &mut Session,
    name: &str,
    cascade: bool,
    kind: &str,
) -> Result<Vec<String>> {
    let views = {
        let scope = session.scope.lock().unwrap_or_else(|e| e.into_inner());
        session.db.catalog.views(&scope.changes)
    };
    let mut found: Vec<String> = Vec::new();
    let mut frontier = vec![name.to_string()];
    while let Some(relation) = frontier.pop() {
        for v in &views {
            if v.reads.contains(&relation) && !found.contains(&v.name) && v.name != name {
                found.push(v.name.clone());
                frontier.push(v.name.clone());
            }
        }
    }
    if found.is_empty() {
        return Ok(found);
    }
    if !cascade {
        return Err(Error::DependentObjects(format!(
            "cannot drop {kind} {name} because other objects depend on it: view {}",
            found.join(", ")
        )));
    }
    for v in &found {
        session.notice(format!("drop cascades to view {v}"));
    }
    found.reverse();
    Ok(found)
}

/// The relations a statement names in FROM clauses (WITH query names left out).
fn relations_named(stmt: &Statement) -> Vec<String> {
    struct Names {
        ctes: HashSet<String>,
        found: Vec<String>,
    }
    impl Visitor for Names {
        type Break = ();
        fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
            if let Some(with) = &q.with {
                for cte in &with.cte_tables {
                    self.ctes.insert(normalize_ident(&cte.alias.name));
                }
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_relation(&mut self, name: &ast::ObjectName) -> ControlFlow<()> {
            if let Ok(n) = table_name(name)
                && !self.ctes.contains(&n)
            {
                self.found.push(n);
            }
            ControlFlow::Continue(())
        }
    }
    let mut names = Names {
        ctes: HashSet::new(),
        found: Vec::new(),
    };
    let _ = stmt.visit(&mut names);
    names.found
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
    let target = match stmt {
        Statement::Insert(i) => match &i.table {
            ast::TableObject::TableName(n) => Some(("INSERT into", n.clone())),
            _ => None,
        },
        Statement::Update(u) => match &u.table.relation {
            TableFactor::Table { name, .. } => Some(("UPDATE of", name.clone())),
            _ => None,
        },
        Statement::Delete(d) => {
            let from = match &d.from {
                ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
            };
            match from.first().map(|t| &t.relation) {
                Some(TableFactor::Table { name, .. }) => Some(("DELETE from", name.clone())),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some((what, name)) = target
        && let Ok(n) = table_name(&name)
        && view_of(&n).is_some()
    {
        return Err(Error::Unsupported(format!(
            "{what} view \"{n}\" (views are read-only: write to the table it reads)"
        )));
    }
    struct Expander<'a> {
        view_of: &'a dyn Fn(&str) -> Option<Arc<PlainView>>,
        ctes: HashSet<String>,
        expanded: usize,
        error: Option<Error>,
    }
    impl VisitorMut for Expander<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
            if let Some(with) = &q.with {
                for cte in &with.cte_tables {
                    self.ctes.insert(normalize_ident(&cte.alias.name));
                }
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
            let TableFactor::Table {
                name,
                alias,
                args: None,
                ..
            } = t
            else {
                return ControlFlow::Continue(());
            };
            let Ok(n) = table_name(name) else {
                return ControlFlow::Continue(());
            };
            if self.ctes.contains(&n) {
                return ControlFlow::Continue(());
            }
            let Some(view) = (self.view_of)(&n) else {
                return ControlFlow::Continue(());
            };
            self.expanded += 1;
            if self.expanded > MAX_EXPANSIONS {
                self.error = Some(Error::InvalidRecursion(format!(
                    "infinite recursion detected in rules for relation \"{n}\""
                )));
                return ControlFlow::Break(());
            }
            let query = match parse_sql(&view.query).map(|mut s| s.pop()) {
                Ok(Some(Statement::Query(q))) => q,
                Ok(_) => {
                    self.error = Some(Error::Internal(format!("view \"{n}\" query")));
                    return ControlFlow::Break(());
                }
                Err(e) => {
                    self.error = Some(e);
                    return ControlFlow::Break(());
                }
            };
            let mut alias = alias.clone().unwrap_or(TableAlias {
                explicit: true,
                name: ast::Ident::with_quote('"', &view.name),
                columns: vec![],
                at: None,
            });
            if alias.columns.is_empty() {
                alias.columns = view
                    .columns
                    .iter()
                    .map(|c| TableAliasColumnDef {
                        name: ast::Ident::with_quote('"', c),
                        data_type: None,
                    })
                    .collect();
            }
            *t = TableFactor::Derived {
                lateral: false,
                subquery: query,
                alias: Some(alias),
                sample: None,
            };
            ControlFlow::Continue(())
        }
    }
    let mut expander = Expander {
        view_of,
        ctes: HashSet::new(),
        expanded: 0,
        error: None,
    };
    let _ = stmt.visit(&mut expander);
    match expander.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
