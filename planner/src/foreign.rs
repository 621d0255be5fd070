//! FOREIGN KEY constraints.
//!
//! A constraint is kept in the referencing table's definition (`TableDef::foreign_keys`); the
//! referenced table lists the tables that reference it (`TableDef::referenced_by`), so a write
//! to either side knows what to check without reading the whole catalog.
//!
//! A statement records the rows it changes in a [`Pending`]. When it has written them all,
//! [`Pending::enforce`] runs the referential actions (CASCADE, SET NULL, SET DEFAULT), whose own
//! changes are enforced in turn, and then the checks: each new referencing value has its
//! referenced row, and no referenced value that went away under NO ACTION or RESTRICT is still
//! referenced. As in PostgreSQL the checks run at the end of the statement, so one statement
//! may insert a tree's rows in any order. Every read goes through the writing transaction, so
//! a concurrent change to what a check read is a serialization failure (40001) at commit.
//!
//! Rows are looked up by their key when the columns are a prefix of it, else through an index
//! whose leading columns they are, else by one scan of the table for all the statement's
//! values (PostgreSQL, too, scans a referencing table that has no index on its columns).

use crate::error::{Error, Result};
use crate::index::IndexShape;
use crate::provider::{SharedTxn, in_txn, stored_values};
use crate::session::Session;
use sql::SqlType;
use sql::catalog::{ForeignKeyDef, ReferentialAction, TableDef};
use sql::ddl::ForeignKeySpec;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use storage::{Direction, KeyColumn, KeyLayout, KeyRange, Transaction, Value};

type Row = Vec<Value>;

/// Rounds of referential actions one statement may set off (each round is one table's
/// changes); a cycle of ON UPDATE CASCADE constraints that never settles stops here.
const MAX_ROUNDS: usize = 10_000;

// ---------------------------------------------------------------------------------------
// Definitions

/// Resolves `spec`, written for table `child` (as it will be stored), against the table it
/// references: the columns must exist, be as many on both sides, and the referenced ones be
/// the primary key or the columns of a unique index, with comparable types.
pub(crate) fn resolve(
    session: &Session,
    child: &TableDef,
    spec: &ForeignKeySpec,
) -> Result<ForeignKeyDef> {
    let parent = referenced_table(session, child, &spec.table)?;
    let parent = parent.as_deref().unwrap_or(child);
    // Each side names the other in its definition, so both must live as long.
    match (child.temp_schema.is_some(), parent.temp_schema.is_some()) {
        (false, true) => {
            return Err(Error::Sql(sql::Error::InvalidDefinition(
                "constraints on permanent tables may reference only permanent tables".into(),
            )));
        }
        (true, false) => {
            return Err(Error::Unsupported(
                "a foreign key from a temporary table to a permanent one".into(),
            ));
        }
        _ => {}
    }
    // Their commits would drop or empty one side without the other (PostgreSQL refuses a
    // mismatch at commit).
    if child.on_commit.is_some() || parent.on_commit.is_some() {
        return Err(Error::Unsupported(
            "a foreign key of a table with ON COMMIT DROP or DELETE ROWS".into(),
        ));
    }
    let column = |def: &TableDef, name: &str| -> Result<usize> {
        match def.column_index(name) {
            Some(i) if !def.columns[i].hidden => Ok(i),
            _ => Err(Error::UndefinedColumn(format!(
                "column \"{name}\" referenced in foreign key constraint does not exist"
            ))),
        }
    };
    let columns = spec
        .columns
        .iter()
        .map(|c| column(child, c))
        .collect::<Result<Vec<_>>>()?;
    let referenced = if spec.referenced.is_empty() {
        if parent.has_row_id() {
            return Err(Error::InvalidForeignKey(format!(
                "there is no primary key for referenced table \"{}\"",
                parent.name
            )));
        }
        parent.key_columns()
    } else {
        spec.referenced
            .iter()
            .map(|c| column(parent, c))
            .collect::<Result<Vec<_>>>()?
    };
    if columns.len() != referenced.len() {
        return Err(Error::InvalidForeignKey(
            "number of referencing and referenced columns for foreign key disagree".into(),
        ));
    }
    // An action that writes the referencing columns cannot write a generated one.
    if columns
        .iter()
        .any(|&c| child.columns[c].generated.is_some())
    {
        use sql::catalog::ReferentialAction::{Cascade, SetDefault, SetNull};
        let writes = [
            ("DELETE", matches!(spec.on_delete, SetNull | SetDefault)),
            (
                "UPDATE",
                matches!(spec.on_update, Cascade | SetNull | SetDefault),
            ),
        ];
        for (event, writes) in writes {
            if writes {
                return Err(Error::InvalidStatement(format!(
                    "invalid ON {event} action for foreign key constraint containing generated column"
                )));
            }
        }
    }
    let distinct: HashSet<usize> = referenced.iter().copied().collect();
    let index = match matching_index(parent, &distinct) {
        Some(index) if distinct.len() == referenced.len() => index,
        _ => {
            return Err(Error::InvalidForeignKey(format!(
                "there is no unique constraint matching given keys for referenced table \"{}\"",
                parent.name
            )));
        }
    };
    let name = match &spec.name {
        Some(name) => {
            if crate::ddl::constraint_exists(child, name) {
                return Err(Error::Sql(sql::Error::DuplicateObject(format!(
                    "constraint \"{name}\" for relation \"{}\" already exists",
                    child.name
                ))));
            }
            name.clone()
        }
        None => {
            let names: Vec<&str> = columns
                .iter()
                .map(|&c| child.columns[c].name.as_str())
                .collect();
            let base = format!("{}_{}_fkey", child.name, names.join("_"));
            let mut name = base.clone();
            let mut n = 0;
            while crate::ddl::constraint_exists(child, &name) {
                n += 1;
                name = format!("{base}{n}");
            }
            name
        }
    };
    check_types(&name, child, &columns, parent, &referenced)?;
    Ok(ForeignKeyDef {
        name,
        columns,
        table: parent.name.clone(),
        referenced,
        on_delete: spec.on_delete,
        on_update: spec.on_update,
        match_full: spec.match_full,
        index,
        not_valid: false,
        deferrable: spec.deferrable,
        initially_deferred: spec.initially_deferred,
    })
}

