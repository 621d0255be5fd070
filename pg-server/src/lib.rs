//! Partita's PostgreSQL server: the only crate that knows pgwire, SQLSTATE codes, sockets and
//! command-line flags.

pub mod copy;
pub mod encode;
pub mod errors;
pub mod handler;

use handler::{Cancels, Connection, Handlers};

/// Stack size of the threads that run connections. A statement's future holds its whole
/// execution (a COPY holds the INSERT of each batch, planning recurses through the plan),
/// and unoptimized builds keep large frames: tokio's 2 MiB default overflowed in debug
/// builds. The memory is reserved, not committed, until used.
pub const WORKER_STACK_BYTES: usize = 16 << 20;
use planner::Database;
use std::future::Future;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

/// Accepts connections on `listener` until `shutdown` resolves, then closes every connection
/// and returns once their threads have ended (so the database can be reopened).
///
/// Each connection gets its own session and its own thread, which runs the connection's
/// protocol work on a single-threaded runtime, as PostgreSQL gives each connection a process:
/// a client's message wakes the thread blocked on its socket, and nothing moves between
/// cores. (On a shared work-stealing runtime, handing ready connections between two workers
/// cost a point select more than the lookup itself.) Query plans still run in parallel on
/// the database's query runtime (`planner::executor`). A panic inside one connection ends
/// that connection only.
pub async fn serve(
    listener: TcpListener,
    db: Database,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let cancels = Arc::new(Cancels::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    // Every connection thread holds a sender; the channel closes when the last one ends.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let (socket, _) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        eprintln!("partita: accept failed: {e}");
                        continue;
                    }
                };
                let _ = socket.set_nodelay(true);
                let conn = Arc::new(Connection::new(db.session(), Arc::clone(&cancels)));
                let stop = stop_rx.clone();
                let alive = alive_tx.clone();
                if let Err(e) = spawn_connection(socket, conn, stop, alive) {
                    eprintln!("partita: cannot start a connection thread: {e}");
                }
            }
        }
    }
    let _ = stop_tx.send(true);
    drop(alive_tx);
    let _ = alive_rx.recv().await;
    Ok(())
}

/// Runs one connection on a thread of its own until the client leaves or `stop` turns true.
fn spawn_connection(
    socket: TcpStream,
    conn: Arc<Connection>,
    mut stop: watch::Receiver<bool>,
    alive: mpsc::Sender<()>,
) -> std::io::Result<()> {
    let socket = socket.into_std()?;
    std::thread::Builder::new()
        .name("partita-conn".into())
        .stack_size(WORKER_STACK_BYTES)
        .spawn(move || {
            let _alive = alive;
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("partita: cannot start a connection runtime: {e}");
                    return;
                }
            };
            runtime.block_on(async move {
                let socket = match TcpStream::from_std(socket) {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("partita: cannot register a connection: {e}");
                        return;
                    }
                };
                tokio::select! {
                    ended = process_socket(socket, conn) => {
                        if let Err(e) = ended {
                            eprintln!("partita: connection ended with an error: {e}");
                        }
                    }
                    _ = stop.wait_for(|stopping| *stopping) => {}
                }
            });
        })?;
    Ok(())
}

/// How long a client has to finish its startup, as pgwire gives it.
const STARTUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// One connection's messages, as pgwire's `process_socket` handles them, and one thing
/// more: while the client waits between statements outside a transaction block, the
/// notifications its LISTENs receive are sent at once (NotificationResponse), as
/// PostgreSQL sends them to an idle backend's client.
async fn process_socket(socket: TcpStream, conn: Arc<Connection>) -> std::io::Result<()> {
    use futures::{SinkExt, StreamExt};
    use pgwire::api::{ClientInfo, ErrorHandler, PgWireConnectionState, PgWireServerHandlers};
    use pgwire::messages::PgWireFrontendMessage;
    use pgwire::messages::response::TransactionStatus;
    use pgwire::tokio::server::{negotiate_tls, process_error, process_message};

    let handlers = Handlers::new(Arc::clone(&conn));
    let startup = handlers.startup_handler();
    let simple = handlers.simple_query_handler();
    let extended = handlers.extended_query_handler();
    let copy = handlers.copy_handler();
    let cancel = handlers.cancel_handler();
    let errors = handlers.error_handler();
    let deadline = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(deadline);
    let socket = tokio::select! {
        _ = &mut deadline => return Ok(()),
        socket = negotiate_tls(socket, None) => socket?,
    };
    let Some(mut socket) = socket else {
        return Ok(());
    };
    // Whether the last message ended with ReadyForQuery: the client waits for the next
    // statement.
    let mut ready = false;
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        let idle = ready && socket.transaction_status() == TransactionStatus::Idle;
        let message = tokio::select! {
            _ = &mut deadline, if starting => None,
            message = socket.next() => message,
            Some(notification) = conn.next_notification(), if idle => {
                socket.feed(notification).await?;
                for more in conn.arrived() {
                    socket.feed(more).await?;
                }
                socket.flush().await?;
                continue;
            }
        };
        let Some(Ok(message)) = message else {
            break;
        };
        // A Terminate ends the connection (asyncpg waits for the server to close it).
        if matches!(message, PgWireFrontendMessage::Terminate(_)) {
            break;
        }
        let extended_protocol = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => message.is_extended_query(),
        };
        let ends_with_ready = matches!(
            message,
            PgWireFrontendMessage::Query(_)
                | PgWireFrontendMessage::Sync(_)
                | PgWireFrontendMessage::CopyDone(_)
                | PgWireFrontendMessage::CopyFail(_)
        ) || starting;
        let cancel_request = matches!(message, PgWireFrontendMessage::CancelRequest(_));
        let processed = process_message(
            message,
            &mut socket,
            startup.clone(),
            simple.clone(),
            extended.clone(),
            copy.clone(),
            cancel.clone(),
        )
        .await;
        if let Err(mut e) = processed {
            errors.on_error(&socket, &mut e);
            let fatal = e.is_fatal();
            process_error(&mut socket, e, extended_protocol).await?;
            if fatal {
                break;
            }
        }
        if cancel_request {
            break;
        }
        ready = ends_with_ready && matches!(socket.state(), PgWireConnectionState::ReadyForQuery);
    }
    Ok(())
}
