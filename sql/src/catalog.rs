//! The SQL catalog: table definitions (columns, declared types, defaults, key layout), stored
//! as JSON records in the store's catalog keyspace and written in the same transaction as the
//! keyspaces they describe.
//!
//! Sessions read a shared in-memory copy (`Catalog`), loaded at startup and updated when a
//! transaction that changed it commits; a transaction sees its own uncommitted DDL through
//! `CatalogChanges`.

use crate::error::{Error, Result};
use crate::types::SqlType;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use storage::{
    CATALOG_KEYSPACE, Direction, KeyColumn, KeyLayout, KeyRange, KeyspaceId, KeyspaceKind,
    SortOrder, Store, Transaction,
};

/// Name of the hidden row-id column of tables declared without a primary key.
pub const ROW_ID_COLUMN: &str = "_rowid";
/// System column: commit time of the row's last change.
pub const TIMESTAMP_COLUMN: &str = "_timestamp";
/// System column: opaque version of the row.
pub const ETAG_COLUMN: &str = "_etag";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnDef {
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
    /// DEFAULT expression, as SQL text.
    #[serde(default)]
    pub default: Option<String>,
    /// Hidden from `SELECT *` (the row id of tables without a primary key).
    #[serde(default)]
    pub hidden: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowKeyPart {
    pub column: usize,
    pub desc: bool,
}

/// An index table: the base rows stored again under (index columns, base key), in a
/// keyspace of its own, written in the same commit as the base row. Rows with a NULL in an
/// index column have no entry (a sparse index, as DynamoDB's): a condition that uses the
/// index must exclude them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexDef {
    pub name: String,
    pub keyspace: KeyspaceId,
    pub unique: bool,
    /// The indexed columns (base column indexes) and their directions, in key order.
    pub columns: Vec<RowKeyPart>,
    /// INCLUDE columns, stored in the entry's value.
    #[serde(default)]
    pub include: Vec<usize>,
}

/// What makes a table a denormalized (materialized) view: the base rows it holds again,
/// projected and filtered, under its own key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewDef {
    pub base: String,
    /// The base column each view column holds, by view column.
    pub columns: Vec<usize>,
    /// The WHERE condition over base columns, as SQL text.
    pub predicate: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableDef {
    pub name: String,
    pub keyspace: KeyspaceId,
    pub columns: Vec<ColumnDef>,
    /// Column indexes of the partition key, in key order.
    pub partition_key: Vec<usize>,
    pub row_key: Vec<RowKeyPart>,
    /// 0 for an ordered partition key, else the number of hash buckets.
    pub hash_buckets: u16,
    /// Bumped by every change of the column list; stored rows carry the version they were
    /// written under.
    pub schema_version: u32,
    /// For columns added by ALTER TABLE: the value (SQL literal text) rows written before
    /// hold, by column index.
    #[serde(default)]
    pub missing_values: BTreeMap<usize, String>,
    /// Index tables maintained with this table's rows.
    #[serde(default)]
    pub indexes: Vec<IndexDef>,
    /// Set when this table is a materialized view of another.
    #[serde(default)]
    pub view: Option<ViewDef>,
    /// The materialized views of this table, maintained with its rows (copies of their
    /// definitions, which are also catalog entries of their own).
    #[serde(default)]
    pub views: Vec<TableDef>,
}

impl TableDef {
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    pub fn column(&self, name: &str) -> Result<(usize, &ColumnDef)> {
        self.columns
            .iter()
            .enumerate()
            .find(|(_, c)| c.name == name)
            .ok_or_else(|| Error::UnknownColumn {
                table: self.name.clone(),
                column: name.to_string(),
            })
    }

    /// Whether the table has the hidden row id as its key.
    pub fn has_row_id(&self) -> bool {
        self.partition_key.len() == 1 && self.columns[self.partition_key[0]].hidden
    }

    pub fn is_key_column(&self, index: usize) -> bool {
        self.partition_key.contains(&index) || self.row_key.iter().any(|p| p.column == index)
    }