/// The table a foreign key of `child` names: `None` for `child` itself, 42809 for a view.
fn referenced_table(
    session: &Session,
    child: &TableDef,
    name: &str,
) -> Result<Option<Arc<TableDef>>> {
    if name == child.name {
        return Ok(None);
    }
    let not_a_table =
        || Error::WrongObjectType(format!("referenced relation \"{name}\" is not a table"));
    match session.table_def(name) {
        Ok(def) if def.view.is_none() => Ok(Some(def)),
        Ok(_) => Err(not_a_table()),
        Err(e) => {
            let scope = session.scope.lock().unwrap_or_else(|e| e.into_inner());
            match session.db.catalog.view(name, &scope.changes) {
                Some(_) => Err(not_a_table()),
                None => Err(e),
            }
        }
    }
}

/// What has exactly `columns` among the primary key (`Some(None)`) and the unique indexes
/// (`Some(Some(name))`, the first made), as PostgreSQL picks the index a foreign key
/// depends on.
fn matching_index(def: &TableDef, columns: &HashSet<usize>) -> Option<Option<String>> {
    let same = |cols: &mut dyn Iterator<Item = usize>| cols.collect::<HashSet<_>>() == *columns;
    if !def.has_row_id() && same(&mut def.key_columns().into_iter()) {
        return Some(None);
    }
    def.indexes
        .iter()
        .find(|i| {
            i.unique && i.predicate.is_none() && same(&mut i.columns.iter().map(|p| p.column))
        })
        .map(|i| Some(i.name.clone()))
}

/// Refuses a foreign key `constraint` whose `columns` of `child` and `referenced` columns of
/// `parent` pair values that cannot be compared (42804).
fn check_types(
    constraint: &str,
    child: &TableDef,
    columns: &[usize],
    parent: &TableDef,
    referenced: &[usize],
) -> Result<()> {
    for (&c, &p) in columns.iter().zip(referenced) {
        let (a, b) = (child.columns[c].ty, parent.columns[p].ty);
        if matches!(a, SqlType::Json | SqlType::Jsonb) || !comparable(a, b) {
            return Err(Error::ForeignKeyTypes {
                constraint: constraint.to_string(),
                detail: format!(
                    "Key columns \"{}\" and \"{}\" are of incompatible types: {a} and {b}.",
                    child.columns[c].name, parent.columns[p].name
                ),
            });
        }
    }
    Ok(())
}

/// The foreign keys column `column` of `def` takes part in, on either side, each with its
/// referencing table, once `def` (given its column's new type) is stored: refuses the new
/// type when a pair no longer compares (42804).
pub(crate) fn retyped(
    session: &Session,
    def: &TableDef,
    column: usize,
) -> Result<Vec<(TableDef, ForeignKeyDef)>> {
    let mut keys = Vec::new();
    // Its own keys over the column, and those of its own that reference it.
    let own = def.foreign_keys.iter().filter(|k| {
        k.columns.contains(&column) || (k.table == def.name && k.referenced.contains(&column))
    });
    for fk in own {
        let parent = match fk.table == def.name {
            true => None,
            false => Some(session.table_def(&fk.table)?),
        };
        let parent = parent.as_deref().unwrap_or(def);
        check_types(&fk.name, def, &fk.columns, parent, &fk.referenced)?;
        keys.push((def.clone(), fk.clone()));
    }
    for name in def.referenced_by.iter().filter(|n| **n != def.name) {
        let child = session.table_def(name)?;
        for fk in child.foreign_keys.iter() {
            if fk.table == def.name && fk.referenced.contains(&column) {
                check_types(&fk.name, &child, &fk.columns, def, &fk.referenced)?;
                keys.push(((*child).clone(), fk.clone()));
            }
        }
    }
    Ok(keys)
}

/// Whether values of types `a` and `b` can be compared for a foreign key: the same stored
/// type, or two integer types.
fn comparable(a: SqlType, b: SqlType) -> bool {
    let integer = |t: SqlType| matches!(t, SqlType::Int2 | SqlType::Int4 | SqlType::Int8);
    a.scalar() == b.scalar() || (integer(a) && integer(b))
}

/// Writes `fk` into `child` (whose definition the caller stores) and names `child` among the
/// tables that reference its referenced table, storing that table's definition when it is
/// another one.
pub(crate) fn attach(
    session: &Session,
    txn: &SharedTxn,
    child: &mut TableDef,
    fk: ForeignKeyDef,
) -> Result<()> {
    if fk.table == child.name {
        if !child.referenced_by.contains(&child.name) {
            child.referenced_by.push(child.name.clone());
        }
    } else {
        let mut parent = (*session.table_def(&fk.table)?).clone();
        if !parent.referenced_by.contains(&child.name) {
            parent.referenced_by.push(child.name.clone());
            crate::ddl::store_def(session, txn, parent)?;
        }
    }
    child.foreign_keys.push(fk);
    Ok(())
}

