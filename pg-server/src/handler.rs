//! The PostgreSQL wire protocol, per connection: startup with the parameters drivers expect,
//! simple and extended query, streamed results, portal suspension and cancel.
//!
//! pgwire's defaults buffer a whole result for Execute with max_rows = 0 and cannot cancel a
//! result that is already streaming; `on_query` and `on_execute` are ours for that reason:
//! rows go to the socket as batches arrive, and a CancelRequest interrupts the statement at
//! any point, planning or streaming (57014).

use crate::encode::{encode_batch, field_infos, own_digit_columns, pg_type};
use crate::errors::to_pg_error;
use async_trait::async_trait;
use bytes::Bytes;
use datafusion::arrow::datatypes::{Field, SchemaRef};
use datafusion::sql::sqlparser::ast::Statement;
use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::auth::{
    DefaultServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{
    DescribePortalResponse, DescribeResponse, DescribeStatementResponse, FieldFormat, FieldInfo,
    QueryResponse, Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{
    ClientInfo, ClientPortalStore, DEFAULT_NAME, PgWireConnectionState, PgWireServerHandlers,
    PidSecretKeyGenerator, RandomPidSecretKeyGenerator, Type,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::data::{NoData, ParameterDescription, RowDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Flush, Parse, ParseComplete,
    PortalSuspended, Sync as PgSync, TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, NoticeResponse, NotificationResponse, ReadyForQuery,
    TransactionStatus,
};
use pgwire::messages::simplequery::Query;
use pgwire::messages::startup::ParameterStatus;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use planner::interrupt::Interrupt;
use planner::{Output, Param, Session, TxnStatus};
use sql::SqlType;
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, LazyLock};

/// One client connection's state.
pub struct Connection {
    pub(crate) session: tokio::sync::Mutex<Session>,
    /// Names of the statements the client prepared (Parse), for DEALLOCATE.
    prepared: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The COPY FROM STDIN in progress, if any.
    pub(crate) copy: tokio::sync::Mutex<Option<crate::copy::CopyState>>,
    /// A write whose result waits for the next message (see `Held`).
    held: std::sync::Mutex<Option<Held>>,
    /// The session's interrupt, reachable without the session lock (which the running
    /// statement holds).
    interrupt: Interrupt,
    cancels: Arc<Cancels>,
    /// Where the session's notifications arrive (LISTEN), until they are sent.
    notifications: std::sync::Mutex<Option<Notifications>>,
}

type Notifications = planner::notify::Queue;

impl Connection {
    pub fn new(session: Session, cancels: Arc<Cancels>) -> Connection {
        Connection {
            notifications: std::sync::Mutex::new(session.notifications()),
            interrupt: session.interrupt(),
            session: tokio::sync::Mutex::new(session),
            copy: Default::default(),
            prepared: Default::default(),
            held: Default::default(),
            cancels,
        }
    }

    /// The notifications that have arrived, as NotificationResponse messages.
    pub(crate) fn arrived(&self) -> Vec<PgWireBackendMessage> {
        let mut queue = self.notifications.lock().unwrap_or_else(|e| e.into_inner());
        let mut arrived = Vec::new();
        if let Some(queue) = queue.as_mut() {
            while let Some(n) = queue.try_next() {
                arrived.push(notification(n));
            }
        }
        arrived
    }

    /// Waits for a notification to arrive (while the connection is idle).
    pub(crate) async fn next_notification(&self) -> Option<PgWireBackendMessage> {
        std::future::poll_fn(|cx| {
            let mut queue = self.notifications.lock().unwrap_or_else(|e| e.into_inner());
            match queue.as_mut() {
                Some(queue) => queue.poll_next(cx),
                None => std::task::Poll::Pending,
            }
        })
        .await
        .map(notification)
    }
}

fn notification(n: planner::notify::Notification) -> PgWireBackendMessage {
    PgWireBackendMessage::NotificationResponse(NotificationResponse::new(
        n.pid, n.channel, n.payload,
    ))
}

/// Sends the notifications that have arrived when the session is outside a transaction
/// block: PostgreSQL sends them just before ReadyForQuery, and holds them during a block.
async fn send_arrived<C>(
    client: &mut C,
    conn: &Connection,
    status: TransactionStatus,
) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if !matches!(status, TransactionStatus::Idle) {
        return Ok(());
    }
    for message in conn.arrived() {
        client.feed(message).await?;
    }
    Ok(())
}

/// The write that opened the extended protocol's implicit transaction (the Executes up to
/// Sync), while it is the transaction's only statement and the client has not seen its
/// result. At Sync its result is finished with the commit, so RETURNING shows `_etag` and
/// `_timestamp` as in autocommit; if the commit conflicts, the write runs again on its own,
/// retried as an autocommit statement is, and the client sees only that run's result. Any
/// other message first sends the result as a transaction block would show it: the
/// transaction is then the client's to retry.
struct Held {
    portal: Arc<Portal<Prepared>>,
    result: planner::dml::WriteResult,
}

/// Every connection's cancel key, server-wide: a CancelRequest arrives on a connection of its
/// own and names its target by (pid, secret key).
#[derive(Default)]
pub struct Cancels {
    interrupts: std::sync::Mutex<HashMap<(i32, Bytes), Interrupt>>,
}

impl Cancels {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(i32, Bytes), Interrupt>> {
        self.interrupts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Removes a connection's cancel key when the connection ends.
struct CancelKeyGuard {
    cancels: Arc<Cancels>,
    key: (i32, Bytes),
}

impl Drop for CancelKeyGuard {
    fn drop(&mut self) {
        self.cancels.lock().remove(&self.key);
    }
}

/// Stops the running statement with 57014 once it has run for the session's
/// `statement_timeout`, through the same interrupt a cancel request sets; dropped when the
/// statement ends.
struct StatementTimer(Option<tokio::task::JoinHandle<()>>);

impl StatementTimer {
    fn start(session: &Session, interrupt: &planner::interrupt::Interrupt) -> StatementTimer {
        StatementTimer(session.statement_timeout().map(|timeout| {
            let interrupt = interrupt.clone();
            tokio::spawn(async move {
                tokio::time::sleep(timeout).await;
                interrupt.trigger_timeout();
            })
        }))
    }
}

impl Drop for StatementTimer {
    fn drop(&mut self) {
        if let Some(timer) = self.0.take() {
            timer.abort();
        }
    }
}

/// Stops the target's running statement where it is (see `planner::interrupt`); it then
/// fails with 57014 through the usual error path.
pub struct CancelHandler {
    cancels: Arc<Cancels>,
}

#[async_trait]
impl pgwire::api::cancel::CancelHandler for CancelHandler {
    async fn on_cancel_request(&self, request: CancelRequest) {
        let key = (request.pid, request.secret_key.to_bytes());
        let interrupt = self.cancels.lock().get(&key).cloned();
        if let Some(interrupt) = interrupt {
            interrupt.trigger();
        }
    }
}

/// The query, startup and describe handlers of one connection.
pub struct Handler {
    pub(crate) conn: Arc<Connection>,
    parser: Arc<Parser>,
}

/// The handlers pgwire calls for one connection.
pub struct Handlers {
    handler: Arc<Handler>,
    cancel: Arc<CancelHandler>,
}

impl Handlers {
    pub fn new(conn: Arc<Connection>) -> Handlers {
        let cancel = Arc::new(CancelHandler {
            cancels: Arc::clone(&conn.cancels),
        });
        let parser = Arc::new(Parser {
            conn: Arc::clone(&conn),
        });
        Handlers {
            handler: Arc::new(Handler { conn, parser }),
            cancel,
        }
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        Arc::clone(&self.handler)
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        Arc::clone(&self.handler)
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::clone(&self.handler)
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        Arc::clone(&self.cancel)
    }

    fn copy_handler(&self) -> Arc<impl pgwire::api::copy::CopyHandler> {
        Arc::clone(&self.handler)
    }
}

static PIDS: LazyLock<RandomPidSecretKeyGenerator> =
    LazyLock::new(RandomPidSecretKeyGenerator::default);

fn server_parameters(time_zone: &str) -> DefaultServerParameterProvider {
    let mut p = DefaultServerParameterProvider::default();
    p.server_version = "15.0 (Partita)".into();
    p.time_zone = time_zone.into();
    p.date_style = "ISO, MDY".into();
    p.interval_style = "postgres".into();
    p.search_path = "\"$user\", public".into();
    p
}

#[async_trait]
impl StartupHandler for Handler {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            protocol_negotiation(client, startup).await?;
            save_startup_parameters_to_metadata(client, startup);
            let time_zone = {
                let mut session = self.conn.session.lock().await;
                let metadata = client.metadata();
                session.set_identity(
                    metadata.get("user").map(String::as_str),
                    metadata.get("database").map(String::as_str),
                );
                // pgjdbc sends its JVM's zone as TimeZone, libpq PGTZ as timezone;
                // PGOPTIONS comes as options.
                let zone = client
                    .metadata()
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("timezone"))
                    .map(|(_, v)| v.clone());
                if let Some(zone) = zone {
                    session
                        .apply_startup_options(&format!("-c timezone={zone}"))
                        .map_err(|e| to_pg_error(&e))?;
                }
                if let Some(options) = client.metadata().get("options").cloned() {
                    session
                        .apply_startup_options(&options)
                        .map_err(|e| to_pg_error(&e))?;
                }
                // Reported below as part of the startup parameters.
                session.take_reported();
                session.zone().shown.clone()
            };
            let (pid, secret_key) = PIDS.generate(client);
            client.set_pid_and_secret_key(pid, secret_key.clone());
            self.conn.session.lock().await.set_backend_pid(pid);
            let cancels = &self.conn.cancels;
            let key = (pid, secret_key.to_bytes());
            cancels
                .lock()
                .insert(key.clone(), self.conn.interrupt.clone());
            client.session_extensions().insert(CancelKeyGuard {
                cancels: Arc::clone(cancels),
                key,
            });
            finish_authentication(client, &server_parameters(&time_zone)).await?;
        }
        Ok(())
    }
}

