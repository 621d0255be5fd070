//! Starts the real server, in-process on its own runtime thread, on 127.0.0.1:0 with a
//! temporary data directory.

use std::net::SocketAddr;
use std::path::PathBuf;

/// The store options of a test server: small range splits and cache, so tests cross
/// split boundaries with little data.
pub fn store_options() -> storage::StoreOptions {
    storage::StoreOptions {
        split_bytes_max: 64 << 10,
        cache_bytes: 32 << 20,
    }
}

/// The database a test server serves (see `store_options`).
pub fn open_database(dir: &std::path::Path) -> planner::Database {
    planner::Database::open(dir, store_options()).expect("open database")
}

/// The names of the temporary tables committed in the store at `dir`, read as stored, before
/// opening the database drops them.
pub fn stored_temporary_tables(dir: &std::path::Path) -> Vec<String> {
    let store = storage::Store::open(dir, store_options()).expect("open store");
    let catalog = sql::Catalog::load(&store).expect("load catalog");
    catalog
        .temporary_tables()
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub data_dir: PathBuf,
    _dir: Option<tempfile::TempDir>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    /// A server on a fresh temporary data directory.
    pub fn start() -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().to_path_buf();
        let mut server = TestServer::start_in(path);
        server._dir = Some(dir);
        server
    }

    /// A server on an existing data directory (to test restarts).
    pub fn start_in(data_dir: PathBuf) -> TestServer {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let dir = data_dir.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .thread_stack_size(pg_server::WORKER_STACK_BYTES)
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let db = open_database(&dir);
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                addr_tx
                    .send(listener.local_addr().expect("addr"))
                    .expect("send addr");
                let _ = pg_server::serve(listener, db, async {
                    let _ = stop_rx.await;
                })
                .await;
            });
            runtime.shutdown_timeout(std::time::Duration::from_secs(5));
        });
        let addr = addr_rx.recv().expect("server address");
        TestServer {
            addr,
            data_dir,
            _dir: None,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    pub fn conn_string(&self) -> String {
        format!(
            "host={} port={} user=partita dbname=partita",
            self.addr.ip(),
            self.addr.port()
        )
    }

    pub async fn connect(&self) -> tokio_postgres::Client {
        let (client, connection) =
            tokio_postgres::connect(&self.conn_string(), tokio_postgres::NoTls)
                .await
                .expect("connect");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    }

    /// Stops the server and waits for it, keeping the data directory.
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The server in a child process of its own (`tests-helper server DIR`), for tests whose
/// server must see another environment than the test process, or whose CPU use must be
/// measured apart from the other tests of the binary.
pub struct ChildServer {
    child: std::process::Child,
    pub port: u16,
    dir: Option<tempfile::TempDir>,
}

impl ChildServer {
    /// Starts `helper` (the test's `env!("CARGO_BIN_EXE_tests-helper")`) on a fresh temporary
    /// data directory, with `env` added to its environment.
    pub fn start(helper: &str, env: &[(&str, &str)]) -> ChildServer {
        use std::io::BufRead;
        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = std::process::Command::new(helper)
            .arg("server")
            .arg(dir.path())
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn server");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("server address");
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("server printed {line:?}, not its address"));
        ChildServer {
            child,
            port,
            dir: Some(dir),
        }
    }

    pub async fn connect(&self) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(
            &format!(
                "host=127.0.0.1 port={} user=partita dbname=partita",
                self.port
            ),
            tokio_postgres::NoTls,
        )
        .await
        .expect("connect");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    }

    /// Kills the server with SIGKILL, as a crash would, and hands over its data directory.
    pub fn kill(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.dir.take().expect("the data directory")
    }

    /// CPU time the server process has used (user + system), from /proc.
    pub fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
            .expect("/proc/<pid>/stat");
        // Fields after the parenthesized command name; utime and stime are the 12th and 13th.
        let rest = &stat[stat.rfind(')').expect("comm") + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 =
            fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
        ticks as f64 / 100.0
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
