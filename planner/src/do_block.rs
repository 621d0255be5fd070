//! DO: PostgreSQL's anonymous PL/pgSQL blocks, as migrations write them. drizzle-kit wraps
//! each CREATE TYPE and foreign key in one (`DO $$ BEGIN … EXCEPTION WHEN duplicate_object
//! THEN null; END $$`), and hand-written migrations test the catalogs first (`IF NOT EXISTS
//! (SELECT 1 FROM pg_type …) THEN … END IF`).
//!
//! Nested blocks with EXCEPTION handlers (a handler undoes its block's work through a
//! savepoint, as PostgreSQL's subtransaction does), IF / ELSIF / ELSE, SQL statements,
//! PERFORM, EXECUTE of a string, RAISE at every level with USING options, ASSERT, NULL and
//! RETURN. Inside a handler `SQLSTATE` and `SQLERRM` are the caught error's code and message.
//!
//! Variables: DECLARE (a type, `record`, `t%ROWTYPE`, `t.c%TYPE`; CONSTANT, NOT NULL, a
//! default), `:=` assignment, `SELECT … INTO [STRICT] targets` and `… RETURNING … INTO`, and
//! FOUND. A variable keeps its value as its type's text and is put into each statement as a
//! constant of its type where the statement names it as a value (`v`, `r.field`), not where
//! it names a column to write or an alias. Loops: LOOP, WHILE, FOR over integers (REVERSE,
//! BY), over a query's rows and FOREACH over an array's elements, with EXIT and CONTINUE
//! [WHEN], of the innermost loop or of a `<<label>>`ed one (EXIT label leaves a labeled
//! block too). CASE statements, simple and searched (20000 when no arm matches and there is
//! no ELSE). `GET DIAGNOSTICS` (ROW_COUNT, PG_CONTEXT) and, in a handler, `GET STACKED
//! DIAGNOSTICS` (the error's SQLSTATE, message, detail, hint, table, column, constraint).
//! Cursors and EXECUTE … INTO are 0A000.
//!
//! The block runs in the session's transaction, or in one of its own that commits when the
//! block ends, so a DO is atomic as in PostgreSQL.

use crate::error::{Error, Result};
use crate::session::{Output, Session};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::DataType;
use datafusion::sql::sqlparser::ast::{self, Statement, VisitMut};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use futures::StreamExt;
use futures::future::BoxFuture;
use std::ops::Range;

/// The internal procedure a parsed DO statement calls, with the block's source text.
pub(crate) const DO_PROCEDURE: &str = "__partita_do";

/// Reads the rest of `DO [LANGUAGE name] 'code' [LANGUAGE name]` after DO.
pub(crate) fn parse(parser: &mut Parser) -> Result<Statement, ParserError> {
    let mut language = None;
    if parser.parse_keyword(Keyword::LANGUAGE) {
        language = Some(language_name(parser)?);
    }
    let token = parser.next_token();
    let code = match &token.token {
        Token::DollarQuotedString(s) => s.value.clone(),
        Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s) => s.clone(),
        _ => return parser.expected("a string constant", token),
    };
    if language.is_none() && parser.parse_keyword(Keyword::LANGUAGE) {
        language = Some(language_name(parser)?);
    }
    // The language goes first, so that the block's text is the call's last argument.
    let language = language.unwrap_or_else(|| "plpgsql".to_string());
    Ok(crate::session::internal_call(
        DO_PROCEDURE,
        &format!("{language}\n{code}"),
    ))
}

/// A LANGUAGE clause's name: an identifier or a string.
fn language_name(parser: &mut Parser) -> Result<String, ParserError> {
    if let Token::SingleQuotedString(name) = &parser.peek_token().token {
        let name = name.to_ascii_lowercase();
        parser.next_token();
        return Ok(name);
    }
    Ok(sql::ddl::normalize_ident(&parser.parse_identifier()?))
}

/// The language and code of a DO statement's call, if `call` is one.
pub(crate) fn code(call: &ast::Function) -> Option<(String, String)> {
    let text = crate::session::internal_call_text(call, DO_PROCEDURE)?;
    let (language, code) = text.split_once('\n')?;
    Some((language.to_string(), code.to_string()))
}

/// A block: `[DECLARE declarations] BEGIN steps [EXCEPTION WHEN … THEN steps …] END`.
struct Block {
    /// `<<label>>`: EXIT label leaves the block.
    label: Option<String>,
    declarations: Vec<Declaration>,
    steps: Vec<Step>,
    handlers: Vec<Handler>,
}

/// `name [CONSTANT] type [NOT NULL] [{DEFAULT | := | =} expression];`
struct Declaration {
    line: u64,
    name: String,
    ty: Declared,
    constant: bool,
    not_null: bool,
    default: Option<Range<usize>>,
}

/// A declared variable's type.
enum Declared {
    /// A type's name, as written.
    Type(String),
    /// `record`: a row of whatever shape is assigned to it.
    Record,
    /// `t%ROWTYPE`: a row of table t's columns.
    RowType(String),
    /// `t.c%TYPE`: column c's type.
    ColumnType(String, String),
}

/// What a loop goes over.
enum LoopKind {
    /// `LOOP`: until EXIT.
    Plain,
    /// `WHILE condition LOOP`.
    While(Range<usize>),
    /// `FOR name IN [REVERSE] low .. high [BY step] LOOP`, the bounds as text.
    Integer {
        name: String,
        reverse: bool,
        low: String,
        high: String,
        step: Option<String>,
    },
    /// `FOR targets IN query LOOP`.
    Query {
        targets: Vec<String>,
        query: Range<usize>,
    },
    /// `FOREACH name IN ARRAY expression LOOP`.
    Array { name: String, array: Range<usize> },
}

/// `WHEN condition [OR condition …] THEN steps`.
struct Handler {
    /// SQLSTATEs (a class's code catches the class); `None` is OTHERS.
    conditions: Vec<Option<String>>,
    steps: Vec<Step>,
}

/// One statement of a block, with the line it starts on (for the error's context).
struct Step {
    line: u64,
    kind: StepKind,
}

enum StepKind {
    /// A SQL statement, as a range of the code's tokens.
    Sql(Range<usize>),
    /// `PERFORM query`: a SELECT whose rows are thrown away.
    Perform(Range<usize>),
    /// `EXECUTE text-expression`.
    Execute(Range<usize>),
    If {
        arms: Vec<(Range<usize>, Vec<Step>)>,
        otherwise: Vec<Step>,
    },
    Raise(Raise),
    Assert {
        condition: Range<usize>,
        message: Option<Range<usize>>,
    },
    Block(Block),
    /// `target := expression;`, `record.field := expression;`.
    Assign {
        target: String,
        field: Option<String>,
        value: Range<usize>,
    },
    /// A statement with `INTO [STRICT] targets`, as the pieces around the INTO clause.
    Into {
        statement: Vec<Range<usize>>,
        targets: Vec<String>,
        strict: bool,
    },
    Loop {
        kind: LoopKind,
        body: Vec<Step>,
        /// `<<label>>`: EXIT or CONTINUE label reaches this loop from inner ones.
        label: Option<String>,
    },
    /// EXIT (`exit`) or CONTINUE, of the innermost loop or the one (or block) labeled so,
    /// when its condition holds.
    Exit {
        exit: bool,
        label: Option<String>,
        when: Option<Range<usize>>,
    },
    /// `CASE [subject] WHEN values-or-condition THEN steps … [ELSE steps] END CASE;`: each
    /// arm's values (a simple CASE's, each compared with the subject) or condition.
    Case {
        subject: Option<Range<usize>>,
        arms: Vec<(Vec<Range<usize>>, Vec<Step>)>,
        otherwise: Option<Vec<Step>>,
    },
    /// `GET [CURRENT | STACKED] DIAGNOSTICS target = item, …;`, on line `line`.
    Diagnostics {
        stacked: bool,
        items: Vec<(String, String)>,
        line: u64,
    },
    Null,
    Return,
}

impl StepKind {
    /// The statement's name in an error's context ("at SQL statement").
    fn name(&self) -> &'static str {
        match self {
            StepKind::Sql(_) => "SQL statement",
            StepKind::Perform(_) => "PERFORM",
            StepKind::Execute(_) => "EXECUTE",
            StepKind::If { .. } => "IF",
            StepKind::Raise(_) => "RAISE",
            StepKind::Assert { .. } => "ASSERT",
            StepKind::Block(_) => "statement block",
            StepKind::Assign { .. } => "assignment",
            StepKind::Into { .. } => "SQL statement",
            StepKind::Loop { kind, .. } => match kind {
                LoopKind::Plain => "LOOP",
                LoopKind::While(_) => "WHILE",
                LoopKind::Integer { .. } => "FOR with integer loop variable",
                LoopKind::Query { .. } => "FOR over SELECT rows",
                LoopKind::Array { .. } => "FOREACH over array",
            },
            StepKind::Case { .. } => "CASE",
            StepKind::Diagnostics { stacked: false, .. } => "GET DIAGNOSTICS",
            StepKind::Diagnostics { stacked: true, .. } => "GET STACKED DIAGNOSTICS",
            StepKind::Exit { exit: true, .. } => "EXIT",
            StepKind::Exit { exit: false, .. } => "CONTINUE",
            StepKind::Null => "NULL",
            StepKind::Return => "RETURN",
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Debug,
    Log,
    Info,
    Notice,
    Warning,
    Exception,
}

/// `RAISE [level] 'format' [, arg …] [USING option = expr, …]`, `RAISE [level] condition`,
/// `RAISE [level] SQLSTATE 'code'`, or `RAISE;` (again, in a handler).
struct Raise {
    level: Level,
    /// `RAISE;`: the handler's error again.
    again: bool,
    format: Option<String>,
    args: Vec<Range<usize>>,
    /// The SQLSTATE a condition name or SQLSTATE 'code' gave, and the text it is shown as
    /// when no message is given.
    condition: Option<(String, String)>,
    options: Vec<(String, Range<usize>)>,
}

/// What a step leaves to the steps after it.
enum Flow {
    Next,
    /// RETURN: the whole block ends.
    Return,
    /// EXIT: the innermost loop ends, or the loop or block with this label.
    Exit(Option<String>),
    /// CONTINUE: the innermost loop, or the loop with this label, goes on with its next
    /// round.
    Continue(Option<String>),
}

impl Flow {
    /// Whether this EXIT or CONTINUE is for the loop labeled `label` (or the innermost).
    fn targets(label: &Option<String>, target: &Option<String>) -> bool {
        target.is_none() || target == label
    }
}

/// The code's significant tokens, each with its byte offset and line.
struct Code {
    text: String,
    tokens: Vec<(Token, usize, u64)>,
}

/// The keywords a list of steps ends at (its block's, an IF's or a handler's end).
const ENDS: &[&str] = &["END", "ELSIF", "ELSEIF", "ELSE", "EXCEPTION", "WHEN"];

impl Code {
    fn read(text: &str) -> Result<Code> {
        let dialect = PostgreSqlDialect {};
        let tokens = Tokenizer::new(&dialect, text)
            .with_unescape(true)
            .tokenize_with_location()
            .map_err(|e| Error::Syntax(e.to_string()))?;
        let lines: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let offset = |line: u64, column: u64| -> usize {
            let start = lines
                .get((line as usize).saturating_sub(1))
                .copied()
                .unwrap_or(text.len());
            let rest = &text[start..];
            start
                + rest
                    .char_indices()
                    .nth((column as usize).saturating_sub(1))
                    .map_or(rest.len(), |(i, _)| i)
        };
        let tokens = tokens
            .into_iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
            .map(|t| {
                let at = offset(t.span.start.line, t.span.start.column);
                (t.token, at, t.span.start.line)
            })
            .collect();
        Ok(Code {
            text: text.to_string(),
            tokens,
        })
    }