pub(crate) fn status(session: &Session) -> TransactionStatus {
    match session.status() {
        TxnStatus::Idle => TransactionStatus::Idle,
        TxnStatus::InBlock => TransactionStatus::Transaction,
        TxnStatus::Failed => TransactionStatus::Error,
    }
}

async fn send_notices<C>(client: &mut C, session: &mut Session) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    for (name, value) in session.take_reported() {
        client
            .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                name, value,
            )))
            .await?;
    }
    for notice in session.take_notices() {
        let mut info = ErrorInfo::new(notice.severity.into(), notice.code, notice.message);
        info.detail = notice.detail;
        info.hint = notice.hint;
        client
            .feed(PgWireBackendMessage::NoticeResponse(NoticeResponse::from(
                info,
            )))
            .await?;
    }
    Ok(())
}

/// The rows of a result as DataRow messages; timestamptz values are shown in `zone`, the
/// session's time zone when the statement ran.
fn row_stream(
    stream: datafusion::physical_plan::SendableRecordBatchStream,
    schema: &datafusion::arrow::datatypes::Schema,
    fields: Arc<Vec<FieldInfo>>,
    style: planner::output::TextStyle,
) -> pgwire::api::results::SendableRowStream {
    let trim = own_digit_columns(schema);
    let rows = stream.flat_map(move |batch| {
        let rows: Vec<PgWireResult<pgwire::messages::data::DataRow>> = match batch {
            Ok(batch) => match encode_batch(&batch, &fields, &trim, &style) {
                Ok(rows) => rows.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(to_pg_error(&planner::Error::Internal(e)))],
            },
            Err(e) => vec![Err(to_pg_error(&planner::Error::DataFusion(e)))],
        };
        futures::stream::iter(rows)
    });
    Box::pin(rows)
}

