//! Index tables: a table's rows stored again under (index columns, base key) in a keyspace
//! of their own, written in the same transaction as the base rows (seed 003's index table
//! pattern, done by the database so the copies never drift).
//!
//! An index is *local* when its leading columns are exactly the base partition key: its
//! entries share the base rows' partitions (and hash buckets). Otherwise it is *global*,
//! partitioned by its first column. An entry's key is the index columns, then the base key
//! columns not among them; its value holds those and the INCLUDE columns, as a row of the
//! index's own table definition (`IndexShape::table`), which the planner scans like any
//! table. Rows with a NULL in an
//! index column have no entry (a sparse index, as DynamoDB's secondary indexes): NULLs are
//! distinct for UNIQUE, as in PostgreSQL, and a condition that reads an index excludes them.
//!
//! Creating an index backfills it in the creating transaction. Every write of the table
//! reads the table's catalog record, so a write that overlaps CREATE INDEX or DROP INDEX
//! conflicts (40001) instead of missing the index; autocommit statements are retried.

use crate::dml::WriteResult;
use crate::error::{Error, Result};
use crate::provider::{SharedTxn, in_txn, stored_values, with_txn};
use crate::session::Session;
use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::Expr as DfExpr;
use datafusion::sql::sqlparser::ast;
use sql::catalog::{ColumnDef, IndexDef, RowKeyPart, TableDef};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, LazyLock, Mutex};
use storage::{
    Direction, KeyColumn, KeyLayout, KeyRange, KeyspaceKind, SortOrder, Transaction, Value,
};

fn sql_to_storage(e: sql::Error) -> storage::Error {
    match e {
        sql::Error::Storage(e) => e,
        other => storage::Error::Internal(other.to_string()),
    }
}

/// Where each part of an index entry's key comes from.
pub struct IndexShape {
    pub layout: KeyLayout,
    /// Base column indexes of the entry's partition key.
    pub partition: Vec<usize>,
    /// The entry's row key: base column indexes and directions.
    pub row: Vec<RowKeyPart>,
    /// Base column indexes of the entry's columns: its key columns, then the INCLUDE
    /// columns not among them. The entry's value holds them all, as a table row does.
    pub columns: Vec<usize>,
    pub local: bool,
}

impl IndexShape {
    pub fn of(def: &TableDef, index: &IndexDef) -> Result<IndexShape> {
        let local = is_local(def, index);
        let leading = if local { def.partition_key.len() } else { 1 };
        let partition: Vec<usize> = index.columns[..leading].iter().map(|p| p.column).collect();
        let mut row_parts: Vec<RowKeyPart> = index.columns[leading..].to_vec();
        let base_key = def
            .partition_key
            .iter()
            .map(|&column| RowKeyPart {
                column,
                desc: false,
            })
            .chain(def.row_key.iter().copied());
        for part in base_key {
            if !index.columns.iter().any(|p| p.column == part.column) {
                row_parts.push(part);
            }
        }
        let key_column = |c: usize, desc: bool| KeyColumn {
            ty: def.columns[c].ty.scalar(),
            order: if desc {
                SortOrder::Desc
            } else {
                SortOrder::Asc
            },
        };
        let layout = KeyLayout::new(
            partition.iter().map(|&c| key_column(c, false)).collect(),
            row_parts
                .iter()
                .map(|p| key_column(p.column, p.desc))
                .collect(),
            if local { def.hash_buckets } else { 0 },
        )?;
        let mut columns: Vec<usize> = partition
            .iter()
            .copied()
            .chain(row_parts.iter().map(|p| p.column))
            .collect();
        for &c in &index.include {
            if !columns.contains(&c) {
                columns.push(c);
            }
        }
        Ok(IndexShape {
            layout,
            partition,
            row: row_parts,
            columns,
            local,
        })
    }

    /// The index as a table of its own: its entries are rows of this definition, so the
    /// planner classifies, scans and filters them as it does any table.
    pub fn table(&self, def: &TableDef, index: &IndexDef) -> TableDef {
        let position = |c: usize| self.columns.iter().position(|&x| x == c).unwrap_or(0);
        TableDef {
            name: format!("index {}", index.name),
            keyspace: index.keyspace,
            // An expression's column is named by its text, which EXPLAIN shows.
            columns: self
                .columns
                .iter()
                .map(|&c| ColumnDef {
                    name: crate::expression_index::index_column_name(def, c),
                    ..def.columns[c].clone()
                })
                .collect(),
            partition_key: self.partition.iter().map(|&c| position(c)).collect(),
            row_key: self
                .row
                .iter()
                .map(|p| RowKeyPart {
                    column: position(p.column),
                    desc: p.desc,
                })
                .collect(),
            hash_buckets: self.layout.hash_buckets,
            schema_version: 0,
            missing_values: Default::default(),
            indexes: Vec::new(),
            view: None,
            views: Vec::new(),
            checks: Vec::new(),
            sequence_keyspace: None,
            foreign_keys: Vec::new(),
            referenced_by: Vec::new(),
            pkey_name: None,
            comment: None,
            temp_schema: None,
            on_commit: None,
        }
    }

