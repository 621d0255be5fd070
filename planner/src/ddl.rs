//! CREATE TABLE, ALTER TABLE and DROP TABLE, in the session's transaction.

use crate::convert::value_from_array;
use crate::dml::{WriteResult, parse_expr};
use crate::error::{Error, Result};
use crate::provider::{SharedTxn, encode_hex, stored_values, with_txn};
use crate::session::Session;
use datafusion::sql::sqlparser::ast::{self, AlterTableOperation, ObjectName};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};
use sql::TableDef;
use sql::ddl::{normalize_ident, table_def_from_create, table_name};
use storage::{Direction, KeyRange, Value};

fn storage_err(e: sql::Error) -> storage::Error {
    match e {
        sql::Error::Storage(e) => e,
        other => storage::Error::Internal(other.to_string()),
    }
}

/// `CREATE TABLE [IF NOT EXISTS] t [(names)] AS query`: a table of the query's columns,
/// with their names (or the names given) and PostgreSQL types, and no primary key (a hidden
/// row id, as PRODUCT.md gives a table without one), filled with the query's rows in the
/// same transaction. Its tag is `SELECT n`, as PostgreSQL's.
pub async fn create_table_as(
    session: &mut Session,
    create: &ast::CreateTable,
) -> Result<WriteResult> {
    let Some(query) = &create.query else {
        return create_table(session, create).await;
    };
    let name = sql::ddl::table_name(&create.name)?;
    if create.if_not_exists && session.table_def(&name).is_ok() {
        session.notice_coded(
            "42P07",
            format!("relation \"{name}\" already exists, skipping"),
        );
        return Ok(WriteResult::command("CREATE TABLE AS"));
    }
    let described = session
        .describe(&ast::Statement::Query(query.clone()))
        .await?;
    let Some(schema) = described.schema else {
        return Err(Error::Internal("a query describes its rows".into()));
    };
    let given: Vec<String> = create
        .columns
        .iter()
        .map(|c| normalize_ident(&c.name))
        .collect();
    if given.len() > schema.fields().len() {
        return Err(Error::InvalidStatement(
            "too many column names were specified".into(),
        ));
    }
    let columns: Vec<String> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let name = given
                .get(i)
                .cloned()
                .unwrap_or_else(|| field.name().clone());
            let ty = match sql::types::declared_type_name(field) {
                Some(declared) => declared.to_string(),
                None => crate::pg_catalog::format_type(
                    i64::from(crate::pg_catalog::field_type_oid(field)),
                    None,
                ),
            };
            format!("{} {ty}", crate::functions::text::quote_ident(&name))
        })
        .collect();
    let table = crate::functions::text::quote_ident(&name);
    let ddl = format!("CREATE TABLE {table} ({})", columns.join(", "));
    let Some(ast::Statement::CreateTable(mut table_create)) =
        crate::session::parse_sql(&ddl)?.into_iter().next()
    else {
        return Err(Error::Internal(format!("not a CREATE TABLE: {ddl}")));
    };
    table_create.temporary = create.temporary;
    table_create.on_commit = create.on_commit;
    create_table(session, &table_create).await?;
    let fill = format!("INSERT INTO {table} SELECT * FROM ({query}) AS __partita_created");
    let Some(ast::Statement::Insert(insert)) = crate::session::parse_sql(&fill)?.into_iter().next()
    else {
        return Err(Error::Internal(format!("not an INSERT: {fill}")));
    };
    let filled = crate::dml::insert(session, &insert).await?;
    Ok(WriteResult::counted("SELECT", filled.count().unwrap_or(0)))
}

pub async fn create_table(session: &mut Session, create: &ast::CreateTable) -> Result<WriteResult> {
    // `LIKE t` bare (sqlparser's other reading of it) is a syntax error in PostgreSQL.
    if create.like.is_some() {
        return Err(Error::Syntax(
            "CREATE TABLE … LIKE without parentheses".into(),
        ));
    }
    if !crate::like::has_like(create) {
        return create_table_itself(session, create).await;
    }
    let name = table_name(&create.name)?;
    if create.if_not_exists && session.table_def(&name).is_ok() {
        // The table is there: its LIKE is not read, as in PostgreSQL.
        session.notice_coded(
            "42P07",
            format!("relation \"{name}\" already exists, skipping"),
        );
        return Ok(WriteResult::command("CREATE TABLE"));
    }
    let expanded = crate::like::expand(session, create)?;
    let created = create_table_itself(session, &expanded.create).await?;
    for index in &expanded.indexes {
        if let ast::Statement::CreateIndex(index) = index {
            crate::index::create_index(session, index).await?;
        }
    }
    crate::like::comment_columns(session, &name, &expanded.comments)?;
    Ok(created)
}

/// CREATE TABLE of columns and constraints as written.
async fn create_table_itself(
    session: &mut Session,
    create: &ast::CreateTable,
) -> Result<WriteResult> {
    let mut def = table_def_from_create(create, &session.user_types())?;
    crate::temp::mark(session, create, &mut def)?;
    let uniques = sql::ddl::unique_constraints(create)?;
    let foreign_keys = sql::ddl::foreign_keys(create)?;
    // A serial column's sequence takes a free name, as PostgreSQL's does (`t_id_seq1` when
    // a renamed table still owns `t_id_seq`).
    {
        let scope = session.scope.lock().unwrap_or_else(|e| e.into_inner());
        let catalog = &session.db.catalog;
        let table = def.name.clone();
        let temporary = def.temp_schema.is_some();
        for column in &mut def.columns {
            let Some(base) = column.owned_sequence(&table) else {
                continue;
            };
            // `DEFAULT nextval('t_id_seq')` written out (as pg_dump does) calls the
            // sequence CREATE SEQUENCE made under that name.
            if !declares_sequence(create, &column.name)
                && catalog.sequence_def(&base, &scope.changes).is_some()
            {
                continue;
            }
            free_sequence_name(catalog, &scope.changes, &table, temporary, column);
        }
    }
    for col in &def.columns {
        if let Some(default) = &col.default {
            parse_expr(default)?;
        }
    }
    crate::conditions::validate(&def)?;
    let txn = session.open_txn()?;
    if session.table_def(&def.name).is_ok() {
        if create.if_not_exists {
            session.notice_coded(
                "42P07",
                format!("relation \"{}\" already exists, skipping", def.name),
            );
            return Ok(WriteResult::command("CREATE TABLE"));
        }
        return Err(Error::Sql(sql::Error::DuplicateTable(def.name)));
    }
    // The primary key's index is a relation too (a renamed table's keeps its name).
    if !def.has_row_id() {
        let pkey = def.primary_key_name();
        let changes = crate::sequences::session_changes(session);
        let temporary = def.temp_schema.is_some();
        if session.db.catalog.name_taken(&pkey, temporary, &changes) {
            return Err(Error::Sql(sql::Error::DuplicateTable(pkey)));
        }
    }
    let def_name = def.name.clone();
    let catalog = session.db.catalog.clone();
    let scope = std::sync::Arc::clone(&session.scope);
    let mut sql_error = None;
    with_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        match catalog.create_table(t, &mut scope.changes, def) {
            Ok(_) => Ok(()),
            Err(e @ sql::Error::Storage(_)) => Err(storage_err(e)),
            Err(e) => {
                sql_error = Some(e);
                Ok(())
            }
        }
    })?;
    if let Some(e) = sql_error {
        return Err(Error::Sql(e));
    }
    for unique in &uniques {
        crate::index::add_unique_constraint(session, &def_name, unique)?;
    }
    // Resolved once the table and its unique indexes exist: a key may reference them.
    if !foreign_keys.is_empty() {
        let mut def = (*session.table_def(&def_name)?).clone();
        for spec in &foreign_keys {
            let fk = crate::foreign::resolve(session, &def, spec)?;
            crate::foreign::attach(session, &txn, &mut def, fk)?;
        }
        store_def(session, &txn, def)?;
    }
    Ok(WriteResult::command("CREATE TABLE"))
}

