//! The end-to-end tests' child processes and the fast-path benchmark, in one binary so that a
//! test build links one program instead of four:
//!
//!     tests-helper crash-writer DATA_DIR SEED
//!     tests-helper index-crash-writer DATA_DIR SEED
//!     tests-helper server DATA_DIR
//!     tests-helper fastpath-bench [SECONDS_PER_CASE]

mod crash_writer;
mod fastpath_bench;
mod index_crash_writer;
mod server;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        usage();
    };
    match command.as_str() {
        "crash-writer" => crash_writer::main(rest),
        "index-crash-writer" => index_crash_writer::main(rest),
        "server" => server::main(rest),
        "fastpath-bench" => fastpath_bench::main(rest),
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!("usage: tests-helper crash-writer|index-crash-writer|server|fastpath-bench ARGS…");
    std::process::exit(2);
}
