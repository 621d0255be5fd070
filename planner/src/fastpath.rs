//! The fast path: statements whose whole work is key access skip DataFusion.
//!
//! Recognised on the parsed statement (after parameters are bound):
//! - `SELECT cols FROM t WHERE <every key column = constant or IN (constants)>`: point
//!   lookups;
//! - a row range of one partition (`WHERE tenant = 1 AND id > 5 [ORDER BY id [DESC]]
//!   [LIMIT n]`), classified by `classify` as the general path would, with nothing left for a
//!   residual filter: one scan, forwards or backwards;
//! - `UPDATE t SET col = constant, …` and `DELETE FROM t` with the point-lookup WHERE, and
//!   `INSERT INTO t VALUES (constants), …`: key reads and writes in the statement's
//!   transaction.
//!
//! Anything else — another clause, an expression, a constant that does not convert exactly,
//! RETURNING, ON CONFLICT, a default to evaluate — returns `None` and the statement takes the
//! general path, which gives the same results and errors (tests/slt/fastpath.slt runs each
//! case both ways).

use crate::classify::{ScanClass, ScanSpec, classify};
use crate::convert::value_from_array;
use crate::dml::WriteResult;
use crate::error::{Error, Result};
use crate::provider::ColumnSource;
use crate::provider::{Batcher, PartitaTable, Reader, TableAccess, with_txn};
use crate::session::{Output, Param, Session, TxnStatus};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::{
    self, BinaryOperator, Expr, FromTable, GroupByExpr, SelectItem, SetExpr, Statement,
    TableFactor, UnaryOperator, Value as AstValue,
};
use sql::catalog::TableDef;
use sql::ddl::{normalize_ident, table_name};
use sql::types::SqlType;
use std::sync::Arc;
use storage::Value;

/// A statement the fast path can run.
#[derive(Clone)]
pub(crate) enum FastStatement {
    Select {
        def: Arc<TableDef>,
        /// Output columns by index in the table's visible schema.
        columns: Vec<usize>,
        keys: Vec<Vec<u8>>,
    },
    /// A row range scan of one partition, in key order or its reverse, maybe limited.
    Range {
        def: Arc<TableDef>,
        columns: Vec<usize>,
        ranges: Vec<storage::KeyRange>,
        reverse: bool,
        limit: Option<usize>,
    },
    Update {
        def: Arc<TableDef>,
        keys: Vec<Vec<u8>>,
        set: Vec<(usize, Value)>,
    },
    Delete {
        def: Arc<TableDef>,
        keys: Vec<Vec<u8>>,
    },
    Insert {
        def: Arc<TableDef>,
        rows: Vec<Vec<Value>>,
        /// ON CONFLICT DO NOTHING: a row whose key is taken is skipped.
        skip_existing: bool,
    },
}

impl Session {
    /// Recognises a key-only statement; `None` sends it down the general path.
    pub(crate) fn fast_statement(&self, stmt: &Statement) -> Option<FastStatement> {
        match stmt {
            Statement::Query(q) => self.fast_select(q),
            Statement::Update(u) => {
                if u.from.is_some() || !u.table.joins.is_empty() || u.returning.is_some() {
                    return None;
                }
                let def = self.fast_table(&u.table.relation)?;
                if def.has_foreign_keys() {
                    return None;
                }
                let qualifier = qualifier_of(&def, &u.table.relation);
                let keys = key_points(&def, &qualifier, u.selection.as_ref()?)?;
                let mut set = Vec::new();
                for a in &u.assignments {
                    let ast::AssignmentTarget::ColumnName(name) = &a.target else {
                        return None;
                    };
                    let column = def.column_index(&normalize_ident(name.0.last()?.as_ident()?))?;
                    // A column only the full path may refuse a value for, or given twice.
                    if def.columns[column].hidden
                        || generated_always(&def.columns[column])
                        || set.iter().any(|(c, _)| *c == column)
                    {
                        return None;
                    }
                    set.push((column, stored_value(&def, column, &a.value)?));
                }
                Some(FastStatement::Update { def, keys, set })
            }
            Statement::Delete(d) => {
                let tables = match &d.from {
                    FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
                };
                if tables.len() != 1
                    || !tables[0].joins.is_empty()
                    || d.using.is_some()
                    || d.returning.is_some()
                    || !d.order_by.is_empty()
                    || d.limit.is_some()
                {
                    return None;
                }
                let def = self.fast_table(&tables[0].relation)?;
                if def.has_foreign_keys() {
                    return None;
                }
                let qualifier = qualifier_of(&def, &tables[0].relation);
                let keys = key_points(&def, &qualifier, d.selection.as_ref()?)?;
                Some(FastStatement::Delete { def, keys })
            }
            Statement::Insert(i) => self.fast_insert(i),
            _ => None,
        }
    }

    fn fast_table(&self, relation: &TableFactor) -> Option<Arc<TableDef>> {
        let TableFactor::Table {
            name,
            args: None,
            with_hints,
            ..
        } = relation
        else {
            return None;
        };
        if !with_hints.is_empty() {
            return None;
        }
        self.table_def(&table_name(name).ok()?).ok()
    }

