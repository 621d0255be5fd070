//! Partita's PostgreSQL server: the only crate that knows pgwire, SQLSTATE codes, sockets and
//! command-line flags.

pub mod encode;
pub mod errors;
pub mod handler;

use handler::{Cancels, Connection, Handlers};
use planner::Database;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// One single-threaded runtime per core for connection tasks: a connection's messages are
/// handled on one thread with no work stealing between workers, so a statement costs fewer
/// wakeups and thread switches (pgbench's prepared point selects with 4 clients: about 20%
/// more per second). Queries run on the planner's own runtime either way. The workers stop,
/// ending their connections, when the returned sender is dropped.
fn connection_workers() -> (Vec<tokio::runtime::Handle>, tokio::sync::watch::Sender<()>) {
    let (stop, stopped) = tokio::sync::watch::channel(());
    let n = std::thread::available_parallelism().map_or(2, |n| n.get());
    let handles = (0..n)
        .map(|i| {
            let (tx, rx) = std::sync::mpsc::channel();
            let mut stopped = stopped.clone();
            std::thread::Builder::new()
                .name(format!("partita-conn-{i}"))
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("connection runtime");
                    let _ = tx.send(runtime.handle().clone());
                    runtime.block_on(async move { while stopped.changed().await.is_ok() {} });
                })
                .expect("connection thread");
            rx.recv().expect("connection runtime handle")
        })
        .collect();
    (handles, stop)
}

/// Accepts connections on `listener` until `shutdown` resolves, then ends them. Each
/// connection gets its own session; a panic inside one connection's task ends that
/// connection only.
pub async fn serve(
    listener: TcpListener,
    db: Database,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let cancels = Arc::new(Cancels::default());
    let (workers, _stop_workers) = connection_workers();
    let mut next = 0usize;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return Ok(()),
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
                let worker = &workers[next % workers.len()];
                next += 1;
                let socket = socket.into_std()?;
                worker.spawn(async move {
                    let socket = match tokio::net::TcpStream::from_std(socket) {
                        Ok(s) => s,
                        Err(e) => return eprintln!("partita: connection setup failed: {e}"),
                    };
                    if let Err(e) = pgwire::tokio::process_socket(socket, None, handlers).await {
                        eprintln!("partita: connection ended with an error: {e}");
                    }
                });
            }
        }
    }
}
