//! What the fast path buys: point SELECT latency and throughput with `partita.fast_path` on
//! (key lookups without DataFusion) and off (planned and run by DataFusion), on the same data
//! in the same run, over the wire, simple and prepared protocols, 1 and 4 clients.
//!
//!     cargo run --release -p tests --bin tests-helper -- fastpath-bench [SECONDS_PER_CASE]
//!
//! Prints a Markdown table for docs/BENCHMARKS.md.

use std::time::{Duration, Instant};
use tests::server::TestServer;
use tokio_postgres::{Client, NoTls};

const TENANTS: i64 = 1_000;
const ROWS_PER_TENANT: i64 = 100;

#[derive(Clone, Copy, PartialEq)]
enum Protocol {
    Simple,
    Prepared,
}

struct Outcome {
    queries: u64,
    latencies: Vec<Duration>,
    elapsed: Duration,
}

async fn connect(server: &TestServer, fast: bool) -> Client {
    let options = if fast { "on" } else { "off" };
    let conn = format!(
        "{} options='-c partita.fast_path={options}'",
        server.conn_string()
    );
    let (client, connection) = tokio_postgres::connect(&conn, NoTls)
        .await
        .expect("connect");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

async fn load(server: &TestServer) {
    let client = connect(server, true).await;
    client
        .batch_execute(
            "CREATE TABLE reg (tenant int, id bigint, name text, age int, city text, \
             PRIMARY KEY ((tenant), id))",
        )
        .await
        .expect("create");
    for t in 0..TENANTS {
        let values: Vec<String> = (0..ROWS_PER_TENANT)
            .map(|i| {
                format!(
                    "({t}, {i}, 'runner {t}-{i}', {}, 'city{}')",
                    18 + i % 60,
                    i % 50
                )
            })
            .collect();
        client
            .batch_execute(&format!("INSERT INTO reg VALUES {}", values.join(", ")))
            .await
            .expect("insert");
    }
}

async fn run_client(
    server: &TestServer,
    fast: bool,
    protocol: Protocol,
    duration: Duration,
    seed: u64,
) -> Outcome {
    let client = connect(server, fast).await;
    let prepared = client
        .prepare("SELECT name, age FROM reg WHERE tenant = $1 AND id = $2")
        .await
        .expect("prepare");
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let mut latencies = Vec::new();
    let start = Instant::now();
    while start.elapsed() < duration {
        let tenant = (next() % TENANTS as u64) as i32;
        let id = (next() % ROWS_PER_TENANT as u64) as i64;
        let began = Instant::now();
        let found = match protocol {
            Protocol::Simple => {
                let sql =
                    format!("SELECT name, age FROM reg WHERE tenant = {tenant} AND id = {id}");
                client
                    .simple_query(&sql)
                    .await
                    .expect("query")
                    .iter()
                    .filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_)))
                    .count()
            }
            Protocol::Prepared => client
                .query(&prepared, &[&tenant, &id])
                .await
                .expect("query")
                .len(),
        };
        latencies.push(began.elapsed());
        assert_eq!(found, 1, "tenant {tenant} id {id}");
    }
    Outcome {
        queries: latencies.len() as u64,
        latencies,
        elapsed: start.elapsed(),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

pub fn main(args: &[String]) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(bench(args));
}

async fn bench(args: &[String]) {
    let seconds: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(10);
    let duration = Duration::from_secs(seconds);
    let server = TestServer::start();
    let loading = Instant::now();
    load(&server).await;
    eprintln!(
        "loaded {} rows in {:.1} s",
        TENANTS * ROWS_PER_TENANT,
        loading.elapsed().as_secs_f64()
    );
    println!("| protocol | clients | path | queries/s | p50 µs | p99 µs |");
    println!("|---|---|---|---|---|---|");
    for protocol in [Protocol::Simple, Protocol::Prepared] {
        for clients in [1usize, 4] {
            for fast in [true, false] {
                let runs = (0..clients)
                    .map(|c| run_client(&server, fast, protocol, duration, c as u64 + 7));
                let outcomes = futures::future::join_all(runs).await;
                let queries: u64 = outcomes.iter().map(|o| o.queries).sum();
                let elapsed = outcomes.iter().map(|o| o.elapsed).max().unwrap_or(duration);
                let mut all: Vec<Duration> =
                    outcomes.into_iter().flat_map(|o| o.latencies).collect();
                all.sort();
                println!(
                    "| {} | {clients} | {} | {:.0} | {:.0} | {:.0} |",
                    if protocol == Protocol::Simple {
                        "simple"
                    } else {
                        "prepared"
                    },
                    if fast { "fast path" } else { "DataFusion" },
                    queries as f64 / elapsed.as_secs_f64(),
                    percentile(&all, 0.50).as_secs_f64() * 1e6,
                    percentile(&all, 0.99).as_secs_f64() * 1e6,
                );
            }
        }
    }
}
