//! CREATE EXTENSION and DROP EXTENSION, and the one extension Partita has besides PL/pgSQL:
//! uuid-ossp, whose `uuid_generate_v4()` is the default of uuid keys in TypeORM's entities,
//! Rails' `enable_extension "uuid-ossp"` schemas and pg_dump's scripts.
//!
//! PL/pgSQL is there in every database, as in PostgreSQL. uuid-ossp is recorded in the
//! catalog by CREATE EXTENSION (`pg_extension`, psql's `\dx`) and removed by DROP EXTENSION;
//! its functions are Partita's own and can be called whether or not it is recorded.

use crate::dml::WriteResult;
use crate::error::{Error, Result};
use crate::functions::RowFunction;
use crate::provider::in_txn;
use crate::session::Session;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{Signature, Volatility};
use datafusion::sql::sqlparser::ast;
use std::sync::Arc;

/// PL/pgSQL, installed in every database.
pub(crate) const PLPGSQL: &str = "plpgsql";

/// The extensions CREATE EXTENSION installs: name, version, and the OID `pg_extension`
/// shows.
pub(crate) const AVAILABLE: &[(&str, &str, u32)] = &[("uuid-ossp", "1.1", 16_390)];

/// The functions of uuid-ossp, each planned as a call of `partita_<name>` cast to uuid
/// (see `functions::rewrite`), and how many arguments each takes.
pub(crate) const UUID_FUNCTIONS: &[(&str, usize)] = &[
    ("uuid_generate_v1", 0),
    ("uuid_generate_v1mc", 0),
    ("uuid_generate_v3", 2),
    ("uuid_generate_v4", 0),
    ("uuid_generate_v5", 2),
    ("uuid_nil", 0),
    ("uuid_ns_dns", 0),
    ("uuid_ns_url", 0),
    ("uuid_ns_oid", 0),
    ("uuid_ns_x500", 0),
];

/// The name of the function a uuid-ossp function is planned as.
pub(crate) fn planned_name(name: &str) -> String {
    format!("partita_{name}")
}

/// CREATE EXTENSION [IF NOT EXISTS] name [WITH SCHEMA s] [VERSION v] [CASCADE].
pub async fn create(session: &mut Session, create: &ast::CreateExtension) -> Result<WriteResult> {
    let name = sql::ddl::normalize_ident(&create.name);
    let exists = format!("extension \"{name}\" already exists");
    let Some(&(_, version, _)) = AVAILABLE.iter().find(|(n, ..)| *n == name) else {
        if name == PLPGSQL {
            return already_there(session, create.if_not_exists, exists);
        }
        return Err(Error::NotSupported {
            message: format!("extension \"{name}\" is not available"),
            detail: Some("Partita has the extensions plpgsql and uuid-ossp.".into()),
        });
    };
    if let Some(schema) = &create.schema {
        let schema = sql::ddl::normalize_ident(schema);
        if schema != "public" && schema != "pg_catalog" {
            return Err(Error::UnknownSchema(schema));
        }
    }
    let changes = crate::sequences::session_changes(session);
    if (session.db.catalog.extensions(&changes).iter()).any(|e| e.name == name) {
        return already_there(session, create.if_not_exists, exists);
    }
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    let extension = sql::catalog::Extension {
        name,
        version: version.to_string(),
    };
    in_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        Ok(catalog.write_extension(t, &mut scope.changes, extension)?)
    })?;
    Ok(WriteResult::command("CREATE EXTENSION"))
}

/// An extension that is there already: a notice with IF NOT EXISTS, else 42710.
fn already_there(
    session: &mut Session,
    if_not_exists: bool,
    exists: String,
) -> Result<WriteResult> {
    if !if_not_exists {
        return Err(Error::Sql(sql::Error::DuplicateObject(exists)));
    }
    session.notice_coded("42710", format!("{exists}, skipping"));
    Ok(WriteResult::command("CREATE EXTENSION"))
}