/// Whether `create` declares column `name` serial or identity (it makes a sequence).
fn declares_sequence(create: &ast::CreateTable, name: &str) -> bool {
    create
        .columns
        .iter()
        .any(|c| normalize_ident(&c.name) == name && has_own_sequence(c))
}

/// Whether column `c` is declared serial or identity (not `DEFAULT nextval('s')` written out).
fn has_own_sequence(c: &ast::ColumnDef) -> bool {
    c.data_type.to_string().to_lowercase().ends_with("serial")
        || c.options.iter().any(|o| {
            matches!(
                o.option,
                ast::ColumnOption::Generated {
                    generation_expr: None,
                    ..
                }
            )
        })
}

/// COMMENT ON TABLE | MATERIALIZED VIEW | COLUMN … IS 'text' | NULL: kept with the table's
/// definition, shown by `pg_description`, `obj_description` and `col_description` (psql's
/// `\d+` and `\dt+`). An empty text removes the comment, as NULL does. Comments on other
/// objects are 0A000.
pub async fn comment(
    session: &mut Session,
    object_type: ast::CommentObject,
    object_name: &ast::ObjectName,
    comment: Option<&str>,
) -> Result<WriteResult> {
    let text = comment.filter(|c| !c.is_empty()).map(str::to_string);
    let txn = session.open_txn()?;
    let def = match object_type {
        ast::CommentObject::Table | ast::CommentObject::MaterializedView => {
            let name = table_name(object_name)?;
            let mut def = TableDef::clone(&*session.table_def(&name)?);
            def.comment = text;
            def
        }
        ast::CommentObject::Column => {
            let parts: Vec<String> = object_name
                .0
                .iter()
                .filter_map(|p| p.as_ident().map(normalize_ident))
                .collect();
            let [.., table, column] = parts.as_slice() else {
                return Err(Error::Sql(sql::Error::Syntax(
                    "column name must be qualified".into(),
                )));
            };
            if session
                .db
                .catalog
                .view(table, &crate::sequences::session_changes(session))
                .is_some()
            {
                return Err(Error::Unsupported("COMMENT ON COLUMN of a view".into()));
            }
            let mut def = TableDef::clone(&*session.table_def(table)?);
            let i = user_column(&def, column)?;
            def.columns[i].comment = text;
            def
        }
        other => return Err(Error::Unsupported(format!("COMMENT ON {other}"))),
    };
    // A materialized view's copy in its base table's definition, which later changes of the
    // base write back as the view's record, takes the comment too.
    if let Some(view) = &def.view {
        let mut base = TableDef::clone(&*session.table_def(&view.base)?);
        for copy in base.views.iter_mut().filter(|v| v.name == def.name) {
            copy.comment = def.comment.clone();
        }
        store_def(session, &txn, base)?;
    }
    store_def(session, &txn, def)?;
    Ok(WriteResult::command("COMMENT"))
}

pub async fn drop_tables(
    session: &mut Session,
    names: &[ObjectName],
    if_exists: bool,
    cascade: bool,
) -> Result<WriteResult> {
    let txn = session.open_txn()?;
    for name in names {
        let name = table_name(name)?;
        let Ok(def) = session.table_def(&name) else {
            let (is_view, is_sequence) = {
                let scope = session.scope.lock().unwrap_or_else(|e| e.into_inner());
                (
                    session.db.catalog.view(&name, &scope.changes).is_some(),
                    session.db.catalog.sequence_exists(&name, &scope.changes),
                )
            };
            if is_sequence {
                return Err(Error::WrongObjectKind {
                    message: format!("\"{name}\" is not a table"),
                    hint: "Use DROP SEQUENCE to remove a sequence.".into(),
                });
            }
            if is_view {
                return Err(Error::WrongObjectType(format!(
                    "\"{name}\" is not a table; use DROP VIEW"
                )));
            }
            if if_exists {
                session.notice(format!("table \"{name}\" does not exist, skipping"));
                continue;
            }
            return Err(Error::Sql(sql::Error::UnknownTable(name)));
        };
        if def.view.is_some() {
            return Err(Error::WrongObjectType(format!(
                "\"{name}\" is not a table; use DROP MATERIALIZED VIEW"
            )));
        }
        if !def.views.is_empty() {
            let names: Vec<&str> = def.views.iter().map(|v| v.name.as_str()).collect();
            if !cascade {
                return Err(Error::DependentObjects {
                    message: format!("cannot drop table {name} because other objects depend on it"),
                    detail: names
                        .iter()
                        .map(|v| format!("materialized view {v} depends on table {name}"))
                        .collect::<Vec<_>>()
                        .join("\n"),
                });
            }
            for v in names {
                session.cascades_to(format!("materialized view {v}"));
            }
        }
        // Plain views reading the table (or its materialized views) go with CASCADE.
        let mut doomed = Vec::new();
        for relation in
            std::iter::once(name.clone()).chain(def.views.iter().map(|v| v.name.clone()))
        {
            for v in crate::plain_view::dependents(session, &relation, cascade, "table", &[])? {
                if !doomed.contains(&v) {
                    doomed.push(v);
                }
            }
        }
        let listed: Vec<String> = names.iter().filter_map(|n| table_name(n).ok()).collect();
        drop_foreign_keys(session, &txn, &def, cascade, &listed)?;
        crate::sequences::drop_owned(session, &txn, &name, None, cascade)?;
        let catalog = session.db.catalog.clone();
        let scope = std::sync::Arc::clone(&session.scope);
        with_txn(&txn, |t| {
            let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            for v in &doomed {
                catalog
                    .drop_view(t, &mut scope.changes, v)
                    .map_err(storage_err)?;
            }
            catalog
                .drop_table(t, &mut scope.changes, &name)
                .map_err(storage_err)
        })?;
    }
    Ok(WriteResult::command("DROP TABLE"))
}

