//! DO: PostgreSQL's anonymous PL/pgSQL blocks, as migrations write them. drizzle-kit wraps
//! each CREATE TYPE and foreign key in one (`DO $$ BEGIN … EXCEPTION WHEN duplicate_object
//! THEN null; END $$`), and hand-written migrations test the catalogs first (`IF NOT EXISTS
//! (SELECT 1 FROM pg_type …) THEN … END IF`).
//!
//! The part of PL/pgSQL without variables: nested blocks with EXCEPTION handlers (a handler
//! undoes its block's work through a savepoint, as PostgreSQL's subtransaction does), IF /
//! ELSIF / ELSE, SQL statements, PERFORM, EXECUTE of a string, RAISE at every level with
//! USING options, ASSERT, NULL and RETURN. Inside a handler `SQLSTATE` and `SQLERRM` are the
//! caught error's code and message. DECLARE, loops, labels and cursors are 0A000.
//!
//! The block runs in the session's transaction, or in one of its own that commits when the
//! block ends, so a DO is atomic as in PostgreSQL.

use crate::error::{Error, Result};
use crate::session::{Output, Session};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::DataType;
use datafusion::sql::sqlparser::ast::{self, Statement};
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

/// A block: `BEGIN steps [EXCEPTION WHEN … THEN steps …] END`.
struct Block {
    steps: Vec<Step>,
    handlers: Vec<Handler>,
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

/// Reads a block's code into steps.
struct Reader<'a> {
    code: &'a Code,
    at: usize,
}

