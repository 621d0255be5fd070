//! The functions of serial and identity columns' sequences: `nextval`, `setval`, `currval`,
//! `lastval` and `pg_get_serial_sequence`. A serial column's DEFAULT is `nextval('<table>_<column>_seq')`
//! (see `sql::catalog`, which keeps the values); an INSERT evaluates it once per row.

use crate::dml::WriteResult;
use crate::error::Result;
use crate::provider::{SharedTxn, in_txn};
use crate::schema::StatementScope;
use crate::session::Session;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Builder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::DataFusionError;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::sql::sqlparser::ast;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};
use sql::SqlType;
use sql::catalog::{Sequence, SequenceDef};
use sql::sequence::{OptionsOf, SequenceOption, SequenceOptions, parse_option, parse_options};
use sql::{Catalog, CatalogChanges};
use std::sync::{Arc, Mutex};
use storage::Store;

/// What one session's `nextval` calls gave, which `currval` and `lastval` answer; DISCARD
/// SEQUENCES forgets it.
#[derive(Clone, Default)]
pub struct SessionValues(Arc<Mutex<Seen>>);

impl SessionValues {
    pub fn forget(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Seen::default();
    }

    /// Records a value `nextval` of `sequence` gave outside the SQL function (values the
    /// writer hands out itself), for `currval` and `lastval`.
    pub(crate) fn record(&self, sequence: &str, value: i64) {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        seen.by_sequence.insert(sequence.to_string(), value);
        seen.last = Some(value);
    }
}

/// The sequence a column DEFAULT of exactly `nextval('name')` (a serial's or identity's, or
/// one written out) takes its values from, as `changes` sees the catalog.
pub(crate) fn default_sequence(
    catalog: &Catalog,
    changes: &CatalogChanges,
    default: &str,
) -> Option<Sequence> {
    let name = default.strip_prefix("nextval('")?.strip_suffix("')")?;
    catalog.sequence(
        &sql::sequence::regclass_name(&name.replace("''", "'")),
        changes,
    )
}

/// Registers the sequence functions over `catalog`'s sequences in `store`.
/// A sequence is known when a column of the tables the statement sees (`scope`'s
/// uncommitted changes included) takes its values.
pub fn register(
    ctx: &SessionContext,
    catalog: &Catalog,
    store: &Store,
    scope: &Arc<Mutex<StatementScope>>,
) -> SessionValues {
    // One session's: `currval` and `lastval` answer what its own nextval calls got.
    let values = SessionValues::default();
    let seen = &values.0;
    for op in [Op::Next, Op::Set, Op::Current, Op::Last] {
        ctx.register_udf(ScalarUDF::new_from_impl(SequenceFunction {
            op,
            catalog: catalog.clone(),
            store: store.clone(),
            scope: Arc::clone(scope),
            seen: Arc::clone(seen),
            signature: match op {
                Op::Next | Op::Current => {
                    Signature::exact(vec![DataType::Utf8], Volatility::Volatile)
                }
                Op::Set => Signature::one_of(
                    vec![
                        TypeSignature::Exact(vec![DataType::Utf8, DataType::Int64]),
                        TypeSignature::Exact(vec![
                            DataType::Utf8,
                            DataType::Int64,
                            DataType::Boolean,
                        ]),
                    ],
                    Volatility::Volatile,
                ),
                Op::Last => Signature::exact(vec![], Volatility::Volatile),
            },
        }));
    }
    ctx.register_udf(ScalarUDF::new_from_impl(SerialSequence {
        catalog: catalog.clone(),
        scope: Arc::clone(scope),
        signature: Signature::exact(vec![DataType::Utf8, DataType::Utf8], Volatility::Stable),
    }));
    values
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Next,
    Set,
    Current,
    Last,
}

/// The values a session's `nextval` (and `setval`) calls gave.
#[derive(Default)]
struct Seen {
    /// By sequence: what `currval` answers.
    by_sequence: std::collections::HashMap<String, i64>,
    /// What the last `nextval` gave: what `lastval` answers.
    last: Option<i64>,
}

struct SequenceFunction {
    op: Op,
    catalog: Catalog,
    store: Store,
    scope: Arc<Mutex<StatementScope>>,
    seen: Arc<Mutex<Seen>>,
    signature: Signature,
}

/// The catalog changes of the statement's transaction.
fn changes(scope: &Mutex<StatementScope>) -> CatalogChanges {
    scope
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .changes
        .clone()
}

impl std::fmt::Debug for SequenceFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.op)
    }
}

impl PartialEq for SequenceFunction {
    fn eq(&self, other: &Self) -> bool {
        self.op == other.op
    }
}

impl Eq for SequenceFunction {}

impl std::hash::Hash for SequenceFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.op.hash(state)
    }
}