    /// The entry for a base row, `None` when an index column is NULL or the row is not one
    /// a partial index covers.
    fn entry(
        &self,
        def: &TableDef,
        index: &IndexDef,
        values: &[Value],
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if index.columns.iter().any(|p| values[p.column].is_null()) || !covers(def, index, values)?
        {
            return Ok(None);
        }
        let pick = |cols: &mut dyn Iterator<Item = usize>| -> Vec<Value> {
            cols.map(|c| values[c].clone()).collect()
        };
        let key = self.layout.encode(
            &pick(&mut self.partition.iter().copied()),
            &pick(&mut self.row.iter().map(|p| p.column)),
        )?;
        let row = pick(&mut self.columns.iter().copied());
        Ok(Some((key, storage::rowcodec::encode_row(0, &row))))
    }

    /// The key prefix shared by all entries with `values`' index column values.
    fn unique_prefix(&self, index: &IndexDef, values: &[Value]) -> Result<Vec<u8>> {
        let pk: Vec<Value> = self.partition.iter().map(|&c| values[c].clone()).collect();
        let prefix = self.layout.partition_prefix(&pk)?;
        let rest: Vec<Value> = index.columns[self.partition.len()..]
            .iter()
            .map(|p| values[p.column].clone())
            .collect();
        Ok(self.layout.encode_row_prefix(&prefix, &rest)?)
    }
}

/// Whether `values` (a whole stored row of `def`) belong in `index`: every row does unless
/// the index is partial and its predicate is false or NULL for them.
pub(crate) fn covers(def: &TableDef, index: &IndexDef, values: &[Value]) -> Result<bool> {
    let Some(predicate) = &index.predicate else {
        return Ok(true);
    };
    let schema = crate::conditions::row_schema(def);
    let batch = crate::conditions::row_batch(def, &schema, values)?;
    let condition =
        crate::conditions::condition(crate::conditions::Kind::Check, predicate, &schema)?;
    Ok(crate::conditions::holds(&condition, &batch)? == Some(true))
}

/// Whether a scan's `filters` (DataFusion's, over `def`'s columns) select only rows a
/// partial index covers, so that reading the index finds every row they select: each
/// conjunct of the predicate is one of the filters (columns unqualified, casts and literal
/// types aside, `b = true` read as `b`), or is `c IS NOT NULL` beside a filter comparing `c`
/// with a constant. Any other predicate leaves the index unused; never a wrong answer.
pub(crate) fn predicate_implied(def: &TableDef, index: &IndexDef, filters: &[DfExpr]) -> bool {
    use datafusion::logical_expr::utils::split_conjunction;
    let Some(predicate) = &index.predicate else {
        return true;
    };
    let Some(predicate) = parsed_condition(def, predicate) else {
        return false;
    };
    let filters: Vec<DfExpr> = filters
        .iter()
        .flat_map(|f| {
            split_conjunction(f)
                .into_iter()
                .cloned()
                .collect::<Vec<_>>()
        })
        .map(canonical)
        .collect();
    split_conjunction(&predicate).into_iter().all(|conjunct| {
        let conjunct = canonical(conjunct.clone());
        filters.contains(&conjunct)
            || matches!(&conjunct, DfExpr::IsNotNull(c) if filters.iter().any(|f| compares(f, c)))
    })
}

/// Whether `ON CONFLICT (…) WHERE condition` implies partial `index`'s predicate, as a
/// scan's filters would (see [`predicate_implied`]).
pub(crate) fn conflict_condition_implies(
    def: &TableDef,
    index: &IndexDef,
    condition: &str,
) -> bool {
    let bare = match crate::dml::parse_expr(condition) {
        Ok(e) => sql::ddl::bare_condition(&e),
        Err(_) => return false,
    };
    parsed_condition(def, &bare).is_some_and(|c| predicate_implied(def, index, &[c]))
}

type Parsed = HashMap<(String, Vec<String>), Option<DfExpr>>;
static PARSED: LazyLock<Mutex<Parsed>> = LazyLock::new(Default::default);

/// Condition `text` over `def`'s columns as DataFusion's expression, parsed once per text
/// and column names (a scan of a table with a partial index asks at every plan).
fn parsed_condition(def: &TableDef, text: &str) -> Option<DfExpr> {
    let key = (
        text.to_string(),
        def.columns.iter().map(|c| c.name.clone()).collect(),
    );
    if let Some(parsed) = PARSED.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return parsed.clone();
    }
    let schema = crate::conditions::row_schema(def);
    let parsed = datafusion::common::DFSchema::try_from(schema.as_ref().clone())
        .ok()
        .and_then(|df_schema| {
            let ctx = datafusion::execution::context::SessionContext::new();
            ctx.parse_sql_expr(text, &df_schema).ok()
        });
    let mut kept = PARSED.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() >= 1024 {
        kept.clear();
    }
    kept.insert(key, parsed.clone());
    parsed
}

