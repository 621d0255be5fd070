//! Crash test for index tables and views: a child process writes through SQL to a table
//! with two indexes and a materialized view; we SIGKILL it at random moments, reopen the
//! database and check with partita_check that each still matches the base rows exactly
//! (the base, index and view writes of a statement commit together or not at all). Rerun with INDEX_CRASH_SEED=<seed>.

use futures::StreamExt;
use planner::{Database, Output, Session};
use std::process::Command;
use std::time::Duration;
use storage::StoreOptions;

const CYCLES: u64 = 8;

async fn check(dir: &std::path::Path) -> Vec<Vec<String>> {
    let db = Database::open(dir, StoreOptions::default()).expect("reopen");
    let mut session = Session::new(db);
    let stmt = planner::parse_sql(
        "SELECT object, expected, missing, stray, different FROM partita_check('reg') ORDER BY object",
    )
    .unwrap()
    .remove(0);
    let Output::Rows { mut stream, .. } = session.execute(stmt, &[]).await.unwrap() else {
        panic!("partita_check returns rows");
    };
    let mut rows = Vec::new();
    while let Some(batch) = stream.next().await {
        let batch = batch.unwrap();
        for r in 0..batch.num_rows() {
            rows.push(
                (0..batch.num_columns())
                    .map(|c| {
                        datafusion::arrow::util::display::array_value_to_string(batch.column(c), r)
                            .unwrap()
                    })
                    .collect(),
            );
        }
    }
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexes_stay_exact_across_sigkill() {
    let seed: u64 = std::env::var("INDEX_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("INDEX_CRASH_SEED={seed}");
    let dir = tempfile::tempdir().unwrap();
    let mut acked = 0usize;
    for cycle in 0..CYCLES {
        let mut writer = Command::new(env!("CARGO_BIN_EXE_tests-helper"));
        writer.arg("index-crash-writer");
        writer.arg(dir.path()).arg((seed ^ cycle).to_string());
        let run_for = Duration::from_millis(100 + (seed ^ cycle) % 400);
        acked += tests::crash::run_then_kill(writer, run_for).len();
        let report = check(dir.path()).await;
        assert_eq!(report.len(), 3, "seed {seed} cycle {cycle}: {report:?}");
        for row in &report {
            assert_eq!(
                &row[2..],
                &["0", "0", "0"],
                "seed {seed} cycle {cycle}: {report:?}"
            );
        }
    }
    println!("{CYCLES} kill/reopen cycles, {acked} acknowledged statements");
    assert!(acked > 0, "the writer never acknowledged anything");
}
