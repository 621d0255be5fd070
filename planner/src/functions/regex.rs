//! PostgreSQL's regular-expression functions DataFusion lacks or has otherwise:
//! `regexp_matches`, `regexp_match`, `regexp_replace` (PostgreSQL's `\1` and `\&` in the replacement, where
//! DataFusion's also reads `$`), `regexp_split_to_array` (and, in `srf`, `regexp_split_to_table`), `substring(text FROM
//! pattern)`, and the pattern translation behind `SIMILAR TO`.
//!
//! Patterns are PostgreSQL's advanced regular expressions as the `regex` crate reads them:
//! PostgreSQL's word-boundary escapes (`\y`, `\m`, `\M`) become `\b`, and by default `.`
//! matches a newline, as there. Back-references and lookaround, which the crate does not
//! have, are refused with 2201B.

use super::row::{RowFunction, text};
use crate::error::Error;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{Signature, TypeSignature, Volatility};
use regex::Regex;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The helper `regexp_matches` is planned as: every match's texts, as a list of lists that
/// `unnest` turns into rows.
pub(crate) const MATCHES: &str = "partita_regexp_matches";
/// The helper `substring(text FROM pattern)` is planned as.
pub(crate) const SUBSTRING: &str = "partita_substring_regex";
/// The helper `SIMILAR TO` is planned as: the SQL pattern as a regular expression.
pub(crate) const SIMILAR: &str = "partita_similar_regex";
/// The character an `ESCAPE` string gives: none for `''`; more than one is 22025.
fn escape_char(escape: &str) -> crate::error::Result<Option<char>> {
    let mut chars = escape.chars();
    match (chars.next(), chars.next()) {
        (None, _) => Ok(None),
        (Some(c), None) => Ok(Some(c)),
        _ => Err(Error::InvalidEscape("invalid escape string".into())),
    }
}

/// The helper `LIKE … ESCAPE 'c'` is planned with: the pattern with `\` as its escape.
pub(crate) const LIKE_ESCAPE: &str = "partita_like_escape";

