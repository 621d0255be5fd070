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
use tokio::net::TcpListener;

/// Accepts connections on `listener` until `shutdown` resolves. Each connection gets its own
/// session; a panic inside one connection's task ends that connection only.
pub async fn serve(
    listener: TcpListener,
    db: Database,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let cancels = Arc::new(Cancels::default());
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
                tokio::spawn(async move {
                    if let Err(e) = pgwire::tokio::process_socket(socket, None, handlers).await {
                        eprintln!("partita: connection ended with an error: {e}");
                    }
                });
            }
        }
    }
}