/// DROP EXTENSION [IF EXISTS] name, …: refused (2BP01) while a column's default calls
/// one of its functions, as PostgreSQL refuses it.
pub async fn drop(session: &mut Session, drop: &ast::DropExtension) -> Result<WriteResult> {
    let txn = session.open_txn()?;
    for name in &drop.names {
        let name = sql::ddl::normalize_ident(name);
        if name == PLPGSQL {
            return Err(Error::Unsupported("DROP EXTENSION plpgsql".into()));
        }
        let changes = crate::sequences::session_changes(session);
        if !(session.db.catalog.extensions(&changes).iter()).any(|e| e.name == name) {
            if drop.if_exists {
                session.notice(format!("extension \"{name}\" does not exist, skipping"));
                continue;
            }
            return Err(Error::UndefinedObject(format!(
                "extension \"{name}\" does not exist"
            )));
        }
        let users: Vec<String> = (session.db.catalog.every_table(&changes).iter())
            .flat_map(|t| {
                t.columns.iter().filter_map(|c| {
                    let default = c.default.as_deref()?;
                    let (function, _) = UUID_FUNCTIONS
                        .iter()
                        .find(|(f, _)| default.contains(&format!("{}(", planned_name(f))))?;
                    Some(format!(
                        "default value for column {} of table {} depends on function {function}()",
                        c.name, t.name
                    ))
                })
            })
            .collect();
        if !users.is_empty() {
            if matches!(
                drop.cascade_or_restrict,
                Some(ast::ReferentialAction::Cascade)
            ) {
                return Err(Error::Unsupported(
                    "DROP EXTENSION … CASCADE of an extension defaults use".into(),
                ));
            }
            return Err(Error::DependentObjects {
                message: format!("cannot drop extension {name} because other objects depend on it"),
                detail: users.join("\n"),
            });
        }
        let catalog = session.db.catalog.clone();
        let scope = Arc::clone(&session.scope);
        in_txn(&txn, |t| {
            let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            Ok(catalog.drop_extension(t, &mut scope.changes, &name)?)
        })?;
    }
    Ok(WriteResult::command("DROP EXTENSION"))
}

/// Registers uuid-ossp's functions under their planned names (text in, text out; the
/// rewrite casts the result to uuid).
pub(crate) fn register(ctx: &SessionContext) {
    let generator = |name: &'static str, make: fn() -> uuid::Uuid| {
        RowFunction::lenient(
            name,
            Signature::exact(vec![], Volatility::Volatile),
            DataType::Utf8,
            move |_| Ok(ScalarValue::Utf8(Some(make().to_string()))),
        )
    };
    ctx.register_udf(generator("partita_uuid_generate_v1", || {
        uuid::Uuid::now_v1(&node())
    }));
    // A random node with the multicast bit, new for each call, as uuid-ossp's v1mc.
    ctx.register_udf(generator("partita_uuid_generate_v1mc", || {
        let mut node = *uuid::Uuid::new_v4().as_bytes();
        node[0] |= 0x01;
        uuid::Uuid::now_v1(&[node[0], node[1], node[2], node[3], node[4], node[5]])
    }));
    ctx.register_udf(generator("partita_uuid_generate_v4", uuid::Uuid::new_v4));
    let constants: [(&'static str, uuid::Uuid); 5] = [
        ("partita_uuid_nil", uuid::Uuid::nil()),
        ("partita_uuid_ns_dns", uuid::Uuid::NAMESPACE_DNS),
        ("partita_uuid_ns_url", uuid::Uuid::NAMESPACE_URL),
        ("partita_uuid_ns_oid", uuid::Uuid::NAMESPACE_OID),
        ("partita_uuid_ns_x500", uuid::Uuid::NAMESPACE_X500),
    ];
    for (name, value) in constants {
        ctx.register_udf(RowFunction::lenient(
            name,
            Signature::exact(vec![], Volatility::Immutable),
            DataType::Utf8,
            move |_| Ok(ScalarValue::Utf8(Some(value.to_string()))),
        ));
    }
    let named = |name: &'static str, make: fn(&uuid::Uuid, &[u8]) -> uuid::Uuid| {
        RowFunction::strict(
            name,
            Signature::exact(vec![DataType::Utf8, DataType::Utf8], Volatility::Immutable),
            DataType::Utf8,
            move |args| {
                let (ScalarValue::Utf8(Some(namespace)), ScalarValue::Utf8(Some(name))) =
                    (&args[0], &args[1])
                else {
                    return Ok(ScalarValue::Utf8(None));
                };
                let namespace = uuid::Uuid::parse_str(namespace).map_err(|_| {
                    DataFusionError::External(Box::new(Error::InvalidText {
                        ty: "uuid".into(),
                        value: namespace.clone(),
                    }))
                })?;
                Ok(ScalarValue::Utf8(Some(
                    make(&namespace, name.as_bytes()).to_string(),
                )))
            },
        )
    };
    ctx.register_udf(named("partita_uuid_generate_v3", uuid::Uuid::new_v3));
    ctx.register_udf(named("partita_uuid_generate_v5", uuid::Uuid::new_v5));
}

/// The node of `uuid_generate_v1()`: one random node with the multicast bit for the
/// process (uuid-ossp takes the machine's MAC address, which Partita does not read).
fn node() -> [u8; 6] {
    static NODE: std::sync::OnceLock<[u8; 6]> = std::sync::OnceLock::new();
    *NODE.get_or_init(|| {
        let random = uuid::Uuid::new_v4();
        let b = random.as_bytes();
        [b[0] | 0x01, b[1], b[2], b[3], b[4], b[5]]
    })
}
