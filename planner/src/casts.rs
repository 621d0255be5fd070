//! Casts to the types Partita keeps as text: `json`, `jsonb`, `uuid`, `varchar(n)`,
//! `char(n)` and `text` itself.
//!
//! DataFusion has no SQL type for json, jsonb or uuid. [`PostgresTypes`] plans each of these
//! types as a text field that carries the declared type in its metadata, as a column of that
//! type does, so the result is described with the right type and operators can tell `jsonb`
//! from `text`. A cast to `text` also carries its type, so that `doc::text` is text, not the
//! jsonb DataFusion would otherwise keep in the metadata.
//!
//! The analyzer then turns each such cast into the type's input function
//! ([`typed_input`]): json is checked, jsonb normalized, a uuid checked and written in its
//! canonical form, and text cut (`varchar(n)`) or padded (`char(n)`) to its length, as an
//! explicit cast does in PostgreSQL. A cast of text to an array type (`'{1,2}'::int[]`)
//! reads PostgreSQL's array text (`arrays::ArrayInput`).

use crate::Error;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::planner::TypePlanner;
use datafusion::logical_expr::{
    Cast, ColumnarValue, Expr, ExprSchemable, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, TryCast, Volatility,
};
use datafusion::sql::sqlparser::ast;
use sql::SqlType;
use std::sync::Arc;

/// Plans the SQL types above as annotated text fields, and timestamps in microseconds as
/// PostgreSQL keeps them (DataFusion's are nanoseconds, from 1677 to 2262 only).
#[derive(Debug, Clone, Default)]
pub struct PostgresTypes {
    /// The session's time zone in Arrow's spelling, which `timestamptz` is typed with.
    zone: Arc<std::sync::RwLock<Option<Arc<str>>>>,
    /// The types made by CREATE TYPE, as the statement being planned sees them.
    user: Arc<std::sync::RwLock<Vec<SqlType>>>,
}

impl PostgresTypes {
    pub fn set_zone(&self, zone: &str) {
        *self.zone.write().unwrap_or_else(|e| e.into_inner()) = Some(zone.into());
    }

    pub fn set_user_types(&self, types: Vec<SqlType>) {
        *self.user.write().unwrap_or_else(|e| e.into_inner()) = types;
    }
}

impl TypePlanner for PostgresTypes {
    fn plan_type_field(&self, sql_type: &ast::DataType) -> Result<Option<FieldRef>> {
        use ast::DataType as D;
        if let D::Timestamp(_, zone) = sql_type {
            let zone = match zone {
                ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz => {
                    self.zone.read().unwrap_or_else(|e| e.into_inner()).clone()
                }
                _ => None,
            };
            let ty = DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Microsecond, zone);
            let field = match SqlType::from_ast(sql_type) {
                // `timestamp(p)` names its precision, which `typed_input` rounds to.
                Ok(
                    declared @ (SqlType::Timestamp { precision: Some(_) }
                    | SqlType::TimestampTz { precision: Some(_) }),
                ) => declared.field("", true).with_data_type(ty),
                _ => Field::new("", ty, true),
            };
            return Ok(Some(Arc::new(field)));
        }
        // An enum's values are its labels' text (`'happy'::mood`).
        if let D::Custom(..) = sql_type
            && let Ok(ty @ SqlType::Enum { .. }) = SqlType::from_ast_with(
                sql_type,
                &self.user.read().unwrap_or_else(|e| e.into_inner()),
            )
        {
            return Ok(Some(Arc::new(ty.field("", true))));
        }
        if let D::Custom(name, modifiers) = sql_type
            && modifiers.is_empty()
            && name.to_string().eq_ignore_ascii_case("oid")
        {
            let field = Field::new("", DataType::Int32, true).with_metadata(
                [(sql::types::FIELD_TYPE_KEY.to_string(), "oid".to_string())].into(),
            );
            return Ok(Some(Arc::new(field)));
        }
        if let D::Array(_) = sql_type {
            // A list of the element's plain Arrow type, as array columns are typed, the
            // declared array type on the list (the element's field carries none, so that lists
            // of one element type are one Arrow type).
            let Ok(ty) = SqlType::from_ast(sql_type) else {
                return Ok(None);
            };
            let zone = self.zone.read().unwrap_or_else(|e| e.into_inner()).clone();
            let zone = zone.as_deref().unwrap_or(sql::types::UTC);
            return Ok(Some(Arc::new(ty.field_in("", true, zone))));
        }
        if !matches!(
            sql_type,
            D::JSON
                | D::JSONB
                | D::Uuid
                | D::Text
                | D::Varchar(_)
                | D::CharacterVarying(_)
                | D::CharVarying(_)
                | D::Char(_)
                | D::Character(_)
        ) {
            return Ok(None);
        }
        let Ok(ty) = SqlType::from_ast(sql_type) else {
            return Ok(None);
        };
        // Casts to text have always been Utf8View here; the others are stored as Utf8.
        let data_type = match ty {
            SqlType::Text | SqlType::Varchar { .. } | SqlType::Char { .. } => DataType::Utf8View,
            _ => DataType::Utf8,
        };
        Ok(Some(Arc::new(ty.field("", true).with_data_type(data_type))))
    }
}

