//! Child process of the storage crash test: commits numbered bank-transfer transactions and
//! prints `ack N` after each commit returns, until it is killed.
//!
//! Each transaction moves an amount between two account rows (keyspace "accounts") and records
//! the transfer as a row keyed by its number in another keyspace ("ledger", standing in for an
//! index table). Usage: tests-helper crash-writer DATA_DIR SEED

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tests::bank;

pub fn main(args: &[String]) {
    let (dir, seed) = match (
        args.first(),
        args.get(1).and_then(|s| s.parse::<u64>().ok()),
    ) {
        (Some(dir), Some(seed)) => (dir.clone(), seed),
        _ => {
            eprintln!("usage: tests-helper crash-writer DATA_DIR SEED");
            std::process::exit(2);
        }
    };
    let bank = match bank::Bank::open(std::path::Path::new(&dir)) {
        Ok(bank) => bank,
        Err(e) => {
            eprintln!("open failed: {e}");
            std::process::exit(1);
        }
    };
    let next = Arc::new(AtomicU64::new(bank.next_transfer_number().unwrap_or(1)));
    let stdout = Arc::new(Mutex::new(std::io::stdout()));
    println!("ready");
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (bank, next, stdout) = (bank.clone(), Arc::clone(&next), Arc::clone(&stdout));
            std::thread::spawn(move || {
                let mut rng = bank::Rng::new(seed ^ (t + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    loop {
                        match bank.transfer(n, &mut rng) {
                            Ok(()) => break,
                            Err(storage::Error::Conflict) => continue,
                            Err(e) => {
                                eprintln!("transfer {n} failed: {e}");
                                std::process::exit(1);
                            }
                        }
                    }
                    let mut out = stdout.lock().unwrap_or_else(|e| e.into_inner());
                    let _ = writeln!(out, "ack {n}");
                    let _ = out.flush();
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}