/// A LIKE pattern whose escape character is `escape` (none for `ESCAPE ''`) written with
/// the backslash DataFusion's LIKE takes: `a!%` with `!` is `a\%`, a backslash itself `\\`.
pub(crate) fn backslash_pattern(pattern: &str, escape: &str) -> crate::error::Result<String> {
    let escape = escape_char(escape)?;
    let mut out = String::with_capacity(pattern.len() + 2);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            // An escape at the end matches nothing, as in PostgreSQL: it stands for a NUL,
            // which no text holds.
            out.push('\\');
            out.push(chars.next().unwrap_or('\0'));
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

pub(super) fn register(ctx: &SessionContext) {
    ctx.register_udf(RowFunction::strict(
        LIKE_ESCAPE,
        Signature::string(2, Volatility::Immutable),
        DataType::Utf8,
        |args| {
            let (Some(pattern), Some(escape)) = (text(&args[0]), text(&args[1])) else {
                return Ok(ScalarValue::Utf8(None));
            };
            backslash_pattern(pattern, escape)
                .map(|p| ScalarValue::Utf8(Some(p)))
                .map_err(external)
        },
    ));
    let pattern_args = || {
        Signature::one_of(
            vec![TypeSignature::String(2), TypeSignature::String(3)],
            Volatility::Immutable,
        )
    };
    let texts = DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true)));
    let cache = Arc::new(Compiled::default());
    let compiled = Arc::clone(&cache);
    ctx.register_udf(RowFunction::strict(
        MATCHES,
        pattern_args(),
        DataType::List(Arc::new(Field::new_list_field(texts.clone(), true))),
        move |args| {
            let (subject, options) = read(&compiled, args)?;
            let regex = &options.regex;
            let mut rows = Vec::new();
            for captures in regex.captures_iter(subject) {
                let texts: Vec<ScalarValue> = if regex.captures_len() == 1 {
                    vec![ScalarValue::Utf8(Some(captures[0].to_string()))]
                } else {
                    (1..regex.captures_len())
                        .map(|i| ScalarValue::Utf8(captures.get(i).map(|m| m.as_str().into())))
                        .collect()
                };
                rows.push(ScalarValue::List(ScalarValue::new_list_nullable(
                    &texts,
                    &DataType::Utf8,
                )));
                if !options.global {
                    break;
                }
            }
            let inner = DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true)));
            Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &rows, &inner,
            )))
        },
    ));
    // The first match's texts, NULL for a group that took no part (DataFusion's own
    // leaves such a group out, so later groups move down); NULL when nothing matches.
    let compiled = Arc::clone(&cache);
    ctx.register_udf(RowFunction::strict(
        "regexp_match",
        pattern_args(),
        texts.clone(),
        move |args| {
            let (subject, options) = read(&compiled, args)?;
            if options.global {
                return Err(external(Error::InvalidParameterValue(
                    "regexp_match() does not support the \"global\" option".into(),
                )));
            }
            let regex = &options.regex;
            let Some(captures) = regex.captures(subject) else {
                return Ok(ScalarValue::new_null_list(DataType::Utf8, true, 1));
            };
            let texts: Vec<ScalarValue> = match regex.captures_len() {
                1 => vec![ScalarValue::Utf8(Some(captures[0].to_string()))],
                n => (1..n)
                    .map(|i| ScalarValue::Utf8(captures.get(i).map(|m| m.as_str().into())))
                    .collect(),
            };
            Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &texts,
                &DataType::Utf8,
            )))
        },
    ));
    let compiled = Arc::clone(&cache);
    ctx.register_udf(RowFunction::strict(
        "regexp_split_to_array",
        pattern_args(),
        texts,
        move |args| {
            let (subject, options) = read(&compiled, args)?;
            if options.global {
                return Err(external(Error::InvalidParameterValue(
                    "regexp_split_to_array() does not support the \"global\" option".into(),
                )));
            }
            let parts: Vec<ScalarValue> = split(&options.regex, subject)
                .into_iter()
                .map(|p| ScalarValue::Utf8(Some(p.to_string())))
                .collect();
            Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &parts,
                &DataType::Utf8,
            )))
        },
    ));
    let compiled = Arc::clone(&cache);
    ctx.register_udf(RowFunction::strict(
        "regexp_replace",
        Signature::one_of(
            vec![TypeSignature::String(3), TypeSignature::String(4)],
            Volatility::Immutable,
        ),
        DataType::Utf8,
        move |args| {
            let subject = text(&args[0]).unwrap_or_default();
            let pattern = text(&args[1]).unwrap_or_default();
            let replacement = text(&args[2]).unwrap_or_default();
            let flags = args.get(3).and_then(text).unwrap_or_default();
            let options = compiled.get(pattern, flags).map_err(external)?;
            Ok(ScalarValue::Utf8(Some(replace(
                &options,
                subject,
                replacement,
            ))))
        },
    ));
    let compiled = Arc::clone(&cache);
    ctx.register_udf(RowFunction::strict(
        SUBSTRING,
        Signature::one_of(vec![TypeSignature::String(2)], Volatility::Immutable),
        DataType::Utf8,
        move |args| {
            let (subject, options) = read(&compiled, args)?;
            let Some(captures) = options.regex.captures(subject) else {
                return Ok(ScalarValue::Utf8(None));
            };
            // The first parenthesized part when there is one, else the whole match.
            let part = match options.regex.captures_len() {
                1 => captures.get(0),
                _ => captures.get(1),
            };
            Ok(ScalarValue::Utf8(part.map(|m| m.as_str().to_string())))
        },
    ));
    ctx.register_udf(RowFunction::strict(
        SIMILAR,
        Signature::one_of(
            vec![TypeSignature::String(1), TypeSignature::String(2)],
            Volatility::Immutable,
        ),
        DataType::Utf8,
        |args| {
            let pattern = text(&args[0]).unwrap_or_default();
            let escape = match args.get(1) {
                None => Some('\\'),
                Some(e) => escape_char(text(e).unwrap_or_default()).map_err(external)?,
            };
            Ok(ScalarValue::Utf8(Some(similar_to_regex(pattern, escape))))
        },
    ));
}

