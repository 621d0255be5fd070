//! The system information functions clients call with catalog queries: `format_type`,
//! `pg_get_indexdef`, `pg_get_userbyid`, `pg_table_is_visible` … and the functions the
//! OID-alias casts are rewritten into (`'t'::regclass` is `partita_regclass('t')`).

use super::tables::{
    Relation, Snapshot, builtin_type, builtin_type_oid, catalog_table_oid, index_definition_shown,
    namespace_named, plain_view_definition, plain_view_oid, shown_condition, view_definition,
};
use super::*;
use crate::schema::StatementScope;
use datafusion::arrow::array::{Array, ArrayRef, new_null_array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility, create_udf,
};
use sql::Catalog;
use std::sync::{Arc, Mutex};
use storage::Store;

type Eval = dyn Fn(&Snapshot, &[ScalarValue]) -> DfResult<ScalarValue> + Send + Sync;

/// A function evaluated row by row against a snapshot of the catalog.
struct CatalogFunction {
    name: &'static str,
    signature: Signature,
    returns: DataType,
    /// What it returns of a text argument, when that differs (`relname::regclass` is the
    /// relation's OID; `oid::regclass` its name).
    text_returns: Option<DataType>,
    eval: Box<Eval>,
    catalog: Catalog,
    scope: Arc<Mutex<StatementScope>>,
}

impl std::fmt::Debug for CatalogFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for CatalogFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for CatalogFunction {}

impl std::hash::Hash for CatalogFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for CatalogFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(match (&self.text_returns, arg_types.first()) {
            (Some(returns), Some(DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)) => {
                returns.clone()
            }
            _ => self.returns.clone(),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let snapshot = Snapshot::of(&self.catalog, &self.scope);
        let arg_types: Vec<DataType> = (args.arg_fields.iter())
            .map(|f| f.data_type().clone())
            .collect();
        let returns = self.return_type(&arg_types)?;
        let rows = args.number_rows;
        if args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)))
        {
            let values: Vec<ScalarValue> = args
                .args
                .iter()
                .map(|a| match a {
                    ColumnarValue::Scalar(v) => v.clone(),
                    ColumnarValue::Array(_) => unreachable!(),
                })
                .collect();
            let v = (self.eval)(&snapshot, &values)?;
            return Ok(ColumnarValue::Scalar(cast(v, &returns)?));
        }
        let arrays: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<DfResult<_>>()?;
        if rows == 0 {
            return Ok(ColumnarValue::Array(new_null_array(&returns, 0)));
        }
        let mut out = Vec::with_capacity(rows);
        for r in 0..rows {
            let values = arrays
                .iter()
                .map(|a| ScalarValue::try_from_array(a, r))
                .collect::<DfResult<Vec<_>>>()?;
            out.push(cast((self.eval)(&snapshot, &values)?, &returns)?);
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}

/// `name::regclass`: the OID of the relation `name` names; 42P01 when none does.
/// A type's name as `'…'::regtype` reads it, for `builtin_type_oid` and `user_type_oid`:
/// without the schema when it is `pg_catalog` or `public`, the only ones types live in
/// (TypeORM's `'"pg_catalog"."int4"'`), and unquoted when quoting changes nothing
/// (`"int4"`); a quoted name with capitals (`"UserRole"`) keeps its quotes.
fn type_name_text(text: &str) -> String {
    // Each dotted part as written, and its value (unquoted, or folded to lower case).
    let mut parts: Vec<(String, String)> = Vec::new();
    let (mut written, mut value) = (String::new(), String::new());
    let mut quoted = false;
    let mut chars = text.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                written.push_str("\"\"");
                value.push('"');
            }
            '"' => {
                quoted = !quoted;
                written.push('"');
            }
            '.' if !quoted => {
                parts.push((std::mem::take(&mut written), std::mem::take(&mut value)));
            }
            c => {
                written.push(c);
                match quoted {
                    true => value.push(c),
                    false => value.extend(c.to_lowercase()),
                }
            }
        }
    }
    parts.push((written, value));
    if parts.len() == 2 && (parts[0].1 == "pg_catalog" || parts[0].1 == "public") {
        parts.remove(0);
    }
    parts
        .into_iter()
        .map(
            |(written, value)| match value.to_lowercase() == value && !value.contains('"') {
                true => value,
                false => written,
            },
        )
        .collect::<Vec<_>>()
        .join(".")
}

