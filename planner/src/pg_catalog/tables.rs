//! The catalog tables: a schema provider for `pg_catalog` and one for `information_schema`,
//! each table built from a `Snapshot` of Partita's catalog when a statement resolves it.

use super::*;
use crate::expression_index::is_expression;
use crate::schema::StatementScope;
use datafusion::arrow::array::{ArrayRef, RecordBatch, new_empty_array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::SchemaProvider;
use datafusion::common::ScalarValue;
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::error::Result as DfResult;
use sql::types::{FIELD_TYPE_KEY, SqlType};
use sql::{Catalog, TableDef};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A relation in `pg_class`.
#[derive(Clone)]
pub enum Relation {
    /// A table or a materialized view.
    Table(Arc<TableDef>),
    /// A table's primary key, shown as a unique index: Partita's key is the table's storage
    /// order, and `pg_get_indexdef` shows it with its partition key.
    PrimaryKey(Arc<TableDef>),
    /// An index table: the base table and the index's position in it.
    Index(Arc<TableDef>, usize),
}

impl Relation {
    pub fn oid(&self) -> i32 {
        match self {
            Relation::Table(t) => relation_oid(t.keyspace),
            Relation::PrimaryKey(t) => primary_key_oid(t.keyspace),
            Relation::Index(t, i) => relation_oid(t.indexes[*i].keyspace),
        }
    }

    pub fn name(&self) -> String {
        match self {
            Relation::Table(t) => t.name.clone(),
            Relation::PrimaryKey(t) => t.primary_key_name(),
            Relation::Index(t, i) => t.indexes[*i].name.clone(),
        }
    }

    /// The columns the relation shows in `pg_attribute`, as (base column, attnum) pairs:
    /// a table's visible columns, an index's key and INCLUDE columns.
    pub fn attributes(&self) -> Vec<usize> {
        match self {
            Relation::Table(t) => (0..t.columns.len())
                .filter(|&i| !t.columns[i].hidden)
                .collect(),
            Relation::PrimaryKey(t) => t.key_columns(),
            Relation::Index(t, i) => {
                let index = &t.indexes[*i];
                index
                    .columns
                    .iter()
                    .map(|p| p.column)
                    .chain(index.include.iter().copied())
                    .collect()
            }
        }
    }

    /// The table the relation belongs to.
    pub fn table(&self) -> &Arc<TableDef> {
        match self {
            Relation::Table(t) | Relation::PrimaryKey(t) | Relation::Index(t, _) => t,
        }
    }
}

/// Whether the table has a declared primary key (not the hidden row id).
pub fn has_primary_key(t: &TableDef) -> bool {
    !t.has_row_id()
}

/// The attnum of base column `column` of `t` (hidden columns are not counted).
pub fn attnum(t: &TableDef, column: usize) -> i16 {
    1 + t.columns[..column].iter().filter(|c| !c.hidden).count() as i16
}

/// The catalog as one statement sees it.
pub struct Snapshot {
    pub tables: Vec<Arc<TableDef>>,
    pub relations: Vec<Relation>,
    /// Plain views (they store nothing, so they are not among `relations`).
    pub views: Vec<Arc<sql::PlainView>>,
    /// Sequences, CREATE SEQUENCE's and serial and identity columns'.
    pub sequences: Vec<sql::catalog::Sequence>,
    /// The session's user and database names, which the one role and database take.
    pub identity: crate::schema::Identity,
    /// The types made by CREATE TYPE (enums).
    pub types: Vec<Arc<sql::types::EnumType>>,
    /// The extensions CREATE EXTENSION installed.
    pub extensions: Vec<Arc<sql::catalog::Extension>>,
    /// The session's schema of temporary tables.
    pub temp_schema: Option<Arc<str>>,
}

/// The schema a table is in: `public`, or the session's for a temporary table.
pub fn schema_name(t: &TableDef) -> &str {
    t.temp_schema.as_deref().unwrap_or("public")
}

/// The `pg_enum` OID of label `i` of the enum type `type_oid`, in a range of its own.
fn enum_label_oid(type_oid: i32, i: usize) -> i32 {
    let number = (type_oid - sql::catalog::FIRST_TYPE_OID) / 2;
    0x3800_0000_i32
        .wrapping_add(number.wrapping_mul(1024))
        .wrapping_add(i as i32)
}

/// A sequence's OID, from its name as a plain view's is (`plain_view_oid`), in a range of
/// its own.
pub fn sequence_oid(name: &str) -> i32 {
    0x1000_0000 + plain_view_oid(name) - 0x5000_0000
}

/// A plain view's OID, in a range of its own: views have no keyspace, so the OID comes from
/// the name (stable while the view is).
pub fn plain_view_oid(name: &str) -> i32 {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    0x5000_0000 + (hash % 0x0fff_ffff) as i32
}

/// A plain view's definition as `pg_get_viewdef` and `pg_views` give it.
pub fn plain_view_definition(view: &sql::PlainView) -> String {
    format!(" {};", view.query)
}

impl Snapshot {
    pub fn new(tables: Vec<Arc<TableDef>>) -> Snapshot {
        let mut relations = Vec::new();
        for t in &tables {
            relations.push(Relation::Table(Arc::clone(t)));
            if has_primary_key(t) {
                relations.push(Relation::PrimaryKey(Arc::clone(t)));
            }
            for i in 0..t.indexes.len() {
                relations.push(Relation::Index(Arc::clone(t), i));
            }
        }
        Snapshot {
            tables,
            relations,
            views: Vec::new(),
            sequences: Vec::new(),
            identity: Default::default(),
            types: Vec::new(),
            extensions: Vec::new(),
            temp_schema: None,
        }
    }

    pub fn of(catalog: &Catalog, scope: &Mutex<StatementScope>) -> Snapshot {
        let (changes, identity) = {
            let scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            (scope.changes.clone(), scope.identity.clone())
        };
        // The session's temporary tables first: a name finds one before a permanent
        // table it shadows (`relation_named`, regclass).
        let mut tables = catalog.tables(&changes);
        tables.sort_by_key(|t| t.temp_schema.is_none());
        let mut snapshot = Snapshot::new(tables);
        snapshot.identity = identity;
        snapshot.views = catalog.views(&changes);
        snapshot.sequences = catalog.sequences(&changes);
        snapshot.types = catalog.types(&changes);
        snapshot.extensions = catalog.extensions(&changes);
        snapshot.temp_schema = changes.temp_schema.clone();
        snapshot
    }

    /// Whether a relation is found by its name alone: not a permanent table (or index)
    /// shadowed by a temporary one of the same name, as `pg_table_is_visible` answers.
    pub fn visible(&self, oid: i32) -> bool {
        let Some(relation) = self.relation(oid) else {
            return true;
        };
        relation.table().temp_schema.is_some()
            || !self
                .relations
                .iter()
                .any(|r| r.table().temp_schema.is_some() && r.name() == relation.name())
    }

    /// COMMENT ON's text for relation `oid`: the table's when `attnum` is 0, else its column's.
    pub fn comment(&self, oid: i32, attnum: usize) -> Option<String> {
        let relation = self.relation(oid)?;
        let Relation::Table(t) = relation else {
            return None;
        };
        match attnum {
            0 => t.comment.clone(),
            n => t.columns[*relation.attributes().get(n - 1)?]
                .comment
                .clone(),
        }
    }

    /// The OID of type `name` made by CREATE TYPE (written as a type name is: `mood`,
    /// `"Role"`, `public.mood`).
    pub fn user_type_oid(&self, name: &str) -> Option<i32> {
        let user: Vec<SqlType> = self
            .types
            .iter()
            .map(|t| SqlType::enum_of(sql::types::EnumType::clone(t)))
            .collect();
        // `_mood`, the array type's own name, is `mood[]`.
        let array = name.strip_prefix('_').map(|element| format!("{element}[]"));
        match SqlType::parse_with(array.as_deref().unwrap_or(name), &user)? {
            SqlType::Enum { ty } => Some(ty.oid),
            // The array type's OID is the next one (see `user_type_name`).
            SqlType::Array { element } if matches!(*element, SqlType::Enum { .. }) => {
                element.enum_type().map(|ty| ty.oid + 1)
            }
            _ => None,
        }
    }

    /// The name of type `oid` made by CREATE TYPE, as `format_type` writes it.
    pub fn user_type_name(&self, oid: i32) -> Option<String> {
        self.types.iter().find_map(|t| {
            let name = sql::catalog::regclass_text(&t.name);
            match oid.checked_sub(t.oid) {
                Some(0) => Some(name),
                Some(1) => Some(format!("{name}[]")),
                _ => None,
            }
        })
    }

    /// The OID of relation `name` of any kind: a table, index, view or sequence.
    pub fn oid_named(&self, name: &str) -> Option<i32> {
        self.relation_named(name)
            .map(Relation::oid)
            .or_else(|| {
                self.views
                    .iter()
                    .find(|v| v.name == name)
                    .map(|v| plain_view_oid(&v.name))
            })
            .or_else(|| {
                self.sequences
                    .iter()
                    .find(|q| q.name == name)
                    .map(|q| sequence_oid(&q.name))
            })
    }

    /// The name of the relation of any kind with OID `oid`.
    pub fn name_of(&self, oid: i32) -> Option<String> {
        self.relation(oid)
            .map(Relation::name)
            .or_else(|| {
                self.views
                    .iter()
                    .find(|v| plain_view_oid(&v.name) == oid)
                    .map(|v| v.name.clone())
            })
            .or_else(|| {
                self.sequences
                    .iter()
                    .find(|q| sequence_oid(&q.name) == oid)
                    .map(|q| q.name.clone())
            })
    }

    pub fn relation(&self, oid: i32) -> Option<&Relation> {
        self.relations.iter().find(|r| r.oid() == oid)
    }

    pub fn relation_named(&self, name: &str) -> Option<&Relation> {
        self.relations.iter().find(|r| r.name() == name)
    }
}

/// How a catalog column is typed: Arrow type plus the PostgreSQL type clients are told.
#[derive(Clone, Copy)]
enum Kind {
    Oid,
    Name,
    Char,
    Text,
    Bool,
    I16,
    I32,
    I64,
    F32,
    OidArray,
    TextArray,
    I16Array,
    /// int2vector and oidvector: arrays in queries, space-separated text on the wire.
    I16Vector,
    OidVector,
}

impl Kind {
    fn field(self, name: &str) -> Field {
        let (ty, pg) = match self {
            Kind::Oid => (DataType::Int32, Some("oid")),
            Kind::Name => (DataType::Utf8, Some("name")),
            Kind::Char => (DataType::Utf8, Some("\"char\"")),
            Kind::Text => (DataType::Utf8, None),
            Kind::Bool => (DataType::Boolean, None),
            Kind::I16 => (DataType::Int16, None),
            Kind::I32 => (DataType::Int32, None),
            Kind::I64 => (DataType::Int64, None),
            Kind::F32 => (DataType::Float32, None),
            Kind::OidArray => (DataType::new_list(DataType::Int32, true), None),
            Kind::TextArray => (DataType::new_list(DataType::Utf8, true), None),
            Kind::I16Array => (DataType::new_list(DataType::Int16, true), None),
            Kind::I16Vector => (
                DataType::new_list(DataType::Int16, true),
                Some("int2vector"),
            ),
            Kind::OidVector => (DataType::new_list(DataType::Int32, true), Some("oidvector")),
        };
        let field = Field::new(name, ty, true);
        match pg {
            Some(pg) => field.with_metadata(HashMap::from([(
                FIELD_TYPE_KEY.to_string(),
                pg.to_string(),
            )])),
            None => field,
        }
    }
}

fn oid(v: i32) -> ScalarValue {
    ScalarValue::Int32(Some(v))
}
fn text(v: impl Into<String>) -> ScalarValue {
    ScalarValue::Utf8(Some(v.into()))
}
fn boolean(v: bool) -> ScalarValue {
    ScalarValue::Boolean(Some(v))
}
fn i16v(v: i16) -> ScalarValue {
    ScalarValue::Int16(Some(v))
}
fn i32v(v: i32) -> ScalarValue {
    ScalarValue::Int32(Some(v))
}
fn null() -> ScalarValue {
    ScalarValue::Null
}
fn i16_array(values: impl IntoIterator<Item = i16>) -> ScalarValue {
    let values: Vec<ScalarValue> = values.into_iter().map(i16v).collect();
    ScalarValue::List(ScalarValue::new_list_nullable(&values, &DataType::Int16))
}
fn oid_array(values: impl IntoIterator<Item = i32>) -> ScalarValue {
    let values: Vec<ScalarValue> = values.into_iter().map(oid).collect();
    ScalarValue::List(ScalarValue::new_list_nullable(&values, &DataType::Int32))
}

/// Builds a catalog table's batch from rows of scalar values in column order.
fn batch(columns: &[(&str, Kind)], rows: Vec<Vec<ScalarValue>>) -> DfResult<RecordBatch> {
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|(name, kind)| kind.field(name))
            .collect::<Vec<_>>(),
    ));
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(columns.len());
    for (c, field) in schema.fields().iter().enumerate() {
        let ty = field.data_type();
        if rows.is_empty() {
            arrays.push(new_empty_array(ty));
            continue;
        }
        let values = rows
            .iter()
            .map(|row| match &row[c] {
                ScalarValue::Null => ScalarValue::try_from(ty),
                v => v.cast_to(ty),
            })
            .collect::<DfResult<Vec<_>>>()?;
        arrays.push(ScalarValue::iter_to_array(values)?);
    }
    Ok(RecordBatch::try_new(schema, arrays)?)
}