    pub fn layout(&self) -> Result<KeyLayout> {
        let partition = self
            .partition_key
            .iter()
            .map(|&i| KeyColumn::asc(self.columns[i].ty.scalar()))
            .collect();
        let row = self
            .row_key
            .iter()
            .map(|p| KeyColumn {
                ty: self.columns[p.column].ty.scalar(),
                order: if p.desc {
                    SortOrder::Desc
                } else {
                    SortOrder::Asc
                },
            })
            .collect();
        Ok(KeyLayout::new(partition, row, self.hash_buckets)?)
    }

    /// Key description for catalogs and EXPLAIN: `((a, b), c DESC)` or `((a) HASH, b)`.
    pub fn key_description(&self) -> String {
        let pk: Vec<_> = self
            .partition_key
            .iter()
            .map(|&i| self.columns[i].name.clone())
            .collect();
        let mut out = format!("(({})", pk.join(", "));
        if self.hash_buckets > 0 {
            out.push_str(" HASH");
        }
        for part in &self.row_key {
            out.push_str(", ");
            out.push_str(&self.columns[part.column].name);
            if part.desc {
                out.push_str(" DESC");
            }
        }
        out.push(')');
        out
    }
}

fn record_key(name: &str) -> Vec<u8> {
    let mut key = b"t/".to_vec();
    key.extend_from_slice(name.as_bytes());
    key
}

/// Changes a transaction made to the catalog, visible to it before commit.
#[derive(Debug, Default, Clone)]
pub struct CatalogChanges {
    /// Tables created or altered (the new definition) or dropped (`None`).
    pub tables: BTreeMap<String, Option<Arc<TableDef>>>,
}

impl CatalogChanges {
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }
}

/// The committed catalog, shared by all sessions.
#[derive(Clone)]
pub struct Catalog {
    tables: Arc<RwLock<BTreeMap<String, Arc<TableDef>>>>,
    /// Bumped by every applied change: plans kept across statements check it.
    generation: Arc<std::sync::atomic::AtomicU64>,
    /// The values each sequence (by its catalog key) has reserved in the store and not yet
    /// handed out.
    sequences: Arc<std::sync::Mutex<BTreeMap<Vec<u8>, SequenceBlock>>>,
}

/// Values a sequence may hand out without writing: `next` up to (not including) `limit`.
#[derive(Debug, Clone, Copy)]
struct SequenceBlock {
    next: i64,
    limit: i64,
}

/// Values a sequence reserves with one durable write. A restart skips what was reserved
/// and not used, leaving a gap, as PostgreSQL's sequences do after a crash.
const SEQUENCE_BLOCK: i64 = 32;

/// The name PostgreSQL gives the sequence of a serial or identity column.
pub fn serial_sequence_name(table: &str, column: &str) -> String {
    format!("{table}_{column}_seq")
}

/// The DEFAULT of a serial or identity column: the next value of its sequence.
pub fn serial_default(table: &str, column: &str) -> String {
    format!("nextval('{}')", serial_sequence_name(table, column))
}

/// The catalog key of the sequence of `table`'s column `column`.
fn column_sequence_key(table: &TableDef, column: &str) -> Vec<u8> {
    format!("s/{}/{column}", table.keyspace).into_bytes()
}

/// Reserves `count` values of the sequence kept at `key` from at least `from` in the store;
/// returns the first.
fn reserve(store: &Store, key: &[u8], name: &str, from: i64, count: i64) -> Result<i64> {
    let mut txn = store.begin();
    let stored = match txn.get(CATALOG_KEYSPACE, key)? {
        Some(row) => {
            let bytes: [u8; 8] = row
                .value
                .as_ref()
                .try_into()
                .map_err(|_| Error::CorruptCatalog(format!("sequence \"{name}\" record")))?;
            i64::from_be_bytes(bytes)
        }
        None => 1,
    };
    let first = stored.max(from);
    let limit = first.checked_add(count).ok_or_else(|| {
        Error::SequenceLimit(format!(
            "nextval: reached maximum value of sequence \"{name}\" ({})",
            i64::MAX
        ))
    })?;
    txn.put(CATALOG_KEYSPACE, key, limit.to_be_bytes().to_vec())?;
    txn.commit()?;
    Ok(first)
}

