//! JSON values as PostgreSQL reads and writes them.
//!
//! `json` keeps the text it was given (after checking it); `jsonb` is stored in its normal
//! form: object keys ordered shorter first, then bytewise, a repeated key keeping its last
//! value, numbers written as `numeric` writes them (`1e2` is `100`), and `", "` / `": "`
//! between items. Numbers keep their digits as text, so no precision is lost on the way.

use std::fmt::Write;

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// The number's text, as read (normalized for jsonb by [`Json::normalize`]).
    Number(String),
    String(String),
    Array(Vec<Json>),
    /// Members in the order read; for jsonb, sorted and without repeated keys.
    Object(Vec<(String, Json)>),
}

/// Why a text is not JSON; the wire layer reports it as 22P02.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError;

impl Json {
    /// Reads one JSON value, the whole text.
    pub fn parse(text: &str) -> Result<Json, SyntaxError> {
        let mut parser = Parser {
            bytes: text.as_bytes(),
            pos: 0,
        };
        let value = parser.value(0)?;
        parser.skip_whitespace();
        match parser.pos == parser.bytes.len() {
            true => Ok(value),
            false => Err(SyntaxError),
        }
    }

    /// Reads `text` as jsonb: parsed and normalized.
    pub fn parse_jsonb(text: &str) -> Result<Json, SyntaxError> {
        let mut value = Json::parse(text)?;
        value.normalize();
        Ok(value)
    }

    /// Puts the value in jsonb's normal form (see the module comment).
    pub fn normalize(&mut self) {
        match self {
            Json::Number(n) => *n = normalize_number(n),
            Json::Array(items) => items.iter_mut().for_each(Json::normalize),
            Json::Object(members) => {
                members.iter_mut().for_each(|(_, v)| v.normalize());
                // A stable sort keeps repeated keys in input order; the last one stays.
                members.sort_by(|(a, _), (b, _)| jsonb_key_order(a, b));
                let mut kept: Vec<(String, Json)> = Vec::with_capacity(members.len());
                for member in members.drain(..) {
                    match kept.last_mut() {
                        Some(last) if last.0 == member.0 => *last = member,
                        _ => kept.push(member),
                    }
                }
                *members = kept;
            }
            Json::Null | Json::Bool(_) | Json::String(_) => {}
        }
    }

    /// The text two jsonb values equal as PostgreSQL compares them have in common: the
    /// normal form with numbers by value (`1.0` and `1` are equal there).
    pub fn equality_key(mut self) -> String {
        fn by_value(v: &mut Json) {
            match v {
                Json::Number(n) => {
                    if n.contains('.') {
                        let trimmed = n.trim_end_matches('0').trim_end_matches('.');
                        *n = trimmed.to_string();
                    }
                    if n == "-0" {
                        *n = "0".into();
                    }
                }
                Json::Array(items) => items.iter_mut().for_each(by_value),
                Json::Object(members) => members.iter_mut().for_each(|(_, v)| by_value(v)),
                Json::Null | Json::Bool(_) | Json::String(_) => {}
            }
        }
        self.normalize();
        by_value(&mut self);
        self.to_jsonb_text()
    }

    /// Bytes whose order is jsonb's order (PostgreSQL's `compareJsonbContainers`): a
    /// container before its contents, with its size first (a longer array or object is
    /// greater); null < strings < numbers < booleans < arrays < objects; numbers by value,
    /// strings and keys bytewise; object members in jsonb's key order. A top-level scalar
    /// is, as there, a one-element array that sorts before a real one of one element.
    pub fn sort_key(mut self) -> Vec<u8> {
        self.normalize();
        let mut out = Vec::new();
        match &self {
            Json::Array(_) | Json::Object(_) => self.write_sort_key(&mut out, true),
            scalar => {
                out.push(SORT_ARRAY);
                out.extend_from_slice(&1u32.to_be_bytes());
                out.push(0);
                scalar.write_sort_key(&mut out, false);
            }
        }
        out
    }

