//! `SELECT *` never shows system columns.
//!
//! A statement that names `_etag`, `_timestamp` or `_rowid` is planned with those columns in
//! its tables' schemas, so DataFusion's own `*` would include them. Before planning such a
//! statement, each `*` and `t.*` over Partita tables is written out as the tables' user
//! columns. Where that cannot be done faithfully (a join with USING or NATURAL, whose `*`
//! merges columns; a FROM item with no name to qualify by) the `*` is left as it is.

use datafusion::sql::sqlparser::ast::{
    Expr, Ident, ObjectName, Query, Select, SelectItem, SelectItemQualifiedWildcardKind, SetExpr,
    Statement, TableFactor, VisitMut, VisitorMut,
};
use sql::ddl::{normalize_ident, table_name};
use std::ops::ControlFlow;

/// Where a FROM item's columns come from.
enum Source {
    /// A table: its qualifier and user columns.
    Table(String, Vec<String>),
    /// A derived table or function with an alias: `alias.*`.
    Aliased(Ident),
}

/// Writes out `*` as user columns; `columns_of` gives a table's user columns by name.
pub fn expand_wildcards(stmt: &mut Statement, columns_of: &dyn Fn(&str) -> Option<Vec<String>>) {
    struct Expander<'a> {
        columns_of: &'a dyn Fn(&str) -> Option<Vec<String>>,
    }
    impl VisitorMut for Expander<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
            expand_body(&mut q.body, self.columns_of);
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Expander { columns_of });
}

fn expand_body(body: &mut SetExpr, columns_of: &dyn Fn(&str) -> Option<Vec<String>>) {
    match body {
        SetExpr::Select(s) => expand_select(s, columns_of),
        SetExpr::SetOperation { left, right, .. } => {
            expand_body(left, columns_of);
            expand_body(right, columns_of);
        }
        _ => {}
    }
}

fn expand_select(s: &mut Select, columns_of: &dyn Fn(&str) -> Option<Vec<String>>) {
    let has_wildcard = s.projection.iter().any(|i| {
        matches!(
            i,
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
        )
    });
    if !has_wildcard {
        return;
    }
    let mut sources = Vec::new();
    let mut complete = true;
    for twj in &s.from {
        for join in &twj.joins {
            let text = join.to_string().to_ascii_uppercase();
            if text.contains("NATURAL ") || text.contains(" USING") {
                return;
            }
        }
        let relations = std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation));
        for relation in relations {
            match source_of(relation, columns_of) {
                Some(source) => sources.push(source),
                None => complete = false,
            }
        }
    }
    let mut projection = Vec::with_capacity(s.projection.len());
    for item in std::mem::take(&mut s.projection) {
        match item {
            SelectItem::Wildcard(opts)
                if complete && opts.to_string().is_empty() && !sources.is_empty() =>
            {
                for source in &sources {
                    projection.extend(items_of(source));
                }
            }
            SelectItem::QualifiedWildcard(
                SelectItemQualifiedWildcardKind::ObjectName(name),
                opts,
            ) if opts.to_string().is_empty() => {
                let qualifier = table_name(&name).unwrap_or_default();
                match sources
                    .iter()
                    .find(|src| matches!(src, Source::Table(q, _) if *q == qualifier))
                {
                    Some(source) => projection.extend(items_of(source)),
                    None => projection.push(SelectItem::QualifiedWildcard(
                        SelectItemQualifiedWildcardKind::ObjectName(name),
                        opts,
                    )),
                }
            }
            other => projection.push(other),
        }
    }
    s.projection = projection;
}

fn source_of(
    relation: &TableFactor,
    columns_of: &dyn Fn(&str) -> Option<Vec<String>>,
) -> Option<Source> {
    match relation {
        TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } => {
            let table = table_name(name).ok()?;
            let columns = columns_of(&table)?;
            let qualifier = match alias {
                Some(a) => normalize_ident(&a.name),
                None => table,
            };
            Some(Source::Table(qualifier, columns))
        }
        TableFactor::Derived {
            alias: Some(alias), ..
        }
        | TableFactor::Table {
            alias: Some(alias), ..
        }
        | TableFactor::Function {
            alias: Some(alias), ..
        } => Some(Source::Aliased(alias.name.clone())),
        _ => None,
    }
}

fn items_of(source: &Source) -> Vec<SelectItem> {
    match source {
        Source::Table(qualifier, columns) => columns
            .iter()
            .map(|c| {
                SelectItem::UnnamedExpr(Expr::CompoundIdentifier(vec![
                    Ident::with_quote('"', qualifier.clone()),
                    Ident::with_quote('"', c.clone()),
                ]))
            })
            .collect(),
        Source::Aliased(alias) => vec![SelectItem::QualifiedWildcard(
            SelectItemQualifiedWildcardKind::ObjectName(ObjectName::from(vec![alias.clone()])),
            Default::default(),
        )],
    }
}

/// Gives `t.*` the name its FROM item is written with, as PostgreSQL matches it:
/// `SELECT columns.* FROM information_schema.columns` (TypeORM's) and `SELECT public.t.*
/// FROM t` name the same table, where DataFusion matches a wildcard's qualifier only when
/// it is written the same way.
pub fn qualify_by_from(stmt: &mut Statement) {
    struct Qualifier;
    impl VisitorMut for Qualifier {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
            qualify_body(&mut q.body);
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Qualifier);
}

fn qualify_body(body: &mut SetExpr) {
    match body {
        SetExpr::Select(s) => qualify_select(s),
        SetExpr::SetOperation { left, right, .. } => {
            qualify_body(left);
            qualify_body(right);
        }
        _ => {}
    }
}

fn qualify_select(s: &mut Select) {
    let parts = |name: &ObjectName| -> Vec<String> {
        name.0
            .iter()
            .filter_map(|p| p.as_ident().map(normalize_ident))
            .collect()
    };
    // The FROM items named by their table's name (no alias), with the name's parts.
    let named: Vec<(Vec<String>, ObjectName)> = s
        .from
        .iter()
        .flat_map(|twj| std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation)))
        .filter_map(|relation| match relation {
            TableFactor::Table {
                name,
                alias: None,
                args: None,
                ..
            } => Some((parts(name), name.clone())),
            _ => None,
        })
        .collect();
    if named.is_empty() {
        return;
    }
    for item in &mut s.projection {
        let SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) =
            item
        else {
            continue;
        };
        let written = parts(name);
        if written.is_empty() || named.iter().any(|(p, _)| *p == written) {
            continue;
        }
        // `t.*` of `FROM s.t`, or `public.t.*` of `FROM t` (a bare name is a table of
        // public, or a catalog of pg_catalog).
        let names = |from: &[String]| {
            from.ends_with(&written)
                || (written.ends_with(from)
                    && written.len() == from.len() + 1
                    && ["public", "pg_catalog"].contains(&written[0].as_str()))
        };
        let mut matching = named.iter().filter(|(p, _)| names(p));
        if let (Some((_, from)), None) = (matching.next(), matching.next()) {
            *name = from.clone();
        }
    }
}
