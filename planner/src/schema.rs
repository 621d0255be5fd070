//! The DataFusion schema provider over Partita's catalog: resolves table names for the
//! statement being planned, as that statement's transaction sees the catalog.

use crate::classify::ScanClass;
use crate::interrupt::Interrupt;
use crate::provider::{PartitaTable, Reader, ReaderSource, TableAccess};
use datafusion::catalog::SchemaProvider;
use datafusion::datasource::TableProvider;
use datafusion::error::{DataFusionError, Result as DfResult};
use sql::{Catalog, CatalogChanges};
use std::sync::{Arc, Mutex};
use storage::Store;

/// What the statement being planned reads and sees: shared between a session and its schema
/// provider, set before each statement is planned.
pub struct StatementScope {
    pub reader: Option<Reader>,
    pub changes: CatalogChanges,
    /// Expose the hidden row id, `_timestamp` and `_etag` (the statement names one of them).
    pub system_columns: bool,
    /// `partita.max_scan_class` for this statement.
    pub max_class: ScanClass,
    /// `partita.parallel_scan_min_bytes` for this statement.
    pub stream_bytes_min: u64,
    /// The session's time zone, in Arrow's spelling (timestamptz columns carry it).
    pub zone: Arc<str>,
    /// Tables of the running statement by name, found before the catalog's: the rows of
    /// its WITH queries when it holds writes (`with_writes`).
    pub local_tables: std::collections::HashMap<String, Arc<dyn TableProvider>>,
    /// Who the session is: the user and database names its startup packet gave. Until
    /// authentication lands every user is the one superuser role and every database name
    /// the one database, so the catalog shows them under these names.
    pub identity: Identity,
}

/// The session's user and database names (`current_user`, `current_database()`).
#[derive(Clone, Debug)]
pub struct Identity {
    pub user: Arc<str>,
    pub database: Arc<str>,
}

impl Default for Identity {
    fn default() -> Identity {
        Identity {
            user: Arc::from("partita"),
            database: Arc::from("partita"),
        }
    }
}

#[derive(Clone)]
pub struct PartitaSchema {
    pub catalog: Catalog,
    pub store: Store,
    /// The session's cancel flag, checked by scans.
    pub interrupt: Interrupt,
    pub scope: Arc<Mutex<StatementScope>>,
}

impl std::fmt::Debug for PartitaSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PartitaSchema")
    }
}

#[async_trait::async_trait]
impl SchemaProvider for PartitaSchema {
    fn table_names(&self) -> Vec<String> {
        let scope = self.scope.lock().unwrap_or_else(|e| e.into_inner());
        self.catalog
            .tables(&scope.changes)
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let scope = self.scope.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(table) = scope.local_tables.get(name) {
            return Ok(Some(Arc::clone(table)));
        }
        let Some(def) = self.catalog.table(name, &scope.changes) else {
            return match self.catalog.sequence(name, &scope.changes) {
                Some(sequence) => Ok(Some(sequence_table(&self.catalog, &self.store, &sequence)?)),
                None => Ok(None),
            };
        };
        if scope.reader.is_none() {
            return Err(DataFusionError::Internal(
                "table resolved outside a statement".into(),
            ));
        }
        let reader = ReaderSource::Scope(Arc::clone(&self.scope));
        let access = TableAccess {
            system_columns: scope.system_columns,
            max_class: scope.max_class,
            store: self.store.clone(),
            interrupt: self.interrupt.clone(),
            zone: Arc::clone(&scope.zone),
        };
        Ok(Some(Arc::new(PartitaTable::new(def, reader, access))))
    }

    fn table_exist(&self, name: &str) -> bool {
        let scope = self.scope.lock().unwrap_or_else(|e| e.into_inner());
        scope.local_tables.contains_key(name)
            || self.catalog.table(name, &scope.changes).is_some()
            || self.catalog.sequence_exists(name, &scope.changes)
    }
}

/// A sequence read as a table, as in PostgreSQL: one row of `last_value`, `log_cnt` (the
/// values reserved ahead and not yet handed out; Partita reports 0) and `is_called`.
fn sequence_table(
    catalog: &sql::Catalog,
    store: &storage::Store,
    sequence: &sql::catalog::Sequence,
) -> DfResult<Arc<dyn TableProvider>> {
    use datafusion::arrow::array::{BooleanArray, Int64Array, RecordBatch};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    let state = catalog
        .sequence_state(store, sequence)
        .map_err(|e| DataFusionError::External(Box::new(crate::Error::Sql(e))))?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("last_value", DataType::Int64, false),
        Field::new("log_cnt", DataType::Int64, false),
        Field::new("is_called", DataType::Boolean, false),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(Int64Array::from(vec![state.last])),
            Arc::new(Int64Array::from(vec![0])),
            Arc::new(BooleanArray::from(vec![state.called])),
        ],
    )?;
    Ok(Arc::new(datafusion::datasource::MemTable::try_new(
        schema,
        vec![vec![batch]],
    )?))
}