    fn write_sort_key(&self, out: &mut Vec<u8>, top: bool) {
        match self {
            Json::Null => out.push(0),
            Json::String(s) => {
                out.push(1);
                write_sort_string(s, out);
            }
            Json::Number(n) => {
                out.push(2);
                write_sort_number(n, out);
            }
            Json::Bool(b) => out.extend_from_slice(&[3, u8::from(*b)]),
            Json::Array(items) => {
                out.push(SORT_ARRAY);
                out.extend_from_slice(&(items.len() as u32).to_be_bytes());
                // A real array after a top-level scalar's pseudo-array of the same size.
                if top {
                    out.push(1);
                }
                items.iter().for_each(|i| i.write_sort_key(out, false));
            }
            Json::Object(members) => {
                out.push(SORT_ARRAY + 1);
                out.extend_from_slice(&(members.len() as u32).to_be_bytes());
                for (key, value) in members {
                    write_sort_string(key, out);
                    value.write_sort_key(out, false);
                }
            }
        }
    }

    /// jsonb's text: `{"a": 1, "b": [1, 2]}`.
    pub fn to_jsonb_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, Layout::Jsonb);
        out
    }

    /// Writes the value in `layout`.
    pub fn write(&self, out: &mut String, layout: Layout) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => out.push_str(n),
            Json::String(s) => write_string(s, out),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(layout.item_separator());
                    }
                    item.write(out, layout);
                }
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(layout.item_separator());
                    }
                    write_string(key, out);
                    out.push_str(layout.key_separator());
                    value.write(out, layout);
                }
                out.push('}');
            }
        }
    }

    /// `jsonb_pretty`'s text: one item per line, indented by four spaces a level.
    pub fn to_pretty_text(&self) -> String {
        let mut out = String::new();
        self.write_pretty(&mut out, 0);
        out
    }

    fn write_pretty(&self, out: &mut String, depth: usize) {
        let indent = |out: &mut String, depth: usize| out.push_str(&"    ".repeat(depth));
        match self {
            // PostgreSQL breaks the line inside empty brackets too.
            Json::Array(items) => {
                out.push_str("[\n");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    indent(out, depth + 1);
                    item.write_pretty(out, depth + 1);
                }
                if !items.is_empty() {
                    out.push('\n');
                }
                indent(out, depth);
                out.push(']');
            }
            Json::Object(members) => {
                out.push_str("{\n");
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    indent(out, depth + 1);
                    write_string(key, out);
                    out.push_str(": ");
                    value.write_pretty(out, depth + 1);
                }
                if !members.is_empty() {
                    out.push('\n');
                }
                indent(out, depth);
                out.push('}');
            }
            other => other.write(out, Layout::Jsonb),
        }
    }

    /// `jsonb_typeof`'s answer.
    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "boolean",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        }
    }

    /// The member named `key` (the last one, when json repeats it).
    pub fn field(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|m| &m.1),
            _ => None,
        }
    }

    /// The array element at `index`, counting from the end when negative.
    pub fn element(&self, index: i64) -> Option<&Json> {
        match self {
            Json::Array(items) => items.get(array_index(index, items.len())?),
            _ => None,
        }
    }

    /// The value at a `#>` path: each step a key of an object or an index into an array.
    pub fn at_path<S: AsRef<str>>(&self, path: &[S]) -> Option<&Json> {
        path.iter().try_fold(self, |value, step| {
            let step = step.as_ref();
            match value {
                Json::Object(_) => value.field(step),
                Json::Array(_) => value.element(step.trim().parse().ok()?),
                _ => None,
            }
        })
    }

    /// `@>`: whether `self` contains `other`, as jsonb defines it: an object contains the
    /// members of the other, each value containing the other's; an array contains every
    /// element of the other somewhere (and a top-level array contains a scalar it holds);
    /// scalars are equal.
    pub fn contains(&self, other: &Json) -> bool {
        self.contains_at(other, true)
    }

    fn contains_at(&self, other: &Json, top: bool) -> bool {
        match (self, other) {
            (Json::Object(mine), Json::Object(theirs)) => theirs.iter().all(|(key, value)| {
                mine.iter()
                    .any(|(k, v)| k == key && v.contains_at(value, false))
            }),
            (Json::Array(mine), Json::Array(theirs)) => theirs.iter().all(|wanted| {
                mine.iter().any(|have| match (have, wanted) {
                    (Json::Array(_) | Json::Object(_), _) => have.contains_at(wanted, false),
                    _ => have.scalar_equals(wanted),
                })
            }),
            (Json::Array(mine), scalar) if top && !matches!(scalar, Json::Object(_)) => {
                mine.iter().any(|have| have.scalar_equals(scalar))
            }
            (a, b) => a.scalar_equals(b),
        }
    }

    fn scalar_equals(&self, other: &Json) -> bool {
        match (self, other) {
            (Json::Number(a), Json::Number(b)) => number_key(a) == number_key(b),
            (Json::Array(_) | Json::Object(_), _) => false,
            (a, b) => a == b,
        }
    }

    /// `?`: whether `key` is a member of an object, or a string element of an array, or
    /// the string itself.
    pub fn has_key(&self, key: &str) -> bool {
        match self {
            Json::Object(members) => members.iter().any(|(k, _)| k == key),
            Json::Array(items) => items
                .iter()
                .any(|item| matches!(item, Json::String(s) if s == key)),
            Json::String(s) => s == key,
            _ => false,
        }
    }

    /// `->>`'s text of a value: a string unquoted, null as SQL NULL, others as jsonb writes them.
    pub fn to_text(&self) -> Option<String> {
        match self {
            Json::Null => None,
            Json::String(s) => Some(s.clone()),
            other => Some(other.to_jsonb_text()),
        }
    }

    /// `||`: objects merge (the right side's members win), anything else concatenates as arrays.
    pub fn concat(self, other: Json) -> Json {
        match (self, other) {
            (Json::Object(mut mine), Json::Object(theirs)) => {
                mine.extend(theirs);
                let mut merged = Json::Object(mine);
                merged.normalize();
                merged
            }
            (a, b) => {
                let mut items = a.into_items();
                items.extend(b.into_items());
                Json::Array(items)
            }
        }
    }

    fn into_items(self) -> Vec<Json> {
        match self {
            Json::Array(items) => items,
            other => vec![other],
        }
    }

    /// `- text`: without the member `key` (an object) or the string elements equal to it.
    pub fn without_key(mut self, key: &str) -> Json {
        match &mut self {
            Json::Object(members) => members.retain(|(k, _)| k != key),
            Json::Array(items) => items.retain(|item| !matches!(item, Json::String(s) if s == key)),
            _ => {}
        }
        self
    }

    /// `- integer`: without the array element at `index` (counting from the end when negative).
    pub fn without_element(mut self, index: i64) -> Json {
        if let Json::Array(items) = &mut self
            && let Some(i) = array_index(index, items.len())
        {
            items.remove(i);
        }
        self
    }

    /// `#-`: without the value at `path`.
    pub fn without_path<S: AsRef<str>>(mut self, path: &[S]) -> Json {
        if let Some((last, parents)) = path.split_last()
            && let Some(parent) = self.at_path_mut(parents)
        {
            let last = last.as_ref();
            let removed = match std::mem::replace(parent, Json::Null) {
                Json::Array(items) => match last.trim().parse() {
                    Ok(i) => Json::Array(items).without_element(i),
                    Err(_) => Json::Array(items),
                },
                other => other.without_key(last),
            };
            *parent = removed;
        }
        self
    }

    fn at_path_mut<S: AsRef<str>>(&mut self, path: &[S]) -> Option<&mut Json> {
        let mut value = self;
        for step in path {
            let step = step.as_ref();
            value = match value {
                Json::Object(members) => members
                    .iter_mut()
                    .rev()
                    .find(|(k, _)| k == step)
                    .map(|m| &mut m.1)?,
                Json::Array(items) => {
                    let i = array_index(step.trim().parse().ok()?, items.len())?;
                    &mut items[i]
                }
                _ => return None,
            };
        }
        Some(value)
    }

    /// `jsonb_set(target, path, new, create_missing)`: `self` with the value at `path`
    /// replaced by `new`; a missing last step is added when `create_missing` (a key to an
    /// object, an element before the start or after the end of an array).
    pub fn set_path<S: AsRef<str>>(mut self, path: &[S], new: Json, create_missing: bool) -> Json {
        let Some((last, parents)) = path.split_last() else {
            return self;
        };
        let Some(parent) = self.at_path_mut(parents) else {
            return self;
        };
        let last = last.as_ref();
        match parent {
            Json::Object(members) => {
                match members.iter_mut().rev().find(|(k, _)| k == last) {
                    Some(member) => member.1 = new,
                    None if create_missing => members.push((last.to_string(), new)),
                    None => {}
                }
                parent.normalize();
            }
            Json::Array(items) => {
                let Ok(index) = last.trim().parse::<i64>() else {
                    return self;
                };
                match array_index(index, items.len()) {
                    Some(i) => items[i] = new,
                    None if create_missing && index < 0 => items.insert(0, new),
                    None if create_missing => items.push(new),
                    None => {}
                }
            }
            _ => {}
        }
        self
    }

    /// `jsonb_strip_nulls`: without object members whose value is null, at every depth.
    pub fn strip_nulls(self) -> Json {
        match self {
            Json::Object(members) => Json::Object(
                members
                    .into_iter()
                    .filter(|(_, v)| *v != Json::Null)
                    .map(|(k, v)| (k, v.strip_nulls()))
                    .collect(),
            ),
            Json::Array(items) => Json::Array(items.into_iter().map(Json::strip_nulls).collect()),
            other => other,
        }
    }
}

