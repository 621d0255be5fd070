//! The scalar functions behind `json`/`jsonb` operators and functions. Each is one
//! [`JsonFunction`] with an [`Op`]; values travel as text (Utf8), and a result's type
//! (`json`, `jsonb`) is in its field's metadata, as a column's declared type is.

use super::value::{Json, Layout, SyntaxError, raw_children, write_string};
use crate::Error;
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, BooleanBuilder, Int32Builder, ListBuilder,
    StringArray, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::DataFusionError;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use std::collections::HashMap;
use std::sync::Arc;

/// `json` keeps its text; `jsonb` is normalized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Json,
    Jsonb,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Json => "json",
            Kind::Jsonb => "jsonb",
        }
    }

    /// The kind a field holds: its declared kind, or `otherwise` for text not declared as
    /// either (a `json_…` function reads it as json, operators and `jsonb_…` as jsonb).
    pub fn of(field: &Field, otherwise: Kind) -> Kind {
        Kind::declared(field).unwrap_or(otherwise)
    }

    /// Whether `field` is declared `json` or `jsonb`.
    pub fn declared(field: &Field) -> Option<Kind> {
        match sql::types::declared_type_name(field) {
            Some("json") => Some(Kind::Json),
            Some("jsonb") => Some(Kind::Jsonb),
            _ => None,
        }
    }

    /// A text field declared as this kind.
    pub fn field(self, name: &str) -> FieldRef {
        Arc::new(
            Field::new(name, DataType::Utf8, true).with_metadata(HashMap::from([(
                sql::types::FIELD_TYPE_KEY.to_string(),
                self.name().to_string(),
            )])),
        )
    }

    /// Reads a stored value of this kind.
    fn read(self, text: &str) -> Result<Json> {
        let parsed = match self {
            Kind::Json => Json::parse(text),
            Kind::Jsonb => Json::parse_jsonb(text),
        };
        parsed.map_err(|SyntaxError| invalid(self, text))
    }
}

/// Returns 22023 with a message, for a value a function cannot take.
macro_rules! bad_value {
    ($($arg:tt)*) => {
        Err(DataFusionError::External(Box::new(Error::InvalidParameterValue(format!($($arg)*)))))
    };
}

/// 22P02 for text that is not JSON.
fn invalid(kind: Kind, text: &str) -> DataFusionError {
    DataFusionError::External(Box::new(Error::InvalidText {
        ty: kind.name().into(),
        value: text.into(),
    }))
}

/// The function a whole-row reference in `row_to_json(t)` becomes (`crate::rows`).
pub const ROW_OBJECT: &str = "partita_json_row";
/// `row_to_json(t, true)`'s: a line break after each member's comma.
pub const ROW_OBJECT_PRETTY: &str = "partita_json_row_pretty";

/// The final step `json_agg(t)` of whole rows becomes (`crate::rows`).
pub const ROW_ARRAY: &str = "partita_json_agg_rows";

/// The function jsonb comparisons for equality compare the results of.
pub const EQUALITY_KEY: &str = "partita_jsonb_key";
/// The helper jsonb ordering compares.
pub const SORT_KEY: &str = "partita_jsonb_sort_key";

/// Which keys `?|` and `?&` look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyMatch {
    One,
    Any,
    All,
}

/// What a [`JsonFunction`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// A cast from text: checked (json) or normalized (jsonb).
    Input(Kind),
    /// `->` (`text` false) and `->>`: a member by key or an element by index.
    Get {
        text: bool,
    },
    /// `#>` and `#>>`: the value at a path given as a text array.
    Path {
        text: bool,
    },
    /// `json(b)_extract_path(_text)(doc, VARIADIC steps)`.
    ExtractPath {
        text: bool,
    },
    /// `@>`.
    Contains,
    /// `?`, `?|`, `?&`.
    HasKey(KeyMatch),
    /// jsonb `||`.
    Concat,
    /// jsonb `-` a key, an index, or keys.
    Delete,
    /// jsonb `#-` a path.
    DeletePath,
    /// `to_json`, `to_jsonb`.
    ToJson(Kind),
    /// `json(b)_build_object(VARIADIC args)`.
    BuildObject(Kind),
    /// A row as `row_to_json` writes it, from its columns' names and values:
    /// `{"a":1,"b":"x"}`; pretty, `{"a":1,\n "b":"x"}`.
    RowObject {
        pretty: bool,
    },
    /// `json(b)_build_array(VARIADIC args)`.
    BuildArray(Kind),
    TypeOf,
    ArrayLength,
    /// `jsonb_set(target, path, new [, create_missing])`.
    Set,
    Pretty,
    StripNulls,
    /// `json(b)_agg`'s final step: the array of the collected values' texts.
    AggregateArray(Kind),
    /// `json_agg`'s final step for rows (`json_agg(t)`), which PostgreSQL separates with a
    /// line break: `[{"a":1}, \n {"a":2}]`.
    AggregateRows,
    /// `json(b)_object_agg`'s per-row step: a member's text, `"key" : value`.
    Member(Kind),
    /// `json(b)_object_agg`'s final step: the object of the collected members.
    AggregateObject(Kind),
    /// The lists set-returning functions unnest: elements (as text with `text`), an
    /// object's keys, or its values (`json_each` zips keys and values).
    Elements {
        text: bool,
    },
    ObjectKeys,
    ObjectValues {
        text: bool,
    },
    /// What jsonb `=` compares (`Json::equality_key`).
    EqualityKey,
    /// What jsonb ORDER BY and `<` compare (`Json::sort_key`).
    SortKey,
}

