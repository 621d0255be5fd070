//! Differential tests: scenario scripts from the seeds run on Partita and on a real PostgreSQL
//! 15, comparing result column names and rows, row counts and SQLSTATEs statement by
//! statement.
//!
//! Scripts (tests/differential/*.sql) are plain SQL, one statement per `;`-terminated line
//! group. Partita's key syntax is rewritten for PostgreSQL (`PRIMARY KEY ((a, b) HASH, c)`
//! becomes `PRIMARY KEY (a, b, c)`, `WITH (partition_key = …)` is dropped). Results of a
//! query without ORDER BY are compared as sorted multisets.

use std::path::Path;
use tests::pg::ReferencePg;
use tests::server::TestServer;
use tokio_postgres::{Client, SimpleQueryMessage};

/// Partita DDL as plain PostgreSQL DDL.
fn to_postgres(sql: &str) -> String {
    let mut out = sql.to_string();
    if let Some(start) = out.find("PRIMARY KEY ((") {
        let inner_start = start + "PRIMARY KEY (".len();
        if let Some(close) = out[inner_start..].find(')') {
            let close = inner_start + close;
            out.replace_range(close..close + 1, "");
            out.replace_range(inner_start..inner_start + 1, "");
        }
    }
    out = out
        .replace(") HASH", ")")
        .replace(" HASH,", ",")
        .replace(" HASH)", ")");
    // A materialized view with Partita's key is a plain view in PostgreSQL: both always
    // show the base rows' current state.
    if let Some(start) = out.find("CREATE MATERIALIZED VIEW ")
        && let Some(with) = out[start..].find(" WITH (primary_key")
        && let Some(end) = out[start + with..].find(") AS ")
    {
        out.replace_range(start + with..start + with + end + 1, "");
        out = out.replacen("CREATE MATERIALIZED VIEW ", "CREATE VIEW ", 1);
    }
    if let Some(with) = out.find(" WITH (partition_key")
        && let Some(end) = out[with..].find(')')
    {
        out.replace_range(with..with + end + 1, "");
    }
    out
}

#[derive(Debug, PartialEq)]
enum Outcome {
    /// Column names and rows.
    Rows(Vec<String>, Vec<Vec<Option<String>>>),
    Count(u64),
    Error(String),
}

async fn run(client: &Client, sql: &str) -> Outcome {
    match client.simple_query(sql).await {
        Err(e) => Outcome::Error(
            e.code()
                .map(|c| c.code().to_string())
                .unwrap_or_else(|| e.to_string()),
        ),
        Ok(messages) => {
            let mut rows = Vec::new();
            let mut columns = None;
            let mut count = 0;
            for m in messages {
                match m {
                    SimpleQueryMessage::Row(r) => {
                        rows.push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
                    }
                    SimpleQueryMessage::RowDescription(c) => {
                        columns = Some(c.iter().map(|c| c.name().to_string()).collect())
                    }
                    SimpleQueryMessage::CommandComplete(n) => count = n,
                    _ => {}
                }
            }
            if let Some(columns) = columns {
                if !sql.to_ascii_uppercase().contains("ORDER BY") {
                    rows.sort();
                }
                Outcome::Rows(columns, rows)
            } else {
                Outcome::Count(count)
            }
        }
    }
}

fn statements(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in script.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("--") || trimmed.is_empty() {
            continue;
        }
        current.push_str(line);
        current.push('\n');
        if trimmed.ends_with(';') {
            out.push(current.trim().trim_end_matches(';').to_string());
            current.clear();
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios_match_postgresql() {
    let pg = ReferencePg::start();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("differential");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut mismatches = Vec::new();
    let mut compared = 0;
    for file in files {
        let script = std::fs::read_to_string(&file).unwrap();
        let partita = TestServer::start();
        let p = partita.connect().await;
        let reference = pg.connect().await;
        // Each scenario gets a fresh PostgreSQL database.
        let db = format!("s{}", compared);
        reference
            .batch_execute(&format!("CREATE DATABASE {db}"))
            .await
            .unwrap();
        let (r, connection) = tokio_postgres::connect(
            &format!(
                "{} dbname={db}",
                pg.conn_string().replace("dbname=postgres", "")
            ),
            tokio_postgres::NoTls,
        )
        .await
        .unwrap();
        tokio::spawn(async move {
            let _ = connection.await;
        });
        for stmt in statements(&script) {
            let ours = run(&p, &stmt).await;
            let theirs = run(&r, &to_postgres(&stmt)).await;
            compared += 1;
            if ours != theirs {
                mismatches.push(format!(
                    "{}: {stmt}\n  partita:    {ours:?}\n  postgresql: {theirs:?}",
                    file.display()
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {compared} statements differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn partita_keys_become_postgres_keys() {
    assert_eq!(
        to_postgres("CREATE TABLE r (a text, b text, c int, PRIMARY KEY ((a, b), c))"),
        "CREATE TABLE r (a text, b text, c int, PRIMARY KEY (a, b, c))"
    );
    assert_eq!(
        to_postgres("CREATE TABLE h (a int, b int, PRIMARY KEY ((a) HASH, b))"),
        "CREATE TABLE h (a int, b int, PRIMARY KEY (a, b))"
    );
    assert_eq!(
        to_postgres("CREATE TABLE w (a int, b int, PRIMARY KEY (a, b)) WITH (partition_key = 'a')"),
        "CREATE TABLE w (a int, b int, PRIMARY KEY (a, b))"
    );
}