    /// A plain SELECT of distinct columns from one table, with its WHERE clause.
    fn plain_select<'q>(&self, q: &'q ast::Query) -> Option<PlainSelect<'q>> {
        if q.with.is_some() || q.fetch.is_some() || !q.locks.is_empty() {
            return None;
        }
        let SetExpr::Select(s) = q.body.as_ref() else {
            return None;
        };
        let plain_group_by =
            matches!(&s.group_by, GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
        if s.distinct.is_some()
            || s.top.is_some()
            || s.into.is_some()
            || s.from.len() != 1
            || !s.from[0].joins.is_empty()
            || !plain_group_by
            || s.having.is_some()
            || !s.named_window.is_empty()
            || s.qualify.is_some()
            || !s.lateral_views.is_empty()
            || !s.cluster_by.is_empty()
            || !s.distribute_by.is_empty()
            || !s.sort_by.is_empty()
        {
            return None;
        }
        let def = self.fast_table(&s.from[0].relation)?;
        let qualifier = qualifier_of(&def, &s.from[0].relation);
        let visible: Vec<usize> = (0..def.columns.len())
            .filter(|&i| !def.columns[i].hidden)
            .collect();
        let mut columns = Vec::new();
        for item in &s.projection {
            match item {
                SelectItem::Wildcard(opts) if is_plain_wildcard(opts) => {
                    columns.extend(0..visible.len());
                }
                SelectItem::UnnamedExpr(e) => {
                    let name = column_name(e, &qualifier)?;
                    let i = def.column_index(&name)?;
                    columns.push(visible.iter().position(|&v| v == i)?);
                }
                _ => return None,
            }
        }
        // Result names must be distinct for the general path too; leave repeats to it.
        let mut seen = columns.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != columns.len() {
            return None;
        }
        Some(PlainSelect {
            def,
            qualifier,
            columns,
            selection: s.selection.as_ref(),
        })
    }

    fn fast_select(&self, q: &ast::Query) -> Option<FastStatement> {
        let ordered_or_limited = q.order_by.is_some() || q.limit_clause.is_some();
        let PlainSelect {
            def,
            qualifier,
            columns,
            selection,
        } = self.plain_select(q)?;
        let selection = selection?;
        if !ordered_or_limited && let Some(keys) = key_points(&def, &qualifier, selection) {
            return Some(FastStatement::Select { def, columns, keys });
        }
        // One partition's row range, in key order or its reverse.
        let spec = key_range(&def, &qualifier, selection)?;
        if spec.class != ScanClass::RowRange
            || spec.class > self.max_scan_class()
            || spec.partitions != Some(1)
            || !spec.consumed.iter().all(|c| *c)
        {
            return None;
        }
        let reverse = match &q.order_by {
            None => false,
            Some(order) => key_order(&def, &qualifier, order, &spec.constant_columns)?,
        };
        let limit = match &q.limit_clause {
            None => None,
            Some(ast::LimitClause::LimitOffset {
                limit: None,
                offset: None,
                limit_by,
            }) if limit_by.is_empty() => None,
            Some(ast::LimitClause::LimitOffset {
                limit: Some(e),
                offset: None,
                limit_by,
            }) if limit_by.is_empty() => match constant(e)? {
                ScalarValue::Int64(Some(n)) if n >= 0 => Some(n as usize),
                _ => return None,
            },
            Some(_) => return None,
        };
        Some(FastStatement::Range {
            def,
            columns,
            ranges: spec.ranges,
            reverse,
            limit,
        })
    }

    fn fast_insert(&self, i: &ast::Insert) -> Option<FastStatement> {
        if i.returning.is_some()
            || i.partitioned.is_some()
            || i.overwrite
            || crate::dml::overriding(i).is_some()
        {
            return None;
        }
        let skip_existing = match &i.on {
            None => false,
            Some(ast::OnInsert::OnConflict(c))
                if c.conflict_target.is_none() && c.action == ast::OnConflictAction::DoNothing =>
            {
                true
            }
            Some(_) => return None,
        };
        let ast::TableObject::TableName(name) = &i.table else {
            return None;
        };
        let def = self.table_def(&table_name(name).ok()?).ok()?;
        if def.has_row_id() || def.has_foreign_keys() {
            return None;
        }
        let source = i.source.as_ref()?;
        if source.with.is_some() || source.order_by.is_some() || source.limit_clause.is_some() {
            return None;
        }
        let SetExpr::Values(values) = source.body.as_ref() else {
            return None;
        };
        // Hidden columns (a dropped column's slot) take no value.
        let targets: Vec<usize> = if i.columns.is_empty() {
            (0..def.columns.len())
                .filter(|&c| !def.columns[c].hidden)
                .collect()
        } else {
            i.columns
                .iter()
                .map(|c| {
                    def.column_index(&normalize_ident(c.0.last()?.as_ident()?))
                        .filter(|&c| !def.columns[c].hidden)
                })
                .collect::<Option<_>>()?
        };
        // Omitted columns must need no default evaluated; a GENERATED ALWAYS column given a
        // value is an error the full path reports.
        for (c, col) in def.columns.iter().enumerate() {
            let given = targets.contains(&c);
            if !given && col.default.is_some() || given && generated_always(col) {
                return None;
            }
        }
        let mut rows = Vec::with_capacity(values.rows.len());
        for row in &values.rows {
            if row.len() != targets.len() {
                return None;
            }
            let mut stored = vec![Value::Null; def.columns.len()];
            for (expr, &c) in row.iter().zip(&targets) {
                stored[c] = stored_value(&def, c, expr)?;
            }
            rows.push(stored);
        }
        Some(FastStatement::Insert {
            def,
            rows,
            skip_existing,
        })
    }

    /// Runs a recognised statement. Writes run inside the current transaction (the caller
    /// provides the implicit one in autocommit).
    pub(crate) fn run_fast_read(&mut self, stmt: FastStatement) -> Result<Output> {
        let (def, columns, keys, range) = match stmt {
            FastStatement::Select { def, columns, keys } => (def, columns, keys, None),
            FastStatement::Range {
                def,
                columns,
                ranges,
                reverse,
                limit,
            } => (def, columns, vec![], Some((ranges, reverse, limit))),
            _ => return Err(Error::Internal("not a fast read".into())),
        };
        let reader = self.reader();
        let (schema, sources) = self.fast_output(&def, &reader, &columns)?;
        let mut batcher = Batcher::new(
            &def,
            Arc::clone(&schema),
            sources,
            Arc::new(crate::provider::missing_values(&def)),
        );
        for key in &keys {
            if let Some(row) = reader.get(def.keyspace, key).map_err(Error::from_storage)? {
                batcher.push(row.as_ref())?;
            }
        }
        if let Some((ranges, reverse, limit)) = range {
            let mut remaining = limit.unwrap_or(usize::MAX);
            let direction = key_direction(reverse);
            let ordered: Vec<&storage::KeyRange> = if reverse {
                ranges.iter().rev().collect()
            } else {
                ranges.iter().collect()
            };
            'ranges: for range in ordered {
                let mut rows = reader
                    .scan(def.keyspace, range, direction)
                    .map_err(Error::from_storage)?;
                while let Some(row) = rows.next_ref() {
                    if remaining == 0 {
                        break 'ranges;
                    }
                    batcher.push(row.map_err(Error::from_storage)?)?;
                    remaining -= 1;
                }
            }
        }
        let batch = batcher.finish()?;
        Ok(Output::from_batches(schema, vec![batch], "SELECT"))
    }

    /// The schema and column sources of a fast read's output columns (by index among the
    /// table's visible columns).
    fn fast_output(
        &self,
        def: &Arc<TableDef>,
        reader: &Reader,
        columns: &[usize],
    ) -> Result<(SchemaRef, Vec<ColumnSource>)> {
        let access = TableAccess {
            system_columns: false,
            max_class: ScanClass::Full,
            store: self.db.store.clone(),
            interrupt: self.interrupt.clone(),
            zone: Arc::from(self.zone().arrow.as_str()),
        };
        let table = PartitaTable::new(
            Arc::clone(def),
            crate::provider::ReaderSource::Fixed(reader.clone()),
            access,
        );
        Ok(table.projection(columns)?)
    }

    /// The point plan of a prepared statement, recognised on its first execution and
    /// again whenever the catalog or the session's time zone has changed since; `None`
    /// when the statement is not a point SELECT or the fast path is off.
    pub(crate) fn point_plan_for(
        &self,
        stmt: &Statement,
        known: &PreparedFast,
    ) -> Option<Arc<PointPlan>> {
        if !matches!(stmt, Statement::Query(_)) || !self.fast_path_on() {
            return None;
        }
        // Tables this transaction created or altered are not in the committed catalog.
        if self.ddl_pending() {
            return None;
        }
        let generation = self.db.catalog.generation();
        let mut state = known.0.lock().unwrap_or_else(|e| e.into_inner());
        match &*state {
            PointState::Plan(plan)
                if plan.generation == generation && *plan.zone == *self.zone().arrow =>
            {
                return Some(Arc::clone(plan));
            }
            PointState::NotPoint { generation: g } if *g == generation => return None,
            _ => {}
        }
        let plan = self.point_plan(stmt, generation).map(Arc::new);
        *state = match &plan {
            Some(plan) => PointState::Plan(Arc::clone(plan)),
            None => PointState::NotPoint { generation },
        };
        plan
    }

    /// `SELECT cols FROM t WHERE k1 = $1 AND k2 = 'x' …`: key columns compared once each
    /// for equality with a parameter or a constant, nothing else — every key column (a
    /// point), or the whole partition key and leading row key columns (their rows, ORDER BY
    /// allowed when it follows the key's order or its reverse).
    fn point_plan(&self, stmt: &Statement, generation: u64) -> Option<PointPlan> {
        let Statement::Query(q) = stmt else {
            return None;
        };
        if q.limit_clause.is_some() {
            return None;
        }
        let PlainSelect {
            def,
            qualifier,
            columns,
            selection,
        } = self.plain_select(q)?;
        let mut conjuncts = Vec::new();
        split_and(selection?, &mut conjuncts);
        let key_columns: Vec<usize> = def
            .partition_key
            .iter()
            .copied()
            .chain(def.row_key.iter().map(|p| p.column))
            .collect();
        let mut key: Vec<Option<KeyArg>> = vec![None; key_columns.len()];
        for c in conjuncts {
            let Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } = c
            else {
                return None;
            };
            let (column, other) = match (
                column_of(&def, &qualifier, left),
                column_of(&def, &qualifier, right),
            ) {
                (Some(c), None) => (c, right.as_ref()),
                (None, Some(c)) => (c, left.as_ref()),
                _ => return None,
            };
            let slot = key_columns.iter().position(|&k| k == column)?;
            if key[slot].is_some() {
                return None;
            }
            key[slot] = Some(match placeholder(other) {
                Some(index) => KeyArg::Param(index),
                None => KeyArg::Const(key_value(&def, column, other)?),
            });
        }
        // The bound key columns must be the whole partition key and a prefix of the row
        // key: the whole key is a point, a shorter prefix one partition's rows in key order.
        let bound = key.iter().take_while(|arg| arg.is_some()).count();
        if bound < def.partition_key.len() || key[bound..].iter().any(Option::is_some) {
            return None;
        }
        let key: Vec<(usize, KeyArg)> = key_columns
            .into_iter()
            .zip(key)
            .map_while(|(column, arg)| Some((column, arg?)))
            .collect();
        let is_prefix = key.len() < def.partition_key.len() + def.row_key.len();
        let reverse = match &q.order_by {
            None => false,
            // A point's one row needs no order; a prefix's rows come in key order.
            Some(_) if !is_prefix => return None,
            Some(order) => {
                let bound: Vec<usize> = key.iter().map(|(c, _)| *c).collect();
                key_order(&def, &qualifier, order, &bound)?
            }
        };
        let (schema, sources) = self.fast_output(&def, &self.reader(), &columns).ok()?;
        Some(PointPlan {
            prefix: is_prefix.then_some(reverse),
            generation,
            zone: Arc::from(self.zone().arrow.as_str()),
            layout: def.layout().ok()?,
            missing: Arc::new(crate::provider::missing_values(&def)),
            def,
            key,
            schema,
            sources,
        })
    }

    /// Reads the row a point plan names with these parameters. `None` when a parameter does
    /// not convert exactly to its key column's type: the general path then gives the same
    /// answer or error as for any statement.
    pub(crate) fn run_point_plan(
        &mut self,
        plan: &PointPlan,
        params: &[Param],
    ) -> Result<Option<Output>> {
        let partition_len = plan.def.partition_key.len();
        let mut values = Vec::with_capacity(plan.key.len());
        for (column, arg) in &plan.key {
            let value = match arg {
                KeyArg::Const(v) => v.clone(),
                KeyArg::Param(i) => match params
                    .get(*i)
                    .and_then(|p| param_key_value(&plan.def, *column, p))
                {
                    Some(v) => v,
                    None => return Ok(None),
                },
            };
            values.push(value);
        }
        let (pk, rk) = values.split_at(partition_len);
        let reader = self.reader();
        let mut batcher = Batcher::new(
            &plan.def,
            Arc::clone(&plan.schema),
            plan.sources.clone(),
            Arc::clone(&plan.missing),
        );
        match plan.prefix {
            None => {
                let Ok(key) = plan.layout.encode(pk, rk) else {
                    return Ok(None);
                };
                if let Some(row) = reader
                    .get(plan.def.keyspace, &key)
                    .map_err(Error::from_storage)?
                {
                    batcher.push(row.as_ref())?;
                }
            }
            Some(reverse) => {
                // A row range: the general path applies the session's scan-class cap.
                if self.max_scan_class() < ScanClass::RowRange {
                    return Ok(None);
                }
                let Ok(prefix) = plan
                    .layout
                    .partition_prefix(pk)
                    .and_then(|p| plan.layout.encode_row_prefix(&p, rk))
                else {
                    return Ok(None);
                };
                let mut rows = reader
                    .scan(
                        plan.def.keyspace,
                        &storage::KeyRange::prefix(&prefix),
                        key_direction(reverse),
                    )
                    .map_err(Error::from_storage)?;
                while let Some(row) = rows.next_ref() {
                    batcher.push(row.map_err(Error::from_storage)?)?;
                }
            }
        }
        let batch = batcher.finish()?;
        Ok(Some(Output::from_batches(
            Arc::clone(&plan.schema),
            vec![batch],
            "SELECT",
        )))
    }

    /// Runs a simple-protocol query as a key lookup when its text, literals aside, is a
    /// point SELECT: the text is parameterized (`autoparam`), and the point plan kept for
    /// that parameterized text reads the row with the literals as parameters. `Ok(None)`
    /// sends the query down the general path, which parses the original text.
    pub async fn execute_simple_point(&mut self, text: &str) -> Result<Option<Output>> {
        if self.status() == TxnStatus::Failed || !self.fast_path_on() {
            return Ok(None);
        }
        let Some((parameterized, params)) = crate::autoparam::parameterize(text) else {
            return Ok(None);
        };
        let known = match self.simple_points.get(&parameterized) {
            Some(known) => Arc::clone(known),
            None => {
                let stmt = match crate::session::parse_sql(&parameterized) {
                    Ok(mut stmts) if stmts.len() == 1 => stmts.pop(),
                    _ => None,
                };
                let known = Arc::new(SimplePoint {
                    stmt,
                    fast: PreparedFast::default(),
                });
                if self.simple_points.len() >= 256 {
                    self.simple_points.clear();
                }
                self.simple_points.insert(parameterized, Arc::clone(&known));
                known
            }
        };
        let Some(stmt) = &known.stmt else {
            return Ok(None);
        };
        let Some(plan) = self.point_plan_for(stmt, &known.fast) else {
            return Ok(None);
        };
        self.interrupt.reset();
        self.run_point_plan(&plan, &params)
            .inspect_err(|_| self.statement_failed())
    }

    /// Applies a recognised write in the open transaction.
    pub(crate) fn run_fast_write(&mut self, stmt: FastStatement) -> Result<WriteResult> {
        let txn = self.open_txn()?;
        let stored = crate::provider::stored_values;
        match stmt {
            FastStatement::Select { .. } | FastStatement::Range { .. } => {
                Err(Error::Internal("not a fast write".into()))
            }
            FastStatement::Delete { def, keys } => {
                crate::dml::track_table(self, &txn, &def.name)?;
                let mut count = 0;
                for key in &keys {
                    let found = with_txn(&txn, |t| t.get(def.keyspace, key))?;
                    if let Some(row) = found {
                        with_txn(&txn, |t| t.delete(def.keyspace, key))?;
                        if !def.indexes.is_empty() || !def.views.is_empty() {
                            let old = stored(&def, &row.value)?;
                            crate::index::maintain(&def, &txn, Some(&old), None)?;
                        }
                        count += 1;
                    }
                }
                Ok(WriteResult::counted("DELETE", count))
            }
            FastStatement::Update { def, keys, set } => {
                crate::dml::track_table(self, &txn, &def.name)?;
                let layout = def.layout()?;
                // Read every row before writing any: a key change must not move a row onto
                // a key read later and update it twice.
                let mut rows = Vec::new();
                for key in &keys {
                    if let Some(row) = with_txn(&txn, |t| t.get(def.keyspace, key))? {
                        rows.push(stored(&def, &row.value)?);
                    }
                }
                for old in &rows {
                    let mut new = old.clone();
                    for (c, v) in &set {
                        new[*c] = v.clone();
                    }
                    crate::dml::write_updated(&def, &layout, &txn, old, &mut new)?;
                }
                Ok(WriteResult::counted("UPDATE", rows.len()))
            }
            FastStatement::Insert {
                def,
                rows,
                skip_existing,
            } => {
                crate::dml::track_table(self, &txn, &def.name)?;
                let layout = def.layout()?;
                let mut count = 0;
                for mut values in rows {
                    if crate::dml::insert_new(&def, &layout, &txn, &mut values, skip_existing)? {
                        count += 1;
                    }
                }
                Ok(WriteResult::counted("INSERT 0", count))
            }
        }
    }
}