pub async fn alter_table(session: &mut Session, alter: &ast::AlterTable) -> Result<WriteResult> {
    let name = table_name(&alter.name)?;
    let Ok(def) = session.table_def(&name) else {
        // ALTER TABLE renames an index, a sequence or a view too, as in PostgreSQL.
        if let [AlterTableOperation::RenameTable { table_name: to }] = alter.operations.as_slice() {
            let (ast::RenameTableNameKind::To(to) | ast::RenameTableNameKind::As(to)) = to;
            if rename_other(session, &name, &table_name(to)?)? {
                return Ok(WriteResult::command("ALTER TABLE"));
            }
        }
        let view = {
            let scope = session.scope.lock().unwrap_or_else(|e| e.into_inner());
            session.db.catalog.view(&name, &scope.changes)
        };
        if let Some(view) = view {
            return match alter.operations.as_slice() {
                [AlterTableOperation::RenameTable { table_name: to }] => {
                    let (ast::RenameTableNameKind::To(to) | ast::RenameTableNameKind::As(to)) = to;
                    crate::plain_view::rename(session, &view, &table_name(to)?)?;
                    Ok(WriteResult::command("ALTER TABLE"))
                }
                [
                    AlterTableOperation::RenameColumn {
                        old_column_name,
                        new_column_name,
                    },
                ] => {
                    crate::plain_view::rename_column(
                        session,
                        &view,
                        &normalize_ident(old_column_name),
                        &normalize_ident(new_column_name),
                    )?;
                    Ok(WriteResult::command("ALTER TABLE"))
                }
                _ => Err(Error::WrongObjectType(format!("\"{name}\" is not a table"))),
            };
        }
        if alter.if_exists {
            session.notice(format!("relation \"{name}\" does not exist, skipping"));
            return Ok(WriteResult::command("ALTER TABLE"));
        }
        return Err(Error::Sql(sql::Error::UnknownTable(name)));
    };
    if def.view.is_some() {
        return Err(Error::WrongObjectType(format!(
            "\"{name}\" is a materialized view; ALTER TABLE changes tables"
        )));
    }
    if let [AlterTableOperation::RenameTable { table_name: to }] = alter.operations.as_slice() {
        let (ast::RenameTableNameKind::To(to) | ast::RenameTableNameKind::As(to)) = to;
        return rename_table(session, &def, &table_name(to)?);
    }
    if let [AlterTableOperation::RenameConstraint { old_name, new_name }] =
        alter.operations.as_slice()
    {
        return rename_constraint(
            session,
            &def,
            &normalize_ident(old_name),
            &normalize_ident(new_name),
        );
    }
    let mut def = (*def).clone();
    let txn = session.open_txn()?;
    // Unique constraints become indexes once the table's new definition is written, and
    // foreign keys are added after them (they may reference them), with whether stored rows
    // are checked.
    let mut uniques = Vec::new();
    let mut type_changes = Vec::new();
    let mut foreign_keys: Vec<(sql::ddl::ForeignKeySpec, bool)> = Vec::new();
    for op in &alter.operations {
        match op {
            AlterTableOperation::AddColumn {
                if_not_exists,
                column_def,
                ..
            } => {
                let columns = def.columns.len();
                add_column(
                    session,
                    &txn,
                    &mut def,
                    column_def,
                    *if_not_exists,
                    &mut uniques,
                )
                .await?;
                // `ADD COLUMN c int REFERENCES p`: checked against the stored rows, which
                // all hold the column's default.
                if def.columns.len() > columns {
                    for spec in sql::ddl::column_foreign_keys(column_def)? {
                        foreign_keys.push((spec, true));
                    }
                }
            }
            AlterTableOperation::AddConstraint {
                constraint,
                not_valid,
            } => match constraint {
                ast::TableConstraint::Check(check) => {
                    let name = check.name.as_ref().map(normalize_ident);
                    if let Some(n) = &name
                        && constraint_exists(&def, n)
                    {
                        return Err(Error::Sql(sql::Error::DuplicateObject(format!(
                            "constraint \"{n}\" for relation \"{}\" already exists",
                            def.name
                        ))));
                    }
                    let mut check = sql::ddl::check_def(&def, name, &check.expr)?;
                    check.not_valid = *not_valid;
                    def.checks.push(check);
                    crate::conditions::validate(&def)?;
                    // NOT VALID: rows already stored are not checked, as in PostgreSQL.
                    if !*not_valid {
                        let added = def.checks.len() - 1;
                        for_each_stored_row(&def, &txn, |values| {
                            crate::conditions::verify_stored(&def, added, values)
                        })?;
                    }
                }
                ast::TableConstraint::Unique(u) => {
                    let unique = sql::ddl::unique_constraint(u)?;
                    if let Some(n) = &unique.name
                        && constraint_exists(&def, n)
                    {
                        return Err(Error::Sql(sql::Error::DuplicateObject(format!(
                            "constraint \"{n}\" for relation \"{}\" already exists",
                            def.name
                        ))));
                    }
                    uniques.push(unique);
                }
                // NOT VALID: rows already stored are not checked, as in PostgreSQL.
                ast::TableConstraint::ForeignKey(fk) => {
                    foreign_keys.push((sql::ddl::foreign_key(fk)?, !*not_valid))
                }
                other => {
                    return Err(Error::Unsupported(format!("ALTER TABLE ADD {other}")));
                }
            },
            // Checks the stored rows against a constraint added NOT VALID.
            AlterTableOperation::ValidateConstraint { name: constraint } => {
                let constraint = normalize_ident(constraint);
                if let Some(i) = def.checks.iter().position(|c| c.name == constraint) {
                    if def.checks[i].not_valid {
                        for_each_stored_row(&def, &txn, |values| {
                            crate::conditions::verify_stored(&def, i, values)
                        })?;
                        def.checks[i].not_valid = false;
                    }
                } else if let Some(i) = def.foreign_keys.iter().position(|f| f.name == constraint) {
                    if def.foreign_keys[i].not_valid {
                        crate::foreign::validate(session, &txn, &def, &def.foreign_keys[i])?;
                        def.foreign_keys[i].not_valid = false;
                    }
                } else if constraint_exists(&def, &constraint) {
                    return Err(Error::WrongObjectType(format!(
                        "constraint \"{constraint}\" of relation \"{}\" is not a foreign key or check constraint",
                        def.name
                    )));
                } else {
                    return Err(Error::UndefinedObject(format!(
                        "constraint \"{constraint}\" of relation \"{}\" does not exist",
                        def.name
                    )));
                }
            }
            AlterTableOperation::DropConstraint {
                if_exists,
                name: constraint,
                drop_behavior,
            } => {
                let constraint = normalize_ident(constraint);
                if let Some(i) = def.checks.iter().position(|c| c.name == constraint) {
                    def.checks.remove(i);
                } else if let Some(i) = def.foreign_keys.iter().position(|k| k.name == constraint) {
                    crate::foreign::detach(session, &txn, &mut def, i)?;
                } else if let Some(i) = def
                    .indexes
                    .iter()
                    .position(|x| x.constraint && x.name == constraint)
                {
                    crate::foreign::refuse_if_needed(
                        session,
                        &txn,
                        &mut def,
                        i,
                        matches!(drop_behavior, Some(ast::DropBehavior::Cascade)),
                        &format!("constraint {constraint} on table {name}"),
                    )?;
                    let index = def.indexes.remove(i);
                    with_txn(&txn, |t| t.drop_keyspace(index.keyspace))?;
                } else if constraint == def.primary_key_name() {
                    return Err(Error::Unsupported(
                        "dropping a primary key (the key is how rows are stored)".into(),
                    ));
                } else if *if_exists {
                    session.notice(format!(
                        "constraint \"{constraint}\" of relation \"{name}\" does not exist, skipping"
                    ));
                } else {
                    return Err(Error::UndefinedObject(format!(
                        "constraint \"{constraint}\" of relation \"{name}\" does not exist"
                    )));
                }
            }
            AlterTableOperation::RenameColumn {
                old_column_name,
                new_column_name,
            } => {
                let standalone = |name: &str| {
                    let scope = session.scope.lock().unwrap_or_else(|e| e.into_inner());
                    session
                        .db
                        .catalog
                        .sequence_def(name, &scope.changes)
                        .is_some()
                };
                rename_column(&mut def, old_column_name, new_column_name, &standalone)?;
                let (old, new) = (
                    normalize_ident(old_column_name),
                    normalize_ident(new_column_name),
                );
                // After the column's own checks, as PostgreSQL's errors come in that order.
                if let Some(v) = crate::plain_view::readers(session, &def.name)
                    .iter()
                    .find(|v| crate::plain_view::may_read_column(v, &old))
                {
                    return Err(Error::Unsupported(format!(
                        "renaming a column that views read (view {} reads {}; drop the view first)",
                        v.name, def.name
                    )));
                }
                crate::sequences::rename_owner(
                    session,
                    &txn,
                    &def.name,
                    &def.name,
                    Some((&old, &new)),
                )?;
            }
            AlterTableOperation::DropColumn {
                column_names,
                if_exists,
                drop_behavior,
                ..
            } => {
                let cascade = matches!(drop_behavior, Some(ast::DropBehavior::Cascade));
                for column in column_names {
                    let name = normalize_ident(column);
                    if let Some(v) = crate::plain_view::readers(session, &def.name)
                        .into_iter()
                        .find(|v| crate::plain_view::may_read_column(v, &name))
                    {
                        return Err(Error::DependentObjects {
                            message: format!(
                                "cannot drop column {name} of table {} because other objects depend on it",
                                def.name
                            ),
                            detail: format!(
                                "view {} depends on column {name} of table {}",
                                v.name, def.name
                            ),
                        });
                    }
                    drop_column(session, &txn, &mut def, column, *if_exists, cascade)?;
                    crate::sequences::drop_owned(session, &txn, &def.name, Some(&name), cascade)?;
                }
            }
            // Type changes are made together, after the other actions: one rewrite.
            AlterTableOperation::AlterColumn {
                column_name,
                op:
                    ast::AlterColumnOperation::SetDataType {
                        data_type, using, ..
                    },
            } => type_changes.push(crate::retype::TypeChange {
                column: column_name,
                data_type,
                using: using.as_ref(),
            }),
            AlterTableOperation::AlterColumn { column_name, op } => {
                alter_column(session, &txn, &mut def, column_name, op)?
            }
            AlterTableOperation::RenameTable { .. } => {
                return Err(Error::Unsupported(
                    "RENAME TO with other ALTER TABLE actions".into(),
                ));
            }
            other => return Err(Error::Unsupported(format!("ALTER TABLE {other}"))),
        }
    }
    if !type_changes.is_empty() {
        crate::retype::alter_column_types(session, &txn, &mut def, &type_changes).await?;
    }
    store_def(session, &txn, def)?;
    for unique in &uniques {
        crate::index::add_unique_constraint(session, &name, unique)?;
    }
    if !foreign_keys.is_empty() {
        let mut def = (*session.table_def(&name)?).clone();
        for (spec, validate) in &foreign_keys {
            let mut fk = crate::foreign::resolve(session, &def, spec)?;
            if *validate {
                crate::foreign::validate(session, &txn, &def, &fk)?;
            } else {
                fk.not_valid = true;
            }
            crate::foreign::attach(session, &txn, &mut def, fk)?;
        }
        store_def(session, &txn, def)?;
    }
    Ok(WriteResult::command("ALTER TABLE"))
}

