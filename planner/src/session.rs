//! A SQL session: statement dispatch, transactions, settings.
//!
//! Autocommit reads run on one snapshot; autocommit writes run in an implicit transaction that
//! commits before the statement returns and is retried (a few times, with backoff) when it
//! loses an optimistic-concurrency race, since nothing of it reached the client yet. Inside
//! BEGIN … COMMIT every statement reads and writes the session's transaction; after an error
//! the block only accepts COMMIT/ROLLBACK (25P02), as in PostgreSQL.

use crate::classify::ScanClass;
use crate::dml;
use crate::error::{Error, Result};
use crate::executor::Executor;
use crate::interrupt::{Interrupt, InterruptibleJoins};
use crate::provider::{Reader, SharedTxn};
use crate::schema::{PartitaSchema, StatementScope};
use crate::zone::Zone;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider};
use datafusion::execution::context::{SessionConfig, SessionContext};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    self, Expr, ObjectType, Statement, TransactionModifier, Value as AstValue, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use sql::{Catalog, CatalogChanges, SqlType};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use storage::{Store, StoreOptions};

/// The database a server serves: the store and the committed catalog, shared by sessions.
#[derive(Clone)]
pub struct Database {
    pub store: Store,
    pub catalog: Catalog,
    pub executor: Arc<Executor>,
    /// The sessions' advisory locks.
    pub advisory: Arc<crate::advisory::AdvisoryLocks>,
    /// The sessions' LISTENs, which NOTIFY sends to.
    pub channels: Arc<crate::notify::Channels>,
}

impl Database {
    pub fn open(path: &Path, options: StoreOptions) -> Result<Database> {
        let store = Store::open(path, options)?;
        let catalog = Catalog::load(&store)?;
        // Temporary tables are their sessions'; a crash leaves them behind. Failing to
        // drop them is no reason not to start: they are dropped at the next start.
        if let Err(e) = catalog.drop_temporary_tables(&store, None) {
            eprintln!("partita: temporary tables left from before are kept for now: {e}");
            crate::temp::skip_schemas(&catalog);
        }
        let executor =
            Arc::new(Executor::new().map_err(|e| Error::Storage(storage::Error::Io(e)))?);
        Ok(Database {
            store,
            catalog,
            executor,
            advisory: Arc::default(),
            channels: Arc::default(),
        })
    }

    pub fn session(&self) -> Session {
        Session::new(self.clone())
    }
}

/// What a statement produced.
pub enum Output {
    /// Rows to stream to the client; `tag` is the command tag without the row count
    /// ("SELECT", "INSERT 0", "UPDATE", "DELETE").
    Rows {
        schema: SchemaRef,
        stream: SendableRecordBatchStream,
        tag: String,
    },
    /// A complete command tag ("CREATE TABLE", "INSERT 0 3", "BEGIN").
    Command(String),
    /// COPY FROM STDIN: the client sends the data next (see `crate::copy`).
    CopyIn(crate::copy::CopyIn),
    /// COPY FROM a Parquet file: run it with `Session::load_parquet`.
    CopyFromParquet(crate::copy::ParquetLoad),
    /// COPY TO STDOUT: rows to send in the COPY format.
    CopyOut {
        schema: SchemaRef,
        stream: SendableRecordBatchStream,
        format: crate::copy::CopyFormat,
    },
    /// A write that opened an implicit block's transaction (see `set_implicit_block`). Its
    /// result is finished with the block's commit (`end_implicit`), so that RETURNING shows
    /// the system columns the commit assigned, or with `None` when the client must see it
    /// before the block ends.
    Uncommitted(dml::WriteResult),
}

impl Output {
    /// Rows already in memory (SHOW, FETCH, RETURNING), streamed like any other result.
    pub fn from_batches(
        schema: SchemaRef,
        batches: Vec<datafusion::arrow::array::RecordBatch>,
        tag: &str,
    ) -> Output {
        let stream = datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
            Arc::clone(&schema),
            futures::stream::iter(batches.into_iter().map(Ok)),
        );
        Output::Rows {
            schema,
            stream: Box::pin(stream),
            tag: tag.to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnStatus {
    Idle,
    InBlock,
    Failed,
}

/// A bound parameter: its text form (None for NULL) and, when known, its type.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub value: Option<String>,
    pub ty: Option<SqlType>,
}

/// A SAVEPOINT: its name, the transaction's writes, catalog changes and the session's
/// settings when it was made.
pub(crate) type SavepointState = (
    String,
    storage::Savepoint,
    CatalogChanges,
    Vec<(String, String)>,
    crate::notify::Mark,
);

pub(crate) struct OpenTxn {
    pub txn: SharedTxn,
    pub failed: bool,
    /// SAVEPOINTs, oldest first.
    pub savepoints: Vec<SavepointState>,
    /// Opened by a write of an implicit block (see `Session::set_implicit_block`), not by
    /// BEGIN: the wire layer ends it with `end_implicit`.
    pub implicit: bool,
    /// When it began (microseconds since the epoch): `now()` in it.
    pub started: i64,
    /// READ ONLY: writes are refused (25006).
    pub read_only: bool,
    /// Statements' changes whose DEFERRABLE foreign keys are checked at commit.
    pub deferred_checks: std::sync::Mutex<Vec<crate::foreign::Pending>>,
    /// What SET CONSTRAINTS said in this transaction.
    pub constraint_modes: crate::foreign::ConstraintModes,
}

impl OpenTxn {
    fn begin(db: &Database, implicit: bool) -> OpenTxn {
        OpenTxn {
            read_only: false,
            txn: Arc::new(Mutex::new(Some(db.store.begin()))),
            failed: false,
            savepoints: Vec::new(),
            implicit,
            started: chrono::Utc::now().timestamp_micros(),
            deferred_checks: Default::default(),
            constraint_modes: Default::default(),
        }
    }
}

/// A message sent to the client beside a statement's result (NoticeResponse).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// NOTICE, WARNING or INFO.
    pub severity: &'static str,
    pub code: String,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

pub struct Session {
    pub(crate) db: Database,
    pub(crate) ctx: SessionContext,
    pub(crate) scope: Arc<Mutex<StatementScope>>,
    pub(crate) txn: Option<OpenTxn>,
    settings: Settings,
    /// Settings changed in the transaction block, with the values they had: SET LOCAL's
    /// (`true`) go back at its end, SET's when it rolls back, as in PostgreSQL.
    saved_settings: Vec<(String, String, bool)>,
    notices: Vec<Notice>,
    /// What the running DROP takes with it ("view v"), told in one notice at its end.
    cascaded: Vec<String>,
    pub(crate) cursors: std::collections::HashMap<String, crate::cursor::Cursor>,
    pub(crate) interrupt: Interrupt,
    /// False while EXPLAIN plans: it shows accesses `partita.max_scan_class` would refuse.
    pub(crate) guard_scans: bool,
    /// Logical plans of prepared queries, by statement text.
    kept_plans: std::collections::HashMap<String, KeptPlan>,
    /// Statements `PREPARE name (types) AS …` made, by name, with their parameters' types.
    sql_prepared: std::collections::HashMap<String, (Statement, Vec<Option<SqlType>>)>,
    /// Simple-protocol SELECTs by their parameterized text (see `autoparam`).
    pub(crate) simple_points: std::collections::HashMap<String, Arc<crate::fastpath::SimplePoint>>,
    zone: Zone,
    /// Changed settings not yet reported to the client (see `take_reported`).
    reported: Vec<(String, String)>,
    /// Whether a write outside a transaction block opens an implicit transaction that
    /// stays open for the statements after it (see `set_implicit_block`).
    pub(crate) implicit_block: bool,
    /// The type planner, which types `timestamptz` casts in the session's zone.
    types: crate::casts::PostgresTypes,
    /// The open transaction block's start, which `now()` reads.
    transaction_start: crate::functions::TransactionStart,
    /// The session's advisory locks, released when it ends.
    advisory: Arc<crate::advisory::AdvisoryOwner>,
    /// What `currval` and `lastval` answer.
    pub(crate) sequence_values: crate::sequences::SessionValues,
    /// The session's LISTENs and its transaction's NOTIFYs.
    listener: Arc<crate::notify::Listener>,
    /// Whether the session has made a temporary table with an ON COMMIT action, which
    /// every commit then looks for (see `temp::on_commit`).
    pub(crate) temp_on_commit: bool,
    /// Whether a query's OID-alias columns are sent by name (see `show_oid_aliases`): not
    /// while a DO block runs, whose variables take the OIDs.
    pub(crate) alias_names: bool,
}

impl Drop for Session {
    fn drop(&mut self) {
        crate::temp::drop_at_end(self);
    }
}

/// The functions `Session::own_functions` hands out.
pub(crate) const SESSION_FUNCTIONS: &[&str] = &[
    "pg_backend_pid",
    "pg_notify",
    "nextval",
    "currval",
    "setval",
    "lastval",
    "current_setting",
    "pg_advisory_lock",
    "pg_advisory_lock_shared",
    "pg_advisory_xact_lock",
    "pg_advisory_xact_lock_shared",
    "pg_try_advisory_lock",
    "pg_try_advisory_lock_shared",
    "pg_try_advisory_xact_lock",
    "pg_try_advisory_xact_lock_shared",
    "pg_advisory_unlock",
    "pg_advisory_unlock_shared",
    "pg_advisory_unlock_all",
];

/// A prepared query's plan with its placeholders, valid while the catalog is unchanged.
struct KeptPlan {
    generation: u64,
    plan: LogicalPlan,
    schema: SchemaRef,
    types: Vec<datafusion::arrow::datatypes::DataType>,
}

/// A statement as `parse_sql` leaves it (after the rewrites every statement gets), as text:
/// what the rewrites' tests compare.
#[cfg(test)]
pub(crate) fn rewritten(sql: &str) -> String {
    parse_sql(sql).unwrap().remove(0).to_string()
}

/// The byte offset of a 1-based line and column (in characters) in `text`.
pub(crate) fn byte_offset(text: &str, line: u64, column: u64) -> Option<usize> {
    let mut offset = 0;
    for (n, l) in text.split_inclusive('\n').enumerate() {
        if n as u64 + 1 == line {
            let within = l.char_indices().nth(column.checked_sub(1)? as usize)?.0;
            return Some(offset + within);
        }
        offset += l.len();
    }
    None
}

/// `CALL procedure('text')`: how a statement sqlparser does not know (REFRESH MATERIALIZED
/// VIEW, ALTER SEQUENCE) is carried from `parse_sql` to the session, `text` saying what
/// it does.
pub(crate) fn internal_call(procedure: &str, text: &str) -> Statement {
    let text = ast::Expr::value(ast::Value::SingleQuotedString(text.to_string()));
    Statement::Call(ast::Function {
        name: ast::ObjectName::from(vec![ast::Ident::new(procedure)]),
        uses_odbc_syntax: false,
        parameters: ast::FunctionArguments::None,
        args: ast::FunctionArguments::List(ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: vec![ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(text))],
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// The text of an `internal_call` of `procedure`, when `call` is one.
pub(crate) fn internal_call_text(call: &ast::Function, procedure: &str) -> Option<String> {
    if !call.name.to_string().eq_ignore_ascii_case(procedure) {
        return None;
    }
    let ast::FunctionArguments::List(list) = &call.args else {
        return None;
    };
    match list.args.as_slice() {
        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v)))] => {
            match &v.value {
                ast::Value::SingleQuotedString(text) => Some(text.clone()),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Parses SQL text with PostgreSQL's dialect.
pub fn parse_sql(text: &str) -> Result<Vec<Statement>> {
    use datafusion::sql::sqlparser::keywords::Keyword;
    use datafusion::sql::sqlparser::tokenizer::Token;
    let syntax = |e: datafusion::sql::sqlparser::parser::ParserError| syntax_error(text, e);
    let dialect = PostgreSqlDialect {};
    let mut tokens = datafusion::sql::sqlparser::tokenizer::Tokenizer::new(&dialect, text)
        .with_unescape(true)
        .tokenize_with_location()
        .map_err(|e| syntax(e.into()))?;
    // `""`, which sqlparser takes for a name, is no identifier in PostgreSQL.
    if let Some(empty) = tokens.iter().find(
        |t| matches!(&t.token, Token::Word(w) if w.quote_style == Some('"') && w.value.is_empty()),
    ) {
        let at = empty.span.start;
        let message = "zero-length delimited identifier at or near \"\"\"\"";
        let error = Error::InvalidStatement(message.into());
        return Err(match byte_offset(text, at.line, at.column) {
            Some(offset) => Error::At {
                position: text[..offset].chars().count() + 1,
                source: Box::new(error),
            },
            None => error,
        });
    }
    // Identity options are put in order first: that changes the number of tokens, and
    // the OVERRIDING clauses are found by their places.
    crate::sequences::order_identity_options(&mut tokens);
    drop_deferrable(&mut tokens);
    key_row_locks(&mut tokens);
    drop_index_concurrently(&mut tokens);
    crate::ddl::mark_drop_expression(&mut tokens);
    crate::arrays::subscript_assignments(&mut tokens);
    crate::arrays::standard_array_types(&mut tokens);
    crate::like::mark(&mut tokens);
    crate::query_forms::mark_symmetric_between(&mut tokens);
    crate::query_forms::trim_without_characters(&mut tokens);
    crate::cursor::name_cursor_after_from(&mut tokens);
    let overrides = crate::dml::take_overriding(&mut tokens);
    let conflict_targets = crate::dml::take_conflict_targets(text, &mut tokens);
    let mut parser = Parser::new(&dialect).with_tokens_with_locations(tokens);
    let mut statements = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        if parser.peek_token() == Token::EOF {
            break;
        }
        let start = parser.index();
        // REFRESH MATERIALIZED VIEW, which sqlparser does not know, becomes a CALL of
        // crate::view::REFRESH_PROCEDURE with the view's name.
        let statement = if parser.parse_keywords(&[
            Keyword::REFRESH,
            Keyword::MATERIALIZED,
            Keyword::VIEW,
        ]) {
            let _ = parser.parse_keyword(Keyword::CONCURRENTLY);
            let name = parser.parse_object_name(false).map_err(syntax)?;
            if parser.parse_keyword(Keyword::WITH) {
                if parser.parse_keyword(Keyword::NO) {
                    return Err(Error::Unsupported("REFRESH … WITH NO DATA".into()));
                }
                parser.expect_keyword_is(Keyword::DATA).map_err(syntax)?;
            }
            crate::view::refresh_call(&name)?
        } else if let Some(temporary) = [
            &[Keyword::CREATE, Keyword::SEQUENCE][..],
            &[Keyword::CREATE, Keyword::TEMPORARY, Keyword::SEQUENCE],
            &[Keyword::CREATE, Keyword::TEMP, Keyword::SEQUENCE],
        ]
        .iter()
        .position(|words| parser.parse_keywords(words))
        {
            crate::sequences::parse_create(&mut parser, temporary > 0)
                .map_err(crate::sequences::option_error(syntax))?
        } else if parser.peek_keyword(Keyword::ALTER) {
            let from = parser.peek_token().span.start;
            let [_, second, third] = parser.peek_tokens::<3>();
            let keyword = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k);
            let sequence =
                keyword(&second, Keyword::SEQUENCE) || crate::sequences::at_identity_alter(&parser);
            let view = keyword(&second, Keyword::VIEW)
                || (keyword(&second, Keyword::MATERIALIZED) && keyword(&third, Keyword::VIEW));
            if sequence || view {
                parser.expect_keyword_is(Keyword::ALTER).map_err(syntax)?;
                let Some(from) = byte_offset(text, from.line, from.column) else {
                    return Err(Error::Syntax("ALTER".into()));
                };
                // The statement's text, up to its end: read again when it runs.
                match sequence {
                    true => crate::sequences::check_alter(&mut parser)
                        .map_err(crate::sequences::option_error(syntax))?,
                    false => {
                        crate::plain_view::parse_alter(&mut parser).map_err(syntax)?;
                    }
                }
                let end = parser.peek_token().span.start;
                let to = match parser.peek_token().token {
                    Token::EOF => text.len(),
                    _ => byte_offset(text, end.line, end.column).unwrap_or(text.len()),
                };
                let text = text[from..to].trim_end();
                match sequence {
                    true => crate::sequences::alter_call(text),
                    false => internal_call(crate::plain_view::ALTER_PROCEDURE, text),
                }
            } else {
                parser.parse_statement().map_err(syntax)?
            }
        } else if parser.parse_keyword(Keyword::DO) {
            crate::do_block::parse(&mut parser).map_err(syntax)?
        } else if parser.peek_keyword(Keyword::TABLE) {
            // `TABLE t [ORDER BY …]` is `SELECT * FROM t …`: the text is read again so.
            let at = parser.peek_token().span.start;
            let Some(offset) = byte_offset(text, at.line, at.column) else {
                return Err(Error::Syntax("TABLE".into()));
            };
            let rewritten = format!("{}SELECT * FROM{}", &text[..offset], &text[offset + 5..]);
            return parse_sql(&rewritten);
        } else if matches!(&parser.peek_token().token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("move"))
        {
            parser.next_token();
            crate::cursor::parse_move(&mut parser).map_err(syntax)?
        } else if matches!(
            parser.peek_tokens::<2>(),
            [Token::Word(set), Token::Word(constraints)]
                if set.keyword == Keyword::SET
                    && constraints.quote_style.is_none()
                    && constraints.value.eq_ignore_ascii_case("constraints")
        ) {
            parser.next_token();
            parser.next_token();
            crate::foreign::parse_set_constraints(&mut parser).map_err(syntax)?
        } else if parser.parse_keywords(&[Keyword::RESET, Keyword::TIME, Keyword::ZONE]) {
            // RESET TIME ZONE, PostgreSQL's spelling of RESET timezone.
            Statement::Reset(ast::ResetStatement {
                reset: ast::Reset::ConfigurationParameter(ast::ObjectName::from(vec![
                    ast::Ident::new("timezone"),
                ])),
            })
        } else {
            parser.parse_statement().map_err(syntax)?
        };
        let mut statement = statement;
        if let Some(overriding) = overrides
            .iter()
            .find(|(at, _)| (start..parser.index()).contains(at))
        {
            crate::dml::mark_overriding(&mut statement, overriding.1)?;
        }
        crate::dml::mark_conflict_targets(&mut statement, &conflict_targets);
        crate::query_forms::distinct_from_precedence(&mut statement);
        crate::query_forms::symmetric_between(&mut statement);
        crate::query_forms::parenthesize_distinct(&mut statement);
        crate::pg_catalog::normalize(&mut statement);
        crate::wildcard::qualify_by_from(&mut statement);
        crate::literals::normalize(&mut statement)?;
        crate::json::rewrite(&mut statement)?;
        // `i.c[1]` as a subscript of the column, before LATERAL rewrites rename `i`.
        crate::subquery::qualified_subscripts(&mut statement);
        crate::srf::rewrite(&mut statement)?;
        crate::query_forms::rewrite(&mut statement)?;
        crate::rows::row_constructors(&mut statement);
        crate::functions::rewrite::rewrite(&mut statement);
        crate::arrays::rewrite(&mut statement);
        statements.push(statement);
        if parser.peek_token() != Token::EOF {
            parser.expect_token(&Token::SemiColon).map_err(syntax)?;
        }
    }
    Ok(statements)
}

/// Takes `[NOT] DEFERRABLE` out of BEGIN, START TRANSACTION and SET TRANSACTION / SET
/// SESSION CHARACTERISTICS, which sqlparser does not read. It only matters to PostgreSQL for
/// a SERIALIZABLE READ ONLY transaction, which waits for a snapshot no other transaction can
/// invalidate; Partita's read-only transactions read one consistent snapshot and never fail.
/// `DROP INDEX CONCURRENTLY` (Rails' `algorithm: :concurrently`), which sqlparser does not
/// parse, is DROP INDEX: a drop here never blocks writers for long.
fn drop_index_concurrently(tokens: &mut Vec<datafusion::sql::sqlparser::tokenizer::TokenWithSpan>) {
    use datafusion::sql::sqlparser::keywords::Keyword;
    use datafusion::sql::sqlparser::tokenizer::Token;
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
        .collect();
    let word = |j: usize| match &tokens[j].token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
        _ => None,
    };
    let mut drop = Vec::new();
    for at in significant.windows(3) {
        if word(at[0]) == Some(Keyword::DROP)
            && word(at[1]) == Some(Keyword::INDEX)
            && word(at[2]) == Some(Keyword::CONCURRENTLY)
        {
            drop.push(at[2]);
        }
    }
    for j in drop.into_iter().rev() {
        tokens.remove(j);
    }
}

/// `FOR NO KEY UPDATE` and `FOR KEY SHARE`, which sqlparser does not know, lock as `FOR
/// UPDATE` and `FOR SHARE` do: the stronger lock, which under optimistic serializable
/// transactions conflicts where the weaker one would, and no less.
fn key_row_locks(tokens: &mut Vec<datafusion::sql::sqlparser::tokenizer::TokenWithSpan>) {
    use datafusion::sql::sqlparser::keywords::Keyword;
    use datafusion::sql::sqlparser::tokenizer::Token;
    let word = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
        _ => None,
    };
    let mut i = 0;
    while i < tokens.len() {
        if word(&tokens[i].token) != Some(Keyword::FOR) {
            i += 1;
            continue;
        }
        // The significant tokens after FOR: the words to drop end before UPDATE or SHARE.
        let next: Vec<usize> = (i + 1..tokens.len())
            .filter(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
            .take(3)
            .collect();
        let words: Vec<Option<Keyword>> = next.iter().map(|&j| word(&tokens[j].token)).collect();
        let drop_to = match words.as_slice() {
            [Some(Keyword::NO), Some(Keyword::KEY), Some(Keyword::UPDATE)] => Some(next[2]),
            [Some(Keyword::KEY), Some(Keyword::SHARE), ..] => Some(next[1]),
            _ => None,
        };
        if let Some(to) = drop_to {
            tokens.drain(next[0]..to);
        }
        i += 1;
    }
}

fn drop_deferrable(tokens: &mut Vec<datafusion::sql::sqlparser::tokenizer::TokenWithSpan>) {
    use datafusion::sql::sqlparser::keywords::Keyword;
    use datafusion::sql::sqlparser::tokenizer::Token;
    let word = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
        _ => None,
    };
    let mut i = 0;
    // The keywords of the statement so far, up to three.
    let mut start: Vec<Keyword> = Vec::new();
    while i < tokens.len() {
        let token = &tokens[i].token;
        if matches!(token, Token::SemiColon) {
            start.clear();
        } else if let Some(keyword) = word(token)
            && start.len() < 3
        {
            start.push(keyword);
        }
        let transaction = matches!(
            start.as_slice(),
            [Keyword::BEGIN, ..]
                | [Keyword::START, Keyword::TRANSACTION, ..]
                | [Keyword::SET, Keyword::TRANSACTION, ..]
                | [Keyword::SET, Keyword::SESSION, Keyword::CHARACTERISTICS]
        );
        if !(transaction && word(token) == Some(Keyword::DEFERRABLE)) {
            i += 1;
            continue;
        }
        // The DEFERRABLE, a NOT before it, and the comma that separates it from another mode.
        let significant = |t: &Token| !matches!(t, Token::Whitespace(_));
        let mut from = i;
        let before = (0..from).rev().find(|&j| significant(&tokens[j].token));
        if let Some(j) = before.filter(|&j| word(&tokens[j].token) == Some(Keyword::NOT)) {
            from = j;
        }
        let mut to = i + 1;
        let before = (0..from).rev().find(|&j| significant(&tokens[j].token));
        let after = (to..tokens.len()).find(|&j| significant(&tokens[j].token));
        if let Some(j) = before.filter(|&j| tokens[j].token == Token::Comma) {
            from = j;
        } else if let Some(j) = after.filter(|&j| tokens[j].token == Token::Comma) {
            to = j + 1;
        }
        tokens.drain(from..to);
        i = from;
    }
}