impl Op {
    /// Whether the operation takes `n` arguments.
    fn takes(self, n: usize) -> bool {
        match self {
            Op::Get { .. }
            | Op::Path { .. }
            | Op::Contains
            | Op::HasKey(_)
            | Op::Concat
            | Op::Delete
            | Op::DeletePath
            | Op::Member(_) => n == 2,
            Op::Set => n == 3 || n == 4,
            // The final step of a DISTINCT aggregate also says to sort.
            Op::AggregateArray(_) | Op::AggregateRows => n == 1 || n == 2,
            Op::ExtractPath { .. } => n >= 1,
            Op::BuildObject(_) | Op::BuildArray(_) | Op::RowObject { .. } => true,
            _ => n == 1,
        }
    }
}

/// One JSON function; see [`Op`].
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct JsonFunction {
    name: String,
    op: Op,
    /// How text not declared json or jsonb is read: as json by the `json_…` functions (and
    /// their `partita_json_…` helpers), as jsonb by the others and the operators.
    family: Kind,
    signature: Signature,
}

impl JsonFunction {
    pub fn new(name: &str, op: Op) -> JsonFunction {
        // One argument for most; the operators and the variadic functions check their
        // count in `return_field_from_args`.
        let signature = match op.takes(1) && !op.takes(2) && !op.takes(3) {
            true => Signature::any(1, Volatility::Immutable),
            false => Signature::variadic_any(Volatility::Immutable),
        };
        let family = match name.starts_with("json_") || name.starts_with("partita_json_") {
            true => Kind::Json,
            false => Kind::Jsonb,
        };
        JsonFunction {
            name: name.to_string(),
            op,
            family,
            signature,
        }
    }

    /// The functions under their SQL names, and the operators' and aggregates' helpers under
    /// `partita_` names.
    pub fn all() -> Vec<JsonFunction> {
        use Kind::{Json as J, Jsonb as B};
        let mut all = vec![
            JsonFunction::new("partita_json_in", Op::Input(J)),
            JsonFunction::new("partita_jsonb_in", Op::Input(B)),
            JsonFunction::new("json_agg", Op::AggregateArray(J)),
            JsonFunction::new("jsonb_agg", Op::AggregateArray(B)),
            JsonFunction::new("partita_json_member", Op::Member(J)),
            JsonFunction::new("partita_jsonb_member", Op::Member(B)),
            JsonFunction::new("json_object_agg", Op::AggregateObject(J)),
            JsonFunction::new("jsonb_object_agg", Op::AggregateObject(B)),
            JsonFunction::new("to_json", Op::ToJson(J)),
            // An array is written as to_json writes it.
            JsonFunction::new("array_to_json", Op::ToJson(J)),
            JsonFunction::new("to_jsonb", Op::ToJson(B)),
            JsonFunction::new("json_build_object", Op::BuildObject(J)),
            JsonFunction::new("jsonb_build_object", Op::BuildObject(B)),
            JsonFunction::new(ROW_OBJECT, Op::RowObject { pretty: false }),
            JsonFunction::new(ROW_OBJECT_PRETTY, Op::RowObject { pretty: true }),
            JsonFunction::new(ROW_ARRAY, Op::AggregateRows),
            JsonFunction::new("json_build_array", Op::BuildArray(J)),
            JsonFunction::new("jsonb_build_array", Op::BuildArray(B)),
            JsonFunction::new("jsonb_set", Op::Set),
            JsonFunction::new("jsonb_pretty", Op::Pretty),
            JsonFunction::new(EQUALITY_KEY, Op::EqualityKey),
            JsonFunction::new(SORT_KEY, Op::SortKey),
        ];
        for prefix in ["json", "jsonb"] {
            let helper =
                |name: &str, op| JsonFunction::new(&format!("partita_{prefix}_{name}"), op);
            all.extend([
                helper("elements", Op::Elements { text: false }),
                helper("elements_text", Op::Elements { text: true }),
                helper("object_keys", Op::ObjectKeys),
                helper("object_values", Op::ObjectValues { text: false }),
                helper("object_values_text", Op::ObjectValues { text: true }),
                JsonFunction::new(&format!("{prefix}_typeof"), Op::TypeOf),
                JsonFunction::new(&format!("{prefix}_array_length"), Op::ArrayLength),
                JsonFunction::new(&format!("{prefix}_strip_nulls"), Op::StripNulls),
                JsonFunction::new(
                    &format!("{prefix}_extract_path"),
                    Op::ExtractPath { text: false },
                ),
                JsonFunction::new(
                    &format!("{prefix}_extract_path_text"),
                    Op::ExtractPath { text: true },
                ),
            ]);
        }
        all
    }