/// How items are separated when written: jsonb's `", "` and `": "`, or the spacing
/// PostgreSQL's json-building functions use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `{"a": 1, "b": [1, 2]}`.
    Jsonb,
    /// `json_build_object`: `{"a" : 1, "b" : [1, 2]}`.
    BuiltObject,
    /// `json_object_agg`: `{ "a" : 1, "b" : 2 }` (the braces' spaces are written by the caller).
    AggregatedObject,
    /// `row_to_json`, `to_json` of a record: `{"a":1,"b":2}`.
    Compact,
}

impl Layout {
    fn item_separator(self) -> &'static str {
        match self {
            Layout::Compact => ",",
            _ => ", ",
        }
    }

    fn key_separator(self) -> &'static str {
        match self {
            Layout::Jsonb => ": ",
            Layout::BuiltObject | Layout::AggregatedObject => " : ",
            Layout::Compact => ":",
        }
    }
}

/// jsonb's key order: shorter keys first, keys of one length bytewise.
fn jsonb_key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// The position `index` names in an array of `len` elements, from the end when negative.
fn array_index(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if index < 0 { len + index } else { index };
    (0..len).contains(&i).then_some(i as usize)
}

/// A JSON string literal as PostgreSQL escapes it: quotes, backslashes and control
/// characters; everything else as it is.
pub fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A number as `numeric` writes it: the exponent applied (`1.5e1` is `15`, `1e-2` is `0.01`),
/// the scale kept (`1.50` stays), no minus sign on zero.
fn normalize_number(text: &str) -> String {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    // The parser bounds the exponent (MAX_EXPONENT).
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().unwrap_or(0)),
        None => (unsigned, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{int_part}{frac_part}");
    // The value is `digits` × 10^shift.
    let shift = exponent - frac_part.len() as i64;
    let mut out = if shift >= 0 {
        let mut whole = digits;
        whole.extend(std::iter::repeat_n('0', shift as usize));
        trim_leading_zeros(&whole).to_string()
    } else {
        let scale = (-shift) as usize;
        let padded = format!("{digits:0>width$}", width = scale + 1);
        let (whole, frac) = padded.split_at(padded.len() - scale);
        format!("{}.{frac}", trim_leading_zeros(whole))
    };
    if negative && out.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        out.insert(0, '-');
    }
    out
}