impl Catalog {
    /// Loads every table definition from the store.
    pub fn load(store: &Store) -> Result<Catalog> {
        let mut tables = BTreeMap::new();
        let view = store.snapshot();
        for row in view.scan(
            CATALOG_KEYSPACE,
            &KeyRange::prefix(b"t/"),
            Direction::Forward,
        )? {
            let row = row?;
            let def: TableDef = serde_json::from_slice(&row.value)
                .map_err(|e| Error::CorruptCatalog(e.to_string()))?;
            tables.insert(def.name.clone(), Arc::new(def));
        }
        Ok(Catalog {
            tables: Arc::new(RwLock::new(tables)),
            generation: Default::default(),
            sequences: Default::default(),
        })
    }

    /// Where sequence `name`'s state is kept, as `changes` sees the tables: the key of the
    /// column that owns it (`<table>_<column>_seq` names its owner; another column whose
    /// default names the sequence shares it). Keyed by the table's keyspace, a table made
    /// again under the same name has a sequence of its own.
    fn sequence_key(&self, name: &str, changes: &CatalogChanges) -> Result<Vec<u8>> {
        let default = format!("nextval('{name}')");
        let mut owners: Vec<(bool, Vec<u8>)> = Vec::new();
        for table in self.tables(changes) {
            for column in &table.columns {
                if column.default.as_deref() == Some(default.as_str()) {
                    let named = serial_sequence_name(&table.name, &column.name) == name;
                    owners.push((named, column_sequence_key(&table, &column.name)));
                }
            }
        }
        owners.sort_by_key(|(named, _)| !named);
        owners
            .into_iter()
            .next()
            .map(|(_, key)| key)
            .ok_or_else(|| Error::UnknownTable(name.to_string()))
    }

    /// Whether sequence `name` exists, as `changes` sees the tables.
    pub fn sequence_exists(&self, name: &str, changes: &CatalogChanges) -> bool {
        self.sequence_key(name, changes).is_ok()
    }

    /// `nextval(name)`: the sequence's next value. Values are reserved in blocks, each with
    /// a commit of its own that no transaction rolls back, so a value handed out is not
    /// handed out again by that sequence, as in PostgreSQL.
    pub fn next_value(&self, store: &Store, name: &str, changes: &CatalogChanges) -> Result<i64> {
        let key = self.sequence_key(name, changes)?;
        let mut sequences = self.sequences.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(block) = sequences.get_mut(&key)
            && block.next < block.limit
        {
            block.next += 1;
            return Ok(block.next - 1);
        }
        let reserved = sequences.get(&key).map_or(1, |b| b.next);
        let next = reserve(store, &key, name, reserved, SEQUENCE_BLOCK)?;
        sequences.insert(
            key,
            SequenceBlock {
                next: next + 1,
                limit: next + SEQUENCE_BLOCK,
            },
        );
        Ok(next)
    }

    /// `setval(name, value)`: the next `nextval` gives `value + 1`.
    pub fn set_value(
        &self,
        store: &Store,
        name: &str,
        value: i64,
        changes: &CatalogChanges,
    ) -> Result<i64> {
        let key = self.sequence_key(name, changes)?;
        if value < 1 || value == i64::MAX {
            return Err(Error::OutOfRange(format!(
                "setval: value {value} is out of bounds for sequence \"{name}\" (1..{})",
                i64::MAX - 1
            )));
        }
        let mut sequences = self.sequences.lock().unwrap_or_else(|e| e.into_inner());
        let mut txn = store.begin();
        txn.put(CATALOG_KEYSPACE, &key, (value + 1).to_be_bytes().to_vec())?;
        txn.commit()?;
        sequences.insert(
            key,
            SequenceBlock {
                next: value + 1,
                limit: value + 1,
            },
        );
        Ok(value)
    }

    /// The table `name` as `changes` (the caller's transaction) sees it.
    pub fn table(&self, name: &str, changes: &CatalogChanges) -> Option<Arc<TableDef>> {
        if let Some(change) = changes.tables.get(name) {
            return change.clone();
        }
        self.tables.read().ok()?.get(name).cloned()
    }

    /// Every table `changes` sees, by name.
    pub fn tables(&self, changes: &CatalogChanges) -> Vec<Arc<TableDef>> {
        let mut all: BTreeMap<String, Arc<TableDef>> =
            self.tables.read().map(|t| t.clone()).unwrap_or_default();
        for (name, change) in &changes.tables {
            match change {
                Some(def) => all.insert(name.clone(), Arc::clone(def)),
                None => all.remove(name),
            };
        }
        all.into_values().collect()
    }