#[async_trait]
impl SimpleQueryHandler for Handler {
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        self.release_held(client).await?;
        client.set_state(PgWireConnectionState::QueryInProgress);
        let mut session = self.conn.session.lock().await;
        let result = async {
            // A point SELECT seen before with other literals needs no parsing.
            if let Some(output) = guarded(session.execute_simple_point(&query.query))
                .await
                .transpose()
            {
                let outcome = send_simple(client, &mut session, output).await;
                send_notices(client, &mut session).await?;
                return outcome;
            }
            let statements = match planner::parse_sql(&query.query) {
                Ok(s) => s,
                Err(e) => {
                    // A syntax error fails an open transaction block, as any error does.
                    session.statement_failed();
                    return Err(to_pg_error(&e));
                }
            };
            if statements.is_empty() {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await?;
            }
            let last = statements.len().saturating_sub(1);
            // Several statements run as one implicit transaction, as in PostgreSQL (a COPY
            // FROM STDIN, always last, keeps its batch commits).
            session.set_implicit_block(
                last > 0
                    && !statements
                        .iter()
                        .any(|s| matches!(s, Statement::Copy { to: false, .. })),
            );
            for (i, stmt) in statements.into_iter().enumerate() {
                if i < last && matches!(stmt, Statement::Copy { to: false, .. }) {
                    return Err(to_pg_error(&planner::Error::Unsupported(
                        "COPY FROM STDIN followed by other statements in one query".into(),
                    )));
                }
                if let Some(tag) = self.deallocate(client, &mut session, &stmt) {
                    client
                        .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                            tag?,
                        )))
                        .await?;
                    continue;
                }
                // A cancel sets the session's interrupt; the statement stops at its next
                // check and ends through the usual error path (implicit transaction rolled
                // back, transaction block marked failed).
                let timer = StatementTimer::start(&session, &self.conn.interrupt);
                let outcome = run_simple(client, &mut session, stmt).await;
                drop(timer);
                send_notices(client, &mut session).await?;
                if let Some(target) = outcome? {
                    return Ok(Some(target));
                }
            }
            Ok(None)
        }
        .await;
        let result = match (session.end_implicit(result.is_ok()).await, result) {
            (Err(e), Ok(_)) => Err(to_pg_error(&e)),
            (_, result) => result,
        };
        client.set_transaction_status(status(&session));
        drop(session);
        let result = match result {
            Ok(Some(target)) => {
                // The client sends the data next; CopyDone ends the query.
                return crate::copy::start_copy_in(client, self, target, false).await;
            }
            Ok(None) => Ok(()),
            Err(e) => Err(crate::errors::locate(e, &query.query)),
        };
        let session = self.conn.session.lock().await;
        if result.is_ok() {
            let status = status(&session);
            drop(session);
            send_arrived(client, &self.conn, status).await?;
            client.set_state(PgWireConnectionState::ReadyForQuery);
            client
                .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                    status,
                )))
                .await?;
        }
        result
    }

    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        Err(PgWireError::ApiError(
            "on_query handles simple queries".into(),
        ))
    }
}

impl Handler {
    fn prepared(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.conn.prepared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// DEALLOCATE [PREPARE] name | ALL: the protocol's prepared statements live in the
    /// connection's portal store, SQL PREPARE's in the session. `None` for any other
    /// statement.
    fn deallocate<C>(
        &self,
        client: &mut C,
        session: &mut Session,
        stmt: &Statement,
    ) -> Option<PgWireResult<String>>
    where
        C: ClientPortalStore,
        C::PortalStore: PortalStore,
    {
        if let Statement::Discard {
            object_type: datafusion::sql::sqlparser::ast::DiscardObject::ALL,
        } = stmt
        {
            // DISCARD ALL forgets the protocol's statements too; the session does the rest
            // (or refuses it inside a transaction block).
            if session.status() == TxnStatus::Idle {
                for n in self.prepared().drain() {
                    client.portal_store().rm_statement(&n);
                }
            }
            return None;
        }
        let Statement::Deallocate { name, .. } = stmt else {
            return None;
        };
        let mut prepared = self.prepared();
        if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all") {
            session.deallocate_all_sql();
            for n in prepared.drain() {
                client.portal_store().rm_statement(&n);
            }
            return Some(Ok("DEALLOCATE ALL".into()));
        }
        let n = sql::ddl::normalize_ident(name);
        if session.deallocate_sql(&n) {
            return Some(Ok("DEALLOCATE".into()));
        }
        if !prepared.remove(&n) {
            return Some(Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                "ERROR".into(),
                "26000".into(),
                format!("prepared statement \"{n}\" does not exist"),
            )))));
        }
        client.portal_store().rm_statement(&n);
        Some(Ok("DEALLOCATE".into()))
    }
}