/// A type in `pg_type`: (oid, name, length, category, array type oid, element oid,
/// collation).
type BuiltinType = (i32, &'static str, i16, &'static str, i32, i32, i32);

/// The built-in types Partita's values can have, and their arrays.
pub const BUILTIN_TYPES: &[BuiltinType] = &[
    (16, "bool", 1, "B", 1000, 0, 0),
    (17, "bytea", -1, "U", 1001, 0, 0),
    (18, "char", 1, "Z", 1002, 0, 0),
    (19, "name", 64, "S", 1003, 0, 950),
    (20, "int8", 8, "N", 1016, 0, 0),
    (21, "int2", 2, "N", 1005, 0, 0),
    (22, "int2vector", -1, "A", 1006, 21, 0),
    (23, "int4", 4, "N", 1007, 0, 0),
    (24, "regproc", 4, "N", 1008, 0, 0),
    (25, "text", -1, "S", 1009, 0, 100),
    (26, "oid", 4, "N", 1028, 0, 0),
    (114, "json", -1, "U", 199, 0, 0),
    (700, "float4", 4, "N", 1021, 0, 0),
    (701, "float8", 8, "N", 1022, 0, 0),
    (705, "unknown", -2, "X", 0, 0, 0),
    (1042, "bpchar", -1, "S", 1014, 0, 100),
    (1043, "varchar", -1, "S", 1015, 0, 100),
    (1082, "date", 4, "D", 1182, 0, 0),
    (1083, "time", 8, "D", 1183, 0, 0),
    (1114, "timestamp", 8, "D", 1115, 0, 0),
    (1184, "timestamptz", 8, "D", 1185, 0, 0),
    (1186, "interval", 16, "T", 1187, 0, 0),
    (1700, "numeric", -1, "N", 1231, 0, 0),
    (2205, "regclass", 4, "N", 2210, 0, 0),
    (2206, "regtype", 4, "N", 2211, 0, 0),
    (2249, "record", -1, "P", 2287, 0, 0),
    (2278, "void", 4, "P", 0, 0, 0),
    (2950, "uuid", 16, "U", 2951, 0, 0),
    (3802, "jsonb", -1, "U", 3807, 0, 0),
    (4089, "regnamespace", 4, "N", 4090, 0, 0),
];

/// The type with OID `oid`, arrays included: (name, element oid, collation).
pub fn builtin_type(oid: i32) -> Option<(String, i32, i32)> {
    for &(o, name, _, _, array, _, coll) in BUILTIN_TYPES {
        if o == oid {
            return Some((name.to_string(), 0, coll));
        }
        if array == oid {
            return Some((format!("_{name}"), o, coll));
        }
    }
    None
}

/// The PostgreSQL type of a column or expression: its declared type where Arrow cannot tell it
/// (varchar, char, uuid, json, the catalogs' `oid` and `name` …), otherwise the type its Arrow
/// type stands for. What the wire layer sends as the type OID and `pg_typeof` names.
pub fn field_type_oid(field: &Field) -> i32 {
    if let Some(declared) = sql::types::declared_type_name(field) {
        // An array column (`uuid[]`): the array type of its declared element type.
        if let (Some(element), DataType::List(item)) =
            (declared.strip_suffix("[]"), field.data_type())
        {
            let mut metadata = item.metadata().clone();
            metadata.insert(sql::types::FIELD_TYPE_KEY.to_string(), element.to_string());
            let element = item.as_ref().clone().with_metadata(metadata);
            return sql::types::array_oid(field_type_oid(&element));
        }
        let base = declared.split('(').next().unwrap_or(declared);
        let declared_oid = match base {
            "character varying" => Some(1043),
            "character" => Some(1042),
            "\"char\"" => Some(18),
            "uuid" => Some(2950),
            "json" => Some(114),
            "jsonb" => Some(3802),
            "oid" => Some(26),
            "int2vector" => Some(22),
            "oidvector" => Some(30),
            "name" => Some(19),
            _ => None,
        };
        if let Some(oid) = declared_oid {
            return oid;
        }
    }
    match field.data_type() {
        DataType::Boolean => 16,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => 21,
        DataType::Int32 | DataType::UInt16 => 23,
        // Unsigned 64-bit values are row numbers, ranks and counts: bigint, as PostgreSQL's.
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => 20,
        DataType::Decimal128(..) | DataType::Decimal256(..) => 1700,
        DataType::Float16 | DataType::Float32 => 700,
        DataType::Float64 => 701,
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => 17,
        DataType::Date32 | DataType::Date64 => 1082,
        DataType::Timestamp(_, None) => 1114,
        DataType::Timestamp(_, Some(_)) => 1184,
        DataType::Time32(_) | DataType::Time64(_) => 1083,
        DataType::Interval(_) | DataType::Duration(_) => 1186,
        DataType::List(f) | DataType::LargeList(f) => {
            let element = field_type_oid(f);
            BUILTIN_TYPES
                .iter()
                .find(|t| t.0 == element && t.4 != 0)
                .map_or(1009, |t| t.4)
        }
        _ => 25,
    }
}

/// The type's OID by name (`int4`, `integer`, `_text` …).
pub fn builtin_type_oid(name: &str) -> Option<i32> {
    let name = name.trim().to_ascii_lowercase();
    let canonical = match name.as_str() {
        "integer" | "int" => "int4",
        "smallint" => "int2",
        "bigint" => "int8",
        "real" => "float4",
        "double precision" => "float8",
        "boolean" => "bool",
        "character varying" => "varchar",
        "character" => "bpchar",
        "timestamp without time zone" => "timestamp",
        "timestamp with time zone" => "timestamptz",
        "decimal" => "numeric",
        other => other,
    };
    if let Some(elem) = canonical.strip_suffix("[]") {
        let base = builtin_type_oid(elem)?;
        return BUILTIN_TYPES
            .iter()
            .find(|t| t.0 == base)
            .map(|t| t.4)
            .filter(|&a| a != 0);
    }
    BUILTIN_TYPES.iter().find_map(|&(o, n, _, _, array, ..)| {
        if n == canonical {
            Some(o)
        } else if canonical.strip_prefix('_') == Some(n) {
            Some(array)
        } else {
            None
        }
    })
}

fn namespace_name(oid: i32) -> Option<&'static str> {
    match oid {
        PG_CATALOG_NAMESPACE => Some("pg_catalog"),
        PUBLIC_NAMESPACE => Some("public"),
        INFORMATION_SCHEMA_NAMESPACE => Some("information_schema"),
        _ => None,
    }
}

pub fn namespace_named(oid: i32) -> Option<&'static str> {
    namespace_name(oid)
}

/// Access methods: tables are stored in key order in Partita's store; indexes (primary keys
/// too) are ordered index tables, listed as `btree` (OID 403, as in PostgreSQL), the method
/// ORMs look for when they read an index's column orders (Django's introspection). Whether
/// an index is local or global, `pg_get_indexdef` says.
const TABLE_AM: i32 = 2;
const BTREE_AM: i32 = 403;

pub fn access_method_name(oid: i32) -> Option<&'static str> {
    match oid {
        TABLE_AM => Some("partita"),
        BTREE_AM => Some("btree"),
        _ => None,
    }
}

/// Whether index `i` of `t` is local: it leads with the base table's partition key.
pub fn index_is_local(t: &TableDef, i: usize) -> bool {
    leads_with_partition_key(t, &t.indexes[i].columns)
}

/// Whether index columns lead with `t`'s partition key, which makes the index local.
pub fn leads_with_partition_key(t: &TableDef, columns: &[sql::catalog::RowKeyPart]) -> bool {
    columns.len() >= t.partition_key.len()
        && columns
            .iter()
            .zip(&t.partition_key)
            .all(|(p, &k)| p.column == k)
}

fn relation_am(r: &Relation) -> i32 {
    match r {
        Relation::Table(_) => TABLE_AM,
        Relation::PrimaryKey(_) | Relation::Index(..) => BTREE_AM,
    }
}

/// The NOT NULL columns of `t` as information_schema lists them, as CHECK constraints named
/// `<namespace oid>_<table oid>_<attnum>_not_null` with their conditions.
fn not_null_checks(t: &TableDef) -> impl Iterator<Item = (String, String)> + '_ {
    let table = relation_oid(t.keyspace);
    t.columns
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.hidden && !c.nullable)
        .map(move |(i, c)| {
            (
                format!("{PUBLIC_NAMESPACE}_{table}_{}_not_null", attnum(t, i)),
                format!("{} IS NOT NULL", c.name),
            )
        })
}

/// A condition (a partial index's predicate, a CHECK's) as PostgreSQL's deparser shows it:
/// a lone column bare, anything else in parentheses.
pub fn shown_condition(predicate: &str) -> String {
    let bare = !predicate.is_empty()
        && predicate
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '"');
    match bare {
        true => predicate.to_string(),
        false => format!("({predicate})"),
    }
}

/// `pg_get_indexdef(oid, 0)`: the statement that creates the index. A primary key shows
/// Partita's key, with its partition key, as `USING partita ((a, b), c DESC)`.
pub fn index_definition(r: &Relation) -> Option<String> {
    index_definition_shown(r, false)
}

/// `pg_get_indexdef(oid, 0, pretty)`: pretty (psql's `\d`) leaves off the parentheses an
/// expression that is not a function call has of its own (`(a + b)`, not `((a + b))`).
pub fn index_definition_shown(r: &Relation, pretty: bool) -> Option<String> {
    // Names quoted where they need it (`"authorId"`), as PostgreSQL prints them.
    let quote = crate::functions::text::quote_ident;
    match r {
        Relation::Table(_) => None,
        Relation::PrimaryKey(t) => Some(format!(
            "CREATE UNIQUE INDEX {} ON public.{} USING partita {}",
            quote(&t.primary_key_name()),
            quote(&t.name),
            t.key_description()
        )),
        Relation::Index(t, i) => {
            let index = &t.indexes[*i];
            let columns: Vec<String> = index
                .columns
                .iter()
                .map(|p| {
                    let name = match pretty {
                        true => crate::expression_index::shown(t, p.column),
                        false => crate::expression_index::in_definition(t, p.column),
                    };
                    if p.desc { format!("{name} DESC") } else { name }
                })
                .collect();
            let mut out = format!(
                "CREATE {}INDEX {} ON public.{} USING {} ({})",
                if index.unique { "UNIQUE " } else { "" },
                quote(&index.name),
                quote(&t.name),
                if index_is_local(t, *i) {
                    "local"
                } else {
                    "global"
                },
                columns.join(", ")
            );
            if !index.include.is_empty() {
                let include: Vec<String> = index
                    .include
                    .iter()
                    .map(|&c| quote(&t.columns[c].name))
                    .collect();
                out.push_str(&format!(" INCLUDE ({})", include.join(", ")));
            }
            // psql's `\d` shows the condition without the parentheses around it.
            if let Some(predicate) = &index.predicate {
                let shown = match pretty {
                    true => predicate.clone(),
                    false => shown_condition(predicate),
                };
                out.push_str(&format!(" WHERE {shown}"));
            }
            Some(out)
        }
    }
}

/// `pg_get_viewdef`: a materialized view's query.
pub fn view_definition(t: &TableDef, snapshot: &Snapshot) -> Option<String> {
    let view = t.view.as_ref()?;
    let base = snapshot.tables.iter().find(|b| b.name == view.base)?;
    let columns: Vec<String> = view
        .columns
        .iter()
        .zip(&t.columns)
        .map(|(&b, c)| {
            let name = &base.columns[b].name;
            if *name == c.name {
                format!("    {name}")
            } else {
                format!("    {name} AS {}", c.name)
            }
        })
        .collect();
    let mut out = format!(" SELECT\n{}\n   FROM {}", columns.join(",\n"), base.name);
    if let Some(p) = &view.predicate {
        out.push_str(&format!("\n  WHERE {p}"));
    }
    out.push(';');
    Some(out)
}

