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

/// Plans the SQL types above as annotated text fields.
#[derive(Debug, Default)]
pub struct PostgresTypes;

impl TypePlanner for PostgresTypes {
    fn plan_type_field(&self, sql_type: &ast::DataType) -> Result<Option<FieldRef>> {
        use ast::DataType as D;
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

/// The declared type a cast's target field carries, when [`PostgresTypes`] planned it.
pub(crate) fn declared(field: &Field) -> Option<SqlType> {
    let name = sql::types::declared_type_name(field)?;
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
            if name.starts_with("character varying(") {
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
    if let DataType::List(element) = field.data_type()
        && matches!(
            inner.get_type(schema)?,
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
        )
    {
        let input =
            ScalarUDF::new_from_impl(crate::arrays::ArrayInput::new(element.data_type().clone()));
        return Ok(Transformed::yes(input.call(vec![inner.clone()])));
    }
    let Some(ty) = declared(field) else {
        return Ok(Transformed::no(expr));
    };
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
        other => datafusion::logical_expr::cast(call, other.clone()),
    }))
}

/// The input function of `uuid`, `varchar(n)` or `char(n)`, given text.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TextInput {
    ty: SqlType,
    name: String,
    signature: Signature,
}

impl TextInput {
    fn new(ty: SqlType) -> TextInput {
        TextInput {
            ty,
            name: format!(
                "partita_input_{}",
                ty.to_string().replace([' ', '(', ')'], "_")
            ),
            signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
        }
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
                let mut out: String = text
                    .trim_end_matches(' ')
                    .chars()
                    .take(length as usize)
                    .collect();
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