    /// The kind of the first argument, which most operations return.
    fn result(&self, args: &[FieldRef]) -> FieldRef {
        let input = args
            .first()
            .map_or(self.family, |f| Kind::of(f, self.family));
        let plain = |t: DataType| Arc::new(Field::new(&self.name, t, true));
        match self.op {
            Op::Input(kind)
            | Op::ToJson(kind)
            | Op::BuildObject(kind)
            | Op::BuildArray(kind)
            | Op::AggregateArray(kind)
            | Op::AggregateObject(kind) => kind.field(&self.name),
            Op::RowObject { .. } | Op::AggregateRows => Kind::Json.field(&self.name),
            Op::Get { text: false } | Op::Path { text: false } | Op::StripNulls => {
                input.field(&self.name)
            }
            Op::ExtractPath { text: false } => input.field(&self.name),
            Op::Concat | Op::Delete | Op::DeletePath | Op::Set => Kind::Jsonb.field(&self.name),
            Op::Get { text: true }
            | Op::Path { text: true }
            | Op::ExtractPath { text: true }
            | Op::TypeOf
            | Op::Pretty
            | Op::EqualityKey
            | Op::Member(_) => plain(DataType::Utf8),
            Op::Contains | Op::HasKey(_) => plain(DataType::Boolean),
            Op::ArrayLength => plain(DataType::Int32),
            Op::SortKey => plain(DataType::Binary),
            Op::Elements { text } | Op::ObjectValues { text } => {
                let item = match text {
                    true => Arc::new(Field::new("item", DataType::Utf8, true)),
                    false => input.field("item"),
                };
                plain(DataType::List(item))
            }
            Op::ObjectKeys => plain(DataType::List(Arc::new(Field::new(
                "item",
                DataType::Utf8,
                true,
            )))),
        }
    }
}

impl ScalarUDFImpl for JsonFunction {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        datafusion::common::internal_err!("return_field_from_args is used instead")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let n = args.arg_fields.len();
        let takes = self.op.takes(n);
        if !takes {
            return Err(DataFusionError::External(Box::new(
                Error::UndefinedFunction(format!("{} with {n} arguments", self.name)),
            )));
        }
        Ok(self.result(args.arg_fields))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let arrays: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| a.to_array(n))
            .collect::<Result<_>>()?;
        let kinds: Vec<Kind> = args
            .arg_fields
            .iter()
            .map(|f| Kind::of(f, self.family))
            .collect();
        let result: ArrayRef = match self.op {
            Op::Contains | Op::HasKey(_) => {
                let mut out = BooleanBuilder::with_capacity(n);
                for r in 0..n {
                    out.append_option(self.test(&arrays, &kinds, r)?);
                }
                Arc::new(out.finish())
            }
            Op::SortKey => {
                let mut out = BinaryBuilder::with_capacity(n, n * 16);
                for r in 0..n {
                    match json_arg(&arrays[0], kinds[0], r)? {
                        Some(doc) => out.append_value(doc.sort_key()),
                        None => out.append_null(),
                    }
                }
                Arc::new(out.finish())
            }
            Op::ArrayLength => {
                let mut out = Int32Builder::with_capacity(n);
                for r in 0..n {
                    let Some(doc) = json_arg(&arrays[0], kinds[0], r)? else {
                        out.append_null();
                        continue;
                    };
                    match doc {
                        Json::Array(items) => out.append_value(items.len() as i32),
                        _ => return bad_value!("cannot get array length of a non-array"),
                    }
                }
                Arc::new(out.finish())
            }
            Op::Elements { .. } | Op::ObjectKeys | Op::ObjectValues { .. } => {
                let mut out = ListBuilder::new(StringBuilder::new());
                for r in 0..n {
                    match self.items(&arrays[0], kinds[0], r)? {
                        Some(items) => {
                            for item in items {
                                out.values().append_option(item);
                            }
                            out.append(true);
                        }
                        None => out.append(false),
                    }
                }
                let list = out.finish();
                // The element field carries the declared kind, as `result` says.
                let field = match self.result(args.arg_fields.as_slice()).data_type() {
                    DataType::List(f) => Arc::clone(f),
                    _ => unreachable!("set-returning helpers return lists"),
                };
                let (_, offsets, values, nulls) = list.into_parts();
                Arc::new(datafusion::arrow::array::ListArray::try_new(
                    field, offsets, values, nulls,
                )?)
            }
            _ => {
                let mut out = StringBuilder::with_capacity(n, n * 16);
                for r in 0..n {
                    out.append_option(self.text(&arrays, &kinds, &args.arg_fields, r)?);
                }
                Arc::new(out.finish())
            }
        };
        Ok(ColumnarValue::Array(result))
    }
}