/// The `pg_catalog` or `information_schema` schema.
pub struct CatalogSchema {
    pub catalog: Catalog,
    pub scope: Arc<Mutex<StatementScope>>,
    pub information_schema: bool,
    /// The session's settings, as `pg_settings` lists them.
    pub(crate) settings: crate::session::Settings,
    /// Where `pg_sequences` reads the sequences' last values.
    pub store: storage::Store,
}

impl std::fmt::Debug for CatalogSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.information_schema {
            "information_schema"
        } else {
            "pg_catalog"
        })
    }
}

#[async_trait::async_trait]
impl SchemaProvider for CatalogSchema {
    fn table_names(&self) -> Vec<String> {
        let names = if self.information_schema {
            INFORMATION_SCHEMA_TABLES
        } else {
            PG_CATALOG_TABLES
        };
        names.iter().map(|n| n.to_string()).collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let snapshot = Snapshot::of(&self.catalog, &self.scope);
        let batch = if !self.information_schema && name == "pg_settings" {
            Some(settings_table(&self.settings)?)
        } else if !self.information_schema && name == "pg_sequences" {
            Some(sequences_view(&snapshot, &self.catalog, &self.store)?)
        } else if self.information_schema {
            information_schema_table(name, &snapshot)?
        } else {
            pg_catalog_table(name, &snapshot)?
        };
        let Some(batch) = batch else {
            return Ok(None);
        };
        let table = MemTable::try_new(batch.schema(), vec![vec![batch]])?;
        Ok(Some(Arc::new(table)))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.table_names().iter().any(|n| n == name)
    }
}

pub const PG_CATALOG_TABLES: &[&str] = &[
    "pg_am",
    "pg_attrdef",
    "pg_attribute",
    "pg_auth_members",
    "pg_authid",
    "pg_class",
    "pg_collation",
    "pg_constraint",
    "pg_database",
    "pg_depend",
    "pg_description",
    "pg_enum",
    "pg_extension",
    "pg_index",
    "pg_indexes",
    "pg_inherits",
    "pg_matviews",
    "pg_namespace",
    "pg_opclass",
    "pg_policy",
    "pg_policies",
    "pg_publication",
    "pg_publication_namespace",
    "pg_publication_rel",
    "pg_range",
    "pg_rewrite",
    "pg_roles",
    "pg_sequence",
    "pg_sequences",
    "pg_settings",
    "pg_shdescription",
    "pg_stat_user_indexes",
    "pg_statio_all_tables",
    "pg_statio_user_tables",
    "pg_statistic_ext",
    "pg_tables",
    "pg_tablespace",
    "pg_trigger",
    "pg_type",
    "pg_user",
    "pg_views",
];

/// The OID of catalog table `name` (PostgreSQL's own for the system catalogs clients name
/// in `'pg_class'::regclass`, such as `pg_description.classoid` comparisons).
pub fn catalog_table_oid(name: &str) -> Option<i32> {
    Some(match name {
        "pg_type" => 1247,
        "pg_attribute" => 1249,
        "pg_proc" => 1255,
        "pg_class" => 1259,
        "pg_database" => 1262,
        "pg_am" => 2601,
        "pg_attrdef" => 2604,
        "pg_constraint" => 2606,
        "pg_description" => 2609,
        "pg_index" => 2610,
        "pg_namespace" => 2615,
        "pg_trigger" => 2620,
        other => {
            let i = PG_CATALOG_TABLES.iter().position(|t| *t == other)?;
            12_000 + i as i32
        }
    })
}

/// The catalog table of OID `oid` (`'pg_class'::regclass::text` is `pg_class`).
pub fn catalog_table_name(oid: i32) -> Option<&'static str> {
    PG_CATALOG_TABLES
        .iter()
        .chain(&["pg_proc"])
        .find(|name| catalog_table_oid(name) == Some(oid))
        .copied()
}

const INFORMATION_SCHEMA_TABLES: &[&str] = &[
    "check_constraints",
    "columns",
    "constraint_column_usage",
    "key_column_usage",
    "referential_constraints",
    "schemata",
    "sequences",
    "table_constraints",
    "tables",
    "views",
];

use Kind::*;

