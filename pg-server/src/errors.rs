//! Every planner error as the PostgreSQL error a client expects: its SQLSTATE and wording
//! (`planner::sqlstate`), the fields drivers read (detail, hint, constraint, table), and the
//! position of the name or literal it is about.

use pgwire::error::{ErrorInfo, PgWireError};
use planner::Error;
use planner::sqlstate::{fields, message, sql_state};

fn info(code: &str, message: String) -> ErrorInfo {
    ErrorInfo::new("ERROR".to_owned(), code.to_owned(), message)
}

/// An unknown column's or relation's error (42703, 42P01) without a position gets the
/// position of the first place `sql` names it, as PostgreSQL points at it under the query's
/// line.
pub fn locate(e: PgWireError, sql: &str) -> PgWireError {
    let PgWireError::UserError(mut info) = e else {
        return e;
    };
    // The relation an ALTER statement names has no position in PostgreSQL, nor has the
    // column an ALTER TABLE action names (`column "c" of relation "t" does not exist`) or
    // a RENAME renames.
    let words: Vec<String> = sql
        .split_whitespace()
        .take(8)
        .map(str::to_ascii_lowercase)
        .collect();
    // An error inside a DO block is about one of its statements, not the DO's text.
    if words.first().is_some_and(|w| w == "do") {
        return PgWireError::UserError(info);
    }
    let altering = words.first().is_some_and(|w| w == "alter");
    let altering_table = altering && words.get(1).is_some_and(|w| w == "table");
    let unplaced = altering
        && (info.code == "42P01"
            || info.message.contains("\" of relation \"")
            || words.iter().any(|w| w == "rename"));
    if info.position.is_none()
        && (info.code == "42703" || info.code == "42P01")
        && !unplaced
        && let Some(position) = named_at(&info.message, sql)
    {
        info.position = Some(position.to_string());
    }
    // What ALTER COLUMN … TYPE's USING expression may not hold: PostgreSQL points at it.
    if info.position.is_none()
        && altering_table
        && (info.message.ends_with("in transform expression")
            || info.message.ends_with("in transform expressions"))
        && let Some(position) = using_at(sql)
    {
        info.position = Some(position.to_string());
    }
    // A string constant the type's input function refuses: PostgreSQL points at it.
    if info.position.is_none()
        && matches!(info.code.as_str(), "22P02" | "22003" | "22007" | "22008")
        && let Some(position) = literal_at(&info.message, sql)
    {
        info.position = Some(position.to_string());
    }
    PgWireError::UserError(info)
}

/// Where (in characters from 1) the expression after `sql`'s USING keyword starts.
fn using_at(sql: &str) -> Option<usize> {
    let lower = sql.to_ascii_lowercase();
    let at = lower.match_indices("using").map(|(i, _)| i).find(|&i| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + 5..].chars().next();
        before.is_some_and(char::is_whitespace) && after.is_some_and(char::is_whitespace)
    })?;
    let rest = &sql[at + 5..];
    let start = at + 5 + (rest.len() - rest.trim_start().len());
    Some(sql[..start].chars().count() + 1)
}

/// Where (in characters from 1) `sql` writes, as a string constant, the value an input
/// error quotes (`invalid input syntax for type numeric: "x1"`, `value "9e9" is out of range
/// for type integer`).
fn literal_at(message: &str, sql: &str) -> Option<usize> {
    let value = if let Some(rest) = message.strip_prefix("invalid input syntax for type ") {
        rest.split_once(": \"")?.1.strip_suffix('"')?
    } else if let Some(rest) = message.strip_prefix("date/time field value out of range: \"") {
        rest.strip_suffix('"')?
    } else {
        let rest = message.strip_prefix("value \"")?;
        rest.split_once("\" is out of range for type ")?.0
    };
    let literal = format!("'{}'", value.replace('\'', "''"));
    let at = sql.find(&literal)?;
    Some(sql[..at].chars().count() + 1)
}

/// Where (in characters from 1) `sql` first names the object `message` is about: `column
/// "c"`, `column t.c`, `relation "t"`. Text in quotes is skipped; bare words compare folded
/// to lower case, quoted identifiers exactly.
fn named_at(message: &str, sql: &str) -> Option<usize> {
    let rest = message
        .strip_prefix("column ")
        .or_else(|| message.strip_prefix("relation "))?;
    let name = rest.strip_suffix(" does not exist")?;
    // `column "c" of relation "t"` (an UPDATE's SET, an INSERT's column list).
    let name = name.split_once(" of relation ").map_or(name, |(c, _)| c);
    // `t.c` (a qualified column) or `"c"`: the words to find, in order.
    let words: Vec<String> = match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(quoted) => vec![quoted.to_string()],
        None => name.split('.').map(str::to_string).collect(),
    };
    let chars: Vec<char> = sql.chars().collect();
    // Each identifier of the text: where it starts, and its name.
    let mut idents: Vec<(usize, String)> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else if c == '"' {
            let start = i;
            let mut word = String::new();
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                word.push(chars[i]);
                i += 1;
            }
            i += 1;
            idents.push((start, word));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            let mut word = String::new();
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                word.extend(chars[i].to_lowercase());
                i += 1;
            }
            idents.push((start, word));
        } else if c == '-' && chars.get(i + 1) == Some(&'-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    idents
        .windows(words.len())
        .find(|w| w.iter().zip(&words).all(|((_, a), b)| a == b))
        .map(|w| w[0].0 + 1)
        .or_else(|| {
            // A relation named by a string the regclass type reads: `nextval('s')`.
            let literal = format!("'{}'", words.join("."));
            let at = sql.find(&literal)?;
            Some(sql[..at].chars().count() + 1)
        })
}

pub fn to_pg_error(e: &Error) -> PgWireError {
    let (e, position) = match e {
        Error::At { position, source } => (source.as_ref(), Some(*position)),
        e => (e, None),
    };
    let (e, context) = match e {
        Error::Context { context, source } => (source.as_ref(), Some(context.clone())),
        e => (e, None),
    };
    let code = sql_state(e);
    let mut err = info(code, message(e));
    let fields = fields(e);
    err.detail = fields.detail;
    err.hint = fields.hint;
    err.schema = fields.schema;
    err.table = fields.table;
    err.column = fields.column;
    err.constraint = fields.constraint;
    err.routine = fields.routine;
    err.where_context = context;
    err.position = position.map(|p| p.to_string());
    PgWireError::UserError(Box::new(err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_names_are_found_in_the_statement() {
        let at = |m: &str, sql: &str| named_at(m, sql);
        assert_eq!(
            at(
                "column \"nope\" does not exist",
                "select 'nope', nope from t"
            ),
            Some(16)
        );
        assert_eq!(
            at("column t.nope does not exist", "select nope, t.nope from t"),
            Some(14)
        );
        assert_eq!(
            at(
                "relation \"Big\" does not exist",
                "select * from big, \"Big\""
            ),
            Some(20)
        );
        assert_eq!(
            at(
                "column \"x\" of relation \"t\" does not exist",
                "-- x\nupdate t set x = 1"
            ),
            Some(19)
        );
    }
}
