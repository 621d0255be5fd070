//! Simple-query auto-parameterization: a SELECT's text with its integer and string literals
//! replaced by `$1`, `$2`, …, so that `SELECT … WHERE tenant = 7 AND id = 42` and the same
//! query with other values share one point plan (see `Session::execute_simple_point`).
//!
//! The lexer is deliberately narrow: anything it does not fully understand (comments,
//! dollar quotes, prefixed strings such as `E'…'`, decimals, several statements) gives
//! `None`, and the text takes the general path unchanged. It never decides what the query
//! means; the parameterized text is parsed and recognised like any prepared statement.

use crate::session::Param;
use sql::SqlType;

/// The text with its literals as placeholders, and the literals as parameters: integers
/// as bigint, strings untyped (PostgreSQL's unknown literals). `None` when the text is not
/// a lone SELECT the lexer understands.
pub fn parameterize(text: &str) -> Option<(String, Vec<Param>)> {
    let text = text.trim_end_matches(|c: char| c.is_ascii_whitespace() || c == ';');
    let start = text.trim_start();
    if !start
        .get(..6)
        .is_some_and(|w| w.eq_ignore_ascii_case("select"))
    {
        return None;
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 8);
    let mut params = Vec::new();
    let mut copied = 0; // bytes of `text` before this index are in `out` or replaced
    let mut i = 0;
    let word_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
    while i < bytes.len() {
        let b = bytes[i];
        let after_word = i > 0 && (word_byte(bytes[i - 1]) || bytes[i - 1] == b'&');
        match b {
            b'\'' => {
                if after_word {
                    return None; // E'…', B'…', X'…', N'…', U&'…'
                }
                let (value, end) = quoted(bytes, i, b'\'')?;
                // Adjacent string constants continue each other: leave those alone.
                if bytes[end..]
                    .iter()
                    .find(|c| !c.is_ascii_whitespace())
                    .is_some_and(|&c| c == b'\'')
                {
                    return None;
                }
                out.push_str(&text[copied..i]);
                params.push(Param {
                    value: Some(value),
                    ty: None,
                });
                out.push('$');
                out.push_str(&params.len().to_string());
                copied = end;
                i = end;
            }
            b'"' => i = quoted(bytes, i, b'"')?.1,
            b'0'..=b'9' if !after_word => {
                let end = i + bytes[i..].iter().take_while(|c| c.is_ascii_digit()).count();
                if bytes.get(end).is_some_and(|&c| word_byte(c) || c == b'.') {
                    return None; // decimals, exponents, 0x…, 1_000
                }
                let digits = &text[i..end];
                digits.parse::<i64>().ok()?;
                out.push_str(&text[copied..i]);
                params.push(Param {
                    value: Some(digits.to_string()),
                    ty: Some(SqlType::Int8),
                });
                out.push('$');
                out.push_str(&params.len().to_string());
                copied = end;
                i = end;
            }
            b'$' | b';' | b'\\' => return None,
            b'-' if bytes.get(i + 1) == Some(&b'-') => return None,
            b'/' if bytes.get(i + 1) == Some(&b'*') => return None,
            b'.' if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => return None,
            _ => i += 1,
        }
    }
    if params.is_empty() {
        return None;
    }
    out.push_str(&text[copied..]);
    Some((out, params))
}

/// The content of the quoted token starting at `start` (doubled quotes unescaped) and the
/// index just past it; `None` when it does not end.
fn quoted(bytes: &[u8], start: usize, quote: u8) -> Option<(String, usize)> {
    let mut content = Vec::new();
    let mut i = start + 1;
    loop {
        match *bytes.get(i)? {
            c if c == quote => {
                if bytes.get(i + 1) == Some(&quote) {
                    content.push(quote);
                    i += 2;
                } else {
                    return Some((String::from_utf8(content).ok()?, i + 1));
                }
            }
            c => {
                content.push(c);
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(params: &[Param]) -> Vec<(&str, bool)> {
        params
            .iter()
            .map(|p| (p.value.as_deref().unwrap(), p.ty.is_some()))
            .collect()
    }

    #[test]
    fn literals_become_placeholders() {
        let (text, params) =
            parameterize("SELECT name FROM reg WHERE tenant = 42 AND id = 'it''s';").unwrap();
        assert_eq!(text, "SELECT name FROM reg WHERE tenant = $1 AND id = $2");
        assert_eq!(values(&params), vec![("42", true), ("it's", false)]);
    }

    #[test]
    fn identifiers_keep_their_digits() {
        let (text, params) = parameterize("select c1, \"x 2\" from t9 where t9.k2 = 7").unwrap();
        assert_eq!(text, "select c1, \"x 2\" from t9 where t9.k2 = $1");
        assert_eq!(values(&params), vec![("7", true)]);
    }

    #[test]
    fn anything_unusual_is_left_alone() {
        for text in [
            "SELECT 1; SELECT 2",
            "SELECT * FROM t WHERE k = 1.5",
            "SELECT * FROM t WHERE k = 1e3",
            "SELECT * FROM t WHERE k = E'a\\n'",
            "SELECT * FROM t WHERE k = 'a' 'b'",
            "SELECT * FROM t WHERE k = 1 -- one",
            "SELECT * FROM t WHERE k = /* one */ 1",
            "SELECT * FROM t WHERE k = $$a$$",
            "SELECT * FROM t WHERE k = 'open",
            "SELECT * FROM t WHERE k = 99999999999999999999",
            "SELECT * FROM t",
            "INSERT INTO t VALUES (1)",
        ] {
            assert!(parameterize(text).is_none(), "{text}");
        }
    }
}