/// PostgreSQL's name for the type of `field`.
fn type_name(field: &Field) -> String {
    let oid = crate::pg_catalog::field_type_oid(field);
    crate::pg_catalog::format_type(i64::from(oid), None)
}

/// The declared type a cast's target field carries, when [`PostgresTypes`] planned it.
pub(crate) fn declared(field: &Field) -> Option<SqlType> {
    let name = sql::types::declared_type_name(field)?;
    if name.ends_with("[]") {
        return None;
    }
    match name {
        "json" => Some(SqlType::Json),
        "jsonb" => Some(SqlType::Jsonb),
        "uuid" => Some(SqlType::Uuid),
        _ => {
            let length = || {
                name.split_once('(')?
                    .1
                    .strip_suffix(')')?
                    .parse::<u32>()
                    .ok()
            };
            let precision = || {
                name.strip_prefix("timestamp(")?
                    .split_once(')')?
                    .0
                    .parse::<u8>()
                    .ok()
            };
            if name.starts_with("timestamp(") {
                let precision = precision();
                Some(
                    match name.ends_with("with time zone") && !name.ends_with("without time zone") {
                        true => SqlType::TimestampTz { precision },
                        false => SqlType::Timestamp { precision },
                    },
                )
            } else if name.starts_with("character varying(") {
                Some(SqlType::Varchar { length: length() })
            } else if name.starts_with("character(") {
                Some(SqlType::Char { length: length()? })
            } else {
                None
            }
        }
    }
}

