//! The DataFusion side of a Partita table: `PartitaTable` (a `TableProvider`) and
//! `KeyScanExec`, which streams a key range of the table's keyspace as Arrow batches.
//!
//! A scan reads through the statement's `Reader`: the snapshot of an autocommit statement or
//! the session's transaction (so it sees its own writes and its reads are tracked for conflict
//! detection). Rows are decoded straight into Arrow builders, only for projected columns.

use crate::convert::ColumnBuilder;
use datafusion::arrow::array::{
    RecordBatch, RecordBatchOptions, StringBuilder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::Session as DfSession;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use sql::catalog::{ETAG_COLUMN, TIMESTAMP_COLUMN, TableDef};
use sql::types::SqlType;
use std::fmt;
use std::sync::{Arc, Mutex};
use storage::rowcodec::RowReader;
use storage::{Direction, KeyRange, ReadView, Row, RowIter, Transaction, Value};

/// How one statement reads the store.
#[derive(Clone)]
pub enum Reader {
    /// An autocommit statement: one snapshot, no conflict tracking.
    Snapshot(ReadView),
    /// Inside a transaction: its snapshot plus its own writes, tracked.
    Txn(SharedTxn),
}

/// The session's open transaction; `None` once it has committed or rolled back.
pub type SharedTxn = Arc<Mutex<Option<Transaction>>>;

/// Runs `f` on the open transaction of `txn`.
pub fn with_txn<T>(
    txn: &SharedTxn,
    f: impl FnOnce(&mut Transaction) -> storage::Result<T>,
) -> storage::Result<T> {
    let mut guard = txn.lock().unwrap_or_else(|e| e.into_inner());
    match guard.as_mut() {
        Some(t) => f(t),
        None => Err(storage::Error::TransactionClosed),
    }
}

impl Reader {
    pub fn scan(
        &self,
        keyspace: storage::KeyspaceId,
        range: &KeyRange,
        direction: Direction,
    ) -> storage::Result<RowIter> {
        match self {
            Reader::Snapshot(view) => view.scan(keyspace, range, direction),
            Reader::Txn(txn) => with_txn(txn, |t| t.scan(keyspace, range, direction)),
        }
    }

    pub fn get(&self, keyspace: storage::KeyspaceId, key: &[u8]) -> storage::Result<Option<Row>> {
        match self {
            Reader::Snapshot(view) => view.get(keyspace, key),
            Reader::Txn(txn) => with_txn(txn, |t| t.get(keyspace, key)),
        }
    }
}

/// Where an output column of a scan comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnSource {
    /// A stored column, by index in the table definition.
    Stored(usize),
    /// `_timestamp`: the commit time of the row's last change.
    Timestamp,
    /// `_etag`: the row's version, as text.
    Etag,
}

/// The `_etag` text of a row version.
pub fn etag_text(version: u64) -> String {
    format!("{version:016x}")
}

pub struct PartitaTable {
    pub def: Arc<TableDef>,
    schema: SchemaRef,
    sources: Vec<ColumnSource>,
    reader: Reader,
    /// Value of each column for rows written before the column was added.
    missing: Arc<Vec<Value>>,
}

impl fmt::Debug for PartitaTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PartitaTable({})", self.def.name)
    }
}

/// Values stored rows lack, for columns added after they were written.
pub fn missing_values(def: &TableDef) -> Vec<Value> {
    (0..def.columns.len())
        .map(|i| {
            def.missing_values
                .get(&i)
                .and_then(|hex| decode_hex(hex))
                .and_then(|bytes| storage::rowcodec::decode_row(&bytes).ok())
                .and_then(|(_, mut values)| values.pop())
                .unwrap_or(Value::Null)
        })
        .collect()
}

pub fn encode_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect()
}