impl SequenceFunction {
    /// The sequence `text` names as a regclass does (`s`, `public.s`, `"S"`), or its OID
    /// when `'s'::regclass` gave that; 42809 for a relation of another kind.
    fn resolve(
        &self,
        text: &str,
        changes: &CatalogChanges,
    ) -> datafusion::common::Result<Sequence> {
        let mut name = sql::sequence::regclass_name(text);
        if let Ok(oid) = name.parse::<i32>() {
            let sequence = self
                .catalog
                .sequences(changes)
                .into_iter()
                .find(|s| crate::pg_catalog::sequence_oid(&s.name) == oid);
            if let Some(sequence) = sequence {
                return Ok(sequence);
            }
            if let Some(t) = self
                .catalog
                .tables(changes)
                .into_iter()
                .find(|t| crate::pg_catalog::relation_oid(t.keyspace) == oid)
            {
                name = t.name.clone();
            }
        }
        if let Some(sequence) = self.catalog.sequence(&name, changes) {
            return Ok(sequence);
        }
        if self.catalog.relation_exists(&name, changes) {
            return Err(DataFusionError::External(Box::new(
                crate::Error::WrongObjectType(format!("\"{name}\" is not a sequence")),
            )));
        }
        Err(external(sql::Error::UnknownTable(name)))
    }
}

fn external(e: sql::Error) -> DataFusionError {
    DataFusionError::External(Box::new(crate::Error::Sql(e)))
}

