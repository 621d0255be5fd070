//! Values as PostgreSQL prints them in messages (error details such as "Key (id)=(1)").

use crate::convert::format_uuid;
use storage::{Value, ValueRef};

pub fn value_text(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => if *b { "t" } else { "f" }.into(),
        Value::Int2(i) => i.to_string(),
        Value::Int4(i) => i.to_string(),
        Value::Int8(i) => i.to_string(),
        Value::Float4(f) => f.to_string(),
        Value::Float8(f) => f.to_string(),
        Value::Numeric(d) => d.to_string(),
        Value::Text(s) | Value::Json(s) => s.clone(),
        Value::Bytea(b) => format!("\\x{}", crate::provider::encode_hex(b)),
        Value::Date(d) => {
            let mut out = String::new();
            crate::output::push_date(i64::from(*d), &mut out);
            out
        }
        Value::Timestamp(t) => {
            let mut out = String::new();
            crate::output::push_timestamp(*t, None, &mut out);
            out
        }
        Value::TimestampTz(t) => {
            let mut out = String::new();
            crate::output::push_timestamp(*t, None, &mut out);
            out.push_str("+00");
            out
        }
        Value::Uuid(u) => format_uuid(u),
        Value::Time(t) => {
            let mut out = String::new();
            crate::output::push_time_of_day(*t, &mut out);
            out
        }
        Value::Interval(v) => {
            let mut out = String::new();
            crate::output::push_interval(v.months, v.days, v.micros * 1000, &mut out);
            out
        }
        Value::Array(encoded) => {
            let Ok(elements) = storage::rowcodec::array_elements(encoded) else {
                return "{?}".into();
            };
            let texts: Vec<String> = elements
                .iter()
                .map(|e| match e {
                    ValueRef::Null => "NULL".to_string(),
                    e => array_item(&value_text(&ValueRef::to_owned(*e))),
                })
                .collect();
            format!("{{{}}}", texts.join(","))
        }
    }
}

/// An element's text as array output writes it: quoted when empty, `NULL`-like, or holding
/// a delimiter, quote, brace, space or backslash.
pub fn array_item(text: &str) -> String {
    let needs_quotes = text.is_empty()
        || text.contains([',', '"', '{', '}', ' ', '\\'])
        || text.eq_ignore_ascii_case("null");
    match needs_quotes {
        true => format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\"")),
        false => text.to_string(),
    }
}