impl JsonFunction {
    /// The boolean operators' answer for row `r`.
    fn test(&self, arrays: &[ArrayRef], kinds: &[Kind], r: usize) -> Result<Option<bool>> {
        let Some(doc) = json_arg(&arrays[0], kinds[0], r)? else {
            return Ok(None);
        };
        match self.op {
            Op::Contains => {
                let Some(other) = json_arg(&arrays[1], Kind::Jsonb, r)? else {
                    return Ok(None);
                };
                Ok(Some(normalized(doc).contains(&other)))
            }
            Op::HasKey(KeyMatch::One) => Ok(text_arg(&arrays[1], r)?.map(|k| doc.has_key(&k))),
            Op::HasKey(matching) => {
                let Some(keys) = text_array_arg(&arrays[1], r)? else {
                    return Ok(None);
                };
                let mut keys = keys.iter().flatten();
                Ok(Some(match matching {
                    KeyMatch::All => keys.all(|k| doc.has_key(k)),
                    _ => keys.any(|k| doc.has_key(k)),
                }))
            }
            _ => unreachable!("only the boolean operators are tested"),
        }
    }

    /// The text-valued operations' answer for row `r`.
    fn text(
        &self,
        arrays: &[ArrayRef],
        kinds: &[Kind],
        fields: &[FieldRef],
        r: usize,
    ) -> Result<Option<String>> {
        let arg = |i: usize| json_arg(&arrays[i], kinds[i], r);
        let jsonb = |value: Option<Json>| value.map(|v| normalized(v).to_jsonb_text());
        Ok(match self.op {
            Op::Input(kind) => {
                let Some(text) = text_arg(&arrays[0], r)? else {
                    return Ok(None);
                };
                let value = kind.read(&text)?;
                Some(match kind {
                    Kind::Json => text,
                    Kind::Jsonb => value.to_jsonb_text(),
                })
            }
            Op::Get { text } => {
                let step = match arrays[1].data_type() {
                    t if t.is_integer() => {
                        let index = datafusion::arrow::compute::cast(&arrays[1], &DataType::Int64)?;
                        let index = index.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
                        match index.is_null(r) {
                            true => return Ok(None),
                            false => Step::Index(index.value(r)),
                        }
                    }
                    _ => match text_arg(&arrays[1], r)? {
                        Some(key) => Step::Key(key),
                        None => return Ok(None),
                    },
                };
                self.lookup(&arrays[0], kinds[0], r, std::slice::from_ref(&step), text)?
            }
            Op::Path { text } => {
                let Some(path) = text_array_arg(&arrays[1], r)? else {
                    return Ok(None);
                };
                let Some(path) = path.into_iter().collect::<Option<Vec<String>>>() else {
                    return Ok(None);
                };
                let steps: Vec<Step> = path.into_iter().map(Step::Path).collect();
                self.lookup(&arrays[0], kinds[0], r, &steps, text)?
            }
            Op::ExtractPath { text } => {
                let mut steps = Vec::with_capacity(arrays.len() - 1);
                for array in &arrays[1..] {
                    match text_arg(array, r)? {
                        Some(step) => steps.push(Step::Path(step)),
                        None => return Ok(None),
                    }
                }
                self.lookup(&arrays[0], kinds[0], r, &steps, text)?
            }
            Op::Concat => match (arg(0)?, arg(1)?) {
                (Some(a), Some(b)) => jsonb(Some(normalized(a).concat(normalized(b)))),
                _ => None,
            },
            Op::Delete => {
                let Some(doc) = arg(0)? else {
                    return Ok(None);
                };
                match arrays[1].data_type() {
                    t if t.is_integer() => {
                        let index = datafusion::arrow::compute::cast(&arrays[1], &DataType::Int64)?;
                        let index = index.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
                        match index.is_null(r) {
                            true => None,
                            false => jsonb(Some(doc.without_element(index.value(r)))),
                        }
                    }
                    DataType::List(_) => match text_array_arg(&arrays[1], r)? {
                        Some(keys) => jsonb(Some(
                            keys.iter().flatten().fold(doc, |d, k| d.without_key(k)),
                        )),
                        None => None,
                    },
                    _ => match text_arg(&arrays[1], r)? {
                        Some(key) => jsonb(Some(doc.without_key(&key))),
                        None => None,
                    },
                }
            }
            Op::DeletePath => {
                let (Some(doc), Some(path)) = (arg(0)?, text_array_arg(&arrays[1], r)?) else {
                    return Ok(None);
                };
                jsonb(Some(doc.without_path(&whole_path(path)?)))
            }
            Op::Set => {
                let (Some(doc), Some(path), Some(new)) =
                    (arg(0)?, text_array_arg(&arrays[1], r)?, arg(2)?)
                else {
                    return Ok(None);
                };
                let create_missing = match arrays.get(3) {
                    Some(flag) => {
                        let flag = datafusion::arrow::compute::cast(flag, &DataType::Boolean)?;
                        let flag = flag.as_boolean();
                        if flag.is_null(r) {
                            return Ok(None);
                        }
                        flag.value(r)
                    }
                    None => true,
                };
                let path = whole_path(path)?;
                jsonb(Some(normalized(doc).set_path(
                    &path,
                    normalized(new),
                    create_missing,
                )))
            }
            Op::StripNulls => match arg(0)? {
                Some(doc) => {
                    let stripped = doc.strip_nulls();
                    Some(match kinds[0] {
                        Kind::Jsonb => stripped.to_jsonb_text(),
                        Kind::Json => {
                            let mut out = String::new();
                            stripped.write(&mut out, Layout::Compact);
                            out
                        }
                    })
                }
                None => None,
            },
            Op::TypeOf => arg(0)?.map(|doc| doc.type_name().to_string()),
            Op::EqualityKey => arg(0)?.map(Json::equality_key),
            Op::Pretty => arg(0)?.map(|doc| doc.to_pretty_text()),
            Op::ToJson(kind) => {
                if null_at(&arrays[0], r) {
                    return Ok(None);
                }
                Some(sql_to_json(&arrays[0], &fields[0], r, kind)?)
            }
            Op::BuildArray(kind) => {
                let mut items = Vec::with_capacity(arrays.len());
                for (array, field) in arrays.iter().zip(fields) {
                    items.push(sql_to_json_or_null(array, field, r, kind)?);
                }
                Some(finish(kind, format!("[{}]", items.join(", ")))?)
            }
            Op::BuildObject(_) | Op::RowObject { .. } => {
                let (kind, layout, separator) = match self.op {
                    Op::BuildObject(kind) => (kind, Layout::BuiltObject, ", "),
                    Op::RowObject { pretty: true } => (Kind::Json, Layout::Compact, ",\n "),
                    _ => (Kind::Json, Layout::Compact, ","),
                };
                if !arrays.len().is_multiple_of(2) {
                    return bad_value!(
                        "argument list must have even number of elements: {} takes pairs of \
                         keys and values",
                        self.name
                    );
                }
                let mut members = Vec::with_capacity(arrays.len() / 2);
                for pair in 0..arrays.len() / 2 {
                    let (k, v) = (2 * pair, 2 * pair + 1);
                    members.push(member(kind, &arrays[k], &arrays[v], &fields[v], r, layout)?);
                }
                Some(finish(kind, format!("{{{}}}", members.join(separator)))?)
            }
            Op::Member(kind) => Some(member(
                kind,
                &arrays[0],
                &arrays[1],
                &fields[1],
                r,
                Layout::AggregatedObject,
            )?),
            Op::AggregateArray(_) | Op::AggregateRows | Op::AggregateObject(_) => {
                let kind = match self.op {
                    Op::AggregateArray(kind) | Op::AggregateObject(kind) => kind,
                    _ => Kind::Json,
                };
                let list = arrays[0].as_list::<i32>();
                if list.is_null(r) {
                    return Ok(None);
                }
                let items = list.value(r);
                let items = strings(&items)?;
                let mut texts: Vec<&str> = (0..items.len())
                    .map(|i| match items.is_null(i) {
                        true => "null",
                        false => items.value(i),
                    })
                    .collect();
                if arrays.len() > 1 {
                    // DISTINCT values, in the order of the values themselves.
                    let mut keyed = Vec::with_capacity(texts.len());
                    for text in texts {
                        keyed.push((Kind::Jsonb.read(text)?.sort_key(), text));
                    }
                    keyed.sort_by(|a, b| a.0.cmp(&b.0));
                    texts = keyed.into_iter().map(|(_, t)| t).collect();
                }
                let text = match self.op {
                    Op::AggregateArray(_) => format!("[{}]", texts.join(", ")),
                    // A line break before each row but the first (not before a null).
                    Op::AggregateRows => {
                        let mut out = String::from("[");
                        for (i, text) in texts.iter().enumerate() {
                            if i > 0 {
                                out.push_str(if *text == "null" { ", " } else { ", \n " });
                            }
                            out.push_str(text);
                        }
                        out.push(']');
                        out
                    }
                    _ => format!("{{ {} }}", texts.join(", ")),
                };
                Some(finish(kind, text)?)
            }
            Op::Contains
            | Op::HasKey(_)
            | Op::ArrayLength
            | Op::SortKey
            | Op::Elements { .. }
            | Op::ObjectKeys
            | Op::ObjectValues { .. } => unreachable!("not text-valued"),
        })
    }

