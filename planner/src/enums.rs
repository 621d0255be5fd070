//! Enum types: CREATE TYPE … AS ENUM, ALTER TYPE … ADD VALUE and DROP TYPE.
//!
//! An enum is a catalog record (`sql::types::EnumType`: its name, OID and labels) and a
//! column type (`SqlType::Enum`) whose values are stored as their labels' text, checked
//! against the labels when written (22P02). The column definitions carry the type itself,
//! so ALTER TYPE … ADD VALUE writes the definitions of the tables that use it again.
//! A column's Arrow field carries the type (`ENUM_KEY`), from whose labels ORDER BY and
//! `<`/`>` order values by the labels' order (`sort_by_label_order`,
//! `compare_by_label_order`).

use crate::dml::WriteResult;
use crate::error::{Error, Result};
use crate::provider::in_txn;
use crate::session::Session;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int32Builder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::sql::sqlparser::ast;
use sql::SqlType;
use sql::types::EnumType;
use std::sync::Arc;

/// CREATE TYPE name AS ENUM ('a', 'b', …). The other kinds of CREATE TYPE are 0A000.
pub async fn create(
    session: &mut Session,
    name: &ast::ObjectName,
    representation: Option<&ast::UserDefinedTypeRepresentation>,
) -> Result<WriteResult> {
    let Some(ast::UserDefinedTypeRepresentation::Enum { labels }) = representation else {
        return Err(Error::Unsupported("CREATE TYPE other than AS ENUM".into()));
    };
    let name = sql::ddl::table_name(name)?;
    let changes = crate::sequences::session_changes(session);
    // A table's, view's or sequence's name is its row type's in PostgreSQL.
    if session.db.catalog.user_type(&name, &changes).is_some()
        || session.db.catalog.relation_exists(&name, &changes)
        || builtin(&name)
    {
        return Err(sql::Error::DuplicateObject(format!("type \"{name}\" already exists")).into());
    }
    let labels: Vec<String> = labels.iter().map(|l| l.value.clone()).collect();
    for (i, label) in labels.iter().enumerate() {
        check_label(label)?;
        if labels[..i].contains(label) {
            // PostgreSQL's unique index on pg_enum refuses it.
            return Err(Error::UniqueViolation {
                table: "pg_enum".into(),
                constraint: "pg_enum_typid_label_index".into(),
                detail: format!("Key (enumlabel)=({label}) already exists."),
            });
        }
    }
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    in_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        let oid = catalog.next_type_oid(t)?;
        let ty = EnumType { name, oid, labels };
        Ok(catalog.write_type(t, &mut scope.changes, ty)?)
    })?;
    Ok(WriteResult::command("CREATE TYPE"))
}

/// Whether `name` is a type PostgreSQL has built in. PostgreSQL would make `public.text`,
/// which Partita refuses (42710): `text` in a column definition would mean either.
fn builtin(name: &str) -> bool {
    name == name.to_lowercase() && crate::pg_catalog::builtin_type_oid(name).is_some()
}

/// A label PostgreSQL takes: at most 63 bytes.
fn check_label(label: &str) -> Result<()> {
    if label.len() > 63 {
        return Err(Error::InvalidName(format!(
            "invalid enum label \"{label}\""
        )));
    }
    Ok(())
}

/// The enum `name`, or 42704.
fn find(session: &Session, name: &str) -> Result<Arc<EnumType>> {
    let changes = crate::sequences::session_changes(session);
    session
        .db
        .catalog
        .user_type(name, &changes)
        .ok_or_else(|| sql::Error::UnknownType(name.to_string()).into())
}

/// The columns (`table`, `column`) whose type is enum `name`, materialized views' too.
fn columns_of(session: &Session, name: &str) -> Vec<(String, String)> {
    let changes = crate::sequences::session_changes(session);
    let mut found = Vec::new();
    // Other sessions' temporary tables too: the type must not go from under them.
    for table in session.db.catalog.every_table(&changes) {
        for column in &table.columns {
            if column.ty.enum_type().is_some_and(|ty| ty.name == name) {
                found.push((table.name.clone(), column.name.clone()));
            }
        }
    }
    found
}

