//! Text functions for building SQL and messages: `format`, `quote_ident`, `quote_literal`
//! (`quote_nullable` and the text of `format`'s arguments are in `rewrite`).

use super::row::{RowFunction, text};
use crate::error::Error;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{Signature, Volatility};

pub(super) fn register(ctx: &SessionContext) {
    ctx.register_udf(datafusion::logical_expr::ScalarUDF::new_from_impl(
        crate::output::OutputText::default(),
    ));
    let utf8 = |s: String| ScalarValue::Utf8(Some(s));
    ctx.register_udf(RowFunction::strict(
        "quote_ident",
        Signature::string(1, Volatility::Immutable),
        DataType::Utf8,
        move |args| Ok(utf8(quote_ident(text(&args[0]).unwrap_or_default()))),
    ));
    ctx.register_udf(RowFunction::strict(
        "quote_literal",
        Signature::string(1, Volatility::Immutable),
        DataType::Utf8,
        move |args| Ok(utf8(quote_literal(text(&args[0]).unwrap_or_default()))),
    ));
    // Not strict: NULL arguments format as empty text or NULL; only a NULL template
    // makes the result NULL.
    ctx.register_udf(RowFunction::lenient(
        "format",
        Signature::variadic_any(Volatility::Stable),
        DataType::Utf8,
        |args| {
            let Some(template) = text(&args[0]) else {
                return Ok(ScalarValue::Utf8(None));
            };
            let values: Vec<Option<&str>> = args[1..].iter().map(text).collect();
            format(template, &values)
                .map(|s| ScalarValue::Utf8(Some(s)))
                .map_err(|e| DataFusionError::External(Box::new(e)))
        },
    ));
}

/// PostgreSQL's keywords that cannot be a bare column name: the reserved,
/// column-name and type-or-function-name keywords, which `quote_ident` quotes.
const QUOTED_KEYWORDS: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "both",
    "case",
    "cast",
    "char",
    "character",
    "check",
    "coalesce",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "dec",
    "decimal",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "exists",
    "extract",
    "false",
    "fetch",
    "float",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "greatest",
    "group",
    "grouping",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "inout",
    "int",
    "integer",
    "intersect",
    "interval",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "least",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "not",
    "notnull",
    "null",
    "nullif",
    "numeric",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "placing",
    "position",
    "precision",
    "primary",
    "real",
    "references",
    "returning",
    "right",
    "row",
    "select",
    "session_user",
    "setof",
    "similar",
    "smallint",
    "some",
    "substring",
    "symmetric",
    "table",
    "tablesample",
    "then",
    "time",
    "timestamp",
    "to",
    "trailing",
    "treat",
    "trim",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "values",
    "varchar",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
    "xmlattributes",
    "xmlconcat",
    "xmlelement",
    "xmlexists",
    "xmlforest",
    "xmlnamespaces",
    "xmlparse",
    "xmlpi",
    "xmlroot",
    "xmlserialize",
    "xmltable",
];

/// The widest `format` field: PostgreSQL's limit on a text value's length in bytes (1 GB)
/// would let one call take that much memory; this is 10 MB.
const MAX_WIDTH: u64 = 10 << 20;

