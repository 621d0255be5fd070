//! The `partita` server binary.

use std::net::SocketAddr;
use std::path::PathBuf;

fn usage() -> ! {
    eprintln!(
        "usage: partita [--data-dir DIR] [--listen HOST:PORT]\n\ndefaults: --data-dir ./partita-data --listen 127.0.0.1:5433"
    );
    std::process::exit(2);
}

fn main() {
    let mut data_dir = PathBuf::from("./partita-data");
    let mut listen: SocketAddr = "127.0.0.1:5433".parse().expect("valid default address");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--data-dir" => data_dir = args.next().map(PathBuf::from).unwrap_or_else(|| usage()),
            "--listen" => {
                listen = args
                    .next()
                    .and_then(|a| a.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "-h" | "--help" => usage(),
            other => {
                eprintln!("partita: unknown argument {other}");
                usage();
            }
        }
    }
    // This runtime only accepts connections and waits for signals: each connection runs on
    // a thread of its own, and query plans on the database's query runtime.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let code = runtime.block_on(async move {
        let db = match planner::Database::open(&data_dir, storage::StoreOptions::default()) {
            Ok(db) => db,
            Err(e) => {
                eprintln!(
                    "partita: cannot open data directory {}: {e}",
                    data_dir.display()
                );
                return 1;
            }
        };
        let listener = match tokio::net::TcpListener::bind(listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("partita: cannot listen on {listen}: {e}");
                return 1;
            }
        };
        let addr = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        eprintln!(
            "partita: data directory {}; listening on {addr}",
            data_dir.display()
        );
        let shutdown = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("SIGTERM handler");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {},
                _ = term.recv() => {},
            }
            eprintln!("partita: shutting down");
        };
        match pg_server::serve(listener, db, shutdown).await {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("partita: {e}");
                1
            }
        }
    });
    std::process::exit(code);
}