    /// The text of tokens `range`, with `SQLSTATE` and `SQLERRM` replaced by `caught`'s
    /// values as string literals (inside a handler).
    fn text(&self, range: &Range<usize>, caught: Option<&(String, String)>) -> String {
        let end = |i: usize| self.tokens.get(i).map_or(self.text.len(), |(_, at, _)| *at);
        let mut out = String::new();
        let token = |i: Option<usize>| i.and_then(|i| self.tokens.get(i)).map(|(t, _, _)| t);
        for i in range.clone() {
            let (token_here, at, _) = &self.tokens[i];
            let piece = &self.text[*at..end(i + 1)];
            // A column or alias of that name (`t.sqlstate`, `AS sqlerrm`) stays.
            let before = token(i.checked_sub(1));
            let named = matches!(before, Some(Token::Period))
                || matches!(before, Some(Token::Word(w)) if w.keyword == Keyword::AS)
                || matches!(token(Some(i + 1)), Some(Token::Period));
            let replaced = match (token_here, caught) {
                (Token::Word(w), Some((code, message))) if w.quote_style.is_none() && !named => {
                    match w.value.to_ascii_lowercase().as_str() {
                        "sqlstate" => Some(code),
                        "sqlerrm" => Some(message),
                        _ => None,
                    }
                }
                _ => None,
            };
            match replaced {
                Some(value) => {
                    out.push_str(&format!("'{}'", value.replace('\'', "''")));
                    out.push_str(&piece[piece.trim_end().len()..]);
                }
                None => out.push_str(piece),
            }
        }
        out.trim_end().to_string()
    }
}

/// A word's name as SQL reads it: folded to lower case unless quoted.
fn word_name(w: &datafusion::sql::sqlparser::tokenizer::Word) -> String {
    sql::ddl::normalize_ident(&ast::Ident {
        value: w.value.clone(),
        quote_style: w.quote_style,
        span: datafusion::sql::sqlparser::tokenizer::Span::empty(),
    })
}

/// `text` cut at the first `separator` outside quotes.
fn split_outside_quotes<'t>(text: &'t str, separator: &str) -> Option<(&'t str, &'t str)> {
    let mut quote = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, _) if text[i..].starts_with(separator) => {
                return Some((&text[..i], &text[i + separator.len()..]));
            }
            _ => {}
        }
    }
    None
}

/// `text` cut around the word `word` (any case) outside quotes and parentheses.
fn split_word<'t>(text: &'t str, word: &str) -> Option<(&'t str, &'t str)> {
    let lower = text.to_ascii_lowercase();
    let mut depth = 0;
    let mut quote = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '(') => depth += 1,
            (None, ')') => depth -= 1,
            (None, _) if depth == 0 && lower[i..].starts_with(word) => {
                let before = lower[..i].chars().next_back();
                let after = lower[i + word.len()..].chars().next();
                let apart =
                    |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_');
                if apart(before) && apart(after) {
                    return Some((&text[..i], &text[i + word.len()..]));
                }
            }
            _ => {}
        }
    }
    None
}

/// Reads a block's code into steps.
struct Reader<'a> {
    code: &'a Code,
    at: usize,
    /// How many loops the reader is inside (EXIT and CONTINUE need one).
    loops: usize,
    /// The labels of the blocks and loops the reader is inside, with whether each is a
    /// loop's.
    labels: Vec<(String, bool)>,
    /// A `<<label>>` just read, for the block or loop that follows.
    label: Option<String>,
}

