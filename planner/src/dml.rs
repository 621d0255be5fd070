//! INSERT, UPDATE and DELETE.
//!
//! Each statement is turned into a query DataFusion plans and runs — the rows to insert with
//! every value cast to its column's type, or the rows an UPDATE/DELETE touches with the new
//! values — and the rows it yields are written through the session's transaction. Keys are
//! checked here: a NULL key column is 23502, an existing key 23505 (unless ON CONFLICT), and
//! an UPDATE that changes the key deletes the old row and inserts the new one. RETURNING is
//! evaluated over the written rows after the commit, so `_etag` and `_timestamp` are the new
//! ones.

use crate::convert::{ColumnBuilder, value_from_array};
use crate::error::{Error, Result};
use crate::provider::{SharedTxn, etag_text, with_txn};
use crate::session::{Output, Session};
use datafusion::arrow::array::{Array, RecordBatch, StringBuilder, TimestampMicrosecondBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::datasource::MemTable;
use datafusion::execution::context::SessionContext;
use datafusion::sql::sqlparser::ast::{
    self, AssignmentTarget, CastKind, Expr, FromTable, GroupByExpr, Ident, ObjectName,
    OnConflictAction, OnInsert, Query, Select, SelectFlavor, SelectItem, SetExpr, TableAlias,
    TableFactor, TableObject, TableWithJoins, Value as AstValue, Values,
};
use sql::catalog::{ETAG_COLUMN, Identity, IndexDef, ROW_ID_COLUMN, TIMESTAMP_COLUMN, TableDef};
use sql::ddl::{normalize_ident, table_name};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use storage::{CommitInfo, Value};

/// A written row kept for RETURNING: its values and, for rows read from the store, the stamp
/// they had.
struct WrittenRow {
    values: Vec<Value>,
    old_stamp: Option<(u64, u64)>,
    /// The statement deleted the row, or locked its stored version to update it (an
    /// upsert's update): its `xmax` is the writing transaction's number. A row inserted, or
    /// written by UPDATE, is a new version with 0, as in PostgreSQL.
    replaced: bool,
}

struct Returning {
    def: Arc<TableDef>,
    alias: Option<String>,
    items: Vec<SelectItem>,
    rows: Vec<WrittenRow>,
    /// The rows were deleted: their system columns show the stamps they had.
    deleted: bool,
    /// The session's time zone, which RETURNING expressions are evaluated in.
    zone: String,
    /// The session's statement clock (`now()` in RETURNING).
    clock: crate::functions::TransactionStart,
    /// The session's names (`current_user` in RETURNING).
    identity: crate::schema::Identity,
    /// The functions of the session's own state (`currval`, `pg_notify`).
    functions: Vec<Arc<datafusion::logical_expr::ScalarUDF>>,
    /// UPDATE … FROM and DELETE … USING: each FROM (USING) item's name and its columns in
    /// the row each written row was joined with, in the order of `rows`.
    sources: Vec<(String, RecordBatch)>,
    /// The writing transaction's number, the `xmax` of the rows it deleted or locked: never
    /// 0, so that `RETURNING (xmax = 0) AS inserted` tells an upsert's inserts from its
    /// updates.
    xid: i64,
}

/// What a write did, finished into an `Output` once the commit (if any) is known.
pub struct WriteResult {
    tag: String,
    count: Option<usize>,
    returning: Option<Returning>,
    /// RETURNING's rows, evaluated before the commit when they do not depend on it.
    evaluated: Option<(SchemaRef, Vec<RecordBatch>)>,
}

impl WriteResult {
    /// The rows the statement wrote, for the tags that count them.
    pub fn count(&self) -> Option<usize> {
        self.count
    }

    pub fn counted(tag: &str, count: usize) -> WriteResult {
        WriteResult {
            tag: tag.to_string(),
            count: Some(count),
            returning: None,
            evaluated: None,
        }
    }

    /// The same result under another command tag.
    pub fn with_tag(mut self, tag: &str) -> WriteResult {
        self.tag = tag.to_string();
        self
    }

    /// Rows computed already, under `tag` (a SELECT around writes).
    pub fn rows(schema: SchemaRef, batches: Vec<RecordBatch>, tag: &str) -> WriteResult {
        WriteResult {
            tag: tag.to_string(),
            count: None,
            returning: None,
            evaluated: Some((schema, batches)),
        }
    }

    /// RETURNING's rows now, before any commit (a WITH query's rows).
    pub(crate) async fn rows_now(&mut self) -> Result<Option<(SchemaRef, Vec<RecordBatch>)>> {
        match self.evaluated.take() {
            Some(rows) => Ok(Some(rows)),
            None => self.returning_rows(None).await,
        }
    }

    pub fn command(tag: &str) -> WriteResult {
        WriteResult {
            tag: tag.to_string(),
            count: None,
            returning: None,
            evaluated: None,
        }
    }

    /// `commit` is the implicit transaction's commit, `None` inside a transaction block.
    pub async fn finish(mut self, commit: Option<CommitInfo>) -> Result<Output> {
        let rows = match self.evaluated.take() {
            Some(rows) => Some(rows),
            None => self.returning_rows(commit).await?,
        };
        let Some((schema, batches)) = rows else {
            return Ok(Output::Command(match self.count {
                Some(n) => format!("{} {n}", self.tag),
                None => self.tag,
            }));
        };
        Ok(Output::from_batches(schema, batches, &self.tag))
    }

    /// Evaluates RETURNING before the implicit commit, so an error in it (1/0) fails the
    /// statement instead of being reported for a row that was written anyway. The rows are
    /// kept for `finish` unless they show `_etag` or `_timestamp`, which the commit assigns:
    /// only then is RETURNING evaluated again after it.
    pub async fn evaluate_before_commit(&mut self) -> Result<()> {
        let Some(returning) = &self.returning else {
            return Ok(());
        };
        if returning.shows_system_columns() && returning.calls_own_function() {
            // Evaluated twice, `nextval` would take two values and `pg_notify` send twice.
            return Err(Error::Unsupported(
                "RETURNING a system column (_etag, _timestamp) beside a function of the \
                 session's state (nextval, pg_notify, advisory locks) outside a transaction \
                 block"
                    .into(),
            ));
        }
        let rows = self.returning_rows(None).await?;
        if !returning.shows_system_columns() {
            self.evaluated = rows;
        }
        Ok(())
    }

    async fn returning_rows(
        &self,
        commit: Option<CommitInfo>,
    ) -> Result<Option<(SchemaRef, Vec<RecordBatch>)>> {
        let Some(returning) = &self.returning else {
            return Ok(None);
        };
        let batch = returning_batch(returning, commit)?;
        let ctx = scratch_context(&returning.zone, Some(&returning.clock));
        crate::pg_catalog::register_identity(&ctx, &returning.identity);
        for function in &returning.functions {
            ctx.register_udf(function.as_ref().clone());
        }
        let name = returning
            .alias
            .clone()
            .unwrap_or_else(|| returning.def.name.clone());
        // Rows joined with FROM (USING) items meet theirs again by position.
        let numbered = |batch: &RecordBatch| -> Result<RecordBatch> {
            if returning.sources.is_empty() {
                return Ok(batch.clone());
            }
            let mut fields: Vec<Field> = (batch.schema().fields().iter())
                .map(|f| f.as_ref().clone())
                .collect();
            fields.push(Field::new(JOINED_ROW, DataType::Int64, false));
            let mut columns = batch.columns().to_vec();
            columns.push(Arc::new(
                datafusion::arrow::array::Int64Array::from_iter_values(0..batch.num_rows() as i64),
            ));
            Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
                .map_err(datafusion::error::DataFusionError::from)?)
        };
        let mut tables = vec![(name.clone(), numbered(&batch)?)];
        for (source, rows) in &returning.sources {
            tables.push((source.clone(), numbered(rows)?));
        }
        for (table, rows) in &tables {
            let mem = MemTable::try_new(rows.schema(), vec![vec![rows.clone()]])?;
            ctx.register_table(
                datafusion::common::TableReference::bare(table.clone()),
                Arc::new(mem),
            )?;
        }
        let row_of = |table: &str| Expr::CompoundIdentifier(vec![ident(table), ident(JOINED_ROW)]);
        let same_row = (returning.sources.iter())
            .map(|(source, _)| Expr::BinaryOp {
                left: Box::new(row_of(&name)),
                op: ast::BinaryOperator::Eq,
                right: Box::new(row_of(source)),
            })
            .reduce(|a, b| Expr::BinaryOp {
                left: Box::new(a),
                op: ast::BinaryOperator::And,
                right: Box::new(b),
            });
        let mut query = select_query(
            returning.items.clone(),
            tables.iter().map(|(t, _)| table_ref(t, None)).collect(),
            same_row,
        );
        if !returning.sources.is_empty() {
            query.order_by = Some(ast::OrderBy {
                kind: ast::OrderByKind::Expressions(vec![ast::OrderByExpr {
                    expr: row_of(&name),
                    options: ast::OrderByOptions {
                        asc: None,
                        nulls_first: None,
                    },
                    with_fill: None,
                }]),
                interpolate: None,
            });
        }
        let mut stmt = ast::Statement::Query(Box::new(query));
        // `RETURNING *` is the table's columns without `_timestamp` and `_etag`, as `SELECT *`,
        // then the FROM items' columns.
        let visible: Vec<String> = (returning.def.columns.iter())
            .filter(|c| !c.hidden)
            .map(|c| c.name.clone())
            .collect();
        let columns_of = |table: &str| match returning.sources.iter().find(|(s, _)| s == table) {
            Some((_, rows)) => Some(
                (rows.schema().fields().iter())
                    .map(|f| f.name().clone())
                    .filter(|f| {
                        ![TIMESTAMP_COLUMN, ETAG_COLUMN, ROW_ID_COLUMN].contains(&f.as_str())
                    })
                    .collect(),
            ),
            None => Some(visible.clone()),
        };
        crate::wildcard::expand_wildcards(&mut stmt, &columns_of);
        let renames = crate::naming::alias_result_columns(&mut stmt)?;
        let plan = scratch_plan(&ctx, stmt).await?;
        let schema = crate::session::rename_fields(crate::session::result_schema(&plan), &renames);
        let batches = ctx.execute_logical_plan(plan).await?.collect().await?;
        Ok(Some((schema, batches)))
    }
}