/// `e` with what does not change which rows it selects taken off: qualifiers, aliases,
/// casts, the types of literals; `b = true` is `b`, `b = false` is `NOT b`.
fn canonical(e: DfExpr) -> DfExpr {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    use datafusion::logical_expr::{BinaryExpr, Operator};
    e.transform_up(|e| {
        Ok(match e {
            DfExpr::Cast(c) => Transformed::yes(*c.expr),
            DfExpr::TryCast(c) => Transformed::yes(*c.expr),
            DfExpr::BinaryExpr(BinaryExpr { left, op, right })
                if op == Operator::Eq
                    && matches!(right.as_ref(), DfExpr::Literal(ScalarValue::Utf8(Some(b)), _)
                        if b == "true" || b == "false") =>
            {
                let DfExpr::Literal(ScalarValue::Utf8(Some(b)), _) = right.as_ref() else {
                    unreachable!("matched above");
                };
                Transformed::yes(match b.as_str() {
                    "true" => *left,
                    _ => DfExpr::Not(left),
                })
            }
            other => bare(other),
        })
    })
    .map(|t| t.data)
    .unwrap_or_else(|e| DfExpr::Literal(ScalarValue::Utf8(Some(e.to_string())), None))
}

/// Node `e` without its qualifier (a column), its alias, or its type (a literal's value,
/// whatever its type: Utf8 and Utf8View, Int32 and Int64 alike), for comparing expressions
/// bottom up.
pub(crate) fn bare(e: DfExpr) -> datafusion::common::tree_node::Transformed<DfExpr> {
    use datafusion::common::tree_node::Transformed;
    match e {
        DfExpr::Column(c) => Transformed::yes(DfExpr::Column(c.name.as_str().into())),
        DfExpr::Alias(a) => Transformed::yes(*a.expr),
        DfExpr::Literal(v, _) if !v.is_null() => Transformed::yes(DfExpr::Literal(
            ScalarValue::Utf8(Some(v.to_string())),
            None,
        )),
        other => Transformed::no(other),
    }
}

/// Whether canonical filter `f` compares `column` with a constant, which no NULL passes.
fn compares(f: &DfExpr, column: &DfExpr) -> bool {
    use datafusion::logical_expr::{BinaryExpr, Operator};
    let constant = |e: &DfExpr| matches!(e, DfExpr::Literal(..));
    match f {
        DfExpr::BinaryExpr(BinaryExpr { left, op, right }) => {
            matches!(
                op,
                Operator::Eq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
            ) && ((left.as_ref() == column && constant(right))
                || (right.as_ref() == column && constant(left)))
        }
        DfExpr::InList(l) => !l.negated && l.expr.as_ref() == column,
        DfExpr::Between(b) => !b.negated && b.expr.as_ref() == column,
        DfExpr::Like(l) => !l.negated && l.expr.as_ref() == column,
        _ => false,
    }
}

/// Whether the index's leading columns are exactly the base partition key.
pub fn is_local(def: &TableDef, index: &IndexDef) -> bool {
    index.columns.len() >= def.partition_key.len()
        && index
            .columns
            .iter()
            .zip(&def.partition_key)
            .all(|(p, &c)| p.column == c)
}

/// Brings every index and materialized view of `def` in line with a base row going from
/// `old` to `new` (either may be absent: an insert or a delete), in the writing transaction. A UNIQUE index that
/// already holds the new values for another row gives 23505 naming the index.
pub fn maintain(
    def: &TableDef,
    txn: &SharedTxn,
    old: Option<&[Value]>,
    new: Option<&[Value]>,
) -> Result<()> {
    if def.indexes.is_empty() && def.views.is_empty() {
        return Ok(());
    }
    // The old row's index expressions as its columns give them, not as it stored them.
    let old = old
        .map(|v| crate::expression_index::computed(def, v))
        .transpose()?;
    let old = old.as_deref();
    in_txn(txn, |t| {
        for index in &def.indexes {
            maintain_one(def, index, t, old, new)?;
        }
        crate::view::maintain(def, t, old, new)
    })
}

/// Whether a UNIQUE index of `def` already holds `new`'s values for another row: what
/// `INSERT … ON CONFLICT DO NOTHING` skips, as PostgreSQL does, besides a taken key.
pub fn unique_conflict(def: &TableDef, txn: &SharedTxn, new: &[Value]) -> Result<bool> {
    if !def.indexes.iter().any(|i| i.unique) {
        return Ok(false);
    }
    in_txn(txn, |t| {
        for index in def.indexes.iter().filter(|i| i.unique) {
            let shape = IndexShape::of(def, index)?;
            if let Some((key, _)) = shape.entry(def, index, new)?
                && taken(&shape, index, t, new, &key)?
            {
                return Ok(true);
            }
        }
        Ok(false)
    })
}