impl<'a> Reader<'a> {
    fn new(code: &'a Code, at: usize) -> Reader<'a> {
        Reader {
            code,
            at,
            loops: 0,
            labels: Vec::new(),
            label: None,
        }
    }

    /// `<<label>>`, if the reader is at one.
    fn read_label(&mut self) -> Result<Option<String>> {
        if self.token() != Some(&Token::ShiftLeft) {
            return Ok(None);
        }
        self.at += 1;
        let Some(Token::Word(name)) = self.token() else {
            return Err(self.error());
        };
        let name = word_name(name);
        self.at += 1;
        if self.token() != Some(&Token::ShiftRight) {
            return Err(self.error());
        }
        self.at += 1;
        Ok(Some(name))
    }

    /// The optional label after END [LOOP] of a block or loop labeled `label`, which must
    /// be that label, as in PL/pgSQL.
    fn end_label(&mut self, label: &Option<String>) -> Result<()> {
        let Some(Token::Word(end)) = self.token() else {
            return Ok(());
        };
        let end = word_name(end);
        match label {
            None => Err(Error::InvalidStatement(format!(
                "end label \"{end}\" specified for unlabeled block"
            ))),
            Some(label) if *label != end => Err(Error::InvalidStatement(format!(
                "end label \"{end}\" differs from block's label \"{label}\""
            ))),
            Some(_) => {
                self.at += 1;
                Ok(())
            }
        }
    }

    fn token(&self) -> Option<&Token> {
        self.code.tokens.get(self.at).map(|(t, _, _)| t)
    }

    fn line(&self) -> u64 {
        self.code
            .tokens
            .get(self.at)
            .or(self.code.tokens.last())
            .map_or(1, |(_, _, line)| *line)
    }

    /// The current token as an unquoted word, upper-cased.
    fn word(&self) -> Option<String> {
        match self.token()? {
            Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            _ => None,
        }
    }

    fn at_word(&self, word: &str) -> bool {
        self.word().as_deref() == Some(word)
    }

    fn error(&self) -> Error {
        match self.token() {
            None => Error::InvalidStatement("syntax error at end of input".into()),
            Some(t) => Error::InvalidStatement(format!("syntax error at or near \"{t}\"")),
        }
    }

    fn expect_word(&mut self, word: &str) -> Result<()> {
        if !self.at_word(word) {
            return Err(self.error());
        }
        self.at += 1;
        Ok(())
    }

    fn expect_semicolon(&mut self) -> Result<()> {
        if self.token() != Some(&Token::SemiColon) {
            return Err(self.error());
        }
        self.at += 1;
        Ok(())
    }

    /// The tokens up to the first of `stops` (words, or `;` and `,` as themselves) outside
    /// parentheses, brackets and CASE … END; the reader stops at it.
    fn until(&mut self, stops: &[&str]) -> Result<Range<usize>> {
        let start = self.at;
        let mut depth = 0i32;
        let mut cases = 0i32;
        loop {
            let Some(token) = self.token() else {
                return Err(self.error());
            };
            let here = match token {
                Token::SemiColon => Some(";".to_string()),
                Token::Comma => Some(",".to_string()),
                _ => self.word(),
            };
            if depth == 0 && cases == 0 && here.as_deref().is_some_and(|h| stops.contains(&h)) {
                return Ok(start..self.at);
            }
            match (token, here.as_deref()) {
                (Token::LParen | Token::LBracket, _) => depth += 1,
                (Token::RParen | Token::RBracket, _) => depth -= 1,
                (_, Some("CASE")) => cases += 1,
                (_, Some("END")) if cases > 0 => cases -= 1,
                (Token::SemiColon, _) => return Err(self.error()),
                _ => {}
            }
            self.at += 1;
        }
    }

    /// `[DECLARE …] BEGIN steps [EXCEPTION handlers] END [label]`.
    fn block(&mut self) -> Result<Block> {
        let label = match self.label.take() {
            Some(label) => Some(label),
            None => self.read_label()?,
        };
        let labeled = label.is_some();
        if let Some(label) = &label {
            self.labels.push((label.clone(), false));
        }
        let block = self.block_body(label);
        if labeled {
            self.labels.pop();
        }
        block
    }

    fn block_body(&mut self, label: Option<String>) -> Result<Block> {
        let mut declarations = Vec::new();
        if self.at_word("DECLARE") {
            self.at += 1;
            while !self.at_word("BEGIN") {
                if self.token().is_none() {
                    return Err(self.error());
                }
                declarations.push(self.declaration()?);
            }
        }
        self.expect_word("BEGIN")?;
        let steps = self.steps()?;
        let mut handlers = Vec::new();
        if self.at_word("EXCEPTION") {
            self.at += 1;
            while self.at_word("WHEN") {
                self.at += 1;
                let mut conditions = vec![self.condition()?];
                while self.at_word("OR") {
                    self.at += 1;
                    conditions.push(self.condition()?);
                }
                self.expect_word("THEN")?;
                let steps = self.steps()?;
                handlers.push(Handler { conditions, steps });
            }
            if handlers.is_empty() {
                return Err(self.error());
            }
        }
        self.expect_word("END")?;
        self.end_label(&label)?;
        Ok(Block {
            label,
            declarations,
            steps,
            handlers,
        })
    }

    /// One declaration of a DECLARE section.
    fn declaration(&mut self) -> Result<Declaration> {
        let line = self.line();
        let Some(Token::Word(name)) = self.token() else {
            return Err(self.error());
        };
        let name = word_name(name);
        self.at += 1;
        let constant = self.at_word("CONSTANT");
        if constant {
            self.at += 1;
        }
        if let Some(w @ ("CURSOR" | "ALIAS" | "REFCURSOR")) = self.word().as_deref() {
            return Err(Error::Unsupported(format!(
                "{w} declarations in a DO block"
            )));
        }
        // The type runs to what may follow it.
        let start = self.at;
        let mut depth = 0;
        loop {
            let Some(token) = self.token() else {
                return Err(self.error());
            };
            let word = self.word();
            let ends = matches!(token, Token::SemiColon | Token::Assignment | Token::Eq)
                || matches!(word.as_deref(), Some("DEFAULT" | "NOT" | "COLLATE"));
            if depth == 0 && ends {
                break;
            }
            match token {
                Token::LParen | Token::LBracket => depth += 1,
                Token::RParen | Token::RBracket => depth -= 1,
                _ => {}
            }
            self.at += 1;
        }
        if start == self.at {
            return Err(self.error());
        }
        let written = self.code.text(&(start..self.at), None);
        let lower = written.to_ascii_lowercase();
        let ty = if lower == "record" {
            Declared::Record
        } else if let Some(table) = lower.strip_suffix("%rowtype") {
            Declared::RowType(table.trim().to_string())
        } else if let Some(column) = lower.strip_suffix("%type") {
            match column.trim().rsplit_once('.') {
                Some((table, column)) => {
                    Declared::ColumnType(table.trim().to_string(), column.trim().to_string())
                }
                None => {
                    return Err(Error::Unsupported(
                        "%TYPE of a variable in a DO block".into(),
                    ));
                }
            }
        } else {
            Declared::Type(written)
        };
        if self.at_word("COLLATE") {
            self.at += 2;
        }
        let mut not_null = false;
        if self.at_word("NOT") {
            self.at += 1;
            self.expect_word("NULL")?;
            not_null = true;
        }
        let mut default = None;
        if matches!(self.token(), Some(Token::Assignment | Token::Eq)) || self.at_word("DEFAULT") {
            self.at += 1;
            default = Some(self.until(&[";"])?);
        }
        self.expect_semicolon()?;
        if default.is_none() && not_null {
            return Err(Error::Raised {
                code: "22004".into(),
                message: format!(
                    "variable \"{name}\" must have a default value, since it's declared NOT \
                     NULL"
                ),
                detail: None,
                hint: None,
            });
        }
        Ok(Declaration {
            line,
            name,
            ty,
            constant,
            not_null,
            default,
        })
    }

    /// A variable's name as a target (INTO, FOR): `name` or `record.field`.
    fn target(&mut self) -> Result<String> {
        let Some(Token::Word(w)) = self.token() else {
            return Err(self.error());
        };
        let mut name = word_name(w);
        self.at += 1;
        if self.token() == Some(&Token::Period)
            && let Some((Token::Word(field), _, _)) = self.code.tokens.get(self.at + 1)
        {
            name = format!("{name}.{}", word_name(field));
            self.at += 2;
        }
        Ok(name)
    }

    /// Targets separated by commas.
    fn targets(&mut self) -> Result<Vec<String>> {
        let mut targets = vec![self.target()?];
        while self.token() == Some(&Token::Comma) {
            self.at += 1;
            targets.push(self.target()?);
        }
        Ok(targets)
    }

    /// `LOOP steps END LOOP;`, after the loop's header.
    fn loop_body(&mut self, kind: LoopKind) -> Result<StepKind> {
        let label = self.label.take();
        self.expect_word("LOOP")?;
        self.loops += 1;
        if let Some(label) = &label {
            self.labels.push((label.clone(), true));
        }
        let body = self.steps();
        if label.is_some() {
            self.labels.pop();
        }
        self.loops -= 1;
        let body = body?;
        self.expect_word("END")?;
        self.expect_word("LOOP")?;
        self.end_label(&label)?;
        self.expect_semicolon()?;
        Ok(StepKind::Loop { kind, body, label })
    }

    /// `CASE …` after CASE, to its `END CASE;`.
    fn case_statement(&mut self) -> Result<StepKind> {
        let subject = match self.at_word("WHEN") {
            true => None,
            false => Some(self.until(&["WHEN"])?),
        };
        let mut arms = Vec::new();
        while self.at_word("WHEN") {
            self.at += 1;
            // A simple CASE's values, each compared with the subject; a searched CASE's
            // condition, whole.
            let mut values = vec![match subject {
                Some(_) => self.until(&[",", "THEN"])?,
                None => self.until(&["THEN"])?,
            }];
            while self.token() == Some(&Token::Comma) {
                self.at += 1;
                values.push(self.until(&[",", "THEN"])?);
            }
            self.expect_word("THEN")?;
            arms.push((values, self.steps()?));
        }
        if arms.is_empty() {
            return Err(self.error());
        }
        let otherwise = match self.at_word("ELSE") {
            true => {
                self.at += 1;
                Some(self.steps()?)
            }
            false => None,
        };
        self.expect_word("END")?;
        self.expect_word("CASE")?;
        self.expect_semicolon()?;
        Ok(StepKind::Case {
            subject,
            arms,
            otherwise,
        })
    }

    /// `[CURRENT | STACKED] DIAGNOSTICS target = item, …;` after GET.
    fn diagnostics(&mut self, line: u64) -> Result<StepKind> {
        let stacked = self.at_word("STACKED");
        if stacked || self.at_word("CURRENT") {
            self.at += 1;
        }
        self.expect_word("DIAGNOSTICS")?;
        let mut items = Vec::new();
        loop {
            let target = self.target()?;
            if !matches!(self.token(), Some(Token::Eq | Token::Assignment)) {
                return Err(self.error());
            }
            self.at += 1;
            let item = self.word().ok_or_else(|| self.error())?;
            const CURRENT: &[&str] = &["ROW_COUNT", "PG_CONTEXT"];
            const STACKED: &[&str] = &[
                "RETURNED_SQLSTATE",
                "MESSAGE_TEXT",
                "PG_EXCEPTION_DETAIL",
                "PG_EXCEPTION_HINT",
                "PG_EXCEPTION_CONTEXT",
                "COLUMN_NAME",
                "CONSTRAINT_NAME",
                "PG_DATATYPE_NAME",
                "TABLE_NAME",
                "SCHEMA_NAME",
            ];
            let (own, other, kind) = match stacked {
                false => (CURRENT, STACKED, "CURRENT"),
                true => (STACKED, CURRENT, "STACKED"),
            };
            if other.contains(&item.as_str()) {
                return Err(Error::InvalidStatement(format!(
                    "diagnostics item {item} is not allowed in GET {kind} DIAGNOSTICS"
                )));
            }
            if !own.contains(&item.as_str()) {
                return Err(Error::InvalidStatement(format!(
                    "unrecognized GET DIAGNOSTICS item at or near \"{}\"",
                    item.to_lowercase()
                )));
            }
            self.at += 1;
            items.push((target, item));
            if self.token() != Some(&Token::Comma) {
                break;
            }
            self.at += 1;
        }
        self.expect_semicolon()?;
        Ok(StepKind::Diagnostics {
            stacked,
            items,
            line,
        })
    }

    /// `FOR …` after FOR: over integers or a query's rows.
    fn for_loop(&mut self) -> Result<StepKind> {
        let targets = self.targets()?;
        self.expect_word("IN")?;
        let reverse = self.at_word("REVERSE");
        if reverse {
            self.at += 1;
        }
        if self.at_word("EXECUTE") {
            return Err(Error::Unsupported("FOR … IN EXECUTE in a DO block".into()));
        }
        let header = self.until(&["LOOP"])?;
        // `low .. high [BY step]`: the bounds are read from the text, which the tokenizer
        // cuts oddly around `..` (`1..3` is `1.` and `.3`).
        let text = self.code.text(&header, None);
        if let Some((low, rest)) = split_outside_quotes(&text, "..") {
            let [name] = targets.as_slice() else {
                return Err(Error::InvalidStatement(
                    "integer FOR loop must have only one target variable".into(),
                ));
            };
            let (high, step) = match split_word(rest, "by") {
                Some((high, step)) => (high, Some(step.trim().to_string())),
                None => (rest, None),
            };
            return self.loop_body(LoopKind::Integer {
                name: name.clone(),
                reverse,
                low: low.trim().to_string(),
                high: high.trim().to_string(),
                step,
            });
        }
        if reverse {
            return Err(self.error());
        }
        self.loop_body(LoopKind::Query {
            targets,
            query: header,
        })
    }

    /// `name [.field] := expression;` when the reader is at one.
    fn assignment(&mut self) -> Result<Option<StepKind>> {
        let token = |i: usize| self.code.tokens.get(i).map(|(t, _, _)| t);
        let (target, field, after) = match (token(self.at), token(self.at + 1)) {
            (Some(Token::Word(w)), Some(Token::Assignment | Token::Eq)) => {
                (word_name(w), None, self.at + 2)
            }
            (Some(Token::Word(w)), Some(Token::Period)) => {
                match (token(self.at + 2), token(self.at + 3)) {
                    (Some(Token::Word(f)), Some(Token::Assignment | Token::Eq)) => {
                        (word_name(w), Some(word_name(f)), self.at + 4)
                    }
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        self.at = after;
        let value = self.until(&[";"])?;
        self.expect_semicolon()?;
        Ok(Some(StepKind::Assign {
            target,
            field,
            value,
        }))
    }

    /// The INTO clause of SQL statement `range`, if it has one: `SELECT … INTO [STRICT]
    /// targets …`, `… RETURNING … INTO [STRICT] targets`.
    fn read_into(&self, range: &Range<usize>) -> Result<Option<StepKind>> {
        let word = |i: usize| match self.code.tokens.get(i) {
            Some((Token::Word(w), _, _)) if w.quote_style.is_none() => {
                Some(w.value.to_ascii_uppercase())
            }
            _ => None,
        };
        let first = word(range.start);
        let mut depth = 0;
        let mut returning = false;
        for i in range.clone() {
            match &self.code.tokens[i].0 {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            if depth != 0 {
                continue;
            }
            match word(i).as_deref() {
                Some("RETURNING") => returning = true,
                Some("INTO")
                    if returning
                        || (matches!(first.as_deref(), Some("SELECT" | "WITH"))
                            && i > range.start
                            && word(i - 1).as_deref() != Some("INSERT")) =>
                {
                    let mut reader = Reader::new(self.code, i + 1);
                    let strict = reader.at_word("STRICT");
                    if strict {
                        reader.at += 1;
                    }
                    let targets = reader.targets()?;
                    return Ok(Some(StepKind::Into {
                        statement: vec![range.start..i, reader.at..range.end],
                        targets,
                        strict,
                    }));
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// An exception condition: a name, `SQLSTATE 'code'` or OTHERS (`None`).
    fn condition(&mut self) -> Result<Option<String>> {
        let Some(word) = self.word() else {
            return Err(self.error());
        };
        self.at += 1;
        match word.as_str() {
            "OTHERS" => Ok(None),
            "SQLSTATE" => self.sqlstate().map(Some),
            _ => condition_code(&word).map(Some),
        }
    }

    /// The `'code'` after SQLSTATE.
    fn sqlstate(&mut self) -> Result<String> {
        let Some(Token::SingleQuotedString(code)) = self.token().cloned() else {
            return Err(self.error());
        };
        self.at += 1;
        checked_sqlstate(&code)
    }

    /// Steps up to the end of their list (`ENDS`), or of the code.
    fn steps(&mut self) -> Result<Vec<Step>> {
        let mut steps = Vec::new();
        loop {
            let Some(token) = self.token() else {
                return Ok(steps);
            };
            if *token == Token::SemiColon {
                self.at += 1;
                continue;
            }
            let line = self.line();
            // `<<label>>` before a block or loop.
            if let Some(label) = self.read_label()? {
                if !matches!(
                    self.word().as_deref(),
                    Some("BEGIN" | "DECLARE" | "LOOP" | "WHILE" | "FOR" | "FOREACH")
                ) {
                    return Err(self.error());
                }
                self.label = Some(label);
            }
            let word = self.word();
            if word.as_deref().is_some_and(|w| ENDS.contains(&w)) {
                return Ok(steps);
            }
            let kind = match word.as_deref() {
                Some("BEGIN" | "DECLARE") => {
                    let block = self.block()?;
                    self.expect_semicolon()?;
                    StepKind::Block(block)
                }
                Some("IF") => self.if_statement()?,
                Some("NULL") => {
                    self.at += 1;
                    self.expect_semicolon()?;
                    StepKind::Null
                }
                Some("RETURN") => {
                    self.at += 1;
                    if self.token() != Some(&Token::SemiColon) {
                        return Err(Error::DatatypeMismatch(
                            "RETURN cannot have a parameter in function returning void".into(),
                        ));
                    }
                    self.at += 1;
                    StepKind::Return
                }
                Some("RAISE") => {
                    self.at += 1;
                    StepKind::Raise(self.raise()?)
                }
                Some("ASSERT") => {
                    self.at += 1;
                    let condition = self.until(&[",", ";"])?;
                    let message = match self.token() {
                        Some(Token::Comma) => {
                            self.at += 1;
                            Some(self.until(&[";"])?)
                        }
                        _ => None,
                    };
                    self.expect_semicolon()?;
                    StepKind::Assert { condition, message }
                }
                Some("PERFORM") => {
                    self.at += 1;
                    let query = self.until(&[";"])?;
                    self.expect_semicolon()?;
                    StepKind::Perform(query)
                }
                Some("EXECUTE") => {
                    self.at += 1;
                    let text = self.until(&[";", "INTO", "USING"])?;
                    if self.token() != Some(&Token::SemiColon) {
                        return Err(Error::Unsupported(
                            "EXECUTE … INTO or USING in a DO block".into(),
                        ));
                    }
                    self.at += 1;
                    StepKind::Execute(text)
                }
                Some("LOOP") => self.loop_body(LoopKind::Plain)?,
                Some("WHILE") => {
                    self.at += 1;
                    let condition = self.until(&["LOOP"])?;
                    self.loop_body(LoopKind::While(condition))?
                }
                Some("FOR") => {
                    self.at += 1;
                    self.for_loop()?
                }
                Some("FOREACH") => {
                    self.at += 1;
                    let name = self.target()?;
                    if self.at_word("SLICE") {
                        return Err(Error::Unsupported("FOREACH … SLICE in a DO block".into()));
                    }
                    self.expect_word("IN")?;
                    self.expect_word("ARRAY")?;
                    let array = self.until(&["LOOP"])?;
                    self.loop_body(LoopKind::Array { name, array })?
                }
                Some(w @ ("EXIT" | "CONTINUE")) => {
                    let exit = w == "EXIT";
                    self.at += 1;
                    let label = match self.token() {
                        Some(Token::Word(l))
                            if !(l.quote_style.is_none()
                                && l.value.eq_ignore_ascii_case("when")) =>
                        {
                            let l = word_name(l);
                            self.at += 1;
                            Some(l)
                        }
                        _ => None,
                    };
                    match &label {
                        None if self.loops == 0 => {
                            return Err(Error::InvalidStatement(format!(
                                "{w} cannot be used outside a loop{}",
                                if exit { ", unless it has a label" } else { "" }
                            )));
                        }
                        None => {}
                        Some(l) => match self.labels.iter().rev().find(|(n, _)| n == l) {
                            None => {
                                return Err(Error::InvalidStatement(format!(
                                    "there is no label \"{l}\" attached to any block or loop \
                                     enclosing this statement"
                                )));
                            }
                            Some((_, false)) if !exit => {
                                return Err(Error::InvalidStatement(format!(
                                    "block label \"{l}\" cannot be used in CONTINUE"
                                )));
                            }
                            Some(_) => {}
                        },
                    }
                    let when = match self.at_word("WHEN") {
                        true => {
                            self.at += 1;
                            Some(self.until(&[";"])?)
                        }
                        false => None,
                    };
                    self.expect_semicolon()?;
                    StepKind::Exit { exit, label, when }
                }
                Some("CASE") => {
                    self.at += 1;
                    self.case_statement()?
                }
                Some("GET") => {
                    self.at += 1;
                    self.diagnostics(line)?
                }
                Some(w @ ("OPEN" | "FETCH" | "MOVE" | "CLOSE" | "COMMIT" | "ROLLBACK")) => {
                    return Err(Error::Unsupported(format!("{w} in a DO block")));
                }
                _ => match self.assignment()? {
                    Some(assignment) => assignment,
                    None => {
                        let statement = self.until(&[";"])?;
                        self.expect_semicolon()?;
                        match self.read_into(&statement)? {
                            Some(into) => into,
                            None => StepKind::Sql(statement),
                        }
                    }
                },
            };
            steps.push(Step { line, kind });
        }
    }

    /// `IF cond THEN steps [ELSIF cond THEN steps …] [ELSE steps] END IF;`
    fn if_statement(&mut self) -> Result<StepKind> {
        let mut arms = Vec::new();
        let mut otherwise = Vec::new();
        self.at += 1;
        loop {
            let condition = self.until(&["THEN"])?;
            self.at += 1;
            arms.push((condition, self.steps()?));
            match self.word().as_deref() {
                Some("ELSIF" | "ELSEIF") => self.at += 1,
                Some("ELSE") => {
                    self.at += 1;
                    otherwise = self.steps()?;
                    break;
                }
                _ => break,
            }
        }
        self.expect_word("END")?;
        self.expect_word("IF")?;
        self.expect_semicolon()?;
        Ok(StepKind::If { arms, otherwise })
    }

    fn raise(&mut self) -> Result<Raise> {
        let mut raise = Raise {
            level: Level::Exception,
            again: false,
            format: None,
            args: Vec::new(),
            condition: None,
            options: Vec::new(),
        };
        if self.token() == Some(&Token::SemiColon) {
            self.at += 1;
            raise.again = true;
            return Ok(raise);
        }
        let level = match self.word().as_deref() {
            Some("DEBUG") => Some(Level::Debug),
            Some("LOG") => Some(Level::Log),
            Some("INFO") => Some(Level::Info),
            Some("NOTICE") => Some(Level::Notice),
            Some("WARNING") => Some(Level::Warning),
            Some("EXCEPTION") => Some(Level::Exception),
            _ => None,
        };
        if let Some(level) = level {
            raise.level = level;
            self.at += 1;
        }
        match self.token().cloned() {
            Some(
                Token::SingleQuotedString(format)
                | Token::EscapedStringLiteral(format)
                | Token::DollarQuotedString(ast::DollarQuotedString { value: format, .. }),
            ) => {
                self.at += 1;
                let wanted = placeholders(&format);
                while self.token() == Some(&Token::Comma) {
                    self.at += 1;
                    raise.args.push(self.until(&[",", ";", "USING"])?);
                }
                if raise.args.len() > wanted {
                    return Err(Error::InvalidStatement(
                        "too many parameters specified for RAISE".into(),
                    ));
                }
                if raise.args.len() < wanted {
                    return Err(Error::InvalidStatement(
                        "too few parameters specified for RAISE".into(),
                    ));
                }
                raise.format = Some(format);
            }
            Some(Token::Word(_)) if self.at_word("USING") => {}
            Some(Token::Word(_)) if self.at_word("SQLSTATE") => {
                self.at += 1;
                let code = self.sqlstate()?;
                raise.condition = Some((code.clone(), code));
            }
            Some(Token::Word(w)) => {
                self.at += 1;
                let code = condition_code(&w.value)?;
                raise.condition = Some((code, w.value.to_ascii_lowercase()));
            }
            _ => return Err(self.error()),
        }
        if self.at_word("USING") {
            self.at += 1;
            loop {
                let Some(name) = self.word() else {
                    return Err(self.error());
                };
                self.at += 1;
                if !matches!(self.token(), Some(Token::Eq | Token::Assignment)) {
                    return Err(self.error());
                }
                self.at += 1;
                let value = self.until(&[",", ";"])?;
                if !matches!(
                    name.as_str(),
                    "MESSAGE"
                        | "DETAIL"
                        | "HINT"
                        | "ERRCODE"
                        | "COLUMN"
                        | "CONSTRAINT"
                        | "DATATYPE"
                        | "TABLE"
                        | "SCHEMA"
                ) {
                    return Err(Error::InvalidStatement(format!(
                        "unrecognized RAISE statement option \"{}\"",
                        name.to_ascii_lowercase()
                    )));
                }
                if raise.options.iter().any(|(n, _)| *n == name) {
                    return Err(Error::InvalidStatement(format!(
                        "RAISE option already specified: {name}"
                    )));
                }
                raise.options.push((name, value));
                if self.token() != Some(&Token::Comma) {
                    break;
                }
                self.at += 1;
            }
        }
        self.expect_semicolon()?;
        Ok(raise)
    }
}

/// The number of `%` placeholders in a RAISE format (`%%` is a percent sign).
fn placeholders(format: &str) -> usize {
    let mut count = 0;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '%' {
            if chars.peek() == Some(&'%') {
                chars.next();
            } else {
                count += 1;
            }
        }
    }
    count
}

/// The format with each `%` replaced by the next argument (NULL is shown as `<NULL>`).
fn format_message(format: &str, args: &[Option<String>]) -> String {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
        } else if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
        } else {
            match args.next() {
                Some(Some(value)) => out.push_str(value),
                _ => out.push_str("<NULL>"),
            }
        }
    }
    out
}

/// The SQLSTATE of a condition name, or PostgreSQL's 42704.
fn condition_code(name: &str) -> Result<String> {
    crate::sqlstate::condition_code(name)
        .map(str::to_string)
        .ok_or_else(|| {
            Error::UndefinedObject(format!(
                "unrecognized exception condition \"{}\"",
                name.to_ascii_lowercase()
            ))
        })
}

/// A five-character SQLSTATE of digits and upper-case letters.
fn checked_sqlstate(code: &str) -> Result<String> {
    let valid = code.len() == 5
        && code
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
        && code != "00000";
    match valid {
        true => Ok(code.to_string()),
        false => Err(Error::InvalidStatement(format!(
            "invalid SQLSTATE code \"{code}\""
        ))),
    }
}

/// How the DO's statements reach a commit.
enum Owner {
    /// The DO began the transaction and commits it.
    Itself,
    /// An implicit block's transaction, made a block for the DO's savepoints.
    Implicit,
    /// The client's transaction block.
    Block,
}

/// The caught errors of the handlers running, innermost last: the error (for `RAISE;`),
/// and its SQLSTATE and message.
type Caught = Vec<(Option<Error>, (String, String))>;

/// A variable's value: its type's output text (`None` for NULL), with the type as SQL text.
#[derive(Clone)]
enum Value {
    Scalar {
        ty: String,
        value: Option<String>,
    },
    /// A row: its fields (name, type, value), or `None` until one is assigned.
    Record(Option<Vec<(String, String, Option<String>)>>),
}

struct Variable {
    name: String,
    value: Value,
    constant: bool,
    not_null: bool,
    /// Declared `t%ROWTYPE`: rows assigned to it fill its columns by position.
    row_type: bool,
}

/// The variables in scope, a list per block (and loop), innermost last.
type Scopes = Vec<Vec<Variable>>;

/// What a running block keeps: the handlers' caught errors and the variables.
struct Run {
    caught: Caught,
    scopes: Scopes,
    /// The rows the last SQL statement read or wrote (GET DIAGNOSTICS' ROW_COUNT).
    row_count: usize,
}

fn find<'s>(scopes: &'s Scopes, name: &str) -> Option<&'s Variable> {
    scopes
        .iter()
        .rev()
        .flat_map(|s| s.iter().rev())
        .find(|v| v.name == name)
}

fn find_mut<'s>(scopes: &'s mut Scopes, name: &str) -> Option<&'s mut Variable> {
    scopes
        .iter_mut()
        .rev()
        .flat_map(|s| s.iter_mut().rev())
        .find(|v| v.name == name)
}

/// A constant of type `ty` (SQL text; empty: unknown, a string) holding `value`.
fn constant(ty: &str, value: &Option<String>) -> Result<ast::Expr> {
    let literal = match value {
        Some(v) => ast::Expr::value(ast::Value::SingleQuotedString(v.clone())),
        None => ast::Expr::value(ast::Value::Null),
    };
    if ty.is_empty() {
        return Ok(literal);
    }
    let data_type = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(ty)
        .and_then(|mut p| p.parse_data_type())
        .map_err(|e| Error::Syntax(e.to_string()))?;
    Ok(ast::Expr::Nested(Box::new(ast::Expr::Cast {
        kind: ast::CastKind::Cast,
        expr: Box::new(literal),
        data_type,
        array: false,
        format: None,
    })))
}

/// Puts a block's variables into a statement's expressions as constants where the statement
/// names them as values (`v`, `r.field`), not where a name is a function's named argument or
/// an output column's alias in ORDER BY or GROUP BY. A name that is also a column of a table
/// in scope there (the query's FROM items and those of the queries around it, an UPDATE's
/// or DELETE's table, an INSERT's for its RETURNING and ON CONFLICT) is ambiguous (42702),
/// as PL/pgSQL's default `variable_conflict = error` has it.
struct Substituter<'a> {
    variables: &'a Scopes,
    /// The columns of each table the statement names.
    columns_of: &'a std::collections::HashMap<String, Vec<String>>,
    /// The tables in scope, per query being visited (the statement's own first).
    tables: Vec<Vec<String>>,
    /// Names that are not values: named arguments' names, alias references.
    not_values: std::collections::HashSet<*const ast::Expr>,
}