/// The sort key tag of arrays (objects' is the next): above every scalar's.
const SORT_ARRAY: u8 = 0x10;

/// A string's bytes in an order-keeping, self-delimiting form: 0x00 escaped as 0x00 0xFF,
/// ended by 0x00 0x00.
fn write_sort_string(s: &str, out: &mut Vec<u8>) {
    for &b in s.as_bytes() {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// A number in an order-keeping, self-delimiting form: sign, then for 0.d₁d₂… × 10^e the
/// exponent and the significant digits (inverted for negative numbers, whose larger
/// magnitudes are smaller).
fn write_sort_number(text: &str, out: &mut Vec<u8>) {
    let normal = normalize_number(text);
    let (negative, unsigned) = match normal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, normal.as_str()),
    };
    let (whole, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let whole = whole.trim_start_matches('0');
    let digits = format!("{whole}{frac}");
    let significant = digits.trim_start_matches('0');
    let significant = significant.trim_end_matches('0');
    if significant.is_empty() {
        out.push(0x80);
        return;
    }
    // Leading zeros of the fraction lower the exponent of 0.d₁d₂….
    let exponent =
        whole.len() as i64 - (digits.len() - digits.trim_start_matches('0').len()) as i64;
    let exponent = (exponent.clamp(i32::MIN as i64, i32::MAX as i64) as i32 as u32) ^ 0x8000_0000;
    let flip = |b: u8| if negative { !b } else { b };
    out.push(if negative { 0x7F } else { 0x81 });
    out.extend(exponent.to_be_bytes().map(flip));
    out.extend(significant.bytes().map(flip));
    out.push(flip(0));
}

fn trim_leading_zeros(digits: &str) -> &str {
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() { "0" } else { trimmed }
}

/// A number's value as comparable text: `1`, `1.0` and `1e0` give the same key.
fn number_key(text: &str) -> String {
    let normal = normalize_number(text);
    match normal.split_once('.') {
        Some((whole, frac)) => {
            let frac = frac.trim_end_matches('0');
            let key = if frac.is_empty() {
                whole.to_string()
            } else {
                format!("{whole}.{frac}")
            };
            if key == "-0" { "0".into() } else { key }
        }
        None => normal,
    }
}

/// Reads JSON as RFC 8259 defines it (PostgreSQL accepts exactly that), nesting up to a
/// depth that keeps the stack safe.
struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
}