/// The row `index` (unique) already holds for `values`' index columns: the arbiter's
/// existing row for `INSERT … ON CONFLICT (its columns)`. `None` when none does or an index
/// column is NULL.
pub fn unique_holder(
    def: &TableDef,
    index: &IndexDef,
    txn: &SharedTxn,
    values: &[Value],
) -> Result<Option<Vec<Value>>> {
    let shape = IndexShape::of(def, index)?;
    if index.columns.iter().any(|p| values[p.column].is_null()) || !covers(def, index, values)? {
        return Ok(None);
    }
    let prefix = shape.unique_prefix(index, values)?;
    in_txn(txn, |t| {
        let entry = t
            .scan(
                index.keyspace,
                &KeyRange::prefix(&prefix),
                Direction::Forward,
            )?
            .next()
            .transpose()?;
        match entry {
            Some(entry) => entry_row(def, &shape, t, &entry.value),
            None => Ok(None),
        }
    })
}

/// The base row an index entry (its stored value) stands for, read in `t`; `None` if the
/// transaction no longer has it.
pub(crate) fn entry_row(
    def: &TableDef,
    shape: &IndexShape,
    t: &mut Transaction,
    entry: &[u8],
) -> Result<Option<Vec<Value>>> {
    // The entry holds the base row's key columns: enough to read the row.
    let (_, entry_values) = storage::rowcodec::decode_row(entry)?;
    let mut base = vec![Value::Null; def.columns.len()];
    for (&c, v) in shape.columns.iter().zip(entry_values) {
        base[c] = v;
    }
    let layout = def.layout()?;
    let pick = |cols: &mut dyn Iterator<Item = usize>| -> Vec<Value> {
        cols.map(|c| base[c].clone()).collect()
    };
    let key = layout.encode(
        &pick(&mut def.partition_key.iter().copied()),
        &pick(&mut def.row_key.iter().map(|p| p.column)),
    )?;
    match t.get(def.keyspace, &key)? {
        Some(row) => Ok(Some(stored_values(def, &row.value)?)),
        None => Ok(None),
    }
}

fn maintain_one(
    def: &TableDef,
    index: &IndexDef,
    t: &mut Transaction,
    old: Option<&[Value]>,
    new: Option<&[Value]>,
) -> Result<()> {
    let shape = IndexShape::of(def, index)?;
    let old_entry = old
        .map(|v| shape.entry(def, index, v))
        .transpose()?
        .flatten();
    let new_entry = new
        .map(|v| shape.entry(def, index, v))
        .transpose()?
        .flatten();
    if old_entry == new_entry {
        return Ok(());
    }
    if let Some((key, _)) = &old_entry {
        t.delete(index.keyspace, key)?;
    }
    if let (Some((key, value)), Some(values)) = (new_entry, new) {
        if index.unique && taken(&shape, index, t, values, &key)? {
            return Err(unique_violation(def, index, values));
        }
        t.put(index.keyspace, &key, value)?;
    }
    Ok(())
}

/// Whether another row's entry holds `values`' index column values.
fn taken(
    shape: &IndexShape,
    index: &IndexDef,
    t: &mut Transaction,
    values: &[Value],
    own_key: &[u8],
) -> Result<bool> {
    let prefix = shape.unique_prefix(index, values)?;
    for row in t.scan(
        index.keyspace,
        &KeyRange::prefix(&prefix),
        Direction::Forward,
    )? {
        if row?.key.as_ref() != own_key {
            return Ok(true);
        }
    }
    Ok(false)
}

fn unique_violation(def: &TableDef, index: &IndexDef, values: &[Value]) -> Error {
    let names: Vec<String> = index
        .columns
        .iter()
        .map(
            |p| match crate::expression_index::is_expression(&def.columns[p.column]) {
                true => crate::expression_index::shown(def, p.column),
                false => def.columns[p.column].name.clone(),
            },
        )
        .collect();
    let vals: Vec<String> = index
        .columns
        .iter()
        .map(|p| crate::text::value_text(&values[p.column]))
        .collect();
    Error::UniqueViolation {
        table: def.name.clone(),
        constraint: index.name.clone(),
        detail: format!(
            "Key ({})=({}) already exists.",
            names.join(", "),
            vals.join(", ")
        ),
    }
}

