//! Crash test: a child process commits bank transfers and acknowledges each; we SIGKILL it at
//! random moments, reopen the store, and check that every acknowledged transfer is wholly
//! present and no transfer is partly present. Rerun a failure with CRASH_SEED=<seed>.

use std::process::Command;
use std::time::Duration;
use tests::bank::{Bank, Rng};

const CYCLES: usize = 24;

#[test]
fn acknowledged_transactions_survive_sigkill() {
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("crash test seed: {seed} (rerun with CRASH_SEED={seed})");
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let mut acked_total = 0usize;
    for cycle in 0..CYCLES {
        let mut writer = Command::new(env!("CARGO_BIN_EXE_tests-helper"));
        writer.arg("crash-writer");
        writer
            .arg(dir.path())
            .arg((seed ^ cycle as u64).to_string());
        // Let it run a random while, then kill it.
        let run_for = Duration::from_millis(20 + rng.below(400));
        let acked = tests::crash::run_then_kill(writer, run_for);

        let bank = Bank::open(dir.path())
            .unwrap_or_else(|e| panic!("seed {seed} cycle {cycle}: reopen failed: {e}"));
        let present = bank
            .check()
            .unwrap_or_else(|e| panic!("seed {seed} cycle {cycle}: {e}"));
        for line in &acked {
            let n: u64 = line
                .strip_prefix("ack ")
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("bad line {line:?}"));
            assert!(
                present.contains(&n),
                "seed {seed} cycle {cycle}: acknowledged transfer {n} is missing"
            );
        }
        acked_total += acked.len();
        drop(bank);
    }
    println!("{CYCLES} kill/reopen cycles, {acked_total} acknowledged transfers, all present");
    assert!(acked_total > 0, "the writer never acknowledged anything");
}