const MAX_DEPTH: usize = 1000;

/// The largest exponent a JSON number may have (numeric keeps at most 16383 fractional
/// digits; beyond that PostgreSQL overflows too).
const MAX_EXPONENT: u32 = 16383;

impl Parser<'_> {
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.bytes.get(self.pos).copied()
    }

    fn expect(&mut self, b: u8) -> Result<(), SyntaxError> {
        match self.peek() == Some(b) {
            true => {
                self.pos += 1;
                Ok(())
            }
            false => Err(SyntaxError),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(SyntaxError);
        }
        match self.peek().ok_or(SyntaxError)? {
            b'{' => {
                self.pos += 1;
                let mut members = Vec::new();
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                    return Ok(Json::Object(members));
                }
                loop {
                    if self.peek() != Some(b'"') {
                        return Err(SyntaxError);
                    }
                    let key = self.string()?;
                    self.expect(b':')?;
                    members.push((key, self.value(depth + 1)?));
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return Ok(Json::Object(members));
                        }
                        _ => return Err(SyntaxError),
                    }
                }
            }
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(Json::Array(items));
                        }
                        _ => return Err(SyntaxError),
                    }
                }
            }
            b'"' => Ok(Json::String(self.string()?)),
            b't' => self.word("true", Json::Bool(true)),
            b'f' => self.word("false", Json::Bool(false)),
            b'n' => self.word("null", Json::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(SyntaxError),
        }
    }

    fn word(&mut self, word: &str, value: Json) -> Result<Json, SyntaxError> {
        match self.bytes[self.pos..].starts_with(word.as_bytes()) {
            true => {
                self.pos += word.len();
                Ok(value)
            }
            false => Err(SyntaxError),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Json, SyntaxError> {
        let start = self.pos;
        if self.bytes[self.pos] == b'-' {
            self.pos += 1;
        }
        let int_start = self.pos;
        let int_digits = self.digits();
        if int_digits == 0 || (int_digits > 1 && self.bytes[int_start] == b'0') {
            return Err(SyntaxError);
        }
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(SyntaxError);
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            let exponent_start = self.pos;
            if self.digits() == 0 {
                return Err(SyntaxError);
            }
            // numeric's own limits: normalizing writes the number out in plain digits.
            let exponent = std::str::from_utf8(&self.bytes[exponent_start..self.pos])
                .ok()
                .and_then(|e| e.parse::<u32>().ok());
            if exponent.is_none_or(|e| e > MAX_EXPONENT) {
                return Err(SyntaxError);
            }
        }
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).map_err(|_| SyntaxError)?;
        Ok(Json::Number(text.to_string()))
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        self.pos += 1; // the opening quote
        let mut out = Vec::new();
        loop {
            let b = *self.bytes.get(self.pos).ok_or(SyntaxError)?;
            self.pos += 1;
            match b {
                b'"' => return String::from_utf8(out).map_err(|_| SyntaxError),
                b'\\' => {
                    let escape = *self.bytes.get(self.pos).ok_or(SyntaxError)?;
                    self.pos += 1;
                    let c = match escape {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return Err(SyntaxError),
                    };
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                0..0x20 => return Err(SyntaxError),
                _ => out.push(b),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, SyntaxError> {
        let hex = self.bytes.get(self.pos..self.pos + 4).ok_or(SyntaxError)?;
        let hex = std::str::from_utf8(hex).map_err(|_| SyntaxError)?;
        let value = u32::from_str_radix(hex, 16).map_err(|_| SyntaxError)?;
        self.pos += 4;
        Ok(value)
    }

    /// `\uXXXX`, a surrogate pair taking two of them.
    fn unicode_escape(&mut self) -> Result<char, SyntaxError> {
        let first = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&first) {
            if !self.bytes[self.pos..].starts_with(b"\\u") {
                return Err(SyntaxError);
            }
            self.pos += 2;
            let second = self.hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return Err(SyntaxError);
            }
            0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
        } else {
            first
        };
        char::from_u32(code).ok_or(SyntaxError)
    }
}

/// A member's key (`None` for an array element) and its text as written.
pub type RawChild<'a> = (Option<String>, &'a str);