impl Substituter<'_> {
    fn is_column(&self, name: &str) -> bool {
        self.tables
            .iter()
            .flatten()
            .filter_map(|t| self.columns_of.get(t))
            .any(|columns| columns.iter().any(|c| c == name))
    }

    fn replaced(&self, e: &ast::Expr) -> Option<Result<ast::Expr>> {
        match e {
            ast::Expr::Identifier(id) => {
                let name = sql::ddl::normalize_ident(id);
                match find(self.variables, &name) {
                    Some(Variable {
                        value: Value::Scalar { .. },
                        ..
                    }) if name != "found" && self.is_column(&name) => Some(Err(ambiguous(&name))),
                    Some(Variable {
                        value: Value::Scalar { ty, value },
                        ..
                    }) => Some(constant(ty, value)),
                    // A whole record is a value too (`RAISE NOTICE '%', r`, `r IS NULL`,
                    // `to_json(r)`): its fields by name, NULL before one is assigned, as in
                    // PL/pgSQL. A column or a table in scope of its name makes it ambiguous.
                    Some(Variable {
                        value: Value::Record(_),
                        ..
                    }) if self.is_column(&name)
                        || self.tables.iter().flatten().any(|t| *t == name) =>
                    {
                        Some(Err(ambiguous(&name)))
                    }
                    Some(Variable {
                        value: Value::Record(None),
                        ..
                    }) => Some(Ok(ast::Expr::value(ast::Value::Null))),
                    Some(Variable {
                        value: Value::Record(Some(fields)),
                        ..
                    }) => Some(
                        fields
                            .iter()
                            .map(|(field, ty, value)| {
                                let name =
                                    ast::Expr::value(ast::Value::SingleQuotedString(field.clone()));
                                Ok([name, constant(ty, value)?])
                            })
                            .collect::<Result<Vec<_>>>()
                            .map(|pairs| crate::pg_catalog::call("named_struct", pairs.concat())),
                    ),
                    _ => None,
                }
            }
            ast::Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                let record = sql::ddl::normalize_ident(&parts[0]);
                let field = sql::ddl::normalize_ident(&parts[1]);
                match find(self.variables, &record) {
                    Some(Variable {
                        value: Value::Record(None),
                        ..
                    }) => Some(Err(not_assigned(&record))),
                    Some(Variable {
                        value: Value::Record(Some(fields)),
                        ..
                    }) => Some(match fields.iter().find(|(n, _, _)| *n == field) {
                        Some((_, ty, value)) => constant(ty, value),
                        None => Err(Error::Sql(sql::Error::UnknownColumn {
                            table: record.clone(),
                            column: field,
                        })),
                    }),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// The tables a FROM clause names.
fn from_tables(from: &[ast::TableWithJoins]) -> Vec<String> {
    let mut names = Vec::new();
    for twj in from {
        for relation in std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation))
        {
            if let ast::TableFactor::Table {
                name, args: None, ..
            } = relation
                && let Ok(name) = sql::ddl::table_name(name)
            {
                names.push(name);
            }
        }
    }
    names
}

impl ast::VisitorMut for Substituter<'_> {
    type Break = Error;

    fn pre_visit_query(&mut self, q: &mut ast::Query) -> std::ops::ControlFlow<Error> {
        let mut tables = Vec::new();
        if let ast::SetExpr::Select(select) = q.body.as_ref() {
            tables = from_tables(&select.from);
            // An output column's alias named alone in ORDER BY or GROUP BY is the column.
            let aliases: Vec<String> = select
                .projection
                .iter()
                .filter_map(|item| match item {
                    ast::SelectItem::ExprWithAlias { alias, .. } => {
                        Some(sql::ddl::normalize_ident(alias))
                    }
                    _ => None,
                })
                .collect();
            let alias = |e: &ast::Expr| matches!(e, ast::Expr::Identifier(id) if aliases.contains(&sql::ddl::normalize_ident(id)));
            if let Some(order_by) = &q.order_by
                && let ast::OrderByKind::Expressions(items) = &order_by.kind
            {
                for item in items.iter().filter(|i| alias(&i.expr)) {
                    self.not_values.insert(&item.expr as *const ast::Expr);
                }
            }
            if let ast::GroupByExpr::Expressions(items, _) = &select.group_by {
                for item in items.iter().filter(|e| alias(e)) {
                    self.not_values.insert(item as *const ast::Expr);
                }
            }
        }
        self.tables.push(tables);
        std::ops::ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut ast::Query) -> std::ops::ControlFlow<Error> {
        self.tables.pop();
        std::ops::ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> std::ops::ControlFlow<Error> {
        if let ast::Expr::Function(f) = e
            && let ast::FunctionArguments::List(list) = &f.args
        {
            for arg in &list.args {
                if let ast::FunctionArg::ExprNamed { name, .. } = arg {
                    self.not_values.insert(name as *const ast::Expr);
                }
            }
            return std::ops::ControlFlow::Continue(());
        }
        if self.not_values.contains(&(e as *const ast::Expr)) {
            return std::ops::ControlFlow::Continue(());
        }
        match self.replaced(e) {
            Some(Ok(value)) => *e = value,
            Some(Err(error)) => return std::ops::ControlFlow::Break(error),
            None => {}
        }
        std::ops::ControlFlow::Continue(())
    }
}

/// Whether a block's variables go into `statement`: a query or a write, as PostgreSQL
/// puts them only into SELECT, INSERT, UPDATE, DELETE and MERGE, not into DDL.
fn takes_variables(statement: &Statement) -> bool {
    matches!(
        statement,
        Statement::Query(_)
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::Merge(_)
    )
}

/// The tables a statement names.
fn named_tables(statement: &Statement) -> Vec<String> {
    let mut names = Vec::new();
    let _ = ast::visit_relations(statement, |name| {
        if let Ok(name) = sql::ddl::table_name(name) {
            names.push(name);
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    names
}

/// A column's type as SQL text, as CREATE TABLE AS names it.
fn field_type(field: &datafusion::arrow::datatypes::Field) -> String {
    match sql::types::declared_type_name(field) {
        Some(declared) => declared.to_string(),
        None => crate::pg_catalog::format_type(
            i64::from(crate::pg_catalog::field_type_oid(field)),
            None,
        ),
    }
}

/// What a loop's rounds go over.
enum Rounds {
    Endless,
    /// The condition's text.
    While(String),
    /// The loop variable, the value of the next round (`None` past integer's range), the
    /// last value and the step (negative for REVERSE).
    Integer {
        name: String,
        next: Option<i64>,
        end: i64,
        step: i64,
    },
    /// Rows given to the targets one by one.
    Rows {
        targets: Vec<String>,
        rows: Rows,
        at: usize,
    },
}

/// Rows read for INTO and FOR: the columns (name, type) and each row's values as text.
struct Rows {
    columns: Vec<(String, String)>,
    values: Vec<Vec<Option<String>>>,
}

impl Session {
    /// Puts the block's variables into `statement` (see [`Substituter`]).
    fn put_variables(&self, statement: &mut Statement, scopes: &Scopes) -> Result<()> {
        if scopes.iter().all(Vec::is_empty) || !takes_variables(statement) {
            return Ok(());
        }
        let columns_of: std::collections::HashMap<String, Vec<String>> = named_tables(statement)
            .into_iter()
            .filter_map(|t| {
                let def = self.table_def(&t).ok()?;
                let columns = def.columns.iter().filter(|c| !c.hidden);
                Some((t, columns.map(|c| c.name.clone()).collect()))
            })
            .collect();
        let mut substituter = Substituter {
            variables: scopes,
            columns_of: &columns_of,
            tables: Vec::new(),
            not_values: Default::default(),
        };
        let visited = match statement {
            // VALUES and the source query see no column of the table written to; RETURNING
            // and ON CONFLICT do.
            Statement::Insert(insert) => {
                let target = match &insert.table {
                    ast::TableObject::TableName(name) => sql::ddl::table_name(name).ok(),
                    _ => None,
                };
                let source = match &mut insert.source {
                    Some(source) => source.visit(&mut substituter),
                    None => std::ops::ControlFlow::Continue(()),
                };
                substituter.tables = vec![target.into_iter().collect()];
                match source {
                    std::ops::ControlFlow::Continue(()) => {
                        match insert.on.visit(&mut substituter) {
                            std::ops::ControlFlow::Continue(()) => {
                                insert.returning.visit(&mut substituter)
                            }
                            broken => broken,
                        }
                    }
                    broken => broken,
                }
            }
            Statement::Update(update) => {
                let mut tables = from_tables(std::slice::from_ref(&update.table));
                if let Some(
                    ast::UpdateTableFromKind::AfterSet(from)
                    | ast::UpdateTableFromKind::BeforeSet(from),
                ) = &update.from
                {
                    tables.extend(from_tables(from));
                }
                substituter.tables = vec![tables];
                statement.visit(&mut substituter)
            }
            Statement::Delete(delete) => {
                let mut tables = match &delete.from {
                    ast::FromTable::WithFromKeyword(from)
                    | ast::FromTable::WithoutKeyword(from) => from_tables(from),
                };
                if let Some(using) = &delete.using {
                    tables.extend(from_tables(using));
                }
                substituter.tables = vec![tables];
                statement.visit(&mut substituter)
            }
            _ => statement.visit(&mut substituter),
        };
        match visited {
            std::ops::ControlFlow::Break(e) => Err(e),
            // A whole record put in as ROW(…) is read as PostgreSQL reads a record there.
            std::ops::ControlFlow::Continue(()) => {
                crate::rows::row_constructors(statement);
                Ok(())
            }
        }
    }

    /// Runs a DO statement's code.
    pub(crate) async fn run_do(&mut self, language: &str, text: &str) -> Result<Output> {
        if language != "plpgsql" {
            return Err(match language {
                "sql" | "c" | "internal" => Error::Raised {
                    code: "0A000".into(),
                    message: format!(
                        "language \"{language}\" does not support inline code execution"
                    ),
                    detail: None,
                    hint: None,
                },
                _ => Error::UndefinedObject(format!("language \"{language}\" does not exist")),
            });
        }
        let code = Code::read(text)?;
        let mut reader = Reader::new(&code, 0);
        let block = reader.block()?;
        if reader.token() == Some(&Token::SemiColon) {
            reader.at += 1;
        }
        if reader.token().is_some() {
            return Err(reader.error());
        }
        let owner = match self.txn.as_mut() {
            None => {
                self.begin(&[]);
                Owner::Itself
            }
            Some(open) if open.implicit => {
                open.implicit = false;
                Owner::Implicit
            }
            Some(_) => Owner::Block,
        };
        // FOUND, which SQL statements and loops set.
        let mut run = Run {
            caught: Caught::new(),
            row_count: 0,
            scopes: vec![vec![Variable {
                name: "found".into(),
                value: Value::Scalar {
                    ty: "boolean".into(),
                    value: Some("f".into()),
                },
                constant: false,
                not_null: false,
                row_type: false,
            }]],
        };
        let alias_names = std::mem::replace(&mut self.alias_names, false);
        let result = self.run_block(&code, &block, &mut run).await;
        self.alias_names = alias_names;
        let implicit = matches!(owner, Owner::Implicit)
            || (matches!(owner, Owner::Itself) && self.implicit_block);
        match result {
            Err(e) if matches!(owner, Owner::Itself) => {
                self.rollback();
                Err(e)
            }
            _ if implicit => {
                if let Some(open) = self.txn.as_mut() {
                    open.implicit = true;
                }
                result.map(|_| Output::Command("DO".into()))
            }
            Ok(_) if matches!(owner, Owner::Itself) => {
                self.commit().await?;
                Ok(Output::Command("DO".into()))
            }
            result => result.map(|_| Output::Command("DO".into())),
        }
    }

    /// Runs a block: its declarations, then its steps; an error one of its handlers
    /// catches undoes the block's work and runs the handler.
    fn run_block<'a>(
        &'a mut self,
        code: &'a Code,
        block: &'a Block,
        run: &'a mut Run,
    ) -> BoxFuture<'a, Result<Flow>> {
        Box::pin(async move {
            run.scopes.push(Vec::new());
            let result = async {
                for declaration in &block.declarations {
                    self.declare_variable(code, declaration, run)
                        .await
                        .map_err(|e| {
                            in_context_phrase(
                                e,
                                declaration.line,
                                "during statement block local variable initialization",
                            )
                        })?;
                }
                self.run_handled(code, block, run).await
            }
            .await;
            run.scopes.pop();
            // EXIT label of this block leaves it.
            match result? {
                Flow::Exit(Some(target)) if block.label.as_ref() == Some(&target) => Ok(Flow::Next),
                flow => Ok(flow),
            }
        })
    }

    fn run_handled<'a>(
        &'a mut self,
        code: &'a Code,
        block: &'a Block,
        run: &'a mut Run,
    ) -> BoxFuture<'a, Result<Flow>> {
        Box::pin(async move {
            if block.handlers.is_empty() {
                return self.run_steps(code, &block.steps, run).await;
            }
            let depth = self.txn.as_ref().map_or(0, |t| t.savepoints.len());
            let savepoint = ast::Ident::new(format!("__partita_do_{depth}"));
            self.savepoint(&savepoint)?;
            let error = match self.run_steps(code, &block.steps, run).await {
                Ok(flow) => {
                    self.release_savepoint(&savepoint)?;
                    return Ok(flow);
                }
                Err(e) => e,
            };
            // The block's work is undone whether a handler catches the error or not, as
            // PostgreSQL aborts the block's subtransaction.
            self.rollback_to_savepoint(&savepoint)?;
            self.release_savepoint(&savepoint)?;
            let state = crate::sqlstate::sql_state(&error).to_string();
            let handler = block.handlers.iter().find(|h| {
                h.conditions.iter().any(|c| match c {
                    Some(code) => crate::sqlstate::condition_matches(code, &state),
                    // OTHERS catches all but a cancel and a failed assertion.
                    None => state != "57014" && state != "P0004",
                })
            });
            let Some(handler) = handler else {
                return Err(error);
            };
            let message = crate::sqlstate::message(bare(&error));
            run.caught.push((Some(error), (state, message)));
            let flow = self.run_steps(code, &handler.steps, run).await;
            run.caught.pop();
            flow
        })
    }

    /// A declaration's variable, with its default's value, in the innermost scope.
    async fn declare_variable(
        &mut self,
        code: &Code,
        d: &Declaration,
        run: &mut Run,
    ) -> Result<()> {
        let caught = run.caught.last().map(|(_, values)| values.clone());
        let value = match &d.ty {
            Declared::Record => Value::Record(None),
            Declared::RowType(table) => {
                let def = self.table_def(table)?;
                Value::Record(Some(
                    def.columns
                        .iter()
                        .filter(|c| !c.hidden)
                        .map(|c| (c.name.clone(), c.ty.to_string(), None))
                        .collect(),
                ))
            }
            Declared::Type(_) | Declared::ColumnType(..) => {
                let ty = match &d.ty {
                    Declared::ColumnType(table, column) => {
                        let def = self.table_def(table)?;
                        def.columns[crate::ddl::user_column(&def, column)?]
                            .ty
                            .to_string()
                    }
                    Declared::Type(ty) => ty.clone(),
                    _ => unreachable!("scalar types only"),
                };
                // The type is checked (42704) even without a default.
                let expression = match &d.default {
                    Some(range) => code.text(range, caught.as_ref()),
                    None => "NULL".into(),
                };
                let value = self.typed(&expression, &ty, &run.scopes).await?;
                if value.is_none() && d.not_null {
                    return Err(not_null(&d.name));
                }
                Value::Scalar { ty, value }
            }
        };
        if let Some(scope) = run.scopes.last_mut() {
            scope.push(Variable {
                name: d.name.clone(),
                value,
                constant: d.constant,
                not_null: d.not_null,
                row_type: matches!(d.ty, Declared::RowType(_)),
            });
        }
        Ok(())
    }

    /// Expression `expression` converted to `ty` as an assignment converts it, as its
    /// output text: a cast, but a string too long for a `varchar(n)` or `char(n)` is 22001
    /// (unless what is past n is spaces), where a cast would cut it.
    async fn typed(
        &mut self,
        expression: &str,
        ty: &str,
        scopes: &Scopes,
    ) -> Result<Option<String>> {
        if let Some((limit, shown)) = length_limit(ty) {
            let text = format!("CAST(({expression}\n) AS text)");
            let Some(text) = self.evaluate(&[text], scopes).await?.remove(0) else {
                return Ok(None);
            };
            if text.trim_end_matches(' ').chars().count() > limit {
                return Err(Error::StringTooLong(format!(
                    "value too long for type {shown}({limit})"
                )));
            }
            let literal = format!("CAST('{}' AS {ty})", text.replace('\'', "''"));
            return Ok(self.evaluate(&[literal], scopes).await?.remove(0));
        }
        let cast = match ty.is_empty() {
            true => expression.to_string(),
            false => format!("CAST(({expression}\n) AS {ty})"),
        };
        Ok(self.evaluate(&[cast], scopes).await?.remove(0))
    }

    fn run_steps<'a>(
        &'a mut self,
        code: &'a Code,
        steps: &'a [Step],
        run: &'a mut Run,
    ) -> BoxFuture<'a, Result<Flow>> {
        Box::pin(async move {
            for step in steps {
                self.interrupt.check()?;
                let flow = match &step.kind {
                    StepKind::Block(block) => self.run_block(code, block, run).await?,
                    kind => self
                        .run_step(code, kind, run)
                        .await
                        .map_err(|e| in_context(e, step.line, kind.name()))?,
                };
                if !matches!(flow, Flow::Next) {
                    return Ok(flow);
                }
            }
            Ok(Flow::Next)
        })
    }

    async fn run_step(&mut self, code: &Code, kind: &StepKind, run: &mut Run) -> Result<Flow> {
        let values = run.caught.last().map(|(_, values)| values.clone());
        let text = |range: &Range<usize>| code.text(range, values.as_ref());
        match kind {
            StepKind::Sql(range) => {
                let count = self.run_sql(&text(range), false, &run.scopes).await?;
                if let Some(count) = count {
                    set_found(&mut run.scopes, count > 0);
                }
                run.row_count = count.unwrap_or(0);
            }
            StepKind::Perform(range) => {
                let count = self
                    .run_sql(&format!("SELECT {}", text(range)), true, &run.scopes)
                    .await?;
                set_found(&mut run.scopes, count.unwrap_or(0) > 0);
                run.row_count = count.unwrap_or(0);
            }
            StepKind::Execute(range) => {
                let [command] = self
                    .evaluate(&[text(range)], &run.scopes)
                    .await?
                    .try_into()
                    .unwrap_or([None]);
                let Some(command) = command else {
                    return Err(Error::NullValueNotAllowed(
                        "query string argument of EXECUTE is null".into(),
                    ));
                };
                // EXECUTE's text is its own: the block's variables are not in it.
                let count = self.run_sql(&command, true, &Scopes::new()).await?;
                run.row_count = count.unwrap_or(0);
            }
            StepKind::If { arms, otherwise } => {
                for (condition, steps) in arms {
                    if self.condition(&text(condition), &run.scopes).await? {
                        return self.run_steps(code, steps, run).await;
                    }
                }
                return self.run_steps(code, otherwise, run).await;
            }
            StepKind::Assert { condition, message } => {
                if !self.condition(&text(condition), &run.scopes).await? {
                    let message = match message {
                        Some(m) => self.evaluate(&[text(m)], &run.scopes).await?.remove(0),
                        None => None,
                    };
                    return Err(Error::Raised {
                        code: "P0004".into(),
                        message: message.unwrap_or_else(|| "assertion failed".into()),
                        detail: None,
                        hint: None,
                    });
                }
            }
            StepKind::Raise(raise) => self.raise(raise, &text, run).await?,
            StepKind::Assign {
                target,
                field,
                value,
            } => {
                self.assign_expression(target, field.as_deref(), &text(value), run)
                    .await?;
            }
            StepKind::Into {
                statement,
                targets,
                strict,
            } => {
                let query = statement.iter().map(text).collect::<Vec<_>>().join(" ");
                let rows = self.read_rows(&query, Some(2), &run.scopes).await?;
                // A write's RETURNING … INTO takes one row, STRICT or not.
                let first = query.split_whitespace().next().unwrap_or("");
                let write = ["INSERT", "UPDATE", "DELETE", "MERGE"]
                    .iter()
                    .any(|w| first.eq_ignore_ascii_case(w));
                if write && rows.values.len() > 1 {
                    return Err(too_many_rows());
                }
                if *strict {
                    match rows.values.len() {
                        0 => {
                            return Err(Error::Raised {
                                code: "P0002".into(),
                                message: "query returned no rows".into(),
                                detail: None,
                                hint: None,
                            });
                        }
                        1 => {}
                        _ => return Err(too_many_rows()),
                    }
                }
                let row = rows.values.first().cloned();
                set_found(&mut run.scopes, row.is_some());
                run.row_count = usize::from(row.is_some());
                self.assign_row(&mut run.scopes, targets, &rows.columns, row)
                    .await?;
            }
            StepKind::Loop { kind, body, label } => {
                return self.run_loop(code, kind, body, label, run).await;
            }
            StepKind::Exit { exit, label, when } => {
                let holds = match when {
                    Some(condition) => self.condition(&text(condition), &run.scopes).await?,
                    None => true,
                };
                if holds {
                    return Ok(match exit {
                        true => Flow::Exit(label.clone()),
                        false => Flow::Continue(label.clone()),
                    });
                }
            }
            StepKind::Case {
                subject,
                arms,
                otherwise,
            } => {
                let chosen = match subject {
                    // A simple CASE evaluates its subject once, comparing it with the
                    // values as `=` does (NULL matches none): one query picks the arm.
                    Some(subject) => {
                        let mut picker = format!("CASE ({}\n)", text(subject));
                        for (arm, (values, _)) in arms.iter().enumerate() {
                            for value in values {
                                picker.push_str(&format!(" WHEN ({}\n) THEN {arm}", text(value)));
                            }
                        }
                        picker.push_str(" END");
                        let [arm] = self
                            .evaluate(&[picker], &run.scopes)
                            .await?
                            .try_into()
                            .unwrap_or([None]);
                        arm.and_then(|a| a.parse::<usize>().ok())
                    }
                    None => {
                        let mut chosen = None;
                        for (arm, (condition, _)) in arms.iter().enumerate() {
                            if self.condition(&text(&condition[0]), &run.scopes).await? {
                                chosen = Some(arm);
                                break;
                            }
                        }
                        chosen
                    }
                };
                if let Some(arm) = chosen {
                    return self.run_steps(code, &arms[arm].1, run).await;
                }
                return match otherwise {
                    Some(steps) => self.run_steps(code, steps, run).await,
                    None => Err(Error::Raised {
                        code: "20000".into(),
                        message: "case not found".into(),
                        detail: None,
                        hint: Some("CASE statement is missing ELSE part.".into()),
                    }),
                };
            }
            StepKind::Diagnostics {
                stacked,
                items,
                line,
            } => {
                for (target, item) in items {
                    let value = self.diagnostic(item, *stacked, *line, run)?;
                    // A record's field (`r.n`) as INTO fills one.
                    let (target, field) = match target.split_once('.') {
                        Some((record, field)) if find(&run.scopes, target).is_none() => {
                            (record, Some(field))
                        }
                        _ => (target.as_str(), None),
                    };
                    self.assign_expression(target, field, &value, run).await?;
                }
            }
            StepKind::Null => {}
            StepKind::Return => return Ok(Flow::Return),
            StepKind::Block(_) => unreachable!("blocks run in run_steps"),
        }
        Ok(Flow::Next)
    }

    /// `target[.field] := expression`: the expression's value converted to the variable's
    /// (or field's) type.
    async fn assign_expression(
        &mut self,
        target: &str,
        field: Option<&str>,
        expression: &str,
        run: &mut Run,
    ) -> Result<()> {
        let ty = match (find(&run.scopes, target), field) {
            (None, _) => {
                return Err(Error::InvalidStatement(format!(
                    "\"{target}\" is not a known variable"
                )));
            }
            (Some(v), _) if v.constant => return Err(constant_assigned(target)),
            (Some(v), None) => match &v.value {
                Value::Scalar { ty, .. } => ty.clone(),
                Value::Record(_) => {
                    return Err(Error::Unsupported(
                        "assigning a whole record in a DO block".into(),
                    ));
                }
            },
            (Some(v), Some(f)) => match &v.value {
                Value::Record(Some(fields)) => match fields.iter().find(|(n, _, _)| n == f) {
                    Some((_, ty, _)) => ty.clone(),
                    None => {
                        return Err(Error::Sql(sql::Error::UnknownColumn {
                            table: target.to_string(),
                            column: f.to_string(),
                        }));
                    }
                },
                _ => {
                    return Err(Error::Raised {
                        code: "55000".into(),
                        message: format!("record \"{target}\" is not assigned yet"),
                        detail: None,
                        hint: None,
                    });
                }
            },
        };
        let value = self.typed(expression, &ty, &run.scopes).await?;
        assign(&mut run.scopes, target, field, value)
    }

    /// The value of GET DIAGNOSTICS item `item` as SQL text: the current statement's
    /// (ROW_COUNT, PG_CONTEXT) or, `stacked`, the handled error's.
    fn diagnostic(&self, item: &str, stacked: bool, line: u64, run: &Run) -> Result<String> {
        let text = |t: Option<&str>| match t {
            Some(t) => format!("'{}'::text", t.replace('\'', "''")),
            None => "''::text".into(),
        };
        if !stacked {
            return Ok(match item {
                "ROW_COUNT" => format!("{}::bigint", run.row_count),
                _ => text(Some(&format!(
                    "PL/pgSQL function inline_code_block line {line} at GET DIAGNOSTICS"
                ))),
            });
        }
        let Some((error, (code, message))) = run.caught.last() else {
            return Err(Error::Raised {
                code: "0Z002".into(),
                message: "GET STACKED DIAGNOSTICS cannot be used outside an exception handler"
                    .into(),
                detail: None,
                hint: None,
            });
        };
        let fields = error
            .as_ref()
            .map(|e| crate::sqlstate::fields(bare(e)))
            .unwrap_or_default();
        Ok(match item {
            "RETURNED_SQLSTATE" => text(Some(code)),
            "MESSAGE_TEXT" => text(Some(message)),
            "PG_EXCEPTION_DETAIL" => text(fields.detail.as_deref()),
            "PG_EXCEPTION_HINT" => text(fields.hint.as_deref()),
            "COLUMN_NAME" => text(fields.column.as_deref()),
            "CONSTRAINT_NAME" => text(fields.constraint.as_deref()),
            "TABLE_NAME" => text(fields.table.as_deref()),
            "SCHEMA_NAME" => text(fields.schema.as_deref()),
            "PG_EXCEPTION_CONTEXT" => text(Some("PL/pgSQL function inline_code_block")),
            // PG_DATATYPE_NAME: errors name no data type here.
            _ => text(None),
        })
    }

    /// A loop's rounds: each runs the body until it ends, EXITs or CONTINUEs.
    async fn run_loop(
        &mut self,
        code: &Code,
        kind: &LoopKind,
        body: &[Step],
        label: &Option<String>,
        run: &mut Run,
    ) -> Result<Flow> {
        let caught = run.caught.last().map(|(_, values)| values.clone());
        let text = |range: &Range<usize>| code.text(range, caught.as_ref());
        // What each round takes before the body runs; the loop's own variables.
        let (mut rounds, own) = match kind {
            LoopKind::Plain => (Rounds::Endless, None),
            LoopKind::While(condition) => (Rounds::While(text(condition)), None),
            LoopKind::Integer {
                name,
                reverse,
                low,
                high,
                step,
            } => {
                let mut bounds = vec![
                    format!("CAST(({low}\n) AS integer)"),
                    format!("CAST(({high}\n) AS integer)"),
                ];
                if let Some(step) = step {
                    bounds.push(format!("CAST(({step}\n) AS integer)"));
                }
                let values = self.evaluate(&bounds, &run.scopes).await?;
                let number = |v: &Option<String>, what: &str| -> Result<i64> {
                    v.as_deref().and_then(|v| v.parse().ok()).ok_or_else(|| {
                        Error::NullValueNotAllowed(format!("{what} of FOR loop cannot be null"))
                    })
                };
                let low = number(&values[0], "lower bound")?;
                let high = number(&values[1], "upper bound")?;
                let step = match values.get(2) {
                    Some(v) => number(v, "BY value")?,
                    None => 1,
                };
                if step <= 0 {
                    return Err(Error::InvalidParameterValue(
                        "BY value of FOR loop must be greater than zero".into(),
                    ));
                }
                // The loop's variable is its own, an integer.
                let variable = Variable {
                    name: name.clone(),
                    value: Value::Scalar {
                        ty: "integer".into(),
                        value: None,
                    },
                    constant: false,
                    not_null: false,
                    row_type: false,
                };
                let rounds = Rounds::Integer {
                    name: name.clone(),
                    next: Some(low),
                    end: high,
                    step: if *reverse { -step } else { step },
                };
                (rounds, Some(vec![variable]))
            }
            LoopKind::Query { targets, query } => {
                let rows = self.read_rows(&text(query), None, &run.scopes).await?;
                // A lone target not declared is the loop's own record.
                let mut own = Vec::new();
                if let [target] = targets.as_slice()
                    && find(&run.scopes, target).is_none()
                {
                    own.push(Variable {
                        name: target.clone(),
                        value: Value::Record(None),
                        constant: false,
                        not_null: false,
                        row_type: false,
                    });
                }
                let rounds = Rounds::Rows {
                    targets: targets.clone(),
                    rows,
                    at: 0,
                };
                (rounds, Some(own))
            }
            LoopKind::Array { name, array } => {
                let array = text(array);
                if self
                    .condition(&format!("({array}\n) IS NULL"), &run.scopes)
                    .await?
                {
                    return Err(Error::NullValueNotAllowed(
                        "FOREACH expression must not be null".into(),
                    ));
                }
                let query = format!("SELECT unnest(({array}\n)) AS element");
                let rows = self.read_rows(&query, None, &run.scopes).await?;
                let rounds = Rounds::Rows {
                    targets: vec![name.clone()],
                    rows,
                    at: 0,
                };
                (rounds, Some(Vec::new()))
            }
        };
        let scoped = own.is_some();
        if let Some(own) = own {
            run.scopes.push(own);
        }
        let result = async {
            let mut round = 0usize;
            loop {
                self.interrupt.check()?;
                // A loop that waits on nothing still lets the connection's timers run
                // (statement_timeout).
                if round % 64 == 63 {
                    tokio::task::yield_now().await;
                }
                match &mut rounds {
                    Rounds::Endless => {}
                    Rounds::While(condition) => {
                        if !self.condition(condition, &run.scopes).await? {
                            break;
                        }
                    }
                    Rounds::Integer {
                        name,
                        next,
                        end,
                        step,
                    } => {
                        let Some(i) = *next else { break };
                        if (*step > 0 && i > *end) || (*step < 0 && i < *end) {
                            break;
                        }
                        // Past integer's range the loop ends, as PostgreSQL's does.
                        *next = i.checked_add(*step).filter(|n| i32::try_from(*n).is_ok());
                        assign(&mut run.scopes, name, None, Some(i.to_string()))?;
                    }
                    Rounds::Rows { targets, rows, at } => {
                        let Some(row) = rows.values.get(*at).cloned() else {
                            break;
                        };
                        *at += 1;
                        self.assign_row(&mut run.scopes, targets, &rows.columns, Some(row))
                            .await?;
                    }
                }
                round += 1;
                match self.run_steps(code, body, run).await? {
                    Flow::Exit(target) if Flow::targets(label, &target) => break,
                    Flow::Continue(target) if Flow::targets(label, &target) => {}
                    Flow::Next => {}
                    // RETURN, or an EXIT or CONTINUE of a loop or block around this one.
                    flow => return Ok((flow, round)),
                }
            }
            Ok::<_, Error>((Flow::Next, round))
        }
        .await;
        if scoped {
            run.scopes.pop();
        }
        let (flow, rounds_run) = result?;
        // A FOR or FOREACH loop sets FOUND: whether it ran a round.
        if !matches!(kind, LoopKind::Plain | LoopKind::While(_)) {
            set_found(&mut run.scopes, rounds_run > 0);
        }
        Ok(flow)
    }

    /// Gives INTO's or FOR's targets a row (`None`: no row, all NULL), each value converted
    /// to its target's type: a lone `record` target takes the row's shape, a `t%ROWTYPE` one
    /// its columns by position, other targets a column each in order.
    async fn assign_row(
        &mut self,
        scopes: &mut Scopes,
        targets: &[String],
        columns: &[(String, String)],
        row: Option<Vec<Option<String>>>,
    ) -> Result<()> {
        let values = row.unwrap_or_else(|| vec![None; columns.len()]);
        let source_type = |i: usize| columns.get(i).map_or("", |(_, ty)| ty.as_str());
        if let [target] = targets
            && let Some(variable) = find(scopes, target)
            && let Value::Record(fields) = &variable.value
        {
            if variable.constant {
                return Err(constant_assigned(target));
            }
            let fields = match (variable.row_type, fields) {
                (true, Some(fields)) => {
                    let mut converted = Vec::with_capacity(fields.len());
                    for (i, (name, ty, _)) in fields.clone().into_iter().enumerate() {
                        let value = values.get(i).cloned().flatten();
                        let value = self.converted(value, source_type(i), &ty).await?;
                        converted.push((name, ty, value));
                    }
                    converted
                }
                _ => columns
                    .iter()
                    .zip(values)
                    .map(|((name, ty), value)| (name.clone(), ty.clone(), value))
                    .collect(),
            };
            if let Some(variable) = find_mut(scopes, target) {
                variable.value = Value::Record(Some(fields));
            }
            return Ok(());
        }
        for (i, target) in targets.iter().enumerate() {
            let (name, field) = match target.split_once('.') {
                Some((record, field)) => (record, Some(field)),
                None => (target.as_str(), None),
            };
            let target_type = match find(scopes, name).map(|v| &v.value) {
                Some(Value::Scalar { ty, .. }) => ty.clone(),
                Some(Value::Record(Some(fields))) => fields
                    .iter()
                    .find(|(n, _, _)| Some(n.as_str()) == field)
                    .map_or(String::new(), |(_, ty, _)| ty.clone()),
                _ => String::new(),
            };
            let value = values.get(i).cloned().flatten();
            let value = self.converted(value, source_type(i), &target_type).await?;
            assign(scopes, name, field, value)?;
        }
        Ok(())
    }

    /// `value` (text of type `from`) as type `to`'s text, as an assignment converts it.
    async fn converted(
        &mut self,
        value: Option<String>,
        from: &str,
        to: &str,
    ) -> Result<Option<String>> {
        let Some(text) = value else {
            return Ok(None);
        };
        if to.is_empty() || from.eq_ignore_ascii_case(to) {
            return Ok(Some(text));
        }
        let literal = format!("'{}'", text.replace('\'', "''"));
        let source = match from.is_empty() {
            true => literal,
            false => format!("CAST({literal} AS {from})"),
        };
        self.typed(&source, to, &Scopes::new()).await
    }

    /// Runs SQL text's statements, their rows thrown away; the rows the last one read or
    /// wrote (`None` for a command that does neither, which leaves FOUND as it was). A
    /// SELECT must be PERFORM's (`perform`), as in PL/pgSQL.
    async fn run_sql(
        &mut self,
        text: &str,
        perform: bool,
        scopes: &Scopes,
    ) -> Result<Option<usize>> {
        let mut count = None;
        for mut statement in crate::session::parse_sql(text)? {
            match &statement {
                Statement::StartTransaction { .. }
                | Statement::Commit { .. }
                | Statement::Rollback { .. }
                | Statement::Savepoint { .. }
                | Statement::ReleaseSavepoint { .. } => {
                    return Err(Error::Unsupported(
                        "transaction control in a DO block".into(),
                    ));
                }
                Statement::Copy { .. } => {
                    return Err(Error::Unsupported("COPY in a DO block".into()));
                }
                _ if !perform && returns_rows(&statement) => {
                    return Err(Error::Raised {
                        code: "42601".into(),
                        message: "query has no destination for result data".into(),
                        detail: None,
                        hint: matches!(statement, Statement::Query(_)).then(|| {
                            "If you want to discard the results of a SELECT, use PERFORM \
                             instead."
                                .into()
                        }),
                    });
                }
                _ => {}
            }
            self.put_variables(&mut statement, scopes)?;
            let counts = takes_variables(&statement);
            let rows = match Box::pin(self.execute_inner(statement, &[])).await? {
                Output::Rows { mut stream, .. } => {
                    let mut rows = 0;
                    while let Some(batch) = stream.next().await {
                        rows += batch?.num_rows();
                    }
                    rows
                }
                Output::Command(tag) => tag
                    .rsplit(' ')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0),
                Output::Uncommitted(result) => result.count().unwrap_or(0),
                _ => 0,
            };
            count = counts.then_some(rows).or(count);
        }
        Ok(count)
    }

    /// A query's rows (up to `limit`), each value as its type's output text.
    async fn read_rows(
        &mut self,
        query: &str,
        limit: Option<usize>,
        scopes: &Scopes,
    ) -> Result<Rows> {
        let mut statements = crate::session::parse_sql(query)?;
        if statements.len() != 1 {
            return Err(Error::InvalidStatement(
                "a query in a DO block must be one statement".into(),
            ));
        }
        let mut statement = statements.remove(0);
        self.put_variables(&mut statement, scopes)?;
        let (schema, mut stream) = match Box::pin(self.execute_inner(statement, &[])).await? {
            Output::Rows { schema, stream, .. } => (schema, stream),
            _ => {
                return Err(Error::Raised {
                    code: "42601".into(),
                    message: "INTO used with a command that cannot return data".into(),
                    detail: None,
                    hint: None,
                });
            }
        };
        let style = self.text_style();
        let columns = schema
            .fields()
            .iter()
            .map(|f| (f.name().to_ascii_lowercase(), field_type(f)))
            .collect();
        let mut values = Vec::new();
        while let Some(batch) = stream.next().await {
            if limit.is_some_and(|l| values.len() >= l) {
                break;
            }
            let batch = batch?;
            for r in 0..batch.num_rows() {
                if limit.is_some_and(|l| values.len() >= l) {
                    break;
                }
                let row = batch
                    .columns()
                    .iter()
                    .map(|column| {
                        if column.is_null(r) {
                            return Ok(None);
                        }
                        let mut text = String::new();
                        crate::output::write_text(column, r, &style, &mut text)
                            .map_err(Error::Internal)?;
                        Ok(Some(text))
                    })
                    .collect::<Result<Vec<_>>>()?;
                values.push(row);
            }
        }
        Ok(Rows { columns, values })
    }

    /// The first row of a query, if it has one.
    async fn first_row(&mut self, query: String, scopes: &Scopes) -> Result<Option<RecordBatch>> {
        let mut statement = crate::session::parse_sql(&query)?.remove(0);
        self.put_variables(&mut statement, scopes)?;
        let Output::Rows { mut stream, .. } = Box::pin(self.execute_inner(statement, &[])).await?
        else {
            return Err(Error::Internal(format!("no rows from {query}")));
        };
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            if batch.num_rows() > 0 {
                return Ok(Some(batch.slice(0, 1)));
            }
        }
        Ok(None)
    }

    /// Expressions' values as their types' output text (`None` for NULL), read in one
    /// SELECT. A boolean is `t` or `f`, as RAISE shows it, where a cast to text would say
    /// `true`; so the query's types are learnt first, and booleans are not cast.
    async fn evaluate(
        &mut self,
        expressions: &[String],
        scopes: &Scopes,
    ) -> Result<Vec<Option<String>>> {
        if expressions.is_empty() {
            return Ok(Vec::new());
        }
        // A line break before `)`: an expression may end in a `--` comment.
        let plain: Vec<String> = expressions.iter().map(|e| format!("({e}\n)")).collect();
        let mut probe =
            crate::session::parse_sql(&format!("SELECT {}", plain.join(", ")))?.remove(0);
        self.put_variables(&mut probe, scopes)?;
        let boolean: Vec<bool> = match self.describe(&probe).await?.schema {
            Some(schema) => schema
                .fields()
                .iter()
                .map(|f| f.data_type() == &DataType::Boolean)
                .collect(),
            None => vec![false; expressions.len()],
        };
        let list: Vec<String> = plain
            .iter()
            .zip(&boolean)
            .map(|(e, &b)| if b { e.clone() } else { format!("{e}::text") })
            .collect();
        let Some(row) = self
            .first_row(format!("SELECT {}", list.join(", ")), scopes)
            .await?
        else {
            return Ok(vec![None; expressions.len()]);
        };
        row.columns()
            .iter()
            .map(|column| {
                if !column.is_valid(0) {
                    return Ok(None);
                }
                if let Some(b) = column.as_boolean_opt() {
                    return Ok(Some(if b.value(0) { "t" } else { "f" }.to_string()));
                }
                let column = datafusion::arrow::compute::cast(column, &DataType::Utf8)
                    .map_err(|e| Error::DataFusion(e.into()))?;
                Ok(Some(column.as_string::<i32>().value(0).to_string()))
            })
            .collect()
    }

    /// An IF's or ASSERT's condition, as PL/pgSQL casts it to boolean: true, or false for
    /// false and NULL.
    async fn condition(&mut self, condition: &str, scopes: &Scopes) -> Result<bool> {
        let Some(row) = self
            .first_row(format!("SELECT ({condition}\n)::boolean"), scopes)
            .await?
        else {
            return Ok(false);
        };
        let value = row.column(0).as_boolean();
        Ok(value.is_valid(0) && value.value(0))
    }

    /// RAISE: a message at its level, or the error it raises.
    async fn raise(
        &mut self,
        raise: &Raise,
        text: &(dyn Fn(&Range<usize>) -> String + Sync),
        run: &mut Run,
    ) -> Result<()> {
        if raise.again {
            let Some((error, (code, message))) = run.caught.last_mut() else {
                return Err(Error::Raised {
                    code: "0Z002".into(),
                    message: "RAISE without parameters cannot be used outside an exception \
                              handler"
                        .into(),
                    detail: None,
                    hint: None,
                });
            };
            // Raised before, and caught again inside the handler: its code and message.
            return Err(error.take().unwrap_or_else(|| Error::Raised {
                code: code.clone(),
                message: message.clone(),
                detail: None,
                hint: None,
            }));
        }
        // The format's arguments, then the USING options, in one SELECT.
        let mut expressions: Vec<String> = raise.args.iter().map(text).collect();
        expressions.extend(raise.options.iter().map(|(_, value)| text(value)));
        let mut values = self.evaluate(&expressions, &run.scopes).await?;
        let mut options = Vec::new();
        for ((name, _), value) in raise.options.iter().zip(values.split_off(raise.args.len())) {
            let Some(value) = value else {
                return Err(Error::NullValueNotAllowed(
                    "RAISE statement option cannot be null".into(),
                ));
            };
            options.push((name.as_str(), value));
        }
        let option = |name: &str| {
            options
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        };
        // The code, and the text a message defaults to: the condition or ERRCODE as
        // written, else the code.
        let mut code = raise.condition.clone();
        if let Some(errcode) = option("ERRCODE") {
            if raise.condition.is_some() {
                return Err(Error::InvalidStatement(
                    "RAISE option already specified: ERRCODE".into(),
                ));
            }
            let known = match crate::sqlstate::condition_code(&errcode) {
                Some(c) => Some(c.to_string()),
                None => checked_sqlstate(&errcode).ok(),
            };
            let Some(known) = known else {
                return Err(condition_code(&errcode).unwrap_err());
            };
            code = Some((known, errcode));
        }
        let message = match (&raise.format, option("MESSAGE")) {
            (Some(_), Some(_)) => {
                return Err(Error::InvalidStatement(
                    "RAISE option already specified: MESSAGE".into(),
                ));
            }
            (Some(format), None) => format_message(format, &values),
            (None, Some(message)) => message,
            (None, None) => match (&code, raise.level) {
                (Some((_, shown)), _) => shown.clone(),
                (None, Level::Exception) => "P0001".into(),
                (None, _) => "00000".into(),
            },
        };
        let code = code.map(|(code, _)| code);
        let severity = match raise.level {
            Level::Exception => {
                return Err(Error::Raised {
                    code: code.unwrap_or_else(|| "P0001".into()),
                    message,
                    detail: option("DETAIL"),
                    hint: option("HINT"),
                });
            }
            // Below client_min_messages' default, as PostgreSQL sends them.
            Level::Debug | Level::Log => return Ok(()),
            Level::Info => "INFO",
            Level::Notice => "NOTICE",
            Level::Warning => "WARNING",
        };
        let code = code.unwrap_or_else(|| match raise.level {
            Level::Warning => "01000".into(),
            _ => "00000".into(),
        });
        self.push_notice(crate::session::Notice {
            severity,
            code,
            message,
            detail: option("DETAIL"),
            hint: option("HINT"),
        });
        Ok(())
    }
}

