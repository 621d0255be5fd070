//! Sequences: their options (CREATE SEQUENCE and ALTER SEQUENCE, or a serial or identity
//! column's), option lists read in any order as PostgreSQL's grammar takes them, and the
//! state a sequence steps through.
//!
//! A sequence's state is a pair (last value, called), as in PostgreSQL: `nextval` gives the
//! last value itself when it was not called yet (a new or restarted sequence, or after
//! `setval(s, v, false)`), otherwise the last value plus the increment, wrapping around with
//! CYCLE and failing at the bound without it.

use crate::error::{Error, Result};
use crate::types::SqlType;
use datafusion::sql::sqlparser::ast;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;
use serde::{Deserialize, Serialize};

/// A sequence's definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceOptions {
    /// smallint, integer or bigint: the values' type, which bounds the defaults.
    pub ty: SqlType,
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub cache: i64,
    pub cycle: bool,
}

/// One option as a statement gives it.
#[derive(Debug, Clone, PartialEq)]
pub enum SequenceOption {
    As(ast::DataType),
    Increment(i64),
    /// `MINVALUE n`, or `NO MINVALUE` (None).
    MinValue(Option<i64>),
    MaxValue(Option<i64>),
    Start(i64),
    /// `RESTART [WITH n]` (ALTER SEQUENCE): from n, or from the start value.
    Restart(Option<i64>),
    Cache(i64),
    Cycle(bool),
    /// `OWNED BY table.column`, or `OWNED BY NONE` (None).
    OwnedBy(Option<ast::ObjectName>),
}

/// Where an option list stands, which decides the options it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionsOf {
    Create,
    Alter,
    /// `GENERATED … AS IDENTITY (…)`.
    Identity,
}

/// The bounds of a sequence type's values.
fn type_bounds(ty: SqlType) -> (i64, i64) {
    match ty {
        SqlType::Int2 => (i64::from(i16::MIN), i64::from(i16::MAX)),
        SqlType::Int4 => (i64::from(i32::MIN), i64::from(i32::MAX)),
        _ => (i64::MIN, i64::MAX),
    }
}

/// The type a sequence takes its values' type from: a column's integer type, bigint otherwise.
pub fn sequence_type(ty: SqlType) -> SqlType {
    match ty {
        SqlType::Int2 | SqlType::Int4 => ty,
        _ => SqlType::Int8,
    }
}

impl SequenceOptions {
    /// A new sequence's options for values of type `ty`: ascending from 1 by 1, no cycle.
    pub fn of_type(ty: SqlType) -> SequenceOptions {
        let ty = sequence_type(ty);
        SequenceOptions {
            ty,
            start: 1,
            increment: 1,
            min: 1,
            max: type_bounds(ty).1,
            cache: 1,
            cycle: false,
        }
    }