/// A parser error, at the character of `text` it names ("… at Line: 2, Column: 7").
fn syntax_error(text: &str, e: datafusion::sql::sqlparser::parser::ParserError) -> Error {
    let message = e.to_string();
    let error = Error::Syntax(message.clone());
    let Some((_, at)) = message.rsplit_once(" at Line: ") else {
        // The end of the input, just after its last character.
        if message.contains("found: EOF") {
            return Error::At {
                position: text.chars().count() + 1,
                source: Box::new(error),
            };
        }
        return error;
    };
    let Some((line, column)) = at.split_once(", Column: ") else {
        return error;
    };
    let (Ok(line), Ok(column)) = (line.trim().parse::<usize>(), column.trim().parse::<usize>())
    else {
        return error;
    };
    let before: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(|l| l.chars().count())
        .sum();
    Error::At {
        position: before + column,
        source: Box::new(error),
    }
}

const DEFAULT_SETTINGS: &[(&str, &str)] = &[
    ("application_name", ""),
    ("array_nulls", "on"),
    ("backslash_quote", "safe_encoding"),
    ("block_size", "8192"),
    ("bytea_output", "hex"),
    ("check_function_bodies", "on"),
    ("client_encoding", "UTF8"),
    ("client_min_messages", "notice"),
    ("cpu_index_tuple_cost", "0.005"),
    ("cpu_operator_cost", "0.0025"),
    ("cpu_tuple_cost", "0.01"),
    ("cursor_tuple_fraction", "0.1"),
    ("datestyle", "ISO, MDY"),
    ("deadlock_timeout", "1s"),
    ("default_statistics_target", "100"),
    ("default_table_access_method", "partita"),
    ("default_tablespace", ""),
    ("default_toast_compression", "pglz"),
    ("default_transaction_deferrable", "off"),
    ("default_transaction_isolation", "serializable"),
    ("default_transaction_read_only", "off"),
    ("default_with_oids", "off"),
    ("effective_cache_size", "4GB"),
    ("effective_io_concurrency", "1"),
    ("enable_bitmapscan", "on"),
    ("enable_gathermerge", "on"),
    ("enable_hashagg", "on"),
    ("enable_hashjoin", "on"),
    ("enable_incremental_sort", "on"),
    ("enable_indexonlyscan", "on"),
    ("enable_indexscan", "on"),
    ("enable_material", "on"),
    ("enable_memoize", "on"),
    ("enable_mergejoin", "on"),
    ("enable_nestloop", "on"),
    ("enable_parallel_append", "on"),
    ("enable_parallel_hash", "on"),
    ("enable_partition_pruning", "on"),
    ("enable_partitionwise_aggregate", "off"),
    ("enable_partitionwise_join", "off"),
    ("enable_seqscan", "on"),
    ("enable_sort", "on"),
    ("enable_tidscan", "on"),
    ("escape_string_warning", "on"),
    ("extra_float_digits", "1"),
    ("from_collapse_limit", "8"),
    ("geqo", "on"),
    ("idle_in_transaction_session_timeout", "0"),
    ("idle_session_timeout", "0"),
    ("integer_datetimes", "on"),
    ("intervalstyle", "postgres"),
    ("is_superuser", "on"),
    ("jit", "on"),
    ("join_collapse_limit", "8"),
    ("lc_collate", "C"),
    ("lc_ctype", "C"),
    ("lc_messages", "C"),
    ("lc_monetary", "C"),
    ("lc_numeric", "C"),
    ("lc_time", "C"),
    ("lock_timeout", "0"),
    ("log_min_duration_statement", "-1"),
    ("log_statement", "none"),
    ("maintenance_work_mem", "64MB"),
    ("max_connections", "100"),
    ("max_identifier_length", "63"),
    ("max_index_keys", "32"),
    ("max_parallel_workers_per_gather", "2"),
    ("parallel_setup_cost", "1000"),
    ("parallel_tuple_cost", "0.1"),
    ("partita.fast_path", "on"),
    ("partita.max_scan_class", "full"),
    ("partita.parallel_scan_min_bytes", "4194304"),
    ("plan_cache_mode", "auto"),
    ("quote_all_identifiers", "off"),
    ("random_page_cost", "4"),
    ("row_security", "on"),
    ("search_path", "\"$user\", public"),
    ("seq_page_cost", "1"),
    ("server_encoding", "UTF8"),
    ("server_version", "15.0 (Partita)"),
    ("server_version_num", "150000"),
    ("session_authorization", "partita"),
    ("session_replication_role", "origin"),
    ("standard_conforming_strings", "on"),
    ("statement_timeout", "0"),
    ("synchronize_seqscans", "on"),
    ("synchronous_commit", "on"),
    ("tcp_keepalives_count", "0"),
    ("tcp_keepalives_idle", "0"),
    ("tcp_keepalives_interval", "0"),
    ("temp_buffers", "8MB"),
    ("temp_tablespaces", ""),
    ("timezone", "UTC"),
    ("track_io_timing", "off"),
    ("transaction_deferrable", "off"),
    ("transaction_isolation", "serializable"),
    ("transaction_read_only", "off"),
    ("transform_null_equals", "off"),
    ("work_mem", "4MB"),
    ("xmloption", "content"),
];

/// Settings that are booleans: SET checks the value and shows it as `on` or `off`. Those
/// about PostgreSQL's planner and executor are taken and shown, and change nothing here.
const BOOLEAN_SETTINGS: &[&str] = &[
    "array_nulls",
    "check_function_bodies",
    "default_transaction_deferrable",
    "enable_bitmapscan",
    "enable_gathermerge",
    "enable_hashagg",
    "enable_hashjoin",
    "enable_incremental_sort",
    "enable_indexonlyscan",
    "enable_indexscan",
    "enable_material",
    "enable_memoize",
    "enable_mergejoin",
    "enable_nestloop",
    "enable_parallel_append",
    "enable_parallel_hash",
    "enable_partition_pruning",
    "enable_partitionwise_aggregate",
    "enable_partitionwise_join",
    "enable_seqscan",
    "enable_sort",
    "enable_tidscan",
    "escape_string_warning",
    "geqo",
    "jit",
    "quote_all_identifiers",
    "row_security",
    "synchronize_seqscans",
    "track_io_timing",
    "transaction_deferrable",
];

/// The session's settings (SET, SHOW), shared with its `current_setting()` function.
#[derive(Clone)]
pub(crate) struct Settings(Arc<std::sync::RwLock<BTreeMap<String, String>>>);

impl Settings {
    fn defaults() -> Settings {
        Settings(Arc::new(std::sync::RwLock::new(
            DEFAULT_SETTINGS
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )))
    }

    /// Every parameter with its value and its default (empty for one a SET made up).
    pub(crate) fn all(&self) -> Vec<(String, String, String)> {
        let values = self.0.read().unwrap_or_else(|e| e.into_inner());
        values
            .iter()
            .map(|(name, value)| {
                let default = DEFAULT_SETTINGS
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or("", |(_, v)| v);
                (name.clone(), value.clone(), default.to_string())
            })
            .collect()
    }

    pub(crate) fn get(&self, name: &str) -> Option<String> {
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    fn insert(&self, name: String, value: String) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name, value);
    }

    fn contains_key(&self, name: &str) -> bool {
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(name)
    }
}

/// One `set_config(name, value, is_local)` of a [`set_config_calls`] statement.
struct SetConfig {
    name: String,
    value: String,
    /// `is_local`: until the end of the transaction.
    local: bool,
    /// Its place in the select list.
    at: usize,
}

/// The `set_config` calls with constant arguments in the select list of a `SELECT` without
/// FROM, WHERE or grouping, as pg_dump's scripts and drivers send them
/// (`SELECT set_config('search_path', '', false)`; asyncpg's
/// `SELECT current_setting('jit') AS cur, set_config('jit', 'off', false) AS new`); `None`
/// for any other statement.
fn set_config_calls(stmt: &Statement) -> Option<Vec<SetConfig>> {
    let Statement::Query(q) = stmt else {
        return None;
    };
    let ast::SetExpr::Select(select) = q.body.as_ref() else {
        return None;
    };
    let grouped = !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty());
    if !select.from.is_empty()
        || select.selection.is_some()
        || select.having.is_some()
        || grouped
        || q.limit_clause.is_some()
        || q.with.is_some()
    {
        return None;
    }
    let text = |e: &Expr| match e {
        Expr::Value(v) => match &v.value {
            AstValue::SingleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    };
    let mut calls = Vec::new();
    for (at, item) in select.projection.iter().enumerate() {
        let (ast::SelectItem::UnnamedExpr(Expr::Function(f))
        | ast::SelectItem::ExprWithAlias {
            expr: Expr::Function(f),
            ..
        }) = item
        else {
            continue;
        };
        if crate::json::function_name(&f.name).is_none_or(|n| n != "set_config") {
            continue;
        }
        let ast::FunctionArguments::List(list) = &f.args else {
            return None;
        };
        let [name, value, is_local] = &crate::json::plain_args(&list.args)?[..] else {
            return None;
        };
        let local = match is_local {
            Expr::Value(v) => match v.value {
                AstValue::Boolean(b) => b,
                _ => return None,
            },
            _ => return None,
        };
        calls.push(SetConfig {
            name: text(name)?,
            value: text(value)?,
            local,
            at,
        });
    }
    (!calls.is_empty()).then_some(calls)
}

/// `set_config` anywhere but where [`set_config_calls`] takes it.
fn set_config_function() -> datafusion::logical_expr::ScalarUDF {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::logical_expr::{Volatility, create_udf};
    create_udf(
        "set_config",
        vec![DataType::Utf8, DataType::Utf8, DataType::Boolean],
        DataType::Utf8,
        Volatility::Volatile,
        Arc::new(|_| {
            Err(datafusion::error::DataFusionError::External(Box::new(
                Error::Unsupported(
                    "set_config other than as SELECT set_config('name', 'value', is_local)".into(),
                ),
            )))
        }),
    )
}

/// `pg_sleep(seconds)`: waits, stopping early (57014) when the statement is canceled or
/// times out. On the executor's runtime it lets the runtime move its other work to another
/// thread while it waits.
fn pg_sleep_function(interrupt: Interrupt) -> datafusion::logical_expr::ScalarUDF {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::{Signature, Volatility};
    crate::functions::RowFunction::strict(
        "pg_sleep",
        Signature::uniform(1, vec![DataType::Float64], Volatility::Volatile),
        DataType::Utf8,
        move |args| {
            let ScalarValue::Float64(Some(seconds)) = args[0] else {
                return Ok(ScalarValue::Utf8(None));
            };
            let step = std::time::Duration::from_millis(10);
            // Too long to count is waiting until stopped.
            let until = std::time::Duration::try_from_secs_f64(seconds.max(0.0))
                .ok()
                .and_then(|d| std::time::Instant::now().checked_add(d));
            let wait = || loop {
                interrupt.check()?;
                let left = match until {
                    Some(until) => until.saturating_duration_since(std::time::Instant::now()),
                    None => step,
                };
                if left.is_zero() {
                    // PostgreSQL's void, whose text is empty.
                    return Ok(ScalarValue::Utf8(Some(String::new())));
                }
                std::thread::sleep(left.min(step));
            };
            match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
                Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(wait),
                _ => wait(),
            }
        },
    )
}

/// `current_setting(name [, missing_ok])`: what SHOW name shows; an unknown name is 42704,
/// or NULL with `missing_ok`.
fn current_setting_function(settings: Settings) -> datafusion::logical_expr::ScalarUDF {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::{Signature, TypeSignature, Volatility};
    crate::functions::RowFunction::strict(
        "current_setting",
        Signature::one_of(
            vec![
                TypeSignature::Exact(vec![DataType::Utf8]),
                TypeSignature::Exact(vec![DataType::Utf8, DataType::Boolean]),
            ],
            Volatility::Stable,
        ),
        DataType::Utf8,
        move |args| {
            let (ScalarValue::Utf8(Some(name)), missing_ok) = (
                &args[0],
                matches!(args.get(1), Some(ScalarValue::Boolean(Some(true)))),
            ) else {
                return Ok(ScalarValue::Utf8(None));
            };
            let name = name.to_ascii_lowercase();
            match settings.get(&name) {
                Some(v) => Ok(ScalarValue::Utf8(Some(v))),
                None if missing_ok => Ok(ScalarValue::Utf8(None)),
                None => Err(datafusion::error::DataFusionError::External(Box::new(
                    Error::UnknownSetting(name),
                ))),
            }
        },
    )
}

/// The SQL type of values of Arrow type `t`, for the types a parameter can be read as.
pub(crate) fn sql_type_of(t: &datafusion::arrow::datatypes::DataType) -> Option<SqlType> {
    use datafusion::arrow::datatypes::DataType as D;
    Some(match t {
        D::Boolean => SqlType::Bool,
        D::Int16 => SqlType::Int2,
        D::Int32 => SqlType::Int4,
        D::Int64 => SqlType::Int8,
        D::Float32 => SqlType::Float4,
        D::Float64 => SqlType::Float8,
        D::Decimal128(..) => SqlType::Numeric {
            precision: None,
            scale: None,
        },
        D::Utf8 | D::Utf8View | D::LargeUtf8 => SqlType::Text,
        D::Binary => SqlType::Bytea,
        D::Date32 => SqlType::Date,
        D::Timestamp(_, None) => SqlType::Timestamp { precision: None },
        D::Timestamp(_, Some(_)) => SqlType::TimestampTz { precision: None },
        _ => return None,
    })
}

/// How many times an autocommit write runs again after a conflict before it reports 40001.
const AUTOCOMMIT_ATTEMPTS_MAX: u32 = 16;

/// A time setting's value in milliseconds: a number in ms, or with a unit (`us`, `ms`, `s`,
/// `min`, `h`, `d`), as PostgreSQL reads them.
fn parse_duration_ms(text: &str) -> Option<u64> {
    let text = text.trim().trim_matches('\'');
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "" | "ms" => 1.0,
        "us" => 0.001,
        "s" => 1_000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return None,
    };
    let ms = (number * scale).round();
    (ms >= 0.0 && ms <= i32::MAX as f64).then_some(ms as u64)
}