/// The length a `varchar(n)` or `char(n)` type (as written) limits its strings to, and
/// the type's name as errors show it. `char` alone is `char(1)`.
fn length_limit(ty: &str) -> Option<(usize, &'static str)> {
    let ty = ty.trim().to_ascii_lowercase();
    if ty == "char" || ty == "character" {
        return Some((1, "character"));
    }
    let (name, rest) = ty.split_once('(')?;
    let limit = rest.strip_suffix(')')?.trim().parse().ok()?;
    let shown = match name
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .as_str()
    {
        "varchar" | "character varying" => "character varying",
        "char" | "character" | "bpchar" => "character",
        _ => return None,
    };
    Some((limit, shown))
}

/// 55000 for a record read before a row was assigned to it.
fn not_assigned(record: &str) -> Error {
    Error::Raised {
        code: "55000".into(),
        message: format!("record \"{record}\" is not assigned yet"),
        detail: Some("The tuple structure of a not-yet-assigned record is indeterminate.".into()),
        hint: None,
    }
}

/// Sets FOUND.
fn set_found(scopes: &mut Scopes, found: bool) {
    if let Some(v) = scopes.first_mut().and_then(|s| s.first_mut()) {
        v.value = Value::Scalar {
            ty: "boolean".into(),
            value: Some(if found { "t" } else { "f" }.into()),
        };
    }
}