/// A SELECT of distinct plain columns from one table (see `Session::plain_select`).
struct PlainSelect<'q> {
    def: Arc<TableDef>,
    /// How the query qualifies the table's columns.
    qualifier: String,
    /// The output columns, by index among the table's visible columns.
    columns: Vec<usize>,
    selection: Option<&'q Expr>,
}

/// A simple-protocol query's parameterized statement (`None` when it does not parse as
/// one statement) and what its executions learnt.
pub(crate) struct SimplePoint {
    stmt: Option<Statement>,
    fast: PreparedFast,
}

/// What a prepared statement knows of its point plan; kept with the statement by the wire
/// layer and filled on its first execution (see `Session::execute_prepared`).
#[derive(Default)]
pub struct PreparedFast(std::sync::Mutex<PointState>);

impl std::fmt::Debug for PreparedFast {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PreparedFast")
    }
}

#[derive(Default)]
enum PointState {
    #[default]
    Unknown,
    /// Not a point SELECT under this catalog generation.
    NotPoint {
        generation: u64,
    },
    Plan(Arc<PointPlan>),
}

/// A point SELECT recognised once on its prepared text, placeholders and all: what to
/// read and how to build the key from each execution's parameters, with no SQL work left
/// for the executions.
pub(crate) struct PointPlan {
    /// The catalog generation and time zone the plan was made under (the output schema
    /// shows timestamptz columns in the zone).
    generation: u64,
    zone: Arc<str>,
    def: Arc<TableDef>,
    layout: storage::KeyLayout,
    /// Each bound key column (partition key, then row key) and where its value comes from.
    key: Vec<(usize, KeyArg)>,
    /// `Some(reverse)` when `key` binds only a prefix (the whole partition key and leading
    /// row key columns): the plan reads those rows in key order, or its reverse.
    prefix: Option<bool>,
    schema: SchemaRef,
    sources: Vec<ColumnSource>,
    missing: Arc<Vec<Value>>,
}