fn pg_catalog_table(name: &str, s: &Snapshot) -> DfResult<Option<RecordBatch>> {
    let (columns, rows): (&[(&str, Kind)], Vec<Vec<ScalarValue>>) = match name {
        "pg_namespace" => (
            &[
                ("oid", Oid),
                ("nspname", Name),
                ("nspowner", Oid),
                ("nspacl", TextArray),
            ],
            [
                PG_CATALOG_NAMESPACE,
                PUBLIC_NAMESPACE,
                INFORMATION_SCHEMA_NAMESPACE,
            ]
            .into_iter()
            .map(|n| {
                vec![
                    oid(n),
                    text(namespace_name(n).unwrap_or("")),
                    oid(OWNER_OID),
                    null(),
                ]
            })
            // The session's temporary schema, once it holds a table, as PostgreSQL makes
            // it with the first.
            .chain(
                s.tables
                    .iter()
                    .find_map(|t| t.temp_schema.as_deref())
                    .map(|name| vec![oid(TEMP_NAMESPACE), text(name), oid(OWNER_OID), null()]),
            )
            .collect(),
        ),
        "pg_class" => (
            &[
                ("oid", Oid),
                ("relname", Name),
                ("relnamespace", Oid),
                ("reltype", Oid),
                ("reloftype", Oid),
                ("relowner", Oid),
                ("relam", Oid),
                ("relfilenode", Oid),
                ("reltablespace", Oid),
                ("relpages", I32),
                ("reltuples", F32),
                ("relallvisible", I32),
                ("reltoastrelid", Oid),
                ("relhasindex", Bool),
                ("relisshared", Bool),
                ("relpersistence", Char),
                ("relkind", Char),
                ("relnatts", I16),
                ("relchecks", I16),
                ("relhasrules", Bool),
                ("relhastriggers", Bool),
                ("relhassubclass", Bool),
                ("relrowsecurity", Bool),
                ("relforcerowsecurity", Bool),
                ("relispopulated", Bool),
                ("relreplident", Char),
                ("relispartition", Bool),
                ("relrewrite", Oid),
                ("relfrozenxid", I32),
                ("relminmxid", I32),
                ("relacl", TextArray),
                ("reloptions", TextArray),
                ("relpartbound", Text),
            ],
            s.relations
                .iter()
                .map(|r| {
                    let (kind, row_type, has_index) = match r {
                        Relation::Table(t) => (
                            if t.view.is_some() { "m" } else { "r" },
                            row_type_oid(t.keyspace),
                            has_primary_key(t) || !t.indexes.is_empty(),
                        ),
                        _ => ("i", 0, false),
                    };
                    let mut row = class_row(
                        r.oid(),
                        &r.name(),
                        row_type,
                        relation_am(r),
                        has_index,
                        kind,
                        r.attributes().len() as i16,
                        match r {
                            Relation::Table(t) => t.checks.len() as i16,
                            _ => 0,
                        },
                    );
                    // Foreign keys are triggers in PostgreSQL, on both tables; psql's \d
                    // lists them only then.
                    if let Relation::Table(t) = r {
                        row[RELHASTRIGGERS] = boolean(t.has_foreign_keys());
                    }
                    if r.table().temp_schema.is_some() {
                        row[RELNAMESPACE] = oid(TEMP_NAMESPACE);
                        row[RELPERSISTENCE] = text("t");
                    }
                    row
                })
                .chain(s.views.iter().map(|v| {
                    class_row(
                        plain_view_oid(&v.name),
                        &v.name,
                        0,
                        0,
                        false,
                        "v",
                        v.column_types.len() as i16,
                        0,
                    )
                }))
                .chain(s.sequences.iter().map(|q| {
                    // A sequence reads as a one-row table (last_value, log_cnt, is_called).
                    class_row(sequence_oid(&q.name), &q.name, 0, 0, false, "S", 3, 0)
                }))
                .collect(),
        ),
        "pg_attribute" => (
            &[
                ("attrelid", Oid),
                ("attname", Name),
                ("atttypid", Oid),
                ("attstattarget", I32),
                ("attlen", I16),
                ("attnum", I16),
                ("attndims", I32),
                ("attcacheoff", I32),
                ("atttypmod", I32),
                ("attbyval", Bool),
                ("attalign", Char),
                ("attstorage", Char),
                ("attcompression", Char),
                ("attnotnull", Bool),
                ("atthasdef", Bool),
                ("atthasmissing", Bool),
                ("attidentity", Char),
                ("attgenerated", Char),
                ("attisdropped", Bool),
                ("attislocal", Bool),
                ("attinhcount", I32),
                ("attcollation", Oid),
                ("attacl", TextArray),
                ("attoptions", TextArray),
                ("attfdwoptions", TextArray),
                ("attmissingval", Text),
            ],
            s.relations
                .iter()
                .flat_map(|r| {
                    let t = r.table();
                    let rel = r.oid();
                    let is_table = matches!(r, Relation::Table(_));
                    // An index's columns are named as PostgreSQL names them (`lower` for
                    // `lower(email)`).
                    let names = match r {
                        Relation::Index(t, _) => {
                            crate::expression_index::attribute_names(t, &r.attributes())
                        }
                        _ => Vec::new(),
                    };
                    r.attributes()
                        .into_iter()
                        .enumerate()
                        .map(move |(n, c)| {
                            let col = &t.columns[c];
                            let num = if is_table { attnum(t, c) } else { n as i16 + 1 };
                            let mut row = attribute_row(
                                rel,
                                names.get(n).unwrap_or(&col.name),
                                col.ty,
                                num,
                                !col.nullable,
                                is_table && has_default(col),
                                is_table && t.missing_values.contains_key(&c),
                                match col.identity {
                                    Some(sql::Identity::Always) => "a",
                                    Some(sql::Identity::ByDefault) => "d",
                                    None => "",
                                },
                            );
                            if is_table && col.generated.is_some() {
                                row[ATTGENERATED] = text("s");
                            }
                            row
                        })
                        .collect::<Vec<_>>()
                })
                .chain(s.views.iter().flat_map(|v| {
                    let rel = plain_view_oid(&v.name);
                    view_columns(v)
                        .into_iter()
                        .enumerate()
                        .map(move |(n, (name, ty))| {
                            attribute_row(rel, &name, ty, n as i16 + 1, false, false, false, "")
                        })
                }))
                .collect(),
        ),
        "pg_attrdef" => (
            &[
                ("oid", Oid),
                ("adrelid", Oid),
                ("adnum", I16),
                ("adbin", Text),
            ],
            s.tables
                .iter()
                .flat_map(|t| {
                    t.columns.iter().enumerate().filter_map(move |(c, col)| {
                        // A generated column's expression is kept as a default is.
                        let shown = match (&col.generated, &col.default) {
                            _ if !has_default(col) => return None,
                            (Some(expr), _) => shown_condition(expr),
                            (None, Some(default)) => shown_default(default, col.ty),
                            (None, None) => return None,
                        };
                        let num = attnum(t, c);
                        Some(vec![
                            oid((1 << 30) + ((t.keyspace as i32) << 10) + i32::from(num)),
                            oid(relation_oid(t.keyspace)),
                            i16v(num),
                            text(shown),
                        ])
                    })
                })
                .collect(),
        ),
        "pg_index" => (
            &[
                ("indexrelid", Oid),
                ("indrelid", Oid),
                ("indnatts", I16),
                ("indnkeyatts", I16),
                ("indisunique", Bool),
                ("indnullsnotdistinct", Bool),
                ("indisprimary", Bool),
                ("indisexclusion", Bool),
                ("indimmediate", Bool),
                ("indisclustered", Bool),
                ("indisvalid", Bool),
                ("indcheckxmin", Bool),
                ("indisready", Bool),
                ("indislive", Bool),
                ("indisreplident", Bool),
                ("indkey", I16Vector),
                ("indcollation", OidVector),
                ("indclass", OidVector),
                ("indoption", I16Vector),
                ("indexprs", Text),
                ("indpred", Text),
            ],
            s.relations
                .iter()
                .filter_map(|r| {
                    let t = r.table();
                    let (key, unique, primary, desc): (Vec<usize>, bool, bool, Vec<bool>) = match r
                    {
                        Relation::Table(_) => return None,
                        Relation::PrimaryKey(t) => (
                            t.key_columns(),
                            true,
                            true,
                            t.partition_key
                                .iter()
                                .map(|_| false)
                                .chain(t.row_key.iter().map(|p| p.desc))
                                .collect(),
                        ),
                        Relation::Index(t, i) => {
                            let index = &t.indexes[*i];
                            (
                                index.columns.iter().map(|p| p.column).collect(),
                                index.unique,
                                false,
                                index.columns.iter().map(|p| p.desc).collect(),
                            )
                        }
                    };
                    let all = r.attributes();
                    Some(vec![
                        oid(r.oid()),
                        oid(relation_oid(t.keyspace)),
                        i16v(all.len() as i16),
                        i16v(key.len() as i16),
                        boolean(unique),
                        boolean(false),
                        boolean(primary),
                        boolean(false),
                        boolean(true),
                        boolean(false),
                        boolean(true),
                        boolean(false),
                        boolean(true),
                        boolean(true),
                        boolean(false),
                        // An expression is attribute 0, its text in indexprs.
                        i16_array(all.iter().map(|&c| match is_expression(&t.columns[c]) {
                            true => 0,
                            false => attnum(t, c),
                        })),
                        oid_array(all.iter().map(|&c| collation(t.columns[c].ty))),
                        // Key columns only, as in PostgreSQL.
                        oid_array(key.iter().map(|&c| operator_class(t.columns[c].ty))),
                        i16_array(desc.iter().map(|&d| if d { 3 } else { 0 })),
                        {
                            let expressions: Vec<String> = all
                                .iter()
                                .filter(|&&c| is_expression(&t.columns[c]))
                                .map(|&c| crate::expression_index::shown(t, c))
                                .collect();
                            match expressions.is_empty() {
                                true => null(),
                                false => text(expressions.join(", ")),
                            }
                        },
                        match r {
                            Relation::Index(t, i) => t.indexes[*i]
                                .predicate
                                .as_deref()
                                .map(shown_condition)
                                .map(text),
                            _ => None,
                        }
                        .unwrap_or_else(null),
                    ])
                })
                .collect(),
        ),
        "pg_constraint" => (
            &[
                ("oid", Oid),
                ("conname", Name),
                ("connamespace", Oid),
                ("contype", Char),
                ("condeferrable", Bool),
                ("condeferred", Bool),
                ("convalidated", Bool),
                ("conrelid", Oid),
                ("contypid", Oid),
                ("conindid", Oid),
                ("conparentid", Oid),
                ("confrelid", Oid),
                ("confupdtype", Char),
                ("confdeltype", Char),
                ("confmatchtype", Char),
                ("conislocal", Bool),
                ("coninhcount", I32),
                ("connoinherit", Bool),
                ("conkey", I16Array),
                ("confkey", I16Array),
                ("conpfeqop", OidArray),
                ("conppeqop", OidArray),
                ("conffeqop", OidArray),
                ("conexclop", OidArray),
                ("conbin", Text),
            ],
            s.tables
                .iter()
                .filter(|t| has_primary_key(t))
                .map(|t| {
                    constraint_row(
                        primary_key_constraint_oid(t.keyspace),
                        t.primary_key_name(),
                        "p",
                        relation_oid(t.keyspace),
                        primary_key_oid(t.keyspace),
                        i16_array(t.key_columns().iter().map(|&c| attnum(t, c))),
                        null(),
                    )
                })
                .chain(s.tables.iter().flat_map(|t| {
                    t.indexes.iter().filter(|i| i.constraint).map(move |index| {
                        constraint_row(
                            primary_key_constraint_oid(index.keyspace),
                            index.name.clone(),
                            "u",
                            relation_oid(t.keyspace),
                            relation_oid(index.keyspace),
                            i16_array(index.columns.iter().map(|p| attnum(t, p.column))),
                            null(),
                        )
                    })
                }))
                .chain(s.tables.iter().flat_map(|t| {
                    t.checks.iter().enumerate().map(move |(i, check)| {
                        let mut row = constraint_row(
                            check_constraint_oid(t.keyspace, i),
                            check.name.clone(),
                            "c",
                            relation_oid(t.keyspace),
                            0,
                            i16_array(
                                t.columns
                                    .iter()
                                    .enumerate()
                                    .filter(|(_, c)| !c.hidden && check_reads(&check.expr, &c.name))
                                    .map(|(c, _)| attnum(t, c)),
                            ),
                            text(check.expr.clone()),
                        );
                        row[6] = boolean(!check.not_valid);
                        row
                    })
                }))
                .chain(s.tables.iter().flat_map(|t| {
                    t.foreign_keys
                        .iter()
                        .enumerate()
                        .map(|(i, fk)| foreign_key_row(s, t, i, fk))
                }))
                .collect(),
        ),
        "pg_type" => (
            &[
                ("oid", Oid),
                ("typname", Name),
                ("typnamespace", Oid),
                ("typowner", Oid),
                ("typlen", I16),
                ("typbyval", Bool),
                ("typtype", Char),
                ("typcategory", Char),
                ("typispreferred", Bool),
                ("typisdefined", Bool),
                ("typdelim", Char),
                ("typrelid", Oid),
                ("typsubscript", Text),
                ("typelem", Oid),
                ("typarray", Oid),
                ("typinput", Text),
                ("typoutput", Text),
                ("typreceive", Text),
                ("typsend", Text),
                ("typalign", Char),
                ("typstorage", Char),
                ("typnotnull", Bool),
                ("typbasetype", Oid),
                ("typtypmod", I32),
                ("typndims", I32),
                ("typcollation", Oid),
                ("typdefault", Text),
                ("typacl", TextArray),
            ],
            {
                let mut rows = Vec::new();
                for &(o, name, len, category, array, elem, coll) in BUILTIN_TYPES {
                    let typtype = if category == "P" { "p" } else { "b" };
                    rows.push(type_row(
                        o, name, len, typtype, category, elem, array, coll, 0,
                    ));
                    if array != 0 {
                        rows.push(type_row(
                            array,
                            &format!("_{name}"),
                            -1,
                            "b",
                            "A",
                            o,
                            0,
                            coll,
                            0,
                        ));
                    }
                }
                for t in &s.types {
                    let mut row = type_row(t.oid, &t.name, 4, "e", "E", 0, t.oid + 1, 0, 0);
                    row[2] = oid(PUBLIC_NAMESPACE);
                    rows.push(row);
                    let mut array = type_row(
                        t.oid + 1,
                        &format!("_{}", t.name),
                        -1,
                        "b",
                        "A",
                        t.oid,
                        0,
                        0,
                        0,
                    );
                    array[2] = oid(PUBLIC_NAMESPACE);
                    rows.push(array);
                }
                for t in &s.tables {
                    rows.push(type_row(
                        row_type_oid(t.keyspace),
                        &t.name,
                        -1,
                        "c",
                        "C",
                        0,
                        0,
                        0,
                        relation_oid(t.keyspace),
                    ));
                }
                rows
            },
        ),
        "pg_am" => (
            &[
                ("oid", Oid),
                ("amname", Name),
                ("amhandler", Text),
                ("amtype", Char),
            ],
            [(TABLE_AM, "t"), (BTREE_AM, "i")]
                .into_iter()
                .map(|(o, kind)| {
                    vec![
                        oid(o),
                        text(access_method_name(o).unwrap_or("")),
                        text("-"),
                        text(kind),
                    ]
                })
                .collect(),
        ),
        "pg_database" => (
            &[
                ("oid", Oid),
                ("datname", Name),
                ("datdba", Oid),
                ("encoding", I32),
                ("datlocprovider", Char),
                ("datistemplate", Bool),
                ("datallowconn", Bool),
                ("datconnlimit", I32),
                ("dattablespace", Oid),
                ("datcollate", Text),
                ("datctype", Text),
                ("daticulocale", Text),
                ("datcollversion", Text),
                ("datacl", TextArray),
            ],
            vec![vec![
                oid(DATABASE_OID),
                text(&*s.identity.database),
                oid(OWNER_OID),
                i32v(6),
                text("c"),
                boolean(false),
                boolean(true),
                i32v(-1),
                oid(1663),
                text("C"),
                text("C"),
                null(),
                null(),
                null(),
            ]],
        ),
        "pg_roles" | "pg_authid" => (
            &[
                ("oid", Oid),
                ("rolname", Name),
                ("rolsuper", Bool),
                ("rolinherit", Bool),
                ("rolcreaterole", Bool),
                ("rolcreatedb", Bool),
                ("rolcanlogin", Bool),
                ("rolreplication", Bool),
                ("rolconnlimit", I32),
                ("rolpassword", Text),
                ("rolvaliduntil", Text),
                ("rolbypassrls", Bool),
                ("rolconfig", TextArray),
            ],
            vec![vec![
                oid(OWNER_OID),
                text(&*s.identity.user),
                boolean(true),
                boolean(true),
                boolean(true),
                boolean(true),
                boolean(true),
                boolean(false),
                i32v(-1),
                null(),
                null(),
                boolean(true),
                null(),
            ]],
        ),
        "pg_user" => (
            &[
                ("usename", Name),
                ("usesysid", Oid),
                ("usecreatedb", Bool),
                ("usesuper", Bool),
                ("userepl", Bool),
                ("usebypassrls", Bool),
                ("passwd", Text),
                ("valuntil", Text),
                ("useconfig", TextArray),
            ],
            vec![vec![
                text(&*s.identity.user),
                oid(OWNER_OID),
                boolean(true),
                boolean(true),
                boolean(false),
                boolean(true),
                text("********"),
                null(),
                null(),
            ]],
        ),
        "pg_collation" => (
            &[
                ("oid", Oid),
                ("collname", Name),
                ("collnamespace", Oid),
                ("collowner", Oid),
                ("collprovider", Char),
                ("collisdeterministic", Bool),
                ("collencoding", I32),
                ("collcollate", Text),
                ("collctype", Text),
            ],
            [(100, "default", "d"), (950, "C", "c"), (951, "POSIX", "c")]
                .into_iter()
                .map(|(o, name, provider)| {
                    vec![
                        oid(o),
                        text(name),
                        oid(PG_CATALOG_NAMESPACE),
                        oid(OWNER_OID),
                        text(provider),
                        boolean(true),
                        i32v(-1),
                        text("C"),
                        text("C"),
                    ]
                })
                .collect(),
        ),
        "pg_tablespace" => (
            &[
                ("oid", Oid),
                ("spcname", Name),
                ("spcowner", Oid),
                ("spcacl", TextArray),
                ("spcoptions", TextArray),
            ],
            [(1663, "pg_default"), (1664, "pg_global")]
                .into_iter()
                .map(|(o, name)| vec![oid(o), text(name), oid(OWNER_OID), null(), null()])
                .collect(),
        ),
        "pg_tables" => (
            &[
                ("schemaname", Name),
                ("tablename", Name),
                ("tableowner", Name),
                ("tablespace", Name),
                ("hasindexes", Bool),
                ("hasrules", Bool),
                ("hastriggers", Bool),
                ("rowsecurity", Bool),
            ],
            s.tables
                .iter()
                .filter(|t| t.view.is_none())
                .map(|t| {
                    vec![
                        text(schema_name(t)),
                        text(t.name.clone()),
                        text(&*s.identity.user),
                        null(),
                        boolean(has_primary_key(t) || !t.indexes.is_empty()),
                        boolean(false),
                        boolean(false),
                        boolean(false),
                    ]
                })
                .collect(),
        ),
        "pg_matviews" => (
            &[
                ("schemaname", Name),
                ("matviewname", Name),
                ("matviewowner", Name),
                ("tablespace", Name),
                ("hasindexes", Bool),
                ("ispopulated", Bool),
                ("definition", Text),
            ],
            s.tables
                .iter()
                .filter(|t| t.view.is_some())
                .map(|t| {
                    vec![
                        text("public"),
                        text(t.name.clone()),
                        text(&*s.identity.user),
                        null(),
                        boolean(true),
                        boolean(true),
                        view_definition(t, s).map_or(null(), text),
                    ]
                })
                .collect(),
        ),
        "pg_indexes" => (
            &[
                ("schemaname", Name),
                ("tablename", Name),
                ("indexname", Name),
                ("tablespace", Name),
                ("indexdef", Text),
            ],
            s.relations
                .iter()
                .filter_map(|r| {
                    let def = index_definition(r)?;
                    Some(vec![
                        text(schema_name(r.table())),
                        text(r.table().name.clone()),
                        text(r.name()),
                        null(),
                        text(def),
                    ])
                })
                .collect(),
        ),
        // The tables and materialized views, with their I/O counts, which Partita does not
        // keep: NULL (Sequelize reads column comments through this view).
        "pg_statio_all_tables" | "pg_statio_user_tables" => (
            &[
                ("relid", Oid),
                ("schemaname", Name),
                ("relname", Name),
                ("heap_blks_read", I64),
                ("heap_blks_hit", I64),
                ("idx_blks_read", I64),
                ("idx_blks_hit", I64),
                ("toast_blks_read", I64),
                ("toast_blks_hit", I64),
                ("tidx_blks_read", I64),
                ("tidx_blks_hit", I64),
            ],
            s.tables
                .iter()
                .map(|t| {
                    let mut row = vec![
                        oid(relation_oid(t.keyspace)),
                        text(schema_name(t)),
                        text(t.name.clone()),
                    ];
                    row.resize(11, ScalarValue::Int64(None));
                    row
                })
                .collect(),
        ),
        // The indexes (primary keys among them) of the user's tables. Partita does not count
        // index reads: the counts are NULL.
        "pg_stat_user_indexes" => (
            &[
                ("relid", Oid),
                ("indexrelid", Oid),
                ("schemaname", Name),
                ("relname", Name),
                ("indexrelname", Name),
                ("idx_scan", I64),
                ("idx_tup_read", I64),
                ("idx_tup_fetch", I64),
            ],
            s.relations
                .iter()
                .filter(|r| index_definition(r).is_some())
                .map(|r| {
                    vec![
                        oid(relation_oid(r.table().keyspace)),
                        oid(r.oid()),
                        text(schema_name(r.table())),
                        text(r.table().name.clone()),
                        text(r.name()),
                        ScalarValue::Int64(None),
                        ScalarValue::Int64(None),
                        ScalarValue::Int64(None),
                    ]
                })
                .collect(),
        ),
        "pg_views" => (
            &[
                ("schemaname", Name),
                ("viewname", Name),
                ("viewowner", Name),
                ("definition", Text),
            ],
            s.views
                .iter()
                .map(|v| {
                    vec![
                        text("public"),
                        text(v.name.clone()),
                        text(&*s.identity.user),
                        text(plain_view_definition(v)),
                    ]
                })
                .collect(),
        ),
        // Features Partita does not have: the catalogs exist, empty.
        "pg_auth_members" => (
            &[
                ("roleid", Oid),
                ("member", Oid),
                ("grantor", Oid),
                ("admin_option", Bool),
            ],
            vec![],
        ),
        // The dependencies clients look up: a sequence's on the column that owns it
        // (`a` for serial and OWNED BY, `i` for identity), as psql's `\d` of a sequence
        // and ORMs' primary-key sequence lookups read them.
        "pg_depend" => (
            &[
                ("classid", Oid),
                ("objid", Oid),
                ("objsubid", I32),
                ("refclassid", Oid),
                ("refobjid", Oid),
                ("refobjsubid", I32),
                ("deptype", Char),
            ],
            s.sequences
                .iter()
                .filter_map(|q| {
                    let (table, column) = q.owner.as_ref()?;
                    let t = s.tables.iter().find(|t| t.name == *table)?;
                    let i = t.column_index(column)?;
                    let identity = q.def.is_none() && t.columns[i].identity.is_some();
                    Some(vec![
                        oid(1259),
                        oid(sequence_oid(&q.name)),
                        i32v(0),
                        oid(1259),
                        oid(relation_oid(t.keyspace)),
                        i32v(i32::from(attnum(t, i))),
                        text(if identity { "i" } else { "a" }),
                    ])
                })
                .collect(),
        ),
        "pg_description" => (
            &[
                ("objoid", Oid),
                ("classoid", Oid),
                ("objsubid", I32),
                ("description", Text),
            ],
            s.relations
                .iter()
                .filter_map(|r| match r {
                    Relation::Table(t) => Some((r.oid(), t, r.attributes())),
                    _ => None,
                })
                .flat_map(|(o, t, attributes)| {
                    let table = t.comment.iter().map(move |c| (o, 0, c.clone()));
                    let columns = attributes
                        .into_iter()
                        .enumerate()
                        .filter_map(move |(n, c)| {
                            t.columns[c]
                                .comment
                                .clone()
                                .map(|text| (o, n as i32 + 1, text))
                        });
                    table.chain(columns).collect::<Vec<_>>()
                })
                .map(|(o, sub, text)| vec![oid(o), oid(1259), i32v(sub), self::text(text)])
                .collect(),
        ),
        "pg_shdescription" => (
            &[("objoid", Oid), ("classoid", Oid), ("description", Text)],
            vec![],
        ),
        "pg_inherits" => (
            &[
                ("inhrelid", Oid),
                ("inhparent", Oid),
                ("inhseqno", I32),
                ("inhdetachpending", Bool),
            ],
            vec![],
        ),
        "pg_policy" => (
            &[
                ("oid", Oid),
                ("polname", Name),
                ("polrelid", Oid),
                ("polcmd", Char),
                ("polpermissive", Bool),
                ("polroles", OidArray),
                ("polqual", Text),
                ("polwithcheck", Text),
            ],
            vec![],
        ),
        // Row-level security policies: Partita has none.
        "pg_policies" => (
            &[
                ("schemaname", Name),
                ("tablename", Name),
                ("policyname", Name),
                ("permissive", Text),
                ("roles", TextArray),
                ("cmd", Text),
                ("qual", Text),
                ("with_check", Text),
            ],
            vec![],
        ),
        "pg_statistic_ext" => (
            &[
                ("oid", Oid),
                ("stxrelid", Oid),
                ("stxname", Name),
                ("stxnamespace", Oid),
                ("stxowner", Oid),
                ("stxstattarget", I32),
                ("stxkeys", I16Array),
                ("stxkind", TextArray),
                ("stxexprs", Text),
            ],
            vec![],
        ),
        "pg_publication" => (
            &[
                ("oid", Oid),
                ("pubname", Name),
                ("pubowner", Oid),
                ("puballtables", Bool),
                ("pubinsert", Bool),
                ("pubupdate", Bool),
                ("pubdelete", Bool),
                ("pubtruncate", Bool),
                ("pubviaroot", Bool),
            ],
            vec![],
        ),
        "pg_publication_namespace" => (&[("oid", Oid), ("pnpubid", Oid), ("pnnspid", Oid)], vec![]),
        "pg_publication_rel" => (
            &[
                ("oid", Oid),
                ("prpubid", Oid),
                ("prrelid", Oid),
                ("prqual", Text),
                ("prattrs", I16Array),
            ],
            vec![],
        ),
        "pg_rewrite" => (
            &[
                ("oid", Oid),
                ("rulename", Name),
                ("ev_class", Oid),
                ("ev_type", Char),
                ("ev_enabled", Char),
                ("is_instead", Bool),
                ("ev_qual", Text),
                ("ev_action", Text),
            ],
            vec![],
        ),
        "pg_trigger" => (
            &[
                ("oid", Oid),
                ("tgrelid", Oid),
                ("tgparentid", Oid),
                ("tgname", Name),
                ("tgfoid", Oid),
                ("tgtype", I16),
                ("tgenabled", Char),
                ("tgisinternal", Bool),
                ("tgconstrrelid", Oid),
                ("tgconstrindid", Oid),
                ("tgconstraint", Oid),
                ("tgdeferrable", Bool),
                ("tginitdeferred", Bool),
                ("tgnargs", I16),
                ("tgattr", I16Array),
                ("tgargs", Text),
                ("tgqual", Text),
            ],
            vec![],
        ),
        // Index operator classes: Partita's index tables order by the key encoding, with
        // no per-column operator class to show.
        "pg_opclass" => (
            &[
                ("oid", Oid),
                ("opcmethod", Oid),
                ("opcname", Name),
                ("opcnamespace", Oid),
                ("opcowner", Oid),
                ("opcfamily", Oid),
                ("opcintype", Oid),
                ("opcdefault", Bool),
                ("opckeytype", Oid),
            ],
            OPERATOR_CLASSES
                .iter()
                .map(|&(o, name, taken, family)| {
                    vec![
                        oid(o),
                        oid(BTREE_AM),
                        text(name),
                        oid(PG_CATALOG_NAMESPACE),
                        oid(OWNER_OID),
                        oid(family),
                        oid(taken),
                        boolean(true),
                        // name_ops stores cstring keys.
                        oid(if name == "name_ops" { 2275 } else { 0 }),
                    ]
                })
                .collect(),
        ),
        "pg_sequence" => (
            &[
                ("seqrelid", Oid),
                ("seqtypid", Oid),
                ("seqstart", Kind::I64),
                ("seqincrement", Kind::I64),
                ("seqmax", Kind::I64),
                ("seqmin", Kind::I64),
                ("seqcache", Kind::I64),
                ("seqcycle", Bool),
            ],
            s.sequences
                .iter()
                .map(|q| {
                    let o = &q.options;
                    vec![
                        oid(sequence_oid(&q.name)),
                        oid(o.ty.pg_oid()),
                        ScalarValue::Int64(Some(o.start)),
                        ScalarValue::Int64(Some(o.increment)),
                        ScalarValue::Int64(Some(o.max)),
                        ScalarValue::Int64(Some(o.min)),
                        ScalarValue::Int64(Some(o.cache)),
                        boolean(o.cycle),
                    ]
                })
                .collect(),
        ),
        "pg_range" => (
            &[
                ("rngtypid", Oid),
                ("rngsubtype", Oid),
                ("rngmultitypid", Oid),
                ("rngcollation", Oid),
            ],
            vec![],
        ),
        "pg_enum" => (
            &[
                ("oid", Oid),
                ("enumtypid", Oid),
                ("enumsortorder", F32),
                ("enumlabel", Name),
            ],
            s.types
                .iter()
                .flat_map(|t| {
                    t.labels.iter().enumerate().map(|(i, label)| {
                        vec![
                            oid(enum_label_oid(t.oid, i)),
                            oid(t.oid),
                            ScalarValue::Float32(Some(i as f32 + 1.0)),
                            text(label.clone()),
                        ]
                    })
                })
                .collect(),
        ),
        "pg_extension" => (
            &[
                ("oid", Oid),
                ("extname", Name),
                ("extowner", Oid),
                ("extnamespace", Oid),
                ("extrelocatable", Bool),
                ("extversion", Text),
            ],
            // PL/pgSQL is there in every PostgreSQL database (see `extensions`).
            std::iter::once(vec![
                oid(PLPGSQL_EXTENSION_OID),
                text("plpgsql"),
                oid(OWNER_OID),
                oid(PG_CATALOG_NAMESPACE),
                boolean(false),
                text("1.0"),
            ])
            .chain(s.extensions.iter().filter_map(|e| {
                let (_, _, number) = crate::extensions::AVAILABLE
                    .iter()
                    .find(|(n, ..)| *n == e.name)?;
                Some(vec![
                    oid(*number as i32),
                    text(e.name.clone()),
                    oid(OWNER_OID),
                    oid(PUBLIC_NAMESPACE),
                    boolean(true),
                    text(e.version.clone()),
                ])
            }))
            .collect(),
        ),
        _ => return Ok(None),
    };
    Ok(Some(batch(columns, rows)?))
}