    /// The type's name as `pg_sequences` and `information_schema.sequences` give it.
    pub fn type_name(&self) -> &'static str {
        match self.ty {
            SqlType::Int2 => "smallint",
            SqlType::Int4 => "integer",
            _ => "bigint",
        }
    }

    /// These options changed by `given` (a new sequence's over `SequenceOptions::of_type`,
    /// an altered one's over its present options), checked as PostgreSQL's `init_params`
    /// checks them. Also returns where a RESTART given puts the sequence.
    pub fn with(
        self,
        given: &[SequenceOption],
        is_new: bool,
    ) -> Result<(SequenceOptions, Option<i64>)> {
        let mut out = self;
        let (mut min, mut max, mut start, mut restart) = (None, None, None, None::<Option<i64>>);
        let mut new_type = None;
        for option in given {
            match option {
                SequenceOption::As(ty) => {
                    let ty = match SqlType::from_ast(ty) {
                        Ok(ty @ (SqlType::Int2 | SqlType::Int4 | SqlType::Int8)) => ty,
                        _ => {
                            return Err(Error::InvalidParameter(
                                "sequence type must be smallint, integer, or bigint".into(),
                            ));
                        }
                    };
                    new_type = Some(ty);
                }
                SequenceOption::Increment(n) => {
                    if *n == 0 {
                        return Err(Error::InvalidParameter("INCREMENT must not be zero".into()));
                    }
                    out.increment = *n;
                }
                SequenceOption::MinValue(n) => min = Some(*n),
                SequenceOption::MaxValue(n) => max = Some(*n),
                SequenceOption::Start(n) => start = Some(*n),
                SequenceOption::Restart(n) => restart = Some(*n),
                SequenceOption::Cache(n) => {
                    if *n < 1 {
                        return Err(Error::InvalidParameter(format!(
                            "CACHE ({n}) must be greater than zero"
                        )));
                    }
                    out.cache = *n;
                }
                SequenceOption::Cycle(c) => out.cycle = *c,
                SequenceOption::OwnedBy(_) => {}
            }
        }
        let ascending = out.increment > 0;
        // A bound left at its type's default follows a change of type (or direction, for a
        // new sequence).
        let (old_low, old_high) = type_bounds(self.ty);
        let ty = new_type.unwrap_or(self.ty);
        let (low, high) = type_bounds(ty);
        // As PostgreSQL's init_params: a bound at its old type's limit moves to the new
        // type's limit; other defaults follow the direction.
        let type_max = !is_new && new_type.is_some() && self.max == old_high;
        let type_min = !is_new && new_type.is_some() && self.min == old_low;
        out.ty = ty;
        out.max = match max {
            Some(Some(n)) => n,
            Some(None) => default_max(ascending || type_max, high),
            None if is_new || type_max => default_max(ascending || type_max, high),
            None => out.max,
        };
        out.min = match min {
            Some(Some(n)) => n,
            Some(None) => default_min(ascending && !type_min, low),
            None if is_new || type_min => default_min(ascending && !type_min, low),
            None => out.min,
        };
        let type_name = out.type_name();
        if out.max < low || out.max > high {
            return Err(Error::InvalidParameter(format!(
                "MAXVALUE ({}) is out of range for sequence data type {type_name}",
                out.max
            )));
        }
        if out.min < low || out.min > high {
            return Err(Error::InvalidParameter(format!(
                "MINVALUE ({}) is out of range for sequence data type {type_name}",
                out.min
            )));
        }
        if out.min >= out.max {
            return Err(Error::InvalidParameter(format!(
                "MINVALUE ({}) must be less than MAXVALUE ({})",
                out.min, out.max
            )));
        }
        out.start = match start {
            Some(n) => n,
            None if is_new => match ascending {
                true => out.min,
                false => out.max,
            },
            None => out.start,
        };
        bounded("START", out.start, &out)?;
        let restart = restart.map(|n| n.unwrap_or(out.start));
        if let Some(n) = restart {
            bounded("RESTART", n, &out)?;
        }
        Ok((out, restart))
    }
}

fn default_max(ascending: bool, high: i64) -> i64 {
    if ascending { high } else { -1 }
}

fn default_min(ascending: bool, low: i64) -> i64 {
    if ascending { 1 } else { low }
}

fn bounded(what: &str, n: i64, o: &SequenceOptions) -> Result<()> {
    if n < o.min {
        return Err(Error::InvalidParameter(format!(
            "{what} value ({n}) cannot be less than MINVALUE ({})",
            o.min
        )));
    }
    if n > o.max {
        return Err(Error::InvalidParameter(format!(
            "{what} value ({n}) cannot be greater than MAXVALUE ({})",
            o.max
        )));
    }
    Ok(())
}

/// The sequence a `regclass` text names, as PostgreSQL reads it: `s`, `public.s`,
/// `"MixedCase"`; unquoted names fold to lower case.
pub fn regclass_name(text: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut rest = text.trim();
    loop {
        let (part, after) = match rest.strip_prefix('"') {
            Some(quoted) => {
                let mut part = String::new();
                let mut end = quoted.len();
                let mut chars = quoted.char_indices().peekable();
                while let Some((i, c)) = chars.next() {
                    if c == '"' {
                        if chars.peek().is_some_and(|(_, n)| *n == '"') {
                            part.push('"');
                            chars.next();
                            continue;
                        }
                        end = i + 1;
                        break;
                    }
                    part.push(c);
                }
                (part, &quoted[end..])
            }
            None => {
                let end = rest.find('.').unwrap_or(rest.len());
                (rest[..end].trim().to_lowercase(), &rest[end..])
            }
        };
        parts.push(part);
        match after.trim_start().strip_prefix('.') {
            Some(next) => rest = next.trim_start(),
            None => break,
        }
    }
    match parts.as_slice() {
        [schema, name] if schema == "public" => name.clone(),
        _ => parts.join("."),
    }
}