#[derive(Clone)]
enum KeyArg {
    Const(Value),
    /// A parameter, by 0-based index.
    Param(usize),
}

/// The 0-based index of a `$n` placeholder.
fn placeholder(e: &Expr) -> Option<usize> {
    match e {
        Expr::Value(v) => match &v.value {
            AstValue::Placeholder(p) => p.strip_prefix('$')?.parse::<usize>().ok()?.checked_sub(1),
            _ => None,
        },
        Expr::Nested(inner) => placeholder(inner),
        _ => None,
    }
}

/// A bound parameter as the value of key column `column`, exactly as the general path would
/// convert it (`key_value` of the literal `bind_params` writes), with the common integer
/// and text cases read directly.
fn param_key_value(def: &TableDef, column: usize, param: &Param) -> Option<Value> {
    let text = param.value.as_deref()?;
    let ty = def.columns[column].ty;
    let integer = |p: Option<SqlType>| {
        matches!(
            p,
            None | Some(SqlType::Int2 | SqlType::Int4 | SqlType::Int8)
        )
    };
    match ty {
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 if integer(param.ty) => {
            let n: i64 = text.trim().parse().ok()?;
            return match ty {
                SqlType::Int2 => i16::try_from(n).ok().map(Value::Int2),
                SqlType::Int4 => i32::try_from(n).ok().map(Value::Int4),
                _ => Some(Value::Int8(n)),
            };
        }
        SqlType::Text if matches!(param.ty, None | Some(SqlType::Text)) => {
            return Some(Value::Text(text.to_string()));
        }
        _ => {}
    }
    key_value(def, column, &crate::session::param_literal(param))
}