/// A unique violation met while an index is built from stored rows, as PostgreSQL words it
/// ("could not create unique index", the key "is duplicated"); other errors as they are.
pub(crate) fn in_new_index(e: Error) -> Error {
    match e {
        Error::UniqueViolation {
            table,
            constraint,
            detail,
        } => Error::DuplicateInNewIndex {
            table,
            index: constraint,
            detail: detail.replace(" already exists.", " is duplicated."),
        },
        other => other,
    }
}

/// `CREATE [UNIQUE] INDEX [IF NOT EXISTS] name ON t (cols [ASC|DESC]) [INCLUDE (cols)]`:
/// creates the index table and backfills it from the rows the transaction sees.
pub async fn create_index(session: &mut Session, create: &ast::CreateIndex) -> Result<WriteResult> {
    let table = sql::ddl::table_name(&create.table_name)?;
    let def = session.table_def(&table)?;
    let predicate = create
        .predicate
        .as_ref()
        .map(|p| index_predicate(&def, p))
        .transpose()?;
    if create.nulls_distinct == Some(false) {
        return Err(Error::Unsupported("NULLS NOT DISTINCT".into()));
    }
    // The access methods the catalog shows (`local`, `global`) are taken back, so that a
    // definition read from pg_indexes (SQLAlchemy's, Alembic's) runs again; btree is either.
    let method = create
        .using
        .as_ref()
        .map(|u| u.to_string().to_ascii_lowercase());
    if let Some(method) = &method
        && !["btree", "local", "global"].contains(&method.as_str())
    {
        return Err(Error::Unsupported(format!("index method {method}")));
    }
    // Expressions are kept in hidden columns of the table (`expression_index`), added to
    // this copy of its definition.
    let mut with_expressions = def.as_ref().clone();
    let mut columns = Vec::new();
    for c in &create.columns {
        let mut expr = &c.column.expr;
        while let ast::Expr::Nested(inner) = expr {
            expr = inner;
        }
        let column = match expr {
            ast::Expr::Identifier(ident) => def.column(&sql::ddl::normalize_ident(ident))?.0,
            expr => crate::expression_index::column_for(&mut with_expressions, expr)?,
        };
        let col = &with_expressions.columns[column];
        if !col.ty.scalar().is_keyable() {
            return Err(Error::Sql(sql::Error::InvalidDefinition(format!(
                "column \"{}\" of type {} cannot be indexed",
                col.name, col.ty
            ))));
        }
        if columns.iter().any(|p: &RowKeyPart| p.column == column) {
            return Err(Error::Sql(sql::Error::DuplicateColumn(
                crate::expression_index::index_column_name(&with_expressions, column),
            )));
        }
        columns.push(RowKeyPart {
            column,
            desc: c.column.options.asc == Some(false),
        });
    }
    let local = crate::pg_catalog::leads_with_partition_key(&def, &columns);
    match method.as_deref() {
        Some("local") if !local => {
            return Err(Error::Sql(sql::Error::InvalidDefinition(format!(
                "a local index must lead with the partition key of \"{}\"",
                def.name
            ))));
        }
        Some("global") if local => {
            return Err(Error::Sql(sql::Error::InvalidDefinition(format!(
                "an index that leads with the partition key of \"{}\" is local",
                def.name
            ))));
        }
        _ => {}
    }
    let include = create
        .include
        .iter()
        .map(|i| def.column(&sql::ddl::normalize_ident(i)).map(|(c, _)| c))
        .collect::<sql::Result<Vec<_>>>()?;
    session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    // An index goes where its table is: among the session's temporary relations or not.
    let temporary = def.temp_schema.is_some();
    let taken = |name: &str| {
        let scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        catalog.name_taken(name, temporary, &scope.changes)
    };
    // PostgreSQL's name for an unnamed index: the table, its columns' names (`lower` for
    // `lower(email)`, `expr` for another expression), `idx`, numbered when taken.
    let name = match &create.name {
        Some(n) => sql::ddl::table_name(n)?,
        None => {
            let keys: Vec<usize> = columns.iter().map(|p| p.column).collect();
            let cols = crate::expression_index::attribute_names(&with_expressions, &keys);
            free_name(&format!("{}_{}_idx", def.name, cols.join("_")), taken)
        }
    };
    if taken(&name) {
        if create.if_not_exists {
            session.notice_coded(
                "42P07",
                format!("relation \"{name}\" already exists, skipping"),
            );
            return Ok(WriteResult::command("CREATE INDEX"));
        }
        return Err(Error::Sql(sql::Error::DuplicateTable(name)));
    }
    let index = IndexDef {
        name,
        keyspace: 0,
        unique: create.unique,
        columns,
        include,
        constraint: false,
        predicate,
    };
    // No row is written: maintenance and the backfill compute the expressions.
    if with_expressions.columns.len() != def.columns.len() {
        crate::conditions::validate(&with_expressions)?;
    }
    add_index(session, &Arc::new(with_expressions), index)?;
    Ok(WriteResult::command("CREATE INDEX"))
}