/// Where a sequence stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequenceState {
    pub last: i64,
    /// Whether `last` was handed out: the next value is the one after it.
    pub called: bool,
}

impl SequenceState {
    /// A new or restarted sequence's: its next value is `from`.
    pub fn at(from: i64) -> SequenceState {
        SequenceState {
            last: from,
            called: false,
        }
    }

    /// The state after one more value, or None when the sequence has none left.
    pub fn next(self, o: &SequenceOptions) -> Option<SequenceState> {
        if !self.called {
            return Some(SequenceState {
                last: self.last,
                called: true,
            });
        }
        let next = i128::from(self.last) + i128::from(o.increment);
        let last = if next > i128::from(o.max) {
            o.cycle.then_some(o.min)?
        } else if next < i128::from(o.min) {
            o.cycle.then_some(o.max)?
        } else {
            next as i64
        };
        Some(SequenceState { last, called: true })
    }

    /// The error of a sequence `name` with no values left.
    pub fn exhausted(name: &str, o: &SequenceOptions) -> Error {
        let (bound, value) = match o.increment > 0 {
            true => ("maximum", o.max),
            false => ("minimum", o.min),
        };
        Error::SequenceLimit(format!(
            "nextval: reached {bound} value of sequence \"{name}\" ({value})"
        ))
    }

    /// The stored form: the last value, then 1 when it was called.
    pub fn encode(self) -> Vec<u8> {
        let mut bytes = self.last.to_be_bytes().to_vec();
        bytes.push(u8::from(self.called));
        bytes
    }

    /// Reads the stored form. Eight bytes alone are the first record format: the next value
    /// of an ascending sequence.
    pub fn decode(bytes: &[u8], name: &str) -> Result<SequenceState> {
        let corrupt = || Error::CorruptCatalog(format!("sequence \"{name}\" record"));
        let last = i64::from_be_bytes(
            bytes
                .get(..8)
                .ok_or_else(corrupt)?
                .try_into()
                .map_err(|_| corrupt())?,
        );
        match bytes.get(8) {
            None => Ok(SequenceState::at(last)),
            Some(&called) if bytes.len() == 9 => Ok(SequenceState {
                last,
                called: called == 1,
            }),
            Some(_) => Err(corrupt()),
        }
    }
}

/// Reads an option list (`INCREMENT BY 2 START 10 NO CYCLE …`, any order) from `parser`,
/// up to the first token that starts none. Returns each option with the parser's token
/// positions it spans.
pub fn parse_options(
    parser: &mut Parser,
    of: OptionsOf,
) -> Result<Vec<(SequenceOption, std::ops::Range<usize>)>, ParserError> {
    let mut options: Vec<(SequenceOption, std::ops::Range<usize>)> = Vec::new();
    loop {
        let start = parser.index();
        let Some(option) = parse_option(parser, of)? else {
            return Ok(options);
        };
        check_repeat(options.iter().map(|(o, _)| o), &option)?;
        options.push((option, start..parser.index()));
    }
}

/// PostgreSQL's error for an option given twice.
pub fn check_repeat<'a>(
    given: impl IntoIterator<Item = &'a SequenceOption>,
    option: &SequenceOption,
) -> Result<(), ParserError> {
    let same = |o: &SequenceOption| std::mem::discriminant(o) == std::mem::discriminant(option);
    match given.into_iter().any(same) {
        true => Err(ParserError::ParserError(REDUNDANT_OPTIONS.into())),
        false => Ok(()),
    }
}