fn regclass_oid(s: &Snapshot, a: &[ScalarValue]) -> DfResult<ScalarValue> {
    let Some(name) = string(a.first()) else {
        return Ok(ScalarValue::Int32(None));
    };
    // As the regclass type reads a name: unquoted parts fold to lower case.
    let folded = sql::sequence::regclass_name(&name);
    let bare = folded.rsplit('.').next().unwrap_or("").to_string();
    if let Ok(n) = bare.parse::<i32>() {
        return Ok(ScalarValue::Int32(Some(n)));
    }
    match s.oid_named(&bare).or_else(|| catalog_table_oid(&bare)) {
        Some(oid) => Ok(ScalarValue::Int32(Some(oid))),
        None => Err(DataFusionError::External(Box::new(
            crate::error::Error::Sql(sql::Error::UnknownTable(bare)),
        ))),
    }
}

/// The relation a function's first argument names: an OID (`c.oid`, `'t'::regclass`) or a
/// name, as PostgreSQL's implicit text-to-regclass cast allows.
fn relation_arg<'a>(s: &'a Snapshot, a: &[ScalarValue]) -> Option<&'a Relation> {
    match int(a.first()) {
        Some(o) => s.relation(o as i32),
        None => string(a.first()).and_then(|n| s.relation_named(&n)),
    }
}