impl PartitaTable {
    /// A table as one statement sees it. `system_columns` adds the hidden row id (if any),
    /// `_timestamp` and `_etag` to the schema; they are left out otherwise so `SELECT *`
    /// shows only user columns.
    pub fn new(def: Arc<TableDef>, reader: Reader, system_columns: bool) -> PartitaTable {
        let mut fields = Vec::new();
        let mut sources = Vec::new();
        for (i, col) in def.columns.iter().enumerate() {
            if col.hidden && !system_columns {
                continue;
            }
            fields.push(col.ty.field(&col.name, col.nullable));
            sources.push(ColumnSource::Stored(i));
        }
        if system_columns {
            // NULL for rows the reading transaction itself wrote and has not committed yet.
            fields.push(SqlType::TimestampTz.field(TIMESTAMP_COLUMN, true));
            sources.push(ColumnSource::Timestamp);
            fields.push(Field::new(ETAG_COLUMN, DataType::Utf8, true));
            sources.push(ColumnSource::Etag);
        }
        let missing = Arc::new(missing_values(&def));
        PartitaTable {
            def,
            schema: Arc::new(Schema::new(fields)),
            sources,
            reader,
            missing,
        }
    }
}

#[async_trait::async_trait]
impl TableProvider for PartitaTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        _state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let indices: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.sources.len()).collect(),
        };
        let schema = Arc::new(self.schema.project(&indices)?);
        let sources = indices.iter().map(|&i| self.sources[i]).collect();
        Ok(Arc::new(KeyScanExec::new(
            Arc::clone(&self.def),
            self.reader.clone(),
            schema,
            sources,
            Arc::clone(&self.missing),
            KeyRange::all(),
            limit,
        )))
    }
}

/// Streams one key range of a table.
pub struct KeyScanExec {
    def: Arc<TableDef>,
    reader: Reader,
    schema: SchemaRef,
    sources: Vec<ColumnSource>,
    missing: Arc<Vec<Value>>,
    range: KeyRange,
    limit: Option<usize>,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for KeyScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyScanExec({})", self.def.name)
    }
}

impl KeyScanExec {
    pub fn new(
        def: Arc<TableDef>,
        reader: Reader,
        schema: SchemaRef,
        sources: Vec<ColumnSource>,
        missing: Arc<Vec<Value>>,
        range: KeyRange,
        limit: Option<usize>,
    ) -> KeyScanExec {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        KeyScanExec {
            def,
            reader,
            schema,
            sources,
            missing,
            range,
            limit,
            properties,
        }
    }
}

