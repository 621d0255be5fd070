//! A reference PostgreSQL 15 for differential tests: initdb into a temporary directory, start
//! on a free loopback port with default durability, stop and remove on drop. PostgreSQL
//! refuses to run as root, so as root the server runs as the `postgres` user.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

pub struct ReferencePg {
    pub port: u16,
    dir: PathBuf,
    bin: PathBuf,
    as_postgres: bool,
}

fn find_bin() -> Option<PathBuf> {
    for dir in ["/usr/lib/postgresql/15/bin", "/usr/local/pgsql/bin"] {
        let p = PathBuf::from(dir);
        if p.join("initdb").exists() && p.join("pg_ctl").exists() {
            return Some(p);
        }
    }
    None
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl ReferencePg {
    /// Starts PostgreSQL 15; panics with the reason when it cannot.
    pub fn start() -> ReferencePg {
        let bin = find_bin()
            .expect("PostgreSQL 15 binaries (Debian's postgresql-15); .ci/run installs them");
        let as_postgres = is_root();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let dir = std::env::temp_dir().join(format!("partita-refpg-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("pg dir");
        let pg = ReferencePg {
            port,
            dir,
            bin,
            as_postgres,
        };
        if as_postgres {
            let status = Command::new("chown")
                .arg("-R")
                .arg("postgres:postgres")
                .arg(&pg.dir)
                .status()
                .expect("chown");
            assert!(
                status.success(),
                "chown of the reference PostgreSQL directory failed"
            );
        }
        let data = pg.dir.join("data");
        let out = pg
            .command("initdb")
            .args([
                "-D",
                &data.to_string_lossy(),
                "-U",
                "postgres",
                "--auth=trust",
                "--locale=C",
                "-E",
                "UTF8",
            ])
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c TimeZone=UTC",
            pg.dir.display()
        );
        let out = pg
            .command("pg_ctl")
            .args([
                "-D",
                &data.to_string_lossy(),
                "-o",
                &opts,
                "-l",
                &pg.dir.join("log").to_string_lossy(),
                "-w",
                "-t",
                "60",
                "start",
            ])
            .output()
            .expect("run pg_ctl");
        assert!(
            out.status.success(),
            "pg_ctl start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "reference PostgreSQL did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        pg
    }

    fn command(&self, tool: &str) -> Command {
        let path = self.bin.join(tool);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    pub fn conn_string(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }

    pub async fn connect(&self) -> tokio_postgres::Client {
        let (client, connection) =
            tokio_postgres::connect(&self.conn_string(), tokio_postgres::NoTls)
                .await
                .expect("connect to reference PostgreSQL");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    }
}

impl Drop for ReferencePg {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = self
            .command("pg_ctl")
            .args([
                "-D",
                &data.to_string_lossy(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
