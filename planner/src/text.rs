//! Values as PostgreSQL prints them in messages (error details such as "Key (id)=(1)").

use crate::convert::format_uuid;
use storage::Value;

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
    }
}