/// Runs a statement; a panic inside it becomes an error for this session only.
async fn execute_guarded(
    session: &mut Session,
    stmt: Statement,
    params: &[Param],
) -> planner::Result<Output> {
    guarded(session.execute(stmt, params)).await
}

/// Runs a held write again as a statement of its own, in autocommit (retried on conflict).
async fn rerun_alone(session: &mut Session, portal: &Portal<Prepared>) -> PgWireResult<Output> {
    let params = bind_params(portal)?;
    let prepared = &portal.statement.statement;
    let output = guarded(session.execute_prepared(&prepared.stmt, &params, &prepared.fast)).await;
    // It ran as an autocommit statement after the implicit block ended: its notifications
    // (RETURNING pg_notify(…)) go now. Its write has committed, so a full queue cannot fail
    // it any more.
    let _ = session.end_implicit(output.is_ok()).await;
    output.map_err(|e| to_pg_error(&e))
}

/// Runs a statement's future; a panic inside it becomes an error for this session only.
async fn guarded<T>(
    run: impl std::future::Future<Output = planner::Result<T>>,
) -> planner::Result<T> {
    use futures::FutureExt;
    match std::panic::AssertUnwindSafe(run).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => Err(planner::Error::Internal(format!(
            "statement panicked: {}",
            planner::executor::panic_message(panic.as_ref())
        ))),
    }
}

/// Runs a COPY FROM Parquet's batches; a panic becomes an error for this session only.
async fn load_parquet_guarded(
    session: &mut Session,
    load: planner::copy::ParquetLoad,
) -> planner::Result<String> {
    use futures::FutureExt;
    let result = std::panic::AssertUnwindSafe(session.load_parquet(load))
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            Err(planner::Error::Internal(format!(
                "COPY panicked: {}",
                planner::executor::panic_message(panic.as_ref())
            )))
        });
    if result.is_err() {
        session.statement_failed();
    }
    match result? {
        Output::Command(tag) => Ok(tag),
        _ => Err(planner::Error::Internal("COPY gave rows".into())),
    }
}

/// Runs one statement of a simple query and streams its result; a COPY FROM STDIN is
/// returned for the caller to start.
async fn run_simple<C>(
    client: &mut C,
    session: &mut Session,
    stmt: Statement,
) -> PgWireResult<Option<planner::copy::CopyIn>>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let output = execute_guarded(session, stmt, &[]).await;
    send_simple(client, session, output).await
}

/// Sends a simple-protocol statement's result (or error); a COPY FROM STDIN's target when
/// its data comes next.
async fn send_simple<C>(
    client: &mut C,
    session: &mut Session,
    output: planner::Result<Output>,
) -> PgWireResult<Option<planner::copy::CopyIn>>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    client.set_transaction_status(status(session));
    let output = match output {
        // The rest of the query string can still fail the implicit transaction: the write
        // shows what a transaction block would.
        Ok(Output::Uncommitted(result)) => result.finish(None).await,
        other => other,
    };
    match output.map_err(|e| to_pg_error(&e))? {
        Output::Uncommitted(_) => {
            return Err(to_pg_error(&planner::Error::Internal(
                "a finished write is uncommitted".into(),
            )));
        }
        Output::Command(tag) => {
            client
                .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                    tag,
                )))
                .await?;
        }
        Output::Rows {
            schema,
            stream,
            tag,
        } => {
            let fields = Arc::new(field_infos(&schema, |_| FieldFormat::Text));
            let description = RowDescription::new(fields.iter().map(Into::into).collect());
            client
                .feed(PgWireBackendMessage::RowDescription(description))
                .await?;
            let mut rows = row_stream(stream, &schema, fields, session.text_style());
            let mut count = 0usize;
            while let Some(row) = rows.next().await {
                let row = match row {
                    Ok(row) => row,
                    Err(e) => {
                        session.statement_failed();
                        return Err(e);
                    }
                };
                client.feed(PgWireBackendMessage::DataRow(row)).await?;
                count += 1;
            }
            let tag = Tag::new(&tag).with_rows(count);
            client
                .feed(PgWireBackendMessage::CommandComplete(tag.into()))
                .await?;
        }
        Output::CopyIn(target) => return Ok(Some(target)),
        Output::CopyFromParquet(load) => {
            let tag = match Box::pin(load_parquet_guarded(session, load)).await {
                Ok(tag) => tag,
                Err(e) => return Err(to_pg_error(&e)),
            };
            client
                .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                    tag,
                )))
                .await?;
        }
        Output::CopyOut {
            schema,
            stream,
            format,
        } => {
            let style = session.text_style();
            if let Err(e) =
                crate::copy::send_copy_out(client, schema, stream, &format, &style).await
            {
                session.statement_failed();
                return Err(e);
            }
        }
    }
    Ok(None)
}