/// The members or elements of a `json` text as the text they were written with, for `json`'s
/// `->`, which returns a part of its operand unchanged: `(key, text)` for an object's
/// members (key `None` for an array's elements). `None` when the text is a scalar.
pub fn raw_children(text: &str) -> Result<Option<Vec<RawChild<'_>>>, SyntaxError> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        pos: 0,
    };
    let object = match parser.peek() {
        Some(b'{') => true,
        Some(b'[') => false,
        _ => {
            Json::parse(text)?;
            return Ok(None);
        }
    };
    parser.pos += 1;
    let close = if object { b'}' } else { b']' };
    let mut children = Vec::new();
    if parser.peek() == Some(close) {
        parser.pos += 1;
    } else {
        loop {
            let key = if object {
                if parser.peek() != Some(b'"') {
                    return Err(SyntaxError);
                }
                let key = parser.string()?;
                parser.expect(b':')?;
                Some(key)
            } else {
                None
            };
            parser.skip_whitespace();
            let start = parser.pos;
            parser.value(1)?;
            children.push((key, &text[start..parser.pos]));
            match parser.peek() {
                Some(b',') => parser.pos += 1,
                Some(b) if b == close => {
                    parser.pos += 1;
                    break;
                }
                _ => return Err(SyntaxError),
            }
        }
    }
    parser.skip_whitespace();
    match parser.pos == text.len() {
        true => Ok(Some(children)),
        false => Err(SyntaxError),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jsonb(text: &str) -> String {
        Json::parse_jsonb(text).unwrap().to_jsonb_text()
    }

    #[test]
    fn sort_keys_follow_jsonb_order() {
        let key = |text: &str| Json::parse_jsonb(text).unwrap().sort_key();
        let ascending = [
            "[]",
            "null",
            "\"\"",
            "\"a\"",
            "\"ab\"",
            "-100",
            "-2.5",
            "-0.25",
            "-1e-9",
            "0",
            "1e-5",
            "0.001",
            "1",
            "99.99",
            "100",
            "1e20",
            "false",
            "true",
            "[null]",
            "[\"z\"]",
            "[2]",
            "[[]]",
            "[{}]",
            "[1, 2]",
            "{}",
            "{\"a\": [1]}",
            "{\"aa\": 1}",
            "{\"b\": 1}",
            "{\"a\": 1, \"b\": 2}",
        ];
        for pair in ascending.windows(2) {
            assert!(key(pair[0]) < key(pair[1]), "{} < {}", pair[0], pair[1]);
        }
        // Equal values, equal keys; a top-level scalar (a one-element pseudo-array) sorts
        // after [], before [x].
        assert_eq!(key("1.0"), key("1"));
        assert_eq!(key("-0"), key("0.00"));
        assert!(key("[]") < key("7") && key("7") < key("[0]"));
    }

    #[test]
    fn jsonb_normal_form() {
        for (input, normal) in [
            (r#"{"b":1,  "a":2}"#, r#"{"a": 2, "b": 1}"#),
            (r#"{"aa":1,"b":2,"a":3}"#, r#"{"a": 3, "b": 2, "aa": 1}"#),
            (r#"{"a":1,"a":2}"#, r#"{"a": 2}"#),
            ("[1,2,[3, {}]]", "[1, 2, [3, {}]]"),
            ("1e2", "100"),
            ("1.5e1", "15"),
            ("1.50", "1.50"),
            ("-1E-2", "-0.01"),
            ("-0", "0"),
            ("2.5e-1", "0.25"),
            (r#""a\u00e9\n\"""#, r#""aé\n\"""#),
            (r#""\ud83d\ude00""#, "\"\u{1F600}\""),
        ] {
            assert_eq!(jsonb(input), normal, "{input}");
        }
    }

    #[test]
    fn rejects_what_postgresql_rejects() {
        for bad in [
            "",
            "{",
            "[1,]",
            "{\"a\"}",
            "01",
            "1.",
            ".5",
            "+1",
            "tru",
            "'a'",
            "[1] x",
            "\"\t\"",
            "NaN",
            "{\"a\":1,}",
            "1e100000000000",
            "1e99999999999999999999",
        ] {
            assert_eq!(Json::parse(bad), Err(SyntaxError), "{bad:?}");
        }
    }

    #[test]
    fn containment_and_keys() {
        let doc = Json::parse_jsonb(r#"{"a": 1, "b": [1, 2, {"c": 3}], "d": {"e": "x"}}"#).unwrap();
        let contains = |text: &str| doc.contains(&Json::parse_jsonb(text).unwrap());
        assert!(contains(r#"{"a": 1.0}"#));
        assert!(contains(r#"{"b": [2, {"c": 3}]}"#));
        assert!(contains(r#"{"d": {}}"#));
        assert!(!contains(r#"{"a": 2}"#));
        assert!(!contains(r#"{"b": [3]}"#));
        assert!(
            Json::parse("[1, 2]")
                .unwrap()
                .contains(&Json::parse("2").unwrap())
        );
        assert!(doc.has_key("b") && !doc.has_key("c"));
    }

    #[test]
    fn paths_and_edits() {
        let doc = Json::parse_jsonb(r#"{"a": [10, 20, 30], "b": {"c": 1}}"#).unwrap();
        assert_eq!(doc.at_path(&["a", "-1"]), Some(&Json::Number("30".into())));
        assert_eq!(doc.at_path(&["b", "c", "d"]), None);
        let text = |j: Json| j.to_jsonb_text();
        assert_eq!(
            text(doc.clone().set_path(&["b", "z"], Json::Bool(true), true)),
            r#"{"a": [10, 20, 30], "b": {"c": 1, "z": true}}"#
        );
        assert_eq!(
            text(doc.clone().set_path(&["a", "9"], Json::Null, true)),
            r#"{"a": [10, 20, 30, null], "b": {"c": 1}}"#
        );
        assert_eq!(
            text(doc.clone().without_path(&["a", "0"])),
            r#"{"a": [20, 30], "b": {"c": 1}}"#
        );
        assert_eq!(text(doc.without_key("a")), r#"{"b": {"c": 1}}"#);
    }

    #[test]
    fn raw_children_keep_their_text() {
        let children = raw_children(r#"{"a":  [1,  2], "b" : "x" }"#)
            .unwrap()
            .unwrap();
        assert_eq!(
            children,
            vec![(Some("a".into()), "[1,  2]"), (Some("b".into()), "\"x\"")]
        );
        assert_eq!(raw_children("3").unwrap(), None);
        assert!(raw_children("[1,").is_err());
    }

    #[test]
    fn pretty() {
        let doc = Json::parse_jsonb(r#"{"a": [1, {}], "b": null}"#).unwrap();
        assert_eq!(
            doc.to_pretty_text(),
            "{\n    \"a\": [\n        1,\n        {\n        }\n    ],\n    \"b\": null\n}"
        );
    }
}