/// `base`, or `base` numbered from 1 (`t_a_idx1`) when `taken`, as PostgreSQL chooses a
/// name it makes up.
pub(crate) fn free_name(base: &str, taken: impl Fn(&str) -> bool) -> String {
    let mut name = base.to_string();
    let mut n = 0;
    while taken(&name) {
        n += 1;
        name = format!("{base}{n}");
    }
    name
}

/// Functions whose value changes from call to call or with the clock: an index predicate
/// may not call them, as PostgreSQL allows only immutable ones.
pub(crate) const VOLATILE: &[&str] = &[
    "random",
    "now",
    "clock_timestamp",
    "statement_timestamp",
    "transaction_timestamp",
    "timeofday",
    "current_timestamp",
    "current_date",
    "current_time",
    "localtimestamp",
    "localtime",
    "nextval",
    "currval",
    "setval",
    "gen_random_uuid",
    "uuid_generate_v4",
    // What `functions::rewrite` plans gen_random_uuid() and uuid-ossp's generators as.
    "uuid",
    "partita_uuid_generate_v1",
    "partita_uuid_generate_v1mc",
    "partita_uuid_generate_v4",
];

/// A partial index's WHERE condition as the catalog keeps it (columns bare), refused as
/// PostgreSQL refuses one: a subquery (0A000), a volatile function (42P17), an unknown
/// column (42703), a value that is not a boolean (42804).
fn index_predicate(def: &TableDef, expr: &ast::Expr) -> Result<String> {
    let mut subquery = false;
    let mut volatile = false;
    let _ = ast::visit_expressions(expr, |e| {
        match e {
            ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => {
                subquery = true;
            }
            ast::Expr::Function(f) => {
                let name = f.name.to_string().to_ascii_lowercase();
                volatile |= VOLATILE.contains(&name.trim_start_matches("pg_catalog."));
            }
            _ => {}
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    if subquery {
        return Err(Error::NotSupported {
            message: "cannot use subquery in index predicate".into(),
            detail: None,
        });
    }
    if volatile {
        return Err(Error::InvalidObjectDefinition(
            "functions in index predicate must be marked IMMUTABLE".into(),
        ));
    }
    let text = sql::ddl::bare_condition(expr);
    let schema = crate::conditions::row_schema(def);
    match crate::conditions::condition(crate::conditions::Kind::Check, &text, &schema) {
        Ok(_) => Ok(text),
        Err(Error::DatatypeMismatch(m)) => Err(Error::DatatypeMismatch(
            m.replace("argument of CHECK", "argument of WHERE"),
        )),
        Err(e) => Err(e),
    }
}

/// A UNIQUE constraint of CREATE TABLE or ALTER TABLE ADD CONSTRAINT: a unique index, named
/// `<table>_<columns>_key` as PostgreSQL names the constraint's index when no name is given.
pub(crate) fn add_unique_constraint(
    session: &mut Session,
    table: &str,
    constraint: &sql::ddl::UniqueConstraint,
) -> Result<()> {
    let def = session.table_def(table)?;
    let mut columns = Vec::new();
    for name in &constraint.columns {
        let (column, col) = def.column(name)?;
        if !col.ty.scalar().is_keyable() {
            return Err(Error::Sql(sql::Error::InvalidDefinition(format!(
                "column \"{}\" of type {} cannot be part of a unique constraint",
                col.name, col.ty
            ))));
        }
        if columns.iter().any(|p: &RowKeyPart| p.column == column) {
            return Err(Error::Sql(sql::Error::DuplicateColumn(col.name.clone())));
        }
        columns.push(RowKeyPart {
            column,
            desc: false,
        });
    }
    let catalog = session.db.catalog.clone();
    let temporary = def.temp_schema.is_some();
    let taken = |name: &str| {
        let scope = session.scope.lock().unwrap_or_else(|e| e.into_inner());
        catalog.name_taken(name, temporary, &scope.changes)
    };
    let name = match &constraint.name {
        Some(name) if taken(name) => {
            return Err(Error::Sql(sql::Error::DuplicateTable(name.clone())));
        }
        Some(name) => name.clone(),
        None => free_name(
            &format!("{}_{}_key", def.name, constraint.columns.join("_")),
            taken,
        ),
    };
    let index = IndexDef {
        name,
        keyspace: 0,
        unique: true,
        columns,
        include: Vec::new(),
        constraint: true,
        predicate: None,
    };
    add_index(session, &def, index)
}

/// Creates `index` of `def` in the session's transaction: its keyspace, its entries for the
/// rows the transaction sees, and the table's new definition.
fn add_index(session: &mut Session, def: &Arc<TableDef>, mut index: IndexDef) -> Result<()> {
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    let shape = IndexShape::of(def, &index)?;
    index.keyspace = with_txn(&txn, |t| {
        catalog.track_read(t, &def.name).map_err(sql_to_storage)?;
        t.create_keyspace(KeyspaceKind::Index, &index.name, shape.layout.clone())
    })?;
    // The backfill computes the index's expressions with the index in the definition.
    let mut new_def = def.as_ref().clone();
    new_def.indexes.push(index.clone());
    backfill(&new_def, &index, &shape, &txn)?;
    in_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        catalog.write(t, &mut scope.changes, new_def)?;
        Ok(())
    })
}

/// Writes the entries of every row of the table the transaction sees.
fn backfill(def: &TableDef, index: &IndexDef, shape: &IndexShape, txn: &SharedTxn) -> Result<()> {
    in_txn(txn, |t| {
        let mut rows: Vec<Vec<Value>> = t
            .scan(def.keyspace, &KeyRange::all(), Direction::Forward)?
            .map(|row| stored_values(def, &row?.value))
            .collect::<storage::Result<_>>()?;
        let mut written = BTreeSet::new();
        for values in &mut rows {
            crate::conditions::generate_expressions(def, values)?;
        }
        for values in &rows {
            let Some((key, value)) = shape.entry(def, index, values)? else {
                continue;
            };
            if index.unique {
                let prefix = shape.unique_prefix(index, values)?;
                let duplicate = written
                    .range::<Vec<u8>, _>(&prefix..)
                    .next()
                    .is_some_and(|k: &Vec<u8>| k.starts_with(&prefix));
                if duplicate {
                    return Err(in_new_index(unique_violation(def, index, values)));
                }
                written.insert(key.clone());
            }
            t.put(index.keyspace, &key, value)?;
        }
        Ok(())
    })
}

/// `DROP INDEX [IF EXISTS] name, …`.
pub async fn drop_indexes(
    session: &mut Session,
    names: &[ast::ObjectName],
    if_exists: bool,
    cascade: bool,
) -> Result<WriteResult> {
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    for name in names {
        let name = sql::ddl::table_name(name)?;
        let found = {
            let scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            catalog.find_index(&name, &scope.changes)
        };
        let Some((def, position)) = found else {
            if if_exists {
                session.notice(format!("index \"{name}\" does not exist, skipping"));
                continue;
            }
            return Err(Error::Sql(sql::Error::UnknownIndex(name)));
        };
        let mut new_def = def.as_ref().clone();
        if new_def.indexes[position].unique {
            let object = format!("index {name}");
            crate::foreign::refuse_if_needed(
                session,
                &txn,
                &mut new_def,
                position,
                cascade,
                &object,
            )?;
        }
        let index = new_def.indexes.remove(position);
        crate::expression_index::release(&mut new_def);
        in_txn(&txn, |t| {
            t.drop_keyspace(index.keyspace)?;
            let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            catalog.write(t, &mut scope.changes, new_def)?;
            Ok(())
        })?;
    }
    Ok(WriteResult::command("DROP INDEX"))
}

/// Renames index `name` to `to` (ALTER INDEX … RENAME TO, or ALTER TABLE … RENAME TO naming
/// an index). Its entries stay where they are; a UNIQUE constraint's index names the
/// constraint, which is renamed with it, and foreign keys that rely on it follow it, as in
/// PostgreSQL.
pub fn rename_index(session: &mut Session, name: &str, to: &str) -> Result<()> {
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    let changed = {
        let scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        // A UNIQUE constraint's index, or the primary key's: the constraint is renamed too.
        let (def, position) = match catalog.find_index(name, &scope.changes) {
            Some((def, position)) => (def, Some(position)),
            None => match catalog.find_primary_key(name, &scope.changes) {
                Some(def) => (def, None),
                None => return Err(Error::Sql(sql::Error::UnknownIndex(name.to_string()))),
            },
        };
        if catalog.name_taken(to, def.temp_schema.is_some(), &scope.changes) {
            return Err(Error::Sql(sql::Error::DuplicateTable(to.to_string())));
        }
        let constraint = position.is_none_or(|i| def.indexes[i].constraint);
        if constraint && crate::ddl::constraint_exists(&def, to) {
            return Err(Error::Sql(sql::Error::DuplicateObject(format!(
                "constraint \"{to}\" for relation \"{}\" already exists",
                def.name
            ))));
        }
        let mut changed = Vec::new();
        for table in catalog.tables(&scope.changes) {
            let mut new_def = table.as_ref().clone();
            let mut renamed = false;
            if table.name == def.name {
                match position {
                    Some(i) => new_def.indexes[i].name = to.to_string(),
                    None => new_def.pkey_name = Some(to.to_string()),
                }
                renamed = true;
            }
            for fk in &mut new_def.foreign_keys {
                if fk.table == def.name && fk.index.as_deref() == Some(name) {
                    fk.index = Some(to.to_string());
                    renamed = true;
                }
            }
            if renamed {
                changed.push(new_def);
            }
        }
        changed
    };
    in_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        for def in changed {
            catalog.write(t, &mut scope.changes, def)?;
        }
        Ok(())
    })
}