/// DROP TYPE [IF EXISTS] name, …: 2BP01 while a column is of the type (CASCADE, which
/// would drop those columns, is 0A000 then).
pub async fn drop(
    session: &mut Session,
    names: &[ast::ObjectName],
    if_exists: bool,
    cascade: bool,
) -> Result<WriteResult> {
    let txn = session.open_txn()?;
    for name in names {
        let name = sql::ddl::table_name(name)?;
        let changes = crate::sequences::session_changes(session);
        if session.db.catalog.user_type(&name, &changes).is_none() {
            if if_exists {
                session.notice(format!("type \"{name}\" does not exist, skipping"));
                continue;
            }
            return Err(sql::Error::UnknownType(name).into());
        }
        let users = columns_of(session, &name);
        if !users.is_empty() {
            if cascade {
                return Err(Error::Unsupported(
                    "DROP TYPE … CASCADE of a type columns use".into(),
                ));
            }
            return Err(Error::DependentObjects {
                message: format!("cannot drop type {name} because other objects depend on it"),
                detail: users
                    .iter()
                    .map(|(t, c)| format!("column {c} of table {t} depends on type {name}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            });
        }
        let catalog = session.db.catalog.clone();
        let scope = Arc::clone(&session.scope);
        in_txn(&txn, |t| {
            let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            Ok(catalog.drop_type(t, &mut scope.changes, &name)?)
        })?;
    }
    Ok(WriteResult::command("DROP TYPE"))
}

/// ALTER TYPE name ADD VALUE [IF NOT EXISTS] 'v' [BEFORE | AFTER 'w']. Renaming the type or
/// a value is 0A000: stored values are labels' text, which a rename would have to rewrite.
pub async fn alter(session: &mut Session, alter: &ast::AlterType) -> Result<WriteResult> {
    let name = sql::ddl::table_name(&alter.name)?;
    let ast::AlterTypeOperation::AddValue(add) = &alter.operation else {
        return Err(Error::Unsupported(format!(
            "ALTER TYPE … {}",
            match &alter.operation {
                ast::AlterTypeOperation::Rename(_) => "RENAME TO",
                _ => "RENAME VALUE",
            }
        )));
    };
    let old = find(session, &name)?;
    let label = add.value.value.clone();
    check_label(&label)?;
    if old.labels.contains(&label) {
        let message = format!("enum label \"{label}\" already exists");
        if add.if_not_exists {
            session.notice_coded("42710", format!("{message}, skipping"));
            return Ok(WriteResult::command("ALTER TYPE"));
        }
        return Err(sql::Error::DuplicateObject(message).into());
    }
    let mut labels = old.labels.clone();
    let at = match &add.position {
        None => labels.len(),
        Some(
            ast::AlterTypeAddValuePosition::Before(other)
            | ast::AlterTypeAddValuePosition::After(other),
        ) => {
            let i = labels
                .iter()
                .position(|l| *l == other.value)
                .ok_or_else(|| {
                    Error::InvalidParameterValue(format!(
                        "\"{}\" is not an existing enum label",
                        other.value
                    ))
                })?;
            match add.position {
                Some(ast::AlterTypeAddValuePosition::After(_)) => i + 1,
                _ => i,
            }
        }
    };
    labels.insert(at, label);
    let new = EnumType {
        labels,
        ..EnumType::clone(&old)
    };
    let ty = SqlType::enum_of(new.clone());
    let txn = session.open_txn()?;
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    in_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        Ok(catalog.write_type(t, &mut scope.changes, new)?)
    })?;
    // The tables whose columns are of the type, and the base tables' copies of their
    // materialized views, take the new labels.
    let changes = crate::sequences::session_changes(session);
    for table in session.db.catalog.every_table(&changes) {
        let mut def = sql::TableDef::clone(&table);
        let mut changed = retype(&mut def.columns, &name, ty);
        for view in &mut def.views {
            changed |= retype(&mut view.columns, &name, ty);
        }
        if changed {
            crate::ddl::store_def(session, &txn, def)?;
        }
    }
    Ok(WriteResult::command("ALTER TYPE"))
}

/// Gives the columns of enum `name` (or arrays of it) type `ty` (or arrays of it); whether
/// there was one.
fn retype(columns: &mut [sql::ColumnDef], name: &str, ty: SqlType) -> bool {
    let mut changed = false;
    for column in columns {
        if column.ty.enum_type().is_some_and(|old| old.name == name) {
            column.ty = match column.ty {
                SqlType::Array { .. } => SqlType::array_of(ty),
                _ => ty,
            };
            changed = true;
        }
    }
    changed
}

/// The enum type a value of `field` is of, from the metadata its column gives it: the type's
/// name and its labels in order.
fn labels_of(field: &datafusion::arrow::datatypes::Field) -> Option<(String, Vec<String>)> {
    match sql::types::enum_type(field)? {
        SqlType::Enum { ty } => Some((ty.name.clone(), ty.labels.clone())),
        _ => None,
    }
}

/// A cast of text to an enum type (`'ok'::mood`): the text, refused (22P02) when it is not
/// one of the type's labels, typed as the enum.
pub(crate) fn input(e: Expr, ty: SqlType) -> Expr {
    let SqlType::Enum { ty: enum_type } = ty else {
        return e;
    };
    let function = EnumInput {
        ty,
        labels: EnumPosition {
            name: enum_type.name.clone(),
            labels: enum_type.labels.clone(),
            signature: Signature::any(1, Volatility::Immutable),
        },
    };
    ScalarUDF::new_from_impl(function).call(vec![e])
}

/// `partita_enum_in(text)`: see [`input`].
#[derive(Debug, PartialEq, Eq, Hash)]
struct EnumInput {
    ty: SqlType,
    labels: EnumPosition,
}

impl ScalarUDFImpl for EnumInput {
    fn name(&self) -> &str {
        "partita_enum_in"
    }

    fn signature(&self) -> &Signature {
        &self.labels.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(
        &self,
        _args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> DfResult<datafusion::arrow::datatypes::FieldRef> {
        Ok(Arc::new(self.ty.field(self.name(), true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let value = args.args[0].clone();
        // The positions are worked out for their errors alone.
        self.labels.invoke_with_args(args)?;
        Ok(match value {
            ColumnarValue::Scalar(s) => ColumnarValue::Scalar(s.cast_to(&DataType::Utf8)?),
            ColumnarValue::Array(a) => {
                ColumnarValue::Array(datafusion::arrow::compute::cast(&a, &DataType::Utf8)?)
            }
        })
    }
}

/// `e`'s position among `labels`, which orders enum values as PostgreSQL does.
fn position(e: Expr, name: &str, labels: &[String]) -> Expr {
    let function = EnumPosition {
        name: name.to_string(),
        labels: labels.to_vec(),
        signature: Signature::any(1, Volatility::Immutable),
    };
    ScalarUDF::new_from_impl(function).call(vec![e])
}

/// ORDER BY an enum column sorts by the labels' order, not their text.
pub(crate) fn sort_by_label_order(plan: LogicalPlan) -> DfResult<Transformed<LogicalPlan>> {
    let LogicalPlan::Sort(mut sort) = plan else {
        return Ok(Transformed::no(plan));
    };
    let schema = Arc::clone(sort.input.schema());
    let mut changed = false;
    for key in &mut sort.expr {
        if let Ok((_, field)) = key.expr.to_field(&schema)
            && let Some((name, labels)) = labels_of(&field)
        {
            key.expr = position(key.expr.clone(), &name, &labels);
            changed = true;
        }
    }
    Ok(Transformed::new_transformed(
        LogicalPlan::Sort(sort),
        changed,
    ))
}

/// `<`, `<=`, `>` and `>=` with an enum operand compare positions among its labels, and a
/// quoted literal compared with one is read as one of them (22P02 when it is none).
pub(crate) fn compare_by_label_order(
    e: Expr,
    schema: &datafusion::common::DFSchema,
) -> DfResult<Transformed<Expr>> {
    let labels = |side: &Expr| side.to_field(schema).ok().and_then(|(_, f)| labels_of(&f));
    // BETWEEN compares as `>=` and `<=` do.
    if let Expr::Between(between) = &e
        && let Some((name, labels)) = labels(&between.expr)
    {
        let mut between = between.clone();
        for side in [&mut between.expr, &mut between.low, &mut between.high] {
            **side = position(side.as_ref().clone(), &name, &labels);
        }
        return Ok(Transformed::yes(Expr::Between(between)));
    }
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &e else {
        return Ok(Transformed::no(e));
    };
    // `status = 'bogus'`: the literal is read as the enum, 22P02 when it is no label.
    if matches!(op, Operator::Eq | Operator::NotEq) {
        let typed = |side: &Expr| {
            side.to_field(schema)
                .ok()
                .and_then(|(_, f)| sql::types::enum_type(&f))
        };
        let literal =
            |side: &Expr| matches!(side, Expr::Literal(v, _) if v.data_type().is_string());
        let (l, r) = (left.as_ref().clone(), right.as_ref().clone());
        return Ok(match (typed(left), typed(right)) {
            (Some(ty), None) if literal(right) => Transformed::yes(Expr::BinaryExpr(
                BinaryExpr::new(Box::new(l), *op, Box::new(input(r, ty))),
            )),
            (None, Some(ty)) if literal(left) => Transformed::yes(Expr::BinaryExpr(
                BinaryExpr::new(Box::new(input(l, ty)), *op, Box::new(r)),
            )),
            _ => Transformed::no(e),
        });
    }
    if !matches!(
        op,
        Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
    ) {
        return Ok(Transformed::no(e));
    }
    let Some((name, labels)) = labels(left).or_else(|| labels(right)) else {
        return Ok(Transformed::no(e));
    };
    Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
        Box::new(position(left.as_ref().clone(), &name, &labels)),
        *op,
        Box::new(position(right.as_ref().clone(), &name, &labels)),
    ))))
}

/// `partita_enum_position(value)`: the 1-based position of an enum value among its type's
/// labels (NULL for NULL); text that is no label is 22P02.
#[derive(Debug, PartialEq, Eq, Hash)]
struct EnumPosition {
    name: String,
    labels: Vec<String>,
    signature: Signature,
}

impl ScalarUDFImpl for EnumPosition {
    fn name(&self) -> &str {
        "partita_enum_position"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let text = datafusion::arrow::compute::cast(&values, &DataType::Utf8)?;
        let text = text.as_string::<i32>();
        let mut positions = Int32Builder::with_capacity(text.len());
        for value in text.iter() {
            let Some(value) = value else {
                positions.append_null();
                continue;
            };
            let at = self.labels.iter().position(|l| l == value).ok_or_else(|| {
                DataFusionError::External(Box::new(Error::InvalidEnumValue {
                    ty: sql::catalog::regclass_text(&self.name),
                    value: value.to_string(),
                }))
            })?;
            positions.append_value(at as i32 + 1);
        }
        let positions: ArrayRef = Arc::new(positions.finish());
        Ok(match scalar {
            true => ColumnarValue::Scalar(ScalarValue::try_from_array(&positions, 0)?),
            false => ColumnarValue::Array(positions),
        })
    }
}

/// `max` and `min` of an enum column take the last and first value in the labels' order:
/// `first_value(x ORDER BY position DESC|ASC NULLS LAST)`, under the aggregate's own name.
pub(crate) fn aggregate_by_label_order(plan: LogicalPlan) -> DfResult<Transformed<LogicalPlan>> {
    use datafusion::logical_expr::expr::{AggregateFunction, Sort};
    let LogicalPlan::Aggregate(aggregate) = &plan else {
        return Ok(Transformed::no(plan));
    };
    let schema = aggregate.input.schema();
    let mut changed = false;
    let mut exprs = Vec::with_capacity(aggregate.aggr_expr.len());
    for e in &aggregate.aggr_expr {
        let (inner, name) = match e {
            Expr::Alias(alias) => (alias.expr.as_ref(), alias.name.clone()),
            other => (other, other.schema_name().to_string()),
        };
        let Expr::AggregateFunction(f) = inner else {
            exprs.push(e.clone());
            continue;
        };
        let labels = match f.params.args.as_slice() {
            [arg] if matches!(f.func.name(), "max" | "min") && !f.params.distinct => arg
                .to_field(schema)
                .ok()
                .and_then(|(_, field)| labels_of(&field)),
            _ => None,
        };
        let Some((type_name, labels)) = labels else {
            exprs.push(e.clone());
            continue;
        };
        let arg = f.params.args[0].clone();
        let order = Sort::new(
            position(arg.clone(), &type_name, &labels),
            f.func.name() == "min",
            false,
        );
        let first = AggregateFunction::new_udf(
            datafusion::functions_aggregate::first_last::first_value_udaf(),
            vec![arg],
            false,
            f.params.filter.clone(),
            vec![order],
            None,
        );
        exprs.push(Expr::AggregateFunction(first).alias(name));
        changed = true;
    }
    if !changed {
        return Ok(Transformed::no(plan));
    }
    let LogicalPlan::Aggregate(aggregate) = plan else {
        unreachable!("matched above")
    };
    let rebuilt =
        datafusion::logical_expr::Aggregate::try_new(aggregate.input, aggregate.group_expr, exprs)?;
    Ok(Transformed::yes(LogicalPlan::Aggregate(rebuilt)))
}