    /// `->`, `#>` and `extract_path`: the value at `steps`, its text with `text`. A `json`
    /// operand gives the part's own text; a `jsonb` one its normal form.
    fn lookup(
        &self,
        array: &ArrayRef,
        kind: Kind,
        r: usize,
        steps: &[Step],
        text: bool,
    ) -> Result<Option<String>> {
        let Some(doc) = text_arg(array, r)? else {
            return Ok(None);
        };
        let found = match kind {
            Kind::Jsonb => {
                let value = kind.read(&doc)?;
                let Some(found) = steps.iter().try_fold(&value, |v, step| step.apply(v)) else {
                    return Ok(None);
                };
                match text {
                    true => found.to_text(),
                    false => Some(found.to_jsonb_text()),
                }
            }
            Kind::Json => {
                let mut part: &str = &doc;
                for step in steps {
                    let Some(children) = raw_children(part).map_err(|_| invalid(kind, &doc))?
                    else {
                        return Ok(None);
                    };
                    let Some(child) = step.pick(&children) else {
                        return Ok(None);
                    };
                    part = child;
                }
                match (text, kind.read(part)?) {
                    (false, _) => Some(part.to_string()),
                    (true, Json::Null) => None,
                    (true, Json::String(s)) => Some(s),
                    // Other values keep the text they were written with.
                    (true, _) => Some(part.to_string()),
                }
            }
        };
        Ok(found)
    }