/// Takes foreign key `i` out of `child` (whose definition the caller stores), and `child` out
/// of its referenced table's list when no other of its keys references that table.
pub(crate) fn detach(
    session: &Session,
    txn: &SharedTxn,
    child: &mut TableDef,
    i: usize,
) -> Result<ForeignKeyDef> {
    let fk = child.foreign_keys.remove(i);
    if child.foreign_keys.iter().any(|k| k.table == fk.table) {
        return Ok(fk);
    }
    if fk.table == child.name {
        child.referenced_by.retain(|n| *n != child.name);
    } else if let Ok(parent) = session.table_def(&fk.table) {
        let mut parent = (*parent).clone();
        parent.referenced_by.retain(|n| *n != child.name);
        crate::ddl::store_def(session, txn, parent)?;
    }
    Ok(fk)
}

/// The foreign keys of other tables that reference `def` (and its own that reference
/// itself), with the referencing table's definition.
pub(crate) fn referencing(
    session: &Session,
    def: &Arc<TableDef>,
) -> Result<Vec<(Arc<TableDef>, ForeignKeyDef)>> {
    let mut out = Vec::new();
    for name in &def.referenced_by {
        let child = if *name == def.name {
            Arc::clone(def)
        } else {
            session.table_def(name)?
        };
        for fk in child.foreign_keys.iter().filter(|k| k.table == def.name) {
            out.push((Arc::clone(&child), fk.clone()));
        }
    }
    Ok(out)
}