/// A duration in the largest unit that writes it exactly, as SHOW gives it.
fn format_duration_ms(ms: u64) -> String {
    if ms == 0 {
        return "0".into();
    }
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("min", 60_000),
        ("s", 1_000),
    ] {
        if ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

/// `SELECT version()` answers this.
pub fn version_string() -> String {
    format!(
        "PostgreSQL 15.0 (Partita {}) on {}-linux, compiled by rustc",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    )
}

impl Session {
    pub fn new(db: Database) -> Session {
        let config = SessionConfig::new()
            .with_default_catalog_and_schema("partita", "public")
            .with_create_default_catalog_and_schema(false)
            .with_information_schema(false)
            .with_target_partitions(2)
            .set_str("datafusion.sql_parser.dialect", "postgres")
            // 1.005 is a numeric in PostgreSQL, not a float.
            .set_bool("datafusion.sql_parser.parse_float_as_decimal", true);
        let interrupt = Interrupt::default();
        let types = crate::casts::PostgresTypes::default();
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .with_physical_optimizer_rule(Arc::new(InterruptibleJoins(interrupt.clone())))
            .with_type_planner(Arc::new(types.clone()))
            .with_analyzer_rules(crate::semantics::analyzer_rules())
            .with_optimizer_rules(crate::semantics::optimizer_rules())
            .build();
        let ctx = SessionContext::new_with_state(state);
        let scope = Arc::new(Mutex::new(StatementScope {
            reader: None,
            changes: CatalogChanges::for_session(&crate::temp::next_schema()),
            system_columns: false,
            max_class: ScanClass::Full,
            stream_bytes_min: crate::provider::STREAM_BYTES_MIN,
            zone: Arc::from(sql::types::UTC),
            local_tables: Default::default(),
            identity: Default::default(),
        }));
        let catalog = MemoryCatalogProvider::new();
        let _ = catalog.register_schema(
            "public",
            Arc::new(PartitaSchema {
                catalog: db.catalog.clone(),
                store: db.store.clone(),
                interrupt: interrupt.clone(),
                scope: Arc::clone(&scope),
            }),
        );
        // Tables a statement registers for its own use (COPY FROM Parquet's batches).
        let _ = catalog.register_schema(
            "pg_temp",
            Arc::new(datafusion::catalog::MemorySchemaProvider::new()),
        );
        let settings = Settings::defaults();
        for (name, information_schema) in [("pg_catalog", false), ("information_schema", true)] {
            let _ = catalog.register_schema(
                name,
                Arc::new(crate::pg_catalog::CatalogSchema {
                    catalog: db.catalog.clone(),
                    scope: Arc::clone(&scope),
                    information_schema,
                    settings: settings.clone(),
                    store: db.store.clone(),
                }),
            );
        }
        ctx.register_catalog("partita", Arc::new(catalog));
        crate::pg_catalog::register(&ctx, &db.catalog, &db.store, &scope);
        ctx.register_udf(current_setting_function(settings.clone()));
        ctx.register_udf(set_config_function());
        ctx.register_udf(pg_sleep_function(interrupt.clone()));
        let advisory = Arc::new(db.advisory.owner());
        let lock_settings = settings.clone();
        crate::advisory::register(
            &ctx,
            &advisory,
            &interrupt,
            Arc::new(move || {
                lock_settings
                    .get("lock_timeout")
                    .and_then(|t| parse_duration_ms(&t))
                    .filter(|&ms| ms > 0)
                    .map(Duration::from_millis)
            }),
        );
        crate::functions::register(&ctx);
        let transaction_start = crate::functions::TransactionStart::default();
        for clock in crate::functions::clock_functions(&transaction_start) {
            ctx.register_udf(clock);
        }
        let sequence_values = crate::sequences::register(&ctx, &db.catalog, &db.store, &scope);
        let listener = Arc::new(db.channels.listener());
        crate::functions::register_notify(&ctx, &listener);
        ctx.register_udtf(
            "partita_check",
            Arc::new(crate::index::CheckFunction {
                catalog: db.catalog.clone(),
                store: db.store.clone(),
            }),
        );
        let mut session = Session {
            db,
            ctx,
            scope,
            txn: None,
            settings,
            notices: Vec::new(),
            cascaded: Vec::new(),
            saved_settings: Vec::new(),
            cursors: Default::default(),
            interrupt,
            guard_scans: true,
            kept_plans: Default::default(),
            sql_prepared: Default::default(),
            simple_points: Default::default(),
            zone: Zone::utc(),
            reported: Vec::new(),
            implicit_block: false,
            types,
            transaction_start,
            advisory,
            sequence_values,
            listener,
            temp_on_commit: false,
            alias_names: true,
        };
        session.set_zone(Zone::utc());
        session.reported.clear();
        session
    }

    /// The session's time zone: DataFusion reads timestamptz text and evaluates `now()`,
    /// `date_trunc` and friends in it, tables show their timestamptz columns in it, and
    /// the wire layer prints timestamps in it.
    fn set_zone(&mut self, zone: Zone) {
        self.settings.insert("timezone".into(), zone.shown.clone());
        {
            let state_ref = self.ctx.state_ref();
            let mut state = state_ref.write();
            state.config_mut().options_mut().execution.time_zone = Some(zone.arrow.clone());
            // Functions that read the zone when built (`now()` types its result with it) are
            // rebuilt, as DataFusion's own SET does.
            let options = state.config().options();
            let rebuilt: Vec<_> = state
                .scalar_functions()
                .values()
                .filter_map(|f| f.inner().with_updated_config(options).map(Arc::new))
                .collect();
            for function in rebuilt {
                // The session state's registry replaces a function; it never refuses one.
                let _ =
                    datafusion::execution::FunctionRegistry::register_udf(&mut *state, function);
            }
        }
        self.scope.lock().unwrap_or_else(|e| e.into_inner()).zone = Arc::from(zone.arrow.as_str());
        self.types.set_zone(&zone.arrow);
        // Kept plans have the old zone in their table schemas.
        self.kept_plans.clear();
        self.reported.push(("TimeZone".into(), zone.shown.clone()));
        self.zone = zone;
    }

    /// The number of catalog changes committed so far: a prepared statement described
    /// before a change may describe other rows after it.
    pub fn catalog_generation(&self) -> u64 {
        self.db.catalog.generation()
    }

    /// The session's time zone.
    pub fn zone(&self) -> &Zone {
        &self.zone
    }

    /// How results show values as text: in the session's zone and IntervalStyle.
    pub fn text_style(&self) -> crate::output::TextStyle {
        let zone = self
            .zone
            .arrow
            .parse()
            .unwrap_or_else(|_| "+00:00".parse().expect("a fixed offset parses"));
        crate::output::TextStyle {
            zone,
            iso_intervals: self.setting("intervalstyle").as_deref() == Some("iso_8601"),
        }
    }

    /// The instants `now()` and `statement_timestamp()` give in the running statement.
    pub(crate) fn clock(&self) -> &crate::functions::TransactionStart {
        &self.transaction_start
    }

    /// Settings whose new values the client must be told about (ParameterStatus), as
    /// PostgreSQL reports TimeZone and application_name when they change.
    pub fn take_reported(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.reported)
    }

    /// A statement failed while its rows were being sent (after `execute` returned): inside
    /// a transaction block every later statement gets 25P02 until ROLLBACK.
    pub fn statement_failed(&mut self) {
        self.cascaded.clear();
        self.mark_failed();
    }

    /// The open transaction failed: it only waits for ROLLBACK now. Its advisory locks go
    /// at once, as PostgreSQL aborts it there, unless a savepoint may take it back.
    fn mark_failed(&mut self) {
        if let Some(t) = self.txn.as_mut() {
            t.failed = true;
            if t.savepoints.is_empty() {
                self.advisory
                    .release_all(Some(crate::advisory::Scope::Transaction));
            }
        }
    }

    /// Starts or stops an implicit block, PostgreSQL's implicit transaction: the statements
    /// of a multi-statement simple query, or the Executes of the extended protocol up to
    /// Sync, run as one transaction when no transaction block is open. Outside one, each
    /// statement commits on its own (a conflicting write is retried). Inside one, the first
    /// write opens the transaction and `end_implicit` commits or rolls it back; reads
    /// before it read the committed state as in autocommit.
    pub fn set_implicit_block(&mut self, on: bool) {
        self.implicit_block = on;
    }

    /// Whether an implicit block's transaction is open.
    pub fn in_implicit_transaction(&self) -> bool {
        self.txn.as_ref().is_some_and(|t| t.implicit)
    }

    /// Ends the implicit block: its transaction, if a write opened one, commits when
    /// `commit` is true and no statement of it failed (the commit is returned), and rolls
    /// back otherwise. A write conflict at commit is 40001.
    pub async fn end_implicit(&mut self, commit: bool) -> Result<Option<storage::CommitInfo>> {
        self.implicit_block = false;
        let Some(open) = self.txn.take_if(|t| t.implicit) else {
            // Statements that opened no transaction: its advisory locks end with them, and
            // their notifications go unless one of them failed.
            if self.txn.is_none() {
                self.end_without_transaction(commit)?;
            }
            return Ok(None);
        };
        // Settings a DO block set while it held the transaction as a block go back as
        // that block's would (SET LOCAL's always, the others if it rolls back).
        let saved = !self.saved_settings.is_empty();
        if commit && !open.failed {
            let committed = self.commit_notifying(open).await;
            if saved {
                self.end_settings(committed.is_ok());
            }
            return match committed {
                Ok(info) => Ok(Some(info)),
                Err(Error::Storage(storage::Error::Conflict)) => Err(Error::SerializationFailure),
                Err(e) => Err(e),
            };
        }
        if let Some(txn) = open.txn.lock().unwrap_or_else(|e| e.into_inner()).take() {
            txn.rollback();
        }
        if saved {
            self.end_settings(false);
        }
        self.end_scope();
        self.listener.end(false);
        Ok(None)
    }

    /// The handle a cancel request uses to stop this session's running statement.
    pub fn interrupt(&self) -> Interrupt {
        self.interrupt.clone()
    }

    pub fn status(&self) -> TxnStatus {
        match &self.txn {
            None => TxnStatus::Idle,
            // Outside a transaction block, whatever happens in the implicit one.
            Some(t) if t.implicit => TxnStatus::Idle,
            Some(t) if t.failed => TxnStatus::Failed,
            Some(_) => TxnStatus::InBlock,
        }
    }

    /// Notices raised by the last statements (e.g. "there is already a transaction in
    /// progress"), drained by the wire layer.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        let cascaded = std::mem::take(&mut self.cascaded);
        match cascaded.as_slice() {
            [] => {}
            [one] => self.notice(format!("drop cascades to {one}")),
            many => {
                let detail = many
                    .iter()
                    .map(|o| format!("drop cascades to {o}"))
                    .collect::<Vec<_>>()
                    .join("\n");
                self.notice_with_detail(
                    format!("drop cascades to {} other objects", many.len()),
                    detail,
                );
            }
        }
        std::mem::take(&mut self.notices)
    }

    pub fn setting(&self, name: &str) -> Option<String> {
        self.settings.get(&name.to_ascii_lowercase())
    }

    /// `statement_timeout`: how long a statement may run before it is stopped with 57014;
    /// `None` when it may run for ever (0).
    pub fn statement_timeout(&self) -> Option<Duration> {
        let ms = parse_duration_ms(&self.setting("statement_timeout")?)?;
        (ms > 0).then(|| Duration::from_millis(ms))
    }

    /// Runs one statement with bound parameters.
    pub async fn execute(&mut self, stmt: Statement, params: &[Param]) -> Result<Output> {
        self.interrupt.reset();
        if let Some(t) = &self.txn
            && t.failed
            && !matches!(stmt, Statement::Commit { .. } | Statement::Rollback { .. })
        {
            return Err(Error::InFailedTransaction);
        }
        let result = self.execute_inner(stmt, params).await;
        if result.is_err() {
            self.mark_failed();
        }
        result
    }

    /// Runs a prepared statement with bound parameters. `known` is what earlier executions
    /// of the same prepared statement learnt: a point SELECT then runs as a key lookup with
    /// no SQL work (parsing was done once, at Parse).
    pub async fn execute_prepared(
        &mut self,
        stmt: &Statement,
        params: &[Param],
        known: &crate::fastpath::PreparedFast,
    ) -> Result<Output> {
        if self.status() != TxnStatus::Failed
            && let Some(plan) = self.point_plan_for(stmt, known)
        {
            self.interrupt.reset();
            if let Some(output) = self
                .run_point_plan(&plan, params)
                .inspect_err(|_| self.statement_failed())?
            {
                return Ok(output);
            }
        }
        // Boxed: the general path's future is large, and moving it with every point
        // SELECT's future showed up as memcpy in profiles.
        Box::pin(self.execute(stmt.clone(), params)).await
    }

    pub(crate) async fn execute_inner(
        &mut self,
        stmt: Statement,
        params: &[Param],
    ) -> Result<Output> {
        let mut bound = stmt.clone();
        if !params.is_empty() {
            bind_params(&mut bound, params)?;
        }
        crate::naming::name_function_columns(&mut bound);
        normalize_expression_forms(&mut bound);
        self.expand_views(&mut bound)?;
        if let Some(calls) = set_config_calls(&bound) {
            return self.set_config(bound, calls).await;
        }
        if !params.is_empty()
            && matches!(stmt, Statement::Query(_))
            && !crate::with_writes::applies(&stmt)
        {
            if self.fast_path_on()
                && let Some(fast) = self.fast_statement(&bound)
            {
                return self.run_fast_read(fast);
            }
            // A prepared query off the fast path reuses the plan of its earlier executions.
            if let Some(output) = self.run_kept_plan(&stmt, params).await? {
                return Ok(output);
            }
        }
        self.dispatch(bound).await
    }

    /// Runs a prepared query through the logical plan kept from its first execution, its
    /// placeholders replaced by this execution's values. `None` when the query cannot keep
    /// a plan (correlated subqueries rewritten per statement, uncommitted DDL in the
    /// transaction, a parameter of unknown type, placeholders it cannot plan).
    async fn run_kept_plan(
        &mut self,
        stmt: &Statement,
        params: &[Param],
    ) -> Result<Option<Output>> {
        if self.ddl_pending() {
            return Ok(None);
        }
        let key = stmt.to_string();
        let generation = self.db.catalog.generation();
        if self
            .kept_plans
            .get(&key)
            .is_none_or(|k| k.generation != generation)
        {
            let mut s = stmt.clone();
            crate::naming::name_function_columns(&mut s);
            normalize_expression_forms(&mut s);
            self.expand_views(&mut s)?;
            let before = s.clone();
            let _functions = self.rewrite_correlated_subqueries(&mut s).await?;
            if s != before {
                return Ok(None);
            }
            self.expand_wildcards(&mut s);
            let renames = crate::naming::alias_result_columns(&mut s)?;
            // What cannot be planned with placeholders (a FROM function's arguments) takes
            // the general path, which binds the values first.
            let Ok(plan) = self.plan(s).await.and_then(|p| self.show_oid_aliases(p)) else {
                return Ok(None);
            };
            // A parameter of two types (`name = $1 OR code = $1`, text and varchar(20)) is
            // bound as a value instead.
            let Ok(found) = plan.get_parameter_types() else {
                return Ok(None);
            };
            let mut types = Vec::with_capacity(params.len());
            for i in 1..=params.len() {
                match found.get(&format!("${i}")).cloned().flatten() {
                    Some(t) => types.push(t),
                    None => return Ok(None),
                }
            }
            if found.len() != params.len() {
                return Ok(None);
            }
            let schema = rename_fields(self.coerced_result_schema(&plan), &renames);
            if self.kept_plans.len() >= 256 {
                self.kept_plans.clear();
            }
            self.kept_plans.insert(
                key.clone(),
                KeptPlan {
                    generation,
                    plan,
                    schema,
                    types,
                },
            );
        }
        let kept = &self.kept_plans[&key];
        // The plan typed each placeholder from its context; a parameter the client declared
        // with another type (a bigint against an int column) must keep its own type, which
        // the general path gives it.
        // So must a uuid or json one, which its input function reads (`A0EE…` is `a0ee…`).
        if params.iter().zip(&kept.types).any(|(param, ty)| {
            param.ty.is_some_and(|declared| {
                declared.arrow_in(&self.zone.arrow) != *ty
                    || matches!(declared, SqlType::Uuid | SqlType::Json | SqlType::Jsonb)
            })
        }) {
            return Ok(None);
        }
        let mut values = Vec::with_capacity(params.len());
        for (param, ty) in params.iter().zip(&kept.types) {
            let value = match &param.value {
                None => datafusion::common::ScalarValue::try_from(ty)?,
                Some(raw) => {
                    let text = datafusion::common::ScalarValue::Utf8(Some(raw.clone()));
                    match ty {
                        // Read as PostgreSQL reads numerics (`1.5e3`), as the general path does.
                        datafusion::arrow::datatypes::DataType::Decimal128(..) => {
                            let text = datafusion::logical_expr::ColumnarValue::Scalar(text);
                            match crate::numeric::numeric_from_text(&text, 1, ty)? {
                                datafusion::logical_expr::ColumnarValue::Scalar(v) => v,
                                datafusion::logical_expr::ColumnarValue::Array(a) => {
                                    datafusion::common::ScalarValue::try_from_array(&a, 0)?
                                }
                            }
                        }
                        // bytea's text form (`\x0102`, escapes), not the text's own bytes.
                        datafusion::arrow::datatypes::DataType::Binary => {
                            let bytes = crate::convert::parse_bytea(raw)
                                .ok_or_else(|| crate::literals::bad_bytea(raw))?;
                            datafusion::common::ScalarValue::Binary(Some(bytes))
                        }
                        // PostgreSQL's date and timestamp input, as a constant's
                        // (`2024-02-01T10:00`, `infinity`); `now` takes the general path.
                        datafusion::arrow::datatypes::DataType::Timestamp(..)
                        | datafusion::arrow::datatypes::DataType::Date32 => {
                            let config = self.ctx.state().config_options().clone();
                            match crate::zone::timestamp_value(raw, ty, &config)? {
                                Some(value) => value,
                                None => return Ok(None),
                            }
                        }
                        // Array text (`{a,"b c"}`), which a cast would take for one element.
                        datafusion::arrow::datatypes::DataType::List(item) => {
                            let list = crate::arrays::to_list(&text.to_array()?, item.data_type())?;
                            datafusion::common::ScalarValue::try_from_array(&list, 0)?
                        }
                        _ => text.cast_to(ty)?,
                    }
                }
            };
            values.push(value);
        }
        let plan = kept.plan.clone().with_param_values(values)?;
        let schema = Arc::clone(&kept.schema);
        self.begin_statement(mentions_system_column(stmt));
        let df = self.ctx.execute_logical_plan(plan).await?;
        let stream = self.db.executor.stream(df, &self.interrupt).await?;
        Ok(Some(Output::Rows {
            schema,
            stream,
            tag: "SELECT".into(),
        }))
    }

    async fn dispatch(&mut self, stmt: Statement) -> Result<Output> {
        match stmt {
            Statement::StartTransaction { begin, modes, .. } => {
                let mut output = self.begin(&modes);
                if !begin {
                    output = Output::Command("START TRANSACTION".into());
                }
                Ok(output)
            }
            Statement::Commit { .. } => self.commit().await,
            Statement::CreateSchema {
                schema_name,
                if_not_exists,
                ..
            } => self.create_schema(&schema_name, if_not_exists),
            Statement::Rollback {
                savepoint: None, ..
            } => Ok(self.rollback()),
            Statement::Query(_) if crate::with_writes::applies(&stmt) => self.run_write(stmt).await,
            Statement::Query(_) => {
                if let Some(fast) = self
                    .fast_path_on()
                    .then(|| self.fast_statement(&stmt))
                    .flatten()
                {
                    return self.run_fast_read(fast);
                }
                self.run_query(stmt).await
            }
            Statement::Explain { .. } => self.explain(stmt).await,
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                self.run_write(stmt).await
            }
            Statement::Copy { to: false, .. } if self.read_only() => {
                Err(Error::ReadOnlyTransaction("COPY FROM".into()))
            }
            Statement::CreateTable(_)
            | Statement::AlterTable(_)
            | Statement::AlterIndex { .. }
            | Statement::CreateIndex(_)
            | Statement::CreateView(_)
            | Statement::Truncate(_) => self.run_write(stmt).await,
            Statement::Call(ref call) if crate::do_block::code(call).is_some() => {
                let (language, code) = crate::do_block::code(call).unwrap_or_default();
                Box::pin(self.run_do(&language, &code)).await
            }
            Statement::Call(ref call) if crate::foreign::set_constraints(call).is_some() => {
                let (deferred, names) = crate::foreign::set_constraints(call).unwrap_or_default();
                self.set_constraints(deferred, names)
            }
            Statement::Call(ref call)
                if crate::view::refreshed_view(call).is_some()
                    || crate::sequences::altered(call).is_some()
                    || crate::plain_view::altered(call).is_some() =>
            {
                self.run_write(stmt).await
            }
            Statement::CreateSequence { .. }
            | Statement::CreateExtension(_)
            | Statement::DropExtension(_)
            | Statement::CreateType { .. }
            | Statement::AlterType(_)
            | Statement::Comment { .. } => self.run_write(stmt).await,
            Statement::Drop {
                object_type:
                    ObjectType::Table
                    | ObjectType::Index
                    | ObjectType::MaterializedView
                    | ObjectType::View
                    | ObjectType::Sequence
                    | ObjectType::Type,
                ..
            } => self.run_write(stmt).await,
            Statement::Copy { .. } => Box::pin(crate::copy::copy(self, &stmt)).await,
            Statement::Prepare {
                name,
                data_types,
                statement,
            } => self.prepare_sql(&name, &data_types, *statement),
            Statement::Execute {
                name: Some(name),
                parameters,
                immediate: false,
                into,
                using,
                output: false,
                default: false,
                ..
            } if into.is_empty() && using.is_empty() => {
                Box::pin(self.execute_sql(&name, &parameters)).await
            }
            Statement::Savepoint { name } => self.savepoint(&name),
            Statement::ReleaseSavepoint { name } => self.release_savepoint(&name),
            Statement::Rollback {
                savepoint: Some(name),
                ..
            } => self.rollback_to_savepoint(&name),
            Statement::Set(set) => self.set(set),
            Statement::Reset(reset) => self.reset(reset.reset),
            Statement::Declare { stmts } => self.declare(stmts).await,
            Statement::Fetch {
                name,
                direction,
                into: Some(into),
                ..
            } if into.to_string() == crate::cursor::MOVE_MARK => {
                self.move_cursor(&name, direction).await
            }
            Statement::Fetch {
                name, direction, ..
            } => self.fetch(&name, direction).await,
            Statement::Close { cursor } => self.close_cursor(cursor),
            Statement::LISTEN { channel } => {
                self.listener.listen(crate::notify::channel_name(&channel));
                Ok(Output::Command("LISTEN".into()))
            }
            Statement::UNLISTEN { channel } => {
                // `UNLISTEN *` (a quoted "*" is a channel of that name).
                let all = channel.quote_style.is_none() && channel.value == "*";
                self.listener
                    .unlisten((!all).then(|| crate::notify::channel_name(&channel)));
                Ok(Output::Command("UNLISTEN".into()))
            }
            Statement::NOTIFY { channel, payload } => {
                let channel = crate::notify::channel_name(&channel);
                self.listener
                    .notify(&channel, payload.as_deref().unwrap_or(""))?;
                Ok(Output::Command("NOTIFY".into()))
            }
            Statement::Discard { object_type } => self.discard(object_type),
            Statement::ShowVariable { variable } => self.show(&variable).await,
            other => Err(Error::Unsupported(format!(
                "statement {}",
                first_words(&other.to_string())
            ))),
        }
    }

    pub(crate) fn begin(&mut self, modes: &[ast::TransactionMode]) -> Output {
        let read_only = access_mode(modes).unwrap_or_else(|| self.default_read_only());
        if let Some(open) = self.txn.as_mut().filter(|t| t.implicit) {
            // As in PostgreSQL, BEGIN inside an implicit block makes it a transaction
            // block, the statements before it included.
            open.implicit = false;
            open.read_only = read_only;
        } else if self.txn.is_some() {
            self.warning("25001", "there is already a transaction in progress");
        } else {
            let mut open = OpenTxn::begin(&self.db, false);
            open.read_only = read_only;
            self.txn = Some(open);
        }
        self.show_read_only();
        Output::Command("BEGIN".into())
    }

    /// `default_transaction_read_only`: whether statements outside a transaction block,
    /// and blocks that do not say, are read-only.
    fn default_read_only(&self) -> bool {
        self.setting("default_transaction_read_only")
            .is_some_and(|v| setting_is_on(&v))
    }

    /// Whether the running statement may not write: its transaction block is READ ONLY, or
    /// outside one, `default_transaction_read_only` is on.
    pub(crate) fn read_only(&self) -> bool {
        match &self.txn {
            Some(open) => open.read_only,
            None => self.default_read_only(),
        }
    }

    /// Keeps `transaction_read_only` (SHOW, current_setting) the running transaction's mode.
    fn show_read_only(&mut self) {
        let value = if self.read_only() { "on" } else { "off" };
        self.settings
            .insert("transaction_read_only".into(), value.into());
    }

    pub(crate) async fn commit(&mut self) -> Result<Output> {
        let Some(open) = self.txn.take() else {
            self.warning("25P01", "there is no transaction in progress");
            // What the statements before it queued (`NOTIFY c; COMMIT`) is committed.
            self.end_without_transaction(true)?;
            return Ok(Output::Command("COMMIT".into()));
        };
        if open.implicit {
            // PostgreSQL warns so too, and commits the implicit block's writes so far.
            self.warning("25P01", "there is no transaction in progress");
        }
        if open.failed {
            self.end_scope();
            self.end_settings(false);
            self.listener.end(false);
            return Ok(Output::Command("ROLLBACK".into()));
        }
        let committed = self.commit_notifying(open).await;
        self.end_settings(committed.is_ok());
        committed?;
        Ok(Output::Command("COMMIT".into()))
    }

    /// Puts back the settings the ending transaction block changed: all of them when it
    /// rolled back, SET LOCAL's when it committed.
    fn end_settings(&mut self, committed: bool) {
        for (name, value, local) in std::mem::take(&mut self.saved_settings).into_iter().rev() {
            if local || !committed {
                // The value was valid when it was set.
                let _ = self.set_setting(&name, value);
            }
        }
        self.show_read_only();
    }

    /// SET (`local` false) or SET LOCAL `name` to `value`: inside a transaction block, the
    /// old value is kept for its end; SET LOCAL outside one does nothing, as in PostgreSQL
    /// (with its warning).
    fn set_in_block(&mut self, name: &str, value: String, local: bool) -> Result<()> {
        let block = self.txn.as_ref().is_some_and(|t| !t.implicit);
        if local && !block {
            self.warning("25P01", "SET LOCAL can only be used in transaction blocks");
            return Ok(());
        }
        // A custom setting (`app.user_id`) first made here goes back to empty.
        let old = self
            .settings
            .get(name)
            .or_else(|| name.contains('.').then(String::new));
        if block
            && let Some(old) = old
            && !self.saved_settings.iter().any(|(n, _, _)| n == name)
        {
            self.saved_settings.push((name.to_string(), old, local));
        }
        self.set_setting(name, value)
    }

    /// Whether `fk`'s checks wait for the commit of the open transaction.
    pub(crate) fn deferred_now(&self, fk: &sql::catalog::ForeignKeyDef) -> bool {
        match &self.txn {
            Some(open) => open.constraint_modes.deferred(fk),
            None => crate::foreign::ConstraintModes::default().deferred(fk),
        }
    }

    /// Keeps changes for the open transaction's deferred foreign key checks.
    pub(crate) fn defer_checks(&self, changes: Vec<crate::foreign::Pending>) {
        if let Some(open) = &self.txn
            && !changes.is_empty()
        {
            open.deferred_checks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(changes);
        }
    }

    /// Runs the deferred foreign key checks of `open` that `due` picks.
    fn run_deferred_checks(
        &self,
        open: &OpenTxn,
        due: impl Fn(&sql::catalog::ForeignKeyDef) -> bool + Copy,
    ) -> Result<()> {
        let pending = open
            .deferred_checks
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for changes in pending.iter() {
            changes.check_deferred(self, &open.txn, due)?;
        }
        Ok(())
    }

    /// CREATE EXTENSION: PL/pgSQL is installed, as in every PostgreSQL database (Rails'
    /// schema.rb enables it), so it is 42710 or, IF NOT EXISTS, a notice; no other extension
    /// is available (0A000).
    /// CREATE SCHEMA: Partita has the schemas every PostgreSQL database has (`public`,
    /// `pg_catalog`, `information_schema`) and no others, so it makes none; `IF NOT EXISTS`
    /// of `public` or `information_schema` is a notice, as in PostgreSQL (Prisma's and
    /// Alembic's migrations send `CREATE SCHEMA IF NOT EXISTS "public"`).
    fn create_schema(&mut self, name: &ast::SchemaName, if_not_exists: bool) -> Result<Output> {
        let name = match name {
            ast::SchemaName::Simple(n) | ast::SchemaName::NamedAuthorization(n, _) => {
                sql::ddl::table_name(n)?
            }
            ast::SchemaName::UnnamedAuthorization(user) => sql::ddl::normalize_ident(user),
        };
        if !["public", "information_schema"].contains(&name.as_str()) {
            return Err(Error::NotSupported {
                message: format!("CREATE SCHEMA \"{name}\" is not supported"),
                detail: Some("Partita has one schema, public, for tables.".into()),
            });
        }
        if !if_not_exists {
            return Err(Error::DuplicateSchema(name));
        }
        self.notice_coded(
            "42P06",
            format!("schema \"{name}\" already exists, skipping"),
        );
        Ok(Output::Command("CREATE SCHEMA".into()))
    }

    /// `SET CONSTRAINTS {ALL | name, …} {DEFERRED | IMMEDIATE}`. Made IMMEDIATE, the
    /// constraints' checks put off so far run now, as in PostgreSQL. Outside a transaction
    /// block it does nothing but warn.
    fn set_constraints(&mut self, deferred: bool, names: Option<Vec<String>>) -> Result<Output> {
        let picked = crate::foreign::named_constraints(self, names.as_deref())?;
        let Some(open) = self.txn.as_ref().filter(|t| !t.implicit) else {
            self.warning(
                "25P01",
                "SET CONSTRAINTS can only be used in transaction blocks",
            );
            return Ok(Output::Command("SET CONSTRAINTS".into()));
        };
        if !deferred {
            let all = names.is_none();
            self.run_deferred_checks(open, |fk| {
                fk.deferrable && (all || picked.contains(&fk.name))
            })?;
        }
        if let Some(open) = self.txn.as_mut() {
            open.constraint_modes.set(deferred, names);
        }
        Ok(Output::Command("SET CONSTRAINTS".into()))
    }

    /// Ends what statements that opened no transaction began: their transaction-level
    /// advisory locks go, and their notifications are sent when `commit` is true (54000
    /// when the queues have no room: they are dropped then) or dropped.
    fn end_without_transaction(&mut self, commit: bool) -> Result<()> {
        self.advisory
            .release_all(Some(crate::advisory::Scope::Transaction));
        let room = match commit {
            true => self.listener.check_room(),
            false => Ok(()),
        };
        self.listener.end(commit && room.is_ok());
        room
    }

    /// Commits `open` as `commit_open` does, then sends its notifications (or drops them
    /// if it failed). A transaction with notifications commits after the notifying ones
    /// before it have sent theirs, so listeners see transactions in commit order; it rolls
    /// back instead when the listeners' queues have no room for them (54000).
    async fn commit_notifying(&mut self, open: OpenTxn) -> Result<storage::CommitInfo> {
        let channels = Arc::clone(&self.db.channels);
        let _order = match self.listener.notifying() {
            true => Some(channels.commit_order().await),
            false => None,
        };
        if let Err(e) = self.listener.check_room() {
            if let Some(txn) = open.txn.lock().unwrap_or_else(|e| e.into_inner()).take() {
                txn.rollback();
            }
            self.end_scope();
            self.listener.end(false);
            return Err(e);
        }
        let committed = self.commit_open(open).await;
        self.listener.end(committed.is_ok());
        committed
    }

    /// Commits `open` durably and publishes its catalog changes. Its deferred foreign key
    /// checks run first; one that fails rolls it back (23503 from COMMIT).
    pub(crate) async fn commit_open(&mut self, open: OpenTxn) -> Result<storage::CommitInfo> {
        if let Err(e) = self.run_deferred_checks(&open, |fk| fk.deferrable) {
            if let Some(txn) = open.txn.lock().unwrap_or_else(|e| e.into_inner()).take() {
                txn.rollback();
            }
            self.end_scope();
            return Err(e);
        }
        let txn = open.txn.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(mut txn) = txn else {
            self.end_scope();
            return Err(Error::Internal("transaction already ended".into()));
        };
        if self.temp_on_commit
            && let Err(e) = crate::temp::on_commit(self, &mut txn)
        {
            txn.rollback();
            self.end_scope();
            return Err(e);
        }
        let changes = self.end_scope();
        let catalog = self.db.catalog.clone();
        let commit = move || catalog.commit_with(changes, || txn.commit());
        // The commit blocks until its journal write is durable. A connection's own thread
        // (a current-thread runtime, see pg-server's `serve`) waits for it there, as a
        // PostgreSQL backend waits for its WAL flush: handing it to the blocking pool and
        // back cost more CPU per single-row commit than the commit's own work. On a shared
        // multi-threaded runtime the blocking pool keeps the workers free.
        let info = match tokio::runtime::Handle::current().runtime_flavor() {
            tokio::runtime::RuntimeFlavor::CurrentThread => commit(),
            _ => tokio::task::spawn_blocking(commit)
                .await
                .map_err(|e| Error::Internal(format!("commit task: {e}")))?,
        }
        .map_err(Error::from_storage)?;
        Ok(info)
    }

    pub(crate) fn rollback(&mut self) -> Output {
        match self.txn.take() {
            Some(open) => {
                self.end_settings(false);
                if open.implicit {
                    self.warning("25P01", "there is no transaction in progress");
                }
                if let Some(txn) = open.txn.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    txn.rollback();
                }
                self.end_scope();
                self.listener.end(false);
            }
            None => {
                self.warning("25P01", "there is no transaction in progress");
                // What the statements before it queued (`NOTIFY c; ROLLBACK`) is dropped,
                // and their transaction-level advisory locks go.
                let _ = self.end_without_transaction(false);
            }
        }
        Output::Command("ROLLBACK".into())
    }

    /// SAVEPOINT name: remembers the transaction's writes and DDL so far.
    pub(crate) fn savepoint(&mut self, name: &ast::Ident) -> Result<Output> {
        let name = sql::ddl::normalize_ident(name);
        let changes = self
            .scope
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .changes
            .clone();
        let Some(open) = self.txn.as_mut().filter(|t| !t.implicit) else {
            return Err(Error::NoTransaction("SAVEPOINT".into()));
        };
        let point = crate::provider::with_txn(&open.txn, |t| Ok(t.savepoint()))?;
        let settings = self
            .settings
            .all()
            .into_iter()
            .map(|(name, value, _)| (name, value))
            .collect();
        open.savepoints
            .push((name, point, changes, settings, self.listener.mark()));
        Ok(Output::Command("SAVEPOINT".into()))
    }

    /// The position of the newest savepoint called `name`.
    fn find_savepoint(&self, name: &ast::Ident, statement: &str) -> Result<usize> {
        let name = sql::ddl::normalize_ident(name);
        let open = self
            .txn
            .as_ref()
            .ok_or_else(|| Error::NoTransaction(statement.into()))?;
        open.savepoints
            .iter()
            .rposition(|(n, ..)| *n == name)
            .ok_or(Error::UnknownSavepoint(name))
    }

    /// RELEASE SAVEPOINT name: forgets it and every later savepoint, keeping the writes.
    pub(crate) fn release_savepoint(&mut self, name: &ast::Ident) -> Result<Output> {
        let at = self.find_savepoint(name, "RELEASE SAVEPOINT")?;
        if let Some(open) = self.txn.as_mut() {
            open.savepoints.truncate(at);
        }
        Ok(Output::Command("RELEASE".into()))
    }

    /// ROLLBACK TO SAVEPOINT name: undoes what the transaction did since, ends the failed
    /// state, and keeps the savepoint.
    pub(crate) fn rollback_to_savepoint(&mut self, name: &ast::Ident) -> Result<Output> {
        let at = self.find_savepoint(name, "ROLLBACK TO SAVEPOINT")?;
        let Some(open) = self.txn.as_mut() else {
            return Err(Error::NoTransaction("ROLLBACK TO SAVEPOINT".into()));
        };
        open.savepoints.truncate(at + 1);
        let (_, point, changes, settings, mark) = &open.savepoints[at];
        crate::provider::with_txn(&open.txn, |t| t.rollback_to(point))?;
        self.listener.rollback_to(*mark);
        open.failed = false;
        let settings = settings.clone();
        self.scope.lock().unwrap_or_else(|e| e.into_inner()).changes = changes.clone();
        self.kept_plans.clear();
        // SET since the savepoint is undone too, as in PostgreSQL.
        for (name, value, _) in self.settings.all() {
            let then = settings.iter().find(|(n, _)| *n == name).map(|(_, v)| v);
            match then {
                Some(then) if *then != value => self.set_setting(&name, then.clone())?,
                None if name.contains('.') => self.set_setting(&name, String::new())?,
                _ => {}
            }
        }
        Ok(Output::Command("ROLLBACK".into()))
    }

    /// Clears the statement scope at the end of a transaction; returns its catalog changes.
    fn end_scope(&mut self) -> CatalogChanges {
        self.cursors.retain(|_, c| c.hold);
        self.advisory
            .release_all(Some(crate::advisory::Scope::Transaction));
        let mut scope = self.scope.lock().unwrap_or_else(|e| e.into_inner());
        scope.reader = None;
        scope.changes.take()
    }

    /// What a statement reads: the open transaction, else a fresh snapshot.
    pub(crate) fn reader(&self) -> Reader {
        match &self.txn {
            Some(open) => Reader::Txn(Arc::clone(&open.txn)),
            None => Reader::Snapshot(self.db.store.snapshot()),
        }
    }

    /// Whether this transaction has created or altered tables (not yet in the committed
    /// catalog, so plans and point plans kept by generation do not apply).
    pub(crate) fn ddl_pending(&self) -> bool {
        !self
            .scope
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .changes
            .is_empty()
    }

    /// Points the schema provider at this statement's reader.
    pub(crate) fn begin_statement(&self, system_columns: bool) {
        // Casts may name the types made by CREATE TYPE.
        self.types.set_user_types(self.user_types());
        let reader = self.reader();
        self.transaction_start
            .set(self.txn.as_ref().map(|open| open.started));
        let mut scope = self.scope.lock().unwrap_or_else(|e| e.into_inner());
        scope.reader = Some(reader);
        scope.system_columns = system_columns;
        scope.max_class = match self.guard_scans {
            true => self.max_scan_class(),
            false => ScanClass::Full,
        };
        scope.stream_bytes_min = self
            .setting("partita.parallel_scan_min_bytes")
            .and_then(|v| v.parse().ok())
            .unwrap_or(crate::provider::STREAM_BYTES_MIN);
    }

    /// Each (plain) view the statement reads becomes its query (see `plain_view`); then a
    /// USING join's columns named in WHERE are qualified (see `using`).
    pub(crate) fn expand_views(&self, stmt: &mut Statement) -> Result<()> {
        {
            let scope = self.scope.lock().unwrap_or_else(|e| e.into_inner());
            if self.db.catalog.has_views(&scope.changes) {
                let catalog = &self.db.catalog;
                crate::plain_view::expand(stmt, &|name| catalog.view(name, &scope.changes))?;
            }
        }
        crate::using::qualify_using_columns(stmt, &|name| self.user_columns(name));
        Ok(())
    }

    /// A statement naming system columns sees them in its tables' schemas; `*` must not.
    pub(crate) fn expand_wildcards(&self, stmt: &mut Statement) {
        if !mentions_system_column(stmt) {
            return;
        }
        crate::wildcard::expand_wildcards(stmt, &|name| self.user_columns(name));
    }

    /// The columns `SELECT *` shows of table `name`, and one of them a stored row never
    /// has NULL in (the first key column; none when the key is a hidden row id).
    pub(crate) fn row_columns(&self, name: &str) -> Option<(Vec<String>, Option<String>)> {
        let def = self.table_def(name).ok()?;
        let key = def
            .partition_key
            .first()
            .map(|&i| &def.columns[i])
            .filter(|c| !c.hidden)
            .map(|c| c.name.clone());
        Some((self.user_columns(name)?, key))
    }

    /// The columns `SELECT *` shows of table `name`.
    fn user_columns(&self, name: &str) -> Option<Vec<String>> {
        let def = self.table_def(name).ok()?;
        Some(
            def.columns
                .iter()
                .filter(|c| !c.hidden)
                .map(|c| c.name.clone())
                .collect(),
        )
    }

    /// Plans a query (SELECT, VALUES, EXPLAIN …) in DataFusion.
    /// The column types of the types made by CREATE TYPE, as this session sees them.
    pub(crate) fn user_types(&self) -> Vec<SqlType> {
        let changes = crate::sequences::session_changes(self);
        self.db.catalog.user_types(&changes)
    }

    pub(crate) async fn plan(&self, mut stmt: Statement) -> Result<LogicalPlan> {
        // Again here: describe() plans statements that never went through execute().
        self.expand_views(&mut stmt)?;
        crate::subquery::prepare(&mut stmt);
        self.expand_wildcards(&mut stmt);
        crate::rows::expand_whole_rows(&mut stmt, &|name| self.row_columns(name))?;
        self.begin_statement(mentions_system_column(&stmt));
        let state = self.ctx.state();
        crate::srf::scalar_functions_in_from(
            &mut stmt,
            &|name| state.table_functions().contains_key(name),
            &|name| state.scalar_functions().contains_key(name),
        );
        // EXCEPT ALL and INTERSECT ALL count rows once their left sides' columns are known.
        let lefts = crate::setops::left_sides(&mut stmt);
        if !lefts.is_empty() {
            // A left side that names the statement's WITH queries is planned with them.
            let with = match &stmt {
                Statement::Query(q) => q.with.as_ref().map(|w| format!("{w} ")),
                _ => None,
            };
            let mut names = Vec::with_capacity(lefts.len());
            for left in lefts {
                let mut plan = Err(Error::Internal("no set operand".into()));
                for text in [
                    Some(left.clone()),
                    with.as_ref().map(|w| format!("{w}{left}")),
                ]
                .into_iter()
                .flatten()
                {
                    let Some(left) = parse_sql(&text)?.pop() else {
                        continue;
                    };
                    plan = state
                        .statement_to_plan(DfStatement::Statement(Box::new(left)))
                        .await
                        .map_err(Error::from);
                    if plan.is_ok() {
                        break;
                    }
                }
                let plan = plan?;
                names.push(
                    plan.schema()
                        .fields()
                        .iter()
                        .map(|f| f.name().clone())
                        .collect(),
                );
            }
            crate::setops::rewrite(&mut stmt, &names)?;
        }
        Ok(state
            .statement_to_plan(DfStatement::Statement(Box::new(stmt)))
            .await?)
    }

    /// A result column that is an OID-alias value (`'t'::regclass`, `$1::regtype`, which
    /// are OIDs inside the plan, so that they compare and sort as PostgreSQL's do) is sent
    /// as the name it stands for, as PostgreSQL's output function writes it. Only the
    /// statement's own result is shown so: `SELECT 't'::regclass INTO v` in a DO block
    /// reads the OID.
    fn show_oid_aliases(&self, plan: LogicalPlan) -> Result<LogicalPlan> {
        use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlanBuilder};
        if !self.alias_names {
            return Ok(plan);
        }
        // The expression that gives output column `i` of `node`, and the schema it reads.
        fn defining(
            node: &LogicalPlan,
            i: usize,
        ) -> Option<(&Expr, &datafusion::common::DFSchema)> {
            match node {
                LogicalPlan::Projection(p) => {
                    let e = match p.expr.get(i)? {
                        Expr::Alias(a) => a.expr.as_ref(),
                        e => e,
                    };
                    match e {
                        // Through a sort by a column the select list leaves out.
                        Expr::Column(c) => {
                            let j = p.input.schema().index_of_column(c).ok()?;
                            defining(&p.input, j)
                        }
                        e => Some((e, p.input.schema().as_ref())),
                    }
                }
                LogicalPlan::Sort(s) => defining(&s.input, i),
                LogicalPlan::Limit(l) => defining(&l.input, i),
                LogicalPlan::SubqueryAlias(a) => defining(&a.input, i),
                LogicalPlan::Filter(f) => defining(&f.input, i),
                LogicalPlan::Distinct(datafusion::logical_expr::Distinct::All(input)) => {
                    defining(input, i)
                }
                LogicalPlan::Window(w) if i < w.input.schema().fields().len() => {
                    defining(&w.input, i)
                }
                // A group key (`SELECT x::regclass, count(*) … GROUP BY 1`).
                LogicalPlan::Aggregate(a) if a.group_expr.len() > i => match &a.group_expr[i] {
                    Expr::Column(c) => {
                        let j = a.input.schema().index_of_column(c).ok()?;
                        defining(&a.input, j)
                    }
                    Expr::Alias(alias) => Some((alias.expr.as_ref(), a.input.schema().as_ref())),
                    e => Some((e, a.input.schema().as_ref())),
                },
                LogicalPlan::Join(j)
                    if matches!(
                        j.join_type,
                        datafusion::common::JoinType::Inner
                            | datafusion::common::JoinType::Left
                            | datafusion::common::JoinType::Right
                            | datafusion::common::JoinType::Full
                    ) =>
                {
                    let left = j.left.schema().fields().len();
                    match i < left {
                        true => defining(&j.left, i),
                        false => defining(&j.right, i - left),
                    }
                }
                // Each branch's column is of the same type; the first one's tells.
                LogicalPlan::Union(u) => defining(u.inputs.first()?, i),
                _ => None,
            }
        }
        // The function that shows each column's value by name, where it is an alias's OID.
        let shown: Vec<Option<&str>> = (0..plan.schema().fields().len())
            .map(|i| {
                let (e, schema) = defining(&plan, i)?;
                let Expr::ScalarFunction(f) = e else {
                    return None;
                };
                let oid = matches!(
                    e.get_type(schema),
                    Ok(datafusion::arrow::datatypes::DataType::Int32)
                );
                match f.name() {
                    "partita_regclass" | "partita_relname" if oid => Some("partita_regclass_name"),
                    "partita_regtype" | "partita_typname" if oid => Some("partita_typname"),
                    "partita_nspname" if oid => Some("partita_nspname"),
                    _ => None,
                }
            })
            .collect();
        if shown.iter().all(Option::is_none) {
            return Ok(plan);
        }
        let state = self.ctx.state();
        let mut exprs = Vec::with_capacity(shown.len());
        for (i, (qualifier, field)) in plan.schema().iter().enumerate() {
            let column = Expr::Column(datafusion::common::Column::from((qualifier, field)));
            exprs.push(
                match shown[i].and_then(|f| state.scalar_functions().get(f)) {
                    Some(udf) => udf.call(vec![column]).alias(field.name()),
                    None => column,
                },
            );
        }
        Ok(LogicalPlanBuilder::from(plan).project(exprs)?.build()?)
    }

    /// The result columns of a planned query with the types DataFusion's coercion gives them
    /// (`CASE WHEN … THEN 1 ELSE 2.5 END` is numeric, not its first branch's bigint), for
    /// RowDescription. A plan the analyzer refuses (a correlated subquery run row by row) keeps
    /// the planner's types.
    fn coerced_result_schema(&self, plan: &LogicalPlan) -> SchemaRef {
        let state = self.ctx.state();
        match state
            .analyzer()
            .execute_and_check(plan.clone(), state.config_options(), |_, _| {})
        {
            Ok(analyzed) => result_schema(&analyzed),
            Err(_) => result_schema(plan),
        }
    }
    pub(crate) async fn run_query(&mut self, mut stmt: Statement) -> Result<Output> {
        self.expand_wildcards(&mut stmt);
        let renames = crate::naming::alias_result_columns(&mut stmt)?;
        self.begin_statement(mentions_system_column(&stmt));
        let mut functions = self.rewrite_correlated_subqueries(&mut stmt).await?;
        let plan = match functions.plan.take() {
            Some(plan) => plan,
            None => self.plan(stmt).await?,
        };
        drop(functions);
        let plan = self.show_oid_aliases(plan)?;
        let schema = rename_fields(self.coerced_result_schema(&plan), &renames);
        let df = self.ctx.execute_logical_plan(plan).await?;
        let stream = self.db.executor.stream(df, &self.interrupt).await?;
        Ok(Output::Rows {
            schema,
            stream,
            tag: "SELECT".into(),
        })
    }

    /// Runs a writing statement in the session's transaction, or in an implicit one that
    /// commits (and is retried on conflict) when there is none.
    async fn run_write(&mut self, stmt: Statement) -> Result<Output> {
        if self.read_only() {
            return Err(Error::ReadOnlyTransaction(command_name(&stmt)));
        }
        let opens_implicit = self.txn.is_none() && self.implicit_block;
        if opens_implicit {
            self.txn = Some(OpenTxn::begin(&self.db, true));
        }
        if self.txn.is_some() {
            let mut result = self.exec_write(&stmt).await?;
            if opens_implicit {
                result.evaluate_before_commit().await?;
                return Ok(Output::Uncommitted(result));
            }
            return result.finish(None).await;
        }
        let mut attempt = 0u32;
        // What a try's RETURNING queued (`pg_notify`) goes with the try.
        let notified = self.listener.mark();
        loop {
            // What a failed try would have dropped is told by the try that succeeds.
            self.cascaded.clear();
            self.listener.rollback_to(notified);
            self.txn = Some(OpenTxn::begin(&self.db, false));
            let result = self.exec_write(&stmt).await;
            let open = self.txn.take().expect("set above");
            let result = match result {
                Ok(mut done) => done.evaluate_before_commit().await.map(|_| done),
                Err(e) => Err(e),
            };
            let outcome = match result {
                Ok(done) => match self.commit_notifying(open).await {
                    Ok(info) => return done.finish(Some(info)).await,
                    Err(e) => e,
                },
                Err(e) => {
                    if let Some(txn) = open.txn.lock().unwrap_or_else(|e| e.into_inner()).take() {
                        txn.rollback();
                    }
                    self.end_scope();
                    e
                }
            };
            match outcome {
                // An autocommit statement fails with 40001 only after many tries: under a
                // hot row (four clients incrementing one counter) eight were not always
                // enough on a loaded machine. The wait is capped at 64 ms a try.
                Error::SerializationFailure | Error::Storage(storage::Error::Conflict)
                    if attempt < AUTOCOMMIT_ATTEMPTS_MAX =>
                {
                    attempt += 1;
                    // Exponential backoff with jitter, as the seeds recommend for retries.
                    let base = 2u64.pow(attempt.min(6));
                    let jitter = (std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.subsec_nanos())
                        .unwrap_or(0) as u64)
                        % base.max(1);
                    tokio::time::sleep(Duration::from_millis(base + jitter)).await;
                }
                Error::Storage(storage::Error::Conflict) => {
                    return Err(Error::SerializationFailure);
                }
                e => return Err(e),
            }
        }
    }

    /// `partita.max_scan_class`: the worst access class the session accepts.
    pub(crate) fn max_scan_class(&self) -> ScanClass {
        self.setting("partita.max_scan_class")
            .as_deref()
            .and_then(ScanClass::from_setting)
            .unwrap_or(ScanClass::Full)
    }

    /// `partita.fast_path` (on by default): key-only statements skip DataFusion.
    pub(crate) fn fast_path_on(&self) -> bool {
        self.setting("partita.fast_path").as_deref() != Some("off")
    }

    pub(crate) async fn exec_write(&mut self, stmt: &Statement) -> Result<dml::WriteResult> {
        dml::check_returning(stmt)?;
        if let Some(fast) = self
            .fast_path_on()
            .then(|| self.fast_statement(stmt))
            .flatten()
        {
            return self.run_fast_write(fast);
        }
        match stmt {
            Statement::Query(_) => crate::with_writes::run(self, stmt).await,
            Statement::Insert(insert) => dml::insert(self, insert).await,
            Statement::Update(update) => dml::update(self, update).await,
            Statement::Delete(delete) => dml::delete(self, delete).await,
            Statement::CreateTable(create) if create.query.is_some() => {
                crate::ddl::create_table_as(self, create).await
            }
            Statement::CreateTable(create) => crate::ddl::create_table(self, create).await,
            Statement::AlterTable(alter) => crate::ddl::alter_table(self, alter).await,
            Statement::Truncate(truncate) => crate::ddl::truncate(self, truncate).await,
            Statement::CreateIndex(create) => crate::index::create_index(self, create).await,
            Statement::CreateView(create) => crate::view::create_view(self, create).await,
            Statement::Call(call) if crate::view::refreshed_view(call).is_some() => {
                let name = crate::view::refreshed_view(call).unwrap_or_default();
                crate::view::refresh(self, &name).await
            }
            Statement::Call(call) if crate::sequences::altered(call).is_some() => {
                let text = crate::sequences::altered(call).unwrap_or_default();
                crate::sequences::alter(self, &text).await
            }
            Statement::Call(call) if crate::plain_view::altered(call).is_some() => {
                let text = crate::plain_view::altered(call).unwrap_or_default();
                crate::plain_view::alter(self, &text).await
            }
            Statement::CreateSequence { .. } => crate::sequences::create(self, stmt).await,
            Statement::CreateExtension(create) => crate::extensions::create(self, create).await,
            Statement::DropExtension(drop) => crate::extensions::drop(self, drop).await,
            Statement::CreateType {
                name,
                representation,
            } => crate::enums::create(self, name, representation.as_ref()).await,
            Statement::AlterType(alter) => crate::enums::alter(self, alter).await,
            Statement::Comment {
                object_type,
                object_name,
                comment,
                ..
            } => crate::ddl::comment(self, *object_type, object_name, comment.as_deref()).await,
            Statement::Drop {
                object_type: ObjectType::Type,
                names,
                if_exists,
                cascade,
                ..
            } => crate::enums::drop(self, names, *if_exists, *cascade).await,
            Statement::AlterIndex { name, operation } => {
                crate::ddl::alter_index(self, name, operation).await
            }
            Statement::Drop {
                object_type: ObjectType::Sequence,
                names,
                if_exists,
                cascade,
                ..
            } => crate::sequences::drop(self, names, *if_exists, *cascade).await,
            Statement::Drop {
                object_type: ObjectType::MaterializedView,
                names,
                if_exists,
                ..
            } => crate::view::drop_views(self, names, *if_exists).await,
            Statement::Drop {
                object_type: ObjectType::Index,
                names,
                if_exists,
                cascade,
                ..
            } => crate::index::drop_indexes(self, names, *if_exists, *cascade).await,
            Statement::Drop {
                object_type: ObjectType::View,
                names,
                if_exists,
                cascade,
                ..
            } => crate::plain_view::drop(self, names, *if_exists, *cascade).await,
            Statement::Drop {
                names,
                if_exists,
                cascade,
                ..
            } => crate::ddl::drop_tables(self, names, *if_exists, *cascade).await,
            other => Err(Error::Internal(format!("not a write: {other}"))),
        }
    }

    pub(crate) fn open_txn(&self) -> Result<SharedTxn> {
        self.txn
            .as_ref()
            .map(|t| Arc::clone(&t.txn))
            .ok_or_else(|| Error::Internal("write outside a transaction".into()))
    }

    /// `PREPARE name [(types)] AS statement`: kept for EXECUTE in this session.
    fn prepare_sql(
        &mut self,
        name: &ast::Ident,
        types: &[ast::DataType],
        stmt: Statement,
    ) -> Result<Output> {
        let name = sql::ddl::normalize_ident(name);
        // PostgreSQL's grammar takes a query or a row-writing statement here.
        if !matches!(
            stmt,
            Statement::Query(_)
                | Statement::Insert(_)
                | Statement::Update(_)
                | Statement::Delete(_)
        ) {
            return Err(Error::Syntax(format!(
                "PREPARE takes SELECT, VALUES, INSERT, UPDATE or DELETE, not {}",
                first_words(&stmt.to_string())
            )));
        }
        if self.sql_prepared.contains_key(&name) {
            return Err(Error::DuplicatePrepared(name));
        }
        let user = self.user_types();
        let types = types
            .iter()
            .map(|t| SqlType::from_ast_with(t, &user).map(Some))
            .collect::<sql::Result<Vec<_>>>()?;
        self.sql_prepared.insert(name, (stmt, types));
        Ok(Output::Command("PREPARE".into()))
    }

    /// `EXECUTE name [(arguments)]`: the prepared statement with the arguments' values (any
    /// expressions, evaluated first) for its parameters.
    async fn execute_sql(&mut self, name: &ast::ObjectName, arguments: &[Expr]) -> Result<Output> {
        let name = sql::ddl::table_name(name)?;
        let Some((stmt, types)) = self.sql_prepared.get(&name).cloned() else {
            return Err(Error::UnknownPrepared(name));
        };
        let expected = types.len().max(placeholder_count(&stmt));
        if arguments.len() != expected {
            return Err(Error::InvalidStatement(format!(
                "wrong number of parameters for prepared statement \"{name}\""
            )));
        }
        let mut params = Vec::with_capacity(arguments.len());
        // A parameter PREPARE gave no type has the one its context gives, as in PostgreSQL
        // (`pg_advisory_lock($1)` takes a bigint), or else text (`$1 = $2`): found at the
        // first EXECUTE, and kept.
        let mut types = types;
        if types.len() < expected {
            types.resize(expected, None);
            if let Ok(described) = self.describe(&stmt).await {
                for (i, ty) in types.iter_mut().enumerate() {
                    if ty.is_none() {
                        *ty =
                            described.declared.get(i).copied().flatten().or_else(
                                || match described.params.get(i).cloned().flatten() {
                                    Some(t) => sql_type_of(&t),
                                    None => Some(SqlType::Text),
                                },
                            );
                    }
                }
                if let Some((_, kept)) = self.sql_prepared.get_mut(&name) {
                    kept.clone_from(&types);
                }
            }
        }
        if !arguments.is_empty() {
            // The arguments' values as text, each then read as its parameter's type.
            let projection = arguments
                .iter()
                .enumerate()
                .map(|(i, e)| ast::SelectItem::ExprWithAlias {
                    expr: Expr::Cast {
                        kind: ast::CastKind::DoubleColon,
                        expr: Box::new(e.clone()),
                        data_type: ast::DataType::Text,
                        array: false,
                        format: None,
                    },
                    alias: ast::Ident::new(format!("a{i}")),
                })
                .collect();
            let query = crate::dml::select_query(projection, vec![], None);
            let batches = self.collect_query(query, false).await?;
            let batch = batches
                .iter()
                .find(|b| b.num_rows() > 0)
                .ok_or_else(|| Error::Internal("EXECUTE arguments gave no row".into()))?;
            for (i, column) in batch.columns().iter().enumerate() {
                let column = datafusion::arrow::compute::cast(
                    column,
                    &datafusion::arrow::datatypes::DataType::Utf8,
                )
                .map_err(|e| Error::DataFusion(e.into()))?;
                let text = datafusion::arrow::array::AsArray::as_string::<i32>(&column);
                params.push(Param {
                    value: (!datafusion::arrow::array::Array::is_null(text, 0))
                        .then(|| text.value(0).to_string()),
                    ty: types.get(i).copied().flatten(),
                });
            }
        }
        self.execute_inner(stmt, &params).await
    }

    /// `DEALLOCATE name`: forgets a statement PREPARE made; false when there is none.
    pub fn deallocate_sql(&mut self, name: &str) -> bool {
        self.sql_prepared.remove(name).is_some()
    }

    /// `DEALLOCATE ALL`.
    pub fn deallocate_all_sql(&mut self) {
        self.sql_prepared.clear();
    }

    /// `DISCARD ALL | PLANS | SEQUENCES | TEMP`. ALL, outside a transaction block only,
    /// closes the cursors, resets every setting, forgets the statements PREPARE made (the
    /// wire layer forgets the protocol's), the kept plans and `currval`, releases the
    /// session's advisory locks and stops its LISTENs, as PostgreSQL's does. ALL and TEMP
    /// drop the session's temporary tables.
    fn discard(&mut self, object: ast::DiscardObject) -> Result<Output> {
        match object {
            ast::DiscardObject::ALL => {
                if self.txn.as_ref().is_some_and(|t| !t.implicit) {
                    return Err(Error::ActiveTransaction(
                        "DISCARD ALL cannot run inside a transaction block".into(),
                    ));
                }
                self.cursors.clear();
                self.reset(ast::Reset::ALL)?;
                self.sql_prepared.clear();
                self.kept_plans.clear();
                self.sequence_values.forget();
                self.advisory.release_all(None);
                self.listener.unlisten(None);
                crate::temp::discard(self)?;
            }
            ast::DiscardObject::PLANS => self.kept_plans.clear(),
            ast::DiscardObject::SEQUENCES => self.sequence_values.forget(),
            ast::DiscardObject::TEMP => crate::temp::discard(self)?,
        }
        Ok(Output::Command(format!("DISCARD {object}")))
    }

    /// A notice as it is (a DO block's RAISE).
    pub(crate) fn push_notice(&mut self, notice: Notice) {
        self.notices.push(notice);
    }

    /// A notice with a SQLSTATE of its own (`42P07` for CREATE … IF NOT EXISTS of a relation
    /// that exists), as PostgreSQL sends it.
    pub(crate) fn notice_coded(&mut self, code: &'static str, text: String) {
        self.notices.push(Notice {
            severity: "NOTICE",
            code: code.into(),
            message: text,
            detail: None,
            hint: None,
        });
    }

    pub(crate) fn notice(&mut self, text: String) {
        self.notices.push(Notice {
            severity: "NOTICE",
            code: "00000".into(),
            message: text,
            detail: None,
            hint: None,
        });
    }

    /// Notes an object a DROP takes with it ("view v"): PostgreSQL tells them all in one
    /// notice ("drop cascades to 2 other objects", a DETAIL line each).
    pub(crate) fn cascades_to(&mut self, object: String) {
        self.cascaded.push(object);
    }

    /// A notice with a DETAIL.
    pub(crate) fn notice_with_detail(&mut self, message: String, detail: String) {
        self.notices.push(Notice {
            severity: "NOTICE",
            code: "00000".into(),
            message,
            detail: Some(detail),
            hint: None,
        });
    }

    fn warning(&mut self, code: &'static str, message: &str) {
        self.notices.push(Notice {
            severity: "WARNING",
            code: code.into(),
            message: message.to_string(),
            detail: None,
            hint: None,
        });
    }

    fn set(&mut self, set: ast::Set) -> Result<Output> {
        match set {
            ast::Set::SingleAssignment {
                variable,
                values,
                scope,
                ..
            } => {
                let name = variable.to_string().to_ascii_lowercase();
                let value = values
                    .iter()
                    .map(setting_text)
                    .collect::<Vec<_>>()
                    .join(", ");
                let local = matches!(scope, Some(ast::ContextModifier::Local));
                self.set_in_block(&name, value, local)?;
            }
            ast::Set::SetTimeZone { value, local } => {
                let text = match &value {
                    // Sequelize's `SET TIME ZONE INTERVAL '+00:00' HOUR TO MINUTE`.
                    Expr::Interval(interval) => zone_interval_hours(interval)?,
                    value => setting_text(value),
                };
                self.set_in_block("timezone", text, local)?
            }
            ast::Set::SetNames { charset_name, .. } => {
                self.set_setting("client_encoding", charset_name.to_string())?
            }
            ast::Set::SetTransaction { modes, session, .. } => {
                let Some(read_only) = access_mode(&modes) else {
                    return Ok(Output::Command("SET".into()));
                };
                let value = if read_only { "on" } else { "off" };
                if session {
                    self.set_setting("default_transaction_read_only", value.into())?;
                } else if let Some(open) = self.txn.as_mut().filter(|t| !t.implicit) {
                    open.read_only = read_only;
                } else {
                    self.warning(
                        "25P01",
                        "SET TRANSACTION can only be used in transaction blocks",
                    );
                }
                self.show_read_only();
            }
            ast::Set::SetSessionParam(_) => {}
            other => return Err(Error::Unsupported(format!("SET form {other}"))),
        }
        Ok(Output::Command("SET".into()))
    }

    /// `SELECT set_config(name, value, is_local), …`: each setting made as SET makes it
    /// (`is_local` as SET LOCAL), answered with its new value. The select list's other items
    /// are computed in between, left to right as PostgreSQL evaluates them: an item sees the
    /// settings made by the calls before it (`current_setting('jit'), set_config('jit', …)`
    /// gives the old value first).
    async fn set_config(&mut self, stmt: Statement, calls: Vec<SetConfig>) -> Result<Output> {
        use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        let Statement::Query(q) = &stmt else {
            return Err(Error::Internal("set_config outside a query".into()));
        };
        let ast::SetExpr::Select(select) = q.body.as_ref() else {
            return Err(Error::Internal("set_config outside a SELECT".into()));
        };
        let width = select.projection.len();
        let mut columns: Vec<Option<(Field, ArrayRef)>> = vec![None; width];
        let block = self.txn.as_ref().is_some_and(|t| !t.implicit);
        for stage in 0..=calls.len() {
            // The items after `stage` calls and before the next, computed by the statement
            // with every other item a NULL.
            let from = if stage == 0 {
                0
            } else {
                calls[stage - 1].at + 1
            };
            let to = calls.get(stage).map_or(width, |c| c.at);
            if from < to {
                let mut part = stmt.clone();
                if let Statement::Query(q) = &mut part
                    && let ast::SetExpr::Select(select) = q.body.as_mut()
                {
                    for (i, item) in select.projection.iter_mut().enumerate() {
                        if (from..to).contains(&i) {
                            continue;
                        }
                        *item = ast::SelectItem::ExprWithAlias {
                            expr: Expr::value(AstValue::Null),
                            alias: ast::Ident::new(format!("partita_other_{i}")),
                        };
                    }
                }
                let (schema, batches) = self.collect_statement(part).await?;
                let row = batches
                    .into_iter()
                    .find(|b| b.num_rows() > 0)
                    .ok_or_else(|| Error::Internal("set_config query gave no row".into()))?;
                for (i, column) in columns.iter_mut().enumerate().take(to).skip(from) {
                    *column = Some((schema.field(i).clone(), Arc::clone(row.column(i))));
                }
            }
            let Some(call) = calls.get(stage) else { break };
            let column = match &select.projection[call.at] {
                ast::SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                _ => "set_config".to_string(),
            };
            let name = call.name.to_ascii_lowercase();
            // Local outside a transaction block: for this statement's own transaction only,
            // which ends with it.
            let value = if call.local && !block {
                call.value.clone()
            } else {
                self.set_in_block(&name, call.value.clone(), call.local)?;
                self.settings.get(&name).unwrap_or_default()
            };
            let field = Field::new(column, DataType::Utf8, true);
            columns[call.at] = Some((field, Arc::new(StringArray::from(vec![value]))));
        }
        let (fields, columns): (Vec<Field>, Vec<ArrayRef>) = columns.into_iter().flatten().unzip();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|e| Error::Internal(e.to_string()))?;
        Ok(Output::from_batches(batch.schema(), vec![batch], "SELECT"))
    }

    /// Plans and runs a query, its rows in memory.
    pub(crate) async fn collect_statement(
        &mut self,
        mut stmt: Statement,
    ) -> Result<(SchemaRef, Vec<datafusion::arrow::array::RecordBatch>)> {
        self.expand_wildcards(&mut stmt);
        let renames = crate::naming::alias_result_columns(&mut stmt)?;
        let plan = self.plan(stmt).await?;
        let schema = rename_fields(self.coerced_result_schema(&plan), &renames);
        let df = self.ctx.execute_logical_plan(plan).await?;
        let batches = self.db.executor.collect(df, &self.interrupt).await?;
        Ok((schema, batches))
    }

    /// RESET name / RESET ALL: back to the defaults.
    fn reset(&mut self, reset: ast::Reset) -> Result<Output> {
        match reset {
            ast::Reset::ALL => {
                for (name, value) in DEFAULT_SETTINGS {
                    self.settings.insert(name.to_string(), value.to_string());
                }
                let user = self.identity().user;
                self.settings
                    .insert("session_authorization".into(), user.to_string());
            }
            ast::Reset::ConfigurationParameter(name) => {
                let name = name.to_string().to_ascii_lowercase();
                self.set_setting(&name, "default".into())?;
            }
        }
        Ok(Output::Command("RESET".into()))
    }

    /// The session's user and database names.
    pub(crate) fn identity(&self) -> crate::schema::Identity {
        let scope = self.scope.lock().unwrap_or_else(|e| e.into_inner());
        scope.identity.clone()
    }

    /// Takes the startup packet's user and database names as the session's identity.
    /// PostgreSQL's default database is the user's name.
    pub fn set_identity(&mut self, user: Option<&str>, database: Option<&str>) {
        let mut scope = self.scope.lock().unwrap_or_else(|e| e.into_inner());
        let defaults = crate::schema::Identity::default();
        let user: Arc<str> = user
            .filter(|u| !u.is_empty())
            .map_or(defaults.user, Arc::from);
        let database = database
            .filter(|d| !d.is_empty())
            .map_or_else(|| Arc::clone(&user), Arc::from);
        self.settings
            .insert("session_authorization".into(), user.to_string());
        scope.identity = crate::schema::Identity { user, database };
    }

    /// The process ID the wire layer gave the session (its BackendKeyData): what
    /// `pg_backend_pid()` answers and the session's notifications carry.
    pub fn set_backend_pid(&mut self, pid: i32) {
        self.listener.set_pid(pid);
        crate::functions::register_backend_pid(&self.ctx, pid);
    }

    /// The functions over the session's own state, which expressions evaluated outside
    /// its context (RETURNING's) need too: `pg_backend_pid`, `pg_notify`, the sequences'
    /// `currval` and friends, the advisory locks, `current_setting`.
    pub(crate) fn own_functions(&self) -> Vec<Arc<datafusion::logical_expr::ScalarUDF>> {
        use datafusion::execution::FunctionRegistry;
        SESSION_FUNCTIONS
            .iter()
            .filter_map(|name| self.ctx.udf(name).ok())
            .collect()
    }

    /// The queue the session's notifications arrive in (see `notify`); `None` after the
    /// first call.
    pub fn notifications(&self) -> Option<crate::notify::Queue> {
        self.listener.take_queue()
    }

    /// Applies the startup packet's `options` (`-c name=value …`, as PGOPTIONS sends).
    pub fn apply_startup_options(&mut self, options: &str) -> Result<()> {
        let mut words = options.split_whitespace();
        while let Some(word) = words.next() {
            let assignment = match word {
                "-c" => words.next().unwrap_or_default(),
                w => match w.strip_prefix("-c").or_else(|| w.strip_prefix("--")) {
                    Some(rest) => rest,
                    None => continue,
                },
            };
            if let Some((name, value)) = assignment.split_once('=') {
                let name = name.replace('-', "_").to_ascii_lowercase();
                self.set_setting(&name, value.to_string())?;
            }
        }
        Ok(())
    }

    fn set_setting(&mut self, name: &str, value: String) -> Result<()> {
        // The session is the user it connected as (see `set_identity`).
        if name == "session_authorization" {
            let user = self.identity().user;
            if !value.eq_ignore_ascii_case("default") && *value != *user {
                return Err(Error::Unsupported(
                    "SET session_authorization to another user".into(),
                ));
            }
            self.settings.insert(name.into(), user.to_string());
            return Ok(());
        }
        let value = if value.eq_ignore_ascii_case("default") {
            DEFAULT_SETTINGS
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
                .unwrap_or_default()
        } else {
            value
        };
        match name {
            "partita.max_scan_class" => {
                let v = value.to_ascii_lowercase();
                if ScanClass::from_setting(&v).is_none() {
                    return Err(Error::InvalidSettingValue {
                        name: name.into(),
                        value,
                    });
                }
                self.settings.insert(name.into(), v);
            }
            "partita.parallel_scan_min_bytes" => {
                if value.trim().parse::<u64>().is_err() {
                    return Err(Error::InvalidSettingValue {
                        name: name.into(),
                        value,
                    });
                }
                self.settings.insert(name.into(), value.trim().to_string());
            }
            "partita.fast_path" => {
                let v = value.to_ascii_lowercase();
                if !["on", "off"].contains(&v.as_str()) {
                    return Err(Error::InvalidSettingValue {
                        name: name.into(),
                        value,
                    });
                }
                self.settings.insert(name.into(), v);
            }
            // Durations, written back as PostgreSQL shows them (`1000` is `1s`).
            "statement_timeout" | "lock_timeout" | "idle_in_transaction_session_timeout" => {
                let ms = parse_duration_ms(&value).ok_or_else(|| Error::InvalidSettingValue {
                    name: name.into(),
                    value: value.clone(),
                })?;
                self.settings.insert(name.into(), format_duration_ms(ms));
            }
            // Partita writes dates as ISO and reads them month first: other styles are
            // refused rather than shown and not followed.
            "datestyle" => {
                let invalid = || Error::InvalidSettingValue {
                    name: "DateStyle".into(),
                    value: value.clone(),
                };
                for word in value.split([',', ' ']).filter(|w| !w.is_empty()) {
                    match word.to_ascii_lowercase().as_str() {
                        "iso" | "mdy" | "us" | "noneuro" | "noneuropean" | "default" => {}
                        "sql" | "postgres" | "german" | "dmy" | "ymd" | "euro" | "european" => {
                            return Err(Error::Unsupported(format!("DateStyle {word}")));
                        }
                        _ => return Err(invalid()),
                    }
                }
                self.settings.insert(name.into(), "ISO, MDY".into());
            }
            "intervalstyle" => match value.to_ascii_lowercase().as_str() {
                style @ ("postgres" | "iso_8601") => {
                    self.settings.insert(name.into(), style.into())
                }
                "sql_standard" | "postgres_verbose" => {
                    return Err(Error::Unsupported(format!("IntervalStyle {value}")));
                }
                _ => {
                    return Err(Error::InvalidSettingValue {
                        name: "IntervalStyle".into(),
                        value,
                    });
                }
            },
            "default_transaction_read_only" | "transaction_read_only" => {
                let Some(on) = setting_bool(&value) else {
                    return Err(Error::BooleanSetting(name.into()));
                };
                let value = if on { "on" } else { "off" };
                match name {
                    // Outside a block it is the next statement's own transaction.
                    "transaction_read_only" => {
                        if let Some(open) = self.txn.as_mut().filter(|t| !t.implicit) {
                            open.read_only = on;
                        }
                    }
                    _ => {
                        self.settings.insert(name.into(), value.into());
                    }
                }
                self.show_read_only();
            }
            // Facts about the server and session, which PostgreSQL does not let SET change.
            "is_superuser"
            | "server_version"
            | "server_version_num"
            | "server_encoding"
            | "lc_collate"
            | "lc_ctype"
            | "max_identifier_length"
            | "max_index_keys" => {
                return Err(Error::CantChangeSetting(name.into()));
            }
            n if BOOLEAN_SETTINGS.contains(&n) => {
                let Some(on) = setting_bool(&value) else {
                    return Err(Error::BooleanSetting(name.into()));
                };
                self.settings
                    .insert(name.into(), if on { "on" } else { "off" }.into());
            }
            // Tables WITH OIDS are gone since PostgreSQL 12; only `false` is taken.
            "default_with_oids" => match setting_bool(&value) {
                Some(false) => self.settings.insert(name.into(), "off".into()),
                Some(true) => {
                    return Err(Error::NotSupported {
                        message: "tables declared WITH OIDS are not supported".into(),
                        detail: None,
                    });
                }
                None => return Err(Error::BooleanSetting(name.into())),
            },
            // Partita writes bytea as hex only.
            "bytea_output" => match value.to_ascii_lowercase().as_str() {
                "hex" => self.settings.insert(name.into(), "hex".into()),
                "escape" => return Err(Error::Unsupported("bytea_output escape".into())),
                _ => {
                    return Err(Error::InvalidSettingValue {
                        name: name.into(),
                        value,
                    });
                }
            },
            "timezone" => {
                let zone = Zone::parse(&value).ok_or_else(|| Error::InvalidSettingValue {
                    name: "TimeZone".into(),
                    value: value.clone(),
                })?;
                self.set_zone(zone);
            }
            n if self.settings.contains_key(n) || n.contains('.') => {
                self.settings.insert(n.into(), value);
            }
            n => return Err(Error::UnknownSetting(n.into())),
        }
        Ok(())
    }

    async fn show(&mut self, variable: &[ast::Ident]) -> Result<Output> {
        let name = show_name(variable);
        let name = match name.as_str() {
            "time zone" => "timezone".to_string(),
            "transaction isolation level" => "transaction_isolation".to_string(),
            "all" => return Ok(self.show_all()),
            _ => name,
        };
        let value = self
            .settings
            .get(&name)
            .ok_or_else(|| Error::UnknownSetting(name.clone()))?;
        let batch = datafusion::arrow::array::RecordBatch::try_new(
            Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
                datafusion::arrow::datatypes::Field::new(
                    show_column(&name),
                    datafusion::arrow::datatypes::DataType::Utf8,
                    false,
                ),
            ])),
            vec![Arc::new(datafusion::arrow::array::StringArray::from(vec![
                value,
            ]))],
        )
        .map_err(|e| Error::Internal(e.to_string()))?;
        Ok(Output::from_batches(batch.schema(), vec![batch], "SHOW"))
    }
}