    /// The set-returning functions' list for row `r`.
    fn items(&self, array: &ArrayRef, kind: Kind, r: usize) -> Result<Option<Vec<Option<String>>>> {
        if kind == Kind::Json
            && let Some(text) = text_arg(array, r)?
            && let Ok(Some(children)) = raw_children(&text)
            && !matches!(self.op, Op::ObjectKeys)
        {
            // json's elements and values keep the text they were written with.
            let object = text.trim_start().starts_with('{');
            let wanted = matches!(self.op, Op::ObjectValues { .. });
            if object != wanted {
                let what = if object { "an object" } else { "an array" };
                return match wanted {
                    true => bad_value!("cannot call json_each on a non-object"),
                    false => bad_value!("cannot extract elements from {what}"),
                };
            }
            let text_wanted = matches!(
                self.op,
                Op::Elements { text: true } | Op::ObjectValues { text: true }
            );
            let mut items = Vec::with_capacity(children.len());
            for (_, part) in children {
                items.push(match (text_wanted, kind.read(part)?) {
                    (false, _) => Some(part.to_string()),
                    (true, Json::Null) => None,
                    (true, Json::String(s)) => Some(s),
                    (true, _) => Some(part.to_string()),
                });
            }
            return Ok(Some(items));
        }
        let Some(doc) = json_arg(array, kind, r)? else {
            return Ok(None);
        };
        Ok(Some(match (self.op, doc) {
            (Op::ObjectKeys, Json::Object(members)) => {
                members.into_iter().map(|(k, _)| Some(k)).collect()
            }
            (Op::ObjectValues { text }, Json::Object(members)) => members
                .into_iter()
                .map(|(_, value)| match text {
                    true => value.to_text(),
                    false => Some(normalized(value).to_jsonb_text()),
                })
                .collect(),
            (Op::ObjectKeys, other) => {
                return bad_value!(
                    "cannot call {}_object_keys on {}",
                    self.family.name(),
                    scalar_or(&other)
                );
            }
            (Op::ObjectValues { .. }, _) => {
                return bad_value!("cannot call {}_each on a non-object", self.family.name());
            }
            (Op::Elements { text }, Json::Array(items)) => items
                .into_iter()
                .map(|item| match text {
                    true => item.to_text(),
                    false => Some(normalized(item).to_jsonb_text()),
                })
                .collect(),
            (Op::Elements { .. }, other) => {
                return bad_value!("cannot extract elements from {}", scalar_or(&other));
            }
            _ => unreachable!("only set-returning helpers have items"),
        }))
    }
}