/// Refuses, before anything is written, an aggregate in an INSERT's, UPDATE's or DELETE's
/// RETURNING (42803), as PostgreSQL does (one inside a subquery there is the subquery's),
/// and a subquery there that reads a table (0A000): RETURNING is computed over the written
/// rows alone, where such a subquery would not see the table's other rows.
pub(crate) fn check_returning(stmt: &ast::Statement) -> Result<()> {
    use std::ops::ControlFlow;
    let items = match stmt {
        ast::Statement::Insert(insert) => insert.returning.as_ref(),
        ast::Statement::Update(update) => update.returning.as_ref(),
        ast::Statement::Delete(delete) => delete.returning.as_ref(),
        _ => None,
    };
    struct Finder {
        depth: usize,
        reads_table: bool,
    }
    impl ast::Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _: &ast::Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, factor: &ast::TableFactor) -> ControlFlow<()> {
            // A table or view (functions, `unnest` and VALUES read no table).
            if let ast::TableFactor::Table { args: None, .. } = factor {
                self.reads_table = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &ast::Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Function(f)
                    if self.depth == 0
                        && f.over.is_none()
                        && crate::json::function_name(&f.name).is_some_and(|n| {
                            crate::lateral_limit::AGGREGATES.contains(&n.as_str())
                        }) =>
                {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
    }
    let mut finder = Finder {
        depth: 0,
        reads_table: false,
    };
    match items.is_some_and(|items| ast::Visit::visit(items, &mut finder).is_break()) {
        true if finder.reads_table => Err(Error::Unsupported(
            "a subquery that reads a table in RETURNING".into(),
        )),
        true => Err(Error::Grouping(
            "aggregate functions are not allowed in RETURNING".into(),
        )),
        false => Ok(()),
    }
}

impl Returning {
    fn shows_system_columns(&self) -> bool {
        let query = select_query(self.items.clone(), vec![], None);
        crate::session::mentions_system_column(&ast::Statement::Query(Box::new(query)))
    }

    /// Whether RETURNING calls a function that changes the session's state
    /// (`Session::own_functions` but those that only read it).
    fn calls_own_function(&self) -> bool {
        use std::ops::ControlFlow;
        let query = select_query(self.items.clone(), vec![], None);
        let found = ast::visit_expressions(&query, |e| match e {
            Expr::Function(f)
                if crate::json::function_name(&f.name).is_some_and(|n| {
                    crate::session::SESSION_FUNCTIONS.contains(&n.as_str())
                        && !["pg_backend_pid", "currval", "lastval", "current_setting"]
                            .contains(&n.as_str())
                }) =>
            {
                ControlFlow::Break(())
            }
            _ => ControlFlow::Continue(()),
        });
        found.is_break()
    }
}

/// The number RETURNING shows as `xmax` for the rows a transaction deleted or locked: one more than
/// the commit sequence its snapshot was taken at, so never 0.
fn transaction_number(txn: &SharedTxn) -> Result<i64> {
    Ok(crate::provider::in_txn(txn, |t| Ok(t.start_seq()))? as i64 + 1)
}

/// The rows for RETURNING as a batch with every column, hidden ones and system columns too
/// (`xmax` among them unless the table has a column of that name).
fn returning_batch(r: &Returning, commit: Option<CommitInfo>) -> Result<RecordBatch> {
    let def = &r.def;
    let mut fields: Vec<Field> = def
        .columns
        .iter()
        .map(|c| c.ty.field_in(&c.name, true, &r.zone))
        .collect();
    fields.push(sql::SqlType::TimestampTz { precision: None }.field_in(
        TIMESTAMP_COLUMN,
        true,
        &r.zone,
    ));
    fields.push(Field::new(ETAG_COLUMN, DataType::Utf8, true));
    let xmax = def.column_index(XMAX).is_none();
    if xmax {
        fields.push(Field::new(XMAX, DataType::Int64, false));
    }
    let mut builders: Vec<ColumnBuilder> = def
        .columns
        .iter()
        .map(|c| ColumnBuilder::new(c.ty, r.rows.len()))
        .collect();
    let mut ts = TimestampMicrosecondBuilder::new().with_timezone("+00:00");
    let mut etags = StringBuilder::new();
    for row in &r.rows {
        for (builder, value) in builders.iter_mut().zip(&row.values) {
            builder.append(value.as_ref())?;
        }
        let stamp = if r.deleted {
            row.old_stamp
        } else {
            commit.map(|c| (c.timestamp_micros, c.seq))
        };
        ts.append_option(stamp.map(|(t, _)| t as i64));
        etags.append_option(stamp.map(|(_, v)| etag_text(v)));
    }
    let mut columns: Vec<_> = builders.into_iter().map(ColumnBuilder::finish).collect();
    columns.push(Arc::new(ts.finish()));
    columns.push(Arc::new(etags.finish()));
    if xmax {
        columns.push(Arc::new(
            datafusion::arrow::array::Int64Array::from_iter_values(
                r.rows
                    .iter()
                    .map(|row| if row.replaced { r.xid } else { 0 }),
            ),
        ));
    }
    let columns = in_zone(columns, &fields);
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(datafusion::error::DataFusionError::from)?)
}

/// A context for evaluating expressions over in-memory rows (RETURNING, ON CONFLICT).
/// Evaluates with the session's meaning of expressions: its time zone, PostgreSQL's
/// numeric scales, the same functions.
pub(crate) fn scratch_context(
    zone: &str,
    clock: Option<&crate::functions::TransactionStart>,
) -> SessionContext {
    scratch_context_with(zone, clock, Vec::new())
}

/// `scratch_context` that knows the types made by CREATE TYPE (`user`), for expressions
/// that name one (`USING note::status`).
pub(crate) fn scratch_context_with(
    zone: &str,
    clock: Option<&crate::functions::TransactionStart>,
    user: Vec<sql::SqlType>,
) -> SessionContext {
    let mut config = datafusion::execution::context::SessionConfig::new()
        .with_target_partitions(1)
        .set_str("datafusion.sql_parser.dialect", "postgres")
        .set_bool("datafusion.sql_parser.parse_float_as_decimal", true);
    config.options_mut().execution.time_zone = Some(zone.to_string());
    let types = crate::casts::PostgresTypes::default();
    types.set_zone(zone);
    types.set_user_types(user);
    let state = datafusion::execution::session_state::SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_type_planner(std::sync::Arc::new(types))
        .with_analyzer_rules(crate::semantics::analyzer_rules())
        .build();
    let ctx = SessionContext::new_with_state(state);
    crate::functions::register(&ctx);
    // Without the session's clock, made for one statement: its clock starts now.
    let start = clock.cloned().unwrap_or_else(|| {
        let start = crate::functions::TransactionStart::default();
        start.set(None);
        start
    });
    for clock in crate::functions::clock_functions(&start) {
        let clock = clock
            .inner()
            .with_updated_config(ctx.state().config().options())
            .unwrap_or(clock);
        ctx.register_udf(clock);
    }
    ctx
}

/// Plans a statement over a scratch context's in-memory tables.
pub(crate) async fn scratch_plan(
    ctx: &SessionContext,
    mut stmt: ast::Statement,
) -> Result<datafusion::logical_expr::LogicalPlan> {
    crate::numeric::rewrite_numeric_casts(&mut stmt);
    Ok(ctx
        .state()
        .statement_to_plan(datafusion::sql::parser::Statement::Statement(Box::new(
            stmt,
        )))
        .await?)
}

/// Stored instants labelled with the zone their fields declare (see `provider::in_zone`).
fn in_zone(
    columns: Vec<datafusion::arrow::array::ArrayRef>,
    fields: &[Field],
) -> Vec<datafusion::arrow::array::ArrayRef> {
    columns
        .into_iter()
        .zip(fields)
        .map(|(array, field)| crate::provider::in_zone(array, field.data_type()))
        .collect()
}

fn ident(name: &str) -> Ident {
    Ident::with_quote('"', name)
}

fn column_expr(name: &str) -> Expr {
    Expr::Identifier(ident(name))
}

fn cast(expr: Expr, ty: sql::SqlType) -> Expr {
    if ty == sql::SqlType::Bytea {
        // Text becomes bytea by PostgreSQL's rules (`\x0102`), in `value_from_array`;
        // DataFusion's cast would keep the characters' bytes.
        return expr;
    }
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(expr),
        data_type: ty.to_ast(),
        array: false,
        format: None,
    }
}

fn null() -> Expr {
    Expr::Value(AstValue::Null.into())
}

pub(crate) fn table_ref(name: &str, alias: Option<TableAlias>) -> TableWithJoins {
    TableWithJoins {
        relation: TableFactor::Table {
            name: ObjectName::from(vec![ident(name)]),
            alias,
            args: None,
            with_hints: vec![],
            version: None,
            with_ordinality: false,
            partitions: vec![],
            json_path: None,
            sample: None,
            index_hints: vec![],
        },
        joins: vec![],
    }
}

pub(crate) fn select_query(
    projection: Vec<SelectItem>,
    from: Vec<TableWithJoins>,
    selection: Option<Expr>,
) -> Query {
    let select = Select {
        select_token: ast::helpers::attached_token::AttachedToken::empty(),
        optimizer_hints: vec![],
        distinct: None,
        select_modifiers: None,
        top: None,
        top_before_distinct: false,
        projection,
        exclude: None,
        into: None,
        from,
        lateral_views: vec![],
        prewhere: None,
        selection,
        connect_by: vec![],
        group_by: GroupByExpr::Expressions(vec![], vec![]),
        cluster_by: vec![],
        distribute_by: vec![],
        sort_by: vec![],
        having: None,
        named_window: vec![],
        qualify: None,
        window_before_qualify: false,
        value_table_mode: None,
        flavor: SelectFlavor::Standard,
    };
    plain_query(None, SetExpr::Select(Box::new(select)))
}

