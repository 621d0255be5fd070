//! The DataFusion side of a Partita table: `PartitaTable` (a `TableProvider`) and
//! `KeyScanExec`, which streams a key range of the table's keyspace as Arrow batches.
//!
//! A scan reads through the statement's `Reader`: the snapshot of an autocommit statement or
//! the session's transaction (so it sees its own writes and its reads are tracked for conflict
//! detection). Rows are decoded straight into Arrow builders, only for projected columns.

use crate::classify::{ScanClass, ScanSpec, classify};
use crate::convert::ColumnBuilder;
use crate::error::Error;
use crate::interrupt::Interrupt;
use datafusion::arrow::array::{
    RecordBatch, RecordBatchOptions, StringBuilder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::Session as DfSession;
use datafusion::common::Constraints;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_expr::expressions::Column as PhysicalColumn;
use datafusion::physical_expr::{PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::sort_pushdown::SortOrderPushdownResult;
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use sql::catalog::{ETAG_COLUMN, TIMESTAMP_COLUMN, TableDef};
use sql::types::SqlType;
use std::fmt;
use std::ops::Bound;
use std::sync::{Arc, Mutex};
use storage::rowcodec::RowReader;
use storage::{Direction, KeyRange, ReadView, Row, RowIter, RowRef, Transaction, Value};
use storage::{RangePartition, Store};

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

/// Runs `f` on the open transaction of `txn`, for work that raises planner errors.
pub fn in_txn<T>(
    txn: &SharedTxn,
    f: impl FnOnce(&mut Transaction) -> crate::Result<T>,
) -> crate::Result<T> {
    let mut guard = txn.lock().unwrap_or_else(|e| e.into_inner());
    match guard.as_mut() {
        Some(t) => f(t),
        None => Err(crate::Error::from_storage(
            storage::Error::TransactionClosed,
        )),
    }
}

/// The rows of a reader's scan: a snapshot's as the store reads them (no dynamic call per
/// row on the scan path), a transaction's merged with its own writes.
pub enum ReaderRows {
    Snapshot(storage::Rows),
    /// The transaction's rows, and the last one lent by [`ReaderRows::next_ref`].
    Txn(RowIter, Option<Row>),
}

impl ReaderRows {
    /// The next row, borrowed: a snapshot's straight from the batch the store read it in.
    #[inline]
    pub fn next_ref(&mut self) -> Option<storage::Result<RowRef<'_>>> {
        match self {
            ReaderRows::Snapshot(rows) => rows.next_ref(),
            ReaderRows::Txn(rows, lent) => Some(rows.next()?.map(|row| lent.insert(row).as_ref())),
        }
    }
}

impl Iterator for ReaderRows {
    type Item = storage::Result<Row>;

    #[inline]
    fn next(&mut self) -> Option<storage::Result<Row>> {
        match self {
            ReaderRows::Snapshot(rows) => rows.next(),
            ReaderRows::Txn(rows, _) => rows.next(),
        }
    }
}

impl Reader {
    pub fn scan(
        &self,
        keyspace: storage::KeyspaceId,
        range: &KeyRange,
        direction: Direction,
    ) -> storage::Result<ReaderRows> {
        Ok(match self {
            Reader::Snapshot(view) => ReaderRows::Snapshot(view.scan(keyspace, range, direction)?),
            Reader::Txn(txn) => {
                ReaderRows::Txn(with_txn(txn, |t| t.scan(keyspace, range, direction))?, None)
            }
        })
    }

    pub fn get_many(
        &self,
        keyspace: storage::KeyspaceId,
        keys: &[bytes::Bytes],
    ) -> storage::Result<Vec<Option<Row>>> {
        match self {
            Reader::Snapshot(view) => view.get_many(keyspace, keys),
            Reader::Txn(txn) => with_txn(txn, |t| t.get_many(keyspace, keys)),
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
    reader: ReaderSource,
    /// Value of each column for rows written before the column was added.
    missing: Arc<Vec<Value>>,
    access: TableAccess,
    /// The primary key, by place in `schema`: GROUP BY of it may select the table's other
    /// columns, as in PostgreSQL.
    constraints: Constraints,
}

/// Where a table access gets its reader.
#[derive(Clone)]
pub enum ReaderSource {
    /// This one (the fast path).
    Fixed(Reader),
    /// The statement being executed, when the scan is planned: a plan kept for a prepared
    /// statement reads with each execution's snapshot or transaction, under its settings.
    Scope(Arc<Mutex<crate::schema::StatementScope>>),
}

/// How a statement may access its tables.
#[derive(Clone)]
pub struct TableAccess {
    /// Expose the hidden row id, `_timestamp` and `_etag`.
    pub system_columns: bool,
    /// `partita.max_scan_class`: a worse access fails before it runs.
    pub max_class: ScanClass,
    /// The store, for the range partitions a scan touches.
    pub store: Store,
    /// The session's cancel flag.
    pub interrupt: Interrupt,
    /// The session's time zone, which timestamptz columns carry (see `SqlType::arrow_in`).
    pub zone: Arc<str>,
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

/// A stored row's values, one per column of `def` (columns added later get their values for
/// old rows).
pub fn stored_values(def: &TableDef, row: &[u8]) -> storage::Result<Vec<Value>> {
    let (_, mut values) = storage::rowcodec::decode_row(row)?;
    if values.len() < def.columns.len() {
        let missing = missing_values(def);
        values.extend(missing[values.len()..].iter().cloned());
    }
    Ok(values)
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
    pub fn new(def: Arc<TableDef>, reader: ReaderSource, access: TableAccess) -> PartitaTable {
        let system_columns = access.system_columns;
        let mut fields = Vec::new();
        let mut sources = Vec::new();
        for (i, col) in def.columns.iter().enumerate() {
            if col.hidden && !system_columns {
                continue;
            }
            fields.push(col.ty.field_in(&col.name, col.nullable, &access.zone));
            sources.push(ColumnSource::Stored(i));
        }
        if system_columns {
            // NULL for rows the reading transaction itself wrote and has not committed yet.
            fields.push(SqlType::TimestampTz { precision: None }.field_in(
                TIMESTAMP_COLUMN,
                true,
                &access.zone,
            ));
            sources.push(ColumnSource::Timestamp);
            fields.push(Field::new(ETAG_COLUMN, DataType::Utf8, true));
            sources.push(ColumnSource::Etag);
        }
        let missing = Arc::new(missing_values(&def));
        let key: Option<Vec<usize>> = def
            .key_columns()
            .iter()
            .map(|k| {
                sources
                    .iter()
                    .position(|s| matches!(s, ColumnSource::Stored(i) if i == k))
            })
            .collect();
        let constraints = match key {
            Some(key) if !key.is_empty() => {
                Constraints::new_unverified(vec![datafusion::common::Constraint::PrimaryKey(key)])
            }
            _ => Constraints::default(),
        };
        PartitaTable {
            def,
            schema: Arc::new(Schema::new(fields)),
            sources,
            reader,
            missing,
            access,
            constraints,
        }
    }
}

impl PartitaTable {
    /// Reads through an index when one gives a narrower access than the table's own key:
    /// the index alone when it holds every column the query needs (covering), else the
    /// index for the base keys, then batched point lookups of the base rows. An index
    /// whose nullable columns the conditions do not all constrain is skipped: rows with a
    /// NULL there have no entry; so is a partial index whose predicate the conditions do
    /// not imply.
    #[allow(clippy::too_many_arguments)]
    async fn index_access(
        &self,
        state: &dyn DfSession,
        wanted: &[usize],
        filters: &[Expr],
        limit: Option<usize>,
        spec: &ScanSpec,
        reader: &Reader,
        max_class: ScanClass,
    ) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
        if self.def.indexes.is_empty() || spec.class <= ScanClass::MultiPoint {
            return Ok(None);
        }
        // Narrower: a better class, or the same range class with more conditions in the key.
        let consumed = |s: &ScanSpec| s.consumed.iter().filter(|c| **c).count();
        let narrower = |a: &ScanSpec, b: &ScanSpec| {
            a.class < b.class || (a.class == b.class && consumed(a) > consumed(b))
        };
        let ext = |e: Error| DataFusionError::External(Box::new(e));
        // Each candidate index with the filters as they read it: an indexed expression in
        // them becomes the index's column for it.
        let mut best: Option<(TableDef, ScanSpec, Vec<Expr>)> = None;
        for index in &self.def.indexes {
            if !crate::index::predicate_implied(&self.def, index, filters) {
                continue;
            }
            let shape = crate::index::IndexShape::of(&self.def, index).map_err(ext)?;
            let table = shape.table(&self.def, index);
            let substituted = crate::expression_index::substitute(&self.def, index, filters);
            let ispec = classify(&table, &substituted);
            if !narrower(&ispec, spec)
                || best.as_ref().is_some_and(|(_, b, _)| !narrower(&ispec, b))
            {
                continue;
            }
            let constrained = |name: &str| {
                substituted
                    .iter()
                    .zip(&ispec.consumed)
                    .any(|(f, consumed)| {
                        *consumed && f.column_refs().iter().any(|c| c.name == name)
                    })
            };
            let sparse_safe = index.columns.iter().all(|p| {
                !crate::expression_index::nullable(&self.def, p.column)
                    || constrained(&crate::expression_index::index_column_name(
                        &self.def, p.column,
                    ))
            });
            if sparse_safe {
                best = Some((table, ispec, substituted));
            }
        }
        let Some((table, ispec, substituted)) = best else {
            return Ok(None);
        };
        if ispec.class > max_class {
            return Ok(None); // the table's own access reports the refusal
        }
        let in_index = |name: &str| table.columns.iter().any(|c| c.name == name);
        let wanted_names: Vec<String> = wanted
            .iter()
            .map(|&i| self.schema.field(i).name().clone())
            .collect();
        let filter_columns_in_index = |f: &Expr| f.column_refs().iter().all(|c| in_index(&c.name));
        let access = TableAccess {
            // A table without a primary key is keyed by its hidden row id, which the
            // index holds and the lookup of base rows needs.
            system_columns: self.def.columns.iter().any(|c| c.hidden),
            max_class,
            store: self.access.store.clone(),
            interrupt: self.access.interrupt.clone(),
            zone: Arc::clone(&self.access.zone),
        };
        let index_table = PartitaTable::new(
            Arc::new(table.clone()),
            ReaderSource::Fixed(reader.clone()),
            access,
        );
        let covering = wanted_names.iter().all(|n| in_index(n))
            && substituted.iter().all(filter_columns_in_index);
        if covering {
            let projection = wanted_names
                .iter()
                .map(|n| index_table.schema.index_of(n))
                .collect::<Result<Vec<_>, _>>()?;
            return index_table
                .scan(state, Some(&projection), &substituted, limit)
                .await
                .map(Some);
        }
        // The index yields base keys (and filters on what it holds); the base rows are
        // looked up and the remaining filters, as the query wrote them, applied to them.
        let mut index_filters = Vec::new();
        let mut base_filters = Vec::new();
        for (original, read) in filters.iter().zip(substituted) {
            match filter_columns_in_index(&read) {
                true => index_filters.push(read),
                false => base_filters.push(original.clone()),
            }
        }
        let key_columns: Vec<usize> = self
            .def
            .partition_key
            .iter()
            .copied()
            .chain(self.def.row_key.iter().map(|p| p.column))
            .collect();
        let key_projection = key_columns
            .iter()
            .map(|&c| index_table.schema.index_of(&self.def.columns[c].name))
            .collect::<Result<Vec<_>, _>>()?;
        let index_limit = if base_filters.is_empty() { limit } else { None };
        let child = index_table
            .scan(state, Some(&key_projection), &index_filters, index_limit)
            .await?;
        let residual = conjunction(base_filters.into_iter().map(unqualified));
        let (scan_schema, sources, residual, residual_text) =
            self.decode_plan(state, wanted, residual)?;
        let lookup = KeyScan {
            def: Arc::clone(&self.def),
            reader: reader.clone(),
            scan_schema,
            sources,
            output_columns: wanted.len(),
            missing: Arc::clone(&self.missing),
            spec: spec.clone(),
            residual,
            residual_text,
            limit,
            range_partitions: 0,
            groups: Vec::new(),
            split_by_key: false,
            reverse: false,
            interrupt: self.access.interrupt.clone(),
        };
        Ok(Some(Arc::new(IndexLookupExec::new(
            lookup,
            child,
            key_columns,
        ))))
    }

    /// The columns a scan decodes (the wanted ones, then any the residual needs) and the
    /// residual compiled against them.
    #[allow(clippy::type_complexity)]
    fn decode_plan(
        &self,
        state: &dyn DfSession,
        wanted: &[usize],
        residual: Option<Expr>,
    ) -> DfResult<(
        SchemaRef,
        Vec<ColumnSource>,
        Option<Arc<dyn PhysicalExpr>>,
        Option<String>,
    )> {
        let mut decoded = wanted.to_vec();
        if let Some(r) = &residual {
            for column in r.column_refs() {
                let i = self.schema.index_of(&column.name)?;
                if !decoded.contains(&i) {
                    decoded.push(i);
                }
            }
        }
        let scan_schema = Arc::new(self.schema.project(&decoded)?);
        let residual_text = residual.as_ref().map(expr_text);
        let residual = match residual {
            Some(r) => {
                let df_schema = DFSchema::try_from(Arc::clone(&scan_schema))?;
                Some(state.create_physical_expr(r, &df_schema)?)
            }
            None => None,
        };
        let sources = decoded.iter().map(|&i| self.sources[i]).collect();
        Ok((scan_schema, sources, residual, residual_text))
    }

    /// The schema and column sources of some of the table's columns, by index in its schema.
    pub fn projection(&self, indices: &[usize]) -> DfResult<(SchemaRef, Vec<ColumnSource>)> {
        let schema = Arc::new(self.schema.project(indices)?);
        Ok((schema, indices.iter().map(|&i| self.sources[i]).collect()))
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

    fn constraints(&self) -> Option<&Constraints> {
        Some(&self.constraints)
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        // Key conditions become key ranges and the rest is evaluated inside the scan.
        Ok(vec![TableProviderFilterPushDown::Exact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let spec = classify(&self.def, filters);
        let (reader, max_class, stream_bytes_min) = match &self.reader {
            ReaderSource::Fixed(r) => (r.clone(), self.access.max_class, STREAM_BYTES_MIN),
            ReaderSource::Scope(scope) => {
                let scope = scope.lock().unwrap_or_else(|e| e.into_inner());
                let reader = scope.reader.clone().ok_or_else(|| {
                    DataFusionError::Internal("table scanned outside a statement".into())
                })?;
                (reader, scope.max_class, scope.stream_bytes_min)
            }
        };
        let wanted: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.sources.len()).collect(),
        };
        if let Some(plan) = self
            .index_access(state, &wanted, filters, limit, &spec, &reader, max_class)
            .await?
        {
            return Ok(plan);
        }
        if spec.class > max_class {
            return Err(DataFusionError::External(Box::new(
                Error::ScanClassNotAllowed {
                    class: spec.class_text(),
                    table: self.def.name.clone(),
                    allowed: max_class.setting_name().into(),
                },
            )));
        }
        // The residual filter: every filter the key ranges do not enforce exactly.
        let residual = conjunction(
            filters
                .iter()
                .zip(&spec.consumed)
                .filter(|(_, consumed)| !**consumed)
                .map(|(f, _)| unqualified(f.clone())),
        );
        // Decode the projected columns, then any the residual filter needs besides.
        let (scan_schema, sources, residual, residual_text) =
            self.decode_plan(state, &wanted, residual)?;
        let touched: Vec<RangePartition> = self
            .access
            .store
            .range_partitions(self.def.keyspace)
            .into_iter()
            .filter(|p| spec.ranges.iter().any(|r| overlaps(r, &p.key_range())))
            .collect();
        // Wide scans are split at range partition boundaries and read in parallel.
        let wide = matches!(spec.class, ScanClass::Full | ScanClass::PartitionRange);
        let target = state.config_options().execution.target_partitions;
        let mut groups = if wide && touched.len() > 1 && target > 1 {
            split_at_partitions(&spec.ranges, &touched, target)
        } else {
            vec![spec.ranges.clone()]
        };
        // Fewer groups than threads (one big range partition, say): cut each group of one
        // key range by key.
        let bytes: i64 = touched.iter().map(|p| p.bytes).sum();
        let mut cut_by_key = false;
        if wide
            && groups.len() < target
            && bytes.max(0) as u64 >= stream_bytes_min.saturating_mul(target as u64)
        {
            let per_group = target / groups.len();
            let before = groups.len();
            let mut split = Vec::with_capacity(target);
            for group in groups {
                match group.as_slice() {
                    [range] => split.extend(
                        split_by_key(&reader, self.def.keyspace, range, per_group)
                            .map_err(|e| DataFusionError::External(Box::new(e)))?
                            .into_iter()
                            .map(|r| vec![r]),
                    ),
                    _ => split.push(group),
                }
            }
            cut_by_key = before < split.len();
            groups = split;
        }
        Ok(Arc::new(KeyScanExec::new(KeyScan {
            def: Arc::clone(&self.def),
            reader,
            scan_schema,
            sources,
            output_columns: wanted.len(),
            missing: Arc::clone(&self.missing),
            spec,
            residual,
            residual_text,
            limit,
            range_partitions: touched.len(),
            groups,
            split_by_key: cut_by_key,
            reverse: false,
            interrupt: self.access.interrupt.clone(),
        })))
    }
}

/// Column references without table qualifiers, to resolve against the scan's own schema.
fn unqualified(expr: Expr) -> Expr {
    expr.transform(|e| {
        Ok(match e {
            Expr::Column(c) => Transformed::yes(Expr::Column(Column::new_unqualified(c.name))),
            other => Transformed::no(other),
        })
    })
    .map(|t| t.data)
    .expect("renaming columns cannot fail")
}

/// Splits sorted key ranges at range partition boundaries into at most `target` groups of
/// consecutive pieces with about the same number of rows.
fn split_at_partitions(
    ranges: &[KeyRange],
    partitions: &[RangePartition],
    target: usize,
) -> Vec<Vec<KeyRange>> {
    let mut pieces: Vec<(KeyRange, i64)> = Vec::new();
    for range in ranges {
        for p in partitions {
            let part = p.key_range();
            if overlaps(range, &part) {
                pieces.push((intersect(range, &part), p.rows.max(1)));
            }
        }
    }
    let total: i64 = pieces.iter().map(|(_, w)| w).sum();
    let groups = target.min(pieces.len()).max(1);
    let per_group = (total as f64 / groups as f64).max(1.0);
    let mut out: Vec<Vec<KeyRange>> = vec![Vec::new()];
    let mut weight = 0i64;
    for (piece, w) in pieces {
        let full = weight as f64 >= per_group * out.len() as f64;
        if full && out.len() < groups && !out.last().is_some_and(Vec::is_empty) {
            out.push(Vec::new());
        }
        out.last_mut().expect("one group at least").push(piece);
        weight += w;
    }
    out
}

/// A wide scan is split inside a range partition only when each stream gets at least
/// this many bytes (`partita.parallel_scan_min_bytes`): below that, the threads cost more
/// than they save.
pub const STREAM_BYTES_MIN: u64 = 4 << 20;

/// Splits `range` into up to `n` consecutive ranges holding about equal shares of the key
/// space between its first and last keys (read from the store). Keys of the same shape
/// (the encoded columns of one key) are spread about evenly by that measure; if they are
/// not, the ranges are uneven but still cover `range` exactly.
fn split_by_key(
    reader: &Reader,
    keyspace: storage::KeyspaceId,
    range: &KeyRange,
    n: usize,
) -> storage::Result<Vec<KeyRange>> {
    let end_key = |direction| -> storage::Result<Option<bytes::Bytes>> {
        Ok(match reader.scan(keyspace, range, direction)?.next() {
            Some(row) => Some(row?.key),
            None => None,
        })
    };
    let (Some(first), Some(last)) = (end_key(Direction::Forward)?, end_key(Direction::Reverse)?)
    else {
        return Ok(vec![range.clone()]);
    };
    let boundaries = key_space_points(&first, &last, n);
    let mut out = Vec::with_capacity(boundaries.len() + 1);
    let mut lower = range.lower.clone();
    for b in boundaries {
        out.push(KeyRange {
            lower,
            upper: Bound::Excluded(b.clone()),
        });
        lower = Bound::Included(b);
    }
    out.push(KeyRange {
        lower,
        upper: range.upper.clone(),
    });
    Ok(out)
}

/// Up to `n - 1` increasing keys in `(first, last]` that cut the key space between them
/// into `n` equal parts, reading the 8 bytes after their common prefix as a number.
fn key_space_points(first: &[u8], last: &[u8], n: usize) -> Vec<bytes::Bytes> {
    let prefix = first.iter().zip(last).take_while(|(a, b)| a == b).count();
    let number = |key: &[u8]| {
        let mut word = [0u8; 8];
        for (w, b) in word.iter_mut().zip(key.iter().skip(prefix)) {
            *w = *b;
        }
        u64::from_be_bytes(word)
    };
    let (a, b) = (number(first), number(last));
    if b <= a || n < 2 {
        return Vec::new();
    }
    let mut points: Vec<bytes::Bytes> = Vec::with_capacity(n - 1);
    for i in 1..n as u128 {
        let point = a as u128 + (b - a) as u128 * i / n as u128;
        let mut key = first[..prefix].to_vec();
        key.extend_from_slice(&(point as u64).to_be_bytes());
        if key.as_slice() > first
            && key.as_slice() <= last
            && points.last().is_none_or(|p| p.as_ref() < key.as_slice())
        {
            points.push(key.into());
        }
    }
    points
}

/// The keys two overlapping ranges share.
fn intersect(a: &KeyRange, b: &KeyRange) -> KeyRange {
    use std::cmp::Ordering;
    let lower = match (&a.lower, &b.lower) {
        (Bound::Unbounded, x) | (x, Bound::Unbounded) => x.clone(),
        (x, y) => {
            let (kx, ky) = (bound_key(x), bound_key(y));
            match kx.cmp(ky) {
                Ordering::Greater => x.clone(),
                Ordering::Less => y.clone(),
                Ordering::Equal if matches!(x, Bound::Excluded(_)) => x.clone(),
                Ordering::Equal => y.clone(),
            }
        }
    };
    let upper = match (&a.upper, &b.upper) {
        (Bound::Unbounded, x) | (x, Bound::Unbounded) => x.clone(),
        (x, y) => {
            let (kx, ky) = (bound_key(x), bound_key(y));
            match kx.cmp(ky) {
                Ordering::Less => x.clone(),
                Ordering::Greater => y.clone(),
                Ordering::Equal if matches!(x, Bound::Excluded(_)) => x.clone(),
                Ordering::Equal => y.clone(),
            }
        }
    };
    KeyRange { lower, upper }
}

fn bound_key(b: &Bound<bytes::Bytes>) -> &[u8] {
    match b {
        Bound::Included(k) | Bound::Excluded(k) => k,
        Bound::Unbounded => &[],
    }
}

/// Whether two key ranges share a key.
fn overlaps(a: &KeyRange, b: &KeyRange) -> bool {
    fn below(upper: &Bound<bytes::Bytes>, lower: &Bound<bytes::Bytes>) -> bool {
        match (upper, lower) {
            (Bound::Unbounded, _) | (_, Bound::Unbounded) => false,
            (Bound::Included(u), Bound::Included(l)) => u < l,
            (Bound::Included(u) | Bound::Excluded(u), Bound::Included(l) | Bound::Excluded(l)) => {
                u <= l
            }
        }
    }
    !below(&a.upper, &b.lower) && !below(&b.upper, &a.lower)
}

/// Everything one table access needs to run.
#[derive(Clone)]
pub struct KeyScan {
    pub def: Arc<TableDef>,
    pub reader: Reader,
    /// The decoded columns: the output columns first, then those only the residual needs.
    pub scan_schema: SchemaRef,
    pub sources: Vec<ColumnSource>,
    pub output_columns: usize,
    pub missing: Arc<Vec<Value>>,
    pub spec: ScanSpec,
    pub residual: Option<Arc<dyn PhysicalExpr>>,
    /// The residual as SQL, for EXPLAIN.
    pub residual_text: Option<String>,
    pub limit: Option<usize>,
    /// Range partitions the key ranges overlap, when planned.
    pub range_partitions: usize,
    /// The ranges each output partition reads, in key order (one group unless the scan is
    /// split for parallel reading).
    pub groups: Vec<Vec<KeyRange>>,
    /// The groups cut one range partition by key (`split_by_key`) rather than at range
    /// partition boundaries.
    pub split_by_key: bool,
    /// Read the ranges backwards (ORDER BY the key reversed).
    pub reverse: bool,
    /// The session's cancel flag: a canceled scan stops between rows.
    pub interrupt: Interrupt,
}

/// Streams the key ranges of one table access, filtered by the residual.
pub struct KeyScanExec {
    scan: Arc<KeyScan>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl fmt::Debug for KeyScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyScanExec({})", self.scan.def.name)
    }
}

impl KeyScanExec {
    pub fn new(scan: KeyScan) -> KeyScanExec {
        let indices: Vec<usize> = (0..scan.output_columns).collect();
        let schema = Arc::new(
            scan.scan_schema
                .project(&indices)
                .expect("output columns come first"),
        );
        let mut equivalence = EquivalenceProperties::new(Arc::clone(&schema));
        let key = output_key_order(&scan, &schema);
        let full: Vec<PhysicalSortExpr> = key.iter().map(|k| k.sort_expr(&schema)).collect();
        let varying: Vec<PhysicalSortExpr> = key
            .iter()
            .filter(|k| !k.constant)
            .map(|k| k.sort_expr(&schema))
            .collect();
        equivalence.add_orderings([full, varying].into_iter().filter(|o| !o.is_empty()));
        let properties = Arc::new(PlanProperties::new(
            equivalence,
            Partitioning::UnknownPartitioning(scan.groups.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        KeyScanExec {
            scan: Arc::new(scan),
            schema,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    pub fn scan(&self) -> &KeyScan {
        &self.scan
    }

    fn with_scan(&self, change: impl FnOnce(&mut KeyScan)) -> Arc<dyn ExecutionPlan> {
        let mut scan = (*self.scan).clone();
        change(&mut scan);
        Arc::new(KeyScanExec::new(scan))
    }

    /// The lines EXPLAIN shows for this access: the class and table, then its details.
    pub fn explain_lines(&self, analyze: bool) -> Vec<String> {
        let scan = &self.scan;
        let mut lines = vec![format!("{} on {}", scan.spec.class_text(), scan.def.name)];
        if !scan.spec.key_text.is_empty() {
            lines.push(format!("Key: {}", scan.spec.key_text));
        }
        if let Some(r) = &scan.residual_text {
            lines.push(format!("Filter: {r}"));
        }
        if scan.groups.len() > 1 {
            lines.push(format!("Parallel: {} streams", scan.groups.len()));
        }
        if scan.reverse {
            lines.push("Direction: backward".into());
        }
        if let Some(limit) = scan.limit {
            lines.push(format!("Limit: {limit}"));
        }
        lines.push(format!(
            "Range partitions: {} (estimated)",
            scan.range_partitions
        ));
        if analyze && let Some(m) = self.metrics() {
            let count = |name: &str| m.sum_by_name(name).map_or(0, |v| v.as_usize());
            lines.push(format!(
                "Rows scanned: {}, rows returned: {}, range partitions visited: {}",
                count("rows_scanned"),
                m.output_rows().unwrap_or(0),
                count("partitions_visited"),
            ));
        }
        lines
    }
}

/// A filter as SQL text (`name <> 'x'`).
fn expr_text(expr: &Expr) -> String {
    match datafusion::sql::unparser::expr_to_sql(expr) {
        Ok(sql) => sql.to_string(),
        Err(_) => expr.to_string(),
    }
}

impl DisplayAs for KeyScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.explain_lines(false).join("; "))
    }
}

impl ExecutionPlan for KeyScanExec {
    fn name(&self) -> &str {
        "KeyScanExec"
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        match &self.scan.residual {
            Some(r) => f(r),
            None => Ok(TreeNodeRecursion::Continue),
        }
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

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn with_fetch(&self, limit: Option<usize>) -> Option<Arc<dyn ExecutionPlan>> {
        Some(self.with_scan(|s| {
            s.limit = match (s.limit, limit) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        }))
    }

    fn fetch(&self) -> Option<usize> {
        self.scan.limit
    }

    /// ORDER BY the key, or the key reversed (constant key columns anywhere), needs no sort:
    /// the ranges are read forwards or backwards.
    fn try_pushdown_sort(
        &self,
        order: &[PhysicalSortExpr],
    ) -> DfResult<SortOrderPushdownResult<Arc<dyn ExecutionPlan>>> {
        let key = output_key_order(&self.scan, &self.schema);
        let mut requested = Vec::new();
        for sort in order {
            let Some(column) = sort.expr.downcast_ref::<PhysicalColumn>() else {
                return Ok(SortOrderPushdownResult::Unsupported);
            };
            if key.iter().any(|k| k.output == column.index() && k.constant) {
                continue;
            }
            requested.push((column.index(), sort.options.descending));
        }
        let varying: Vec<&KeyOrder> = key.iter().filter(|k| !k.constant).collect();
        if requested.len() > varying.len() {
            return Ok(SortOrderPushdownResult::Unsupported);
        }
        for flip in [false, true] {
            let matches = requested
                .iter()
                .zip(&varying)
                .all(|(&(col, desc), k)| col == k.output && desc == (k.descending != flip));
            if matches {
                let inner = if flip {
                    self.with_scan(|s| s.reverse = !s.reverse)
                } else {
                    Arc::new(KeyScanExec::new((*self.scan).clone())) as Arc<dyn ExecutionPlan>
                };
                return Ok(SortOrderPushdownResult::Exact { inner });
            }
        }
        Ok(SortOrderPushdownResult::Unsupported)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let batch_size = context.session_config().batch_size();
        let mut builder = RecordBatchReceiverStreamBuilder::new(Arc::clone(&self.schema), 2);
        let tx = builder.tx();
        let scan = Arc::clone(&self.scan);
        let scanned = MetricBuilder::new(&self.metrics).counter("rows_scanned", partition);
        let visited = MetricBuilder::new(&self.metrics).counter("partitions_visited", partition);
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        builder.spawn_blocking(move || {
            let ext = |e: storage::Error| DataFusionError::External(Box::new(e));
            let _timer = baseline.elapsed_compute().timer();
            let group = scan.groups.get(partition).cloned().unwrap_or_default();
            visited.add(if scan.split_by_key {
                // Streams share range partitions: the first one counts them.
                if partition == 0 {
                    scan.range_partitions
                } else {
                    0
                }
            } else if scan.groups.len() > 1 {
                scan.range_partitions.min(group.len())
            } else {
                scan.range_partitions
            });
            let mut batcher = Batcher::new(
                &scan.def,
                Arc::clone(&scan.scan_schema),
                scan.sources.clone(),
                Arc::clone(&scan.missing),
            );
            let mut remaining = scan.limit.unwrap_or(usize::MAX);
            // Small first batch so the first rows reach the client quickly.
            let mut target = batch_size.min(256);
            let send = |batcher: &mut Batcher, remaining: &mut usize| -> DfResult<bool> {
                let batch = batcher.finish()?;
                let batch = filter_and_project(&scan, batch)?;
                let batch = if batch.num_rows() > *remaining {
                    batch.slice(0, *remaining)
                } else {
                    batch
                };
                *remaining -= batch.num_rows();
                baseline.record_output(batch.num_rows());
                if batch.num_rows() > 0 && tx.blocking_send(Ok(batch)).is_err() {
                    return Ok(false); // the consumer is gone (LIMIT satisfied or canceled)
                }
                Ok(*remaining > 0)
            };
            let (ranges, direction): (Vec<&KeyRange>, _) = if scan.reverse {
                (group.iter().rev().collect(), Direction::Reverse)
            } else {
                (group.iter().collect(), Direction::Forward)
            };
            let mut unreported = 0;
            'ranges: for range in ranges {
                let mut rows = scan
                    .reader
                    .scan(scan.def.keyspace, range, direction)
                    .map_err(ext)?;
                let mut n = 0u64;
                while let Some(row) = rows.next_ref() {
                    n += 1;
                    if n.is_multiple_of(1024) {
                        // A consumer that went away or a cancel ends the scan here, even
                        // when no batch has been sent for a while (a filter rejecting all).
                        if tx.is_closed() {
                            return Ok(());
                        }
                        scan.interrupt.check()?;
                    }
                    batcher.push(row.map_err(ext)?)?;
                    // Counted here, added to the shared (atomic) metric once per batch.
                    unreported += 1;
                    // Without a residual filter every row read is returned: stop at the limit.
                    let enough = if scan.residual.is_none() {
                        remaining
                    } else {
                        target
                    };
                    if batcher.len() >= target.min(enough) {
                        scanned.add(std::mem::take(&mut unreported));
                        if !send(&mut batcher, &mut remaining)? {
                            break 'ranges;
                        }
                        target = batch_size;
                    }
                }
            }
            scanned.add(unreported);
            if !batcher.is_empty() && remaining > 0 {
                send(&mut batcher, &mut remaining)?;
            }
            Ok(())
        });
        Ok(builder.build())
    }
}

/// The base rows for the keys an index scan yields: batched point lookups, then the
/// residual filters the index could not evaluate.
pub struct IndexLookupExec {
    lookup: Arc<KeyScan>,
    /// The index scan; its output columns are the base key columns, in key order.
    child: Arc<dyn ExecutionPlan>,
    /// The base key columns (table column indexes), as the child outputs them.
    key_columns: Vec<usize>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl fmt::Debug for IndexLookupExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IndexLookupExec({})", self.lookup.def.name)
    }
}

impl IndexLookupExec {
    pub fn new(
        lookup: KeyScan,
        child: Arc<dyn ExecutionPlan>,
        key_columns: Vec<usize>,
    ) -> IndexLookupExec {
        let indices: Vec<usize> = (0..lookup.output_columns).collect();
        let schema = Arc::new(
            lookup
                .scan_schema
                .project(&indices)
                .expect("output columns come first"),
        );
        let partitions = child.properties().output_partitioning().partition_count();
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        IndexLookupExec {
            lookup: Arc::new(lookup),
            child,
            key_columns,
            schema,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The lines EXPLAIN shows for the lookup step.
    pub fn explain_lines(&self, analyze: bool) -> Vec<String> {
        let mut lines = vec![format!("Point lookups on {}", self.lookup.def.name)];
        if let Some(r) = &self.lookup.residual_text {
            lines.push(format!("Filter: {r}"));
        }
        if analyze && let Some(m) = self.metrics() {
            let looked_up = m.sum_by_name("rows_scanned").map_or(0, |v| v.as_usize());
            lines.push(format!("Rows looked up: {looked_up}"));
        }
        lines
    }

    pub fn child(&self) -> &Arc<dyn ExecutionPlan> {
        &self.child
    }
}

impl DisplayAs for IndexLookupExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.explain_lines(false).join("; "))
    }
}

impl ExecutionPlan for IndexLookupExec {
    fn name(&self) -> &str {
        "IndexLookupExec"
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        match &self.lookup.residual {
            Some(r) => f(r),
            None => Ok(TreeNodeRecursion::Continue),
        }
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.child]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let child = children
            .pop()
            .ok_or_else(|| DataFusionError::Internal("index lookup without its scan".into()))?;
        Ok(Arc::new(IndexLookupExec::new(
            (*self.lookup).clone(),
            child,
            self.key_columns.clone(),
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        use futures::StreamExt;
        let mut input = self.child.execute(partition, context)?;
        let mut builder = RecordBatchReceiverStreamBuilder::new(Arc::clone(&self.schema), 2);
        let tx = builder.tx();
        let lookup = Arc::clone(&self.lookup);
        let key_columns = self.key_columns.clone();
        let looked_up = MetricBuilder::new(&self.metrics).counter("rows_scanned", partition);
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        builder.spawn(async move {
            let ext = |e: storage::Error| DataFusionError::External(Box::new(e));
            let layout = lookup
                .def
                .layout()
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            let pk_len = lookup.def.partition_key.len();
            let mut remaining = lookup.limit.unwrap_or(usize::MAX);
            while let Some(batch) = input.next().await {
                let batch = batch?;
                lookup.interrupt.check()?;
                let _timer = baseline.elapsed_compute().timer();
                let mut keys = Vec::with_capacity(batch.num_rows());
                for r in 0..batch.num_rows() {
                    let values = key_columns
                        .iter()
                        .enumerate()
                        .map(|(i, &c)| {
                            let col = &lookup.def.columns[c];
                            crate::convert::value_from_array(batch.column(i), r, col.ty, &col.name)
                        })
                        .collect::<Result<Vec<Value>, Error>>()
                        .map_err(|e| DataFusionError::External(Box::new(e)))?;
                    let key = layout
                        .encode(&values[..pk_len], &values[pk_len..])
                        .map_err(ext)?;
                    keys.push(bytes::Bytes::from(key));
                }
                let rows = lookup
                    .reader
                    .get_many(lookup.def.keyspace, &keys)
                    .map_err(ext)?;
                let mut batcher = Batcher::new(
                    &lookup.def,
                    Arc::clone(&lookup.scan_schema),
                    lookup.sources.clone(),
                    Arc::clone(&lookup.missing),
                );
                for row in rows.iter().flatten() {
                    batcher.push(row.as_ref())?;
                    looked_up.add(1);
                }
                let out = filter_and_project(&lookup, batcher.finish()?)?;
                let out = if out.num_rows() > remaining {
                    out.slice(0, remaining)
                } else {
                    out
                };
                remaining -= out.num_rows();
                baseline.record_output(out.num_rows());
                if out.num_rows() > 0 && tx.send(Ok(out)).await.is_err() {
                    break;
                }
                if remaining == 0 {
                    break;
                }
            }
            Ok(())
        });
        Ok(builder.build())
    }
}

/// One key column as an output column, in the order a scan produces rows.
struct KeyOrder {
    output: usize,
    descending: bool,
    /// Bound to one value by the key conditions.
    constant: bool,
}

impl KeyOrder {
    fn sort_expr(&self, schema: &SchemaRef) -> PhysicalSortExpr {
        PhysicalSortExpr {
            expr: Arc::new(PhysicalColumn::new(
                schema.field(self.output).name(),
                self.output,
            )),
            options: SortOptions {
                descending: self.descending,
                nulls_first: self.descending,
            },
        }
    }
}

/// The key columns, in the order the scan returns rows, as far as they are output columns.
fn output_key_order(scan: &KeyScan, schema: &SchemaRef) -> Vec<KeyOrder> {
    if !scan.spec.ordered {
        return vec![];
    }
    let def = &scan.def;
    let key = def
        .partition_key
        .iter()
        .map(|&c| (c, false))
        .chain(def.row_key.iter().map(|p| (p.column, p.desc)));
    let mut order = Vec::new();
    for (column, desc) in key {
        let output = scan.sources[..schema.fields().len()]
            .iter()
            .position(|s| *s == ColumnSource::Stored(column));
        let constant = scan.spec.constant_columns.contains(&column);
        match output {
            Some(output) => order.push(KeyOrder {
                output,
                descending: desc != scan.reverse,
                constant,
            }),
            // A constant column need not be output for the ones after it to stay ordered.
            None if constant => continue,
            None => break,
        }
    }
    order
}

/// Applies the residual filter to a decoded batch and keeps the output columns.
fn filter_and_project(scan: &KeyScan, batch: RecordBatch) -> DfResult<RecordBatch> {
    let batch = match &scan.residual {
        Some(r) => {
            let mask = r.evaluate(&batch)?.into_array(batch.num_rows())?;
            let mask =
                datafusion::arrow::array::AsArray::as_boolean_opt(&mask).ok_or_else(|| {
                    DataFusionError::Internal("residual filter is not boolean".into())
                })?;
            datafusion::arrow::compute::filter_record_batch(&batch, mask)?
        }
        None => batch,
    };
    if batch.num_columns() == scan.output_columns {
        return Ok(batch);
    }
    let indices: Vec<usize> = (0..scan.output_columns).collect();
    Ok(batch.project(&indices)?)
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
        batcher.reset(256);
        batcher
    }

    /// Fresh builders sized for `capacity` rows.
    fn reset(&mut self, capacity: usize) {
        self.stored = self
            .sources
            .iter()
            .map(|s| match s {
                ColumnSource::Stored(i) => Some(ColumnBuilder::new(self.types[*i], capacity)),
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

    pub fn push(&mut self, row: RowRef<'_>) -> DfResult<()> {
        let ext = |e: storage::Error| DataFusionError::External(Box::new(e));
        let mut index = 0;
        // No stored column wanted (`count(*)`, system columns only): the row is not read.
        if self.max_stored > 0 {
            let mut reader = RowReader::new(row.value).map_err(ext)?;
            while index < self.max_stored {
                match self.stored_slot[index] {
                    Some(slot) => {
                        let Some(value) = reader.next_value().map_err(ext)? else {
                            break;
                        };
                        if let Some(builder) = self.stored[slot].as_mut() {
                            builder
                                .append(value)
                                .map_err(|e| DataFusionError::External(Box::new(e)))?;
                        }
                    }
                    // A column the scan does not output is stepped over, not decoded.
                    None => {
                        if !reader.skip_value().map_err(ext)? {
                            break;
                        }
                    }
                }
                index += 1;
            }
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
        // Stored instants are built as UTC; the schema carries the session's zone.
        let columns = columns
            .into_iter()
            .zip(self.schema.fields())
            .map(|(array, field)| in_zone(array, field.data_type()))
            .collect();
        let rows = self.rows;
        // The next batch is likely as long as this one: builders that start at that size
        // are not regrown row by row.
        self.reset(rows.max(256));
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            columns,
            &options,
        )?)
    }
}

/// A timestamp array labelled with the zone `ty` declares; the values are instants, so
/// only the label changes.
pub fn in_zone(
    array: datafusion::arrow::array::ArrayRef,
    ty: &DataType,
) -> datafusion::arrow::array::ArrayRef {
    match ty {
        DataType::Timestamp(TimeUnit::Microsecond, Some(zone)) if array.data_type() != ty => {
            use datafusion::arrow::array::AsArray;
            match array.as_primitive_opt::<datafusion::arrow::datatypes::TimestampMicrosecondType>()
            {
                Some(values) => Arc::new(values.clone().with_timezone(Arc::clone(zone))),
                None => array,
            }
        }
        // A timestamptz[] column: its elements relabelled.
        DataType::List(item) if array.data_type() != ty => {
            use datafusion::arrow::array::{Array, AsArray, ListArray};
            let Some(list) = array.as_list_opt::<i32>() else {
                return array;
            };
            Arc::new(ListArray::new(
                Arc::clone(item),
                list.offsets().clone(),
                in_zone(Arc::clone(list.values()), item.data_type()),
                list.nulls().cloned(),
            ))
        }
        _ => array,
    }
}

/// The Arrow type of `_timestamp`.
pub fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()))
}

#[cfg(test)]
mod tests {
    use super::key_space_points;

    #[test]
    fn key_space_points_cut_evenly_between_the_ends() {
        // Keys of two big-endian u32 columns, as (tenant, id) encode.
        let key = |t: u32, i: u32| [t.to_be_bytes(), i.to_be_bytes()].concat();
        let (first, last) = (key(0, 0), key(9_999, 99));
        let points = key_space_points(&first, &last, 4);
        assert_eq!(points.len(), 3);
        let tenants: Vec<u32> = points
            .iter()
            .map(|p| u32::from_be_bytes(p[..4].try_into().unwrap()))
            .collect();
        assert_eq!(tenants, vec![2_499, 4_999, 7_499]);
        assert!(points.windows(2).all(|w| w[0] < w[1]));
        assert!(
            points
                .iter()
                .all(|p| p.as_ref() > first.as_slice() && p.as_ref() <= last.as_slice())
        );
    }

    #[test]
    fn key_space_points_never_leave_the_ends() {
        assert!(key_space_points(b"same", b"same", 4).is_empty());
        let pairs: [(&[u8], &[u8]); 4] = [
            (b"ab\x00", b"ab\x01"),
            (b"a", b"a\xff\xff"),
            (b"a\xff", b"b"),
            (
                b"k\x00\x00\x00\x00\x00\x00\x00\x00",
                b"k\x00\x00\x00\x00\x00\x00\x00\x01",
            ),
        ];
        for (first, last) in pairs {
            let points = key_space_points(first, last, 8);
            assert!(
                points.windows(2).all(|w| w[0] < w[1]),
                "{first:?}..{last:?}"
            );
            assert!(
                points
                    .iter()
                    .all(|p| p.as_ref() > first && p.as_ref() <= last),
                "{first:?}..{last:?}: {points:?}"
            );
        }
    }
}
