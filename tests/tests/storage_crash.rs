//! Crash test: a child process commits bank transfers and acknowledges each; we SIGKILL it at
//! random moments, reopen the store, and check that every acknowledged transfer is wholly
//! present and no transfer is partly present. Rerun a failure with CRASH_SEED=<seed>.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
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
        let mut child = Command::new(env!("CARGO_BIN_EXE_crash-writer"))
            .arg(dir.path())
            .arg((seed ^ cycle as u64).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start crash-writer");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Wait until the child is up, then let it run a random while.
        let ready = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("child ready");
        assert_eq!(ready, "ready", "seed {seed}");
        let run_for = Duration::from_millis(20 + rng.below(400));
        let deadline = Instant::now() + run_for;
        let mut acked = Vec::new();
        while Instant::now() < deadline {
            if let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                acked.push(line);
            }
        }
        child.kill().expect("SIGKILL the writer");
        let status = child.wait().unwrap();
        assert!(!status.success(), "seed {seed}: writer exited by itself");
        reader.join().unwrap();
        // Acks that were written before the kill and still sat in the pipe count too.
        acked.extend(rx.try_iter());

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