/// `ALTER TABLE t RENAME CONSTRAINT name TO new`: a CHECK or foreign key in the table's
/// definition; a primary key or UNIQUE constraint with its index, as ALTER INDEX renames.
fn rename_constraint(
    session: &mut Session,
    def: &TableDef,
    name: &str,
    to: &str,
) -> Result<WriteResult> {
    if !constraint_exists(def, name) {
        return Err(Error::UndefinedObject(format!(
            "constraint \"{name}\" for table \"{}\" does not exist",
            def.name
        )));
    }
    let check = def.checks.iter().any(|c| c.name == name);
    let foreign = def.foreign_keys.iter().any(|k| k.name == name);
    if !check && !foreign {
        // A primary key or UNIQUE constraint: its index is renamed with it.
        crate::index::rename_index(session, name, to)?;
        return Ok(WriteResult::command("ALTER TABLE"));
    }
    if constraint_exists(def, to) {
        return Err(Error::Sql(sql::Error::DuplicateObject(format!(
            "constraint \"{to}\" for relation \"{}\" already exists",
            def.name
        ))));
    }
    let mut def = def.clone();
    if let Some(check) = def.checks.iter_mut().find(|c| c.name == name) {
        check.name = to.to_string();
    } else if let Some(fk) = def.foreign_keys.iter_mut().find(|k| k.name == name) {
        fk.name = to.to_string();
    }
    let txn = session.open_txn()?;
    store_def(session, &txn, def)?;
    Ok(WriteResult::command("ALTER TABLE"))
}

/// Stores `def` as its table's definition in the transaction.
pub(crate) fn store_def(session: &Session, txn: &SharedTxn, def: TableDef) -> Result<()> {
    let catalog = session.db.catalog.clone();
    let scope = std::sync::Arc::clone(&session.scope);
    with_txn(txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        catalog
            .write(t, &mut scope.changes, def)
            .map(|_| ())
            .map_err(storage_err)
    })?;
    Ok(())
}