fn external(e: Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// A compiled pattern with the flags it was written with.
struct Options {
    regex: Regex,
    global: bool,
}

/// Patterns compiled so far, by pattern and flags (a column of patterns compiles each
/// distinct one once).
#[derive(Default)]
struct Compiled(Mutex<HashMap<(String, String), Arc<Options>>>);

/// Patterns kept before the cache starts over.
const CACHED_PATTERNS: usize = 256;

impl Compiled {
    fn get(&self, pattern: &str, flags: &str) -> Result<Arc<Options>, Error> {
        let key = (pattern.to_string(), flags.to_string());
        if let Some(found) = self.0.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(Arc::clone(found));
        }
        let options = Arc::new(compile(pattern, flags)?);
        let mut cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHED_PATTERNS {
            cache.clear();
        }
        cache.insert(key, Arc::clone(&options));
        Ok(options)
    }
}

/// The subject text and compiled pattern of a `(subject, pattern[, flags])` call.
fn read<'a>(cache: &Compiled, args: &'a [ScalarValue]) -> Result<(&'a str, Arc<Options>)> {
    let subject = text(&args[0]).unwrap_or_default();
    let pattern = text(&args[1]).unwrap_or_default();
    let flags = args.get(2).and_then(text).unwrap_or_default();
    let options = cache.get(pattern, flags).map_err(external)?;
    Ok((subject, options))
}

/// Compiles a PostgreSQL pattern with PostgreSQL's flags.
fn compile(pattern: &str, flags: &str) -> Result<Options, Error> {
    let mut global = false;
    let mut insensitive = false;
    let mut dot_newline = true;
    let mut multi_line = false;
    let mut extended = false;
    let mut literal = false;
    for flag in flags.chars() {
        match flag {
            'g' => global = true,
            'i' => insensitive = true,
            'c' => insensitive = false,
            'n' | 'm' => (dot_newline, multi_line) = (false, true),
            'p' => (dot_newline, multi_line) = (false, false),
            'w' => (dot_newline, multi_line) = (true, true),
            's' => (dot_newline, multi_line) = (true, false),
            'x' => extended = true,
            't' => extended = false,
            'q' => literal = true,
            'e' => {}
            other => {
                return Err(Error::InvalidParameterValue(format!(
                    "invalid regular expression option: \"{other}\""
                )));
            }
        }
    }
    let body = if literal {
        regex::escape(pattern)
    } else {
        translate(pattern)?
    };
    let regex = regex::RegexBuilder::new(&body)
        .case_insensitive(insensitive)
        .dot_matches_new_line(dot_newline)
        .multi_line(multi_line)
        .ignore_whitespace(extended)
        .build()
        .map_err(|e| Error::InvalidRegex(first_line(&e.to_string())))?;
    Ok(Options { regex, global })
}

fn first_line(message: &str) -> String {
    message
        .lines()
        .rfind(|l| l.trim_start().starts_with("error:"))
        .map(|l| {
            l.trim_start()
                .trim_start_matches("error:")
                .trim()
                .to_string()
        })
        .unwrap_or_else(|| message.lines().next().unwrap_or_default().to_string())
}

/// PostgreSQL's escapes the `regex` crate spells differently.
fn translate(pattern: &str) -> Result<String, Error> {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('y' | 'm' | 'M') => out.push_str("\\b"),
            Some('Y') => out.push_str("\\B"),
            Some('Z') => out.push_str("\\z"),
            Some(d @ '1'..='9') => {
                return Err(Error::InvalidRegex(format!(
                    "back-reference \\{d} is not supported"
                )));
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    Ok(out)
}

/// `regexp_replace`: the first match (every match with the `g` flag) replaced, where in the
/// replacement `\1`…`\9` stand for a parenthesized part, `\&` for the whole match and `\\`
/// for a backslash; everything else, `$` included, is itself.
fn replace(options: &Options, subject: &str, replacement: &str) -> String {
    let mut out = String::with_capacity(subject.len());
    let mut last = 0;
    for captures in options.regex.captures_iter(subject) {
        let whole = captures.get(0).expect("a match has its whole text");
        out.push_str(&subject[last..whole.start()]);
        let mut chars = replacement.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.peek().copied() {
                Some(d @ '1'..='9') => {
                    chars.next();
                    let group = d.to_digit(10).unwrap_or_default() as usize;
                    out.push_str(captures.get(group).map_or("", |m| m.as_str()));
                }
                Some('&') => {
                    chars.next();
                    out.push_str(whole.as_str());
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            }
        }
        last = whole.end();
        if !options.global {
            break;
        }
    }
    out.push_str(&subject[last..]);
    out
}

/// `regexp_split_to_array`'s pieces: the text between matches, where a match of no text at
/// the start or end, or right after another match, does not split.
fn split<'a>(regex: &Regex, subject: &'a str) -> Vec<&'a str> {
    let mut parts = Vec::new();
    let mut last = 0;
    for m in regex.find_iter(subject) {
        if m.is_empty() && (m.start() == 0 || m.start() == subject.len() || m.start() == last) {
            continue;
        }
        parts.push(&subject[last..m.start()]);
        last = m.end();
    }
    parts.push(&subject[last..]);
    parts
}