/// 22004 for NULL into a NOT NULL variable.
fn not_null(name: &str) -> Error {
    Error::NullValueNotAllowed(format!(
        "null value cannot be assigned to variable \"{name}\" declared NOT NULL"
    ))
}

/// Gives variable `name` (or its record's `field`) `value`, its type's text.
fn assign(
    scopes: &mut Scopes,
    name: &str,
    field: Option<&str>,
    value: Option<String>,
) -> Result<()> {
    let Some(variable) = find_mut(scopes, name) else {
        return Err(Error::InvalidStatement(format!(
            "\"{name}\" is not a known variable"
        )));
    };
    if variable.constant {
        return Err(constant_assigned(name));
    }
    if value.is_none() && variable.not_null {
        return Err(not_null(name));
    }
    match (&mut variable.value, field) {
        (Value::Scalar { value: v, .. }, None) => *v = value,
        (Value::Record(Some(fields)), Some(field)) => {
            if let Some((_, _, v)) = fields.iter_mut().find(|(n, _, _)| n == field) {
                *v = value;
            }
        }
        _ => {
            return Err(Error::Unsupported("this assignment in a DO block".into()));
        }
    }
    Ok(())
}

/// P0003, for INTO of more than one row where one is wanted.
fn too_many_rows() -> Error {
    Error::Raised {
        code: "P0003".into(),
        message: "query returned more than one row".into(),
        detail: None,
        hint: Some("Make sure the query returns a single row, or use LIMIT 1.".into()),
    }
}