/// `name` as an SQL identifier: bare when it can be, else double-quoted.
pub(crate) fn quote_ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !QUOTED_KEYWORDS.contains(&name);
    if plain {
        return name.to_string();
    }
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `value` as an SQL string literal; with backslashes, as an `E''` literal.
fn quote_literal(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    if value.contains('\\') {
        out.push('E');
    }
    out.push('\'');
    for c in value.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// PostgreSQL's `format(template, values…)`: `%s` (text, NULL as empty), `%I` (identifier),
/// `%L` (literal, NULL as `NULL`), `%%`; each with an optional `n$` position, a `-` flag
/// and a width (a number, `*` or `*n$` taking it from the arguments).
fn format(template: &str, values: &[Option<&str>]) -> Result<String, Error> {
    let bad = |m: String| Error::InvalidParameterValue(m);
    let mut out = String::with_capacity(template.len());
    let mut chars = template.chars().peekable();
    // The next argument an unnumbered specifier takes.
    let mut next = 0usize;
    let take = |index: usize| -> Result<Option<&str>, Error> {
        values
            .get(index)
            .copied()
            .ok_or_else(|| bad("too few arguments for format()".into()))
    };
    let unterminated = || bad("unterminated format() type specifier".into());
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        // `n$` (a position) or the start of a width.
        let number = |chars: &mut std::iter::Peekable<std::str::Chars>| {
            let mut n: Option<usize> = None;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                chars.next();
                n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as usize));
            }
            n
        };
        let mut position = None;
        let mut width: Option<i64> = None;
        let mut left = false;
        let first = number(&mut chars);
        if let Some(n) = first {
            if chars.peek() == Some(&'$') {
                chars.next();
                if n == 0 {
                    return Err(bad(
                        "format specifies argument 0, but arguments are numbered from 1".into(),
                    ));
                }
                position = Some(n - 1);
            } else {
                width = Some(n as i64);
            }
        }
        if width.is_none() {
            while chars.peek() == Some(&'-') {
                chars.next();
                left = true;
            }
            if chars.peek() == Some(&'*') {
                chars.next();
                let index = match number(&mut chars) {
                    Some(n) if chars.peek() == Some(&'$') => {
                        chars.next();
                        n.checked_sub(1).ok_or_else(|| {
                            bad(
                                "format specifies argument 0, but arguments are numbered from 1"
                                    .into(),
                            )
                        })?
                    }
                    Some(_) => return Err(unterminated()),
                    None => {
                        next += 1;
                        next - 1
                    }
                };
                let w = take(index)?
                    .map(|t| t.trim().parse::<i64>())
                    .transpose()
                    .map_err(|_| bad("width argument must be an integer".into()))?;
                width = w;
            } else {
                width = number(&mut chars).map(|n| n as i64);
            }
        }
        let Some(kind) = chars.next() else {
            return Err(unterminated());
        };
        let index = match position {
            Some(p) => {
                next = p + 1;
                p
            }
            None => {
                next += 1;
                next - 1
            }
        };
        let value = take(index)?;
        let formatted = match kind {
            's' => value.unwrap_or_default().to_string(),
            'I' => match value {
                Some(v) => quote_ident(v),
                None => {
                    return Err(Error::NullValueNotAllowed(
                        "null values cannot be formatted as an SQL identifier".into(),
                    ));
                }
            },
            'L' => value.map_or_else(|| "NULL".to_string(), quote_literal),
            other => {
                return Err(bad(format!(
                    "unrecognized format() type specifier \"{other}\""
                )));
            }
        };
        // A width beyond what a text value can hold is refused before padding to it.
        if width.is_some_and(|w| w.unsigned_abs() > MAX_WIDTH) {
            return Err(Error::NumericOverflow("number is out of range".into()));
        }
        // A negative width pads on the right, as `-` does.
        let (left, width) = match width {
            Some(w) if w < 0 => (true, w.unsigned_abs() as usize),
            Some(w) => (left, w as usize),
            None => (left, 0),
        };
        let pad = width.saturating_sub(formatted.chars().count());
        if !left {
            out.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(&formatted);
        if left {
            out.extend(std::iter::repeat_n(' ', pad));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_follows_postgres() {
        let f = |t: &str, v: &[Option<&str>]| format(t, v).unwrap();
        assert_eq!(f("%s-%s", &[Some("a"), Some("1")]), "a-1");
        assert_eq!(f("%I.%L", &[Some("Foo"), Some("o'x")]), "\"Foo\".'o''x'");
        assert_eq!(f("%L|%s|", &[None, None]), "NULL||");
        assert_eq!(f("%2$s %1$s %s", &[Some("a"), Some("b")]), "b a b");
        assert_eq!(
            f("[%5s][%-5s]", &[Some("ab"), Some("cd")]),
            "[   ab][cd   ]"
        );
        assert_eq!(f("[%*s]", &[Some("4"), Some("x")]), "[   x]");
        assert_eq!(f("100%%", &[]), "100%");
        assert!(format("%s %s", &[Some("a")]).is_err());
        assert!(format("%d", &[Some("1")]).is_err());
        assert!(format("%I", &[None]).is_err());
        assert!(format("%100000000000s", &[Some("x")]).is_err());
        assert!(format("%*s", &[Some("-100000000000"), Some("x")]).is_err());
    }

    #[test]
    fn identifiers_are_quoted_when_they_must_be() {
        assert_eq!(quote_ident("foo_1"), "foo_1");
        assert_eq!(quote_ident("Foo"), "\"Foo\"");
        assert_eq!(quote_ident("select"), "\"select\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_ident("a$b"), "\"a$b\"");
        assert_eq!(quote_literal("a\\b'"), "E'a\\\\b'''");
    }
}