/// The size functions of psql's `\dt+`, `\di+`, `\dm+` and `\l+`. A relation's size is its
/// keyspace's size as the engine reports it (`Store::disk_space`: flushed tables plus the
/// unflushed memtable); a primary key has none of its own, being the table's storage order.
fn register_sizes(add: &dyn Fn(&'static str, DataType, Box<Eval>), store: &Store) {
    let sized = |store: &Store, f: fn(&Store, &Relation) -> u64| -> Box<Eval> {
        let store = store.clone();
        Box::new(move |s, a| {
            let relation = relation_arg(s, a);
            if relation.is_none() && int(a.first()).is_none() {
                // A name that resolves to nothing, as the regclass cast would refuse it.
                if let Some(name) = string(a.first()) {
                    return Err(DataFusionError::External(Box::new(
                        crate::error::Error::Sql(sql::Error::UnknownTable(name)),
                    )));
                }
            }
            Ok(ScalarValue::Int64(relation.map(|r| f(&store, r) as i64)))
        })
    };
    add(
        "pg_relation_size",
        DataType::Int64,
        sized(store, relation_size),
    );
    add(
        "pg_table_size",
        DataType::Int64,
        sized(store, relation_size),
    );
    add(
        "pg_indexes_size",
        DataType::Int64,
        sized(store, indexes_size),
    );
    add(
        "pg_total_relation_size",
        DataType::Int64,
        sized(store, |store, r| {
            relation_size(store, r) + indexes_size(store, r)
        }),
    );
    let database = store.clone();
    add(
        "pg_database_size",
        DataType::Int64,
        Box::new(move |_, _| {
            Ok(ScalarValue::Int64(Some(
                database
                    .keyspaces()
                    .iter()
                    .map(|k| database.disk_space(k.id) as i64)
                    .sum(),
            )))
        }),
    );
    add(
        "pg_size_pretty",
        DataType::Utf8,
        Box::new(|_, a| Ok(utf8(int(a.first()).map(size_pretty)))),
    );
}

fn relation_size(store: &Store, r: &Relation) -> u64 {
    match r {
        Relation::Table(t) => store.disk_space(t.keyspace),
        Relation::PrimaryKey(_) => 0,
        Relation::Index(t, i) => store.disk_space(t.indexes[*i].keyspace),
    }
}

/// The bytes of a table's index tables.
fn indexes_size(store: &Store, r: &Relation) -> u64 {
    match r {
        Relation::Table(t) => t.indexes.iter().map(|i| store.disk_space(i.keyspace)).sum(),
        _ => 0,
    }
}

/// PostgreSQL's `pg_size_pretty`: bytes below 10 kB, then the largest unit under 20,480
/// of it, rounded half away from zero.
fn size_pretty(bytes: i64) -> String {
    const UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
    if bytes.abs() < 10 * 1024 {
        return format!("{bytes} bytes");
    }
    // Kept in half-units so the last step can round half away from zero.
    let mut halves = bytes / (1 << 9);
    for (i, unit) in UNITS.iter().enumerate() {
        if i == UNITS.len() - 1 || halves.abs() < 20 * 1024 - 1 {
            let rounded = (halves + halves.signum()) / 2;
            return format!("{rounded} {unit}");
        }
        halves /= 1 << 10;
    }
    unreachable!("the last unit always returns")
}

fn cast(v: ScalarValue, ty: &DataType) -> DfResult<ScalarValue> {
    if v.is_null() {
        ScalarValue::try_from(ty)
    } else {
        v.cast_to(ty)
    }
}

fn int(v: Option<&ScalarValue>) -> Option<i64> {
    let v = v?;
    if v.is_null() {
        return None;
    }
    match v.cast_to(&DataType::Int64).ok()? {
        ScalarValue::Int64(i) => i,
        _ => None,
    }
}

fn string(v: Option<&ScalarValue>) -> Option<String> {
    let v = v?;
    if v.is_null() {
        return None;
    }
    match v.cast_to(&DataType::Utf8).ok()? {
        ScalarValue::Utf8(s) => s,
        _ => None,
    }
}

fn utf8(v: Option<String>) -> ScalarValue {
    ScalarValue::Utf8(v)
}

/// A value as JSON text (`json_build_object`'s arguments).
fn json_value(v: &ScalarValue) -> String {
    if v.is_null() {
        return "null".into();
    }
    match v {
        ScalarValue::Boolean(Some(b)) => b.to_string(),
        ScalarValue::Int8(_)
        | ScalarValue::Int16(_)
        | ScalarValue::Int32(_)
        | ScalarValue::Int64(_)
        | ScalarValue::Float32(_)
        | ScalarValue::Float64(_)
        | ScalarValue::Decimal128(..) => v.to_string(),
        other => {
            let text = other.to_string();
            let mut out = String::from("\"");
            for c in text.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
            out.push('"');
            out
        }
    }
}

/// The name of type `oid` when CREATE TYPE made it.
fn user_type(s: &Snapshot, oid: i64) -> Option<String> {
    s.user_type_name(i32::try_from(oid).ok()?)
}

/// `format_type(oid, typmod)`: the type's SQL name with its modifier.
pub fn format_type(type_oid: i64, typmod: Option<i64>) -> String {
    let modifier = typmod.filter(|&m| m >= 4).map(|m| m - 4);
    match type_oid {
        0 => "-".to_string(),
        16 => "boolean".to_string(),
        18 => "\"char\"".to_string(),
        20 => "bigint".to_string(),
        21 => "smallint".to_string(),
        23 => "integer".to_string(),
        700 => "real".to_string(),
        701 => "double precision".to_string(),
        // As PostgreSQL: `character` when no modifier is given, `bpchar` when it is -1.
        1042 => match (typmod, modifier) {
            (_, Some(n)) => format!("character({n})"),
            (Some(_), None) => "bpchar".to_string(),
            (None, None) => "character".to_string(),
        },
        1043 => match modifier {
            Some(n) => format!("character varying({n})"),
            None => "character varying".to_string(),
        },
        1083 => match typmod.filter(|p| (0..=6).contains(p)) {
            Some(p) => format!("time({p}) without time zone"),
            None => "time without time zone".to_string(),
        },
        // timestamp(p)'s modifier is p itself.
        1114 | 1184 => {
            let zone = match type_oid {
                1114 => "without",
                _ => "with",
            };
            match typmod.filter(|p| (0..=6).contains(p)) {
                Some(p) => format!("timestamp({p}) {zone} time zone"),
                None => format!("timestamp {zone} time zone"),
            }
        }
        1700 => match modifier {
            Some(m) => format!("numeric({},{})", m >> 16, m & 0xffff),
            None => "numeric".to_string(),
        },
        other => match builtin_type(other as i32) {
            Some((_, elem, _)) if elem != 0 => {
                format!("{}[]", format_type(i64::from(elem), typmod))
            }
            Some((name, ..)) => name,
            None => "???".to_string(),
        },
    }
}

/// Registers the catalog functions on `ctx`.
pub fn register(
    ctx: &SessionContext,
    catalog: &Catalog,
    store: &Store,
    scope: &Arc<Mutex<StatementScope>>,
) {
    let add = |name: &'static str, returns: DataType, eval: Box<Eval>| {
        ctx.register_udf(ScalarUDF::new_from_impl(CatalogFunction {
            name,
            signature: Signature::variadic_any(Volatility::Stable),
            returns,
            text_returns: None,
            eval,
            catalog: catalog.clone(),
            scope: Arc::clone(scope),
        }));
    };
    use DataType::{Boolean, Int32, Utf8};
    // No relation is a partition (in PostgreSQL's sense), so none has ancestors: NULL, which
    // psql's `confrelid IN (SELECT pg_partition_ancestors(r) UNION ALL VALUES (r))` ignores.
    add(
        "pg_partition_ancestors",
        Int32,
        Box::new(|_, _| Ok(ScalarValue::Int32(None))),
    );
    add(
        "pg_get_userbyid",
        Utf8,
        Box::new(|s, a| {
            Ok(utf8(int(a.first()).map(|o| {
                if o == i64::from(OWNER_OID) {
                    s.identity.user.to_string()
                } else {
                    format!("unknown (OID={o})")
                }
            })))
        }),
    );
    add(
        "pg_table_is_visible",
        Boolean,
        Box::new(|s, a| {
            Ok(ScalarValue::Boolean(
                int(a.first()).map(|o| s.visible(o as i32)),
            ))
        }),
    );
    for name in [
        "pg_type_is_visible",
        "pg_function_is_visible",
        "pg_collation_is_visible",
        "has_table_privilege",
        "has_schema_privilege",
        "has_database_privilege",
        "has_column_privilege",
        "has_any_column_privilege",
        "pg_has_role",
    ] {
        add(
            name,
            Boolean,
            Box::new(|_, _| Ok(ScalarValue::Boolean(Some(true)))),
        );
    }
    add(
        "json_build_object",
        Utf8,
        Box::new(|_, a| {
            let mut out = String::from("{");
            for (i, pair) in a.chunks(2).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&json_value(&pair[0]));
                out.push_str(" : ");
                out.push_str(&pair.get(1).map_or_else(|| "null".into(), json_value));
            }
            out.push('}');
            Ok(ScalarValue::Utf8(Some(out)))
        }),
    );
    add(
        "pg_relation_is_publishable",
        Boolean,
        Box::new(|_, _| Ok(ScalarValue::Boolean(Some(false)))),
    );
    // COMMENT ON's texts: a table's (obj_description(oid[, 'pg_class'])) and a column's by
    // its attnum (col_description(oid, n)).
    add(
        "obj_description",
        Utf8,
        Box::new(|s, a| {
            let class = string(a.get(1));
            if class.as_deref().is_some_and(|c| c != "pg_class") {
                return Ok(ScalarValue::Utf8(None));
            }
            Ok(utf8(int(a.first()).and_then(|o| s.comment(o as i32, 0))))
        }),
    );
    add(
        "col_description",
        Utf8,
        Box::new(|s, a| {
            Ok(utf8(match (int(a.first()), int(a.get(1))) {
                (Some(o), Some(n)) if n > 0 => s.comment(o as i32, n as usize),
                _ => None,
            }))
        }),
    );
    for name in [
        "shobj_description",
        "pg_get_statisticsobjdef_columns",
        "pg_get_ruledef",
        "pg_get_partkeydef",
        "pg_get_triggerdef",
    ] {
        add(name, Utf8, Box::new(|_, _| Ok(ScalarValue::Utf8(None))));
    }
    add(
        "format_type",
        Utf8,
        Box::new(|s, a| {
            Ok(utf8(int(a.first()).map(|o| {
                user_type(s, o).unwrap_or_else(|| format_type(o, int(a.get(1))))
            })))
        }),
    );
    // Defaults are kept as SQL text, which is what adbin holds.
    add(
        "pg_get_expr",
        Utf8,
        Box::new(|_, a| {
            // Pretty (psql's \d): without the parentheses the plain form puts around an
            // operator.
            let pretty = matches!(a.get(2), Some(ScalarValue::Boolean(Some(true))));
            Ok(utf8(string(a.first()).map(|e| match pretty {
                true => unparenthesized(&e).to_string(),
                false => e,
            })))
        }),
    );
    add(
        "pg_get_indexdef",
        Utf8,
        Box::new(|s, a| {
            let Some(r) = int(a.first()).and_then(|o| s.relation(o as i32)) else {
                return Ok(ScalarValue::Utf8(None));
            };
            match int(a.get(1)).unwrap_or(0) {
                0 => Ok(utf8(index_definition_shown(
                    r,
                    matches!(a.get(2), Some(ScalarValue::Boolean(Some(true)))),
                ))),
                n => {
                    let columns = r.attributes();
                    let t = r.table();
                    let pretty = matches!(a.get(2), Some(ScalarValue::Boolean(Some(true))));
                    Ok(utf8(columns.get(n as usize - 1).map(|&c| {
                        match crate::expression_index::is_expression(&t.columns[c]) {
                            true if pretty => crate::expression_index::shown(t, c),
                            true => crate::expression_index::in_definition(t, c),
                            false => t.columns[c].name.clone(),
                        }
                    })))
                }
            }
        }),
    );
    add(
        "pg_get_constraintdef",
        Utf8,
        Box::new(|s, a| {
            let Some(o) = int(a.first()) else {
                return Ok(ScalarValue::Utf8(None));
            };
            // Pretty (psql's \d): a CHECK's condition without the parentheses the plain form
            // puts around an operator.
            let pretty = matches!(a.get(1), Some(ScalarValue::Boolean(Some(true))));
            let condition = |text: &str| match pretty {
                true => text.to_string(),
                false => shown_condition(text),
            };
            let check = s.tables.iter().find_map(|t| {
                let unique = t.indexes.iter().find(|i| {
                    i.constraint && i64::from(primary_key_constraint_oid(i.keyspace)) == o
                });
                if let Some(index) = unique {
                    let names: Vec<&str> = index
                        .columns
                        .iter()
                        .map(|p| t.columns[p.column].name.as_str())
                        .collect();
                    return Some(format!("UNIQUE ({})", names.join(", ")));
                }
                let foreign = t
                    .foreign_keys
                    .iter()
                    .enumerate()
                    .find(|(i, _)| i64::from(foreign_key_oid(t.keyspace, *i)) == o);
                if let Some((_, fk)) = foreign {
                    let parent = s.tables.iter().find(|p| p.name == fk.table);
                    return Some(crate::foreign::definition(t, fk, parent.map(|p| &**p)));
                }
                t.checks
                    .iter()
                    .enumerate()
                    .find(|(i, _)| i64::from(check_constraint_oid(t.keyspace, *i)) == o)
                    .map(|(_, c)| match c.not_valid {
                        true => format!("CHECK ({}) NOT VALID", condition(&c.expr)),
                        false => format!("CHECK ({})", condition(&c.expr)),
                    })
            });
            Ok(utf8(check.or_else(|| {
                s.tables
                    .iter()
                    .find(|t| i64::from(primary_key_constraint_oid(t.keyspace)) == o)
                    .map(|t| {
                        let names: Vec<&str> = t
                            .key_columns()
                            .iter()
                            .map(|&c| t.columns[c].name.as_str())
                            .collect();
                        format!("PRIMARY KEY ({})", names.join(", "))
                    })
            })))
        }),
    );
    add(
        "pg_get_viewdef",
        Utf8,
        Box::new(|s, a| {
            let plain = s.views.iter().find(|v| match int(a.first()) {
                Some(o) => i64::from(plain_view_oid(&v.name)) == o,
                None => string(a.first()).is_some_and(|n| n == v.name),
            });
            if let Some(v) = plain {
                return Ok(utf8(Some(plain_view_definition(v))));
            }
            Ok(utf8(match relation_arg(s, a) {
                Some(Relation::Table(t)) => view_definition(t, s),
                _ => None,
            }))
        }),
    );
    add(
        "pg_encoding_to_char",
        Utf8,
        Box::new(|_, a| {
            Ok(utf8(
                int(a.first()).map(|e| if e == 6 { "UTF8" } else { "" }.to_string()),
            ))
        }),
    );
    add(
        "array_upper",
        Int32,
        Box::new(|_, a| {
            let dim = int(a.get(1));
            Ok(match a.first() {
                Some(ScalarValue::List(l)) if dim == Some(1) && !l.is_null(0) => {
                    let len = l.value(0).len() as i32;
                    ScalarValue::Int32((len > 0).then_some(len))
                }
                _ => ScalarValue::Int32(None),
            })
        }),
    );
    // The OID-alias types: `'t'::regclass` is the relation's OID, `oid::regclass` its name.
    add("partita_regclass", Int32, Box::new(regclass_oid));
    // Of an OID, the relation's name; of text (a column of names, a parameter), its OID.
    ctx.register_udf(ScalarUDF::new_from_impl(CatalogFunction {
        name: "partita_relname",
        signature: Signature::variadic_any(Volatility::Stable),
        returns: Utf8,
        text_returns: Some(Int32),
        eval: Box::new(|s, a| match int(a.first()) {
            Some(o) => Ok(utf8(Some(
                s.name_of(o as i32)
                    .or_else(|| super::tables::catalog_table_name(o as i32).map(str::to_string))
                    .unwrap_or_else(|| o.to_string()),
            ))),
            None => regclass_oid(s, a),
        }),
        catalog: catalog.clone(),
        scope: Arc::clone(scope),
    }));
    add(
        "partita_regtype",
        Int32,
        Box::new(|s, a| {
            let Some(name) = string(a.first()) else {
                return Ok(ScalarValue::Int32(None));
            };
            let bare = type_name_text(&name);
            match builtin_type_oid(&bare).or_else(|| s.user_type_oid(&bare)) {
                Some(o) => Ok(ScalarValue::Int32(Some(o))),
                None => Err(DataFusionError::External(Box::new(
                    crate::error::Error::Sql(sql::Error::UnknownType(bare)),
                ))),
            }
        }),
    );
    // to_regclass / to_regtype: the OID, or NULL when there is no such relation or type.
    add(
        "to_regclass",
        Int32,
        Box::new(|s, a| {
            let name = sql::sequence::regclass_name(&string(a.first()).unwrap_or_default());
            let bare = name.rsplit('.').next().unwrap_or("");
            Ok(ScalarValue::Int32(
                s.oid_named(bare).or_else(|| catalog_table_oid(bare)),
            ))
        }),
    );
    add(
        "to_regtype",
        Int32,
        Box::new(|s, a| {
            let bare = type_name_text(&string(a.first()).unwrap_or_default());
            Ok(ScalarValue::Int32(
                builtin_type_oid(&bare).or_else(|| s.user_type_oid(&bare)),
            ))
        }),
    );
    add(
        "partita_typname",
        Utf8,
        Box::new(|s, a| {
            // A type's name as text (`(udt_schema || '.' || udt_name)::regtype`, TypeORM's)
            // is read as `'…'::regtype` reads it, then shown by its name.
            let text = match a.first() {
                Some(
                    ScalarValue::Utf8(Some(name))
                    | ScalarValue::LargeUtf8(Some(name))
                    | ScalarValue::Utf8View(Some(name)),
                ) => Some(name.clone()),
                _ => None,
            };
            let oid = match text {
                // An OID as text.
                Some(name) if name.trim().parse::<i64>().is_ok() => name.trim().parse().ok(),
                Some(name) => {
                    let bare = type_name_text(&name);
                    match builtin_type_oid(&bare).or_else(|| s.user_type_oid(&bare)) {
                        Some(o) => Some(i64::from(o)),
                        None => {
                            return Err(DataFusionError::External(Box::new(
                                crate::error::Error::Sql(sql::Error::UnknownType(bare)),
                            )));
                        }
                    }
                }
                None => int(a.first()),
            };
            Ok(utf8(oid.map(|o| {
                user_type(s, o).unwrap_or_else(|| format_type(o, None))
            })))
        }),
    );
    // `x::regclass` as text (`'nextval(''' || seq::regclass || '''::regclass)'`): the
    // relation's name, of an OID or of a name.
    add(
        "partita_regclass_name",
        Utf8,
        Box::new(|s, a| {
            let oid = match int(a.first()) {
                Some(o) => Some(o as i32),
                None => match regclass_oid(s, a)? {
                    ScalarValue::Int32(o) => o,
                    _ => None,
                },
            };
            Ok(utf8(oid.map(|o| {
                s.name_of(o)
                    .or_else(|| super::tables::catalog_table_name(o).map(str::to_string))
                    .unwrap_or_else(|| o.to_string())
            })))
        }),
    );
    // Of an OID, the schema's name; of text (`$1::regnamespace`), its OID.
    ctx.register_udf(ScalarUDF::new_from_impl(CatalogFunction {
        name: "partita_nspname",
        signature: Signature::variadic_any(Volatility::Stable),
        returns: Utf8,
        text_returns: Some(Int32),
        eval: Box::new(|s, a| {
            if let Some(
                ScalarValue::Utf8(_) | ScalarValue::Utf8View(_) | ScalarValue::LargeUtf8(_),
            ) = a.first()
            {
                let Some(name) = string(a.first()) else {
                    return Ok(ScalarValue::Int32(None));
                };
                let name = sql::sequence::regclass_name(&name);
                let oid = match name.as_str() {
                    "pg_catalog" => Some(super::PG_CATALOG_NAMESPACE),
                    "public" => Some(super::PUBLIC_NAMESPACE),
                    "information_schema" => Some(super::INFORMATION_SCHEMA_NAMESPACE),
                    other if s.temp_schema.as_deref() == Some(other) => Some(super::TEMP_NAMESPACE),
                    _ => None,
                };
                return match oid {
                    Some(o) => Ok(ScalarValue::Int32(Some(o))),
                    None => Err(DataFusionError::External(Box::new(
                        crate::error::Error::UnknownSchema(name),
                    ))),
                };
            }
            Ok(utf8(int(a.first()).map(|o| {
                namespace_named(o as i32).map_or_else(|| o.to_string(), str::to_string)
            })))
        }),
        catalog: catalog.clone(),
        scope: Arc::clone(scope),
    }));
    add(
        "current_schemas",
        DataType::new_list(Utf8, true),
        Box::new(|_, a| {
            let implicit = matches!(a.first(), Some(ScalarValue::Boolean(Some(true))));
            let names: Vec<ScalarValue> = implicit
                .then_some("pg_catalog")
                .into_iter()
                .chain(["public"])
                .map(|n| ScalarValue::Utf8(Some(n.into())))
                .collect();
            Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &names, &Utf8,
            )))
        }),
    );
    register_sizes(&add, store);
    let constant = |name: &str, value: ScalarValue| {
        let data_type = value.data_type();
        ctx.register_udf(create_udf(
            name,
            vec![],
            data_type,
            Volatility::Stable,
            Arc::new(move |_args: &[ColumnarValue]| Ok(ColumnarValue::Scalar(value.clone()))),
        ));
    };
    constant("pg_is_in_recovery", ScalarValue::Boolean(Some(false)));
    // The session's names, read when called: the startup packet sets them after the
    // session is made.
    let named = |name: &str, pick: fn(&crate::schema::Identity) -> &Arc<str>| {
        let scope = Arc::clone(scope);
        ctx.register_udf(create_udf(
            name,
            vec![],
            Utf8,
            Volatility::Stable,
            Arc::new(move |_args: &[ColumnarValue]| {
                let scope = scope.lock().unwrap_or_else(|e| e.into_inner());
                let value = pick(&scope.identity).to_string();
                Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(value))))
            }),
        ));
    };
    for name in USER_FUNCTIONS {
        named(name, |i| &i.user);
    }
    named("current_database", |i| &i.database);
}

