//! Storage micro-benchmark: point get, 100-row range scan, 100-row batch commit, single-row
//! durable commit and full-scan rows/s on the embedded engine. Results go to
//! docs/BENCHMARKS.md; run with `cargo run --release -p storage --example storage_bench`.
//!
//! Usage: storage_bench [ROWS] (default 200000 rows in 2000 partitions of 100).

use std::time::{Duration, Instant};
use storage::{
    Direction, KeyColumn, KeyLayout, KeyRange, KeyspaceKind, ScalarType, Store, StoreOptions, Value,
};

fn layout() -> KeyLayout {
    KeyLayout::new(
        vec![KeyColumn::asc(ScalarType::Int8)],
        vec![KeyColumn::asc(ScalarType::Int8)],
        0,
    )
    .expect("layout")
}

fn key(tenant: i64, id: i64) -> Vec<u8> {
    layout()
        .encode(&[Value::Int8(tenant)], &[Value::Int8(id)])
        .expect("key")
}

fn payload(tenant: i64, id: i64) -> Vec<u8> {
    storage::rowcodec::encode_row(
        1,
        &[
            Value::Int8(tenant),
            Value::Int8(id),
            Value::Text(format!("name-{id}")),
            Value::Int4((id % 90) as i32),
        ],
    )
}

fn report(name: &str, ops: u64, elapsed: Duration, unit: &str) {
    let per_sec = ops as f64 / elapsed.as_secs_f64();
    let micros = elapsed.as_secs_f64() * 1e6 / ops as f64;
    println!("| {name} | {per_sec:.0} {unit}/s | {micros:.1} µs |");
}

fn main() {
    let rows: i64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let per_partition = 100;
    let partitions = rows / per_partition;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), StoreOptions::default()).expect("open");
    let mut txn = store.begin();
    let ks = txn
        .create_keyspace(KeyspaceKind::Table, "bench", layout())
        .expect("create");
    txn.commit().expect("commit");

    println!("| operation | throughput | per operation |");
    println!("| --- | --- | --- |");

    // Load: one 100-row transaction per partition (the batch commit).
    let start = Instant::now();
    for t in 0..partitions {
        let mut txn = store.begin();
        for id in 0..per_partition {
            txn.put(ks, &key(t, id), payload(t, id)).expect("put");
        }
        txn.commit().expect("commit");
    }
    report(
        "100-row batch commit (fsync)",
        partitions as u64,
        start.elapsed(),
        "commits",
    );

    // Single-row durable commits.
    let n = 2000;
    let start = Instant::now();
    for i in 0..n {
        let mut txn = store.begin();
        txn.put(ks, &key(partitions + i, 0), payload(partitions + i, 0))
            .expect("put");
        txn.commit().expect("commit");
    }
    report(
        "single-row durable commit (fsync)",
        n as u64,
        start.elapsed(),
        "commits",
    );

    // Point gets on one snapshot.
    let view = store.snapshot();
    let n = 200_000u64;
    let start = Instant::now();
    let mut found = 0;
    for i in 0..n {
        let t = (i * 7919) as i64 % partitions;
        let id = (i * 31) as i64 % per_partition;
        if view.get(ks, &key(t, id)).expect("get").is_some() {
            found += 1;
        }
    }
    assert_eq!(found, n);
    report("point get", n, start.elapsed(), "gets");

    // 100-row range scans (one partition each).
    let n = 5000u64;
    let start = Instant::now();
    for i in 0..n {
        let t = (i * 7919) as i64 % partitions;
        let prefix = layout()
            .partition_prefix(&[Value::Int8(t)])
            .expect("prefix");
        let count = view
            .scan(ks, &KeyRange::prefix(&prefix), Direction::Forward)
            .expect("scan")
            .count();
        assert_eq!(count, per_partition as usize);
    }
    report("100-row range scan", n, start.elapsed(), "scans");

    // Full scan.
    let start = Instant::now();
    let total = view
        .scan(ks, &KeyRange::all(), Direction::Forward)
        .expect("scan")
        .count();
    report("full scan", total as u64, start.elapsed(), "rows");
    println!(
        "\n{} rows, {} range partitions",
        total,
        store.range_partitions(ks).len()
    );
}