impl ScalarUDFImpl for SequenceFunction {
    fn name(&self) -> &str {
        match self.op {
            Op::Next => "nextval",
            Op::Set => "setval",
            Op::Current => "currval",
            Op::Last => "lastval",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> datafusion::common::Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::common::Result<ColumnarValue> {
        let n = args.number_rows;
        let not_yet = |what: String| {
            DataFusionError::External(Box::new(crate::Error::NotInPrerequisiteState(what)))
        };
        if self.op == Op::Last {
            let last = self.seen.lock().unwrap_or_else(|e| e.into_inner()).last;
            let last =
                last.ok_or_else(|| not_yet("lastval is not yet defined in this session".into()))?;
            return Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::Int64(Some(last)),
            ));
        }
        let names = args.args[0].to_array(n)?;
        let names = names.as_string::<i32>();
        let values: Option<ArrayRef> = match self.op {
            Op::Set => Some(args.args[1].to_array(n)?),
            Op::Next | Op::Current | Op::Last => None,
        };
        // setval's third argument: whether the value counts as handed out (by default).
        let called = match args.args.get(2) {
            Some(called) => Some(called.to_array(n)?),
            None => None,
        };
        let changes = changes(&self.scope);
        let mut out = Int64Builder::with_capacity(n);
        // Each name is looked up once per batch (a multi-row INSERT's defaults call the
        // same sequence for every row).
        let mut found: std::collections::HashMap<String, Sequence> = Default::default();
        for r in 0..n {
            if names.is_null(r) {
                out.append_null();
                continue;
            }
            let text = names.value(r);
            let sequence = match found.get(text) {
                Some(sequence) => sequence.clone(),
                None => {
                    let sequence = self.resolve(text, &changes)?;
                    found.insert(text.to_string(), sequence.clone());
                    sequence
                }
            };
            let name = sequence.name.clone();
            let mut is_called = true;
            let value = match (&values, self.op) {
                (_, Op::Current) => {
                    let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
                    let value = seen.by_sequence.get(&name).copied().ok_or_else(|| {
                        not_yet(format!(
                            "currval of sequence \"{name}\" is not yet defined in this session"
                        ))
                    })?;
                    out.append_value(value);
                    continue;
                }
                (None, _) => self.catalog.next_of(&self.store, &sequence),
                (Some(values), _) => {
                    let values = values.as_primitive::<Int64Type>();
                    if values.is_null(r) {
                        out.append_null();
                        continue;
                    }
                    if let Some(called) = &called {
                        let called = called.as_boolean();
                        if called.is_null(r) {
                            out.append_null();
                            continue;
                        }
                        is_called = called.value(r);
                    }
                    self.catalog
                        .set_value(&self.store, &sequence, values.value(r), is_called)
                }
            };
            let value = value.map_err(external)?;
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            // A value set as not yet handed out is not this session's current one.
            if is_called {
                seen.by_sequence.insert(name, value);
            }
            if self.op == Op::Next {
                seen.last = Some(value);
            }
            out.append_value(value);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

/// `pg_get_serial_sequence(table, column)`: the sequence of a serial or identity column,
/// NULL for another column.
struct SerialSequence {
    catalog: Catalog,
    scope: Arc<Mutex<StatementScope>>,
    signature: Signature,
}

impl std::fmt::Debug for SerialSequence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("pg_get_serial_sequence")
    }
}

impl PartialEq for SerialSequence {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for SerialSequence {}

impl std::hash::Hash for SerialSequence {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        "pg_get_serial_sequence".hash(state)
    }
}

impl ScalarUDFImpl for SerialSequence {
    fn name(&self) -> &str {
        "pg_get_serial_sequence"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> datafusion::common::Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::common::Result<ColumnarValue> {
        let n = args.number_rows;
        let tables = args.args[0].to_array(n)?;
        let columns = args.args[1].to_array(n)?;
        let (tables, columns) = (tables.as_string::<i32>(), columns.as_string::<i32>());
        let changes = changes(&self.scope);
        let mut out = StringBuilder::new();
        for r in 0..n {
            if tables.is_null(r) || columns.is_null(r) {
                out.append_null();
                continue;
            }
            let table = sql::sequence::regclass_name(tables.value(r));
            let column = columns.value(r).trim_matches('"');
            let def = self
                .catalog
                .table(&table, &changes)
                .ok_or_else(|| external(sql::Error::UnknownTable(table.clone())))?;
            // The column's own sequence, or one made by CREATE SEQUENCE … OWNED BY it.
            let sequence = def
                .columns
                .iter()
                .find(|c| c.name == column)
                .and_then(|c| c.owned_sequence(&table))
                .or_else(|| {
                    self.catalog
                        .sequences(&changes)
                        .into_iter()
                        .find(|s| {
                            s.def.is_some()
                                && s.owner
                                    .as_ref()
                                    .is_some_and(|(t, c)| *t == table && c == column)
                        })
                        .map(|s| s.name)
                });
            // Quoted where the name needs it (`public."User_id_seq"`), so that setval and
            // nextval read it back.
            out.append_option(
                sequence.map(|s| format!("public.{}", crate::functions::text::quote_ident(&s))),
            );
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

// ---- CREATE, ALTER and DROP SEQUENCE ----

/// The procedure `ALTER SEQUENCE …` is carried as (sqlparser has no such statement): a CALL
/// with the statement's text, read again when it runs.
pub const ALTER_PROCEDURE: &str = "partita_alter_sequence";

/// `CREATE [TEMP] SEQUENCE [IF NOT EXISTS] name options`, the parser after SEQUENCE: the
/// options in any order, as PostgreSQL takes them (sqlparser wants its own order).
pub(crate) fn parse_create(
    parser: &mut Parser,
    temporary: bool,
) -> std::result::Result<ast::Statement, ParserError> {
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = parser.parse_object_name(false)?;
    let (mut data_type, mut owned_by, mut sequence_options) = (None, None, Vec::new());
    for (option, _) in parse_options(parser, OptionsOf::Create)? {
        let number = |n: i64| ast::Expr::value(ast::Value::Number(n.to_string(), false));
        sequence_options.push(match option {
            SequenceOption::As(ty) => {
                data_type = Some(ty);
                continue;
            }
            SequenceOption::OwnedBy(name) => {
                owned_by = name;
                continue;
            }
            SequenceOption::Restart(_) => continue,
            SequenceOption::Increment(n) => ast::SequenceOptions::IncrementBy(number(n), true),
            SequenceOption::MinValue(n) => ast::SequenceOptions::MinValue(n.map(number)),
            SequenceOption::MaxValue(n) => ast::SequenceOptions::MaxValue(n.map(number)),
            SequenceOption::Start(n) => ast::SequenceOptions::StartWith(number(n), true),
            SequenceOption::Cache(n) => ast::SequenceOptions::Cache(number(n)),
            SequenceOption::Cycle(cycle) => ast::SequenceOptions::Cycle(!cycle),
        });
    }
    Ok(ast::Statement::CreateSequence {
        temporary,
        if_not_exists,
        name,
        data_type,
        sequence_options,
        owned_by,
    })
}

/// What an ALTER SEQUENCE does.
enum AlterAction {
    /// The options, and for an identity column (`ALTER TABLE … ALTER COLUMN … SET
    /// GENERATED …`) how it takes explicit values.
    Options(Vec<SequenceOption>, Option<sql::Identity>),
    Rename(String),
}

/// The sequence an ALTER changes.
enum AlterTarget {
    Sequence(String),
    /// `ALTER TABLE t ALTER COLUMN c …`: an identity column's.
    Column {
        table: String,
        column: String,
    },
}

struct AlterSequence {
    target: AlterTarget,
    if_exists: bool,
    action: AlterAction,
}

/// Whether `parser` is at `ALTER TABLE … ALTER [COLUMN] c` followed by `RESTART` or by
/// `SET` and a sequence option or GENERATED: an identity column's sequence change, which
/// sqlparser does not read.
pub(crate) fn at_identity_alter(parser: &Parser) -> bool {
    let tokens: [Token; 16] = parser.peek_tokens();
    let word = |i: usize, k: Keyword| matches!(&tokens[i], Token::Word(w) if w.keyword == k);
    let name = |i: usize| matches!(&tokens[i], Token::Word(_));
    if !(word(0, Keyword::ALTER) && word(1, Keyword::TABLE)) {
        return false;
    }
    let mut i = 2;
    if word(i, Keyword::IF) && word(i + 1, Keyword::EXISTS) {
        i += 2;
    }
    if word(i, Keyword::ONLY) {
        i += 1;
    }
    if !name(i) {
        return false;
    }
    i += 1;
    while i + 1 < tokens.len() && tokens[i] == Token::Period && name(i + 1) {
        i += 2;
    }
    if i + 4 >= tokens.len() || !word(i, Keyword::ALTER) {
        return false;
    }
    i += 1;
    if word(i, Keyword::COLUMN) {
        i += 1;
    }
    if !name(i) {
        return false;
    }
    i += 1;
    word(i, Keyword::RESTART)
        || (word(i, Keyword::SET)
            && [
                Keyword::GENERATED,
                Keyword::INCREMENT,
                Keyword::START,
                Keyword::MINVALUE,
                Keyword::MAXVALUE,
                Keyword::NO,
                Keyword::CYCLE,
                Keyword::CACHE,
            ]
            .iter()
            .any(|k| word(i + 1, *k)))
}

/// `ALTER TABLE [IF EXISTS] [ONLY] t ALTER [COLUMN] c {RESTART [[WITH] n] | SET GENERATED
/// {ALWAYS | BY DEFAULT} | SET option} …`, the parser after TABLE.
fn parse_identity_alter(parser: &mut Parser) -> std::result::Result<AlterSequence, ParserError> {
    let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let _ = parser.parse_keyword(Keyword::ONLY);
    let table = parser.parse_object_name(false)?;
    let table =
        sql::ddl::table_name(&table).map_err(|e| ParserError::ParserError(e.to_string()))?;
    parser.expect_keyword_is(Keyword::ALTER)?;
    let _ = parser.parse_keyword(Keyword::COLUMN);
    let column = sql::ddl::normalize_ident(&parser.parse_identifier()?);
    let (mut options, mut generated) = (Vec::new(), None);
    loop {
        let option = if parser.peek_keyword(Keyword::RESTART) {
            parse_option(parser, OptionsOf::Alter)?
        } else if parser.parse_keywords(&[Keyword::SET, Keyword::GENERATED]) {
            if generated.is_some() {
                return Err(ParserError::ParserError(REDUNDANT.into()));
            }
            generated = Some(if parser.parse_keyword(Keyword::ALWAYS) {
                sql::Identity::Always
            } else {
                parser.expect_keywords(&[Keyword::BY, Keyword::DEFAULT])?;
                sql::Identity::ByDefault
            });
            continue;
        } else if parser.parse_keyword(Keyword::SET) {
            match parse_option(parser, OptionsOf::Identity)? {
                Some(SequenceOption::As(_)) => {
                    return Err(ParserError::ParserError(
                        "sequence option \"as\" not supported here".into(),
                    ));
                }
                Some(option) => Some(option),
                None => return parser.expected("a sequence option", parser.peek_token()),
            }
        } else {
            None
        };
        let Some(option) = option else {
            break;
        };
        sql::sequence::check_repeat(&options, &option)?;
        options.push(option);
    }
    Ok(AlterSequence {
        target: AlterTarget::Column { table, column },
        if_exists,
        action: AlterAction::Options(options, generated),
    })
}

/// `ALTER SEQUENCE [IF EXISTS] name {options | RENAME TO new}`, the parser after SEQUENCE.
fn parse_alter(parser: &mut Parser) -> std::result::Result<AlterSequence, ParserError> {
    let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = parser.parse_object_name(false)?;
    let name = sql::ddl::table_name(&name).map_err(|e| ParserError::ParserError(e.to_string()))?;
    let action = if parser.parse_keywords(&[Keyword::RENAME, Keyword::TO]) {
        AlterAction::Rename(sql::ddl::normalize_ident(&parser.parse_identifier()?))
    } else {
        let options: Vec<SequenceOption> = parse_options(parser, OptionsOf::Alter)?
            .into_iter()
            .map(|(o, _)| o)
            .collect();
        if options.is_empty() {
            return parser.expected("a sequence option", parser.peek_token());
        }
        AlterAction::Options(options, None)
    };
    Ok(AlterSequence {
        target: AlterTarget::Sequence(name),
        if_exists,
        action,
    })
}

/// A parser error of a sequence statement: an option given twice ("conflicting or
/// redundant options") or where it cannot be is PostgreSQL's 42601 with its own message;
/// others go to `syntax`.
pub(crate) fn option_error(
    syntax: impl Fn(ParserError) -> crate::Error,
) -> impl Fn(ParserError) -> crate::Error {
    move |e| match &e {
        ParserError::ParserError(m) if m == REDUNDANT || m.starts_with("sequence option ") => {
            crate::Error::InvalidStatement(m.clone())
        }
        // An option's number that is no bigint (sql::sequence's `signed`).
        ParserError::ParserError(m) if m.ends_with("is out of range for type bigint") => {
            crate::Error::NumericOverflow(m.clone())
        }
        ParserError::ParserError(m) => {
            match m.strip_prefix("invalid input syntax for type bigint: ") {
                Some(value) => crate::Error::InvalidText {
                    ty: "bigint".into(),
                    value: value.trim_matches('"').into(),
                },
                None => syntax(e),
            }
        }
        _ => syntax(e),
    }
}

const REDUNDANT: &str = sql::sequence::REDUNDANT_OPTIONS;

/// Reads an ALTER SEQUENCE statement, or an identity column's ALTER TABLE (see
/// `at_identity_alter`), from `parser` (after ALTER), to check it.
pub(crate) fn check_alter(parser: &mut Parser) -> std::result::Result<(), ParserError> {
    parse_any_alter(parser).map(|_| ())
}

fn parse_any_alter(parser: &mut Parser) -> std::result::Result<AlterSequence, ParserError> {
    if parser.parse_keyword(Keyword::TABLE) {
        return parse_identity_alter(parser);
    }
    parser.expect_keyword_is(Keyword::SEQUENCE)?;
    parse_alter(parser)
}

/// `ALTER SEQUENCE …` as the CALL it is carried as: `text` is the statement's text, read
/// again when it runs.
pub(crate) fn alter_call(text: &str) -> ast::Statement {
    crate::session::internal_call(ALTER_PROCEDURE, text)
}

/// The text of the ALTER SEQUENCE `call` carries, when it is one.
pub fn altered(call: &ast::Function) -> Option<String> {
    crate::session::internal_call_text(call, ALTER_PROCEDURE)
}

/// Puts the options of each `AS IDENTITY (…)` in `tokens` in the order sqlparser reads
/// them (PostgreSQL takes any order). A list that is not sequence options is left alone.
pub(crate) fn order_identity_options(tokens: &mut Vec<TokenWithSpan>) {
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let solid = |t: &TokenWithSpan| !matches!(t.token, Token::Whitespace(_));
    let mut at = 0;
    while at < tokens.len() {
        let previous = tokens[..at].iter().rposition(solid);
        let is_identity = word(&tokens[at].token, "identity")
            && previous.is_some_and(|p| word(&tokens[p].token, "as"));
        let open = (at + 1..tokens.len()).find(|&j| solid(&tokens[j]));
        let (true, Some(open)) = (is_identity, open) else {
            at += 1;
            continue;
        };
        if tokens[open].token != Token::LParen {
            at += 1;
            continue;
        }
        let mut depth = 0;
        let close = (open..tokens.len()).find(|&j| {
            match tokens[j].token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            depth == 0
        });
        let Some(close) = close else {
            return;
        };
        let inner = tokens[open + 1..close].to_vec();
        let mut parser =
            Parser::new(&PostgreSqlDialect {}).with_tokens_with_locations(inner.clone());
        if let Ok(mut options) = parse_options(&mut parser, OptionsOf::Identity)
            && parser.peek_token() == Token::EOF
            && options
                .iter()
                .all(|(o, _)| sql::sequence::ast_rank(o).is_some())
        {
            options.sort_by_key(|(o, _)| sql::sequence::ast_rank(o));
            let mut ordered = Vec::new();
            for (_, range) in options {
                ordered.push(TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space)));
                ordered.extend(inner[range].iter().cloned());
            }
            let end = open + 1 + ordered.len();
            tokens.splice(open + 1..close, ordered);
            at = end;
        } else {
            at = close;
        }
    }
}

pub(crate) fn session_changes(session: &Session) -> CatalogChanges {
    changes(&session.scope)
}

/// OWNED BY `target`: the table and column, which must exist.
fn owner(session: &Session, target: &ast::ObjectName) -> Result<(String, String)> {
    let parts: Vec<String> = target
        .0
        .iter()
        .filter_map(|p| p.as_ident().map(sql::ddl::normalize_ident))
        .collect();
    let (table, column) = match parts.as_slice() {
        [table, column] | [_, table, column] => (table.clone(), column.clone()),
        _ => {
            return Err(crate::Error::InvalidStatement(
                "invalid OWNED BY option".into(),
            ));
        }
    };
    let def = session.table_def(&table)?;
    def.column(&column)?;
    if def.temp_schema.is_some() {
        // PostgreSQL's words: the table is in its session's schema, the sequence is not.
        return Err(crate::Error::NotInPrerequisiteState(
            "sequence must be in same schema as table it is linked to".into(),
        ));
    }
    Ok((table, column))
}

/// The options a statement gives that change a sequence's definition (not RESTART, not
/// OWNED BY).
fn defining(options: &[SequenceOption]) -> bool {
    options
        .iter()
        .any(|o| !matches!(o, SequenceOption::Restart(_) | SequenceOption::OwnedBy(_)))
}

pub async fn create(session: &mut Session, stmt: &ast::Statement) -> Result<WriteResult> {
    let ast::Statement::CreateSequence {
        temporary,
        if_not_exists,
        name,
        data_type,
        sequence_options,
        owned_by,
    } = stmt
    else {
        return Err(crate::Error::Internal("not CREATE SEQUENCE".into()));
    };
    if *temporary {
        return Err(crate::Error::Unsupported(
            "CREATE TEMPORARY SEQUENCE".into(),
        ));
    }
    let name = sql::ddl::table_name(name)?;
    let mut given = sql::sequence::from_ast(sequence_options)?;
    given.extend(data_type.clone().map(SequenceOption::As));
    let (options, _) = SequenceOptions::of_type(SqlType::Int8).with(&given, true)?;
    let owned_by = owned_by.as_ref().map(|o| owner(session, o)).transpose()?;
    let txn = session.open_txn()?;
    if session
        .db
        .catalog
        .name_taken(&name, false, &session_changes(session))
    {
        if *if_not_exists {
            session.notice_coded(
                "42P07",
                format!("relation \"{name}\" already exists, skipping"),
            );
            return Ok(WriteResult::command("CREATE SEQUENCE"));
        }
        return Err(sql::Error::DuplicateTable(name).into());
    }
    let catalog = session.db.catalog.clone();
    let store = session.db.store.clone();
    let scope = Arc::clone(&session.scope);
    in_txn(&txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        let def = SequenceDef {
            name,
            id: 0,
            options,
            owned_by,
        };
        Ok(catalog.create_sequence(&store, t, &mut scope.changes, def)?)
    })?;
    Ok(WriteResult::command("CREATE SEQUENCE"))
}

/// The sequence `name`, or 42809 when it is another kind of relation, else 42P01.
/// Renames sequence `name` (ALTER TABLE or ALTER INDEX naming one); `false` when there is
/// no sequence of that name.
pub(crate) fn rename_sequence(session: &mut Session, name: &str, to: &str) -> Result<bool> {
    let changes = session_changes(session);
    let Some(sequence) = session.db.catalog.sequence(name, &changes) else {
        return Ok(false);
    };
    let txn = session.open_txn()?;
    rename(session, &txn, &sequence, to)?;
    Ok(true)
}

fn find(session: &Session, name: &str) -> Result<Option<Sequence>> {
    let changes = session_changes(session);
    let catalog = &session.db.catalog;
    if let Some(sequence) = catalog.sequence(name, &changes) {
        return Ok(Some(sequence));
    }
    if catalog.relation_exists(name, &changes) {
        return Err(crate::Error::WrongObjectType(format!(
            "\"{name}\" is not a sequence"
        )));
    }
    Ok(None)
}

pub async fn alter(session: &mut Session, text: &str) -> Result<WriteResult> {
    let mut parser = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .map_err(|e| crate::Error::Syntax(e.to_string()))?;
    parser
        .expect_keyword_is(Keyword::ALTER)
        .map_err(|e| crate::Error::Syntax(e.to_string()))?;
    let alter = parse_any_alter(&mut parser).map_err(|e| crate::Error::Syntax(e.to_string()))?;
    let (name, tag) = match &alter.target {
        AlterTarget::Sequence(name) => (name.clone(), "ALTER SEQUENCE"),
        AlterTarget::Column { table, column } => {
            let def = match session.table_def(table) {
                Ok(def) => def,
                Err(_) if alter.if_exists => {
                    session.notice(format!("relation \"{table}\" does not exist, skipping"));
                    return Ok(WriteResult::command("ALTER TABLE"));
                }
                Err(e) => return Err(e),
            };
            if def.view.is_some() {
                return Err(crate::Error::WrongObjectType(format!(
                    "\"{table}\" is not a table"
                )));
            }
            let c = match def.column(column)? {
                (_, c) if !c.hidden => c,
                _ => {
                    return Err(sql::Error::UnknownColumn {
                        table: table.clone(),
                        column: column.clone(),
                    }
                    .into());
                }
            };
            match (c.identity, c.owned_sequence(table)) {
                (Some(_), Some(name)) => (name, "ALTER TABLE"),
                _ => {
                    return Err(crate::Error::NotInPrerequisiteState(format!(
                        "column \"{column}\" of relation \"{table}\" is not an identity column"
                    )));
                }
            }
        }
    };
    let Some(sequence) = find(session, &name)? else {
        if alter.if_exists {
            session.notice(format!("relation \"{name}\" does not exist, skipping"));
            return Ok(WriteResult::command(tag));
        }
        return Err(sql::Error::UnknownTable(name).into());
    };
    let txn = session.open_txn()?;
    match alter.action {
        AlterAction::Options(given, generated) => {
            let (options, restart) = sequence.options.with(&given, false)?;
            let owned_by = given.iter().find_map(|o| match o {
                SequenceOption::OwnedBy(target) => Some(target.clone()),
                _ => None,
            });
            let owned_by = match owned_by {
                Some(Some(target)) => Some(Some(owner(session, &target)?)),
                Some(None) => Some(None),
                None => None,
            };
            let catalog = session.db.catalog.clone();
            if defining(&given) {
                let state = catalog.settle_sequence(&session.db.store, &sequence)?;
                // Where it stands must be within the new bounds (unless it restarts).
                if restart.is_none() {
                    let bound = match state.last < options.min {
                        true => Some(("less than MINVALUE", options.min)),
                        false => (state.last > options.max)
                            .then_some(("greater than MAXVALUE", options.max)),
                    };
                    if let Some((what, limit)) = bound {
                        return Err(sql::Error::InvalidParameter(format!(
                            "RESTART value ({}) cannot be {what} ({limit})",
                            state.last
                        ))
                        .into());
                    }
                }
            }
            match &sequence.def {
                Some(def) => {
                    let mut def = (**def).clone();
                    def.options = options;
                    if let Some(owned_by) = owned_by {
                        def.owned_by = owned_by;
                    }
                    let scope = Arc::clone(&session.scope);
                    in_txn(&txn, |t| {
                        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
                        Ok(catalog.write_sequence(t, &mut scope.changes, def)?)
                    })?;
                }
                None => {
                    if owned_by.is_some() {
                        return Err(crate::Error::Unsupported(
                            "OWNED BY of a serial or identity column's sequence".into(),
                        ));
                    }
                    let (table, column) = sequence.owner.clone().unwrap_or_default();
                    let mut def = (*session.table_def(&table)?).clone();
                    let (i, _) = def.column(&column)?;
                    def.columns[i].sequence_options = Some(options);
                    if let Some(generated) = generated {
                        def.columns[i].identity = Some(generated);
                    }
                    crate::ddl::store_def(session, &txn, def)?;
                }
            }
            if let Some(from) = restart {
                catalog.restart_sequence(&session.db.store, &sequence, from)?;
            }
        }
        AlterAction::Rename(to) => rename(session, &txn, &sequence, &to)?,
    }
    Ok(WriteResult::command(tag))
}

/// `nextval('old')` in a column default, as it reads after a rename of sequence `old`.
fn renamed_default(default: &str, old: &str, new: &str) -> Option<String> {
    let call = sql::catalog::nextval_call(old);
    default
        .contains(&call)
        .then(|| default.replace(&call, &sql::catalog::nextval_call(new)))
}

fn rename(session: &mut Session, txn: &SharedTxn, sequence: &Sequence, to: &str) -> Result<()> {
    let catalog = session.db.catalog.clone();
    if catalog.name_taken(to, false, &session_changes(session)) {
        return Err(sql::Error::DuplicateTable(to.to_string()).into());
    }
    // The columns whose defaults call it go on calling it under its new name.
    for table in catalog.tables(&session_changes(session)) {
        let mut def = (*table).clone();
        let mut changed = false;
        for column in &mut def.columns {
            let owns = sequence.def.is_none()
                && column.owned_sequence(&table.name).as_deref() == Some(sequence.name.as_str());
            if column.sequence.as_deref() == Some(sequence.name.as_str()) {
                column.sequence = Some(to.to_string());
                changed = true;
            }
            if let Some(default) = column.default.as_deref()
                && let Some(new) = renamed_default(default, &sequence.name, to)
            {
                if owns {
                    column.sequence = Some(to.to_string());
                }
                column.default = Some(new);
                changed = true;
            }
        }
        if changed {
            crate::ddl::store_def(session, txn, def)?;
        }
    }
    if let Some(def) = &sequence.def {
        let scope = Arc::clone(&session.scope);
        in_txn(txn, |t| {
            let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
            catalog.drop_sequence(t, &mut scope.changes, &def.name)?;
            let renamed = SequenceDef {
                name: to.to_string(),
                ..(**def).clone()
            };
            Ok(catalog.write_sequence(t, &mut scope.changes, renamed)?)
        })?;
    }
    Ok(())
}

/// The columns whose defaults call sequence `name`.
fn callers(session: &Session, name: &str) -> Vec<(String, String)> {
    let call = sql::catalog::nextval_call(name);
    session
        .db
        .catalog
        .tables(&session_changes(session))
        .iter()
        .flat_map(|t| {
            t.columns
                .iter()
                .filter(|c| c.default.as_deref().is_some_and(|d| d.contains(&call)))
                .map(|c| (t.name.clone(), c.name.clone()))
                .collect::<Vec<_>>()
        })
        .collect()
}

pub async fn drop(
    session: &mut Session,
    names: &[ast::ObjectName],
    if_exists: bool,
    cascade: bool,
) -> Result<WriteResult> {
    let txn = session.open_txn()?;
    for name in names {
        let name = sql::ddl::table_name(name)?;
        let sequence = match find(session, &name) {
            Ok(Some(sequence)) => sequence,
            Ok(None) if if_exists => {
                session.notice(format!("sequence \"{name}\" does not exist, skipping"));
                continue;
            }
            Ok(None) => return Err(crate::Error::UnknownSequence(name)),
            Err(crate::Error::WrongObjectType(message)) => {
                let changes = session_changes(session);
                let catalog = &session.db.catalog;
                let hint = if catalog.view(&name, &changes).is_some() {
                    "Use DROP VIEW to remove a view."
                } else if catalog.find_index(&name, &changes).is_some() {
                    "Use DROP INDEX to remove an index."
                } else if catalog
                    .table(&name, &changes)
                    .is_some_and(|t| t.view.is_some())
                {
                    "Use DROP MATERIALIZED VIEW to remove a materialized view."
                } else {
                    "Use DROP TABLE to remove a table."
                };
                return Err(crate::Error::WrongObjectKind {
                    message,
                    hint: hint.into(),
                });
            }
            Err(e) => return Err(e),
        };
        if sequence.def.is_none()
            && let Some((table, column)) = &sequence.owner
        {
            let def = session.table_def(table)?;
            if def.column(column)?.1.identity.is_some() {
                return Err(crate::Error::RequiredObject {
                    message: format!(
                        "cannot drop sequence {name} because column {column} of table {table} requires it"
                    ),
                    hint: format!("You can drop column {column} of table {table} instead."),
                });
            }
        }
        let callers = callers(session, &name);
        if !callers.is_empty() {
            if !cascade {
                return Err(crate::Error::DependentObjects {
                    message: format!(
                        "cannot drop sequence {name} because other objects depend on it"
                    ),
                    detail: callers
                        .iter()
                        .map(|(t, c)| {
                            format!("default value for column {c} of table {t} depends on sequence {name}")
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                });
            }
            drop_defaults(session, &txn, &callers)?;
        }
        if sequence.def.is_some() {
            drop_defs(session, &txn, &[name])?;
        } else if let Some((table, column)) = &sequence.owner {
            // A serial column's sequence whose default is gone: the column owns it no more.
            let mut def = (*session.table_def(table)?).clone();
            let (i, _) = def.column(column)?;
            if def.columns[i].owned_sequence(table).as_deref() == Some(name.as_str()) {
                def.columns[i].sequence = None;
                crate::ddl::store_def(session, &txn, def)?;
            }
        }
    }
    Ok(WriteResult::command("DROP SEQUENCE"))
}

/// Drops the records of the CREATE SEQUENCE sequences `names`.
fn drop_defs(session: &Session, txn: &SharedTxn, names: &[String]) -> Result<()> {
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    in_txn(txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        for name in names {
            catalog.drop_sequence(t, &mut scope.changes, name)?;
        }
        Ok(())
    })
}

/// Drops the CREATE SEQUENCE sequences owned by `table` (by its `column`, when given), as
/// DROP TABLE and DROP COLUMN do in PostgreSQL. Defaults elsewhere that call one need
/// CASCADE (2BP01 otherwise), which drops them.
pub(crate) fn drop_owned(
    session: &mut Session,
    txn: &SharedTxn,
    table: &str,
    column: Option<&str>,
    cascade: bool,
) -> Result<()> {
    let owned: Vec<String> = session
        .db
        .catalog
        .sequences(&session_changes(session))
        .into_iter()
        .filter(|s| s.def.is_some())
        .filter(|s| {
            s.owner
                .as_ref()
                .is_some_and(|(t, c)| t == table && column.is_none_or(|column| c == column))
        })
        .map(|s| s.name)
        .collect();
    for name in &owned {
        // The callers the drop itself does not take away.
        let others: Vec<(String, String)> = callers(session, name)
            .into_iter()
            .filter(|(t, c)| t != table || column.is_some_and(|column| c != column))
            .collect();
        if others.is_empty() {
            continue;
        }
        let what = match column {
            Some(column) => format!("column {column} of table {table}"),
            None => format!("table {table}"),
        };
        if !cascade {
            return Err(crate::Error::DependentObjects {
                message: format!("cannot drop {what} because other objects depend on it"),
                detail: others
                    .iter()
                    .map(|(t, c)| {
                        format!(
                            "default value for column {c} of table {t} depends on sequence {name}"
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            });
        }
        drop_defaults(session, txn, &others)?;
    }
    drop_defs(session, txn, &owned)
}

/// DROP … CASCADE of a sequence: the defaults of `columns` (table, column) that call it go,
/// each told in the cascade notice.
fn drop_defaults(
    session: &mut Session,
    txn: &SharedTxn,
    columns: &[(String, String)],
) -> Result<()> {
    for (table, column) in columns {
        session.cascades_to(format!(
            "default value for column {column} of table {table}"
        ));
        let mut def = (*session.table_def(table)?).clone();
        let (i, _) = def.column(column)?;
        def.columns[i].default = None;
        def.columns[i].sequence = None;
        crate::ddl::store_def(session, txn, def)?;
    }
    Ok(())
}

/// TRUNCATE … RESTART IDENTITY: the CREATE SEQUENCE sequences `table` owns start again.
pub(crate) fn restart_owned(session: &Session, table: &str) -> Result<()> {
    let catalog = &session.db.catalog;
    for sequence in catalog.sequences(&session_changes(session)) {
        if sequence.def.is_some() && sequence.owner.as_ref().is_some_and(|(t, _)| t == table) {
            catalog.restart_sequence(&session.db.store, &sequence, sequence.options.start)?;
        }
    }
    Ok(())
}

/// After a rename of table `old` to `new` (or of its column `old_column`): the CREATE
/// SEQUENCE sequences it owns follow.
pub(crate) fn rename_owner(
    session: &Session,
    txn: &SharedTxn,
    old: &str,
    new: &str,
    column: Option<(&str, &str)>,
) -> Result<()> {
    let catalog = session.db.catalog.clone();
    let scope = Arc::clone(&session.scope);
    let sequences = catalog.sequences(&session_changes(session));
    in_txn(txn, |t| {
        let mut scope = scope.lock().unwrap_or_else(|e| e.into_inner());
        for sequence in sequences {
            let (Some(def), Some((table, owner_column))) = (&sequence.def, &sequence.owner) else {
                continue;
            };
            if table != old {
                continue;
            }
            let owner_column = match column {
                Some((from, to)) if owner_column == from => to.to_string(),
                Some(_) => continue,
                None => owner_column.clone(),
            };
            let mut def = (**def).clone();
            def.owned_by = Some((new.to_string(), owner_column));
            catalog.write_sequence(t, &mut scope.changes, def)?;
        }
        Ok(())
    })
}