/// A cast to one of the types above becomes its input function applied to the operand's text.
pub fn typed_input(expr: Expr, schema: &datafusion::common::DFSchema) -> Result<Transformed<Expr>> {
    let (inner, field) = match &expr {
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
            (expr.as_ref(), field)
        }
        _ => return Ok(Transformed::no(expr)),
    };
    if let DataType::List(element) = field.data_type() {
        match inner.get_type(schema)? {
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => {
                let input = ScalarUDF::new_from_impl(crate::arrays::ArrayInput::new(
                    element.data_type().clone(),
                ));
                return Ok(Transformed::yes(input.call(vec![inner.clone()])));
            }
            // One dimension: a list of lists is not flattened into text.
            DataType::List(item) if matches!(item.data_type(), DataType::List(_)) => {
                return Err(DataFusionError::External(Box::new(Error::Unsupported(
                    "a multidimensional array value".into(),
                ))));
            }
            DataType::List(_) | DataType::LargeList(_) | DataType::Null => {}
            // Arrow would make the value a one-element list.
            other => {
                return Err(DataFusionError::External(Box::new(
                    Error::DatatypeMismatch(format!(
                        "cannot cast type {} to {}",
                        type_name(&Field::new("", other, true)),
                        type_name(field)
                    )),
                )));
            }
        }
    }
    if let Some(ty @ SqlType::Enum { .. }) = sql::types::enum_type(field) {
        return Ok(Transformed::yes(crate::enums::input(inner.clone(), ty)));
    }
    let Some(ty) = declared(field) else {
        return Ok(Transformed::no(expr));
    };
    if let SqlType::Timestamp { precision } | SqlType::TimestampTz { precision } = ty {
        let Some(precision) = precision else {
            return Ok(Transformed::no(expr));
        };
        let plain = Arc::new(Field::new("", field.data_type().clone(), true));
        let operand = match &expr {
            Expr::TryCast(_) => {
                Expr::TryCast(TryCast::new_from_field(Box::new(inner.clone()), plain))
            }
            _ => Expr::Cast(Cast::new_from_field(Box::new(inner.clone()), plain)),
        };
        let round = crate::functions::TimestampPrecision::new(precision);
        return Ok(Transformed::yes(
            ScalarUDF::new_from_impl(round).call(vec![operand]),
        ));
    }
    let function = match ty {
        SqlType::Json => crate::json::input_function(crate::json::Kind::Json),
        SqlType::Jsonb => crate::json::input_function(crate::json::Kind::Jsonb),
        _ => Arc::new(ScalarUDF::new_from_impl(TextInput::new(ty))),
    };
    // The operand's text as PostgreSQL writes it (`ts::varchar(10)` cuts `2024-01-01 …`).
    let text = crate::semantics::text_cast(
        datafusion::logical_expr::cast(inner.clone(), DataType::Utf8),
        schema,
    )?
    .data;
    let call = function.call(vec![text]);
    Ok(Transformed::yes(match field.data_type() {
        DataType::Utf8 => call,
        // The cast keeps the declared type (`char_semantics` must see `char(n)` here).
        _ => Expr::Cast(Cast {
            expr: Box::new(call),
            field: field.clone(),
        }),
    }))
}

/// Functions that take a `char(n)` with its padding.
const KEEP_PADDING: &[&str] = &[
    "octet_length",
    "concat",
    "concat_ws",
    "pg_typeof",
    "coalesce",
    "nullif",
    "greatest",
    "least",
];

