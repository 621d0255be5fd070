//! SQL cursors: DECLARE … CURSOR FOR, FETCH, MOVE, CLOSE — the SQL form of continuation
//! tokens.
//!
//! A cursor holds the running query's stream; FETCH pulls the next rows from it, so a client
//! pages through a large result without the server materializing it. Cursors live until
//! CLOSE or the end of their transaction; a WITH HOLD cursor is materialized when declared
//! and survives the transaction.

use crate::error::{Error, Result};
use crate::session::{Output, Session};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::sql::sqlparser::ast::{self, CloseCursor, FetchDirection, Statement};
use futures::StreamExt;
use std::collections::VecDeque;
use std::sync::Arc;

/// MOVE, which sqlparser does not know, is parsed as a FETCH whose `INTO` (which PostgreSQL's
/// SQL FETCH does not take) names this.
pub(crate) const MOVE_MARK: &str = "partita_move";

/// Parses `MOVE [direction] [FROM | IN] name`, the MOVE keyword already read, as the FETCH
/// [`MOVE_MARK`] marks.
pub(crate) fn parse_move(
    parser: &mut datafusion::sql::sqlparser::parser::Parser,
) -> std::result::Result<Statement, datafusion::sql::sqlparser::parser::ParserError> {
    match parser.parse_fetch_statement()? {
        Statement::Fetch {
            name,
            direction,
            position,
            into: None,
        } => Ok(Statement::Fetch {
            name,
            direction,
            position,
            into: Some(ast::ObjectName::from(vec![ast::Ident::new(MOVE_MARK)])),
        }),
        _ => Err(
            datafusion::sql::sqlparser::parser::ParserError::ParserError(
                "MOVE takes no INTO".into(),
            ),
        ),
    }
}

/// Puts FROM before the cursor's name in `FETCH … name` and `MOVE … name` without FROM or
/// IN (and NEXT in `FETCH name`), which PostgreSQL takes (asyncpg sends `MOVE FORWARD 3
/// name`) and sqlparser does not.
pub(crate) fn name_cursor_after_from(
    tokens: &mut Vec<datafusion::sql::sqlparser::tokenizer::TokenWithSpan>,
) {
    use datafusion::sql::sqlparser::keywords::Keyword;
    use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};
    let mut start = 0;
    while start < tokens.len() {
        let end = (start..tokens.len())
            .find(|&i| tokens[i].token == Token::SemiColon)
            .unwrap_or(tokens.len());
        let significant = |i: &usize| !matches!(tokens[*i].token, Token::Whitespace(_));
        let first = (start..end).find(significant).map(|i| &tokens[i].token);
        let cursor_statement = matches!(first, Some(Token::Word(w))
            if w.keyword == Keyword::FETCH || w.value.eq_ignore_ascii_case("move"));
        // Every other statement is passed over without a look at its tokens.
        if !cursor_statement {
            start = end + 1;
            continue;
        }
        let words: Vec<usize> = (start..end).filter(significant).collect();
        let has_from = words.iter().any(|&i| {
            matches!(&tokens[i].token, Token::Word(w) if matches!(w.keyword, Keyword::FROM | Keyword::IN))
        });
        match words.last() {
            Some(&name) if !has_from && words.len() > 1 => {
                // Without a direction (`FETCH name`), NEXT.
                let mut inserted = Vec::new();
                let space = || TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space));
                if words.len() == 2 {
                    inserted.extend([TokenWithSpan::wrap(Token::make_keyword("NEXT")), space()]);
                }
                inserted.extend([TokenWithSpan::wrap(Token::make_keyword("FROM")), space()]);
                let added = inserted.len();
                tokens.splice(name..name, inserted);
                start = end + added + 1;
            }
            _ => start = end + 1,
        }
    }
}

pub(crate) struct Cursor {
    schema: SchemaRef,
    /// In a mutex only so `Session` stays `Sync`; always reached through `&mut`.
    stream: Option<std::sync::Mutex<SendableRecordBatchStream>>,
    buffered: VecDeque<RecordBatch>,
    pub hold: bool,
}

impl Session {
    /// The row schema of the SQL cursor `name` (a DECLAREd cursor is a portal: clients
    /// describe it by name).
    pub fn cursor_schema(&self, name: &str) -> Option<SchemaRef> {
        self.cursors.get(name).map(|c| Arc::clone(&c.schema))
    }
}