/// How columns of `relation` are qualified: by its alias, else by the table's name.
fn qualifier_of(def: &TableDef, relation: &TableFactor) -> String {
    match relation {
        TableFactor::Table {
            alias: Some(alias), ..
        } => normalize_ident(&alias.name),
        _ => def.name.clone(),
    }
}

fn is_plain_wildcard(opts: &ast::WildcardAdditionalOptions) -> bool {
    opts.opt_ilike.is_none()
        && opts.opt_exclude.is_none()
        && opts.opt_except.is_none()
        && opts.opt_replace.is_none()
        && opts.opt_rename.is_none()
}

/// The column a plain reference names (`c` or `t.c`, the qualifier being the table or its
/// alias).
fn column_name(expr: &Expr, qualifier: &str) -> Option<String> {
    match expr {
        Expr::Identifier(id) => Some(normalize_ident(id)),
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            (normalize_ident(&parts[0]) == qualifier).then(|| normalize_ident(&parts[1]))
        }
        _ => None,
    }
}

/// The encoded keys a WHERE clause binds when it is only key comparisons that make a point
/// or multi-point access (every key column `=` or IN constants); `None` otherwise.
fn key_points(def: &TableDef, qualifier: &str, selection: &Expr) -> Option<Vec<Vec<u8>>> {
    let spec = key_range(def, qualifier, selection)?;
    if spec.class > ScanClass::MultiPoint || !spec.consumed.iter().all(|c| *c) {
        return None;
    }
    // In key order, as a scan of the same keys returns them.
    let mut keys = spec.keys?;
    keys.sort();
    Some(keys)
}

