//! A sqllogictest database driven over the wire with the simple query protocol, as psql does.

use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};
use tokio_postgres::{Client, SimpleQueryMessage};

pub struct PgWire {
    pub client: Client,
}

#[derive(Debug)]
pub struct WireError(pub tokio_postgres::Error);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_db_error() {
            Some(db) => write!(f, "{}: {}", db.code().code(), db.message()),
            None => write!(f, "{}", self.0),
        }
    }
}

impl std::error::Error for WireError {}

#[async_trait::async_trait]
impl AsyncDB for PgWire {
    type Error = WireError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, WireError> {
        let messages = self.client.simple_query(sql).await.map_err(WireError)?;
        let mut rows = Vec::new();
        let mut columns = None;
        let mut affected = 0;
        for message in messages {
            match message {
                SimpleQueryMessage::Row(row) => {
                    let values = (0..row.len())
                        .map(|i| match row.get(i) {
                            None => "NULL".to_string(),
                            Some("") => "(empty)".to_string(),
                            Some(v) => v.to_string(),
                        })
                        .collect();
                    rows.push(values);
                }
                SimpleQueryMessage::RowDescription(desc) => columns = Some(desc.len()),
                SimpleQueryMessage::CommandComplete(n) => affected = n,
                _ => {}
            }
        }
        Ok(match columns {
            Some(n) => DBOutput::Rows {
                types: vec![DefaultColumnType::Any; n],
                rows,
            },
            None => DBOutput::StatementComplete(affected),
        })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "partita"
    }

    fn error_sql_state(err: &WireError) -> Option<String> {
        err.0.code().map(|c| c.code().to_string())
    }
}

/// A sqllogictest runner connected to `server`, with `labels` for `onlyif`/`skipif`.
fn runner_for(
    server: &crate::server::TestServer,
    labels: &[&str],
    options: &str,
) -> sqllogictest::Runner<PgWire, impl sqllogictest::MakeConnection<Conn = PgWire>> {
    let mut conn = server.conn_string();
    if !options.is_empty() {
        conn.push_str(&format!(" options='{options}'"));
    }
    let mut runner = sqllogictest::Runner::new(move || {
        let conn = conn.clone();
        async move {
            let (client, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls)
                .await
                .map_err(WireError)?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            Ok(PgWire { client })
        }
    });
    for label in labels {
        runner.add_label(label);
    }
    runner
}

/// Runs one .slt file against a fresh server; `labels` select `onlyif`/`skipif` records.
pub async fn run_file(path: &std::path::Path, labels: &[&str]) -> Result<(), String> {
    run_file_with(path, labels, "").await
}

/// `run_file` with startup `options` for every connection (`-c partita.fast_path=off`).
pub async fn run_file_with(
    path: &std::path::Path,
    labels: &[&str],
    options: &str,
) -> Result<(), String> {
    let server = crate::server::TestServer::start();
    let mut runner = runner_for(&server, labels, options);
    runner
        .run_file_async(path)
        .await
        .map_err(|e| e.display(true).to_string())
}

/// Runs every record of one .slt file, continuing past failures; returns (records run,
/// failures with their first lines).
pub async fn run_file_counting(path: &std::path::Path, labels: &[&str]) -> (usize, Vec<String>) {
    let server = crate::server::TestServer::start();
    let mut runner = runner_for(&server, labels, "");
    let records = sqllogictest::parse_file::<DefaultColumnType>(path).expect("parse .slt file");
    let mut run = 0;
    let mut failures = Vec::new();
    for record in records {
        let counts = matches!(
            record,
            sqllogictest::Record::Statement { .. } | sqllogictest::Record::Query { .. }
        );
        if let Err(e) = runner.run_async(record).await {
            failures.push(
                e.display(false)
                    .to_string()
                    .lines()
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(" | "),
            );
        }
        if counts {
            run += 1;
        }
    }
    (run, failures)
}
