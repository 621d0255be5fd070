//! The functions of serial and identity columns' sequences: `nextval`, `setval`, `currval`,
//! `lastval` and `pg_get_serial_sequence`. A serial column's DEFAULT is `nextval('<table>_<column>_seq')`
//! (see `sql::catalog`, which keeps the values); an INSERT evaluates it once per row.

use crate::schema::StatementScope;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Builder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use sql::{Catalog, CatalogChanges};
use std::sync::{Arc, Mutex};
use storage::Store;

/// Registers the sequence functions over `catalog`'s sequences in `store`.
/// A sequence is known when a column of the tables the statement sees (`scope`'s
/// uncommitted changes included) takes its values.
pub fn register(
    ctx: &SessionContext,
    catalog: &Catalog,
    store: &Store,
    scope: &Arc<Mutex<StatementScope>>,
) {
    // One session's: `currval` and `lastval` answer what its own nextval calls got.
    let seen = Arc::new(Mutex::new(Seen::default()));
    for op in [Op::Next, Op::Set, Op::Current, Op::Last] {
        ctx.register_udf(ScalarUDF::new_from_impl(SequenceFunction {
            op,
            catalog: catalog.clone(),
            store: store.clone(),
            scope: Arc::clone(scope),
            seen: Arc::clone(&seen),
            signature: match op {
                Op::Next | Op::Current => {
                    Signature::exact(vec![DataType::Utf8], Volatility::Volatile)
                }
                Op::Set => {
                    Signature::exact(vec![DataType::Utf8, DataType::Int64], Volatility::Volatile)
                }
                Op::Last => Signature::exact(vec![], Volatility::Volatile),
            },
        }));
    }
    ctx.register_udf(ScalarUDF::new_from_impl(SerialSequence {
        catalog: catalog.clone(),
        scope: Arc::clone(scope),
        signature: Signature::exact(vec![DataType::Utf8, DataType::Utf8], Volatility::Stable),
    }));
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Next,
    Set,
    Current,
    Last,
}

/// The values a session's `nextval` (and `setval`) calls gave.
#[derive(Default)]
struct Seen {
    /// By sequence: what `currval` answers.
    by_sequence: std::collections::HashMap<String, i64>,
    /// What the last `nextval` gave: what `lastval` answers.
    last: Option<i64>,
}

struct SequenceFunction {
    op: Op,
    catalog: Catalog,
    store: Store,
    scope: Arc<Mutex<StatementScope>>,
    seen: Arc<Mutex<Seen>>,
    signature: Signature,
}

/// The catalog changes of the statement's transaction.
fn changes(scope: &Mutex<StatementScope>) -> CatalogChanges {
    scope
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .changes
        .clone()
}

impl std::fmt::Debug for SequenceFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.op)
    }
}

impl PartialEq for SequenceFunction {
    fn eq(&self, other: &Self) -> bool {
        self.op == other.op
    }
}

impl Eq for SequenceFunction {}

impl std::hash::Hash for SequenceFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.op.hash(state)
    }
}

/// A sequence's name as `nextval` takes it: `t_id_seq` or `public.t_id_seq`.
fn sequence_name(text: &str) -> String {
    let name = text.trim().trim_matches('"');
    name.strip_prefix("public.").unwrap_or(name).to_string()
}

fn external(e: sql::Error) -> DataFusionError {
    DataFusionError::External(Box::new(crate::Error::Sql(e)))
}

impl ScalarUDFImpl for SequenceFunction {
    fn name(&self) -> &str {
        match self.op {
            Op::Next => "nextval",
            Op::Set => "setval",
            Op::Current => "currval",
            Op::Last => "lastval",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let not_yet = |what: String| {
            DataFusionError::External(Box::new(crate::Error::NotInPrerequisiteState(what)))
        };
        if self.op == Op::Last {
            let last = self.seen.lock().unwrap_or_else(|e| e.into_inner()).last;
            let last =
                last.ok_or_else(|| not_yet("lastval is not yet defined in this session".into()))?;
            return Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::Int64(Some(last)),
            ));
        }
        let names = args.args[0].to_array(n)?;
        let names = names.as_string::<i32>();
        let values: Option<ArrayRef> = match self.op {
            Op::Set => Some(args.args[1].to_array(n)?),
            Op::Next | Op::Current | Op::Last => None,
        };
        let changes = changes(&self.scope);
        let mut out = Int64Builder::with_capacity(n);
        for r in 0..n {
            if names.is_null(r) {
                out.append_null();
                continue;
            }
            let name = sequence_name(names.value(r));
            let value = match (&values, self.op) {
                (_, Op::Current) => {
                    if !self.catalog.sequence_exists(&name, &changes) {
                        return Err(external(sql::Error::UnknownTable(name)));
                    }
                    let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
                    let value = seen.by_sequence.get(&name).copied().ok_or_else(|| {
                        not_yet(format!(
                            "currval of sequence \"{name}\" is not yet defined in this session"
                        ))
                    })?;
                    out.append_value(value);
                    continue;
                }
                (None, _) => self.catalog.next_value(&self.store, &name, &changes),
                (Some(values), _) => {
                    let values = values.as_primitive::<Int64Type>();
                    if values.is_null(r) {
                        out.append_null();
                        continue;
                    }
                    self.catalog
                        .set_value(&self.store, &name, values.value(r), &changes)
                }
            };
            let value = value.map_err(external)?;
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            seen.by_sequence.insert(name, value);
            if self.op == Op::Next {
                seen.last = Some(value);
            }
            out.append_value(value);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

/// `pg_get_serial_sequence(table, column)`: the sequence of a serial or identity column,
/// NULL for another column.
struct SerialSequence {
    catalog: Catalog,
    scope: Arc<Mutex<StatementScope>>,
    signature: Signature,
}

impl std::fmt::Debug for SerialSequence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("pg_get_serial_sequence")
    }
}

impl PartialEq for SerialSequence {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for SerialSequence {}

impl std::hash::Hash for SerialSequence {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        "pg_get_serial_sequence".hash(state)
    }
}

impl ScalarUDFImpl for SerialSequence {
    fn name(&self) -> &str {
        "pg_get_serial_sequence"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let tables = args.args[0].to_array(n)?;
        let columns = args.args[1].to_array(n)?;
        let (tables, columns) = (tables.as_string::<i32>(), columns.as_string::<i32>());
        let changes = changes(&self.scope);
        let mut out = StringBuilder::new();
        for r in 0..n {
            if tables.is_null(r) || columns.is_null(r) {
                out.append_null();
                continue;
            }
            let table = sequence_name(tables.value(r));
            let column = columns.value(r).trim_matches('"');
            let def = self
                .catalog
                .table(&table, &changes)
                .ok_or_else(|| external(sql::Error::UnknownTable(table.clone())))?;
            let sequence = def
                .columns
                .iter()
                .find(|c| c.name == column)
                .and_then(|c| c.owned_sequence(&table));
            out.append_option(sequence.map(|s| format!("public.{s}")));
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