/// Drops the foreign keys `doomed` picks among those that reference `def` (whose
/// definition, when one of its own is among them, the caller stores), with a notice each;
/// without `cascade`, refuses with 2BP01 naming them as depending on `what` ("index
/// p_code_key", "column id of table p"). `object` is what the statement drops.
fn drop_dependents(
    session: &mut Session,
    txn: &SharedTxn,
    def: &mut TableDef,
    cascade: bool,
    object: &str,
    what: &str,
    doomed: impl Fn(&ForeignKeyDef) -> bool,
) -> Result<()> {
    let mut found: Vec<(String, String)> = Vec::new();
    for name in &def.referenced_by {
        let keys: Vec<ForeignKeyDef> = match *name == def.name {
            true => def.foreign_keys.clone(),
            false => session.table_def(name)?.foreign_keys.clone(),
        };
        for fk in keys.iter().filter(|k| k.table == def.name && doomed(k)) {
            found.push((name.clone(), fk.name.clone()));
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    if !cascade {
        return Err(Error::DependentObjects {
            message: format!("cannot drop {object} because other objects depend on it"),
            detail: found
                .iter()
                .map(|(table, fk)| format!("constraint {fk} on table {table} depends on {what}"))
                .collect::<Vec<_>>()
                .join("\n"),
        });
    }
    for (table, fk) in found {
        session.cascades_to(format!("constraint {fk} on table {table}"));
        if table == def.name {
            if let Some(i) = def.foreign_keys.iter().position(|k| k.name == fk) {
                detach(session, txn, def, i)?;
            }
        } else {
            // `def` is the caller's to store: the child leaves its list here.
            let mut child = (*session.table_def(&table)?).clone();
            child.foreign_keys.retain(|k| k.name != fk);
            if !child.foreign_keys.iter().any(|k| k.table == def.name) {
                def.referenced_by.retain(|n| *n != table);
            }
            crate::ddl::store_def(session, txn, child)?;
        }
    }
    Ok(())
}

/// Before unique index `index` of `def` is dropped: the foreign keys that depend on it go
/// with CASCADE, else 2BP01.
pub(crate) fn refuse_if_needed(
    session: &mut Session,
    txn: &SharedTxn,
    def: &mut TableDef,
    index: usize,
    cascade: bool,
    object: &str,
) -> Result<()> {
    let name = def.indexes[index].name.clone();
    let relies = |fk: &ForeignKeyDef| fk.index.as_deref() == Some(name.as_str());
    drop_dependents(
        session,
        txn,
        def,
        cascade,
        object,
        &format!("index {name}"),
        relies,
    )
}

/// Before column `column` of `def` is dropped: the foreign keys that reference it go with
/// CASCADE, else 2BP01.
pub(crate) fn refuse_column_if_referenced(
    session: &mut Session,
    txn: &SharedTxn,
    def: &mut TableDef,
    column: usize,
    cascade: bool,
) -> Result<()> {
    let what = format!("column {} of table {}", def.columns[column].name, def.name);
    drop_dependents(session, txn, def, cascade, &what, &what, |fk| {
        fk.referenced.contains(&column)
    })
}

/// `pg_get_constraintdef` of a foreign key: `FOREIGN KEY (a) REFERENCES p(x) ON DELETE
/// CASCADE`, as PostgreSQL prints it (NO ACTION and MATCH SIMPLE left out).
pub fn definition(child: &TableDef, fk: &ForeignKeyDef, parent: Option<&TableDef>) -> String {
    let names = |def: &TableDef, cols: &[usize]| {
        cols.iter()
            .map(|&c| crate::functions::text::quote_ident(&def.columns[c].name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let referenced = match parent {
        Some(p) => names(p, &fk.referenced),
        None => String::new(),
    };
    let mut out = format!(
        "FOREIGN KEY ({}) REFERENCES {}({referenced})",
        names(child, &fk.columns),
        crate::functions::text::quote_ident(&fk.table)
    );
    if fk.match_full {
        out.push_str(" MATCH FULL");
    }
    if fk.on_update != ReferentialAction::NoAction {
        out.push_str(&format!(" ON UPDATE {}", fk.on_update.sql()));
    }
    if fk.on_delete != ReferentialAction::NoAction {
        out.push_str(&format!(" ON DELETE {}", fk.on_delete.sql()));
    }
    if fk.initially_deferred {
        out.push_str(" DEFERRABLE INITIALLY DEFERRED");
    } else if fk.deferrable {
        out.push_str(" DEFERRABLE");
    }
    if fk.not_valid {
        out.push_str(" NOT VALID");
    }
    out
}

// ---------------------------------------------------------------------------------------
// Validation of stored rows (ALTER TABLE ADD CONSTRAINT … FOREIGN KEY)

/// Checks every stored row of `child` against `fk`, which is not yet part of its definition.
pub(crate) fn validate(
    session: &Session,
    txn: &SharedTxn,
    child: &TableDef,
    fk: &ForeignKeyDef,
) -> Result<()> {
    let parent = match fk.table == child.name {
        true => None,
        false => Some(session.table_def(&fk.table)?),
    };
    let parent = parent.as_deref().unwrap_or(child);
    // The distinct referencing values, looked up once the scan, which holds the
    // transaction, is done.
    let mut keys = Vec::new();
    let mut seen = HashSet::new();
    crate::ddl::for_each_stored_row(child, txn, |values| {
        if let Some(key) = referencing_key(child, fk, values)?
            && seen.insert(encoded(child, &fk.columns, &key)?)
        {
            keys.push(key);
        }
        Ok(())
    })?;
    for key in keys {
        if !present(parent, txn, &fk.referenced, &key)? {
            return Err(not_present(child, fk, parent, &key));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Enforcement

/// One row change: an insert (`old` absent), a delete (`new` absent) or an update.
struct Change {
    old: Option<Row>,
    new: Option<Row>,
}

/// The row changes of one statement to one table that its foreign keys, or those that
/// reference it, must see; empty (and recording nothing) for a table with neither.
pub(crate) struct Pending {
    def: Arc<TableDef>,
    changes: Vec<Change>,
    /// Written by referential actions: each row's every reference is checked, not only
    /// those the action changed (the statement may have changed the others first, and its
    /// own check passed over the row the action then rewrote).
    cascaded: bool,
}

impl Pending {
    pub(crate) fn new(def: &Arc<TableDef>) -> Pending {
        Pending {
            def: Arc::clone(def),
            changes: Vec::new(),
            cascaded: false,
        }
    }

    /// Notes a row written by the statement, when a foreign key could care.
    pub(crate) fn record(&mut self, old: Option<&[Value]>, new: Option<&[Value]>) {
        let def = &self.def;
        if !def.has_foreign_keys() {
            return;
        }
        let referencing = new.is_some_and(|n| {
            def.foreign_keys.iter().any(|fk| match old {
                None => true,
                Some(o) => differ(fk.columns.iter().copied(), o, n),
            })
        });
        // Referenced columns are the key's or a unique index's: a change elsewhere leaves
        // every reference whole.
        let referenced = !def.referenced_by.is_empty()
            && old.is_some_and(|o| match new {
                None => true,
                Some(n) => {
                    let key = def.partition_key.iter().copied();
                    differ(key.chain(def.row_key.iter().map(|p| p.column)), o, n)
                        || def
                            .indexes
                            .iter()
                            .any(|i| i.unique && differ(i.columns.iter().map(|p| p.column), o, n))
                }
            });
        if referencing || referenced {
            self.changes.push(Change {
                old: old.map(<[Value]>::to_vec),
                new: new.map(<[Value]>::to_vec),
            });
        }
    }

    /// Runs the referential actions the statement's changes set off, then checks every
    /// foreign key they touch (23503).
    pub(crate) async fn enforce(self, session: &Session, txn: &SharedTxn) -> Result<()> {
        if self.changes.is_empty() {
            return Ok(());
        }
        let mut queue = VecDeque::from([self]);
        let mut done = Vec::new();
        while let Some(pending) = queue.pop_front() {
            if done.len() >= MAX_ROUNDS {
                return Err(Error::TooComplex(
                    "referential actions did not settle (a cycle of ON UPDATE CASCADE?)".into(),
                ));
            }
            for (child, fk) in referencing(session, &pending.def)? {
                crate::dml::track_table(session, txn, &child.name)?;
                let mut cascaded = Pending::new(&child);
                cascaded.cascaded = true;
                act(session, txn, &pending, &child, &fk, &mut cascaded).await?;
                if !cascaded.changes.is_empty() {
                    queue.push_back(cascaded);
                }
            }
            done.push(pending);
        }
        let now = |fk: &ForeignKeyDef| !session.deferred_now(fk);
        for pending in &done {
            pending.check_references(session, txn, now)?;
            pending.check_referenced(session, txn, now)?;
        }
        // Changes a constraint deferred now cares about wait for the commit (or SET
        // CONSTRAINTS … IMMEDIATE), which checks every deferrable constraint they touch:
        // checking one that was checked already finds nothing new. Changes only immediate
        // constraints cared about are not kept.
        let deferred_now = |fk: &ForeignKeyDef| session.deferred_now(fk);
        let mut deferred = Vec::new();
        for pending in done {
            if pending.def.foreign_keys.iter().any(deferred_now)
                || referencing(session, &pending.def)?
                    .iter()
                    .any(|(_, fk)| deferred_now(fk))
            {
                deferred.push(pending);
            }
        }
        session.defer_checks(deferred);
        Ok(())
    }

    /// Runs the checks of the constraints `due` picks (the deferrable ones, at commit).
    pub(crate) fn check_deferred(
        &self,
        session: &Session,
        txn: &SharedTxn,
        due: impl Fn(&ForeignKeyDef) -> bool + Copy,
    ) -> Result<()> {
        self.check_references(session, txn, due)?;
        self.check_referenced(session, txn, due)
    }

    /// Each new referencing value has its referenced row, for the constraints `due` picks.
    fn check_references(
        &self,
        session: &Session,
        txn: &SharedTxn,
        due: impl Fn(&ForeignKeyDef) -> bool,
    ) -> Result<()> {
        let def = &self.def;
        for fk in def.foreign_keys.iter().filter(|fk| due(fk)) {
            let parent = match fk.table == def.name {
                true => Arc::clone(def),
                false => {
                    crate::dml::track_table(session, txn, &fk.table)?;
                    session.table_def(&fk.table)?
                }
            };
            let mut checked = HashSet::new();
            for change in &self.changes {
                let Some(new) = &change.new else { continue };
                let Some(key) = referencing_key(def, fk, new)? else {
                    continue;
                };
                let unchanged = !self.cascaded
                    && change
                        .old
                        .as_ref()
                        .is_some_and(|old| fk.columns.iter().all(|&c| old[c] == new[c]));
                if unchanged || !checked.insert(encoded(def, &fk.columns, &key)?) {
                    continue;
                }
                if !present(&parent, txn, &fk.referenced, &key)? && still_holds(def, txn, new)? {
                    return Err(not_present(def, fk, &parent, &key));
                }
            }
        }
        Ok(())
    }

    /// No referenced value that went away under NO ACTION or RESTRICT is still referenced
    /// (NO ACTION lets a statement that puts the value back go). RESTRICT is never
    /// deferred, as in PostgreSQL; NO ACTION is for the constraints `due` picks.
    fn check_referenced(
        &self,
        session: &Session,
        txn: &SharedTxn,
        due: impl Fn(&ForeignKeyDef) -> bool,
    ) -> Result<()> {
        for (child, fk) in referencing(session, &self.def)? {
            let mut keys = Vec::new();
            for (old_key, new_key) in self.vanished(&fk)? {
                let action = match new_key {
                    Some(_) => fk.on_update,
                    None => fk.on_delete,
                };
                if !due(&fk) && action != ReferentialAction::Restrict {
                    continue;
                }
                if action != ReferentialAction::Restrict
                    && present(&self.def, txn, &fk.referenced, &old_key)?
                {
                    continue;
                }
                // SET DEFAULT to the value that went away leaves the rows referencing it,
                // held to NO ACTION's rule as PostgreSQL does.
                if matches!(
                    action,
                    ReferentialAction::NoAction
                        | ReferentialAction::Restrict
                        | ReferentialAction::SetDefault
                ) && let Some(key) = convert(&old_key, &child, &fk.columns)
                {
                    keys.push((old_key, key));
                }
            }
            if keys.is_empty() {
                continue;
            }
            let wanted: Vec<Row> = keys.iter().map(|(_, k)| k.clone()).collect();
            if let Some(row) = matching_rows(&child, txn, &fk.columns, &wanted, true)?.first() {
                let found: Row = fk.columns.iter().map(|&c| row[c].clone()).collect();
                let old_key = keys
                    .iter()
                    .find(|(_, k)| *k == found)
                    .map_or(found.clone(), |(o, _)| o.clone());
                return Err(still_referenced(&self.def, &child, &fk, &old_key));
            }
        }
        Ok(())
    }

    /// The referenced values of `fk` this statement's changes took away, each with the
    /// values an update gave in their place (`None` for a delete).
    fn vanished(&self, fk: &ForeignKeyDef) -> Result<Vec<(Row, Option<Row>)>> {
        let mut out = Vec::new();
        for change in &self.changes {
            let Some(old) = &change.old else { continue };
            let old_key: Row = fk.referenced.iter().map(|&c| old[c].clone()).collect();
            if old_key.iter().any(Value::is_null) {
                continue;
            }
            let new_key = change
                .new
                .as_ref()
                .map(|n| fk.referenced.iter().map(|&c| n[c].clone()).collect::<Row>());
            if new_key.as_ref() != Some(&old_key) {
                out.push((old_key, new_key));
            }
        }
        Ok(out)
    }
}

/// Applies `fk`'s CASCADE, SET NULL or SET DEFAULT to the rows of `child` that referenced
/// values `parent`'s changes took away, recording what it writes in `out`.
async fn act(
    session: &Session,
    txn: &SharedTxn,
    parent: &Pending,
    child: &Arc<TableDef>,
    fk: &ForeignKeyDef,
    out: &mut Pending,
) -> Result<()> {
    // By the referencing values (in the child's types): what replaces them, if anything.
    let mut targets: HashMap<Vec<u8>, (Row, ReferentialAction, Option<Row>)> = HashMap::new();
    for (old_key, new_key) in parent.vanished(fk)? {
        let action = match new_key {
            Some(_) => fk.on_update,
            None => fk.on_delete,
        };
        if matches!(
            action,
            ReferentialAction::NoAction | ReferentialAction::Restrict
        ) {
            continue;
        }
        if let Some(key) = convert(&old_key, child, &fk.columns) {
            // A new value the referencing column cannot hold fails the cascaded update, as
            // in PostgreSQL (it must not read as a delete).
            let replacement = match new_key {
                Some(n) => Some(convert(&n, child, &fk.columns).ok_or_else(|| {
                    Error::NumericOverflow(format!(
                        "{} out of range",
                        fk.columns
                            .iter()
                            .map(|&c| child.columns[c].ty.to_string())
                            .find(|t| t != "bigint")
                            .unwrap_or_else(|| "bigint".into())
                    ))
                })?),
                None => None,
            };
            targets.insert(
                encoded(child, &fk.columns, &key)?,
                (key, action, replacement),
            );
        }
    }
    if targets.is_empty() {
        return Ok(());
    }
    let keys: Vec<Row> = targets.values().map(|(k, _, _)| k.clone()).collect();
    let rows = matching_rows(child, txn, &fk.columns, &keys, false)?;
    let layout = child.layout()?;
    // SET DEFAULT's values, evaluated once for the rows of this round.
    let defaults = match targets
        .values()
        .any(|(_, a, _)| *a == ReferentialAction::SetDefault)
    {
        true => Some(crate::dml::default_values(session, child, &fk.columns).await?),
        false => None,
    };
    for old in rows {
        let key: Row = fk.columns.iter().map(|&c| old[c].clone()).collect();
        let Some((_, action, replacement)) = targets.get(&encoded(child, &fk.columns, &key)?)
        else {
            continue;
        };
        let mut new = old.clone();
        match (action, replacement) {
            (ReferentialAction::Cascade, None) => {
                crate::dml::delete_row(child, &layout, txn, &old)?;
                out.record(Some(&old), None);
                continue;
            }
            (ReferentialAction::Cascade, Some(values)) => {
                for (&c, v) in fk.columns.iter().zip(values) {
                    new[c] = v.clone();
                }
            }
            (ReferentialAction::SetNull, _) => {
                for &c in &fk.columns {
                    new[c] = Value::Null;
                }
            }
            _ => {
                for (&c, v) in fk.columns.iter().zip(defaults.iter().flatten()) {
                    new[c] = v.clone();
                }
                // A default that is the value that went away leaves the row as it is
                // (`check_referenced` holds it to NO ACTION).
                if new == old {
                    continue;
                }
            }
        }
        crate::dml::write_updated(child, &layout, txn, &old, &mut new)?;
        out.record(Some(&old), Some(&new));
    }
    Ok(())
}

/// Whether rows `a` and `b` differ in any of `columns` (without allocating: this runs for
/// every row written to a referenced table).
fn differ(mut columns: impl Iterator<Item = usize>, a: &[Value], b: &[Value]) -> bool {
    columns.any(|c| a[c] != b[c])
}

/// The referencing values of a row of `def` under `fk`, `None` when the row references
/// nothing (a NULL among them; MATCH FULL refuses some NULLs but not all).
fn referencing_key(def: &TableDef, fk: &ForeignKeyDef, row: &[Value]) -> Result<Option<Row>> {
    let key: Row = fk.columns.iter().map(|&c| row[c].clone()).collect();
    let nulls = key.iter().filter(|v| v.is_null()).count();
    if nulls == 0 {
        return Ok(Some(key));
    }
    if fk.match_full && nulls < key.len() {
        return Err(Error::ForeignKeyViolation {
            table: def.name.clone(),
            constraint: fk.name.clone(),
            message: format!(
                "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
                def.name, fk.name
            ),
            detail: "MATCH FULL does not allow mixing of null and nonnull key values.".into(),
        });
    }
    Ok(None)
}

/// Whether `def` has a row whose `columns` hold `key` (given in the other side's types).
fn present(def: &TableDef, txn: &SharedTxn, columns: &[usize], key: &[Value]) -> Result<bool> {
    match convert(key, def, columns) {
        Some(key) => Ok(!matching_rows(def, txn, columns, &[key], true)?.is_empty()),
        None => Ok(false),
    }
}

/// Whether `row` of `def` is still stored as it is: a row a later action of the statement
/// deleted or changed is not held to the references it had.
fn still_holds(def: &TableDef, txn: &SharedTxn, row: &[Value]) -> Result<bool> {
    let layout = def.layout()?;
    let key = crate::dml::row_key(def, &layout, row)?;
    in_txn(txn, |t| match t.get(def.keyspace, &key)? {
        Some(stored) => Ok(stored_values(def, &stored.value)? == row),
        None => Ok(false),
    })
}

/// `key`'s values in the types of `def`'s `columns`; `None` when one cannot be held there
/// (an integer out of range), so no row can match.
fn convert(key: &[Value], def: &TableDef, columns: &[usize]) -> Option<Row> {
    key.iter()
        .zip(columns)
        .map(|(v, &c)| {
            let wide = match v {
                Value::Int2(n) => i64::from(*n),
                Value::Int4(n) => i64::from(*n),
                Value::Int8(n) => *n,
                other => return Some(other.clone()),
            };
            Some(match def.columns[c].ty {
                SqlType::Int2 => Value::Int2(i16::try_from(wide).ok()?),
                SqlType::Int4 => Value::Int4(i32::try_from(wide).ok()?),
                _ => Value::Int8(wide),
            })
        })
        .collect()
}

/// How rows with given values in some columns are found.
enum Access {
    /// A prefix of the table's key: the positions (in the columns) of its partition key and
    /// of the leading row key columns.
    Key(KeyLayout, Vec<usize>, Vec<usize>),
    /// A prefix of an index's key, likewise.
    Index(IndexShape, storage::KeyspaceId, Vec<usize>, Vec<usize>),
    /// One scan of the table.
    Scan,
}

fn access(def: &TableDef, columns: &[usize]) -> Result<Access> {
    let row: Vec<usize> = def.row_key.iter().map(|p| p.column).collect();
    if !def.has_row_id()
        && let Some((p, r)) = key_prefix(&def.partition_key, &row, columns)
    {
        return Ok(Access::Key(def.layout()?, p, r));
    }
    // An index has no entry for a row with a NULL in one of its columns: only one whose
    // columns are all among those (never NULL here) holds every matching row.
    for index in &def.indexes {
        // A partial index holds only the rows its predicate covers.
        if index.predicate.is_some() || !index.columns.iter().all(|p| columns.contains(&p.column)) {
            continue;
        }
        let shape = IndexShape::of(def, index)?;
        let row: Vec<usize> = shape.row.iter().map(|p| p.column).collect();
        if let Some((p, r)) = key_prefix(&shape.partition, &row, columns) {
            return Ok(Access::Index(shape, index.keyspace, p, r));
        }
    }
    Ok(Access::Scan)
}

/// When `columns` are exactly a key's partition columns and its leading row columns: their
/// positions in `columns`, in key order.
fn key_prefix(
    partition: &[usize],
    row: &[usize],
    columns: &[usize],
) -> Option<(Vec<usize>, Vec<usize>)> {
    let n = columns.len();
    if partition.len() > n || row.len() < n - partition.len() {
        return None;
    }
    let position = |c: &usize| columns.iter().position(|x| x == c);
    let p = partition.iter().map(position).collect::<Option<Vec<_>>>()?;
    let r = row[..n - partition.len()]
        .iter()
        .map(position)
        .collect::<Option<Vec<_>>>()?;
    let distinct: HashSet<usize> = p.iter().chain(&r).copied().collect();
    (distinct.len() == n).then_some((p, r))
}

fn prefix(layout: &KeyLayout, p: &[usize], r: &[usize], key: &[Value]) -> Result<Vec<u8>> {
    let pick = |pos: &[usize]| pos.iter().map(|&i| key[i].clone()).collect::<Vec<_>>();
    let partition = layout.partition_prefix(&pick(p))?;
    Ok(layout.encode_row_prefix(&partition, &pick(r))?)
}

/// The rows of `def` whose `columns` hold one of `keys` (in `def`'s types, no NULLs), read in
/// the transaction; with `first`, at most one.
fn matching_rows(
    def: &TableDef,
    txn: &SharedTxn,
    columns: &[usize],
    keys: &[Row],
    first: bool,
) -> Result<Vec<Row>> {
    let access = access(def, columns)?;
    in_txn(txn, |t| {
        let mut out = Vec::new();
        let scan = |t: &mut Transaction, keyspace, range: KeyRange| {
            t.scan(keyspace, &range, Direction::Forward)
        };
        match &access {
            Access::Key(layout, p, r) => {
                for key in keys {
                    for row in scan(
                        t,
                        def.keyspace,
                        KeyRange::prefix(&prefix(layout, p, r, key)?),
                    )? {
                        out.push(stored_values(def, &row?.value)?);
                        if first {
                            return Ok(out);
                        }
                    }
                }
            }
            Access::Index(shape, keyspace, p, r) => {
                for key in keys {
                    let entries: Vec<_> = scan(
                        t,
                        *keyspace,
                        KeyRange::prefix(&prefix(&shape.layout, p, r, key)?),
                    )?
                    .collect::<storage::Result<_>>()?;
                    for entry in entries {
                        if let Some(row) = crate::index::entry_row(def, shape, t, &entry.value)? {
                            out.push(row);
                            if first {
                                return Ok(out);
                            }
                        }
                    }
                }
            }
            Access::Scan => {
                let encode = |values: &[Value]| encoded(def, columns, values);
                let wanted = keys
                    .iter()
                    .map(|k| encode(k))
                    .collect::<Result<HashSet<_>>>()?;
                for row in scan(t, def.keyspace, KeyRange::all())? {
                    let values = stored_values(def, &row?.value)?;
                    let key: Row = columns.iter().map(|&c| values[c].clone()).collect();
                    if key.iter().any(Value::is_null) || !wanted.contains(&encode(&key)?) {
                        continue;
                    }
                    out.push(values);
                    if first {
                        return Ok(out);
                    }
                }
            }
        }
        Ok(out)
    })
}

/// `key` (values of `def`'s `columns`) as bytes that compare and hash as the values do.
fn encoded(def: &TableDef, columns: &[usize], key: &[Value]) -> Result<Vec<u8>> {
    let cols: Vec<KeyColumn> = columns
        .iter()
        .map(|&c| KeyColumn::asc(def.columns[c].ty.scalar()))
        .collect();
    let mut out = Vec::new();
    storage::keycodec::encode_key(&mut out, key, &cols)?;
    Ok(out)
}

fn key_text(def: &TableDef, columns: &[usize], key: &[Value]) -> String {
    let names: Vec<&str> = columns
        .iter()
        .map(|&c| def.columns[c].name.as_str())
        .collect();
    let values: Vec<String> = key.iter().map(crate::text::value_text).collect();
    format!("({})=({})", names.join(", "), values.join(", "))
}

fn not_present(child: &TableDef, fk: &ForeignKeyDef, parent: &TableDef, key: &[Value]) -> Error {
    Error::ForeignKeyViolation {
        table: child.name.clone(),
        constraint: fk.name.clone(),
        message: format!(
            "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
            child.name, fk.name
        ),
        detail: format!(
            "Key {} is not present in table \"{}\".",
            key_text(child, &fk.columns, key),
            parent.name
        ),
    }
}

fn still_referenced(
    parent: &TableDef,
    child: &TableDef,
    fk: &ForeignKeyDef,
    key: &[Value],
) -> Error {
    Error::ForeignKeyViolation {
        table: child.name.clone(),
        constraint: fk.name.clone(),
        message: format!(
            "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
            parent.name, fk.name, child.name
        ),
        detail: format!(
            "Key {} is still referenced from table \"{}\".",
            key_text(parent, &fk.referenced, key),
            child.name
        ),
    }
}

// ---------------------------------------------------------------------------------------
// Deferred checks (DEFERRABLE constraints, SET CONSTRAINTS)

/// The internal procedure `SET CONSTRAINTS` is carried to the session as (see
/// `session::internal_call`); its text is the mode and the names, `deferred all` or
/// `immediate a,b`.
const SET_CONSTRAINTS_PROCEDURE: &str = "partita_set_constraints";

/// What SET CONSTRAINTS said in the open transaction: for every deferrable constraint
/// (`all`) or by name; a constraint neither names keeps its INITIALLY mode.
#[derive(Debug, Default)]
pub(crate) struct ConstraintModes {
    all: Option<bool>,
    named: HashMap<String, bool>,
}

impl ConstraintModes {
    /// SET CONSTRAINTS: ALL (`names` None) overrides what was said by name before.
    pub(crate) fn set(&mut self, deferred: bool, names: Option<Vec<String>>) {
        match names {
            None => {
                self.named.clear();
                self.all = Some(deferred);
            }
            Some(names) => {
                for name in names {
                    self.named.insert(name, deferred);
                }
            }
        }
    }

    /// Whether `fk`'s checks wait for the commit.
    pub(crate) fn deferred(&self, fk: &ForeignKeyDef) -> bool {
        fk.deferrable
            && self
                .named
                .get(&fk.name)
                .copied()
                .or(self.all)
                .unwrap_or(fk.initially_deferred)
    }
}

/// `SET CONSTRAINTS {ALL | name [, …]} {DEFERRED | IMMEDIATE}`, its first two words read,
/// as an internal call (sqlparser does not know the statement).
pub(crate) fn parse_set_constraints(
    parser: &mut datafusion::sql::sqlparser::parser::Parser,
) -> std::result::Result<
    datafusion::sql::sqlparser::ast::Statement,
    datafusion::sql::sqlparser::parser::ParserError,
> {
    use datafusion::sql::sqlparser::keywords::Keyword;
    let names = match parser.parse_keyword(Keyword::ALL) {
        true => "all".to_string(),
        false => parser
            .parse_comma_separated(|p| p.parse_object_name(false))?
            .iter()
            .map(|name| {
                name.0
                    .last()
                    .and_then(|part| part.as_ident())
                    .map(sql::ddl::normalize_ident)
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join(","),
    };
    let mode = match parser.expect_one_of_keywords(&[Keyword::DEFERRED, Keyword::IMMEDIATE])? {
        Keyword::DEFERRED => "deferred",
        _ => "immediate",
    };
    Ok(crate::session::internal_call(
        SET_CONSTRAINTS_PROCEDURE,
        &format!("{mode} {names}"),
    ))
}

/// The mode and names of a SET CONSTRAINTS call (`None` for the names: ALL).
pub(crate) fn set_constraints(
    call: &datafusion::sql::sqlparser::ast::Function,
) -> Option<(bool, Option<Vec<String>>)> {
    let text = crate::session::internal_call_text(call, SET_CONSTRAINTS_PROCEDURE)?;
    let (mode, names) = text.split_once(' ')?;
    let names = match names {
        "all" => None,
        names => Some(names.split(',').map(str::to_string).collect()),
    };
    Some((mode == "deferred", names))
}

/// The deferrable foreign keys `names` pick (all of them for `None`): 42704 for a name no
/// constraint has, 55000 for one that is not deferrable.
pub(crate) fn named_constraints(
    session: &Session,
    names: Option<&[String]>,
) -> Result<HashSet<String>> {
    let tables = session
        .db
        .catalog
        .tables(&crate::sequences::session_changes(session));
    let mut picked = HashSet::new();
    for name in names.into_iter().flatten() {
        let found: Vec<&ForeignKeyDef> = tables
            .iter()
            .flat_map(|t| t.foreign_keys.iter())
            .filter(|fk| fk.name == *name)
            .collect();
        if found.is_empty() {
            return Err(Error::UndefinedObject(format!(
                "constraint \"{name}\" does not exist"
            )));
        }
        if found.iter().any(|fk| !fk.deferrable) {
            return Err(Error::WrongObjectType(format!(
                "constraint \"{name}\" is not deferrable"
            )));
        }
        picked.insert(name.clone());
    }
    Ok(picked)
}
