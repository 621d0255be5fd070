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
                let handlers = Arc::new(Handlers::new(conn));
                let stop = stop_rx.clone();
                let alive = alive_tx.clone();
                if let Err(e) = spawn_connection(socket, handlers, stop, alive) {
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
    handlers: Arc<Handlers>,
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
                    ended = pgwire::tokio::process_socket(socket, None, handlers) => {
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