impl Reader<'_> {
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
        if self.at_word("DECLARE") {
            return Err(Error::Unsupported(
                "DECLARE in a DO block (variables)".into(),
            ));
        }
        if self.token() == Some(&Token::ShiftLeft) {
            return Err(Error::Unsupported("labels in a DO block".into()));
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
        if let Some(Token::Word(label)) = self.token() {
            return Err(Error::InvalidStatement(format!(
                "end label \"{}\" specified for unlabeled block",
                label.value
            )));
        }
        Ok(Block { steps, handlers })
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
            let word = self.word();
            if word.as_deref().is_some_and(|w| ENDS.contains(&w)) {
                return Ok(steps);
            }
            let line = self.line();
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
                Some(
                    w @ ("LOOP" | "WHILE" | "FOR" | "FOREACH" | "EXIT" | "CONTINUE" | "CASE"
                    | "GET" | "OPEN" | "FETCH" | "MOVE" | "CLOSE" | "COMMIT" | "ROLLBACK"),
                ) => {
                    return Err(Error::Unsupported(format!("{w} in a DO block")));
                }
                _ if self.token() == Some(&Token::ShiftLeft) => {
                    return Err(Error::Unsupported("labels in a DO block".into()));
                }
                _ => {
                    let statement = self.until(&[";"])?;
                    self.expect_semicolon()?;
                    StepKind::Sql(statement)
                }
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

impl Session {
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
        let mut reader = Reader { code: &code, at: 0 };
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
        let mut caught = Caught::new();
        let result = self.run_block(&code, &block, &mut caught).await;
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

    /// Runs a block; an error one of its handlers catches undoes the block's work and runs
    /// the handler.
    fn run_block<'a>(
        &'a mut self,
        code: &'a Code,
        block: &'a Block,
        caught: &'a mut Caught,
    ) -> BoxFuture<'a, Result<Flow>> {
        Box::pin(async move {
            if block.handlers.is_empty() {
                return self.run_steps(code, &block.steps, caught).await;
            }
            let depth = self.txn.as_ref().map_or(0, |t| t.savepoints.len());
            let savepoint = ast::Ident::new(format!("__partita_do_{depth}"));
            self.savepoint(&savepoint)?;
            let error = match self.run_steps(code, &block.steps, caught).await {
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
            caught.push((Some(error), (state, message)));
            let flow = self.run_steps(code, &handler.steps, caught).await;
            caught.pop();
            flow
        })
    }

    fn run_steps<'a>(
        &'a mut self,
        code: &'a Code,
        steps: &'a [Step],
        caught: &'a mut Caught,
    ) -> BoxFuture<'a, Result<Flow>> {
        Box::pin(async move {
            for step in steps {
                self.interrupt.check()?;
                let flow = match &step.kind {
                    StepKind::Block(block) => self.run_block(code, block, caught).await?,
                    kind => self
                        .run_step(code, kind, caught)
                        .await
                        .map_err(|e| in_context(e, step.line, kind.name()))?,
                };
                if let Flow::Return = flow {
                    return Ok(Flow::Return);
                }
            }
            Ok(Flow::Next)
        })
    }

    async fn run_step(
        &mut self,
        code: &Code,
        kind: &StepKind,
        caught: &mut Caught,
    ) -> Result<Flow> {
        let values = caught.last().map(|(_, values)| values.clone());
        let text = |range: &Range<usize>| code.text(range, values.as_ref());
        match kind {
            StepKind::Sql(range) => self.run_sql(&text(range), false).await?,
            StepKind::Perform(range) => {
                self.run_sql(&format!("SELECT {}", text(range)), true)
                    .await?
            }
            StepKind::Execute(range) => {
                let [command] = self
                    .evaluate(&[text(range)])
                    .await?
                    .try_into()
                    .unwrap_or([None]);
                let Some(command) = command else {
                    return Err(Error::NullValueNotAllowed(
                        "query string argument of EXECUTE is null".into(),
                    ));
                };
                self.run_sql(&command, true).await?;
            }
            StepKind::If { arms, otherwise } => {
                for (condition, steps) in arms {
                    if self.condition(&text(condition)).await? {
                        return self.run_steps(code, steps, caught).await;
                    }
                }
                return self.run_steps(code, otherwise, caught).await;
            }
            StepKind::Assert { condition, message } => {
                if !self.condition(&text(condition)).await? {
                    let message = match message {
                        Some(m) => self.evaluate(&[text(m)]).await?.remove(0),
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
            StepKind::Raise(raise) => self.raise(raise, &text, caught).await?,
            StepKind::Null => {}
            StepKind::Return => return Ok(Flow::Return),
            StepKind::Block(_) => unreachable!("blocks run in run_steps"),
        }
        Ok(Flow::Next)
    }

    /// Runs SQL text's statements, their rows thrown away. A SELECT must be PERFORM's
    /// (`perform`), as in PL/pgSQL.
    async fn run_sql(&mut self, text: &str, perform: bool) -> Result<()> {
        for statement in crate::session::parse_sql(text)? {
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
            let output = Box::pin(self.execute_inner(statement, &[])).await?;
            if let Output::Rows { mut stream, .. } = output {
                while let Some(batch) = stream.next().await {
                    batch?;
                }
            }
        }
        Ok(())
    }

    /// The first row of a query, if it has one.
    async fn first_row(&mut self, query: String) -> Result<Option<RecordBatch>> {
        let statement = crate::session::parse_sql(&query)?.remove(0);
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
    async fn evaluate(&mut self, expressions: &[String]) -> Result<Vec<Option<String>>> {
        if expressions.is_empty() {
            return Ok(Vec::new());
        }
        // A line break before `)`: an expression may end in a `--` comment.
        let plain: Vec<String> = expressions.iter().map(|e| format!("({e}\n)")).collect();
        let probe = crate::session::parse_sql(&format!("SELECT {}", plain.join(", ")))?.remove(0);
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
            .first_row(format!("SELECT {}", list.join(", ")))
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
    async fn condition(&mut self, condition: &str) -> Result<bool> {
        let Some(row) = self
            .first_row(format!("SELECT ({condition}\n)::boolean"))
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
        caught: &mut Caught,
    ) -> Result<()> {
        if raise.again {
            let Some((error, (code, message))) = caught.last_mut() else {
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
        let mut values = self.evaluate(&expressions).await?;
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
    let e = match e {
        Error::At { source, .. } => *source,
        e => e,
    };
    match e {
        Error::Context { .. } => e,
        e => Error::Context {
            context: format!("PL/pgSQL function inline_code_block line {line} at {statement}"),
            source: Box::new(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(text: &str) -> Result<Block> {
        let code = Code::read(text)?;
        let mut reader = Reader { code: &code, at: 0 };
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
            block("DECLARE x int; BEGIN NULL; END"),
            Err(Error::Unsupported(_))
        ));
        assert!(matches!(
            block("BEGIN LOOP EXIT; END LOOP; END"),
            Err(Error::Unsupported(_))
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