impl Session {
    /// `SHOW ALL`: every parameter, by name, with its value (descriptions are empty).
    fn show_all(&self) -> Output {
        use datafusion::arrow::array::StringArray;
        let mut all: Vec<(String, String)> = self
            .settings
            .all()
            .into_iter()
            .map(|(name, value, _)| (show_column(&name).to_string(), value))
            .collect();
        all.sort_by_key(|(name, _)| name.to_ascii_lowercase());
        let schema = show_all_schema();
        let names = StringArray::from_iter_values(all.iter().map(|(n, _)| n.as_str()));
        let values = StringArray::from_iter_values(all.iter().map(|(_, v)| v.as_str()));
        let descriptions = StringArray::from_iter_values(all.iter().map(|_| ""));
        let batch = datafusion::arrow::array::RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(names), Arc::new(values), Arc::new(descriptions)],
        )
        .expect("three text columns");
        Output::from_batches(schema, vec![batch], "SHOW")
    }
}

/// SHOW ALL's columns.
fn show_all_schema() -> SchemaRef {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    Arc::new(Schema::new(
        ["name", "setting", "description"]
            .map(|c| Field::new(c, DataType::Utf8, false))
            .to_vec(),
    ))
}

fn setting_text(expr: &Expr) -> String {
    match expr {
        Expr::Value(v) => match &v.value {
            AstValue::SingleQuotedString(s) | AstValue::DoubleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        Expr::Identifier(id) => id.value.clone(),
        other => other.to_string(),
    }
}

/// The access mode `READ ONLY` / `READ WRITE` among transaction modes (the last one said).
fn access_mode(modes: &[ast::TransactionMode]) -> Option<bool> {
    modes.iter().rev().find_map(|mode| match mode {
        ast::TransactionMode::AccessMode(ast::TransactionAccessMode::ReadOnly) => Some(true),
        ast::TransactionMode::AccessMode(ast::TransactionAccessMode::ReadWrite) => Some(false),
        _ => None,
    })
}

/// A boolean setting's value as PostgreSQL reads one (`on`, `true`, `yes`, `1`, …).
fn setting_bool(value: &str) -> Option<bool> {
    match value
        .trim()
        .trim_matches('\'')
        .to_ascii_lowercase()
        .as_str()
    {
        "on" | "true" | "yes" | "1" | "t" | "y" => Some(true),
        "off" | "false" | "no" | "0" | "f" | "n" => Some(false),
        _ => None,
    }
}

fn setting_is_on(value: &str) -> bool {
    setting_bool(value) == Some(true)
}

/// The command a statement is, as PostgreSQL names it in errors (`CREATE TABLE`).
fn command_name(stmt: &Statement) -> String {
    if let Some(main) = crate::with_writes::command_of(stmt) {
        return match main {
            Statement::Query(_) => "SELECT".into(),
            write => command_name(write),
        };
    }
    match stmt {
        Statement::Insert(_) => "INSERT".into(),
        Statement::Update(_) => "UPDATE".into(),
        Statement::Delete(_) => "DELETE".into(),
        Statement::Truncate(_) => "TRUNCATE TABLE".into(),
        Statement::CreateTable(create) if create.query.is_some() => "CREATE TABLE AS".into(),
        Statement::Call(call) if crate::view::refreshed_view(call).is_some() => {
            "REFRESH MATERIALIZED VIEW".into()
        }
        Statement::Call(call) if crate::sequences::altered(call).is_some() => {
            "ALTER SEQUENCE".into()
        }
        Statement::Call(_) => "ALTER VIEW".into(),
        Statement::Drop { object_type, .. } => format!("DROP {object_type}"),
        other => {
            let text = other.to_string();
            let words: Vec<&str> = text.split_whitespace().take(3).collect();
            match words.as_slice() {
                ["CREATE", "UNIQUE", "INDEX", ..] => "CREATE INDEX".into(),
                ["CREATE", "MATERIALIZED", "VIEW", ..] => "CREATE MATERIALIZED VIEW".into(),
                ["CREATE", "OR", "REPLACE", ..] => "CREATE VIEW".into(),
                [first, second, ..] => format!("{first} {second}"),
                _ => text,
            }
        }
    }
}

fn first_words(sql: &str) -> String {
    sql.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

/// Whether a statement names a system column, which then becomes part of table schemas.
pub(crate) fn mentions_system_column(stmt: &Statement) -> bool {
    let text = stmt.to_string().to_ascii_lowercase();
    text.contains("_etag") || text.contains("_timestamp") || text.contains("_rowid")
}

/// SHOW's column: the parameter as PostgreSQL spells it (`TimeZone`).
pub(crate) fn show_column(name: &str) -> &str {
    match name {
        "time zone" | "timezone" => "TimeZone",
        "datestyle" => "DateStyle",
        "intervalstyle" => "IntervalStyle",
        "transaction isolation level" => "transaction_isolation",
        other => other,
    }
}

/// `SET TIME ZONE INTERVAL '…' [HOUR TO MINUTE]`: the interval's hours east of Greenwich,
/// as the setting text `SET TIME ZONE <hours>` takes. Days and months are refused, as
/// PostgreSQL refuses them (22023).
fn zone_interval_hours(interval: &ast::Interval) -> Result<String> {
    let text = match interval.value.as_ref() {
        Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    };
    let invalid = || Error::InvalidSettingValue {
        name: "TimeZone".into(),
        value: format!("INTERVAL '{text}'"),
    };
    // `INTERVAL '-8' HOUR` counts hours; otherwise the text reads as an interval does.
    let hours_only = matches!(interval.leading_field, Some(ast::DateTimeField::Hour))
        && interval.last_field.is_none();
    if hours_only && let Ok(hours) = text.trim().parse::<f64>() {
        return Ok(hours.to_string());
    }
    // Parsing leaves interval literals as `<m> months <d> days <n> nanoseconds`.
    let (months, days, nanoseconds) = match text.split_whitespace().collect::<Vec<_>>()[..] {
        [m, "months", d, "days", n, "nanoseconds"] => (
            m.parse::<i32>().map_err(|_| invalid())?,
            d.parse::<i32>().map_err(|_| invalid())?,
            n.parse::<i64>().map_err(|_| invalid())?,
        ),
        _ => {
            let value = crate::interval_input::parse(&text).ok_or_else(invalid)?;
            (value.months, value.days, value.nanoseconds)
        }
    };
    if months != 0 || days != 0 {
        return Err(invalid());
    }
    Ok((nanoseconds as f64 / 3.6e12).to_string())
}

/// The parameter SHOW names: `time zone` is two words, `partita.fast_path` one dotted name.
fn show_name(variable: &[ast::Ident]) -> String {
    let parts: Vec<String> = variable
        .iter()
        .map(|i| i.value.to_ascii_lowercase())
        .collect();
    // SQL's spellings of a few settings are words; any other name is dotted (`app.user_id`).
    let spaced = parts.join(" ");
    match spaced.as_str() {
        "time zone" | "transaction isolation level" | "session authorization" => spaced,
        _ => parts.join("."),
    }
}

/// `generate_series` bounds: an untyped string takes the type of the other bound's cast.
fn type_untyped_bounds(args: &mut [ast::FunctionArg]) {
    fn bound(a: &mut ast::FunctionArg) -> Option<&mut Expr> {
        match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        }
    }
    if args.len() < 2 {
        return;
    }
    let data_type = args[..2].iter_mut().find_map(|a| match bound(a) {
        Some(Expr::Cast { data_type, .. }) => Some(data_type.clone()),
        _ => None,
    });
    let Some(data_type) = data_type else {
        return;
    };
    for a in &mut args[..2] {
        if let Some(e) = bound(a)
            && matches!(e, Expr::Value(v) if matches!(v.value, AstValue::SingleQuotedString(_)))
        {
            *e = Expr::Cast {
                kind: ast::CastKind::DoubleColon,
                expr: Box::new(e.clone()),
                data_type: data_type.clone(),
                array: false,
                format: None,
            };
        }
    }
}

/// Expression forms DataFusion does not plan as PostgreSQL does, written as ones it does:
/// - `(a, b) > (-1, 2)`: DataFusion accepts only plain literals in a row value, and `-1` is
///   a negation of one; make it the literal it means;
/// - `~x`, bitwise NOT, is `x # -1` (XOR with all bits set);
/// - `generate_series('2024-01-01'::timestamp, '2024-01-03', …)`: an untyped string
///   bound takes the other bound's type, as PostgreSQL resolves unknown literals.
pub(crate) fn normalize_expression_forms(stmt: &mut Statement) {
    struct Folder;
    impl VisitorMut for Folder {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = e
                && f.name.to_string().eq_ignore_ascii_case("generate_series")
                && let ast::FunctionArguments::List(list) = &mut f.args
            {
                type_untyped_bounds(&mut list.args);
            }
            if let Expr::UnaryOp {
                op: ast::UnaryOperator::BitwiseNot,
                expr,
            } = e
            {
                let operand = std::mem::replace(expr.as_mut(), Expr::value(AstValue::Null));
                *e = Expr::Nested(Box::new(Expr::BinaryOp {
                    left: Box::new(operand),
                    op: ast::BinaryOperator::PGBitwiseXor,
                    right: Box::new(Expr::value(AstValue::Number("-1".into(), false))),
                }));
            }
            ControlFlow::Continue(())
        }

        fn pre_visit_table_factor(&mut self, t: &mut ast::TableFactor) -> ControlFlow<()> {
            if let ast::TableFactor::Table {
                name,
                args: Some(args),
                ..
            } = t
                && name.to_string().eq_ignore_ascii_case("generate_series")
            {
                type_untyped_bounds(&mut args.args);
            }
            ControlFlow::Continue(())
        }

        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if let Expr::Tuple(items) = e {
                for item in items {
                    if let Expr::UnaryOp {
                        op: ast::UnaryOperator::Minus,
                        expr,
                    } = item
                        && let Expr::Value(v) = expr.as_ref()
                        && let AstValue::Number(n, long) = &v.value
                    {
                        *item = Expr::value(AstValue::Number(format!("-{n}"), *long));
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Folder);
}

/// Replaces `$n` placeholders with the bound values, typed when their type is known.
pub fn bind_params(stmt: &mut Statement, params: &[Param]) -> Result<()> {
    struct Binder<'a> {
        params: &'a [Param],
        error: Option<Error>,
    }
    impl VisitorMut for Binder<'_> {
        type Break = ();
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if let Expr::Value(v) = expr
                && let AstValue::Placeholder(p) = &v.value
            {
                let index = p
                    .trim_start_matches('$')
                    .parse::<usize>()
                    .ok()
                    .filter(|i| *i >= 1 && *i <= self.params.len());
                let Some(index) = index else {
                    self.error = Some(Error::Syntax(format!("there is no parameter {p}")));
                    return ControlFlow::Break(());
                };
                *expr = param_literal(&self.params[index - 1]);
            }
            ControlFlow::Continue(())
        }
    }
    // Before the values are in: a parameter another context typed (`substr(t, $1)` with
    // `2 ^ $1`, a float8) is still read as the argument its function takes.
    crate::params::cast_unknown_arguments(stmt);
    let mut binder = Binder {
        params,
        error: None,
    };
    let _ = stmt.visit(&mut binder);
    if let Some(e) = binder.error {
        return Err(e);
    }
    fold_function_argument_integers(stmt);
    fold_limit_integers(stmt);
    Ok(())
}