/// `char(n)` compares and reads as PostgreSQL's `bpchar`: trailing blanks do not count.
/// Values are stored padded to `n`, so
/// - a constant or parameter compared with a `char(n)` is padded the same way (`k = 'ab'`
///   finds `'ab  '`, and can still be a key lookup); another text expression is compared
///   with the char's text;
/// - two `char` operands, and a `char` used as text (`||`, a function of text such as
///   `length` or `upper`, a cast to text or varchar), lose their trailing blanks; LIKE,
///   regular expressions and `concat` see them, as in PostgreSQL.
pub fn char_semantics(
    expr: Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<Transformed<Expr>> {
    use datafusion::logical_expr::{BinaryExpr, Operator, expr::InList};
    fn char_length(e: &Expr, schema: &datafusion::common::DFSchema) -> Option<u32> {
        if let Some(SqlType::Char { length }) =
            e.to_field(schema).ok().and_then(|(_, f)| declared(&f))
        {
            return Some(length);
        }
        // These return their char(n) argument (DataFusion's result field has no type).
        match e {
            Expr::ScalarFunction(f)
                if matches!(f.name(), "coalesce" | "nullif" | "greatest" | "least") =>
            {
                f.args.iter().find_map(|a| char_length(a, schema))
            }
            _ => None,
        }
    }
    let char_length = |e: &Expr| char_length(e, schema);
    let is_text = |e: &Expr| {
        matches!(
            e.get_type(schema),
            Ok(DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
        )
    };
    // rtrim(x, ' '): the blanks only (a user's own rtrim is a function of text, below).
    let trimmed = |e: Expr| {
        datafusion::functions::string::rtrim().call(vec![e, datafusion::logical_expr::lit(" ")])
    };
    let is_trimming = |f: &datafusion::logical_expr::expr::ScalarFunction| {
        f.name() == "rtrim"
            && matches!(
                f.args.get(1),
                Some(Expr::Literal(datafusion::common::ScalarValue::Utf8(Some(b)), _)) if b == " "
            )
    };
    // A constant or parameter compared with a char(n) is read as one (PostgreSQL's unknown
    // literal); another text expression compares with the char's text.
    let constant = |e: &Expr| match e {
        Expr::Literal(..) | Expr::Placeholder(_) => true,
        Expr::Cast(Cast { expr, .. }) => {
            matches!(expr.as_ref(), Expr::Literal(..) | Expr::Placeholder(_))
        }
        _ => false,
    };
    let padded = |e: Expr, length: u32| {
        ScalarUDF::new_from_impl(TextInput::new(SqlType::Char { length }).operand())
            .call(vec![datafusion::logical_expr::cast(e, DataType::Utf8)])
    };
    Ok(match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if crate::semantics::is_comparison(&op) =>
        {
            let (l, r) = (*left, *right);
            let (l, r) = match (char_length(&l), char_length(&r)) {
                (Some(_), Some(_)) => (trimmed(l), trimmed(r)),
                (Some(n), None) if is_text(&r) && constant(&r) => (l, padded(r, n)),
                (None, Some(n)) if is_text(&l) && constant(&l) => (padded(l, n), r),
                (Some(_), None) if is_text(&r) => (trimmed(l), r),
                (None, Some(_)) if is_text(&l) => (l, trimmed(r)),
                _ => {
                    return Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr::new(
                        Box::new(l),
                        op,
                        Box::new(r),
                    ))));
                }
            };
            // Type coercion has run: a char(n) cast (Utf8View) beside a stored column or
            // padded constant (Utf8) meets it as Utf8, leaving the column side as it is.
            let view = |e: Expr| match e.get_type(schema) {
                Ok(DataType::Utf8View) => datafusion::logical_expr::cast(e, DataType::Utf8),
                _ => e,
            };
            let (l, r) = match (l.get_type(schema), r.get_type(schema)) {
                (Ok(a), Ok(b)) if a != b => (view(l), view(r)),
                _ => (l, r),
            };
            Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(l),
                op,
                Box::new(r),
            )))
        }
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::StringConcat,
            right,
        }) if char_length(&left).is_some() || char_length(&right).is_some() => {
            let side = |e: Expr| match char_length(&e) {
                Some(_) => trimmed(e),
                None => e,
            };
            Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(side(*left)),
                Operator::StringConcat,
                Box::new(side(*right)),
            )))
        }
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) if char_length(&expr).is_some() && list.iter().all(is_text) => {
            let n = char_length(&expr).unwrap_or_default();
            let list = list.into_iter().map(|e| padded(e, n)).collect();
            Transformed::yes(Expr::InList(InList::new(expr, list, negated)))
        }
        // A function of text reads a char(n) as text; those of any type (concat) and
        // octet_length see the padding, as in PostgreSQL.
        Expr::ScalarFunction(mut f)
            if !KEEP_PADDING.contains(&f.name())
                && !f.name().starts_with("partita_")
                && !is_trimming(&f)
                && f.args.iter().any(|a| char_length(a).is_some()) =>
        {
            f.args = std::mem::take(&mut f.args)
                .into_iter()
                .map(|a| match char_length(&a) {
                    Some(_) => trimmed(a),
                    None => a,
                })
                .collect();
            Transformed::yes(Expr::ScalarFunction(f))
        }
        Expr::Cast(Cast { expr: inner, field })
            if char_length(&inner).is_some()
                && !matches!(declared(&field), Some(SqlType::Char { .. }))
                && matches!(
                    field.data_type(),
                    DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
                ) =>
        {
            Transformed::yes(Expr::Cast(Cast {
                expr: Box::new(trimmed(*inner)),
                field,
            }))
        }
        Expr::AggregateFunction(mut a)
            if a.func.name() == "string_agg"
                && a.params
                    .args
                    .first()
                    .is_some_and(|e| char_length(e).is_some()) =>
        {
            let text = a.params.args.remove(0);
            a.params.args.insert(0, trimmed(text));
            Transformed::yes(Expr::AggregateFunction(a))
        }
        other => Transformed::no(other),
    })
}

/// The input function of `uuid`, `varchar(n)` or `char(n)`, given text.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TextInput {
    ty: SqlType,
    /// A comparison operand rather than a cast (see `operand`).
    operand: bool,
    name: String,
    signature: Signature,
}