fn scalar_or(value: &Json) -> &'static str {
    match value {
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
        _ => "a scalar",
    }
}

/// One step of a lookup.
#[derive(Debug)]
enum Step {
    /// `-> 'key'`: a member.
    Key(String),
    /// `-> 2`: an element, from the end when negative.
    Index(i64),
    /// A path step: a key of an object, an index into an array.
    Path(String),
}

impl Step {
    fn apply<'a>(&self, value: &'a Json) -> Option<&'a Json> {
        match self {
            Step::Key(key) => value.field(key),
            Step::Index(i) => value.element(*i),
            Step::Path(step) => value.at_path(std::slice::from_ref(step)),
        }
    }

    fn pick<'a>(&self, children: &[super::value::RawChild<'a>]) -> Option<&'a str> {
        let object = children.first().is_some_and(|(k, _)| k.is_some());
        let index = |i: i64| {
            let len = children.len() as i64;
            let i = if i < 0 { len + i } else { i };
            (0..len).contains(&i).then(|| children[i as usize].1)
        };
        match self {
            Step::Key(key) => children
                .iter()
                .rev()
                .find(|(k, _)| k.as_deref() == Some(key))
                .map(|c| c.1),
            Step::Index(i) if !object => index(*i),
            Step::Path(step) if object => children
                .iter()
                .rev()
                .find(|(k, _)| k.as_deref() == Some(step))
                .map(|c| c.1),
            Step::Path(step) => index(step.trim().parse().ok()?),
            Step::Index(_) => None,
        }
    }
}

fn normalized(mut value: Json) -> Json {
    value.normalize();
    value
}

/// The argument's text at row `r` (any string type; other types as their text).
fn text_arg(array: &ArrayRef, r: usize) -> Result<Option<String>> {
    if null_at(array, r) {
        return Ok(None);
    }
    Ok(Some(match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().value(r).to_string(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(r).to_string(),
        DataType::Utf8View => array.as_string_view().value(r).to_string(),
        _ => {
            let mut text = String::new();
            crate::output::write_text(
                array,
                r,
                &crate::output::TextStyle::in_zone(utc()),
                &mut text,
            )
            .map_err(DataFusionError::Execution)?;
            text
        }
    }))
}

/// The argument at row `r` read as JSON of `kind`.
fn json_arg(array: &ArrayRef, kind: Kind, r: usize) -> Result<Option<Json>> {
    text_arg(array, r)?.map(|t| kind.read(&t)).transpose()
}

/// A `text[]` argument: an array (`ARRAY['a', 'b']`) or its text (`'{a,b}'`).
fn text_array_arg(array: &ArrayRef, r: usize) -> Result<Option<Vec<Option<String>>>> {
    if null_at(array, r) {
        return Ok(None);
    }
    match array.data_type() {
        DataType::List(_) => {
            let items = array.as_list::<i32>().value(r);
            let items = strings(&items)?;
            Ok(Some(
                (0..items.len())
                    .map(|i| (!items.is_null(i)).then(|| items.value(i).to_string()))
                    .collect(),
            ))
        }
        _ => {
            let text = text_arg(array, r)?.unwrap_or_default();
            crate::arrays::parse_text_array(&text)
                .map(Some)
                .ok_or_else(|| {
                    DataFusionError::External(Box::new(Error::InvalidText {
                        ty: "text[]".into(),
                        value: text,
                    }))
                })
        }
    }
}

/// Whether row `r` is NULL, also for a NULL constant's untyped array.
fn null_at(array: &ArrayRef, r: usize) -> bool {
    *array.data_type() == DataType::Null || array.is_null(r)
}

fn utc() -> Tz {
    sql::types::UTC.parse().expect("UTC is a time zone")
}

/// A path without NULL steps; a NULL step is an error, as in PostgreSQL's `#-` and
/// `jsonb_set`.
fn whole_path(path: Vec<Option<String>>) -> Result<Vec<String>> {
    path.into_iter()
        .enumerate()
        .map(|(i, step)| {
            step.ok_or_else(|| {
                DataFusionError::External(Box::new(Error::InvalidParameterValue(format!(
                    "path element at position {} is null",
                    i + 1
                ))))
            })
        })
        .collect()
}

fn strings(array: &ArrayRef) -> Result<StringArray> {
    let cast = datafusion::arrow::compute::cast(array, &DataType::Utf8)?;
    Ok(cast.as_string::<i32>().clone())
}

/// The text of a built value: as written for json, normalized for jsonb.
fn finish(kind: Kind, text: String) -> Result<String> {
    match kind {
        Kind::Json => Ok(text),
        Kind::Jsonb => Ok(kind.read(&text)?.to_jsonb_text()),
    }
}