/// `pg_sequences`: a row per sequence, with the value it last handed out (NULL before
/// the first).
fn sequences_view(
    s: &Snapshot,
    catalog: &Catalog,
    store: &storage::Store,
) -> DfResult<RecordBatch> {
    let columns: &[(&str, Kind)] = &[
        ("schemaname", Name),
        ("sequencename", Name),
        ("sequenceowner", Name),
        ("data_type", Text),
        ("start_value", Kind::I64),
        ("min_value", Kind::I64),
        ("max_value", Kind::I64),
        ("increment_by", Kind::I64),
        ("cycle", Bool),
        ("cache_size", Kind::I64),
        ("last_value", Kind::I64),
    ];
    let mut rows = Vec::new();
    for q in &s.sequences {
        let o = &q.options;
        let state = catalog
            .sequence_state(store, q)
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
        rows.push(vec![
            text("public"),
            text(q.name.clone()),
            text(&*s.identity.user),
            text(o.type_name()),
            ScalarValue::Int64(Some(o.start)),
            ScalarValue::Int64(Some(o.min)),
            ScalarValue::Int64(Some(o.max)),
            ScalarValue::Int64(Some(o.increment)),
            boolean(o.cycle),
            ScalarValue::Int64(Some(o.cache)),
            ScalarValue::Int64(state.called.then_some(state.last)),
        ]);
    }
    batch(columns, rows)
}