/// One line of a consistency check: an index of the table and how its stored entries
/// differ from those recomputed from the base rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    pub object: String,
    pub kind: &'static str,
    pub expected: u64,
    /// Entries the base rows call for that are not stored.
    pub missing: u64,
    /// Stored entries no base row calls for.
    pub stray: u64,
    /// Entries stored under the right key with the wrong value (INCLUDE columns).
    pub different: u64,
}

/// Recomputes every index and materialized view of `def` from its base rows in one
/// snapshot and compares. Generated values, index expressions' among them, are computed
/// again from the rows' other columns, not taken as stored.
pub fn check_table(view: &storage::ReadView, def: &TableDef) -> Result<Vec<CheckReport>> {
    let mut rows: Vec<Vec<Value>> = view
        .scan(def.keyspace, &KeyRange::all(), Direction::Forward)?
        .map(|row| stored_values(def, &row?.value))
        .collect::<storage::Result<_>>()?;
    for values in &mut rows {
        crate::conditions::generate(def, values)?;
    }
    let mut reports = Vec::new();
    for index in &def.indexes {
        let shape = IndexShape::of(def, index)?;
        let mut expected = BTreeMap::new();
        for values in &rows {
            if let Some((key, value)) = shape.entry(def, index, values)? {
                expected.insert(key, value);
            }
        }
        let kind = if shape.local {
            "local index"
        } else {
            "global index"
        };
        reports.push(compare(view, &index.name, kind, index.keyspace, expected)?);
    }
    for materialized in &def.views {
        let mut expected = BTreeMap::new();
        for values in &rows {
            if let Some((key, value)) = crate::view::entry(def, materialized, values)? {
                expected.insert(key, value);
            }
        }
        let name = &materialized.name;
        reports.push(compare(
            view,
            name,
            "materialized view",
            materialized.keyspace,
            expected,
        )?);
    }
    Ok(reports)
}