/// The regular expression a `SIMILAR TO` pattern means: the whole text must match; `%` is
/// any text, `_` any character, the `regex` metacharacters `. ^ $` are literal, and the
/// escape character makes the next character literal.
fn similar_to_regex(pattern: &str, escape: Option<char>) -> String {
    // `%` and `_` match line breaks too.
    let mut out = String::from("(?s)^(?:");
    let mut chars = pattern.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            match chars.next() {
                Some(next) => out.push_str(&regex::escape(&next.to_string())),
                None => out.push_str(&regex::escape(&c.to_string())),
            }
            continue;
        }
        if in_class {
            if c == ']' {
                in_class = false;
            }
            if c == '\\' {
                out.push('\\');
            }
            out.push(c);
            continue;
        }
        match c {
            '%' => out.push_str(".*"),
            '_' => out.push('.'),
            '[' => {
                in_class = true;
                out.push(c);
            }
            '.' | '^' | '$' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push_str(")$");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(pattern: &str, subject: &str) -> Vec<String> {
        let options = compile(pattern, "").unwrap();
        split(&options.regex, subject)
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn splitting_follows_postgres() {
        assert_eq!(parts(",", "a,b,,c"), ["a", "b", "", "c"]);
        assert_eq!(parts("", "abc"), ["a", "b", "c"]);
        assert_eq!(parts("x*", "axb"), ["a", "b"]);
        assert_eq!(parts("\\s+", "the quick  fox"), ["the", "quick", "fox"]);
    }

    #[test]
    fn replacement_reads_postgres_escapes() {
        let replaced = |pattern: &str, flags: &str, subject: &str, replacement: &str| {
            replace(&compile(pattern, flags).unwrap(), subject, replacement)
        };
        assert_eq!(replaced("b", "", "abcb", "$1x"), "a$1xcb");
        assert_eq!(replaced("(b)", "g", "abcb", "\\1\\1"), "abbcbb");
        assert_eq!(replaced("b+", "", "abbc", "<\\&>"), "a<bb>c");
        assert_eq!(replaced("b", "", "abc", "\\\\\\x"), "a\\\\xc");
        assert_eq!(replaced("(x)?b", "", "abc", "[\\1]"), "a[]c");
    }

    #[test]
    fn flags_and_escapes() {
        assert!(compile("a.b", "").unwrap().regex.is_match("a\nb"));
        assert!(!compile("a.b", "n").unwrap().regex.is_match("a\nb"));
        assert!(compile("\\yfox\\y", "i").unwrap().regex.is_match("The FOX"));
        assert!(compile("a", "z").is_err());
        assert!(compile("(a)\\1", "").is_err());
        assert!(compile("a.c", "q").unwrap().regex.is_match("xa.c"));
    }

    #[test]
    fn similar_to_patterns_become_anchored_regexes() {
        let matches = |p: &str, s: &str| {
            Regex::new(&similar_to_regex(p, Some('\\')))
                .unwrap()
                .is_match(s)
        };
        assert!(matches("a%", "abc"));
        assert!(!matches("b%", "abc"));
        assert!(matches("%(b|d)%", "abc"));
        assert!(matches("a_c", "abc"));
        assert!(!matches("a.c", "abc"));
        assert!(matches("a\\%", "a%"));
        assert!(!matches("a\\%", "ab"));
        assert!(matches("[a-c]+", "cab"));
        assert!(matches("a%", "a\nb"));
    }
}