/// The key access of a WHERE clause made only of key-column comparisons with constants (`=`,
/// `<`, `<=`, `>`, `>=`, BETWEEN, IN), classified as the general path would.
fn key_range(def: &TableDef, qualifier: &str, selection: &Expr) -> Option<ScanSpec> {
    use datafusion::common::Column;
    use datafusion::logical_expr::{BinaryExpr, Expr as DfExpr, Operator, lit};
    let col = |name: &str| DfExpr::Column(Column::new_unqualified(name));
    let mut conjuncts = Vec::new();
    split_and(selection, &mut conjuncts);
    let mut filters = Vec::with_capacity(conjuncts.len());
    let typed = |column: usize, e: &Expr| -> Option<DfExpr> {
        let value = key_value(def, column, e)?;
        let array = crate::convert::ColumnBuilder::single(def.columns[column].ty, &value)?;
        Some(lit(ScalarValue::try_from_array(&array, 0).ok()?))
    };
    for c in conjuncts {
        let filter = match c {
            Expr::BinaryOp { left, op, right } => {
                let op = match op {
                    BinaryOperator::Eq => Operator::Eq,
                    BinaryOperator::Lt => Operator::Lt,
                    BinaryOperator::LtEq => Operator::LtEq,
                    BinaryOperator::Gt => Operator::Gt,
                    BinaryOperator::GtEq => Operator::GtEq,
                    _ => return None,
                };
                let (column, value, op) = match (
                    column_of(def, qualifier, left),
                    column_of(def, qualifier, right),
                ) {
                    (Some(c), None) => (c, right.as_ref(), op),
                    (None, Some(c)) => (c, left.as_ref(), op.swap()?),
                    _ => return None,
                };
                // An enum's order is its labels', which its stored text does not give.
                if op != Operator::Eq && matches!(def.columns[column].ty, SqlType::Enum { .. }) {
                    return None;
                }
                DfExpr::BinaryExpr(BinaryExpr::new(
                    Box::new(col(def.columns[column].name.as_str())),
                    op,
                    Box::new(typed(column, value)?),
                ))
            }
            Expr::Between {
                expr,
                negated: false,
                low,
                high,
            } => {
                let column = column_of(def, qualifier, expr)?;
                if matches!(def.columns[column].ty, SqlType::Enum { .. }) {
                    return None;
                }
                col(def.columns[column].name.as_str())
                    .between(typed(column, low)?, typed(column, high)?)
            }
            Expr::InList {
                expr,
                list,
                negated: false,
            } => {
                let column = column_of(def, qualifier, expr)?;
                let items = list
                    .iter()
                    .map(|v| typed(column, v))
                    .collect::<Option<Vec<_>>>()?;
                col(def.columns[column].name.as_str()).in_list(items, false)
            }
            _ => return None,
        };
        filters.push(filter);
    }
    Some(classify(def, &filters))
}