    /// Creates the table's keyspace and catalog record in `txn`.
    pub fn create_table(
        &self,
        txn: &mut Transaction,
        changes: &mut CatalogChanges,
        mut def: TableDef,
    ) -> Result<Arc<TableDef>> {
        // The store's record too, read in `txn`: a table another session committed just
        // before this transaction began may not be in the shared map yet, and one it
        // commits later makes this read conflict (40001, retried, then 42P07).
        if self.relation_exists(&def.name, changes)
            || txn.get(CATALOG_KEYSPACE, &record_key(&def.name))?.is_some()
        {
            return Err(Error::DuplicateTable(def.name));
        }
        let layout = def.layout()?;
        def.keyspace = txn.create_keyspace(KeyspaceKind::Table, &def.name, layout)?;
        self.write(txn, changes, def)
    }

    /// Writes a changed definition (ALTER TABLE) in `txn`.
    pub fn write(
        &self,
        txn: &mut Transaction,
        changes: &mut CatalogChanges,
        def: TableDef,
    ) -> Result<Arc<TableDef>> {
        let json = serde_json::to_vec(&def).map_err(|e| Error::CorruptCatalog(e.to_string()))?;
        txn.put(CATALOG_KEYSPACE, &record_key(&def.name), json)?;
        let def = Arc::new(def);
        changes
            .tables
            .insert(def.name.clone(), Some(Arc::clone(&def)));
        Ok(def)
    }

    /// Drops the table's keyspace and catalog record in `txn`.
    pub fn drop_table(
        &self,
        txn: &mut Transaction,
        changes: &mut CatalogChanges,
        name: &str,
    ) -> Result<()> {
        let def = self
            .table(name, changes)
            .ok_or_else(|| Error::UnknownTable(name.to_string()))?;
        txn.drop_keyspace(def.keyspace)?;
        for index in &def.indexes {
            txn.drop_keyspace(index.keyspace)?;
        }
        for view in &def.views {
            txn.drop_keyspace(view.keyspace)?;
            txn.delete(CATALOG_KEYSPACE, &record_key(&view.name))?;
            changes.tables.insert(view.name.clone(), None);
        }
        txn.delete(CATALOG_KEYSPACE, &record_key(name))?;
        // Its sequences' records stay: deleting them here would conflict with the commit
        // that reserved their last block (40001 for DROP after an INSERT in one
        // transaction). They are kept by keyspace, so a table made again under this name has
        // sequences of its own and starts at 1 — unless, after a restart, it is given the
        // dropped table's keyspace number; it then goes on from the old values (a gap, never
        // a value twice).
        changes.tables.insert(name.to_string(), None);
        Ok(())
    }

    /// The table holding index `name`, and the index's position in it.
    pub fn find_index(
        &self,
        name: &str,
        changes: &CatalogChanges,
    ) -> Option<(Arc<TableDef>, usize)> {
        self.tables(changes).into_iter().find_map(|t| {
            let i = t.indexes.iter().position(|x| x.name == name)?;
            Some((t, i))
        })
    }

    /// Whether `name` is taken by a table or an index (they share one namespace, as
    /// relations do in PostgreSQL).
    pub fn relation_exists(&self, name: &str, changes: &CatalogChanges) -> bool {
        self.table(name, changes).is_some() || self.find_index(name, changes).is_some()
    }

    /// Runs `commit` for a transaction that changed the catalog and applies the changes
    /// before anyone reads the catalog again: a statement whose snapshot includes the
    /// commit then also sees the new definitions (an index it must maintain, say).
    pub fn commit_with<T, E>(
        &self,
        changes: CatalogChanges,
        commit: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        if changes.is_empty() {
            return commit();
        }
        let mut tables = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let out = commit()?;
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        for (name, change) in changes.tables {
            match change {
                Some(def) => tables.insert(name, def),
                None => tables.remove(&name),
            };
        }
        Ok(out)
    }

    /// The number of changes applied so far.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Reads the table's catalog record in `txn`, so a concurrent DROP or ALTER of it makes
    /// this transaction conflict instead of writing into a dropped keyspace.
    pub fn track_read(&self, txn: &mut Transaction, name: &str) -> Result<()> {
        txn.get(CATALOG_KEYSPACE, &record_key(name))?;
        Ok(())
    }
}