/// A statement prepared with Parse: its syntax tree and what Describe reports.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub stmt: Statement,
    pub param_types: Vec<Type>,
    /// The SQL types of the parameters the client typed at Parse, which the statement was
    /// described with.
    pub declared: Vec<Option<SqlType>>,
    pub schema: Option<SchemaRef>,
    /// The catalog generation at which `schema` last held: after a schema change the
    /// statement is described again before it runs, and refused (as PostgreSQL refuses it)
    /// when its rows would have other types.
    pub generation: Arc<std::sync::atomic::AtomicU64>,
    /// What executions learn about the statement (its point plan), for the next ones.
    pub fast: Arc<planner::fastpath::PreparedFast>,
}

/// Refuses to run `prepared` when a schema change since it was described gives its rows
/// other types (a binary int4 column would be sent as int8): 0A000, as PostgreSQL's, and the
/// client prepares it again. Described again once per catalog change, with the client's
/// parameter types as at Parse, so the two descriptions compare.
async fn still_described(session: &planner::Session, prepared: &Prepared) -> planner::Result<()> {
    use std::sync::atomic::Ordering;
    let now = session.catalog_generation();
    let Some(described) = &prepared.schema else {
        return Ok(());
    };
    if prepared.generation.load(Ordering::Acquire) == now {
        return Ok(());
    }
    let again = session
        .describe_declared(&prepared.stmt, &prepared.declared)
        .await?;
    if let Some(schema) = &again.schema
        && !crate::encode::same_row_type(described, schema)
    {
        return Err(planner::Error::CachedPlanChanged);
    }
    prepared.generation.store(now, Ordering::Release);
    Ok(())
}

pub struct Parser {
    conn: Arc<Connection>,
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let mut statements = planner::parse_sql(sql).map_err(|e| to_pg_error(&e))?;
        if statements.len() > 1 {
            return Err(to_pg_error(&planner::Error::Syntax(
                "cannot insert multiple commands into a prepared statement".into(),
            )));
        }
        let Some(stmt) = statements.pop() else {
            return Ok(None);
        };
        let session = self.conn.session.lock().await;
        let generation = session.catalog_generation();
        // Parameters the client typed are of those types: `SELECT $1` of a numeric is a
        // numeric column.
        let declared: Vec<Option<SqlType>> = types
            .iter()
            .map(|t| t.as_ref().and_then(param_sql_type))
            .collect();
        let description = session
            .describe_declared(&stmt, &declared)
            .await
            .map_err(|e| to_pg_error(&e))?;
        let count = description.params.len().max(types.len());
        let param_types = (0..count)
            .map(|i| {
                types
                    .get(i)
                    .cloned()
                    .flatten()
                    .filter(|t| *t != Type::UNKNOWN)
                    .or_else(|| {
                        description
                            .declared
                            .get(i)
                            .copied()
                            .flatten()
                            .map(|ty| pg_type(&ty.field("p", true)))
                    })
                    .or_else(|| {
                        description
                            .params
                            .get(i)
                            .cloned()
                            .flatten()
                            .map(|dt| pg_type(&Field::new("p", dt, true)))
                    })
                    .unwrap_or(Type::TEXT)
            })
            .collect();
        Ok(Some(Prepared {
            stmt,
            param_types,
            declared,
            schema: description.schema,
            generation: Arc::new(generation.into()),
            fast: Default::default(),
        }))
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(stmt.param_types.clone())
    }

    fn get_result_schema(
        &self,
        stmt: &Prepared,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        Ok(match &stmt.schema {
            Some(schema) => field_infos(schema, |i| {
                column_format.map_or(FieldFormat::Text, |f| f.format_for(i))
            }),
            None => vec![],
        })
    }
}

/// The SQL type a bound parameter is cast to.
fn param_sql_type(ty: &Type) -> Option<SqlType> {
    Some(match *ty {
        Type::BOOL => SqlType::Bool,
        Type::INT2 => SqlType::Int2,
        Type::INT4 => SqlType::Int4,
        Type::INT8 => SqlType::Int8,
        Type::FLOAT4 => SqlType::Float4,
        Type::FLOAT8 => SqlType::Float8,
        Type::NUMERIC => SqlType::Numeric {
            precision: None,
            scale: None,
        },
        Type::BYTEA => SqlType::Bytea,
        Type::UUID => SqlType::Uuid,
        Type::JSON => SqlType::Json,
        Type::JSONB => SqlType::Jsonb,
        Type::DATE => SqlType::Date,
        Type::TIMESTAMP => SqlType::Timestamp { precision: None },
        Type::TIMESTAMPTZ => SqlType::TimestampTz { precision: None },
        Type::TIME => SqlType::Time { precision: None },
        Type::INTERVAL => SqlType::Interval,
        _ => return None,
    })
}

/// A date parameter with a zone offset (pgjdbc sends `2024-03-02 +00`): PostgreSQL reads
/// the date and ignores the offset.
fn date_without_zone(text: String) -> String {
    match text.trim().rsplit_once(' ') {
        Some((date, zone))
            if zone.starts_with(['+', '-'])
                && zone[1..].chars().all(|c| c.is_ascii_digit() || c == ':') =>
        {
            date.to_string()
        }
        _ => text,
    }
}