impl DisplayAs for KeyScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyScanExec: table={}", self.def.name)?;
        if let Some(limit) = self.limit {
            write!(f, ", limit={limit}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for KeyScanExec {
    fn name(&self) -> &str {
        "KeyScanExec"
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(
            &Arc<dyn datafusion::physical_expr::PhysicalExpr>,
        ) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        _partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let batch_size = context.session_config().batch_size();
        let mut builder = RecordBatchReceiverStreamBuilder::new(Arc::clone(&self.schema), 2);
        let tx = builder.tx();
        let def = Arc::clone(&self.def);
        let reader = self.reader.clone();
        let schema = Arc::clone(&self.schema);
        let sources = self.sources.clone();
        let missing = Arc::clone(&self.missing);
        let range = self.range.clone();
        let limit = self.limit;
        builder.spawn_blocking(move || {
            let rows = reader
                .scan(def.keyspace, &range, Direction::Forward)
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            let mut batcher = Batcher::new(&def, schema, sources, missing);
            // Small first batch so the first rows reach the client quickly.
            let mut target = batch_size.min(256);
            let rows = rows.take(limit.unwrap_or(usize::MAX));
            for row in rows {
                let row = row.map_err(|e| DataFusionError::External(Box::new(e)))?;
                batcher.push(&row)?;
                if batcher.len() >= target {
                    if tx.blocking_send(batcher.finish()).is_err() {
                        return Ok(()); // the consumer is gone (LIMIT satisfied or canceled)
                    }
                    target = batch_size;
                }
            }
            if !batcher.is_empty() {
                let _ = tx.blocking_send(batcher.finish());
            }
            Ok(())
        });
        Ok(builder.build())
    }
}

/// Accumulates decoded rows into one record batch.
pub struct Batcher {
    schema: SchemaRef,
    sources: Vec<ColumnSource>,
    types: Vec<SqlType>,
    missing: Arc<Vec<Value>>,
    stored: Vec<Option<ColumnBuilder>>,
    timestamps: Option<TimestampMicrosecondBuilder>,
    etags: Option<StringBuilder>,
    /// For each stored column index, its position among the outputs.
    stored_slot: Vec<Option<usize>>,
    max_stored: usize,
    rows: usize,
}

impl Batcher {
    pub fn new(
        def: &TableDef,
        schema: SchemaRef,
        sources: Vec<ColumnSource>,
        missing: Arc<Vec<Value>>,
    ) -> Batcher {
        let types: Vec<SqlType> = def.columns.iter().map(|c| c.ty).collect();
        let mut stored_slot = vec![None; def.columns.len()];
        for (slot, source) in sources.iter().enumerate() {
            if let ColumnSource::Stored(i) = source {
                stored_slot[*i] = Some(slot);
            }
        }
        let max_stored = stored_slot
            .iter()
            .rposition(Option::is_some)
            .map_or(0, |p| p + 1);
        let mut batcher = Batcher {
            schema,
            sources,
            types,
            missing,
            stored: Vec::new(),
            timestamps: None,
            etags: None,
            stored_slot,
            max_stored,
            rows: 0,
        };
        batcher.reset();
        batcher
    }

    fn reset(&mut self) {
        self.stored = self
            .sources
            .iter()
            .map(|s| match s {
                ColumnSource::Stored(i) => Some(ColumnBuilder::new(self.types[*i], 256)),
                _ => None,
            })
            .collect();
        if self.sources.contains(&ColumnSource::Timestamp) {
            self.timestamps = Some(TimestampMicrosecondBuilder::new().with_timezone("+00:00"));
        }
        if self.sources.contains(&ColumnSource::Etag) {
            self.etags = Some(StringBuilder::new());
        }
        self.rows = 0;
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    pub fn push(&mut self, row: &Row) -> DfResult<()> {
        let ext = |e: storage::Error| DataFusionError::External(Box::new(e));
        let mut reader = RowReader::new(&row.value).map_err(ext)?;
        let mut index = 0;
        while index < self.max_stored {
            let Some(value) = reader.next_value().map_err(ext)? else {
                break;
            };
            if let Some(slot) = self.stored_slot[index]
                && let Some(builder) = self.stored[slot].as_mut()
            {
                builder
                    .append(value)
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
            }
            index += 1;
        }
        // Columns added after this row was written.
        while index < self.max_stored {
            if let Some(slot) = self.stored_slot[index]
                && let Some(builder) = self.stored[slot].as_mut()
            {
                builder
                    .append(self.missing[index].as_ref())
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
            }
            index += 1;
        }
        let committed = row.version != 0;
        if let Some(ts) = self.timestamps.as_mut() {
            ts.append_option(committed.then_some(row.commit_ts as i64));
        }
        if let Some(etags) = self.etags.as_mut() {
            etags.append_option(committed.then(|| etag_text(row.version)));
        }
        self.rows += 1;
        Ok(())
    }

    pub fn finish(&mut self) -> DfResult<RecordBatch> {
        let mut columns = Vec::with_capacity(self.sources.len());
        let stored = std::mem::take(&mut self.stored);
        let mut timestamps = self.timestamps.take();
        let mut etags = self.etags.take();
        for (source, builder) in self.sources.iter().zip(stored) {
            columns.push(match source {
                ColumnSource::Stored(_) => builder.expect("a builder per stored column").finish(),
                ColumnSource::Timestamp => {
                    Arc::new(timestamps.as_mut().expect("timestamp builder").finish())
                }
                ColumnSource::Etag => Arc::new(etags.as_mut().expect("etag builder").finish()),
            });
        }
        let rows = self.rows;
        self.reset();
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            columns,
            &options,
        )?)
    }
}

/// The Arrow type of `_timestamp`.
pub fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()))
}