/// `pg_settings`: a row per parameter of the session, with its value now and its default.
fn settings_table(settings: &crate::session::Settings) -> DfResult<RecordBatch> {
    let columns: &[(&str, Kind)] = &[
        ("name", Text),
        ("setting", Text),
        ("unit", Text),
        ("category", Text),
        ("short_desc", Text),
        ("extra_desc", Text),
        ("context", Text),
        ("vartype", Text),
        ("source", Text),
        ("min_val", Text),
        ("max_val", Text),
        ("enumvals", TextArray),
        ("boot_val", Text),
        ("reset_val", Text),
        ("sourcefile", Text),
        ("sourceline", I32),
        ("pending_restart", Bool),
    ];
    let rows = settings
        .all()
        .into_iter()
        .map(|(name, value, default)| {
            let source = if value == default {
                "default"
            } else {
                "session"
            };
            vec![
                text(crate::session::show_column(&name)),
                text(value),
                null(),
                text(""),
                text(""),
                null(),
                text("user"),
                text("string"),
                text(source),
                null(),
                null(),
                null(),
                text(default.clone()),
                text(default),
                null(),
                null(),
                boolean(false),
            ]
        })
        .collect();
    batch(columns, rows)
}

/// The collation of a column of type `ty`: "default" (100) for text types.
/// PostgreSQL's default btree operator classes of the types Partita has: OID, name, the
/// type it takes (`anyenum`, `anyarray` for enums and arrays) and the family.
const OPERATOR_CLASSES: &[(i32, &str, i32, i32)] = &[
    (10000, "array_ops", 2277, 397),
    (10003, "bool_ops", 16, 424),
    (10004, "bpchar_ops", 1042, 426),
    (10006, "bytea_ops", 17, 428),
    (10007, "char_ops", 18, 429),
    (3122, "date_ops", 1082, 434),
    (10069, "enum_ops", 3500, 3522),
    (10012, "float4_ops", 700, 1970),
    (3123, "float8_ops", 701, 1970),
    (1979, "int2_ops", 21, 1976),
    (1978, "int4_ops", 23, 1976),
    (3124, "int8_ops", 20, 1976),
    (10022, "interval_ops", 1186, 1982),
    (10088, "jsonb_ops", 3802, 4033),
    (10028, "name_ops", 19, 1994),
    (3125, "numeric_ops", 1700, 1988),
    (1981, "oid_ops", 26, 1989),
    (3126, "text_ops", 25, 1994),
    (10038, "time_ops", 1083, 1996),
    (3128, "timestamp_ops", 1114, 434),
    (3127, "timestamptz_ops", 1184, 434),
    (10065, "uuid_ops", 2950, 2968),
];

/// The default operator class (`pg_index.indclass`) of a key column of type `ty`; varchar
/// is compared as text, as in PostgreSQL.
fn operator_class(ty: SqlType) -> i32 {
    let taken = match ty {
        SqlType::Varchar { .. } => 25,
        SqlType::Enum { .. } => 3500,
        SqlType::Array { .. } => 2277,
        other => other.pg_oid(),
    };
    OPERATOR_CLASSES
        .iter()
        .find(|c| c.2 == taken)
        .map_or(0, |c| c.0)
}

fn collation(ty: SqlType) -> i32 {
    match ty {
        SqlType::Text | SqlType::Varchar { .. } | SqlType::Char { .. } => 100,
        SqlType::Array { element } => collation(*element),
        _ => 0,
    }
}

/// The name of a type's input, output, receive or send function (`what`), as PostgreSQL
/// names them: `array_in` for every array, `date_in` with an underscore for the types
/// added later, `int4in` without for the older ones.
fn io_function(name: &str, elem: i32, typtype: &str, what: &str) -> String {
    let base = match name {
        _ if elem != 0 && name.starts_with('_') => "array",
        // A table's row type.
        _ if typtype == "c" => "record",
        _ => name,
    };
    let underscore = matches!(
        base,
        "array"
            | "record"
            | "date"
            | "time"
            | "timetz"
            | "timestamp"
            | "timestamptz"
            | "interval"
            | "numeric"
            | "json"
            | "jsonb"
            | "uuid"
            | "bit"
            | "varbit"
            | "inet"
            | "cidr"
            | "macaddr"
            | "cstring"
            | "void"
            | "anyarray"
            | "anyelement"
    );
    match underscore {
        true => format!("{base}_{what}"),
        false => format!("{base}{what}"),
    }
}

#[allow(clippy::too_many_arguments)]
fn type_row(
    o: i32,
    name: &str,
    len: i16,
    typtype: &str,
    category: &str,
    elem: i32,
    array: i32,
    coll: i32,
    relid: i32,
) -> Vec<ScalarValue> {
    vec![
        oid(o),
        text(name),
        oid(PG_CATALOG_NAMESPACE),
        oid(OWNER_OID),
        i16v(len),
        boolean(len > 0 && len <= 8),
        text(typtype),
        text(category),
        boolean(matches!(
            name,
            "text" | "float8" | "bool" | "timestamptz" | "oid"
        )),
        boolean(true),
        text(","),
        oid(relid),
        if elem != 0 {
            text("array_subscript_handler")
        } else {
            text("-")
        },
        oid(elem),
        oid(array),
        text(io_function(name, elem, typtype, "in")),
        text(io_function(name, elem, typtype, "out")),
        text(io_function(name, elem, typtype, "recv")),
        text(io_function(name, elem, typtype, "send")),
        text(if len == 8 { "d" } else { "i" }),
        text(if len > 0 { "p" } else { "x" }),
        boolean(false),
        oid(0),
        i32v(-1),
        i32v(0),
        oid(coll),
        null(),
        null(),
    ]
}

fn information_schema_table(name: &str, s: &Snapshot) -> DfResult<Option<RecordBatch>> {
    let base_tables = || s.tables.iter().filter(|t| t.view.is_none());
    let (columns, rows): (&[(&str, Kind)], Vec<Vec<ScalarValue>>) = match name {
        "schemata" => (
            &[
                ("catalog_name", Name),
                ("schema_name", Name),
                ("schema_owner", Name),
            ],
            ["pg_catalog", "public", "information_schema"]
                .into_iter()
                .map(|n| {
                    vec![
                        text(&*s.identity.database),
                        text(n),
                        text(&*s.identity.user),
                    ]
                })
                .collect(),
        ),
        // As in PostgreSQL, materialized views are not in information_schema.
        "sequences" => (
            &[
                ("sequence_catalog", Name),
                ("sequence_schema", Name),
                ("sequence_name", Name),
                ("data_type", Text),
                ("numeric_precision", I32),
                ("numeric_precision_radix", I32),
                ("numeric_scale", I32),
                ("start_value", Text),
                ("minimum_value", Text),
                ("maximum_value", Text),
                ("increment", Text),
                ("cycle_option", Text),
            ],
            s.sequences
                .iter()
                // Not identity columns' (PostgreSQL leaves out the sequences its
                // pg_depend marks as internal).
                .filter(|q| {
                    q.def.is_some()
                        || !q.owner.as_ref().is_some_and(|(t, c)| {
                            s.tables.iter().any(|d| {
                                d.name == *t
                                    && d.columns
                                        .iter()
                                        .any(|x| x.name == *c && x.identity.is_some())
                            })
                        })
                })
                .map(|q| {
                    let o = &q.options;
                    let bits = match o.ty {
                        SqlType::Int2 => 16,
                        SqlType::Int4 => 32,
                        _ => 64,
                    };
                    vec![
                        text(&*s.identity.database),
                        text("public"),
                        text(q.name.clone()),
                        text(o.type_name()),
                        i32v(bits),
                        i32v(2),
                        i32v(0),
                        text(o.start.to_string()),
                        text(o.min.to_string()),
                        text(o.max.to_string()),
                        text(o.increment.to_string()),
                        text(if o.cycle { "YES" } else { "NO" }),
                    ]
                })
                .collect(),
        ),
        "tables" => (
            &[
                ("table_catalog", Name),
                ("table_schema", Name),
                ("table_name", Name),
                ("table_type", Text),
                ("is_insertable_into", Text),
                ("is_typed", Text),
                ("commit_action", Text),
            ],
            base_tables()
                .map(|t| {
                    vec![
                        text(&*s.identity.database),
                        text(schema_name(t)),
                        text(t.name.clone()),
                        text(match t.temp_schema {
                            Some(_) => "LOCAL TEMPORARY",
                            None => "BASE TABLE",
                        }),
                        text("YES"),
                        text("NO"),
                        // PostgreSQL 15 leaves it empty, ON COMMIT or not.
                        null(),
                    ]
                })
                .chain(s.views.iter().map(|v| {
                    vec![
                        text(&*s.identity.database),
                        text("public"),
                        text(v.name.clone()),
                        text("VIEW"),
                        text("NO"),
                        text("NO"),
                        null(),
                    ]
                }))
                .collect(),
        ),
        "columns" => (
            &[
                ("table_catalog", Name),
                ("table_schema", Name),
                ("table_name", Name),
                ("column_name", Name),
                ("ordinal_position", I32),
                ("column_default", Text),
                ("is_nullable", Text),
                ("data_type", Text),
                ("character_maximum_length", I32),
                ("character_octet_length", I32),
                ("numeric_precision", I32),
                ("numeric_precision_radix", I32),
                ("numeric_scale", I32),
                ("datetime_precision", I32),
                ("interval_type", Text),
                ("interval_precision", I32),
                ("character_set_catalog", Name),
                ("character_set_schema", Name),
                ("character_set_name", Name),
                ("collation_catalog", Name),
                ("collation_schema", Name),
                ("collation_name", Name),
                ("domain_catalog", Name),
                ("domain_schema", Name),
                ("domain_name", Name),
                ("udt_catalog", Name),
                ("udt_schema", Name),
                ("udt_name", Name),
                ("scope_catalog", Name),
                ("scope_schema", Name),
                ("scope_name", Name),
                ("maximum_cardinality", I32),
                ("dtd_identifier", Name),
                ("is_self_referencing", Text),
                ("is_identity", Text),
                ("identity_generation", Text),
                ("identity_start", Text),
                ("identity_increment", Text),
                ("identity_maximum", Text),
                ("identity_minimum", Text),
                ("identity_cycle", Text),
                ("is_generated", Text),
                ("generation_expression", Text),
                ("is_updatable", Text),
            ],
            base_tables()
                .flat_map(|t| {
                    t.columns
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| !c.hidden)
                        .map(|(i, c)| {
                            column_row(
                                s,
                                schema_name(t),
                                &t.name,
                                &c.name,
                                attnum(t, i),
                                c.default
                                    .as_deref()
                                    .filter(|_| has_default(c))
                                    .map(|d| shown_default(d, c.ty)),
                                c.nullable,
                                c.ty,
                                Some(c),
                            )
                        })
                        .collect::<Vec<_>>()
                })
                .chain(s.views.iter().flat_map(|v| {
                    view_columns(v)
                        .into_iter()
                        .enumerate()
                        .map(|(n, (name, ty))| {
                            column_row(
                                s,
                                "public",
                                &v.name,
                                &name,
                                n as i16 + 1,
                                None,
                                true,
                                ty,
                                None,
                            )
                        })
                }))
                .collect(),
        ),
        "table_constraints" => (
            &[
                ("constraint_catalog", Name),
                ("constraint_schema", Name),
                ("constraint_name", Name),
                ("table_catalog", Name),
                ("table_schema", Name),
                ("table_name", Name),
                ("constraint_type", Text),
                ("is_deferrable", Text),
                ("initially_deferred", Text),
                ("enforced", Text),
            ],
            base_tables()
                .flat_map(|t| {
                    let plain = |name: String, kind| (name, kind, false, false);
                    let primary =
                        has_primary_key(t).then(|| plain(t.primary_key_name(), "PRIMARY KEY"));
                    let unique = t
                        .indexes
                        .iter()
                        .filter(|i| i.constraint)
                        .map(|i| plain(i.name.clone(), "UNIQUE"));
                    let checks = t.checks.iter().map(|c| plain(c.name.clone(), "CHECK"));
                    let not_null = not_null_checks(t).map(|(name, _)| plain(name, "CHECK"));
                    let foreign = t.foreign_keys.iter().map(|k| {
                        (
                            k.name.clone(),
                            "FOREIGN KEY",
                            k.deferrable,
                            k.initially_deferred,
                        )
                    });
                    let yes_no = |b: bool| text(if b { "YES" } else { "NO" });
                    primary
                        .into_iter()
                        .chain(unique)
                        .chain(checks)
                        .chain(foreign)
                        .chain(not_null)
                        .map(|(name, kind, deferrable, deferred)| {
                            vec![
                                text(&*s.identity.database),
                                text("public"),
                                text(name),
                                text(&*s.identity.database),
                                text("public"),
                                text(t.name.clone()),
                                text(kind),
                                yes_no(deferrable),
                                yes_no(deferred),
                                text("YES"),
                            ]
                        })
                        .collect::<Vec<_>>()
                })
                .collect(),
        ),
        "check_constraints" => (
            &[
                ("constraint_catalog", Name),
                ("constraint_schema", Name),
                ("constraint_name", Name),
                ("check_clause", Text),
            ],
            base_tables()
                .flat_map(|t| {
                    // PostgreSQL shows a CHECK's condition as its constraint definition's
                    // parenthesized part.
                    let checks = t
                        .checks
                        .iter()
                        .map(|c| (c.name.clone(), format!("({})", shown_condition(&c.expr))));
                    checks
                        .chain(not_null_checks(t))
                        .map(|(name, clause)| {
                            vec![
                                text(&*s.identity.database),
                                text("public"),
                                text(name),
                                text(clause),
                            ]
                        })
                        .collect::<Vec<_>>()
                })
                .collect(),
        ),
        "constraint_column_usage" => (
            &[
                ("table_catalog", Name),
                ("table_schema", Name),
                ("table_name", Name),
                ("column_name", Name),
                ("constraint_catalog", Name),
                ("constraint_schema", Name),
                ("constraint_name", Name),
            ],
            base_tables()
                .flat_map(|t| {
                    // The columns each constraint uses: its own table's for a key or a
                    // CHECK, the referenced table's for a foreign key.
                    let own = |name: String, columns: Vec<usize>| {
                        columns
                            .into_iter()
                            .map(move |c| (t.name.clone(), t.columns[c].name.clone(), name.clone()))
                    };
                    let mut used: Vec<(String, String, String)> = Vec::new();
                    if has_primary_key(t) {
                        used.extend(own(t.primary_key_name(), t.key_columns()));
                    }
                    for i in t.indexes.iter().filter(|i| i.constraint) {
                        used.extend(own(
                            i.name.clone(),
                            i.columns.iter().map(|p| p.column).collect(),
                        ));
                    }
                    for c in &t.checks {
                        let read: Vec<usize> = t
                            .columns
                            .iter()
                            .enumerate()
                            .filter(|(_, col)| {
                                !col.hidden
                                    && crate::ddl::reads_column(&c.expr, &col.name).unwrap_or(false)
                            })
                            .map(|(i, _)| i)
                            .collect();
                        used.extend(own(c.name.clone(), read));
                    }
                    for k in &t.foreign_keys {
                        if let Some(parent) = base_tables().find(|p| p.name == k.table) {
                            used.extend(k.referenced.iter().map(|&c| {
                                (
                                    parent.name.clone(),
                                    parent.columns[c].name.clone(),
                                    k.name.clone(),
                                )
                            }));
                        }
                    }
                    used.sort();
                    used.dedup();
                    used.into_iter()
                        .map(|(table, column, constraint)| {
                            vec![
                                text(&*s.identity.database),
                                text("public"),
                                text(table),
                                text(column),
                                text(&*s.identity.database),
                                text("public"),
                                text(constraint),
                            ]
                        })
                        .collect::<Vec<_>>()
                })
                .collect(),
        ),
        "key_column_usage" => (
            &[
                ("constraint_catalog", Name),
                ("constraint_schema", Name),
                ("constraint_name", Name),
                ("table_catalog", Name),
                ("table_schema", Name),
                ("table_name", Name),
                ("column_name", Name),
                ("ordinal_position", I32),
                ("position_in_unique_constraint", I32),
            ],
            base_tables()
                .flat_map(|t| {
                    // Each constraint's columns, with their places in the referenced
                    // constraint's for a foreign key.
                    let primary = has_primary_key(t).then(|| {
                        let columns = t.key_columns();
                        (t.primary_key_name(), columns, None)
                    });
                    let unique = t.indexes.iter().filter(|i| i.constraint).map(|i| {
                        let columns = i.columns.iter().map(|p| p.column).collect();
                        (i.name.clone(), columns, None)
                    });
                    let foreign = t.foreign_keys.iter().map(|k| {
                        let places = s
                            .tables
                            .iter()
                            .find(|p| p.name == k.table)
                            .map(|p| referenced_places(p, k));
                        (k.name.clone(), k.columns.clone(), places)
                    });
                    primary
                        .into_iter()
                        .chain(unique)
                        .chain(foreign)
                        .flat_map(|(name, columns, places)| {
                            columns
                                .into_iter()
                                .enumerate()
                                .map(|(n, c)| {
                                    vec![
                                        text(&*s.identity.database),
                                        text("public"),
                                        text(name.clone()),
                                        text(&*s.identity.database),
                                        text("public"),
                                        text(t.name.clone()),
                                        text(t.columns[c].name.clone()),
                                        i32v(n as i32 + 1),
                                        match &places {
                                            Some(p) => i32v(p[n]),
                                            None => null(),
                                        },
                                    ]
                                })
                                .collect::<Vec<_>>()
                        })
                        .collect::<Vec<_>>()
                })
                .collect(),
        ),
        "referential_constraints" => (
            &[
                ("constraint_catalog", Name),
                ("constraint_schema", Name),
                ("constraint_name", Name),
                ("unique_constraint_catalog", Name),
                ("unique_constraint_schema", Name),
                ("unique_constraint_name", Name),
                ("match_option", Text),
                ("update_rule", Text),
                ("delete_rule", Text),
            ],
            base_tables()
                .flat_map(|t| {
                    t.foreign_keys.iter().map(|k| {
                        let unique = match &k.index {
                            None => base_tables().find(|p| p.name == k.table).map_or_else(
                                || format!("{}_pkey", k.table),
                                |p| p.primary_key_name(),
                            ),
                            Some(name) => name.clone(),
                        };
                        vec![
                            text(&*s.identity.database),
                            text("public"),
                            text(k.name.clone()),
                            text(&*s.identity.database),
                            text("public"),
                            text(unique),
                            text(if k.match_full { "FULL" } else { "NONE" }),
                            text(k.on_update.sql()),
                            text(k.on_delete.sql()),
                        ]
                    })
                })
                .collect(),
        ),
        "views" => (
            &[
                ("table_catalog", Name),
                ("table_schema", Name),
                ("table_name", Name),
                ("view_definition", Text),
                ("check_option", Text),
                ("is_updatable", Text),
                ("is_insertable_into", Text),
            ],
            s.views
                .iter()
                .map(|v| {
                    vec![
                        text(&*s.identity.database),
                        text("public"),
                        text(v.name.clone()),
                        text(plain_view_definition(v)),
                        text("NONE"),
                        text("NO"),
                        text("NO"),
                    ]
                })
                .collect(),
        ),
        _ => return Ok(None),
    };
    Ok(Some(batch(columns, rows)?))
}