/// 22005, for an assignment to a CONSTANT.
fn constant_assigned(name: &str) -> Error {
    Error::Raised {
        code: "22005".into(),
        message: format!("variable \"{name}\" is declared CONSTANT"),
        detail: None,
        hint: None,
    }
}

/// Whether a statement returns rows, which PL/pgSQL wants INTO (PERFORM for a SELECT).
fn returns_rows(statement: &Statement) -> bool {
    match statement {
        // WITH … INSERT … RETURNING … SELECT returns rows; WITH … INSERT without RETURNING
        // does not.
        Statement::Query(_) => match crate::with_writes::command_of(statement) {
            Some(Statement::Query(_)) | None => true,
            Some(write) => returns_rows(write),
        },
        Statement::Insert(insert) => insert.returning.is_some(),
        Statement::Update(update) => update.returning.is_some(),
        Statement::Delete(delete) => delete.returning.is_some(),
        Statement::ShowVariable { .. } | Statement::Explain { .. } => true,
        _ => false,
    }
}

/// The error itself, without the context and position wrapped around it.
fn bare(e: &Error) -> &Error {
    match e {
        Error::Context { source, .. } | Error::At { source, .. } => bare(source),
        e => e,
    }
}

/// An error of a DO block's statement, with PostgreSQL's context line ("PL/pgSQL function
/// inline_code_block line 3 at SQL statement"). A position in the statement's own text
/// means nothing in the DO's, and goes.
fn in_context(e: Error, line: u64, statement: &str) -> Error {
    in_context_phrase(e, line, &format!("at {statement}"))
}