/// Before `def` is dropped: the foreign keys of other tables that reference it go with
/// CASCADE (else 2BP01) unless their table is dropped by the same statement (`listed`), and
/// the tables it references forget it.
fn drop_foreign_keys(
    session: &mut Session,
    txn: &SharedTxn,
    def: &std::sync::Arc<TableDef>,
    cascade: bool,
    listed: &[String],
) -> Result<()> {
    let dependents: Vec<_> = crate::foreign::referencing(session, def)?
        .into_iter()
        .filter(|(child, _)| child.name != def.name && !listed.contains(&child.name))
        .collect();
    if !dependents.is_empty() && !cascade {
        return Err(Error::DependentObjects {
            message: format!(
                "cannot drop table {} because other objects depend on it",
                def.name
            ),
            detail: dependents
                .iter()
                .map(|(child, fk)| {
                    format!(
                        "constraint {} on table {} depends on table {}",
                        fk.name, child.name, def.name
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"),
        });
    }
    for (child, fk) in dependents {
        session.cascades_to(format!("constraint {} on table {}", fk.name, child.name));
        let mut child = (*session.table_def(&child.name)?).clone();
        if let Some(i) = child.foreign_keys.iter().position(|k| k.name == fk.name) {
            child.foreign_keys.remove(i);
        }
        store_def(session, txn, child)?;
    }
    let mut def = (**def).clone();
    while let Some(i) = def.foreign_keys.iter().position(|k| k.table != def.name) {
        crate::foreign::detach(session, txn, &mut def, i)?;
    }
    Ok(())
}

/// The position of `def`'s user column `column` (42703 for another name).
pub(crate) fn user_column(def: &TableDef, column: &str) -> Result<usize> {
    def.column_index(column)
        .filter(|&i| !def.columns[i].hidden)
        .ok_or_else(|| {
            Error::Sql(sql::Error::UnknownColumn {
                table: def.name.clone(),
                column: column.to_string(),
            })
        })
}

/// Whether `def` has a constraint named `name`: a check, a unique index or its primary key.
pub(crate) fn constraint_exists(def: &TableDef, name: &str) -> bool {
    def.checks.iter().any(|c| c.name == name)
        || def.foreign_keys.iter().any(|k| k.name == name)
        || def.indexes.iter().any(|x| x.constraint && x.name == name)
        || name == def.primary_key_name()
}

/// Calls `f` on every row of `def` the transaction sees, as stored values, one at a time.
pub(crate) fn for_each_stored_row(
    def: &TableDef,
    txn: &SharedTxn,
    mut f: impl FnMut(&[Value]) -> Result<()>,
) -> Result<()> {
    crate::provider::in_txn(txn, |t| {
        for row in t.scan(def.keyspace, &KeyRange::all(), Direction::Forward)? {
            f(&stored_values(def, &row?.value)?)?;
        }
        Ok(())
    })
}

/// Gives a serial or identity column of `table` a sequence name no relation has
/// (`t_id_seq1` when a renamed table still owns `t_id_seq`), as PostgreSQL does.
fn free_sequence_name(
    catalog: &sql::Catalog,
    changes: &sql::catalog::CatalogChanges,
    table: &str,
    temporary: bool,
    column: &mut sql::ColumnDef,
) {
    let Some(base) = column.owned_sequence(table) else {
        return;
    };
    let mut name = base.clone();
    let mut n = 0;
    while catalog.name_taken(&name, temporary, changes) {
        n += 1;
        name = format!("{base}{n}");
    }
    if n > 0 {
        column.default = Some(sql::catalog::nextval_call(&name));
        column.sequence = Some(name);
    }
}

/// `ADD COLUMN`: rows already stored get the default, evaluated once now when it is not
/// volatile (PostgreSQL does the same); a volatile default (a serial or identity column's
/// `nextval`, `gen_random_uuid()`, `random()`) is evaluated for each stored row, which is
/// rewritten, as PostgreSQL rewrites the table. A CHECK or UNIQUE on the column is added
/// with it.
async fn add_column(
    session: &mut Session,
    txn: &SharedTxn,
    def: &mut TableDef,
    column_def: &ast::ColumnDef,
    if_not_exists: bool,
    uniques: &mut Vec<sql::ddl::UniqueConstraint>,
) -> Result<()> {
    let name = def.name.clone();
    let col_name = normalize_ident(&column_def.name);
    if def.column_index(&col_name).is_some() {
        if if_not_exists {
            session.notice_coded(
                "42701",
                format!("column \"{col_name}\" of relation \"{name}\" already exists, skipping"),
            );
            return Ok(());
        }
        return Err(Error::Sql(sql::Error::ColumnExists {
            table: name.clone(),
            column: col_name,
        }));
    }
    let mut col = sql::ddl::column_from_ast(&name, column_def, &session.user_types())?;
    if has_own_sequence(column_def) {
        let changes = crate::sequences::session_changes(session);
        let temporary = def.temp_schema.is_some();
        free_sequence_name(&session.db.catalog, &changes, &name, temporary, &mut col);
        // Its values are kept under a number of its own: a dropped or renamed column of
        // that name, or a rolled back ADD COLUMN, may have left some under the name.
        let number = session.db.catalog.take_sequence_number(&session.db.store)?;
        col.sequence_column = Some(format!("{col_name}#{number}"));
    }
    let ty = col.ty;
    let mut checks = Vec::new();
    for opt in &column_def.options {
        match &opt.option {
            ast::ColumnOption::Check(check) => {
                let name = opt.name.as_ref().or(check.name.as_ref());
                checks.push((name.map(normalize_ident), (*check.expr).clone()));
            }
            ast::ColumnOption::Unique(_) => uniques.push(sql::ddl::UniqueConstraint {
                name: opt.name.as_ref().map(normalize_ident),
                columns: vec![col_name.clone()],
            }),
            ast::ColumnOption::PrimaryKey(_) if !def.has_row_id() => {
                return Err(Error::Sql(sql::Error::InvalidDefinition(format!(
                    "multiple primary keys for table \"{name}\" are not allowed"
                ))));
            }
            // A table's key is how its rows are stored: one without cannot be given one.
            ast::ColumnOption::PrimaryKey(_) => {
                return Err(Error::Unsupported(format!(
                    "ADD COLUMN with {}",
                    opt.option
                )));
            }
            _ => {}
        }
    }
    let mut missing = Value::Null;
    let mut per_row = None;
    if let Some(text) = &col.default {
        let query = format!("SELECT CAST(({text}) AS {}) AS v", ty.to_ast());
        let stmt = crate::session::parse_sql(&query)?.remove(0);
        let plan = session.plan(stmt.clone()).await?;
        if plan.expressions().iter().any(|e| e.is_volatile()) {
            per_row = Some(text.clone());
        } else {
            let ast::Statement::Query(q) = stmt else {
                return Err(Error::Internal("default query".into()));
            };
            let batches = session.collect_query(*q, false).await?;
            if let Some(b) = batches.iter().find(|b| b.num_rows() > 0) {
                missing = value_from_array(b.column(0), 0, ty, &col_name)?;
            }
        }
    }
    let generated = col.generated.is_some();
    if !col.nullable && missing.is_null() && per_row.is_none() && !generated {
        let has_rows = with_txn(txn, |t| {
            Ok(t.scan(def.keyspace, &KeyRange::all(), Direction::Forward)?
                .next()
                .is_some())
        })?;
        if has_rows {
            return Err(Error::NullsInColumn {
                table: name,
                column: col_name,
            });
        }
    }
    let index = def.columns.len();
    if !missing.is_null() {
        def.missing_values.insert(
            index,
            encode_hex(&storage::rowcodec::encode_row(0, &[missing])),
        );
    }
    // The hidden row id stays the last stored column only in order of creation; new
    // columns go after it, which is fine: positions are by index, not by visibility.
    let nullable = col.nullable;
    def.columns.push(col);
    def.schema_version += 1;
    if let Some(text) = per_row {
        fill_column(session, txn, def, index, nullable, &text).await?;
    }
    if generated {
        crate::conditions::validate(def)?;
        generate_column(txn, def)?;
    }
    if !checks.is_empty() {
        let before = def.checks.len();
        for (name, expr) in checks {
            let check = sql::ddl::check_def(def, name, &expr)?;
            def.checks.push(check);
        }
        crate::conditions::validate(def)?;
        for_each_stored_row(def, txn, |values| {
            crate::conditions::verify_stored(def, before, values)
        })?;
    }
    Ok(())
}

/// Gives column `index` of every stored row of `def` a value of its own from the volatile
/// `default`, one evaluation per row (in key order), and rewrites the rows.
async fn fill_column(
    session: &mut Session,
    txn: &SharedTxn,
    def: &TableDef,
    index: usize,
    nullable: bool,
    default: &str,
) -> Result<()> {
    // Written first, so that the column's own sequence exists for its `nextval`.
    store_def(session, txn, def.clone())?;
    let rows = crate::provider::in_txn(txn, |t| {
        let mut rows = Vec::new();
        for row in t.scan(def.keyspace, &KeyRange::all(), Direction::Forward)? {
            let row = row?;
            rows.push((row.key.to_vec(), stored_values(def, &row.value)?));
        }
        Ok(rows)
    })?;
    if rows.is_empty() {
        return Ok(());
    }
    let column = &def.columns[index];
    let mut fresh = Vec::with_capacity(rows.len());
    // A sequence numbers the rows in key order (a query's parallel batches would not).
    let changes = crate::sequences::session_changes(session);
    let sequence = crate::sequences::default_sequence(&session.db.catalog, &changes, default);
    if let Some(sequence) = sequence {
        let store = &session.db.store;
        let numbers = (0..rows.len())
            .map(|_| session.db.catalog.next_of(store, &sequence))
            .collect::<std::result::Result<Vec<i64>, _>>()?;
        let numbers: datafusion::arrow::array::ArrayRef =
            std::sync::Arc::new(datafusion::arrow::array::Int64Array::from(numbers));
        for r in 0..rows.len() {
            fresh.push(value_from_array(&numbers, r, column.ty, &column.name)?);
        }
    } else {
        let query = format!(
            "SELECT CAST(({default}) AS {}) AS v FROM generate_series(1, {})",
            column.ty.to_ast(),
            rows.len()
        );
        let ast::Statement::Query(q) = crate::session::parse_sql(&query)?.remove(0) else {
            return Err(Error::Internal("default query".into()));
        };
        for batch in session.collect_query(*q, false).await? {
            for r in 0..batch.num_rows() {
                fresh.push(value_from_array(
                    batch.column(0),
                    r,
                    column.ty,
                    &column.name,
                )?);
            }
        }
    }
    if fresh.len() != rows.len() {
        return Err(Error::Internal("a default value for each row".into()));
    }
    crate::provider::in_txn(txn, |t| {
        for ((key, mut values), value) in rows.into_iter().zip(fresh) {
            if !nullable && value.is_null() {
                return Err(Error::NullsInColumn {
                    table: def.name.clone(),
                    column: column.name.clone(),
                });
            }
            values[index] = value;
            let payload = storage::rowcodec::encode_row(def.schema_version, &values);
            t.put(def.keyspace, &key, payload)?;
        }
        Ok(())
    })
}

/// Stores a new generated column's value in every row of `def` (ADD COLUMN … GENERATED).
fn generate_column(txn: &SharedTxn, def: &TableDef) -> Result<()> {
    crate::provider::in_txn(txn, |t| {
        let mut rows = Vec::new();
        for row in t.scan(def.keyspace, &KeyRange::all(), Direction::Forward)? {
            let row = row?;
            rows.push((row.key.to_vec(), stored_values(def, &row.value)?));
        }
        for (key, mut values) in rows {
            crate::conditions::generate(def, &mut values)?;
            crate::dml::check_not_null(def, &values).map_err(|e| match e {
                Error::NotNull { table, column, .. } => Error::NullsInColumn { table, column },
                e => e,
            })?;
            let payload = storage::rowcodec::encode_row(def.schema_version, &values);
            t.put(def.keyspace, &key, payload)?;
        }
        Ok(())
    })
}

/// `RENAME COLUMN a TO b`: the column keeps its place, values and sequence; CHECK
/// conditions, partial indexes' conditions and generation expressions are rewritten to the
/// new name.
fn rename_column(
    def: &mut TableDef,
    old: &ast::Ident,
    new: &ast::Ident,
    standalone: &dyn Fn(&str) -> bool,
) -> Result<()> {
    let (old, new) = (normalize_ident(old), normalize_ident(new));
    let Some(i) = def.column_index(&old).filter(|i| !def.columns[*i].hidden) else {
        return Err(Error::UndefinedColumn(format!(
            "column \"{old}\" does not exist"
        )));
    };
    if def.column_index(&new).is_some() {
        return Err(Error::Sql(sql::Error::ColumnExists {
            table: def.name.clone(),
            column: new,
        }));
    }
    if !def.views.is_empty() {
        return Err(Error::Unsupported(
            "renaming a column of a table with materialized views".into(),
        ));
    }
    let table = def.name.clone();
    let column = &mut def.columns[i];
    if column.sequence_column.is_none() {
        column.sequence_column = Some(old.clone());
    }
    if column.sequence.is_none() {
        column.sequence = column
            .owned_sequence(&table)
            .filter(|name| !standalone(name));
    }
    column.name = new.clone();
    for check in &mut def.checks {
        check.expr = rename_in_expr(&check.expr, &old, &new)?;
    }
    for column in &mut def.columns {
        if let Some(expr) = &column.generated {
            column.generated = Some(rename_in_expr(expr, &old, &new)?);
        }
    }
    for index in &mut def.indexes {
        if let Some(predicate) = &index.predicate {
            index.predicate = Some(rename_in_expr(predicate, &old, &new)?);
        }
    }
    Ok(())
}

/// `text` (an expression) with column `old` named `new`.
fn rename_in_expr(text: &str, old: &str, new: &str) -> Result<String> {
    let mut expr = parse_expr(text)?;
    // Quoted only when the name needs it, as PostgreSQL shows it.
    let renamed = match crate::functions::text::quote_ident(new) == new {
        true => ast::Ident::new(new),
        false => ast::Ident::with_quote('"', new),
    };
    let _ = ast::visit_expressions_mut(&mut expr, |e| {
        match e {
            ast::Expr::Identifier(id) if normalize_ident(id) == old => {
                *id = renamed.clone();
            }
            ast::Expr::CompoundIdentifier(parts) => {
                if let Some(last) = parts.last_mut()
                    && normalize_ident(last) == old
                {
                    *last = renamed.clone();
                }
            }
            _ => {}
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    Ok(expr.to_string())
}

/// `DROP COLUMN`: as in PostgreSQL, the column is marked dropped (hidden under a name no
/// query can reach, its stored values left in place) and the indexes and CHECK
/// constraints that use it go with it. Key columns cannot be dropped.
fn drop_column(
    session: &mut Session,
    txn: &SharedTxn,
    def: &mut TableDef,
    column: &ast::Ident,
    if_exists: bool,
    cascade: bool,
) -> Result<()> {
    let name = normalize_ident(column);
    let found = def.column_index(&name).filter(|&i| !def.columns[i].hidden);
    let Some(i) = found else {
        if if_exists {
            session.notice(format!(
                "column \"{name}\" of relation \"{}\" does not exist, skipping",
                def.name
            ));
            return Ok(());
        }
        return Err(Error::Sql(sql::Error::UnknownColumn {
            table: def.name.clone(),
            column: name,
        }));
    };
    if def.is_key_column(i) {
        return Err(Error::Unsupported(format!(
            "dropping primary key column \"{name}\" (the key is how rows are stored)"
        )));
    }
    // Generated columns computed from it need CASCADE, which drops them too.
    let table = def.name.clone();
    let generated: Vec<String> = def
        .columns
        .iter()
        .filter(|c| !c.hidden)
        .filter(|c| {
            c.generated
                .as_deref()
                .is_some_and(|g| reads_column(g, &name).unwrap_or(true))
        })
        .map(|c| c.name.clone())
        .collect();
    if !generated.is_empty() && !cascade {
        return Err(Error::DependentObjects {
            message: format!(
                "cannot drop column {name} of table {table} because other objects depend on it"
            ),
            detail: generated
                .iter()
                .map(|g| {
                    format!("column {g} of table {table} depends on column {name} of table {table}")
                })
                .collect::<Vec<_>>()
                .join("\n"),
        });
    }
    for g in generated {
        session.cascades_to(format!("column {g} of table {table}"));
        drop_column(
            session,
            txn,
            def,
            &ast::Ident::with_quote('"', g),
            false,
            true,
        )?;
    }
    if def
        .views
        .iter()
        .any(|v| v.view.as_ref().is_some_and(|vd| view_uses(vd, i, &name)))
    {
        let view = def
            .views
            .iter()
            .find(|v| v.view.as_ref().is_some_and(|vd| view_uses(vd, i, &name)))
            .map_or("", |v| v.name.as_str());
        return Err(Error::DependentObjects {
            message: format!(
                "cannot drop column {name} of table {} because other objects depend on it",
                def.name
            ),
            detail: format!(
                "materialized view {view} depends on column {name} of table {}",
                def.name
            ),
        });
    }
    // Its own foreign keys over the column go with it; those of other tables that
    // reference it need CASCADE.
    while let Some(k) = def.foreign_keys.iter().position(|k| k.columns.contains(&i)) {
        crate::foreign::detach(session, txn, def, k)?;
    }
    crate::foreign::refuse_column_if_referenced(session, txn, def, i, cascade)?;
    let object = format!("column {name} of table {}", def.name);
    for x in 0..def.indexes.len() {
        let index = &def.indexes[x];
        if index.unique
            && (index.columns.iter().any(|p| p.column == i) || index.include.contains(&i))
        {
            crate::foreign::refuse_if_needed(session, txn, def, x, cascade, &object)?;
        }
    }
    // An index over the column or an expression that reads it, or partial on a condition
    // that reads it, goes with it.
    let (kept, dropped): (Vec<_>, Vec<_>) =
        std::mem::take(&mut def.indexes).into_iter().partition(|x| {
            !x.columns.iter().any(|p| p.column == i)
                && !x.include.contains(&i)
                && !crate::expression_index::reads(def, x, &name)
                && !x
                    .predicate
                    .as_deref()
                    .is_some_and(|p| reads_column(p, &name).unwrap_or(true))
        });
    def.indexes = kept;
    crate::expression_index::release(def);
    for index in dropped {
        with_txn(txn, |t| t.drop_keyspace(index.keyspace))?;
    }
    def.checks
        .retain(|c| !reads_column(&c.expr, &name).unwrap_or(true));
    let column = &mut def.columns[i];
    column.name = format!("........pg.dropped.{}........", i + 1);
    column.hidden = true;
    column.nullable = true;
    column.default = None;
    column.identity = None;
    column.sequence = None;
    column.generated = None;
    Ok(())
}

/// Whether a materialized view holds or filters on base column `i` (named `name`).
pub(crate) fn view_uses(view: &sql::catalog::ViewDef, i: usize, name: &str) -> bool {
    view.columns.contains(&i)
        || view
            .predicate
            .as_deref()
            .is_some_and(|p| reads_column(p, name).unwrap_or(true))
}

/// Whether expression `text` names column `name`.
pub(crate) fn reads_column(text: &str, name: &str) -> Result<bool> {
    Ok(sql::ddl::columns_read(&parse_expr(text)?)
        .iter()
        .any(|c| c == name))
}

/// `ALTER COLUMN … SET/DROP DEFAULT`, `SET/DROP NOT NULL` (a type change is `retype`'s).
fn alter_column(
    session: &mut Session,
    txn: &SharedTxn,
    def: &mut TableDef,
    column: &ast::Ident,
    op: &ast::AlterColumnOperation,
) -> Result<()> {
    let name = normalize_ident(column);
    let (i, _) = def.column(&name)?;
    if def.columns[i].hidden {
        return Err(Error::Sql(sql::Error::UnknownColumn {
            table: def.name.clone(),
            column: name,
        }));
    }
    // DROP EXPRESSION: a generated column becomes a plain one, its values kept.
    if let ast::AlterColumnOperation::SetDefault { value } = op
        && let Some(if_exists) = drop_expression(value)
    {
        if def.columns[i].generated.take().is_none() {
            let message = format!(
                "column \"{name}\" of relation \"{}\" is not a stored generated column",
                def.name
            );
            if !if_exists {
                return Err(Error::NotInPrerequisiteState(message));
            }
            session.notice(format!("{message}, skipping"));
        }
        return Ok(());
    }
    let identity = def.columns[i].identity.is_some();
    if identity
        && matches!(
            op,
            ast::AlterColumnOperation::SetDefault { .. }
                | ast::AlterColumnOperation::DropDefault
                | ast::AlterColumnOperation::DropNotNull
        )
    {
        return Err(Error::InvalidStatement(format!(
            "column \"{name}\" of relation \"{}\" is an identity column",
            def.name
        )));
    }
    if def.columns[i].generated.is_some()
        && matches!(
            op,
            ast::AlterColumnOperation::SetDefault { .. } | ast::AlterColumnOperation::DropDefault
        )
    {
        return Err(Error::InvalidStatement(format!(
            "column \"{name}\" of relation \"{}\" is a generated column",
            def.name
        )));
    }
    match op {
        ast::AlterColumnOperation::SetDefault { value } => {
            let text = sql::ddl::default_text(value);
            parse_expr(&text)?;
            def.columns[i].default = Some(text);
        }
        ast::AlterColumnOperation::DropDefault => {
            // A serial column keeps owning its sequence (Prisma drops the default, then
            // the sequence), as in PostgreSQL.
            let table = def.name.clone();
            let column = &mut def.columns[i];
            if column.identity.is_none() {
                column.sequence = column.owned_sequence(&table);
            }
            column.default = None;
        }
        ast::AlterColumnOperation::DropNotNull => {
            if def.is_key_column(i) {
                return Err(Error::Sql(sql::Error::InvalidDefinition(format!(
                    "column \"{name}\" is in a primary key"
                ))));
            }
            def.columns[i].nullable = true;
        }
        ast::AlterColumnOperation::SetNotNull => {
            for_each_stored_row(def, txn, |row| match row[i].is_null() {
                true => Err(Error::NullsInColumn {
                    table: def.name.clone(),
                    column: name.clone(),
                }),
                false => Ok(()),
            })?;
            def.columns[i].nullable = false;
        }
        other => return Err(Error::Unsupported(format!("ALTER COLUMN {other}"))),
    }
    Ok(())
}

/// `ALTER INDEX name RENAME TO to`, which renames a table or a sequence too, as in
/// PostgreSQL.
pub async fn alter_index(
    session: &mut Session,
    name: &ast::ObjectName,
    operation: &ast::AlterIndexOperation,
) -> Result<WriteResult> {
    let ast::AlterIndexOperation::RenameIndex { index_name: to } = operation;
    let (name, to) = (table_name(name)?, table_name(to)?);
    if rename_other(session, &name, &to)? {
        return Ok(WriteResult::command("ALTER INDEX"));
    }
    let def = session.table_def(&name)?;
    if def.view.is_some() {
        return Err(Error::WrongObjectType(format!(
            "\"{name}\" is a materialized view; ALTER INDEX renames indexes"
        )));
    }
    Ok(rename_table(session, &def, &to)?.with_tag("ALTER INDEX"))
}

/// Renames `name` when it is an index or a sequence; `false` when it is neither.
fn rename_other(session: &mut Session, name: &str, to: &str) -> Result<bool> {
    let changes = crate::sequences::session_changes(session);
    let catalog = session.db.catalog.clone();
    if catalog.find_index(name, &changes).is_some()
        || catalog.find_primary_key(name, &changes).is_some()
    {
        crate::index::rename_index(session, name, to)?;
        return Ok(true);
    }
    crate::sequences::rename_sequence(session, name, to)
}

/// `ALTER TABLE … RENAME TO`: the table's record moves to the new name, and its
/// materialized views follow it. Its primary key keeps its name, as in PostgreSQL.
pub(crate) fn rename_table(session: &mut Session, def: &TableDef, to: &str) -> Result<WriteResult> {
    let readers = crate::plain_view::readers(session, &def.name);
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = std::sync::Arc::clone(&session.scope);
    let mut renamed = def.clone();
    // Sequences keep their names, as in PostgreSQL. A default that calls a CREATE
    // SEQUENCE sequence (`nextval('t_id_seq')` as pg_dump writes it) keeps calling it.
    let changes = session
        .scope
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .changes
        .clone();
    for column in &mut renamed.columns {
        if column.sequence.is_none()
            && let Some(name) = column.owned_sequence(&def.name)
            && catalog.sequence_def(&name, &changes).is_none()
        {
            column.sequence = Some(name);
        }
    }
    if !def.has_row_id() {
        renamed.pkey_name = Some(def.primary_key_name());
    }
    renamed.name = to.to_string();
    // Foreign keys name tables: the table's own, and those of the tables on either side.
    let old_name = def.name.clone();
    let rename = |def: &mut TableDef| {
        for fk in &mut def.foreign_keys {
            if fk.table == old_name {
                fk.table = to.to_string();
            }
        }
        for name in &mut def.referenced_by {
            if *name == old_name {
                *name = to.to_string();
            }
        }
    };
    rename(&mut renamed);
    let mut related: Vec<&String> = def
        .referenced_by
        .iter()
        .chain(def.foreign_keys.iter().map(|k| &k.table))
        .filter(|n| **n != old_name)
        .collect();
    related.sort();
    related.dedup();
    for name in related {
        let mut other = (*session.table_def(name)?).clone();
        rename(&mut other);
        store_def(session, &txn, other)?;
    }
    for view in &mut renamed.views {
        if let Some(v) = view.view.as_mut() {
            v.base = to.to_string();
        }
    }
    let old = def.name.clone();
    let mut sql_error = None;
    with_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        for view in &renamed.views {
            catalog
                .write(t, &mut scope.changes, view.clone())
                .map_err(storage_err)?;
        }
        match catalog.rename_table(t, &mut scope.changes, &old, renamed) {
            Ok(_) => Ok(()),
            Err(e @ sql::Error::Storage(_)) => Err(storage_err(e)),
            Err(e) => {
                sql_error = Some(e);
                Ok(())
            }
        }
    })?;
    if let Some(e) = sql_error {
        return Err(Error::Sql(e));
    }
    // A materialized view's base table keeps a copy of its definition.
    if let Some(v) = &def.view {
        let renamed = session.table_def(to)?;
        let mut base = (*session.table_def(&v.base)?).clone();
        for copy in &mut base.views {
            if copy.name == old {
                *copy = (*renamed).clone();
            }
        }
        store_def(session, &txn, base)?;
    }
    crate::sequences::rename_owner(session, &txn, &old, to, None)?;
    crate::plain_view::read_renamed(session, &readers, &old, to)?;
    Ok(WriteResult::command("ALTER TABLE"))
}

/// `TRUNCATE [TABLE] t, …  [RESTART IDENTITY | CONTINUE IDENTITY]`: each table, its indexes
/// and its materialized views get fresh, empty keyspaces and the old ones are dropped at
/// commit, as PostgreSQL gives the table a new file: no row is read or deleted one by one,
/// and a rollback keeps the rows. Sequences go on unless RESTART IDENTITY.
pub async fn truncate(session: &mut Session, truncate: &ast::Truncate) -> Result<WriteResult> {
    let restart = matches!(
        truncate.identity,
        Some(ast::TruncateIdentityOption::Restart)
    );
    let txn = session.open_txn()?;
    let mut defs: Vec<std::sync::Arc<TableDef>> = Vec::new();
    for target in &truncate.table_names {
        let name = table_name(&target.name)?;
        let def = session.table_def(&name)?;
        if def.view.is_some() {
            return Err(Error::WrongObjectType(format!("\"{name}\" is not a table")));
        }
        if !defs.iter().any(|d| d.name == def.name) {
            defs.push(def);
        }
    }
    // A table other tables reference goes only with them: named too, or by CASCADE.
    let cascade = matches!(truncate.cascade, Some(ast::CascadeOption::Cascade));
    let mut i = 0;
    while i < defs.len() {
        for child in defs[i].referenced_by.clone() {
            if defs.iter().any(|d| d.name == child) {
                continue;
            }
            if !cascade {
                return Err(Error::TruncateReferenced {
                    table: defs[i].name.clone(),
                    child,
                });
            }
            session.notice(format!("truncate cascades to table \"{child}\""));
            defs.push(session.table_def(&child)?);
        }
        i += 1;
    }
    let catalog = session.db.catalog.clone();
    let scope = std::sync::Arc::clone(&session.scope);
    for def in defs {
        if restart {
            crate::sequences::restart_owned(session, &def.name)?;
        }
        crate::provider::in_txn(&txn, |t| {
            let mut new = emptied(t, &def)?;
            new.sequence_keyspace = if restart {
                None
            } else {
                Some(def.sequence_keyspace.unwrap_or(def.keyspace))
            };
            let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            for view in &new.views {
                catalog.write(t, &mut scope.changes, view.clone())?;
            }
            catalog.write(t, &mut scope.changes, new)?;
            Ok(())
        })?;
    }
    Ok(WriteResult::command("TRUNCATE TABLE"))
}

/// `def` over fresh keyspaces (its own, its indexes', its views'), the old ones dropped.
pub(crate) fn emptied(t: &mut storage::Transaction, def: &TableDef) -> Result<TableDef> {
    let kind = if def.view.is_some() {
        storage::KeyspaceKind::View
    } else {
        storage::KeyspaceKind::Table
    };
    let mut new = def.clone();
    new.keyspace = t.create_keyspace(kind, &def.name, def.layout()?)?;
    t.drop_keyspace(def.keyspace)?;
    for (index, old) in new.indexes.iter_mut().zip(&def.indexes) {
        let shape = crate::index::IndexShape::of(def, old)?;
        index.keyspace =
            t.create_keyspace(storage::KeyspaceKind::Index, &index.name, shape.layout)?;
        t.drop_keyspace(old.keyspace)?;
    }
    new.views = def
        .views
        .iter()
        .map(|v| emptied(t, v))
        .collect::<Result<_>>()?;
    Ok(new)
}

/// The function `ALTER COLUMN c DROP EXPRESSION [IF EXISTS]` is read as the `SET DEFAULT`
/// of (`partita_drop_expression(true)` with IF EXISTS): sqlparser does not know the clause.
const DROP_EXPRESSION: &str = "partita_drop_expression";

/// Rewrites `ALTER [COLUMN] c DROP EXPRESSION [IF EXISTS]` as `ALTER [COLUMN] c SET DEFAULT
/// partita_drop_expression([true])` (see `DROP_EXPRESSION`).
pub(crate) fn mark_drop_expression(tokens: &mut Vec<TokenWithSpan>) {
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
        .collect();
    let word = |j: usize| match &tokens[j].token {
        Token::Word(w) if w.quote_style.is_none() => Some((w.keyword, w.value.to_lowercase())),
        _ => None,
    };
    let keyword = |j: usize, k: Keyword| word(j).is_some_and(|(w, _)| w == k);
    // Whether each significant token is in a statement that begins with ALTER.
    let mut in_alter = Vec::with_capacity(significant.len());
    let mut alter = false;
    let mut first = true;
    for &j in &significant {
        if first {
            alter = keyword(j, Keyword::ALTER);
        }
        first = matches!(tokens[j].token, Token::SemiColon);
        in_alter.push(alter);
    }
    let mut found = Vec::new();
    for (n, at) in significant.windows(4).enumerate() {
        if in_alter[n]
            && (keyword(at[0], Keyword::ALTER) || keyword(at[0], Keyword::COLUMN))
            && keyword(at[2], Keyword::DROP)
            && word(at[3]).is_some_and(|(_, w)| w == "expression")
        {
            let if_exists = significant
                .get(n + 4)
                .is_some_and(|&j| keyword(j, Keyword::IF))
                && significant
                    .get(n + 5)
                    .is_some_and(|&j| keyword(j, Keyword::EXISTS));
            found.push((at[2], at[3], if_exists.then(|| significant[n + 5])));
        }
    }
    for (drop, expression, exists) in found.into_iter().rev() {
        let mut call = vec![
            Token::make_keyword("SET"),
            Token::Whitespace(Whitespace::Space),
            Token::make_keyword("DEFAULT"),
            Token::Whitespace(Whitespace::Space),
            Token::make_word(DROP_EXPRESSION, None),
            Token::LParen,
        ];
        if exists.is_some() {
            call.push(Token::make_keyword("TRUE"));
        }
        call.push(Token::RParen);
        let end = exists.unwrap_or(expression);
        tokens.splice(drop..=end, call.into_iter().map(TokenWithSpan::wrap));
    }
}

/// `ALTER COLUMN c DROP EXPRESSION [IF EXISTS]` (read as `SET DEFAULT` of
/// `DROP_EXPRESSION`): whether `value` is that call, and with IF EXISTS.
fn drop_expression(value: &ast::Expr) -> Option<bool> {
    let ast::Expr::Function(f) = value else {
        return None;
    };
    if f.name.to_string() != DROP_EXPRESSION {
        return None;
    }
    Some(matches!(&f.args, ast::FunctionArguments::List(l) if !l.args.is_empty()))
}