/// `information_schema.columns.data_type`: the SQL-standard type name.
fn information_schema_type(ty: SqlType) -> String {
    match ty {
        SqlType::Numeric { .. } => "numeric".into(),
        SqlType::Varchar { .. } => "character varying".into(),
        SqlType::Char { .. } => "character".into(),
        // Without the precision, which is `datetime_precision`.
        SqlType::Timestamp { .. } => "timestamp without time zone".into(),
        SqlType::TimestampTz { .. } => "timestamp with time zone".into(),
        SqlType::Time { .. } => "time without time zone".into(),
        SqlType::Array { .. } => "ARRAY".into(),
        SqlType::Enum { .. } => "USER-DEFINED".into(),
        other => other.to_string(),
    }
}

/// (character_maximum_length, numeric_precision, numeric_precision_radix, numeric_scale,
/// datetime_precision) of a column type.
fn column_sizes(
    ty: SqlType,
) -> (
    ScalarValue,
    ScalarValue,
    ScalarValue,
    ScalarValue,
    ScalarValue,
) {
    let n = |v: Option<i32>| v.map_or(null(), i32v);
    match ty {
        SqlType::Varchar { length } => {
            (n(length.map(|l| l as i32)), null(), null(), null(), null())
        }
        SqlType::Char { length } => (i32v(length as i32), null(), null(), null(), null()),
        SqlType::Int2 => (null(), i32v(16), i32v(2), i32v(0), null()),
        SqlType::Int4 => (null(), i32v(32), i32v(2), i32v(0), null()),
        SqlType::Int8 => (null(), i32v(64), i32v(2), i32v(0), null()),
        SqlType::Float4 => (null(), i32v(24), i32v(2), null(), null()),
        SqlType::Float8 => (null(), i32v(53), i32v(2), null(), null()),
        SqlType::Numeric { precision, scale } => (
            null(),
            n(precision.map(i32::from)),
            i32v(10),
            n(precision.map(|_| i32::from(scale.unwrap_or(0)))),
            null(),
        ),
        SqlType::Date => (null(), null(), null(), null(), i32v(0)),
        SqlType::Timestamp { precision }
        | SqlType::TimestampTz { precision }
        | SqlType::Time { precision } => (
            null(),
            null(),
            null(),
            null(),
            i32v(precision.map_or(6, i32::from)),
        ),
        SqlType::Interval => (null(), null(), null(), null(), i32v(6)),
        _ => (null(), null(), null(), null(), null()),
    }
}

/// Whether `column` has a default PostgreSQL's catalogs show: an identity column's sequence
/// is shown as the identity instead, and the hidden row id has none.
/// A default as PostgreSQL prints it: a sequence's name in `nextval` is a regclass
/// constant (`nextval('t_id_seq'::regclass)`), and a constant is shown as PostgreSQL shows
/// one of the column's type `ty` (see [`shown_constant`]).
fn shown_default(default: &str, ty: SqlType) -> String {
    // `gen_random_uuid()` is stored as what it is planned as (`functions::rewrite`), and
    // so are uuid-ossp's generators (`uuid_generate_v4()`).
    if default == "uuid()::UUID" {
        return "gen_random_uuid()".into();
    }
    if let Some(call) = default
        .strip_prefix("partita_uuid_")
        .and_then(|d| d.strip_suffix("()::UUID"))
    {
        return format!("uuid_{call}()");
    }
    if let Ok(expr) = crate::dml::parse_expr(default)
        && let Some(shown) = shown_constant(&expr, ty)
    {
        return shown;
    }
    // The SQL value functions are keywords, which PostgreSQL's deparser writes in capitals.
    const VALUE_FUNCTIONS: &[&str] = &[
        "current_date",
        "current_time",
        "current_timestamp",
        "localtime",
        "localtimestamp",
        "current_user",
        "current_role",
        "session_user",
        "user",
        "current_catalog",
        "current_schema",
    ];
    let bare = default.trim();
    let name = bare.split('(').next().unwrap_or(bare).trim();
    if VALUE_FUNCTIONS.contains(&name.to_ascii_lowercase().as_str())
        && (name.len() == bare.len()
            || !matches!(name.to_ascii_lowercase().as_str(), "current_schema"))
    {
        return format!("{}{}", name.to_ascii_uppercase(), &bare[name.len()..]);
    }
    match default
        .strip_prefix("nextval('")
        .and_then(|rest| rest.strip_suffix("')"))
        .filter(|name| !name.contains('\''))
    {
        Some(name) => format!("nextval('{name}'::regclass)"),
        None => default.to_string(),
    }
}

/// A constant default as PostgreSQL's deparser shows it (Rails and Knex read string
/// defaults out of this form): a number as written when it is a non-negative int4 or
/// numeric constant, else quoted with its type (`'-1'::integer`); quoted text read as the
/// column's type, shown plain for int4, numeric with a point and boolean and otherwise quoted
/// with the type's name (`''::character varying`, `'{}'::jsonb`, `'0'::numeric`). `None` for what is not a constant.
fn shown_constant(expr: &datafusion::sql::sqlparser::ast::Expr, ty: SqlType) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{Expr, UnaryOperator, Value};
    let quoted = |text: &str, label: &str| format!("'{}'::{label}", text.replace('\'', "''"));
    // A number constant of its own type: int4, int8 beyond int4, numeric with a point.
    let number = |digits: &str, negative: bool| -> Option<String> {
        let signed = match negative {
            true => format!("-{digits}"),
            false => digits.to_string(),
        };
        let label = if signed.parse::<i32>().is_ok() {
            "integer"
        } else if signed.parse::<i64>().is_ok() {
            "bigint"
        } else {
            "numeric"
        };
        Some(match (negative, label) {
            (false, "integer" | "numeric") => signed,
            _ => quoted(&signed, label),
        })
    };
    match expr {
        Expr::Nested(inner) => shown_constant(inner, ty),
        Expr::Value(v) => match &v.value {
            Value::Number(digits, _) => number(digits, false),
            Value::Boolean(b) => Some(b.to_string()),
            Value::SingleQuotedString(text) => shown_text_constant(text, ty),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                Value::Number(digits, _) => number(digits, true),
                _ => None,
            },
            _ => None,
        },
        // `'x'::character varying`, as a default read back from a catalog is written.
        Expr::Cast { expr, .. } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(text) => shown_text_constant(text, ty),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// Quoted text as a constant of type `ty` (see [`shown_constant`]).