/// A query of `body` after `with`, with no ORDER BY, LIMIT or other clauses.
pub(crate) fn plain_query(with: Option<ast::With>, body: SetExpr) -> Query {
    Query {
        with,
        body: Box::new(body),
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks: vec![],
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators: vec![],
    }
}

pub(crate) fn named(expr: Expr, alias: &str) -> SelectItem {
    SelectItem::ExprWithAlias {
        expr,
        alias: ident(alias),
    }
}

impl Session {
    /// A table as this session's transaction sees it (42P01 if unknown).
    pub(crate) fn table_def(&self, name: &str) -> Result<Arc<TableDef>> {
        let scope = self.scope.lock().unwrap_or_else(|e| e.into_inner());
        self.db
            .catalog
            .table(name, &scope.changes)
            .ok_or_else(|| Error::Sql(sql::Error::UnknownTable(name.to_string())))
    }

    /// The table an INSERT, UPDATE or DELETE writes: as `table_def`, but a sequence is the
    /// wrong kind of object (42809), as in PostgreSQL.
    pub(crate) fn written_table_def(&self, name: &str) -> Result<Arc<TableDef>> {
        self.table_def(name).map_err(|e| {
            let scope = self.scope.lock().unwrap_or_else(|e| e.into_inner());
            match self.db.catalog.sequence_exists(name, &scope.changes) {
                true => Error::WrongObjectType(format!("cannot change sequence \"{name}\"")),
                false => e,
            }
        })
    }

    /// Plans and runs a query, collecting its batches.
    pub(crate) async fn collect_query(
        &self,
        query: Query,
        system_columns: bool,
    ) -> Result<Vec<RecordBatch>> {
        Ok(self.collect_query_schema(query, system_columns).await?.1)
    }

    /// [`Session::collect_query`] with the result's schema, which holds when no batch came.
    pub(crate) async fn collect_query_schema(
        &self,
        query: Query,
        system_columns: bool,
    ) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        self.begin_statement(system_columns);
        let state = self.ctx.state();
        let plan = state
            .statement_to_plan(datafusion::sql::parser::Statement::Statement(Box::new(
                ast::Statement::Query(Box::new(query)),
            )))
            .await?;
        let df = self.ctx.execute_logical_plan(plan).await?;
        let schema = Arc::new(df.schema().as_arrow().clone());
        Ok((schema, self.db.executor.collect(df, &self.interrupt).await?))
    }
}

/// Row ids for tables without a primary key: microseconds since the epoch shifted left, made
/// strictly increasing within the process; unique across restarts as long as the clock does
/// not run backwards by more than the restart takes.
fn next_row_id() -> i64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
        << 8;
    let mut prev = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(prev + 1);
        match LAST.compare_exchange_weak(prev, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return (next & (i64::MAX as u64)) as i64,
            Err(p) => prev = p,
        }
    }
}

/// Encodes a full row's key; NULL key columns are 23502.
pub(crate) fn row_key(
    def: &TableDef,
    layout: &storage::KeyLayout,
    values: &[Value],
) -> Result<Vec<u8>> {
    let pick = |i: usize| -> Result<Value> {
        let v = values[i].clone();
        if v.is_null() {
            return Err(Error::NotNull {
                table: def.name.clone(),
                column: def.columns[i].name.clone(),
                row: crate::conditions::failing_row(def, values),
            });
        }
        Ok(v)
    };
    let pk = def
        .partition_key
        .iter()
        .map(|&i| pick(i))
        .collect::<Result<Vec<_>>>()?;
    let rk = def
        .row_key
        .iter()
        .map(|p| pick(p.column))
        .collect::<Result<Vec<_>>>()?;
    Ok(layout.encode(&pk, &rk)?)
}

pub(crate) fn check_not_null(def: &TableDef, values: &[Value]) -> Result<()> {
    for (col, value) in def.columns.iter().zip(values) {
        if !col.nullable && value.is_null() {
            return Err(Error::NotNull {
                table: def.name.clone(),
                column: col.name.clone(),
                row: crate::conditions::failing_row(def, values),
            });
        }
    }
    Ok(())
}

fn duplicate_key(def: &TableDef, values: &[Value]) -> Error {
    let key_cols = def.key_columns();
    let names: Vec<&str> = key_cols
        .iter()
        .map(|&i| def.columns[i].name.as_str())
        .collect();
    let vals: Vec<String> = key_cols
        .iter()
        .map(|&i| crate::text::value_text(&values[i]))
        .collect();
    Error::UniqueViolation {
        table: def.name.clone(),
        constraint: def.primary_key_name(),
        detail: format!(
            "Key ({})=({}) already exists.",
            names.join(", "),
            vals.join(", ")
        ),
    }
}

fn encode(def: &TableDef, values: &[Value]) -> Vec<u8> {
    storage::rowcodec::encode_row(def.schema_version, values)
}

/// Reads row `r` of a batch whose first columns are the table's stored columns, in order.
fn stored_row(def: &TableDef, batch: &RecordBatch, r: usize) -> Result<Vec<Value>> {
    def.columns
        .iter()
        .enumerate()
        .map(|(i, col)| value_from_array(batch.column(i), r, col.ty, &col.name))
        .collect()
}

/// Reads every stored column of every row of `batches` (in table column order, as produced by
/// the queries below) into values.
fn rows_of(def: &TableDef, batches: &[RecordBatch], offset: usize) -> Result<Vec<Vec<Value>>> {
    let mut rows = Vec::new();
    for batch in batches {
        for r in 0..batch.num_rows() {
            let mut values = Vec::with_capacity(def.columns.len());
            for (i, col) in def.columns.iter().enumerate() {
                values.push(value_from_array(
                    batch.column(offset + i),
                    r,
                    col.ty,
                    &col.name,
                )?);
            }
            rows.push(values);
        }
    }
    Ok(rows)
}

/// Reads the table's catalog record in the writing transaction: a concurrent DROP TABLE,
/// ALTER TABLE, CREATE INDEX or DROP INDEX then makes the write conflict (40001) instead of
/// writing under a definition that no longer holds (and missing an index).
pub(crate) fn track_table(session: &Session, txn: &SharedTxn, name: &str) -> Result<()> {
    if session.table_def(name)?.view.is_some() {
        return Err(Error::WrongObjectType(format!(
            "cannot change materialized view \"{name}\""
        )));
    }
    crate::provider::in_txn(txn, |t| Ok(session.db.catalog.track_read(t, name)?))
}

/// `INSERT … OVERRIDING {SYSTEM | USER} VALUE`, which sqlparser does not read: `parse_sql`
/// takes the words out before parsing ([`take_overriding`]) and marks the INSERT with them
/// ([`mark_overriding`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overriding {
    System,
    User,
}

/// The hint prefix that marks an INSERT's OVERRIDING clause.
const OVERRIDING_HINT: &str = "partitaoverriding";

/// Blanks out each `OVERRIDING {SYSTEM | USER} VALUE` of `tokens`, returning where each was.
pub(crate) fn take_overriding(
    tokens: &mut [datafusion::sql::sqlparser::tokenizer::TokenWithSpan],
) -> Vec<(usize, Overriding)> {
    use datafusion::sql::sqlparser::tokenizer::{Token, Whitespace};
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let mut found = Vec::new();
    for at in 0..tokens.len() {
        if !word(&tokens[at].token, "overriding") {
            continue;
        }
        let next: Vec<usize> = (at + 1..tokens.len())
            .filter(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
            .take(2)
            .collect();
        let [kind, value] = next[..] else {
            continue;
        };
        let overriding = match &tokens[kind].token {
            t if word(t, "system") => Overriding::System,
            t if word(t, "user") => Overriding::User,
            _ => continue,
        };
        if !word(&tokens[value].token, "value") {
            continue;
        }
        for j in [at, kind, value] {
            tokens[j].token = Token::Whitespace(Whitespace::Space);
        }
        found.push((at, overriding));
    }
    found
}

/// `INSERT … SELECT … ORDER BY keys`: rows are inserted in that order (serial values, which
/// of two conflicting rows wins), as in PostgreSQL. The source becomes a derived table, and
/// DataFusion drops a sort nothing above it asks for; so its keys that are not among its
/// columns (`src_cols`) are added to its select list as `__partita_ord_<n>`, and the ORDER
/// BY for the outer query and those added columns' names are returned. A source that is not
/// a plain SELECT, or is DISTINCT, keeps its order to itself.
fn carried_order(source: &mut Query, src_cols: &[String]) -> (Option<ast::OrderBy>, Vec<String>) {
    let Some(ast::OrderBy {
        kind: ast::OrderByKind::Expressions(items),
        ..
    }) = &source.order_by
    else {
        return (None, vec![]);
    };
    let SetExpr::Select(select) = source.body.as_mut() else {
        return (None, vec![]);
    };
    if select.distinct.is_some() {
        return (None, vec![]);
    }
    // The source's output names, by position.
    let names: Vec<Option<String>> = select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(normalize_ident(alias)),
            SelectItem::UnnamedExpr(Expr::Identifier(id)) => Some(normalize_ident(id)),
            _ => None,
        })
        .collect();
    let mut keys = Vec::new();
    let mut outer = Vec::with_capacity(items.len());
    for item in items {
        let position = match &item.expr {
            Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => n.parse::<usize>().ok().and_then(|n| n.checked_sub(1)),
                _ => None,
            },
            Expr::Identifier(id) => names
                .iter()
                .position(|n| n.as_deref() == Some(normalize_ident(id).as_str())),
            _ => None,
        };
        let column = match position.and_then(|p| src_cols.get(p)) {
            Some(column) => column.clone(),
            None => {
                let name = format!("__partita_ord_{}", keys.len());
                select.projection.push(SelectItem::ExprWithAlias {
                    expr: item.expr.clone(),
                    alias: ident(&name),
                });
                keys.push(name.clone());
                name
            }
        };
        outer.push(ast::OrderByExpr {
            expr: Expr::CompoundIdentifier(vec![ident("__partita_src"), ident(&column)]),
            options: item.options,
            with_fill: None,
        });
    }
    let order = ast::OrderBy {
        kind: ast::OrderByKind::Expressions(outer),
        interpolate: None,
    };
    (Some(order), keys)
}