/// Compares the rows stored in `keyspace` with those expected.
fn compare(
    view: &storage::ReadView,
    object: &str,
    kind: &'static str,
    keyspace: storage::KeyspaceId,
    mut expected: BTreeMap<Vec<u8>, Vec<u8>>,
) -> Result<CheckReport> {
    let mut report = CheckReport {
        object: object.to_string(),
        kind,
        expected: expected.len() as u64,
        missing: 0,
        stray: 0,
        different: 0,
    };
    for row in view.scan(keyspace, &KeyRange::all(), Direction::Forward)? {
        let row = row?;
        match expected.remove(row.key.as_ref()) {
            None => report.stray += 1,
            Some(value) if value != row.value.as_ref() => report.different += 1,
            Some(_) => {}
        }
    }
    report.missing = expected.len() as u64;
    Ok(report)
}

/// `SELECT * FROM partita_check('t')`: one row per index of `t` with the entries expected
/// from its base rows and the missing, stray and different ones, read from one committed
/// snapshot.
pub struct CheckFunction {
    pub catalog: sql::Catalog,
    pub store: storage::Store,
}

impl std::fmt::Debug for CheckFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("partita_check")
    }
}

impl TableFunctionImpl for CheckFunction {
    fn call_with_args(
        &self,
        args: TableFunctionArgs,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let name = match args.exprs() {
            [DfExpr::Literal(ScalarValue::Utf8(Some(name)), _)] => name.to_ascii_lowercase(),
            _ => {
                return Err(DataFusionError::Plan(
                    "partita_check takes one table name, as text".into(),
                ));
            }
        };
        let def = self
            .catalog
            .table(&name, &Default::default())
            .ok_or_else(|| DataFusionError::Plan(format!("table '{name}' not found")))?;
        let reports = check_table(&self.store.snapshot(), &def)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let schema = Arc::new(Schema::new(vec![
            Field::new("object", DataType::Utf8, false),
            Field::new("kind", DataType::Utf8, false),
            Field::new("expected", DataType::Int64, false),
            Field::new("missing", DataType::Int64, false),
            Field::new("stray", DataType::Int64, false),
            Field::new("different", DataType::Int64, false),
        ]));
        let count = |f: fn(&CheckReport) -> u64| -> ArrayRef {
            Arc::new(Int64Array::from_iter_values(
                reports.iter().map(|r| f(r) as i64),
            ))
        };
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(StringArray::from_iter_values(
                    reports.iter().map(|r| r.object.as_str()),
                )),
                Arc::new(StringArray::from_iter_values(
                    reports.iter().map(|r| r.kind),
                )),
                count(|r| r.expected),
                count(|r| r.missing),
                count(|r| r.stray),
                count(|r| r.different),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}