fn shown_text_constant(text: &str, ty: SqlType) -> Option<String> {
    let quoted = |label: &str| format!("'{}'::{label}", text.replace('\'', "''"));
    Some(match ty {
        SqlType::Bool => match text.trim().to_ascii_lowercase().as_str() {
            "t" | "true" | "y" | "yes" | "on" | "1" => "true".into(),
            "f" | "false" | "n" | "no" | "off" | "0" => "false".into(),
            _ => return None,
        },
        SqlType::Int4 => match text.trim().parse::<i32>() {
            Ok(n) if n >= 0 => n.to_string(),
            Ok(n) => format!("'{n}'::integer"),
            Err(_) => return None,
        },
        SqlType::Numeric { .. } => {
            let plain = text.trim();
            let digits = plain.strip_prefix('-').unwrap_or(plain);
            let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
            let number = !whole.is_empty()
                && whole.bytes().all(|b| b.is_ascii_digit())
                && fraction.bytes().all(|b| b.is_ascii_digit());
            // A quoted integer is a numeric constant that needs its type shown ('0'::numeric);
            // one with a point shows as the number it is.
            match (number, plain.starts_with('-') || !digits.contains('.')) {
                (true, false) => plain.to_string(),
                (true, true) => format!("'{plain}'::numeric"),
                (false, _) => return None,
            }
        }
        SqlType::Text => quoted("text"),
        SqlType::Varchar { .. } => quoted("character varying"),
        SqlType::Char { .. } => quoted("bpchar"),
        SqlType::Int2 => quoted("smallint"),
        SqlType::Int8 => quoted("bigint"),
        SqlType::Float4 => quoted("real"),
        SqlType::Float8 => quoted("double precision"),
        SqlType::Bytea => quoted("bytea"),
        SqlType::Date => quoted("date"),
        SqlType::Timestamp { .. } => quoted("timestamp without time zone"),
        SqlType::TimestampTz { .. } => quoted("timestamp with time zone"),
        SqlType::Time { .. } => quoted("time without time zone"),
        SqlType::Interval => quoted("interval"),
        SqlType::Uuid => quoted("uuid"),
        SqlType::Json => quoted("json"),
        SqlType::Jsonb => quoted("jsonb"),
        SqlType::Array { .. } | SqlType::Enum { .. } => quoted(&ty.to_string()),
    })
}

fn has_default(column: &sql::ColumnDef) -> bool {
    let default = column.default.is_some() && column.identity.is_none();
    (default || column.generated.is_some()) && !column.hidden
}

/// Whether CHECK condition `expr` names column `column` (pg_constraint.conkey).
fn check_reads(expr: &str, column: &str) -> bool {
    crate::dml::parse_expr(expr)
        .is_ok_and(|e| sql::ddl::columns_read(&e).iter().any(|c| c == column))
}

/// A `pg_attribute` row.
#[allow(clippy::too_many_arguments)]
fn attribute_row(
    rel: i32,
    name: &str,
    ty: SqlType,
    num: i16,
    not_null: bool,
    has_default: bool,
    has_missing: bool,
    identity: &str,
) -> Vec<ScalarValue> {
    let len = BUILTIN_TYPES
        .iter()
        .find(|b| b.0 == ty.pg_oid())
        .map_or(-1, |b| b.2);
    vec![
        oid(rel),
        text(name.to_string()),
        oid(ty.pg_oid()),
        i32v(-1),
        i16v(len),
        i16v(num),
        i32v(i32::from(ty.element().is_some())),
        i32v(-1),
        i32v(ty.type_modifier()),
        boolean(len > 0 && len <= 8),
        text("i"),
        text(if len > 0 { "p" } else { "x" }),
        text(""),
        boolean(not_null),
        boolean(has_default),
        boolean(has_missing),
        text(identity.to_string()),
        text(""),
        boolean(false),
        boolean(true),
        i32v(0),
        oid(collation(ty)),
        null(),
        null(),
        null(),
        null(),
    ]
}

/// A plain view's columns and their types, as recorded when it was made (a type Partita
/// has no column type for shows as text).
fn view_columns(v: &sql::PlainView) -> Vec<(String, SqlType)> {
    v.column_types
        .iter()
        .map(|(name, ty)| (name.clone(), SqlType::parse(ty).unwrap_or(SqlType::Text)))
        .collect()
}

/// An `information_schema.columns` row.
#[allow(clippy::too_many_arguments)]
fn column_row(
    s: &Snapshot,
    schema: &str,
    table: &str,
    name: &str,
    position: i16,
    default: Option<String>,
    nullable: bool,
    ty: SqlType,
    column: Option<&sql::ColumnDef>,
) -> Vec<ScalarValue> {
    let identity = column.and_then(|c| c.identity);
    let generated = column.and_then(|c| c.generated.as_deref());
    let (char_len, precision, radix, scale, dt_precision) = column_sizes(ty);
    let udt = match ty {
        SqlType::Enum { ty } => ty.name.clone(),
        SqlType::Array {
            element: SqlType::Enum { ty },
        } => format!("_{}", ty.name),
        _ => builtin_type(ty.pg_oid()).map(|t| t.0).unwrap_or_default(),
    };
    // The identity column's sequence (its options: start, increment, bounds, cycle).
    let sequence = identity.and_then(|_| {
        s.sequences.iter().find(|q| {
            q.def.is_none()
                && q.owner
                    .as_ref()
                    .is_some_and(|(t, c)| t == table && c == name)
        })
    });
    let option = |f: fn(&sql::sequence::SequenceOptions) -> String| {
        sequence.map_or(null(), |q| text(f(&q.options)))
    };
    // Characters are at most four bytes in UTF-8; an unbounded string is at most 1 GB.
    let octets = match ty {
        SqlType::Varchar { length: Some(l) } | SqlType::Char { length: l } => i32v(l as i32 * 4),
        SqlType::Varchar { length: None } | SqlType::Text => i32v(1 << 30),
        _ => null(),
    };
    vec![
        text(&*s.identity.database),
        text(schema.to_string()),
        text(table.to_string()),
        text(name.to_string()),
        i32v(i32::from(position)),
        default.map_or(null(), text),
        text(if nullable { "YES" } else { "NO" }),
        text(information_schema_type(ty)),
        char_len,
        octets,
        precision,
        radix,
        scale,
        dt_precision,
        null(),
        null(),
        null(),
        null(),
        null(),
        null(),
        null(),
        null(),
        null(),
        null(),
        null(),
        text(&*s.identity.database),
        text(match ty {
            SqlType::Enum { .. }
            | SqlType::Array {
                element: SqlType::Enum { .. },
            } => "public",
            _ => "pg_catalog",
        }),
        text(udt),
        null(),
        null(),
        null(),
        null(),
        text(position.to_string()),
        text("NO"),
        text(if identity.is_some() { "YES" } else { "NO" }),
        match identity {
            Some(sql::Identity::Always) => text("ALWAYS"),
            Some(sql::Identity::ByDefault) => text("BY DEFAULT"),
            None => null(),
        },
        option(|o| o.start.to_string()),
        option(|o| o.increment.to_string()),
        option(|o| o.max.to_string()),
        option(|o| o.min.to_string()),
        text(if sequence.is_some_and(|q| q.options.cycle) {
            "YES"
        } else {
            "NO"
        }),
        text(if generated.is_some() {
            "ALWAYS"
        } else {
            "NEVER"
        }),
        generated.map_or(null(), |g| text(shown_condition(g))),
        text("YES"),
    ]
}

/// The position of `attgenerated` in a `pg_attribute` row.
const ATTGENERATED: usize = 17;

/// The position of `relhastriggers` in a `pg_class` row.
const RELHASTRIGGERS: usize = 20;
/// The positions of `relnamespace` and `relpersistence` in a `pg_class` row.
const RELNAMESPACE: usize = 2;
const RELPERSISTENCE: usize = 15;

/// A `pg_class` row.
#[allow(clippy::too_many_arguments)]
fn class_row(
    oid_value: i32,
    name: &str,
    row_type: i32,
    am: i32,
    has_index: bool,
    kind: &str,
    natts: i16,
    checks: i16,
) -> Vec<ScalarValue> {
    let view = kind == "v";
    vec![
        oid(oid_value),
        text(name.to_string()),
        oid(PUBLIC_NAMESPACE),
        oid(row_type),
        oid(0),
        oid(OWNER_OID),
        oid(am),
        oid(if view { 0 } else { oid_value }),
        oid(0),
        i32v(0),
        ScalarValue::Float32(Some(-1.0)),
        i32v(0),
        oid(0),
        boolean(has_index),
        boolean(false),
        text("p"),
        text(kind.to_string()),
        i16v(natts),
        i16v(checks),
        boolean(view),
        boolean(false),
        boolean(false),
        boolean(false),
        boolean(false),
        boolean(true),
        text(if view { "n" } else { "d" }),
        boolean(false),
        oid(0),
        i32v(0),
        i32v(0),
        null(),
        null(),
        null(),
    ]
}

/// The columns of the index foreign key `fk` depends on (`parent`'s key or a unique
/// index), in their order there.
fn referenced_index_columns(parent: &TableDef, fk: &sql::catalog::ForeignKeyDef) -> Vec<usize> {
    match &fk.index {
        None => parent.key_columns(),
        Some(name) => parent
            .indexes
            .iter()
            .find(|x| x.name == *name)
            .map(|x| x.columns.iter().map(|p| p.column).collect())
            .unwrap_or_default(),
    }
}

/// The places (from 1) of `fk`'s referenced columns among those of the index it depends on.
fn referenced_places(parent: &TableDef, fk: &sql::catalog::ForeignKeyDef) -> Vec<i32> {
    let order = referenced_index_columns(parent, fk);
    fk.referenced
        .iter()
        .enumerate()
        .map(|(n, c)| {
            let place = order.iter().position(|x| x == c).unwrap_or(n);
            place as i32 + 1
        })
        .collect()
}

/// The `pg_constraint` row of foreign key `i` of table `t` (`f`): the referenced table,
/// the index its columns match (the key's or a unique index), actions and match type.
fn foreign_key_row(
    s: &Snapshot,
    t: &TableDef,
    i: usize,
    fk: &sql::catalog::ForeignKeyDef,
) -> Vec<ScalarValue> {
    let parent = s.tables.iter().find(|p| p.name == fk.table);
    // The index the constraint depends on: the key's or a unique index.
    let index = parent.map_or(0, |p| match &fk.index {
        None => primary_key_oid(p.keyspace),
        Some(n) => p
            .indexes
            .iter()
            .find(|x| x.name == *n)
            .map_or(0, |x| relation_oid(x.keyspace)),
    });
    let mut row = constraint_row(
        foreign_key_oid(t.keyspace, i),
        fk.name.clone(),
        "f",
        relation_oid(t.keyspace),
        index,
        i16_array(fk.columns.iter().map(|&c| attnum(t, c))),
        null(),
    );
    row[4] = boolean(fk.deferrable);
    row[5] = boolean(fk.initially_deferred);
    row[6] = boolean(!fk.not_valid);
    row[11] = oid(parent.map_or(0, |p| relation_oid(p.keyspace)));
    row[12] = text(fk.on_update.code().to_string());
    row[13] = text(fk.on_delete.code().to_string());
    row[14] = text(if fk.match_full { "f" } else { "s" }.to_string());
    row[19] = match parent {
        Some(p) => i16_array(fk.referenced.iter().map(|&c| attnum(p, c))),
        None => null(),
    };
    row
}

/// A `pg_constraint` row: a primary key (`p`) or UNIQUE constraint (`u`), with its index,
/// or a CHECK (`c`, with its condition as `conbin`). A UNIQUE constraint's OID is the one
/// its index keyspace would give a primary key constraint, which index keyspaces have none
/// of.
fn constraint_row(
    oid_value: i32,
    name: String,
    kind: &str,
    relation: i32,
    index: i32,
    columns: ScalarValue,
    condition: ScalarValue,
) -> Vec<ScalarValue> {
    vec![
        oid(oid_value),
        text(name),
        oid(PUBLIC_NAMESPACE),
        text(kind.to_string()),
        boolean(false),
        boolean(false),
        boolean(true),
        oid(relation),
        oid(0),
        oid(index),
        oid(0),
        oid(0),
        text(" "),
        text(" "),
        text(" "),
        boolean(true),
        i32v(0),
        // A primary key or UNIQUE constraint is not inherited; a CHECK would be.
        boolean(kind != "c"),
        columns,
        null(),
        null(),
        null(),
        null(),
        null(),
        condition,
    ]
}
