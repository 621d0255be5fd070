//! Runs every .slt file under tests/slt (Partita's own) and the shared SQLite corpus
//! (../shared/sqllogictest/sqlite, label `postgresql`) against a real server over the wire.

use std::path::{Path, PathBuf};

fn slt_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "slt"))
                .collect()
        })
        .unwrap_or_default();
    // SLT_FILTER=name runs only the files whose name contains it (while working on one).
    if let Ok(filter) = std::env::var("SLT_FILTER") {
        files.retain(|p| p.to_string_lossy().contains(&filter));
    }
    files.sort();
    files
}

async fn run_all(files: Vec<PathBuf>) {
    assert!(!files.is_empty(), "no .slt files found");
    let mut failures = Vec::new();
    for file in &files {
        if let Err(e) = tests::slt::run_file(file, &["postgresql", "partita"]).await {
            failures.push(format!("{}:\n{e}", file.display()));
        }
        // The fast path's cases again through DataFusion: same results, same errors.
        if file.file_name().is_some_and(|n| n == "fastpath.slt") {
            let options = "-c partita.fast_path=off";
            if let Err(e) = tests::slt::run_file_with(file, &["partita"], options).await {
                failures.push(format!("{} with {options}:\n{e}", file.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} files failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partita_slt() {
    run_all(slt_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("slt"),
    ))
    .await;
}

/// The public SQLite corpus that PostgreSQL 15 passes completely (label `postgresql`): every
/// record must pass. Failures are collected across all records so one run reports them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/sqllogictest/sqlite");
    let files = slt_files(&dir);
    assert_eq!(
        files.len(),
        3,
        "expected select1-3.slt in {}",
        dir.display()
    );
    let mut report = Vec::new();
    let mut failed = 0;
    for file in &files {
        let (run, failures) = tests::slt::run_file_counting(file, &["postgresql"]).await;
        assert!(run > 1000, "{}: only {run} records ran", file.display());
        report.push(format!(
            "{}: {} of {run} records pass",
            file.display(),
            run - failures.len()
        ));
        report.extend(failures.iter().take(20).map(|f| format!("  {f}")));
        failed += failures.len();
    }
    println!("{}", report.join("\n"));
    assert_eq!(failed, 0, "{}", report.join("\n"));
}