/// `text` without the parentheses around all of it, if it has them: `(a * 2)` is `a * 2`,
/// `(a) + (b)` stays.
fn unparenthesized(text: &str) -> &str {
    let Some(inner) = text.strip_prefix('(').and_then(|t| t.strip_suffix(')')) else {
        return text;
    };
    let mut depth = 0i32;
    let mut quoted = false;
    for c in inner.chars() {
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => {
                depth -= 1;
                if depth < 0 {
                    return text;
                }
            }
            _ => {}
        }
    }
    inner
}

/// The functions that give the session's user name.
const USER_FUNCTIONS: [&str; 4] = ["current_user", "session_user", "user", "current_role"];

/// Registers the session's names as constants in a context made for one statement
/// (RETURNING's, an upsert's SET, ALTER TYPE's USING).
pub(crate) fn register_identity(ctx: &SessionContext, identity: &crate::schema::Identity) {
    let constant = |name: &str, value: &Arc<str>| {
        let value = ScalarValue::Utf8(Some(value.to_string()));
        ctx.register_udf(create_udf(
            name,
            vec![],
            DataType::Utf8,
            Volatility::Stable,
            Arc::new(move |_args: &[ColumnarValue]| Ok(ColumnarValue::Scalar(value.clone()))),
        ));
    };
    for name in USER_FUNCTIONS {
        constant(name, &identity.user);
    }
    constant("current_database", &identity.database);
}