impl TextInput {
    fn new(ty: SqlType) -> TextInput {
        TextInput {
            ty,
            operand: false,
            name: format!(
                "partita_input_{}",
                ty.to_string().replace([' ', '(', ')'], "_")
            ),
            signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
        }
    }

    /// For `char(n)`: what a text compared with a `char(n)` becomes, padded to `n` but,
    /// unlike a cast, never cut.
    fn operand(mut self) -> TextInput {
        self.name = format!("{}_operand", self.name);
        self.operand = true;
        self
    }

    fn convert(&self, text: &str) -> Result<String> {
        Ok(match self.ty {
            SqlType::Uuid => {
                let uuid = crate::convert::parse_uuid(text).ok_or_else(|| {
                    DataFusionError::External(Box::new(Error::InvalidText {
                        ty: "uuid".into(),
                        value: text.into(),
                    }))
                })?;
                crate::convert::format_uuid(&uuid)
            }
            SqlType::Varchar { length: Some(n) } => text.chars().take(n as usize).collect(),
            SqlType::Char { length } => {
                // char(n) ignores trailing blanks; it is padded to its length.
                let kept = if self.operand {
                    usize::MAX
                } else {
                    length as usize
                };
                let mut out: String = text.trim_end_matches(' ').chars().take(kept).collect();
                let pad = (length as usize).saturating_sub(out.chars().count());
                out.extend(std::iter::repeat_n(' ', pad));
                out
            }
            _ => text.to_string(),
        })
    }
}

impl ScalarUDFImpl for TextInput {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        if self.operand {
            return Ok(Arc::new(Field::new(&self.name, DataType::Utf8, true)));
        }
        Ok(Arc::new(self.ty.field(&self.name, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let text = args.args[0].to_array(n)?;
        let text = text.as_string::<i32>();
        let mut out = StringBuilder::with_capacity(n, n * 16);
        for r in 0..n {
            match text.is_null(r) {
                true => out.append_null(),
                false => out.append_value(self.convert(text.value(r))?),
            }
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish()) as ArrayRef))
    }
}

/// A quoted literal is not text yet in PostgreSQL: compared with a `boolean`, a `bytea` or
/// an array (`done = 'yes'`, `b IN ('t', 'f')`, `coalesce(done, 'f')`, `data = '\x01'`,
/// `tags = '{a}'`) it is read as one. DataFusion has no common type for Boolean and Utf8, and would compare a bytea with
/// the literal's own bytes. Runs before type coercion.
pub fn literal_operands(
    expr: Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<Transformed<Expr>> {
    use datafusion::logical_expr::expr::InList;
    use datafusion::logical_expr::{Between, BinaryExpr};
    let typed = |e: &Expr| e.get_type(schema).ok().filter(reads_literals);
    match &expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) if crate::semantics::is_comparison(op) => {
            let Some((l, r)) = literal_pair(left, right, schema)? else {
                return Ok(Transformed::no(expr));
            };
            Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(l),
                *op,
                Box::new(r),
            ))))
        }
        Expr::InList(InList {
            expr: item,
            list,
            negated,
        }) => {
            let Some(t) = typed(item) else {
                return Ok(Transformed::no(expr));
            };
            let list = list
                .iter()
                .map(|e| literal_as(e, &t))
                .collect::<Result<_>>()?;
            Ok(Transformed::yes(Expr::InList(InList::new(
                item.clone(),
                list,
                *negated,
            ))))
        }
        Expr::Between(Between {
            expr: item,
            negated,
            low,
            high,
        }) => {
            let Some(t) = typed(item) else {
                return Ok(Transformed::no(expr));
            };
            Ok(Transformed::yes(Expr::Between(Between::new(
                item.clone(),
                *negated,
                Box::new(literal_as(low, &t)?),
                Box::new(literal_as(high, &t)?),
            ))))
        }
        Expr::ScalarFunction(f)
            if matches!(f.name(), "coalesce" | "nullif" | "greatest" | "least") =>
        {
            let Some(t) = f.args.iter().find_map(typed) else {
                return Ok(Transformed::no(expr));
            };
            let args = f
                .args
                .iter()
                .map(|e| literal_as(e, &t))
                .collect::<Result<_>>()?;
            Ok(Transformed::yes(f.func.call(args)))
        }
        _ => Ok(Transformed::no(expr)),
    }
}

