//! The kill half of the crash tests: run a writer child process, SIGKILL it mid-stream.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Starts `command`, a writer that prints `ready` once it is up and then one line per
/// acknowledged write; lets it run for `run_for` after `ready`, SIGKILLs it, and returns
/// every line it printed after `ready` (acks still in the pipe at the kill included).
pub fn run_then_kill(mut command: Command, run_for: Duration) -> Vec<String> {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the writer");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let ready = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the writer is ready");
    assert_eq!(ready, "ready");
    let deadline = Instant::now() + run_for;
    let mut acked = Vec::new();
    while Instant::now() < deadline {
        if let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            acked.push(line);
        }
    }
    child.kill().expect("SIGKILL the writer");
    let status = child.wait().expect("reap the writer");
    assert!(!status.success(), "the writer exited by itself");
    reader.join().expect("stdout reader");
    acked.extend(rx.try_iter());
    acked
}