/// Whether ORDER BY asks for the key order (`Some(false)`) or its reverse (`Some(true)`):
/// row key columns in key order, all one way, constant key columns anywhere.
fn key_order(
    def: &TableDef,
    qualifier: &str,
    order: &ast::OrderBy,
    constants: &[usize],
) -> Option<bool> {
    let ast::OrderByKind::Expressions(items) = &order.kind else {
        return None;
    };
    if order.interpolate.is_some() {
        return None;
    }
    let varying: Vec<(usize, bool)> = def
        .row_key
        .iter()
        .filter(|p| !constants.contains(&p.column))
        .map(|p| (p.column, p.desc))
        .collect();
    let mut reverse = None;
    let mut next = 0;
    for item in items {
        if item.with_fill.is_some() {
            return None;
        }
        let column = column_of(def, qualifier, &item.expr)?;
        if constants.contains(&column) {
            continue;
        }
        if matches!(def.columns[column].ty, SqlType::Enum { .. }) {
            return None;
        }
        let (key_column, key_desc) = *varying.get(next)?;
        if key_column != column {
            return None;
        }
        next += 1;
        let desc = item.options.asc == Some(false);
        let flip = desc != key_desc;
        if *reverse.get_or_insert(flip) != flip {
            return None;
        }
    }
    Some(reverse.unwrap_or(false))
}

/// The conjuncts of a condition (ANDs, through parentheses).
pub(crate) fn split_and<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_and(left, out);
            split_and(right, out);
        }
        Expr::Nested(inner) => split_and(inner, out),
        other => out.push(other),
    }
}

/// The column `e` names; `qualifier` is the table's alias, or its name when it has none.
fn column_of(def: &TableDef, qualifier: &str, e: &Expr) -> Option<usize> {
    match e {
        Expr::Identifier(id) => def.column_index(&normalize_ident(id)),
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => (normalize_ident(&parts[0])
            == qualifier)
            .then(|| def.column_index(&normalize_ident(&parts[1])))
            .flatten(),
        Expr::Nested(inner) => column_of(def, qualifier, inner),
        _ => None,
    }
}

/// A constant compared with a key column, when it converts to the column's type exactly.
fn key_value(def: &TableDef, column: usize, e: &Expr) -> Option<Value> {
    let ty = def.columns[column].ty;
    if matches!(ty, SqlType::Char { .. } | SqlType::TimestampTz { .. }) {
        // Blank-padded comparison; text read in the session's time zone: leave them to
        // the general path.
        return None;
    }
    let scalar = constant(e)?;
    if date_with_time(ty, &scalar) {
        return None;
    }
    // As PostgreSQL types a comparison: numbers with numeric columns, booleans with bool,
    // strings (unknown literals) with anything.
    let kind_fits = match &scalar {
        ScalarValue::Utf8(_) => true,
        ScalarValue::Boolean(_) => ty == SqlType::Bool,
        _ => is_number_type(ty),
    };
    if !kind_fits || ty == SqlType::Bytea {
        return None;
    }
    let wanted = ty.arrow();
    let converted = if scalar.data_type() == wanted {
        scalar
    } else {
        let c = scalar.cast_to(&wanted).ok()?;
        if c.cast_to(&scalar.data_type()).ok()? != scalar {
            return None;
        }
        c
    };
    let value = value_from_array(&converted.to_array().ok()?, 0, ty, "").ok()?;
    if let (Value::Text(t), ScalarValue::Utf8(Some(s))) = (&value, &converted)
        && t != s
    {
        return None; // varchar(n) trims trailing blanks on storage, not in comparisons
    }
    (!value.is_null()).then_some(value)
}

/// A constant to store in `column`: converted as an INSERT or UPDATE would (a cast to the
/// column type, then its length and precision rules). Anything that fails here goes down
/// the general path, which reports the error.
fn stored_value(def: &TableDef, column: usize, e: &Expr) -> Option<Value> {
    let ty = def.columns[column].ty;
    if matches!(e, Expr::Value(v) if matches!(v.value, AstValue::Null)) {
        return Some(Value::Null);
    }
    if matches!(
        ty,
        SqlType::Json
            | SqlType::Jsonb
            | SqlType::Char { .. }
            | SqlType::TimestampTz { .. }
            | SqlType::Timestamp { precision: Some(_) }
    ) {
        return None;
    }
    let scalar = constant(e)?;
    if date_with_time(ty, &scalar) {
        return None;
    }
    // Strings convert to any type as PostgreSQL's unknown literals do; numbers only to
    // numbers, exactly.
    let wanted = ty.arrow();
    let text_input = matches!(
        ty,
        SqlType::Text
            | SqlType::Varchar { .. }
            | SqlType::Bytea
            | SqlType::Uuid
            | SqlType::Array { .. }
    );
    let converted =
        if scalar.data_type() == wanted || (text_input && matches!(scalar, ScalarValue::Utf8(_))) {
            // Text goes to value_from_array as text: it reads bytea escapes, uuids and array
            // text itself.
            scalar
        } else if matches!(scalar, ScalarValue::Utf8(_)) {
            scalar.cast_to(&wanted).ok()?
        } else if matches!(
            ty,
            SqlType::Int2
                | SqlType::Int4
                | SqlType::Int8
                | SqlType::Float4
                | SqlType::Float8
                | SqlType::Numeric { .. }
        ) {
            let c = scalar.cast_to(&wanted).ok()?;
            if c.cast_to(&scalar.data_type()).ok()? != scalar {
                return None;
            }
            c
        } else {
            return None;
        };
    value_from_array(
        &converted.to_array().ok()?,
        0,
        ty,
        &def.columns[column].name,
    )
    .ok()
}