/// The hint prefixes that carry what sqlparser has no place for in an INSERT's ON CONFLICT
/// target: the WHERE of `ON CONFLICT (columns) WHERE …`, and a target list naming index
/// expressions (`ON CONFLICT (lower(email))`; sqlparser takes column names only).
const CONFLICT_WHERE_HINT: &str = "partitaconflictwhere";
const CONFLICT_TARGET_HINT: &str = "partitaconflicttarget";

/// What [`take_conflict_targets`] took out of one `ON CONFLICT (…)`: where its target list
/// begins (the first token inside the parentheses, which names the INSERT's first target
/// column once parsed), the WHERE condition's text and the target list's text when it names
/// an expression.
pub(crate) struct ConflictTarget {
    first: datafusion::sql::sqlparser::tokenizer::Location,
    condition: Option<String>,
    expressions: Option<String>,
}

/// Takes out of `tokens` (of `text`) what sqlparser cannot read in each `ON CONFLICT
/// (targets) [WHERE condition] DO …`: the WHERE condition is blanked out, and a target list
/// with an expression in it becomes a list of one placeholder column.
pub(crate) fn take_conflict_targets(
    text: &str,
    tokens: &mut [datafusion::sql::sqlparser::tokenizer::TokenWithSpan],
) -> Vec<ConflictTarget> {
    use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let significant = |tokens: &[TokenWithSpan], from: usize| {
        (from..tokens.len()).find(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
    };
    // The text from token `from` up to token `to` as written (tokens are unescaped).
    let source = |tokens: &[TokenWithSpan], from: usize, to: usize| {
        let offset = |t: &TokenWithSpan| {
            crate::session::byte_offset(text, t.span.start.line, t.span.start.column)
        };
        let from = offset(&tokens[from])?;
        let to = offset(&tokens[to])?;
        Some(text.get(from..to)?.trim().to_string())
    };
    // The matching `)` of the `(` at `open`, and the first token at depth 0 after `from`
    // that is `word`.
    let closing = |tokens: &[TokenWithSpan], open: usize| {
        let mut depth = 0;
        (open..tokens.len()).find(|&j| {
            match tokens[j].token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            depth == 0
        })
    };
    let mut found = Vec::new();
    for at in 0..tokens.len() {
        if !word(&tokens[at].token, "conflict") {
            continue;
        }
        let after_on = (0..at)
            .rev()
            .find(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
            .is_some_and(|j| word(&tokens[j].token, "on"));
        if !after_on {
            continue;
        }
        // `(targets)`, then WHERE … or DO: an INSERT's (`CREATE INDEX ON conflict (…)`
        // names a table).
        let Some(open) = significant(tokens, at + 1).filter(|&j| tokens[j].token == Token::LParen)
        else {
            continue;
        };
        let Some(close) = closing(tokens, open) else {
            continue;
        };
        let Some(first) = significant(tokens, open + 1).filter(|&j| j < close) else {
            continue;
        };
        let Some(next) = significant(tokens, close + 1) else {
            continue;
        };
        let mut condition = None;
        if word(&tokens[next].token, "where") {
            // The condition runs to DO outside parentheses.
            let mut depth = 0;
            let Some(do_at) = (next + 1..tokens.len()).find(|&j| {
                match tokens[j].token {
                    Token::LParen => depth += 1,
                    Token::RParen => depth -= 1,
                    _ => {}
                }
                depth == 0 && word(&tokens[j].token, "do")
            }) else {
                continue;
            };
            // Not past the statement's end.
            if tokens[next..do_at]
                .iter()
                .any(|t| t.token == Token::SemiColon)
            {
                continue;
            }
            let Some(text) = source(tokens, next + 1, do_at) else {
                continue;
            };
            condition = Some(text);
            for t in &mut tokens[next..do_at] {
                t.token = Token::Whitespace(Whitespace::Space);
            }
        } else if !word(&tokens[next].token, "do") {
            continue;
        }
        // Anything but column names and commas is an expression.
        let expression = tokens[open + 1..close].iter().any(|t| {
            !matches!(
                t.token,
                Token::Word(_) | Token::Comma | Token::Whitespace(_)
            )
        });
        let mut expressions = None;
        if expression && let Some(text) = source(tokens, open + 1, close) {
            expressions = Some(text);
            for (n, t) in tokens[first..close].iter_mut().enumerate() {
                t.token = match n {
                    0 => Token::make_word(CONFLICT_TARGET_HINT, None),
                    _ => Token::Whitespace(Whitespace::Space),
                };
            }
        }
        if condition.is_some() || expressions.is_some() {
            found.push(ConflictTarget {
                first: tokens[first].span.start,
                condition,
                expressions,
            });
        }
    }
    found
}

/// Marks each INSERT of `stmt` (a CTE's or a PREPARE's too) with what
/// [`take_conflict_targets`] took out of its ON CONFLICT, found by where its first target
/// column was written.
pub(crate) fn mark_conflict_targets(stmt: &mut ast::Statement, targets: &[ConflictTarget]) {
    if targets.is_empty() {
        return;
    }
    let _ = ast::visit_statements_mut(stmt, |s| {
        if let ast::Statement::Insert(insert) = s
            && let Some(OnInsert::OnConflict(ast::OnConflict {
                conflict_target: Some(ast::ConflictTarget::Columns(columns)),
                ..
            })) = &insert.on
            && let Some(first) = columns.first()
            && let Some(target) = targets.iter().find(|t| t.first == first.span.start)
        {
            let hints = [
                (CONFLICT_WHERE_HINT, &target.condition),
                (CONFLICT_TARGET_HINT, &target.expressions),
            ];
            for (prefix, text) in hints {
                if let Some(text) = text {
                    insert.optimizer_hints.push(ast::OptimizerHint {
                        prefix: prefix.into(),
                        text: text.clone(),
                        style: ast::OptimizerHintStyle::MultiLine,
                    });
                }
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

/// What hint `prefix` of `insert` carries.
fn insert_hint<'a>(insert: &'a ast::Insert, prefix: &str) -> Option<&'a str> {
    insert
        .optimizer_hints
        .iter()
        .find(|h| h.prefix == prefix)
        .map(|h| h.text.as_str())
}

/// Marks the INSERT `stmt` with its OVERRIDING clause; another statement has none.
pub(crate) fn mark_overriding(stmt: &mut ast::Statement, overriding: Overriding) -> Result<()> {
    let insert = match stmt {
        ast::Statement::Insert(insert) => Some(insert),
        ast::Statement::Explain { statement, .. } => match statement.as_mut() {
            ast::Statement::Insert(insert) => Some(insert),
            _ => None,
        },
        _ => None,
    };
    let Some(insert) = insert else {
        return Err(Error::Syntax(
            "syntax error at or near \"OVERRIDING\"".into(),
        ));
    };
    insert.optimizer_hints.push(ast::OptimizerHint {
        prefix: OVERRIDING_HINT.into(),
        text: format!("{overriding:?}"),
        style: ast::OptimizerHintStyle::MultiLine,
    });
    Ok(())
}

/// The OVERRIDING clause of `insert`.
pub(crate) fn overriding(insert: &ast::Insert) -> Option<Overriding> {
    let hint = insert
        .optimizer_hints
        .iter()
        .find(|h| h.prefix == OVERRIDING_HINT)?;
    Some(match hint.text.as_str() {
        "System" => Overriding::System,
        _ => Overriding::User,
    })
}

/// How many columns the query `source` gives: its select list's length when that has no
/// `*`, else the width of its plan.
async fn source_width(session: &Session, source: &ast::Query) -> Result<usize> {
    let mut body = source.body.as_ref();
    while let SetExpr::SetOperation { left, .. } = body {
        body = left.as_ref();
    }
    if let SetExpr::Select(select) = body
        && !select.projection.iter().any(|item| {
            matches!(
                item,
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
            )
        })
    {
        return Ok(select.projection.len());
    }
    let mut query = ast::Statement::Query(Box::new(source.clone()));
    session.expand_views(&mut query)?;
    Ok(session.plan(query).await?.schema().fields().len())
}

pub async fn insert(session: &mut Session, insert: &ast::Insert) -> Result<WriteResult> {
    let name = match &insert.table {
        TableObject::TableName(n) => table_name(n)?,
        other => return Err(Error::Unsupported(format!("INSERT INTO {other}"))),
    };
    let def = session.written_table_def(&name)?;
    let txn = session.open_txn()?;
    track_table(session, &txn, &name)?;

    // Target columns: the list given, else every visible column in order (as many as an
    // INSERT … SELECT gives).
    let targets: Vec<usize> = if insert.columns.is_empty() {
        let mut all: Vec<usize> = (0..def.columns.len())
            .filter(|&i| !def.columns[i].hidden)
            .collect();
        if let Some(source) = insert.source.as_ref()
            && !matches!(source.body.as_ref(), SetExpr::Values(_))
        {
            let width = source_width(session, source).await?;
            if width > all.len() {
                return Err(Error::InvalidStatement(
                    "INSERT has more expressions than target columns".into(),
                ));
            }
            all.truncate(width);
        }
        all
    } else {
        let mut seen = Vec::new();
        for col in &insert.columns {
            let col_name = col
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(normalize_ident)
                .unwrap_or_default();
            let (i, c) = def.column(&col_name)?;
            if c.hidden {
                return Err(Error::Sql(sql::Error::UnknownColumn {
                    table: def.name.clone(),
                    column: col_name,
                }));
            }
            if seen.contains(&i) {
                return Err(Error::Sql(sql::Error::DuplicateColumn(col_name)));
            }
            seen.push(i);
        }
        seen
    };

    let default_expr = |i: usize| -> Result<Expr> {
        let col = &def.columns[i];
        Ok(match &col.default {
            Some(text) => cast(parse_expr(text)?, col.ty),
            None => cast(null(), col.ty),
        })
    };
    // Whether column `i`'s given value gives way to its default: an identity column's
    // does with OVERRIDING USER VALUE; a GENERATED ALWAYS one's may stand only with
    // OVERRIDING SYSTEM VALUE.
    let overriding = overriding(insert);
    let identity_default = |i: usize| -> Result<bool> {
        if def.columns[i].generated.is_some() {
            return Err(Error::GeneratedAlways {
                column: def.columns[i].name.clone(),
                insert: true,
                expression: true,
            });
        }
        match (def.columns[i].identity, overriding) {
            (Some(_), Some(Overriding::User)) => Ok(true),
            (Some(Identity::Always), None) => Err(Error::GeneratedAlways {
                column: def.columns[i].name.clone(),
                insert: true,
                expression: false,
            }),
            _ => Ok(false),
        }
    };
    let stored: Vec<usize> = (0..def.columns.len())
        .filter(|&i| !def.columns[i].hidden)
        .collect();

    let source = insert.source.as_ref();
    // Serial defaults of an INSERT … SELECT … ORDER BY, which the writer hands out in the
    // rows' order (the query would number them before its sort): column and sequence.
    let mut ordered_serials: Vec<(usize, sql::catalog::Sequence)> = Vec::new();
    let query = match source.map(|q| q.body.as_ref()) {
        // VALUES: cast each value in place; DEFAULT and omitted columns take the default.
        Some(SetExpr::Values(values))
            if source.is_some_and(|q| q.order_by.is_none() && q.limit_clause.is_none()) =>
        {
            let mut rows = Vec::with_capacity(values.rows.len());
            for row in &values.rows {
                if row.len() > targets.len() {
                    return Err(Error::InvalidStatement(
                        "INSERT has more expressions than target columns".into(),
                    ));
                }
                // Without a column list the last columns may be left out; with one, each
                // named column needs its value.
                if row.len() < targets.len() && !insert.columns.is_empty() {
                    return Err(Error::InvalidStatement(
                        "INSERT has more target columns than expressions".into(),
                    ));
                }
                let mut out = Vec::with_capacity(stored.len());
                for &i in &stored {
                    let given = targets
                        .iter()
                        .position(|&t| t == i)
                        .and_then(|p| row.get(p));
                    out.push(match given {
                        Some(Expr::Identifier(id))
                            if id.quote_style.is_none()
                                && id.value.eq_ignore_ascii_case("default") =>
                        {
                            default_expr(i)?
                        }
                        Some(_) if identity_default(i)? => default_expr(i)?,
                        Some(expr) => cast(expr.clone(), def.columns[i].ty),
                        None => default_expr(i)?,
                    });
                }
                rows.push(ast::Parens::with_empty_span(out));
            }
            let mut q = select_query(vec![SelectItem::Wildcard(Default::default())], vec![], None);
            q.body = Box::new(SetExpr::Values(Values {
                explicit_row: false,
                value_keyword: false,
                rows,
            }));
            q
        }
        Some(_) => {
            // INSERT … SELECT: name the source's columns, cast them, add defaults.
            let mut source = (**source.expect("matched Some")).clone();
            crate::naming::alias_query_columns(&mut source)?;
            let src_cols: Vec<String> = (0..targets.len())
                .map(|i| format!("__partita_src_{i}"))
                .collect();
            let (order, keys) = carried_order(&mut source, &src_cols);
            let changes = crate::sequences::session_changes(session);
            let mut projection = Vec::with_capacity(stored.len());
            for &i in &stored {
                let defaulted = match targets.iter().position(|&t| t == i) {
                    Some(_) if identity_default(i)? => true,
                    Some(p) => {
                        let expr = cast(column_expr(&src_cols[p]), def.columns[i].ty);
                        projection.push(named(expr, &def.columns[i].name));
                        continue;
                    }
                    None => true,
                };
                let sequence = def.columns[i]
                    .default
                    .as_deref()
                    .filter(|_| order.is_some() && defaulted)
                    .and_then(|d| {
                        crate::sequences::default_sequence(&session.db.catalog, &changes, d)
                    });
                let expr = match sequence {
                    Some(sequence) => {
                        ordered_serials.push((i, sequence));
                        cast(null(), def.columns[i].ty)
                    }
                    None => default_expr(i)?,
                };
                projection.push(named(expr, &def.columns[i].name));
            }
            let derived = TableWithJoins {
                relation: TableFactor::Derived {
                    lateral: false,
                    subquery: Box::new(source),
                    alias: Some(TableAlias {
                        explicit: true,
                        name: ident("__partita_src"),
                        columns: src_cols
                            .iter()
                            .chain(&keys)
                            .map(|c| ast::TableAliasColumnDef::from_name(c.as_str()))
                            .collect(),
                        at: None,
                    }),
                    sample: None,
                },
                joins: vec![],
            };
            let mut query = select_query(projection, vec![derived], None);
            query.order_by = order;
            query
        }
        None => {
            // DEFAULT VALUES
            let projection = stored
                .iter()
                .map(|&i| Ok(named(default_expr(i)?, &def.columns[i].name)))
                .collect::<Result<Vec<_>>>()?;
            select_query(projection, vec![], None)
        }
    };

    let batches = session.collect_query(query, false).await?;
    let layout = def.layout()?;
    let on_conflict = match &insert.on {
        None => None,
        Some(OnInsert::OnConflict(c)) => Some(c.clone()),
        Some(other) => return Err(Error::Unsupported(format!("INSERT … {other}"))),
    };
    let arbiter = on_conflict
        .as_ref()
        .map(|c| conflict_arbiter(&def, c, insert))
        .transpose()?
        .flatten();
    // DO UPDATE's SET names columns of the table, conflicts or not.
    if let Some(OnConflictAction::DoUpdate(update)) = on_conflict.as_ref().map(|c| &c.action) {
        for assignment in &update.assignments {
            assignment_targets(&def, assignment)?;
        }
    }
    // RETURNING's rows, each with its place among the statement's rows: the rows DO UPDATE
    // updates are written after the others, and returned in their place.
    let mut written: Vec<(usize, WrittenRow)> = Vec::new();
    let mut place = 0usize;
    let mut count = 0usize;
    let mut updates: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
    let mut update_places = Vec::new();
    // Rows this statement inserted or is updating: DO UPDATE may not touch one twice.
    let mut touched: std::collections::HashSet<Vec<u8>> = Default::default();
    let do_update = matches!(
        on_conflict.as_ref().map(|c| &c.action),
        Some(OnConflictAction::DoUpdate(_))
    );
    let mut references = crate::foreign::Pending::new(&def);
    for batch in &batches {
        for r in 0..batch.num_rows() {
            let mut values = Vec::with_capacity(def.columns.len());
            let mut col_in_batch = 0;
            for col in def.columns.iter() {
                if col.hidden {
                    values.push(if col.name == ROW_ID_COLUMN {
                        Value::Int8(next_row_id())
                    } else {
                        Value::Null
                    });
                } else {
                    values.push(value_from_array(
                        batch.column(col_in_batch),
                        r,
                        col.ty,
                        &col.name,
                    )?);
                    col_in_batch += 1;
                }
            }
            // Taken row by row, as PostgreSQL's defaults are: a row that fails takes the
            // last value.
            for (i, sequence) in &ordered_serials {
                let number = session.db.catalog.next_of(&session.db.store, sequence)?;
                session.sequence_values.record(&sequence.name, number);
                let column = &def.columns[*i];
                let number: datafusion::arrow::array::ArrayRef =
                    Arc::new(datafusion::arrow::array::Int64Array::from(vec![number]));
                values[*i] = match value_from_array(&number, 0, column.ty, &column.name)? {
                    // The conversion gives NULL for a value the type cannot hold.
                    Value::Null => {
                        return Err(Error::NumericOverflow(match column.ty {
                            sql::SqlType::Int2 => "smallint out of range".into(),
                            sql::SqlType::Int4 => "integer out of range".into(),
                            _ => "numeric field overflow".into(),
                        }));
                    }
                    value => value,
                };
            }
            crate::conditions::generate(&def, &mut values)?;
            check_not_null(&def, &values)?;
            crate::conditions::verify(&def, &values)?;
            let key = row_key(&def, &layout, &values)?;
            // The arbiter's existing row: by primary key, or by the unique index the
            // conflict target names.
            let existing = match arbiter {
                Some(Arbiter::Unique(i)) => {
                    match crate::index::unique_holder(&def, &def.indexes[i], &txn, &values)? {
                        Some(old) => Some(old),
                        None if with_txn(&txn, |t| t.get(def.keyspace, &key))?.is_some() => {
                            return Err(duplicate_key(&def, &values));
                        }
                        None => None,
                    }
                }
                // Columns added after the row was written hold their ADD COLUMN default.
                _ => with_txn(&txn, |t| t.get(def.keyspace, &key))?
                    .map(|existing| crate::provider::stored_values(&def, &existing.value))
                    .transpose()?,
            };
            if let Some(old) = existing {
                match on_conflict.as_ref().map(|c| &c.action) {
                    None => return Err(duplicate_key(&def, &values)),
                    Some(OnConflictAction::DoNothing) => continue,
                    Some(OnConflictAction::DoUpdate(_)) => {
                        if !touched.insert(row_key(&def, &layout, &old)?) {
                            return Err(Error::UpsertRowTwice);
                        }
                        updates.push((old, values));
                        update_places.push(place);
                        place += 1;
                        continue;
                    }
                }
            }
            // DO NOTHING without a conflict target skips a row any unique index refuses;
            // with a target only that constraint's conflicts are skipped.
            if on_conflict.as_ref().is_some_and(|c| {
                c.conflict_target.is_none() && matches!(c.action, OnConflictAction::DoNothing)
            }) && crate::index::unique_conflict(&def, &txn, &values)?
            {
                continue;
            }
            with_txn(&txn, |t| t.put(def.keyspace, &key, encode(&def, &values)))?;
            crate::index::maintain(&def, &txn, None, Some(&values))?;
            references.record(None, Some(&values));
            if do_update {
                touched.insert(key);
            }
            count += 1;
            if insert.returning.is_some() {
                written.push((
                    place,
                    WrittenRow {
                        values,
                        old_stamp: None,
                        replaced: false,
                    },
                ));
            }
            place += 1;
        }
    }
    if let Some(OnConflictAction::DoUpdate(update)) = on_conflict.as_ref().map(|c| &c.action)
        && !updates.is_empty()
    {
        let alias = insert
            .table_alias
            .as_ref()
            .map(|a| normalize_ident(&a.alias));
        let updated = upsert(
            session,
            &def,
            alias.as_deref(),
            update,
            updates,
            &mut references,
        )
        .await?;
        for (pair, values) in updated {
            count += 1;
            if insert.returning.is_some() {
                written.push((
                    update_places[pair],
                    WrittenRow {
                        values,
                        old_stamp: None,
                        replaced: true,
                    },
                ));
            }
        }
    }
    written.sort_by_key(|(place, _)| *place);
    let written = written.into_iter().map(|(_, row)| row).collect();
    references.enforce(session, &txn).await?;
    let xid = transaction_number(&txn)?;
    Ok(WriteResult {
        tag: "INSERT 0".into(),
        count: Some(count),
        evaluated: None,
        returning: insert.returning.clone().map(|items| Returning {
            def: Arc::clone(&def),
            alias: insert
                .table_alias
                .as_ref()
                .map(|a| normalize_ident(&a.alias)),
            items,
            rows: written,
            deleted: false,
            zone: session.zone().arrow.clone(),
            clock: session.clock().clone(),
            identity: session.identity(),
            functions: session.own_functions(),
            sources: vec![],
            xid,
        }),
    })
}

/// The constraint an ON CONFLICT target names, as PostgreSQL infers it.
#[derive(Debug, Clone, Copy)]
enum Arbiter {
    PrimaryKey,
    /// The table's unique index at this position.
    Unique(usize),
}

/// The arbiter of `ON CONFLICT (columns) [WHERE condition]`, the primary key or a unique
/// index over exactly those columns (a partial one only when the condition implies its
/// predicate), or of `ON CONFLICT ON CONSTRAINT table_pkey`; `None` without a target (any
/// conflict).
fn conflict_arbiter(
    def: &TableDef,
    on_conflict: &ast::OnConflict,
    insert: &ast::Insert,
) -> Result<Option<Arbiter>> {
    use std::collections::BTreeSet;
    let unique = || def.indexes.iter().enumerate().filter(|(_, i)| i.unique);
    let condition = insert_hint(insert, CONFLICT_WHERE_HINT);
    match &on_conflict.conflict_target {
        None => Ok(None),
        Some(ast::ConflictTarget::Columns(columns)) => {
            let targets = match insert_hint(insert, CONFLICT_TARGET_HINT) {
                // A list of expressions, read as a select list is, through the same
                // rewrites as an index's expressions (`at AT TIME ZONE 'UTC'`, `date(ts)`).
                Some(text) => match datafusion::sql::sqlparser::parser::Parser::new(
                    &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
                )
                .try_with_sql(text)
                .and_then(|mut p| {
                    p.parse_comma_separated(|p| p.parse_expr())?;
                    p.expect_token(&datafusion::sql::sqlparser::tokenizer::Token::EOF)
                        .map(|_| ())
                }) {
                    Err(e) => return Err(Error::Syntax(e.to_string())),
                    Ok(()) => match crate::session::parse_sql(&format!("SELECT {text}"))?
                        .into_iter()
                        .next()
                    {
                        Some(ast::Statement::Query(q)) => match *q.body {
                            SetExpr::Select(select) => select
                                .projection
                                .into_iter()
                                .map(|item| match item {
                                    SelectItem::UnnamedExpr(e)
                                    | SelectItem::ExprWithAlias { expr: e, .. } => Ok(e),
                                    other => Err(Error::Syntax(other.to_string())),
                                })
                                .collect::<Result<Vec<_>>>()?,
                            other => return Err(Error::Syntax(other.to_string())),
                        },
                        _ => return Err(Error::Syntax(text.to_string())),
                    },
                },
                None => columns.iter().cloned().map(Expr::Identifier).collect(),
            };
            let named = targets
                .iter()
                .map(|target| {
                    let mut target = target;
                    while let Expr::Nested(inner) = target {
                        target = inner;
                    }
                    let Expr::Identifier(column) = target else {
                        // An index expression: the hidden column of an index over it.
                        return crate::expression_index::existing(def, target)?
                            .ok_or(Error::NoConflictArbiter);
                    };
                    let name = normalize_ident(column);
                    def.columns
                        .iter()
                        .position(|col| col.name == name && !col.hidden)
                        .ok_or_else(|| {
                            Error::Sql(sql::Error::UnknownColumn {
                                table: def.name.clone(),
                                column: name,
                            })
                        })
                })
                .collect::<Result<BTreeSet<usize>>>()?;
            let key: BTreeSet<usize> = (def.partition_key.iter().copied())
                .chain(def.row_key.iter().map(|p| p.column))
                .collect();
            if named == key {
                return Ok(Some(Arbiter::PrimaryKey));
            }
            let over_named =
                |i: &IndexDef| i.columns.iter().map(|p| p.column).collect::<BTreeSet<_>>() == named;
            unique()
                .find(|(_, i)| i.predicate.is_none() && over_named(i))
                .or_else(|| {
                    unique().find(|(_, i)| {
                        over_named(i)
                            && i.predicate.is_some()
                            && condition.is_some_and(|c| {
                                crate::index::conflict_condition_implies(def, i, c)
                            })
                    })
                })
                .map(|(n, _)| Some(Arbiter::Unique(n)))
                .ok_or(Error::NoConflictArbiter)
        }
        Some(ast::ConflictTarget::OnConstraint(name)) => {
            let name = name.to_string().trim_matches('"').to_string();
            if name == def.primary_key_name() {
                return Ok(Some(Arbiter::PrimaryKey));
            }
            // A UNIQUE constraint's index (one made by CREATE UNIQUE INDEX is no constraint).
            if let Some(n) = def
                .indexes
                .iter()
                .position(|i| i.constraint && i.name == name)
            {
                return Ok(Some(Arbiter::Unique(n)));
            }
            Err(Error::UnknownConstraint {
                constraint: name,
                table: def.name.clone(),
            })
        }
    }
}

/// ON CONFLICT DO UPDATE: evaluates the assignments over (existing row, `excluded` row) pairs
/// and writes the rows that pass the optional WHERE. Returns the new rows.
/// Stored rows of `def` as one batch of every column, in `zone`, with their numbers in a last
/// column `__partita_row`: an in-memory table to evaluate expressions over.
pub(crate) fn rows_batch(
    def: &TableDef,
    zone: &str,
    rows: &mut dyn Iterator<Item = &Vec<Value>>,
) -> Result<RecordBatch> {
    let mut fields: Vec<Field> = def
        .columns
        .iter()
        .map(|c| c.ty.field_in(&c.name, true, zone))
        .collect();
    fields.push(Field::new("__partita_row", DataType::Int64, false));
    let mut builders: Vec<ColumnBuilder> = def
        .columns
        .iter()
        .map(|c| ColumnBuilder::new(c.ty, 16))
        .collect();
    let mut ids = datafusion::arrow::array::Int64Builder::new();
    for (i, row) in rows.enumerate() {
        for (b, v) in builders.iter_mut().zip(row) {
            b.append(v.as_ref())?;
        }
        ids.append_value(i as i64);
    }
    let mut columns: Vec<_> = builders.into_iter().map(ColumnBuilder::finish).collect();
    columns.push(Arc::new(ids.finish()));
    let columns = in_zone(columns, &fields);
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(datafusion::error::DataFusionError::from)?)
}

async fn upsert(
    session: &mut Session,
    def: &Arc<TableDef>,
    alias: Option<&str>,
    update: &ast::DoUpdate,
    pairs: Vec<(Vec<Value>, Vec<Value>)>,
    references: &mut crate::foreign::Pending,
) -> Result<Vec<(usize, Vec<Value>)>> {
    let zone = session.zone().arrow.clone();
    // Two in-memory tables joined by row number: the existing rows (under the table's name
    // or alias) and the proposed ones (as `excluded`).
    let n = def.columns.len();
    let existing = rows_batch(def, &zone, &mut pairs.iter().map(|(old, _)| old))?;
    let excluded = rows_batch(def, &zone, &mut pairs.iter().map(|(_, new)| new))?;
    let ctx = scratch_context_with(&zone, Some(session.clock()), session.user_types());
    crate::pg_catalog::register_identity(&ctx, &session.identity());
    let target = alias.unwrap_or(&def.name).to_string();
    ctx.register_table(
        datafusion::common::TableReference::bare(target.clone()),
        Arc::new(MemTable::try_new(existing.schema(), vec![vec![existing]])?),
    )?;
    ctx.register_table(
        "excluded",
        Arc::new(MemTable::try_new(excluded.schema(), vec![vec![excluded]])?),
    )?;

    let mut new_exprs: Vec<Expr> = (0..n)
        .map(|i| Expr::CompoundIdentifier(vec![ident(&target), ident(&def.columns[i].name)]))
        .collect();
    for assignment in &update.assignments {
        for (col, expr) in assignment_targets(def, assignment)? {
            new_exprs[col] = cast(expr, def.columns[col].ty);
        }
    }
    let mut projection: Vec<SelectItem> = new_exprs
        .into_iter()
        .enumerate()
        .map(|(i, e)| named(e, &format!("__partita_new_{i}")))
        .collect();
    projection.push(named(
        Expr::CompoundIdentifier(vec![ident(&target), ident("__partita_row")]),
        "__partita_row",
    ));
    let join_on = Expr::BinaryOp {
        left: Box::new(Expr::CompoundIdentifier(vec![
            ident(&target),
            ident("__partita_row"),
        ])),
        op: ast::BinaryOperator::Eq,
        right: Box::new(Expr::CompoundIdentifier(vec![
            ident("excluded"),
            ident("__partita_row"),
        ])),
    };
    let selection = match &update.selection {
        Some(w) => Expr::BinaryOp {
            left: Box::new(join_on),
            op: ast::BinaryOperator::And,
            right: Box::new(Expr::Nested(Box::new(w.clone()))),
        },
        None => join_on,
    };
    let query = select_query(
        projection,
        vec![table_ref(&target, None), table_ref("excluded", None)],
        Some(selection),
    );
    let plan = scratch_plan(&ctx, ast::Statement::Query(Box::new(query))).await?;
    let batches = ctx.execute_logical_plan(plan).await?.collect().await?;
    let txn = session.open_txn()?;
    let layout = def.layout()?;
    let mut out = Vec::new();
    let new_rows = rows_of(def, &batches, 0)?;
    // Each output row carries the number of the pair it came from: its existing row.
    let pair_numbers = batches.iter().flat_map(|b| {
        let numbers = b
            .column(n)
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Int64Array>()
            .cloned();
        (0..b.num_rows()).map(move |r| numbers.as_ref().map(|a| a.value(r) as usize))
    });
    for (mut values, pair) in new_rows.into_iter().zip(pair_numbers) {
        let (pair, (old, _)) = pair
            .and_then(|p| Some((p, pairs.get(p)?)))
            .ok_or_else(|| Error::Internal("upsert row without its existing row".into()))?;
        write_updated(def, &layout, &txn, old, &mut values)?;
        references.record(Some(old), Some(&values));
        out.push((pair, values));
    }
    Ok(out)
}

/// The (column index, value expression) pairs of one SET assignment.
fn assignment_targets(def: &TableDef, assignment: &ast::Assignment) -> Result<Vec<(usize, Expr)>> {
    let column = |name: &ObjectName| -> Result<usize> {
        let col = name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(normalize_ident)
            .unwrap_or_default();
        let (i, c) = def.column(&col)?;
        if c.hidden {
            return Err(Error::Sql(sql::Error::UnknownColumn {
                table: def.name.clone(),
                column: col,
            }));
        }
        Ok(i)
    };
    // `SET c = DEFAULT` takes the column's default (NULL without one, and a generated
    // column's value is computed when the row is written); a GENERATED ALWAYS identity
    // column or a generated column takes nothing else.
    let value = |i: usize, e: Expr| -> Result<Expr> {
        match &e {
            Expr::Identifier(id)
                if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default") =>
            {
                match &def.columns[i].default {
                    Some(text) => parse_expr(text),
                    None => Ok(null()),
                }
            }
            _ if def.columns[i].identity == Some(Identity::Always)
                || def.columns[i].generated.is_some() =>
            {
                Err(Error::GeneratedAlways {
                    column: def.columns[i].name.clone(),
                    insert: false,
                    expression: def.columns[i].generated.is_some(),
                })
            }
            _ => Ok(e),
        }
    };
    match &assignment.target {
        AssignmentTarget::ColumnName(name) => {
            let i = column(name)?;
            Ok(vec![(i, value(i, assignment.value.clone())?)])
        }
        AssignmentTarget::Tuple(names) => {
            let values = tuple_values(&assignment.value)?;
            if values.len() != names.len() {
                return Err(Error::InvalidStatement(
                    "number of columns does not match number of values".into(),
                ));
            }
            names
                .iter()
                .zip(values)
                .map(|(n, v)| {
                    let i = column(n)?;
                    Ok((i, value(i, v)?))
                })
                .collect()
        }
    }
}

/// The values of `SET (a, b) = value`: a row constructor's (`(1, 2)`, `ROW(1, 2)`) or a
/// sub-select's items, each as a scalar subquery of its own (`(SELECT x, y …)` sets `a` to
/// `(SELECT x …)` and `b` to `(SELECT y …)`: no row gives NULLs, more than one is 21000,
/// as in PostgreSQL).
fn tuple_values(value: &Expr) -> Result<Vec<Expr>> {
    match value {
        Expr::Tuple(items) => Ok(items.clone()),
        Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("row") => match &f.args {
            ast::FunctionArguments::List(list) => list
                .args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e.clone()),
                    other => Err(Error::Syntax(format!(
                        "syntax error at or near \"{other}\""
                    ))),
                })
                .collect(),
            _ => Ok(vec![]),
        },
        Expr::Subquery(query) => {
            let SetExpr::Select(select) = query.body.as_ref() else {
                return Err(Error::Unsupported("SET (a, b) = a set operation".into()));
            };
            select
                .projection
                .iter()
                .map(|item| match item {
                    SelectItem::UnnamedExpr(_) | SelectItem::ExprWithAlias { .. } => {
                        let mut one = query.clone();
                        if let SetExpr::Select(s) = one.body.as_mut() {
                            s.projection = vec![item.clone()];
                        }
                        Ok(Expr::Subquery(one))
                    }
                    _ => Err(Error::Unsupported("SET (a, b) = (SELECT * …)".into())),
                })
                .collect()
        }
        _ => Err(Error::NotSupported {
            message:
                "source for a multiple-column UPDATE item must be a sub-SELECT or ROW() expression"
                    .into(),
            detail: None,
        }),
    }
}

/// Inserts a row with a new key, its generated columns computed; a taken key is 23505, or,
/// with `skip_existing` (ON CONFLICT DO NOTHING), leaves the row out. Says whether the row
/// was written.
pub(crate) fn insert_new(
    def: &TableDef,
    layout: &storage::KeyLayout,
    txn: &SharedTxn,
    values: &mut [Value],
    skip_existing: bool,
) -> Result<bool> {
    crate::conditions::generate(def, values)?;
    check_not_null(def, values)?;
    crate::conditions::verify(def, values)?;
    let key = row_key(def, layout, values)?;
    if with_txn(txn, |t| t.get(def.keyspace, &key))?.is_some() {
        if skip_existing {
            return Ok(false);
        }
        return Err(duplicate_key(def, values));
    }
    if skip_existing && crate::index::unique_conflict(def, txn, values)? {
        return Ok(false);
    }
    with_txn(txn, |t| t.put(def.keyspace, &key, encode(def, values)))?;
    crate::index::maintain(def, txn, None, Some(values))?;
    Ok(true)
}

/// Writes `new` over the row that held `old`, its generated columns computed again: a key
/// change deletes the old row and inserts the new one, refusing an existing key (23505).
pub(crate) fn write_updated(
    def: &TableDef,
    layout: &storage::KeyLayout,
    txn: &SharedTxn,
    old: &[Value],
    new: &mut [Value],
) -> Result<()> {
    crate::conditions::generate(def, new)?;
    check_not_null(def, new)?;
    crate::conditions::verify(def, new)?;
    let old_key = row_key(def, layout, old)?;
    let new_key = row_key(def, layout, new)?;
    if old_key != new_key {
        if with_txn(txn, |t| t.get(def.keyspace, &new_key))?.is_some() {
            return Err(duplicate_key(def, new));
        }
        with_txn(txn, |t| t.delete(def.keyspace, &old_key))?;
    }
    with_txn(txn, |t| t.put(def.keyspace, &new_key, encode(def, new)))?;
    crate::index::maintain(def, txn, Some(old), Some(new))
}

/// Deletes a stored row (a referential action's), with its index entries and view rows.
pub(crate) fn delete_row(
    def: &TableDef,
    layout: &storage::KeyLayout,
    txn: &SharedTxn,
    old: &[Value],
) -> Result<()> {
    let key = row_key(def, layout, old)?;
    with_txn(txn, |t| t.delete(def.keyspace, &key))?;
    crate::index::maintain(def, txn, Some(old), None)
}

/// The DEFAULT values of `columns` of `def` (NULL where none is declared), evaluated now.
pub(crate) async fn default_values(
    session: &Session,
    def: &TableDef,
    columns: &[usize],
) -> Result<Vec<Value>> {
    let mut projection = Vec::with_capacity(columns.len());
    for (k, &c) in columns.iter().enumerate() {
        let col = &def.columns[c];
        let expr = match &col.default {
            Some(text) => parse_expr(text)?,
            None => null(),
        };
        projection.push(named(cast(expr, col.ty), &format!("__partita_default_{k}")));
    }
    let batches = session
        .collect_query(select_query(projection, vec![], None), false)
        .await?;
    let batch = batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .ok_or_else(|| Error::Internal("a DEFAULT evaluated to no row".into()))?;
    columns
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            let col = &def.columns[c];
            value_from_array(batch.column(k), 0, col.ty, &col.name)
        })
        .collect()
}