/// A parameter's value as text, decoding the binary format of its type.
fn param_text(bytes: &Bytes, ty: &Type, binary: bool) -> PgWireResult<String> {
    let bad = |what: &str| {
        to_pg_error(&planner::Error::InvalidText {
            ty: ty.name().to_string(),
            value: format!("<{what}>"),
        })
    };
    if !binary {
        let text = String::from_utf8(bytes.to_vec()).map_err(|_| bad("not UTF-8"))?;
        if *ty == Type::DATE {
            return Ok(date_without_zone(text));
        }
        return Ok(text);
    }
    planner::binary::text(bytes, ty.oid()).map_err(|what| bad(&what))
}

/// PostgreSQL's protocol violation (08P01) for a Bind of another number of parameters
/// than its statement takes.
fn bind_count_error(supplied: usize, statement: &str, required: usize) -> PgWireError {
    let statement = if statement == DEFAULT_NAME {
        ""
    } else {
        statement
    };
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".into(),
        "08P01".into(),
        format!(
            "bind message supplies {supplied} parameters, but prepared statement \"{statement}\" requires {required}"
        ),
    )))
}

fn bind_params(portal: &Portal<Prepared>) -> PgWireResult<Vec<Param>> {
    let types = &portal.statement.statement.param_types;
    portal
        .parameters
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let ty = types.get(i).cloned().unwrap_or(Type::TEXT);
            let value = match value {
                Some(bytes) => Some(param_text(
                    bytes,
                    &ty,
                    portal.parameter_format.is_binary(i),
                )?),
                None => None,
            };
            Ok(Param {
                value,
                ty: param_sql_type(&ty),
            })
        })
        .collect()
}

#[async_trait]
impl ExtendedQueryHandler for Handler {
    type Statement = Prepared;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        Arc::clone(&self.parser)
    }

    // Parse, Bind and Describe answer as pgwire's defaults do, but queue their replies
    // instead of flushing each: the client gets one write per Sync (or Flush), as from
    // PostgreSQL, instead of one per message.

    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.release_held(client).await?;
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME).to_owned();
        if name != DEFAULT_NAME {
            self.prepared().insert(name.clone());
        }
        let parsed = match StoredStatement::parse(client, &message, self.query_parser()).await {
            Ok(parsed) => parsed,
            Err(e) => {
                // A statement that does not parse fails an open transaction block.
                self.conn.session.lock().await.statement_failed();
                return Err(crate::errors::locate(e, &message.query));
            }
        };
        match parsed {
            Some(stmt) => client.portal_store().put_statement(Arc::new(stmt)),
            None => client.portal_store().put_empty_statement(&name),
        }
        client
            .feed(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?;
        Ok(())
    }

    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.release_held(client).await?;
        let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal_name = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
        match client.portal_store().get_statement(statement_name) {
            Some(Entry::Value(statement)) => {
                let required = statement.statement.param_types.len();
                if message.parameters.len() != required {
                    return Err(bind_count_error(
                        message.parameters.len(),
                        statement_name,
                        required,
                    ));
                }
                let portal = Portal::try_new(&message, statement)?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(Entry::Empty) => {
                if !message.parameters.is_empty() {
                    return Err(bind_count_error(
                        message.parameters.len(),
                        statement_name,
                        0,
                    ));
                }
                client.portal_store().put_empty_portal(portal_name);
            }
            None => return Err(PgWireError::StatementNotFound(statement_name.to_owned())),
        }
        client
            .feed(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
    }

    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.release_held(client).await?;
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let (params, fields) = match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => match client.portal_store().get_statement(name) {
                Some(Entry::Value(stmt)) => {
                    let r = self.do_describe_statement(client, &stmt).await?;
                    (
                        Some(r.parameters().unwrap_or_default().to_vec()),
                        r.fields().to_vec(),
                    )
                }
                Some(Entry::Empty) => (Some(vec![]), vec![]),
                None => return Err(PgWireError::StatementNotFound(name.to_owned())),
            },
            TARGET_TYPE_BYTE_PORTAL => match client.portal_store().get_portal(name) {
                Some(Entry::Value(portal)) => {
                    let r = self.do_describe_portal(client, &portal).await?;
                    (None, r.fields().to_vec())
                }
                Some(Entry::Empty) => (None, vec![]),
                None => {
                    // A cursor DECLAREd in SQL is a portal too.
                    let schema = self.conn.session.lock().await.cursor_schema(name);
                    match schema {
                        Some(schema) => (None, field_infos(&schema, |_| FieldFormat::Text)),
                        None => return Err(PgWireError::PortalNotFound(name.to_owned())),
                    }
                }
            },
            other => return Err(PgWireError::InvalidTargetType(other)),
        };
        if let Some(params) = params {
            client
                .feed(PgWireBackendMessage::ParameterDescription(
                    ParameterDescription::new(params.iter().map(|t| t.oid()).collect()),
                ))
                .await?;
        }
        let reply = if fields.is_empty() {
            PgWireBackendMessage::NoData(NoData::new())
        } else {
            PgWireBackendMessage::RowDescription(RowDescription::new(
                fields.iter().map(Into::into).collect(),
            ))
        };
        client.feed(reply).await?;
        Ok(())
    }

    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        self.release_held(client).await?;
        client.set_state(PgWireConnectionState::QueryInProgress);
        let portal_name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let max_rows = message.max_rows.max(0) as usize;
        let portal = match client.portal_store().get_portal(portal_name) {
            Some(pgwire::api::store::Entry::Value(p)) => p,
            Some(pgwire::api::store::Entry::Empty) => {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await?;
                client.set_state(PgWireConnectionState::ReadyForQuery);
                return Ok(());
            }
            None => return Err(PgWireError::PortalNotFound(portal_name.to_owned())),
        };
        // A cancel that arrived while idle must not stop the rows asked for now.
        self.conn.interrupt.reset();
        let timer = StatementTimer::start(&*self.conn.session.lock().await, &self.conn.interrupt);
        let outcome = self.execute_portal(client, &portal, max_rows).await;
        drop(timer);
        let session = self.conn.session.lock().await;
        client.set_transaction_status(status(&session));
        // A COPY FROM STDIN started: the data comes next, CopyDone ends it.
        if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            client.set_state(PgWireConnectionState::ReadyForQuery);
        }
        outcome
    }

    async fn on_sync<C>(&self, client: &mut C, _message: PgSync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.sync(client).await
    }

    async fn on_flush<C>(&self, client: &mut C, _message: Flush) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.release_held(client).await?;
        client.flush().await?;
        Ok(())
    }

    async fn on_close<C>(&self, client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.release_held(client).await?;
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                self.prepared().remove(name);
                client.portal_store().rm_statement(name);
            }
            TARGET_TYPE_BYTE_PORTAL => client.portal_store().rm_portal(name),
            _ => {}
        }
        client
            .feed(PgWireBackendMessage::CloseComplete(CloseComplete::new()))
            .await?;
        Ok(())
    }

    async fn do_query<C>(
        &self,
        _client: &mut C,
        _portal: &Portal<Prepared>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        Err(PgWireError::ApiError("on_execute handles portals".into()))
    }

    async fn do_describe_statement<C>(
        &self,
        _client: &mut C,
        target: &StoredStatement<Prepared>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let p = &target.statement;
        let fields = match &p.schema {
            Some(schema) => field_infos(schema, |_| FieldFormat::Text),
            None => vec![],
        };
        Ok(DescribeStatementResponse::new(
            p.param_types.clone(),
            fields,
        ))
    }

    async fn do_describe_portal<C>(
        &self,
        _client: &mut C,
        target: &Portal<Prepared>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let fields = match &target.statement.statement.schema {
            Some(schema) => field_infos(schema, |i| target.result_column_format.format_for(i)),
            None => vec![],
        };
        Ok(DescribePortalResponse::new(fields))
    }
}