/// Reads one option, or none when the next token starts none.
pub fn parse_option(
    parser: &mut Parser,
    of: OptionsOf,
) -> Result<Option<SequenceOption>, ParserError> {
    Ok(Some(if parser.parse_keyword(Keyword::AS) {
        SequenceOption::As(parser.parse_data_type()?)
    } else if parser.parse_keyword(Keyword::INCREMENT) {
        let _ = parser.parse_keyword(Keyword::BY);
        SequenceOption::Increment(signed(parser)?)
    } else if parser.parse_keyword(Keyword::MINVALUE) {
        SequenceOption::MinValue(Some(signed(parser)?))
    } else if parser.parse_keyword(Keyword::MAXVALUE) {
        SequenceOption::MaxValue(Some(signed(parser)?))
    } else if parser.parse_keywords(&[Keyword::NO, Keyword::MINVALUE]) {
        SequenceOption::MinValue(None)
    } else if parser.parse_keywords(&[Keyword::NO, Keyword::MAXVALUE]) {
        SequenceOption::MaxValue(None)
    } else if parser.parse_keywords(&[Keyword::NO, Keyword::CYCLE]) {
        SequenceOption::Cycle(false)
    } else if parser.parse_keyword(Keyword::CYCLE) {
        SequenceOption::Cycle(true)
    } else if parser.parse_keyword(Keyword::START) {
        let _ = parser.parse_keyword(Keyword::WITH);
        SequenceOption::Start(signed(parser)?)
    } else if of == OptionsOf::Alter && parser.parse_keyword(Keyword::RESTART) {
        let with = parser.parse_keyword(Keyword::WITH);
        let number = matches!(
            parser.peek_token().token,
            Token::Number(..) | Token::Minus | Token::Plus
        );
        SequenceOption::Restart(match with || number {
            true => Some(signed(parser)?),
            false => None,
        })
    } else if parser.parse_keyword(Keyword::CACHE) {
        SequenceOption::Cache(signed(parser)?)
    } else if of != OptionsOf::Identity && parser.parse_keywords(&[Keyword::OWNED, Keyword::BY]) {
        SequenceOption::OwnedBy(match parser.parse_keyword(Keyword::NONE) {
            true => None,
            false => Some(parser.parse_object_name(false)?),
        })
    } else {
        return Ok(None);
    }))
}

/// The error of an option given twice.
pub const REDUNDANT_OPTIONS: &str = "conflicting or redundant options";

/// A whole number, with its sign.
fn signed(parser: &mut Parser) -> Result<i64, ParserError> {
    let negative = match parser.peek_token().token {
        Token::Minus => {
            parser.next_token();
            true
        }
        Token::Plus => {
            parser.next_token();
            false
        }
        _ => false,
    };
    let token = parser.next_token();
    let Token::Number(digits, _) = &token.token else {
        return parser.expected("an integer", token);
    };
    let text = if negative {
        format!("-{digits}")
    } else {
        digits.clone()
    };
    text.parse::<i64>().map_err(|_| {
        ParserError::ParserError(match digits.bytes().all(|b| b.is_ascii_digit()) {
            true => format!("value \"{text}\" is out of range for type bigint"),
            false => format!("invalid input syntax for type bigint: \"{text}\""),
        })
    })
}

/// The options sqlparser's AST keeps (an identity column's), as the statement gave them.
pub fn from_ast(options: &[ast::SequenceOptions]) -> Result<Vec<SequenceOption>> {
    let number = |e: &ast::Expr| {
        let text = e.to_string().replace(' ', "");
        text.parse::<i64>().map_err(|_| {
            match text
                .trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit())
            {
                true => {
                    Error::OutOfRange(format!("value \"{text}\" is out of range for type bigint"))
                }
                false => {
                    Error::InvalidText(format!("invalid input syntax for type bigint: \"{text}\""))
                }
            }
        })
    };
    options
        .iter()
        .map(|o| {
            Ok(match o {
                ast::SequenceOptions::IncrementBy(e, _) => SequenceOption::Increment(number(e)?),
                ast::SequenceOptions::MinValue(e) => {
                    SequenceOption::MinValue(e.as_ref().map(number).transpose()?)
                }
                ast::SequenceOptions::MaxValue(e) => {
                    SequenceOption::MaxValue(e.as_ref().map(number).transpose()?)
                }
                ast::SequenceOptions::StartWith(e, _) => SequenceOption::Start(number(e)?),
                ast::SequenceOptions::Cache(e) => SequenceOption::Cache(number(e)?),
                // sqlparser's flag is "NO".
                ast::SequenceOptions::Cycle(no) => SequenceOption::Cycle(!no),
            })
        })
        .collect()
}