fn target_table(def_name: &str, relation: &TableFactor) -> Result<(String, Option<TableAlias>)> {
    match relation {
        TableFactor::Table { name, alias, .. } => {
            let n = table_name(name)?;
            debug_assert!(def_name.is_empty() || def_name == n);
            Ok((n, alias.clone()))
        }
        other => Err(Error::Unsupported(format!("writing to {other}"))),
    }
}

/// Every stored column (hidden ones too), qualified by the table's name or alias.
fn all_columns(def: &TableDef, qualifier: &str) -> Vec<SelectItem> {
    def.columns
        .iter()
        .map(|c| {
            named(
                Expr::CompoundIdentifier(vec![ident(qualifier), ident(&c.name)]),
                &c.name,
            )
        })
        .collect()
}

fn stamp_columns(qualifier: &str) -> Vec<SelectItem> {
    vec![
        named(
            Expr::CompoundIdentifier(vec![ident(qualifier), ident(TIMESTAMP_COLUMN)]),
            "__partita_ts",
        ),
        named(
            Expr::CompoundIdentifier(vec![ident(qualifier), ident(ETAG_COLUMN)]),
            "__partita_etag",
        ),
    ]
}

pub async fn update(session: &mut Session, update: &ast::Update) -> Result<WriteResult> {
    if !update.table.joins.is_empty() {
        return Err(Error::Unsupported("UPDATE of a join".into()));
    }
    let from = match &update.from {
        None => vec![],
        Some(ast::UpdateTableFromKind::BeforeSet(t) | ast::UpdateTableFromKind::AfterSet(t)) => {
            t.clone()
        }
    };
    let (name, alias) = target_table("", &update.table.relation)?;
    let def = session.written_table_def(&name)?;
    let txn = session.open_txn()?;
    track_table(session, &txn, &name)?;
    let qualifier = alias
        .as_ref()
        .map(|a| normalize_ident(&a.name))
        .unwrap_or_else(|| name.clone());
    let mut projection = all_columns(&def, &qualifier);
    let mut set_columns = Vec::new();
    for assignment in &update.assignments {
        for (col, expr) in assignment_targets(&def, assignment)? {
            if set_columns.contains(&col) {
                return Err(Error::InvalidStatement(format!(
                    "multiple assignments to same column \"{}\"",
                    def.columns[col].name
                )));
            }
            projection.push(named(
                cast(expr, def.columns[col].ty),
                &format!("__partita_set_{}", set_columns.len()),
            ));
            set_columns.push(col);
        }
    }
    let joined = !from.is_empty();
    let sources = match update.returning {
        Some(_) => source_names(&from),
        None => vec![],
    };
    projection.extend(source_items(&sources));
    let mut tables = vec![table_ref(&name, alias.clone())];
    tables.extend(from);
    let query = select_query(projection, tables, update.selection.clone());
    let (schema, batches) = session.collect_query_schema(query, true).await?;
    let mut picks = Vec::new();
    let layout = def.layout()?;
    let n = def.columns.len();
    let mut count = 0;
    let mut written = Vec::new();
    // UPDATE … FROM: a row that joins several FROM rows is updated once, with the first.
    let mut seen = std::collections::HashSet::new();
    let mut references = crate::foreign::Pending::new(&def);
    for (b, batch) in batches.iter().enumerate() {
        for r in 0..batch.num_rows() {
            let old = stored_row(&def, batch, r)?;
            if joined && !seen.insert(row_key(&def, &layout, &old)?) {
                continue;
            }
            let mut new = old.clone();
            for (k, &col) in set_columns.iter().enumerate() {
                let c = &def.columns[col];
                new[col] = value_from_array(batch.column(n + k), r, c.ty, &c.name)?;
            }
            write_updated(&def, &layout, &txn, &old, &mut new)?;
            references.record(Some(&old), Some(&new));
            count += 1;
            if update.returning.is_some() {
                written.push(WrittenRow {
                    values: new,
                    old_stamp: None,
                    replaced: false,
                });
                picks.push((b, r));
            }
        }
    }
    references.enforce(session, &txn).await?;
    let sources = source_rows(&sources, &schema, &batches, &picks)?;
    let xid = transaction_number(&txn)?;
    Ok(WriteResult {
        tag: "UPDATE".into(),
        count: Some(count),
        evaluated: None,
        returning: update.returning.clone().map(|items| Returning {
            def: Arc::clone(&def),
            alias: alias.map(|a| normalize_ident(&a.name)),
            items,
            rows: written,
            deleted: false,
            zone: session.zone().arrow.clone(),
            clock: session.clock().clone(),
            identity: session.identity(),
            functions: session.own_functions(),
            sources,
            xid,
        }),
    })
}
/// PostgreSQL's system column RETURNING shows: 0 for a new row version.
const XMAX: &str = "xmax";