fn is_number_type(ty: SqlType) -> bool {
    matches!(
        ty,
        SqlType::Int2
            | SqlType::Int4
            | SqlType::Int8
            | SqlType::Float4
            | SqlType::Float8
            | SqlType::Numeric { .. }
    )
}

/// A literal: number, string, boolean, a negated number, or a bound parameter
/// (`'text'::type`).
/// Text for a date column with a time after the date (and perhaps a zone, which a date
/// ignores): the general path's date input reads it, not Arrow's cast, which would take
/// the instant's UTC date.
fn date_with_time(ty: SqlType, value: &ScalarValue) -> bool {
    ty == SqlType::Date && matches!(value, ScalarValue::Utf8(Some(t)) if t.trim().len() > 10)
}

fn constant(e: &Expr) -> Option<ScalarValue> {
    match e {
        Expr::Value(v) => match &v.value {
            AstValue::Number(n, false) => number(n),
            AstValue::SingleQuotedString(s) => Some(ScalarValue::Utf8(Some(s.clone()))),
            AstValue::Boolean(b) => Some(ScalarValue::Boolean(Some(*b))),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                AstValue::Number(n, false) => number(&format!("-{n}")),
                _ => None,
            },
            _ => None,
        },
        Expr::Cast {
            kind: ast::CastKind::Cast | ast::CastKind::DoubleColon,
            expr,
            data_type,
            array: false,
            format: None,
        } => {
            let inner = constant(expr)?;
            let ty = SqlType::from_ast(data_type).ok()?;
            if !matches!(inner, ScalarValue::Utf8(_))
                || date_with_time(ty, &inner)
                || matches!(
                    ty,
                    SqlType::TimestampTz { .. }
                        | SqlType::Timestamp { precision: Some(_) }
                        // Arrow's cast would take array text for one element.
                        | SqlType::Array { .. }
                )
            {
                return None;
            }
            let cast = inner.cast_to(&ty.arrow()).ok()?;
            (!cast.is_null()).then_some(cast)
        }
        Expr::Nested(inner) => constant(inner),
        // `'city' || 5`: text concatenated with text, a number or a boolean, as their
        // PostgreSQL text forms (a NULL operand or a float leaves it to the general path).
        Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::StringConcat,
            right,
        } => {
            let (l, r) = (constant(left)?, constant(right)?);
            if !matches!(l, ScalarValue::Utf8(_)) && !matches!(r, ScalarValue::Utf8(_)) {
                return None;
            }
            Some(ScalarValue::Utf8(Some(
                concat_text(&l)? + &concat_text(&r)?,
            )))
        }
        _ => None,
    }
}

/// Key order, or its reverse.
fn key_direction(reverse: bool) -> storage::Direction {
    if reverse {
        storage::Direction::Reverse
    } else {
        storage::Direction::Forward
    }
}

/// A constant's text as `||` renders it.
fn concat_text(v: &ScalarValue) -> Option<String> {
    match v {
        ScalarValue::Utf8(Some(s)) => Some(s.clone()),
        ScalarValue::Int64(Some(_))
        | ScalarValue::Int32(Some(_))
        | ScalarValue::Decimal128(Some(_), ..)
        | ScalarValue::Boolean(Some(_)) => Some(v.to_string()),
        _ => None,
    }
}

fn number(text: &str) -> Option<ScalarValue> {
    if let Ok(i) = text.parse::<i64>() {
        return Some(ScalarValue::Int64(Some(i)));
    }
    if text.contains(['e', 'E']) {
        return None;
    }
    // A decimal literal, as DataFusion reads it with parse_float_as_decimal.
    let digits = text.trim_start_matches('-').replace('.', "");
    let scale = text.split('.').nth(1).map_or(0, str::len);
    if digits.len() > 38 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let unscaled: i128 = format!("{}{}", if text.starts_with('-') { "-" } else { "" }, digits)
        .parse()
        .ok()?;
    let precision = digits.trim_start_matches('0').len().max(scale).max(1) as u8;
    Some(ScalarValue::Decimal128(
        Some(unscaled),
        precision,
        scale as i8,
    ))
}

/// Whether a column takes no value but its own: a GENERATED ALWAYS identity or a generated
/// column.
fn generated_always(col: &sql::ColumnDef) -> bool {
    col.identity == Some(sql::Identity::Always) || col.generated.is_some()
}