/// sqlparser's order of the options it reads after `AS IDENTITY (`: an option list in
/// another order is put in this one before sqlparser reads it.
pub fn ast_rank(option: &SequenceOption) -> Option<u8> {
    Some(match option {
        SequenceOption::Increment(_) => 0,
        SequenceOption::MinValue(_) => 1,
        SequenceOption::MaxValue(_) => 2,
        SequenceOption::Start(_) => 3,
        SequenceOption::Cache(_) => 4,
        SequenceOption::Cycle(_) => 5,
        SequenceOption::As(_) | SequenceOption::Restart(_) | SequenceOption::OwnedBy(_) => {
            return None;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(text: &str, of: OptionsOf) -> Vec<SequenceOption> {
        let dialect = datafusion::sql::sqlparser::dialect::PostgreSqlDialect {};
        let mut parser = Parser::new(&dialect).try_with_sql(text).unwrap();
        parse_options(&mut parser, of)
            .unwrap()
            .into_iter()
            .map(|(o, _)| o)
            .collect()
    }

    #[test]
    fn options_in_any_order() {
        let given = opts(
            "START WITH -100 INCREMENT BY -5 NO MINVALUE CYCLE CACHE 3",
            OptionsOf::Create,
        );
        assert_eq!(
            given,
            vec![
                SequenceOption::Start(-100),
                SequenceOption::Increment(-5),
                SequenceOption::MinValue(None),
                SequenceOption::Cycle(true),
                SequenceOption::Cache(3),
            ]
        );
        let (o, _) = SequenceOptions::of_type(SqlType::Int4)
            .with(&given, true)
            .unwrap();
        assert_eq!(
            (o.min, o.max, o.start, o.increment),
            (i64::from(i32::MIN), -1, -100, -5)
        );
    }

    #[test]
    fn defaults_follow_direction_and_type() {
        let given = opts("AS smallint INCREMENT -1", OptionsOf::Create);
        let (o, _) = SequenceOptions::of_type(SqlType::Int8)
            .with(&given, true)
            .unwrap();
        assert_eq!((o.min, o.max, o.start), (-32768, -1, -1));
        let err = SequenceOptions::of_type(SqlType::Int8)
            .with(
                &opts("AS smallint MAXVALUE 100000", OptionsOf::Create),
                true,
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "MAXVALUE (100000) is out of range for sequence data type smallint"
        );
    }

    #[test]
    fn steps_cycle_and_stop() {
        let (o, _) = SequenceOptions::of_type(SqlType::Int8)
            .with(&opts("MAXVALUE 3 CYCLE", OptionsOf::Create), true)
            .unwrap();
        let mut s = SequenceState::at(o.start);
        let mut seen = Vec::new();
        for _ in 0..5 {
            s = s.next(&o).unwrap();
            seen.push(s.last);
        }
        assert_eq!(seen, vec![1, 2, 3, 1, 2]);
        let stop = SequenceOptions { cycle: false, ..o };
        assert_eq!(
            SequenceState {
                last: 3,
                called: true
            }
            .next(&stop),
            None
        );
        assert_eq!(SequenceState::decode(&s.encode(), "s").unwrap(), s);
        assert_eq!(
            SequenceState::decode(&7i64.to_be_bytes(), "s").unwrap(),
            SequenceState::at(7)
        );
    }

    #[test]
    fn regclass_names_fold_unless_quoted() {
        assert_eq!(regclass_name("Person_SEQ"), "person_seq");
        assert_eq!(regclass_name("public.Person_SEQ"), "person_seq");
        assert_eq!(regclass_name("\"Person_SEQ\""), "Person_SEQ");
        assert_eq!(regclass_name("public.\"a.b\""), "a.b");
        let (o, _) = SequenceOptions::of_type(SqlType::Int4)
            .with(&opts("MINVALUE -2147483648", OptionsOf::Create), true)
            .unwrap();
        let (o, _) = o.with(&opts("AS bigint", OptionsOf::Alter), false).unwrap();
        assert_eq!((o.min, o.max), (i64::MIN, i64::MAX));
    }

    #[test]
    fn restart_only_in_alter_and_no_repeats() {
        assert_eq!(
            opts("RESTART WITH 5", OptionsOf::Alter),
            vec![SequenceOption::Restart(Some(5))]
        );
        assert_eq!(
            opts("RESTART", OptionsOf::Alter),
            vec![SequenceOption::Restart(None)]
        );
        assert!(opts("RESTART", OptionsOf::Create).is_empty());
        let dialect = datafusion::sql::sqlparser::dialect::PostgreSqlDialect {};
        let mut parser = Parser::new(&dialect)
            .try_with_sql("START 1 START 2")
            .unwrap();
        assert!(parse_options(&mut parser, OptionsOf::Create).is_err());
    }
}