/// The name of the column that numbers RETURNING's rows when FROM items join them.
const JOINED_ROW: &str = "__partita_joined_row";

/// The FROM items of UPDATE … FROM (USING of DELETE … USING) that RETURNING can name: each
/// table, derived table or function by its alias or its table's name.
fn source_names(from: &[TableWithJoins]) -> Vec<String> {
    from.iter()
        .flat_map(|t| std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)))
        .filter_map(|relation| match relation {
            TableFactor::Table {
                alias: Some(alias), ..
            }
            | TableFactor::Derived {
                alias: Some(alias), ..
            }
            | TableFactor::Function {
                alias: Some(alias), ..
            }
            | TableFactor::UNNEST {
                alias: Some(alias), ..
            } => Some(normalize_ident(&alias.name)),
            TableFactor::Table { name, .. } => table_name(name).ok(),
            _ => None,
        })
        .collect()
}

/// Select-list items that bring each FROM item's columns into the query that finds the rows
/// to write: `source.*`, after a marker column of its own.
fn source_items(sources: &[String]) -> Vec<SelectItem> {
    sources
        .iter()
        .enumerate()
        .flat_map(|(i, source)| {
            [
                named(null(), &format!("__partita_source_{i}")),
                SelectItem::QualifiedWildcard(
                    ast::SelectItemQualifiedWildcardKind::ObjectName(ObjectName::from(vec![
                        ident(source),
                    ])),
                    ast::WildcardAdditionalOptions::default(),
                ),
            ]
        })
        .collect()
}