impl Handler {
    /// Sends the held write's result (see `Held`): a message other than Sync came.
    async fn release_held<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let held = self
            .conn
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(held) = held {
            let output = held.result.finish(None).await;
            self.send_result(client, &held.portal, output.map_err(|e| to_pg_error(&e)))
                .await?;
        }
        Ok(())
    }

    /// Sends a write's whole result for `portal`: its rows (RETURNING) and CommandComplete,
    /// or its error.
    async fn send_result<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        output: PgWireResult<Output>,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let complete: CommandComplete = match output {
            Ok(Output::Command(tag)) => CommandComplete::new(tag),
            Ok(Output::Rows {
                schema,
                stream,
                tag,
            }) => {
                let fields = Arc::new(field_infos(&schema, |i| {
                    portal.result_column_format.format_for(i)
                }));
                let style = self.conn.session.lock().await.text_style();
                let mut rows = row_stream(stream, &schema, fields, style);
                let mut count = 0usize;
                while let Some(row) = rows.next().await {
                    client.feed(PgWireBackendMessage::DataRow(row?)).await?;
                    count += 1;
                }
                Tag::new(&tag).with_rows(count).into()
            }
            Ok(_) => {
                return Err(to_pg_error(&planner::Error::Internal(
                    "a write returned neither rows nor a command tag".into(),
                )));
            }
            Err(e) => {
                let info: ErrorInfo = e.into();
                client
                    .feed(PgWireBackendMessage::ErrorResponse(info.into()))
                    .await?;
                return Ok(());
            }
        };
        client
            .feed(PgWireBackendMessage::CommandComplete(complete))
            .await?;
        Ok(())
    }

    /// Sync: ends the implicit transaction (committing it unless a message since the last
    /// Sync failed), then sends the held write's result, or the commit's error.
    async fn sync<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let failed = matches!(client.state(), PgWireConnectionState::AwaitingSync);
        let held = self
            .conn
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let mut session = self.conn.session.lock().await;
        let ended = session.end_implicit(!failed).await;
        let reply = match (ended, held) {
            (Ok(commit), Some(held)) => {
                let output = held.result.finish(commit).await;
                Some((held.portal, output.map_err(|e| to_pg_error(&e))))
            }
            (Ok(_), None) => None,
            (Err(planner::Error::SerializationFailure), Some(held)) => {
                let output = rerun_alone(&mut session, &held.portal).await;
                Some((held.portal, output))
            }
            (Err(e), Some(held)) => Some((held.portal, Err(to_pg_error(&e)))),
            (Err(e), None) => {
                let info: ErrorInfo = to_pg_error(&e).into();
                client
                    .feed(PgWireBackendMessage::ErrorResponse(info.into()))
                    .await?;
                None
            }
        };
        drop(session);
        if let Some((portal, output)) = reply {
            self.send_result(client, &portal, output).await?;
        }
        let mut session = self.conn.session.lock().await;
        send_notices(client, &mut session).await?;
        let status = status(&session);
        drop(session);
        client.set_transaction_status(status);
        client.portal_store().rm_portal(DEFAULT_NAME);
        send_arrived(client, &self.conn, status).await?;
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                status,
            )))
            .await?;
        client.flush().await?;
        Ok(())
    }

    async fn execute_portal<C>(
        &self,
        client: &mut C,
        portal: &Arc<Portal<Prepared>>,
        max_rows: usize,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let state = portal.state();
        let mut state = state.lock().await;
        if matches!(*state, PortalExecutionState::Initial) {
            let deallocated = {
                let mut session = self.conn.session.lock().await;
                self.deallocate(client, &mut session, &portal.statement.statement.stmt)
            };
            if let Some(tag) = deallocated {
                client
                    .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                        tag?,
                    )))
                    .await?;
                *state = PortalExecutionState::Finished;
                return Ok(());
            }
            let params = bind_params(portal)?;
            let mut session = self.conn.session.lock().await;
            let prepared = &portal.statement.statement;
            if let Err(e) = still_described(&session, prepared).await {
                *state = PortalExecutionState::Finished;
                session.statement_failed();
                client.set_transaction_status(status(&session));
                return Err(to_pg_error(&e));
            }
            session.set_implicit_block(true);
            let output =
                guarded(session.execute_prepared(&prepared.stmt, &params, &prepared.fast)).await;
            session.set_implicit_block(false);
            client.set_transaction_status(status(&session));
            send_notices(client, &mut session).await?;
            let style = session.text_style();
            drop(session);
            let output = match output {
                Ok(Output::Uncommitted(result)) if max_rows == 0 => {
                    *state = PortalExecutionState::Finished;
                    *self.conn.held.lock().unwrap_or_else(|e| e.into_inner()) = Some(Held {
                        portal: Arc::clone(portal),
                        result,
                    });
                    return Ok(());
                }
                Ok(Output::Uncommitted(result)) => result.finish(None).await,
                other => other,
            };
            match output.map_err(|e| to_pg_error(&e))? {
                Output::Uncommitted(_) => {
                    return Err(to_pg_error(&planner::Error::Internal(
                        "a finished write is uncommitted".into(),
                    )));
                }
                Output::Command(tag) => {
                    *state = PortalExecutionState::Finished;
                    client
                        .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                            tag,
                        )))
                        .await?;
                    return Ok(());
                }
                Output::Rows {
                    schema,
                    stream,
                    tag,
                } => {
                    let fields = Arc::new(field_infos(&schema, |i| {
                        portal.result_column_format.format_for(i)
                    }));
                    let mut response = QueryResponse::new(
                        Arc::clone(&fields),
                        row_stream(stream, &schema, fields, style.clone()),
                    );
                    response.set_command_tag(&tag);
                    *state = PortalExecutionState::Suspended(response);
                }
                Output::CopyFromParquet(load) => {
                    *state = PortalExecutionState::Finished;
                    let mut session = self.conn.session.lock().await;
                    let tag = Box::pin(load_parquet_guarded(&mut session, load))
                        .await
                        .map_err(|e| to_pg_error(&e));
                    client.set_transaction_status(status(&session));
                    drop(session);
                    client
                        .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                            tag?,
                        )))
                        .await?;
                    return Ok(());
                }
                Output::CopyIn(target) => {
                    *state = PortalExecutionState::Finished;
                    return Box::pin(crate::copy::start_copy_in(client, self, target, true)).await;
                }
                Output::CopyOut {
                    schema,
                    stream,
                    format,
                } => {
                    *state = PortalExecutionState::Finished;
                    if let Err(e) = Box::pin(crate::copy::send_copy_out(
                        client, schema, stream, &format, &style,
                    ))
                    .await
                    {
                        self.conn.session.lock().await.statement_failed();
                        return Err(e);
                    }
                    return Ok(());
                }
            }
        }
        let PortalExecutionState::Suspended(response) = &mut *state else {
            // Executing a finished portal again returns no rows (as PostgreSQL does).
            client
                .feed(PgWireBackendMessage::CommandComplete(
                    Tag::new("SELECT").with_rows(0).into(),
                ))
                .await?;
            return Ok(());
        };
        // Stream rows as they come; stop after max_rows (0 = all) with PortalSuspended.
        let tag = response.command_tag().to_string();
        let mut sent = 0usize;
        let mut suspended = false;
        loop {
            if max_rows > 0 && sent == max_rows {
                suspended = true;
                break;
            }
            match response.data_rows().next().await {
                Some(Ok(row)) => {
                    client.feed(PgWireBackendMessage::DataRow(row)).await?;
                    sent += 1;
                }
                Some(Err(e)) => {
                    *state = PortalExecutionState::Finished;
                    self.conn.session.lock().await.statement_failed();
                    return Err(e);
                }
                None => break,
            }
        }
        if suspended {
            client
                .feed(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                .await?;
        } else {
            *state = PortalExecutionState::Finished;
            client
                .feed(PgWireBackendMessage::CommandComplete(
                    Tag::new(&tag).with_rows(sent).into(),
                ))
                .await?;
        }
        Ok(())
    }
}