/// An object member's text, `"key" : value`; a NULL key is an error, as in PostgreSQL.
fn member(
    kind: Kind,
    keys: &ArrayRef,
    values: &ArrayRef,
    value_field: &Field,
    r: usize,
    layout: Layout,
) -> Result<String> {
    let Some(key) = text_arg(keys, r)? else {
        return bad_value!("null value not allowed for object key");
    };
    let mut out = String::new();
    write_string(&key, &mut out);
    out.push_str(match (kind, layout) {
        (Kind::Jsonb, _) => ": ",
        (Kind::Json, Layout::Compact) => ":",
        _ => " : ",
    });
    out.push_str(&sql_to_json_or_null(values, value_field, r, kind)?);
    Ok(out)
}

fn sql_to_json_or_null(array: &ArrayRef, field: &Field, r: usize, kind: Kind) -> Result<String> {
    match null_at(array, r) {
        true => Ok("null".into()),
        false => sql_to_json(array, field, r, kind),
    }
}

/// `to_json(value)`: a SQL value as JSON text. Numbers and booleans are JSON's own; json and
/// jsonb values are themselves; dates and timestamps are ISO 8601 strings; everything else
/// is the string of its text.
pub fn sql_to_json(array: &ArrayRef, field: &Field, r: usize, kind: Kind) -> Result<String> {
    // An array is a JSON array of its elements.
    if let DataType::List(element) = array.data_type() {
        let values = array.as_list::<i32>().value(r);
        let items = (0..values.len())
            .map(|i| sql_to_json_or_null(&values, element, i, kind))
            .collect::<Result<Vec<_>>>()?;
        let out = format!("[{}]", items.join(","));
        return match kind {
            Kind::Json => Ok(out),
            Kind::Jsonb => Ok(kind.read(&out)?.to_jsonb_text()),
        };
    }
    // A record is an object of its fields, named as row_to_json names them (DataFusion's
    // anonymous `c0, c1…` are PostgreSQL's `f1, f2…`).
    if let DataType::Struct(fields) = array.data_type() {
        let row = array.as_struct();
        let anonymous = fields
            .iter()
            .enumerate()
            .all(|(i, f)| *f.name() == format!("c{i}"));
        let mut members = Vec::with_capacity(fields.len());
        for (i, (column, f)) in row.columns().iter().zip(fields.iter()).enumerate() {
            let name = match anonymous {
                true => format!("f{}", i + 1),
                false => f.name().clone(),
            };
            let mut member = String::new();
            write_string(&name, &mut member);
            member.push(':');
            member.push_str(&sql_to_json_or_null(column, f, r, Kind::Json)?);
            members.push(member);
        }
        let out = format!("{{{}}}", members.join(","));
        return match kind {
            Kind::Json => Ok(out),
            Kind::Jsonb => Ok(kind.read(&out)?.to_jsonb_text()),
        };
    }
    let zone: Tz = match array.data_type() {
        DataType::Timestamp(_, Some(tz)) => tz.parse().unwrap_or_else(|_| utc()),
        _ => utc(),
    };
    let mut text = String::new();
    crate::output::write_text(
        array,
        r,
        &crate::output::TextStyle::in_zone(zone),
        &mut text,
    )
    .map_err(DataFusionError::Execution)?;
    let mut out = String::new();
    match array.data_type() {
        DataType::Boolean => out.push_str(if text == "t" { "true" } else { "false" }),
        t if t.is_integer() || matches!(t, DataType::Decimal128(..)) => {
            out.push_str(&text);
            // An unconstrained numeric (a record's field, a row_to_json member) shows its
            // own digits.
            if crate::output::unconstrained_numeric(t) {
                crate::output::trim_fraction(&mut out, 0);
            }
        }
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            match text.parse::<f64>().is_ok_and(f64::is_finite) {
                true => out.push_str(&text),
                false => write_string(&text, &mut out),
            }
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            if Kind::declared(field).is_some() =>
        {
            let own = Kind::of(field, Kind::Jsonb);
            match (own, kind) {
                (Kind::Json, Kind::Json) => out.push_str(&text),
                _ => out.push_str(&own.read(&text)?.to_jsonb_text()),
            }
        }
        DataType::Timestamp(_, tz) => {
            let mut iso = text.replacen(' ', "T", 1);
            // PostgreSQL writes the offset with minutes in JSON: +00:00.
            if tz.is_some()
                && !iso.ends_with("infinity")
                && iso.len() > 3
                && iso.as_bytes()[iso.len() - 3] != b':'
            {
                iso.push_str(":00");
            }
            write_string(&iso, &mut out);
        }
        _ => write_string(&text, &mut out),
    }
    match kind {
        Kind::Json => Ok(out),
        Kind::Jsonb => Ok(kind.read(&out)?.to_jsonb_text()),
    }
}