/// Each FROM item's columns (those after its marker) in the rows `picks` names, as a batch.
fn source_rows(
    sources: &[String],
    schema: &SchemaRef,
    batches: &[RecordBatch],
    picks: &[(usize, usize)],
) -> Result<Vec<(String, RecordBatch)>> {
    let markers: Vec<usize> = (0..sources.len())
        .map(|i| schema.index_of(&format!("__partita_source_{i}")))
        .collect::<std::result::Result<_, _>>()
        .map_err(datafusion::error::DataFusionError::from)?;
    let mut rows = Vec::with_capacity(sources.len());
    for (i, source) in sources.iter().enumerate() {
        let end = markers.get(i + 1).copied().unwrap_or(schema.fields().len());
        let columns = markers[i] + 1..end;
        let fields: Vec<Field> = columns
            .clone()
            .map(|c| schema.field(c).clone().with_nullable(true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        if picks.is_empty() {
            rows.push((source.clone(), RecordBatch::new_empty(schema)));
            continue;
        }
        let arrays = columns
            .map(|c| {
                let values: Vec<&dyn Array> =
                    batches.iter().map(|b| b.column(c).as_ref()).collect();
                datafusion::arrow::compute::interleave(&values, picks)
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(datafusion::error::DataFusionError::from)?;
        let batch = RecordBatch::try_new(schema, arrays)
            .map_err(datafusion::error::DataFusionError::from)?;
        rows.push((source.clone(), batch));
    }
    Ok(rows)
}

pub async fn delete(session: &mut Session, delete: &ast::Delete) -> Result<WriteResult> {
    let tables = match &delete.from {
        FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
    };
    if tables.len() != 1 || !tables[0].joins.is_empty() {
        return Err(Error::Unsupported("DELETE from several tables".into()));
    }
    let using = delete.using.clone().unwrap_or_default();
    let (name, alias) = target_table("", &tables[0].relation)?;
    let def = session.written_table_def(&name)?;
    let txn = session.open_txn()?;
    track_table(session, &txn, &name)?;
    let qualifier = alias
        .as_ref()
        .map(|a| normalize_ident(&a.name))
        .unwrap_or_else(|| name.clone());
    let mut projection = all_columns(&def, &qualifier);
    projection.extend(stamp_columns(&qualifier));
    let joined = !using.is_empty();
    let sources = match delete.returning {
        Some(_) => source_names(&using),
        None => vec![],
    };
    projection.extend(source_items(&sources));
    let mut from = vec![table_ref(&name, alias.clone())];
    from.extend(using);
    let query = select_query(projection, from, delete.selection.clone());
    let (schema, batches) = session.collect_query_schema(query, true).await?;
    let mut picks = Vec::new();
    let layout = def.layout()?;
    let n = def.columns.len();
    let mut count = 0;
    let mut written = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut references = crate::foreign::Pending::new(&def);
    for (b, batch) in batches.iter().enumerate() {
        let ts = batch
            .column(n)
            .as_any()
            .downcast_ref::<datafusion::arrow::array::TimestampMicrosecondArray>()
            .cloned();
        let etags = batch
            .column(n + 1)
            .as_any()
            .downcast_ref::<datafusion::arrow::array::StringArray>()
            .cloned();
        for r in 0..batch.num_rows() {
            let old = stored_row(&def, batch, r)?;
            let key = row_key(&def, &layout, &old)?;
            // DELETE … USING: a row that joins several USING rows is deleted once.
            if joined && !seen.insert(key.clone()) {
                continue;
            }
            with_txn(&txn, |t| t.delete(def.keyspace, &key))?;
            crate::index::maintain(&def, &txn, Some(&old), None)?;
            references.record(Some(&old), None);
            count += 1;
            if delete.returning.is_some() {
                let stamp = match (&ts, &etags) {
                    (Some(ts), Some(e)) if !ts.is_null(r) && !e.is_null(r) => {
                        u64::from_str_radix(e.value(r), 16)
                            .ok()
                            .map(|v| (ts.value(r) as u64, v))
                    }
                    _ => None,
                };
                written.push(WrittenRow {
                    values: old,
                    old_stamp: stamp,
                    replaced: true,
                });
                picks.push((b, r));
            }
        }
    }
    references.enforce(session, &txn).await?;
    let sources = source_rows(&sources, &schema, &batches, &picks)?;
    let xid = transaction_number(&txn)?;
    Ok(WriteResult {
        tag: "DELETE".into(),
        count: Some(count),
        evaluated: None,
        returning: delete.returning.clone().map(|items| Returning {
            def: Arc::clone(&def),
            alias: alias.map(|a| normalize_ident(&a.name)),
            items,
            rows: written,
            deleted: true,
            zone: session.zone().arrow.clone(),
            clock: session.clock().clone(),
            identity: session.identity(),
            functions: session.own_functions(),
            sources,
            xid,
        }),
    })
}

/// Parses a stored DEFAULT expression.
pub(crate) fn parse_expr(text: &str) -> Result<Expr> {
    let dialect = datafusion::sql::sqlparser::dialect::PostgreSqlDialect {};
    datafusion::sql::sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| Error::Syntax(e.to_string()))
}