/// `left` and `right`, a string literal on one side read as the boolean or bytea the other
/// side is; `None` when neither side is one.
fn literal_pair(
    left: &Expr,
    right: &Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<Option<(Expr, Expr)>> {
    let typed = |e: &Expr| e.get_type(schema).ok().filter(reads_literals);
    Ok(match (typed(left), typed(right)) {
        (Some(t), _) => Some((left.clone(), literal_as(right, &t)?)),
        (_, Some(t)) => Some((literal_as(left, &t)?, right.clone())),
        _ => None,
    })
}

/// The types whose values a quoted literal is read as by `literal_operands`: timestamps too,
/// whose comparison with text DataFusion would make in nanoseconds (years 1677 to 2262), and
/// arrays, whose text (`'{a,b}'`) DataFusion would take for a one-element list.
fn reads_literals(ty: &DataType) -> bool {
    matches!(
        ty,
        DataType::Boolean | DataType::Binary | DataType::Timestamp(..) | DataType::List(_)
    )
}

/// `e` read as a value of `ty` when it is a string literal; `e` itself otherwise.
fn literal_as(e: &Expr, ty: &DataType) -> Result<Expr> {
    use datafusion::common::ScalarValue;
    let Expr::Literal(
        ScalarValue::Utf8(Some(text))
        | ScalarValue::Utf8View(Some(text))
        | ScalarValue::LargeUtf8(Some(text)),
        _,
    ) = e
    else {
        return Ok(e.clone());
    };
    match ty {
        DataType::Binary => match crate::convert::parse_bytea(text) {
            Some(bytes) => Ok(datafusion::logical_expr::lit(ScalarValue::Binary(Some(
                bytes,
            )))),
            None => Err(DataFusionError::External(Box::new(
                crate::literals::bad_bytea(text),
            ))),
        },
        DataType::List(item) => Ok(ScalarUDF::new_from_impl(crate::arrays::ArrayInput::new(
            item.data_type().clone(),
        ))
        .call(vec![e.clone()])),
        _ => Ok(datafusion::logical_expr::cast(e.clone(), ty.clone())),
    }
}

/// The text of a quoted literal (PostgreSQL's unknown type).
fn quoted(e: &Expr) -> Option<&str> {
    use datafusion::common::ScalarValue;
    match e {
        Expr::Literal(
            ScalarValue::Utf8(Some(text))
            | ScalarValue::Utf8View(Some(text))
            | ScalarValue::LargeUtf8(Some(text)),
            _,
        ) => Some(text),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arithmetic {
    Add,
    Subtract,
    Other,
}

/// A quoted literal `e` in arithmetic beside an operand of type `other`, read as PostgreSQL
/// resolves an unknown-type literal there:
/// - beside a number, as that type (`1 + '2'`), a numeric with the literal's own scale;
/// - added to a timestamp, as an interval (`ts + '1 hour'`); subtracted from or subtracting
///   one, as a timestamp (whose difference is an interval);
/// - in a subtraction with a date, as a date (whose difference is a number of days);
/// - beside an interval, as an interval.
fn unknown_operand(e: Expr, other: &DataType, op: Arithmetic) -> Expr {
    let Some(text) = quoted(&e) else {
        return e;
    };
    let ty = match (other, op) {
        (DataType::Decimal128(..) | DataType::Decimal256(..), _) => {
            let (whole, fraction) = text.trim().split_once('.').unwrap_or((text, ""));
            let scale = fraction.len().min(38usize.saturating_sub(whole.len()));
            DataType::Decimal128(38, scale as i8)
        }
        (t, _) if t.is_numeric() => t.clone(),
        (DataType::Timestamp(..), Arithmetic::Add)
        | (DataType::Interval(_), Arithmetic::Add | Arithmetic::Subtract) => {
            DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano)
        }
        (DataType::Timestamp(..), Arithmetic::Subtract) => other.clone(),
        (DataType::Date32, Arithmetic::Subtract) => DataType::Date32,
        _ => return e,
    };
    datafusion::logical_expr::cast(e, ty)
}

/// `literal_operands` for comparisons as they are planned: a select-list `done = 'yes'`
/// gets its type before any analyzer rule runs.
#[derive(Debug, Default)]
pub struct LiteralComparisons;

impl datafusion::logical_expr::planner::ExprPlanner for LiteralComparisons {
    fn plan_binary_op(
        &self,
        mut expr: datafusion::logical_expr::planner::RawBinaryExpr,
        schema: &datafusion::common::DFSchema,
    ) -> Result<
        datafusion::logical_expr::planner::PlannerResult<
            datafusion::logical_expr::planner::RawBinaryExpr,
        >,
    > {
        use ast::BinaryOperator as Op;
        use datafusion::logical_expr::planner::PlannerResult;
        if matches!(
            expr.op,
            Op::Eq | Op::NotEq | Op::Lt | Op::LtEq | Op::Gt | Op::GtEq
        ) && let Some((l, r)) = literal_pair(&expr.left, &expr.right, schema)?
        {
            (expr.left, expr.right) = (l, r);
        }
        let arithmetic = match expr.op {
            Op::Plus => Some(Arithmetic::Add),
            Op::Minus => Some(Arithmetic::Subtract),
            Op::Multiply | Op::Divide | Op::Modulo => Some(Arithmetic::Other),
            _ => None,
        };
        if let Some(op) = arithmetic {
            let typed = |e: &Expr| e.get_type(schema).ok();
            if let Some(t) = typed(&expr.left).filter(|_| quoted(&expr.right).is_some()) {
                expr.right = unknown_operand(expr.right, &t, op);
            } else if let Some(t) = typed(&expr.right).filter(|_| quoted(&expr.left).is_some()) {
                expr.left = unknown_operand(expr.left, &t, op);
            }
        }
        Ok(PlannerResult::Original(expr))
    }
}

/// `coalesce`, `greatest`, `least` and `nullif` with a quoted literal beside a boolean, a
/// bytea or a timestamp (`coalesce(done, 'f')`, `coalesce(ts, '1970-01-01')`): the literal
/// is of the other arguments' type, as PostgreSQL resolves an unknown-type argument.
/// DataFusion's functions find no common type for those and text, and refused the call
/// while it was planned, before `literal_operands` could read the literal; so their type
/// check takes text for that type, and the rest is theirs.
/// (`nullif`'s own check is that of a comparison, which is redone here after the literal.)
#[derive(Debug)]
pub(crate) struct UnknownLiteralArguments {
    inner: Arc<dyn ScalarUDFImpl>,
    /// The inner signature, or a user-defined one when it is `comparable`.
    signature: Signature,
}

impl UnknownLiteralArguments {
    pub(crate) fn wrap(function: &ScalarUDF) -> ScalarUDF {
        let inner = Arc::clone(function.inner());
        let signature = match &inner.signature().type_signature {
            datafusion::logical_expr::TypeSignature::Comparable(_) => {
                Signature::user_defined(inner.signature().volatility)
            }
            _ => inner.signature().clone(),
        };
        ScalarUDF::new_from_impl(UnknownLiteralArguments { inner, signature })
    }
}

impl PartialEq for UnknownLiteralArguments {
    fn eq(&self, other: &Self) -> bool {
        self.inner.name() == other.inner.name()
    }
}

impl Eq for UnknownLiteralArguments {}

impl std::hash::Hash for UnknownLiteralArguments {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.name().hash(state);
    }
}

#[warn(clippy::missing_trait_methods)]
impl ScalarUDFImpl for UnknownLiteralArguments {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn display_name(&self, args: &[Expr]) -> Result<String> {
        #[expect(deprecated)]
        self.inner.display_name(args)
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        self.inner.schema_name(args)
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn is_nullable(&self, args: &[Expr], schema: &dyn datafusion::common::ExprSchema) -> bool {
        #[expect(deprecated)]
        self.inner.is_nullable(args, schema)
    }

    fn is_strict(&self) -> bool {
        self.inner.is_strict()
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }

    fn with_updated_config(&self, config: &datafusion::config::ConfigOptions) -> Option<ScalarUDF> {
        self.inner
            .with_updated_config(config)
            .map(|updated| UnknownLiteralArguments::wrap(&updated))
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn simplify(
        &self,
        args: Vec<Expr>,
        info: &datafusion::logical_expr::simplify::SimplifyContext,
    ) -> Result<datafusion::logical_expr::simplify::ExprSimplifyResult> {
        self.inner.simplify(args, info)
    }

    fn preimage(
        &self,
        args: &[Expr],
        lit_expr: &Expr,
        info: &datafusion::logical_expr::simplify::SimplifyContext,
    ) -> Result<datafusion::logical_expr::preimage::PreimageResult> {
        self.inner.preimage(args, lit_expr, info)
    }

    fn conditional_arguments<'a>(
        &self,
        args: &'a [Expr],
    ) -> Option<(Vec<&'a Expr>, Vec<&'a Expr>)> {
        self.inner.conditional_arguments(args)
    }

    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }

    fn evaluate_bounds(
        &self,
        input: &[&datafusion::logical_expr::interval_arithmetic::Interval],
    ) -> Result<datafusion::logical_expr::interval_arithmetic::Interval> {
        self.inner.evaluate_bounds(input)
    }

    fn propagate_constraints(
        &self,
        interval: &datafusion::logical_expr::interval_arithmetic::Interval,
        inputs: &[&datafusion::logical_expr::interval_arithmetic::Interval],
    ) -> Result<Option<Vec<datafusion::logical_expr::interval_arithmetic::Interval>>> {
        self.inner.propagate_constraints(interval, inputs)
    }

    fn struct_field_mapping(
        &self,
        literal_args: &[Option<datafusion::common::ScalarValue>],
    ) -> Option<datafusion::logical_expr::StructFieldMapping> {
        self.inner.struct_field_mapping(literal_args)
    }

    fn output_ordering(
        &self,
        inputs: &[datafusion::logical_expr::sort_properties::ExprProperties],
    ) -> Result<datafusion::logical_expr::sort_properties::SortProperties> {
        self.inner.output_ordering(inputs)
    }

    fn preserves_lex_ordering(
        &self,
        inputs: &[datafusion::logical_expr::sort_properties::ExprProperties],
    ) -> Result<bool> {
        self.inner.preserves_lex_ordering(inputs)
    }

    fn strictly_order_preserving(
        &self,
        inputs: &[datafusion::logical_expr::sort_properties::ExprProperties],
    ) -> Result<bool> {
        self.inner.strictly_order_preserving(inputs)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let is_text =
            |t: &DataType| matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8);
        let typed = arg_types
            .iter()
            .find(|t| reads_literals(t) || matches!(t, DataType::Date32));
        let args: Vec<DataType> = match typed {
            Some(typed) => arg_types
                .iter()
                .map(|t| if is_text(t) { typed.clone() } else { t.clone() })
                .collect(),
            None => arg_types.to_vec(),
        };
        if self.signature == *self.inner.signature() {
            return self.inner.coerce_types(&args);
        }
        // Comparable: both sides of the comparison's common type.
        use datafusion::logical_expr::type_coercion::binary::comparison_coercion;
        match &args[..] {
            [a, b] => match comparison_coercion(a, b) {
                Some(common) => Ok(vec![common.clone(), common]),
                None => datafusion::common::plan_err!(
                    "{} cannot compare {a} and {b}",
                    self.inner.name()
                ),
            },
            _ => datafusion::common::plan_err!("{} takes two arguments", self.inner.name()),
        }
    }

    fn documentation(&self) -> Option<&datafusion::logical_expr::Documentation> {
        self.inner.documentation()
    }

    fn placement(
        &self,
        args: &[datafusion::logical_expr::ExpressionPlacement],
    ) -> datafusion::logical_expr::ExpressionPlacement {
        self.inner.placement(args)
    }
}