/// [`in_context`] with the context's last words given (`during …`).
fn in_context_phrase(e: Error, line: u64, phrase: &str) -> Error {
    let e = match e {
        Error::At { source, .. } => *source,
        e => e,
    };
    match e {
        Error::Context { .. } => e,
        e => Error::Context {
            context: format!("PL/pgSQL function inline_code_block line {line} {phrase}"),
            source: Box::new(e),
        },
    }
}

/// PL/pgSQL's error for a name that is both a variable and a column (or table) in scope.
fn ambiguous(name: &str) -> Error {
    Error::Raised {
        code: "42702".into(),
        message: format!("column reference \"{name}\" is ambiguous"),
        detail: Some("It could refer to either a PL/pgSQL variable or a table column.".into()),
        hint: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(text: &str) -> Result<Block> {
        let code = Code::read(text)?;
        let mut reader = Reader::new(&code, 0);
        reader.block()
    }

    #[test]
    fn reads_drizzle_blocks() {
        let text = "BEGIN\n CREATE TYPE \"public\".\"role\" AS ENUM('a', 'b');\nEXCEPTION\n \
                    WHEN duplicate_object THEN null;\nEND";
        let b = block(text).unwrap();
        assert_eq!(b.steps.len(), 1);
        assert_eq!(b.steps[0].line, 2);
        assert_eq!(b.handlers.len(), 1);
        assert_eq!(b.handlers[0].conditions, vec![Some("42710".to_string())]);
        let code = Code::read(text).unwrap();
        let StepKind::Sql(range) = &b.steps[0].kind else {
            panic!("not SQL");
        };
        assert_eq!(
            code.text(range, None),
            "CREATE TYPE \"public\".\"role\" AS ENUM('a', 'b')"
        );
    }

    #[test]
    fn reads_if_with_case_and_subqueries() {
        let b = block(
            "BEGIN IF NOT EXISTS (SELECT 1 FROM t WHERE CASE WHEN a THEN b END) THEN \
             CREATE TABLE x (id int); ELSIF 1 = 2 THEN NULL; ELSE RAISE NOTICE 'n %', 1; END IF; END",
        )
        .unwrap();
        let StepKind::If { arms, otherwise } = &b.steps[0].kind else {
            panic!("not IF");
        };
        assert_eq!(arms.len(), 2);
        assert_eq!(otherwise.len(), 1);
    }

    #[test]
    fn refuses_what_it_cannot_run() {
        assert!(matches!(
            block("DECLARE c CURSOR FOR SELECT 1; BEGIN NULL; END"),
            Err(Error::Unsupported(_))
        ));
        assert!(matches!(
            block("BEGIN EXIT; END"),
            Err(Error::InvalidStatement(_))
        ));
        // Labels: EXIT names an enclosing one, CONTINUE a loop's; END repeats it.
        assert!(block("BEGIN <<l>> LOOP EXIT l; END LOOP l; END").is_ok());
        assert!(block("<<b>> BEGIN <<l>> LOOP EXIT b WHEN true; END LOOP; END b").is_ok());
        assert!(matches!(
            block("BEGIN LOOP EXIT l; END LOOP; END"),
            Err(Error::InvalidStatement(_))
        ));
        assert!(matches!(
            block("<<b>> BEGIN LOOP CONTINUE b; END LOOP; END"),
            Err(Error::InvalidStatement(_))
        ));
        assert!(matches!(
            block("BEGIN <<l>> LOOP EXIT; END LOOP m; END"),
            Err(Error::InvalidStatement(_))
        ));
        assert!(matches!(
            block("BEGIN <<l>> NULL; END"),
            Err(Error::InvalidStatement(_))
        ));
        assert!(matches!(
            block("BEGIN GET DIAGNOSTICS n = RETURNED_SQLSTATE; END"),
            Err(Error::InvalidStatement(_))
        ));
        assert!(matches!(
            block("BEGIN NULL; EXCEPTION WHEN no_such_thing THEN NULL; END"),
            Err(Error::UndefinedObject(_))
        ));
        assert!(matches!(
            block("BEGIN RAISE NOTICE '% %', 1; END"),
            Err(Error::InvalidStatement(_))
        ));
    }

    #[test]
    fn formats_and_substitutes() {
        assert_eq!(placeholders("a % b %% c %"), 2);
        assert_eq!(
            format_message("x=% y=% 100%%", &[Some("1".into()), None]),
            "x=1 y=<NULL> 100%"
        );
        let code = Code::read("INSERT INTO log VALUES (sqlstate, SQLERRM, 'sqlerrm')").unwrap();
        let all = 0..code.tokens.len();
        assert_eq!(
            code.text(&all, Some(&("23505".into(), "it's".into()))),
            "INSERT INTO log VALUES ('23505', 'it''s', 'sqlerrm')"
        );
        assert!(crate::sqlstate::condition_matches("23000", "23505"));
        assert!(!crate::sqlstate::condition_matches("23505", "23502"));
    }
}