impl Cursor {
    /// Up to `n` next rows (`None`: all that remain).
    async fn take(&mut self, n: Option<usize>) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        let mut want = n.unwrap_or(usize::MAX);
        while want > 0 {
            let batch = match self.buffered.pop_front() {
                Some(b) => b,
                None => match self.stream.as_mut() {
                    Some(s) => match s.get_mut().unwrap_or_else(|e| e.into_inner()).next().await {
                        Some(b) => b?,
                        None => {
                            self.stream = None;
                            break;
                        }
                    },
                    None => break,
                },
            };
            if batch.num_rows() <= want {
                want -= batch.num_rows();
                out.push(batch);
            } else {
                out.push(batch.slice(0, want));
                self.buffered
                    .push_front(batch.slice(want, batch.num_rows() - want));
                want = 0;
            }
        }
        Ok(out)
    }
}

fn count(limit: &ast::ValueWithSpan) -> Result<usize> {
    limit
        .value
        .to_string()
        .parse::<usize>()
        .map_err(|_| Error::Syntax(format!("invalid FETCH count {}", limit.value)))
}

impl Session {
    pub(crate) async fn declare(&mut self, stmts: Vec<ast::Declare>) -> Result<Output> {
        for decl in stmts {
            let Some(query) = decl.for_query else {
                return Err(Error::Unsupported("DECLARE without a cursor query".into()));
            };
            let hold = decl.hold.unwrap_or(false);
            if self.txn.is_none() && !hold {
                return Err(Error::NoTransaction("DECLARE CURSOR".into()));
            }
            let Some(name) = decl.names.first().map(sql::ddl::normalize_ident) else {
                return Err(Error::Syntax("DECLARE needs a cursor name".into()));
            };
            if self.cursors.contains_key(&name) {
                return Err(Error::DuplicateCursor(name));
            }
            let Output::Rows { schema, stream, .. } =
                self.run_query(Statement::Query(query)).await?
            else {
                return Err(Error::Internal(
                    "a cursor query returned no rows description".into(),
                ));
            };
            let mut cursor = Cursor {
                schema,
                stream: Some(std::sync::Mutex::new(stream)),
                buffered: VecDeque::new(),
                hold,
            };
            if hold {
                let all = cursor.take(None).await?;
                cursor.buffered = all.into();
                cursor.stream = None;
            }
            self.cursors.insert(name, cursor);
        }
        Ok(Output::Command("DECLARE CURSOR".into()))
    }

    pub(crate) async fn fetch(
        &mut self,
        name: &ast::Ident,
        direction: FetchDirection,
    ) -> Result<Output> {
        let name = sql::ddl::normalize_ident(name);
        let n = match &direction {
            FetchDirection::Next | FetchDirection::Forward { limit: None } => Some(1),
            FetchDirection::Count { limit } | FetchDirection::Forward { limit: Some(limit) } => {
                Some(count(limit)?)
            }
            FetchDirection::All | FetchDirection::ForwardAll => None,
            other => {
                return Err(Error::Unsupported(format!(
                    "FETCH {other} (cursors are forward-only)"
                )));
            }
        };
        let cursor = self
            .cursors
            .get_mut(&name)
            .ok_or(Error::UnknownCursor(name))?;
        let batches = cursor.take(n).await?;
        Ok(Output::from_batches(
            Arc::clone(&cursor.schema),
            batches,
            "FETCH",
        ))
    }

    /// `MOVE [direction] [FROM | IN] name`: FETCH without the rows, answered `MOVE n`.
    pub(crate) async fn move_cursor(
        &mut self,
        name: &ast::Ident,
        direction: FetchDirection,
    ) -> Result<Output> {
        let moved = match self.fetch(name, direction).await? {
            Output::Rows { mut stream, .. } => {
                let mut rows = 0;
                while let Some(batch) = stream.next().await {
                    rows += batch?.num_rows();
                }
                rows
            }
            _ => 0,
        };
        Ok(Output::Command(format!("MOVE {moved}")))
    }

    pub(crate) fn close_cursor(&mut self, cursor: CloseCursor) -> Result<Output> {
        match cursor {
            CloseCursor::All => {
                self.cursors.clear();
                Ok(Output::Command("CLOSE CURSOR ALL".into()))
            }
            CloseCursor::Specific { name } => {
                let name = sql::ddl::normalize_ident(&name);
                self.cursors
                    .remove(&name)
                    .ok_or(Error::UnknownCursor(name))?;
                Ok(Output::Command("CLOSE CURSOR".into()))
            }
        }
    }
}