/// The integer a bound parameter holds: a number, an integer's text (a parameter of no
/// declared type), or either cast to an integer type.
fn bound_integer(e: &Expr) -> Option<i64> {
    match e {
        Expr::Nested(inner) => bound_integer(inner),
        Expr::Cast {
            expr,
            data_type:
                ast::DataType::SmallInt(_)
                | ast::DataType::Int(_)
                | ast::DataType::Integer(_)
                | ast::DataType::BigInt(_)
                | ast::DataType::Int2(_)
                | ast::DataType::Int4(_)
                | ast::DataType::Int8(_),
            ..
        } => bound_integer(expr),
        Expr::Value(v) => match &v.value {
            AstValue::Number(n, _) | AstValue::SingleQuotedString(n) => n.trim().parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// `LIMIT $1`, `OFFSET $2` and `FETCH FIRST $1 ROWS` take a count: a parameter a client
/// sent as text without a type (node-postgres sends every one so) is that number, as
/// PostgreSQL reads it as a bigint; DataFusion refused the text.
fn fold_limit_integers(stmt: &mut Statement) {
    struct Folder;
    impl VisitorMut for Folder {
        type Break = ();
        fn post_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
            let fold = |e: &mut Expr| {
                if matches!(e, Expr::Value(_) | Expr::Cast { .. } | Expr::Nested(_))
                    && let Some(n) = bound_integer(e)
                {
                    *e = Expr::value(AstValue::Number(n.to_string(), false));
                }
            };
            match &mut q.limit_clause {
                Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => {
                    if let Some(limit) = limit {
                        fold(limit);
                    }
                    if let Some(offset) = offset {
                        fold(&mut offset.value);
                    }
                }
                Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => {
                    fold(offset);
                    fold(limit);
                }
                None => {}
            }
            if let Some(quantity) = q.fetch.as_mut().and_then(|f| f.quantity.as_mut()) {
                fold(quantity);
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Folder);
}

/// A FROM function's arguments must be plain constants when it is planned: an integer
/// parameter bound as `CAST('4' AS SMALLINT)` becomes the number `4` (a bigint, which
/// `generate_series` takes).
///
/// So must a window function's offset or count (`lag(x, $1)`, `ntile($1)`).
fn fold_function_argument_integers(stmt: &mut Statement) {
    let fold = |e: &mut Expr| {
        if matches!(e, Expr::Cast { .. } | Expr::Nested(_))
            && let Some(n) = bound_integer(e)
        {
            *e = Expr::value(AstValue::Number(n.to_string(), false));
        }
    };
    for_each_function_argument(stmt, fold);
    struct Windows<F>(F);
    impl<F: FnMut(&mut Expr)> VisitorMut for Windows<F> {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = e
                && f.over.is_some()
                && let Some(name) = f.name.0.last().and_then(|p| p.as_ident())
                && let ast::FunctionArguments::List(list) = &mut f.args
            {
                let counts = match sql::ddl::normalize_ident(name).as_str() {
                    "lag" | "lead" | "nth_value" => 1..2,
                    "ntile" => 0..1,
                    _ => 0..0,
                };
                for arg in list.args.get_mut(counts).into_iter().flatten() {
                    if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg)) = arg {
                        (self.0)(arg);
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Windows(fold));
}

/// Calls `f` on each plain argument of each function in a FROM clause
/// (`generate_series(1, $1)`).
fn for_each_function_argument(stmt: &mut Statement, f: impl FnMut(&mut Expr)) {
    struct Walker<F>(F);
    impl<F: FnMut(&mut Expr)> VisitorMut for Walker<F> {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut ast::TableFactor) -> ControlFlow<()> {
            if let ast::TableFactor::Table {
                args: Some(args), ..
            } = factor
            {
                for arg in &mut args.args {
                    if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = arg {
                        (self.0)(e);
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Walker(f));
}

/// Reads each placeholder the client typed as a cast to its type (see
/// [`Session::describe_declared`]).
struct DeclaredPlaceholders<'a>(&'a [Option<SqlType>]);

impl VisitorMut for DeclaredPlaceholders<'_> {
    type Break = ();
    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Some(ty) = placeholder_index(expr).and_then(|i| self.0.get(i - 1).copied().flatten())
        {
            let placeholder = std::mem::replace(expr, Expr::value(AstValue::Null));
            *expr = Expr::Cast {
                kind: ast::CastKind::Cast,
                expr: Box::new(placeholder),
                data_type: parameter_type(ty),
                array: false,
                format: None,
            };
        }
        ControlFlow::Continue(())
    }
}

pub(crate) fn param_literal(param: &Param) -> Expr {
    let value = match &param.value {
        None => Expr::Value(AstValue::Null.into()),
        Some(text) => Expr::Value(AstValue::SingleQuotedString(text.clone()).into()),
    };
    match param.ty {
        // A bytea parameter is `\x…` text: a hex literal, as DataFusion's cast would keep
        // the characters' bytes.
        Some(sql::SqlType::Bytea) => {
            match param.value.as_deref().and_then(|t| t.strip_prefix("\\x")) {
                Some(hex) => Expr::Value(AstValue::HexStringLiteral(hex.to_string()).into()),
                None => value,
            }
        }
        // An unconstrained numeric written as plain digits is that constant, with the
        // scale it was written with (`1.10`), as PostgreSQL keeps it.
        Some(sql::SqlType::Numeric {
            precision: None,
            scale: None,
        }) if param.value.as_deref().is_some_and(plain_decimal) => {
            let digits = param.value.clone().unwrap_or_default();
            let number = Expr::Value(AstValue::Number(digits.clone(), false).into());
            match digits.contains('.') {
                true => number,
                // Without a point it would be an integer, and `x / $1` integer division.
                false => Expr::Cast {
                    kind: ast::CastKind::Cast,
                    expr: Box::new(number),
                    data_type: ast::DataType::Numeric(ast::ExactNumberInfo::None),
                    array: false,
                    format: None,
                },
            }
        }
        Some(ty) => Expr::Cast {
            kind: ast::CastKind::Cast,
            expr: Box::new(value),
            data_type: parameter_type(ty),
            array: false,
            format: None,
        },
        None => value,
    }
}

/// The type a typed parameter is cast to: its own for the types Partita keeps as text
/// whose input function reads it (`'A0EE…'::uuid` is `a0ee…`, jsonb is normalized).
fn parameter_type(ty: SqlType) -> ast::DataType {
    match ty {
        SqlType::Uuid => ast::DataType::Uuid,
        SqlType::Json => ast::DataType::JSON,
        SqlType::Jsonb => ast::DataType::JSONB,
        other => other.to_ast(),
    }
}

/// `-12.50`: an optional sign, digits, and an optional point with digits after it.
fn plain_decimal(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    !whole.is_empty()
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.bytes().all(|b| b.is_ascii_digit())
}

#[allow(dead_code)]
fn _transaction_modifier_is_ignored(_: TransactionModifier) {}

/// The schema a query's result is described with. A column keeps its declared SQL type
/// (field metadata: varchar, uuid, json…) when it is a plain column reference, a cast that
/// names its type (`x::jsonb`, `x::text`, see `casts`) or a function that gives its result
/// a type (`doc -> 'a'` is jsonb); DataFusion carries metadata through other expressions,
/// where it no longer holds (`u || ''` is text, not uuid).
///
/// Decimal columns say whether they show their values' own digits (see `digits`).
pub fn result_schema(plan: &LogicalPlan) -> SchemaRef {
    crate::digits::mark_own_digits(typed_result_schema(plan), plan)
}

fn typed_result_schema(plan: &LogicalPlan) -> SchemaRef {
    let arrow = plan.schema().as_arrow();
    let mut node = plan;
    let projection = loop {
        match node {
            LogicalPlan::Projection(p) => break Some(p),
            LogicalPlan::Sort(s) => node = s.input.as_ref(),
            LogicalPlan::Limit(l) => node = l.input.as_ref(),
            LogicalPlan::Distinct(datafusion::logical_expr::Distinct::All(input)) => {
                node = input.as_ref()
            }
            LogicalPlan::SubqueryAlias(a) => node = a.input.as_ref(),
            _ => break None,
        }
    };
    let Some(projection) = projection else {
        return Arc::new(arrow.clone());
    };
    let fields: Vec<_> = arrow
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            use datafusion::logical_expr::{Cast, Expr};
            let typed = |e: &Expr| match e {
                Expr::Column(_) | Expr::ScalarFunction(_) => true,
                Expr::Cast(Cast { field, .. }) => sql::types::declared_type_name(field).is_some(),
                _ => false,
            };
            let plain = match projection.expr.get(i) {
                Some(Expr::Alias(a)) => typed(&a.expr),
                Some(e) => typed(e),
                None => false,
            };
            if plain {
                Arc::clone(f)
            } else {
                Arc::new(f.as_ref().clone().with_metadata(Default::default()))
            }
        })
        .collect();
    Arc::new(datafusion::arrow::datatypes::Schema::new(fields))
}

/// Gives result columns the names PostgreSQL would (see `naming`). A column DataFusion
/// renamed `id:1` because a derived table or WITH query read through `*` has two `id`s
/// (`SELECT * FROM (SELECT a.id, b.id …) s`) is `id` again, as PostgreSQL keeps both names.
pub(crate) fn rename_fields(schema: SchemaRef, renames: &crate::naming::ResultNames) -> SchemaRef {
    let deduplicated = |i: usize| -> Option<String> {
        let (base, n) = schema.field(i).name().rsplit_once(':')?;
        let earlier = schema.fields()[..i].iter().any(|f| f.name() == base);
        (earlier && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .then(|| base.to_string())
    };
    let suffixed = (0..schema.fields().len()).any(|i| deduplicated(i).is_some());
    if renames.is_empty() && !suffixed {
        return schema;
    }
    let mut fields: Vec<_> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    for (i, f) in fields.iter_mut().enumerate() {
        if let Some(base) = deduplicated(i) {
            *f = f.clone().with_name(base);
        }
    }
    for (i, f) in fields.iter_mut().enumerate() {
        if let Some(name) = renames.name_of(i, f.name()) {
            *f = f.clone().with_name(name);
        }
    }
    Arc::new(datafusion::arrow::datatypes::Schema::new(fields))
}

/// What a prepared statement takes and returns, for the extended protocol's Describe.
pub struct Description {
    /// Inferred type of each `$n`, by position; `None` when the context does not say.
    pub params: Vec<Option<datafusion::arrow::datatypes::DataType>>,
    /// The declared column type a `$n` is stored into (INSERT … VALUES), which tells uuid,
    /// json or varchar from text.
    pub declared: Vec<Option<sql::SqlType>>,
    /// The result columns, for statements that return rows.
    pub schema: Option<SchemaRef>,
}

/// The highest `$n` a statement uses.
fn placeholder_count(stmt: &impl ast::Visit) -> usize {
    struct Counter(usize);
    impl ast::Visitor for Counter {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            if let Expr::Value(v) = expr
                && let AstValue::Placeholder(p) = &v.value
                && let Ok(n) = p.trim_start_matches('$').parse::<usize>()
            {
                self.0 = self.0.max(n);
            }
            ControlFlow::Continue(())
        }
    }
    let mut c = Counter(0);
    let _ = ast::Visit::visit(stmt, &mut c);
    c.0
}

/// Replaces the placeholders that are arguments of FROM functions with the number 0;
/// returns their numbers.
fn function_argument_placeholders(stmt: &mut Statement) -> Vec<usize> {
    // The placeholder, or a cast of it (`$1::int`).
    fn placeholder_within(e: &Expr) -> Option<usize> {
        match e {
            Expr::Cast { expr, .. } => placeholder_within(expr),
            Expr::Nested(inner) => placeholder_within(inner),
            other => placeholder_index(other),
        }
    }
    let mut replaced = Vec::new();
    for_each_function_argument(stmt, |e| {
        if let Some(i) = placeholder_within(e) {
            replaced.push(i);
            *e = Expr::value(AstValue::Number("0".into(), false));
        }
    });
    replaced
}

fn placeholder_index(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Value(v) => match &v.value {
            AstValue::Placeholder(p) => p
                .trim_start_matches('$')
                .parse::<usize>()
                .ok()
                .filter(|n| *n >= 1),
            _ => None,
        },
        _ => None,
    }
}

impl Session {
    /// Describes a query whose parameters the client typed (`declared[i]` for `$i+1`): each
    /// such placeholder is read as a cast to its type, so the result columns are of the
    /// types it runs with (`SELECT $1 + 1` of a float8 is a float8). Other statements as
    /// [`Session::describe`].
    pub async fn describe_declared(
        &self,
        stmt: &Statement,
        declared: &[Option<SqlType>],
    ) -> Result<Description> {
        if !matches!(stmt, Statement::Query(_)) || declared.iter().all(Option::is_none) {
            return self.describe(stmt).await;
        }
        let mut typed = stmt.clone();
        let _ = typed.visit(&mut DeclaredPlaceholders(declared));
        let mut described = self.describe(&typed).await?;
        for (i, ty) in declared.iter().enumerate() {
            if let (Some(ty), Some(param)) = (ty, described.params.get_mut(i)) {
                *param = Some(ty.arrow_in(&self.zone.arrow));
            }
        }
        Ok(described)
    }

    /// Describes a statement without running it: parameter types from context and the
    /// result columns.
    pub async fn describe(&self, stmt: &Statement) -> Result<Description> {
        // EXECUTE answers as the statement it runs, and takes no parameters of its own; a
        // PREPARE neither takes any nor returns rows.
        if let Statement::Execute {
            name: Some(name), ..
        } = stmt
            && let Ok(name) = sql::ddl::table_name(name)
            && let Some((inner, _)) = self.sql_prepared.get(&name)
        {
            let inner = Box::pin(self.describe(inner)).await?;
            return Ok(Description {
                params: vec![],
                declared: vec![],
                schema: inner.schema,
            });
        }
        if matches!(stmt, Statement::Prepare { .. }) {
            return Ok(Description {
                params: vec![],
                declared: vec![],
                schema: None,
            });
        }
        let n = placeholder_count(stmt);
        if crate::with_writes::applies(stmt) {
            return crate::with_writes::describe(self, stmt, n).await;
        }
        let mut params: Vec<Option<datafusion::arrow::datatypes::DataType>> = vec![None; n];
        let mut declared_types: Vec<Option<sql::SqlType>> = vec![None; n];
        let merge = |plan: &LogicalPlan,
                     params: &mut Vec<Option<datafusion::arrow::datatypes::DataType>>,
                     declared: &mut Vec<Option<sql::SqlType>>| {
            {
                let mut types = crate::params::parameter_types(plan);
                for (name, ty, sql_type) in crate::params::contextual_parameter_types(plan) {
                    if let (Some(sql_type), Ok(i)) =
                        (sql_type, name.trim_start_matches('$').parse::<usize>())
                        && (1..=declared.len()).contains(&i)
                    {
                        declared[i - 1].get_or_insert(sql_type);
                    }
                    // DataFusion types a parameter it cannot type as Null.
                    let slot = types.entry(name).or_insert(None);
                    if slot
                        .as_ref()
                        .is_none_or(datafusion::arrow::datatypes::DataType::is_null)
                    {
                        *slot = Some(ty);
                    }
                }
                for (name, ty) in types {
                    // Two parameters compared with each other (`$1 = $2`) are typed Null:
                    // unknown, so text.
                    let ty = ty.filter(|t| !t.is_null());
                    if let (Some(i), Some(ty)) =
                        (name.trim_start_matches('$').parse::<usize>().ok(), ty)
                        && i >= 1
                        && i <= params.len()
                        && params[i - 1].is_none()
                    {
                        params[i - 1] = Some(ty);
                    }
                }
            }
        };
        let schema = match stmt {
            // EXPLAIN answers with its one text column whatever it explains; planning what
            // it explains (when DataFusion can) types the parameters.
            Statement::Explain { statement, .. } => {
                if let Ok(plan) = self.plan(statement.as_ref().clone()).await {
                    merge(&plan, &mut params, &mut declared_types);
                }
                Some(crate::explain::result_schema())
            }
            Statement::Query(_) => {
                let mut stmt = stmt.clone();
                self.expand_wildcards(&mut stmt);
                let renames = crate::naming::alias_result_columns(&mut stmt)?;
                let plan = match self.plan(stmt.clone()).await {
                    Ok(plan) => plan,
                    // A FROM function's arguments must be constants when it is planned
                    // (`generate_series(1, $1)`): describe it with the parameters as bigint
                    // zeros; at Execute they are bound values.
                    Err(e) => {
                        let replaced = function_argument_placeholders(&mut stmt);
                        if replaced.is_empty() {
                            return Err(e);
                        }
                        for i in replaced {
                            if let Some(p) = params.get_mut(i - 1) {
                                p.get_or_insert(datafusion::arrow::datatypes::DataType::Int64);
                            }
                        }
                        self.plan(stmt).await?
                    }
                };
                merge(&plan, &mut params, &mut declared_types);
                let plan = self.show_oid_aliases(plan)?;
                Some(rename_fields(self.coerced_result_schema(&plan), &renames))
            }
            Statement::ShowVariable { variable } if show_name(variable) == "all" => {
                Some(show_all_schema())
            }
            Statement::ShowVariable { variable } => {
                let name = show_name(variable);
                Some(Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
                    datafusion::arrow::datatypes::Field::new(
                        show_column(&name),
                        datafusion::arrow::datatypes::DataType::Utf8,
                        false,
                    ),
                ])))
            }
            Statement::Insert(insert) => {
                let name = match &insert.table {
                    ast::TableObject::TableName(n) => sql::ddl::table_name(n)?,
                    _ => {
                        return Ok(Description {
                            declared: vec![None; params.len()],
                            params,
                            schema: None,
                        });
                    }
                };
                let def = self.written_table_def(&name)?;
                let targets: Vec<usize> = if insert.columns.is_empty() {
                    (0..def.columns.len())
                        .filter(|&i| !def.columns[i].hidden)
                        .collect()
                } else {
                    insert
                        .columns
                        .iter()
                        .map(|c| {
                            let col =
                                c.0.last()
                                    .and_then(|p| p.as_ident())
                                    .map(sql::ddl::normalize_ident)
                                    .unwrap_or_default();
                            def.column(&col).map(|(i, _)| i)
                        })
                        .collect::<sql::Result<_>>()?
                };
                if let Some(ast::SetExpr::Values(values)) =
                    insert.source.as_ref().map(|q| q.body.as_ref())
                {
                    for row in &values.rows {
                        for (pos, expr) in row.iter().enumerate() {
                            if let (Some(i), Some(&col)) =
                                (placeholder_index(expr), targets.get(pos))
                                && i <= params.len()
                                && params[i - 1].is_none()
                            {
                                params[i - 1] = Some(def.columns[col].ty.arrow());
                                declared_types[i - 1] = Some(def.columns[col].ty);
                            }
                        }
                    }
                    // Placeholders inside expressions (`NOT $2`, `abs($2)`, `$2 * interval
                    // '1 minute'`) are of the types those expressions give them.
                    let expressions: Vec<String> = values
                        .rows
                        .iter()
                        .flat_map(|row| row.iter())
                        .filter(|e| placeholder_index(e).is_none() && placeholder_count(*e) > 0)
                        .map(ToString::to_string)
                        .collect();
                    if !expressions.is_empty()
                        && let Ok(mut probe) =
                            parse_sql(&format!("SELECT {}", expressions.join(", ")))
                        && let Ok(plan) = self.plan(probe.remove(0)).await
                    {
                        merge(&plan, &mut params, &mut declared_types);
                    }
                }
                // INSERT … SELECT $1, $2 [WHERE …]: a parameter that is a select-list item
                // is of its target column's type; the others as the query types them.
                if let Some(source) = &insert.source
                    && let ast::SetExpr::Select(select) = source.body.as_ref()
                {
                    for (pos, item) in select.projection.iter().enumerate() {
                        let (ast::SelectItem::UnnamedExpr(expr)
                        | ast::SelectItem::ExprWithAlias { expr, .. }) = item
                        else {
                            continue;
                        };
                        if let (Some(i), Some(&col)) = (placeholder_index(expr), targets.get(pos))
                            && i <= params.len()
                            && params[i - 1].is_none()
                        {
                            params[i - 1] = Some(def.columns[col].ty.arrow());
                            declared_types[i - 1] = Some(def.columns[col].ty);
                        }
                    }
                    if let Ok(plan) = self.plan(Statement::Query(source.clone())).await {
                        merge(&plan, &mut params, &mut declared_types);
                    }
                }
                // ON CONFLICT … DO UPDATE SET col = $n.
                if let Some(ast::OnInsert::OnConflict(ast::OnConflict {
                    action: ast::OnConflictAction::DoUpdate(update),
                    ..
                })) = &insert.on
                {
                    for a in &update.assignments {
                        let ast::AssignmentTarget::ColumnName(col) = &a.target else {
                            continue;
                        };
                        let col = col
                            .0
                            .last()
                            .and_then(|p| p.as_ident())
                            .map(sql::ddl::normalize_ident)
                            .unwrap_or_default();
                        if let (Some(i), Ok((c, _))) =
                            (placeholder_index(&a.value), def.column(&col))
                            && i <= params.len()
                            && params[i - 1].is_none()
                        {
                            params[i - 1] = Some(def.columns[c].ty.arrow());
                            declared_types[i - 1] = Some(def.columns[c].ty);
                        }
                    }
                }
                self.returning_schema(
                    &def,
                    insert.returning.as_ref(),
                    insert.table_alias.as_ref().map(|a| &a.alias),
                )
                .await?
            }
            Statement::Update(update) => {
                let ast::TableFactor::Table { name, alias, .. } = &update.table.relation else {
                    return Ok(Description {
                        declared: vec![None; params.len()],
                        params,
                        schema: None,
                    });
                };
                let def = self.written_table_def(&sql::ddl::table_name(name)?)?;
                for a in &update.assignments {
                    if let (ast::AssignmentTarget::ColumnName(col), Some(i)) =
                        (&a.target, placeholder_index(&a.value))
                    {
                        let col = col
                            .0
                            .last()
                            .and_then(|p| p.as_ident())
                            .map(sql::ddl::normalize_ident)
                            .unwrap_or_default();
                        if let (Ok((c, _)), true) = (def.column(&col), i <= params.len()) {
                            params[i - 1] = Some(def.columns[c].ty.arrow());
                            declared_types[i - 1] = Some(def.columns[c].ty);
                        }
                    }
                }
                // Placeholders inside expressions (`n + $1`) and in the condition.
                let expressions: Vec<&Expr> = update
                    .assignments
                    .iter()
                    .map(|a| &a.value)
                    .filter(|v| placeholder_index(v).is_none())
                    .collect();
                if !expressions.is_empty() || update.selection.is_some() {
                    let from = match &update.from {
                        Some(
                            ast::UpdateTableFromKind::BeforeSet(from)
                            | ast::UpdateTableFromKind::AfterSet(from),
                        ) => from.as_slice(),
                        None => &[],
                    };
                    let probe = where_probe(
                        name,
                        alias.clone(),
                        from,
                        &expressions,
                        update.selection.as_ref(),
                    );
                    merge(&self.plan(probe).await?, &mut params, &mut declared_types);
                }
                self.returning_schema(
                    &def,
                    update.returning.as_ref(),
                    alias.as_ref().map(|a| &a.name),
                )
                .await?
            }
            Statement::Delete(delete) => {
                let tables = match &delete.from {
                    ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
                };
                let Some(ast::TableFactor::Table { name, alias, .. }) =
                    tables.first().map(|t| &t.relation)
                else {
                    return Ok(Description {
                        declared: vec![None; params.len()],
                        params,
                        schema: None,
                    });
                };
                let def = self.written_table_def(&sql::ddl::table_name(name)?)?;
                if let Some(selection) = &delete.selection {
                    let using = delete.using.as_deref().unwrap_or_default();
                    let probe = where_probe(name, alias.clone(), using, &[], Some(selection));
                    merge(&self.plan(probe).await?, &mut params, &mut declared_types);
                }
                self.returning_schema(
                    &def,
                    delete.returning.as_ref(),
                    alias.as_ref().map(|a| &a.name),
                )
                .await?
            }
            _ => None,
        };
        Ok(Description {
            declared: declared_types,
            params,
            schema,
        })
    }

    async fn returning_schema(
        &self,
        def: &sql::TableDef,
        returning: Option<&Vec<ast::SelectItem>>,
        alias: Option<&ast::Ident>,
    ) -> Result<Option<SchemaRef>> {
        let Some(items) = returning else {
            return Ok(None);
        };
        let sql_text = format!(
            "SELECT {} FROM \"{}\"{}",
            items
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            def.name.replace('"', "\"\""),
            alias.map(|a| format!(" AS {a}")).unwrap_or_default()
        );
        let stmt = parse_sql(&sql_text)?.remove(0);
        let plan = self.plan(stmt).await?;
        Ok(Some(result_schema(&plan)))
    }
}

/// `SELECT items FROM name [alias][, from…] [WHERE selection]`: a query whose plan types the
/// placeholders of a write's expressions and condition from the columns of the table and
/// of UPDATE's FROM or DELETE's USING.
fn where_probe(
    name: &ast::ObjectName,
    alias: Option<ast::TableAlias>,
    from: &[ast::TableWithJoins],
    items: &[&Expr],
    selection: Option<&Expr>,
) -> Statement {
    let mut alias_text = alias.map(|a| format!(" AS {}", a.name)).unwrap_or_default();
    for table in from {
        alias_text.push_str(&format!(", {table}"));
    }
    let items = if items.is_empty() {
        "1".to_string()
    } else {
        items
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let condition = selection.map(|s| format!(" WHERE {s}")).unwrap_or_default();
    let text = format!("SELECT {items} FROM {name}{alias_text}{condition}");
    parse_sql(&text)
        .ok()
        .and_then(|mut v| v.pop())
        .unwrap_or(Statement::Query(Box::new(crate::dml::plain_query(
            None,
            ast::SetExpr::Values(ast::Values {
                explicit_row: false,
                value_keyword: false,
                rows: vec![],
            }),
        ))))
}
