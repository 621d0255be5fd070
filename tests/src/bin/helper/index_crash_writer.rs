//! Child process of the index crash test: runs SQL writes (inserts, updates of indexed
//! columns and keys, deletes, upserts) against a table with two indexes and a materialized
//! view (rows entering and leaving its condition) through a planner
//! session, printing `ack` after each acknowledged statement, until it is killed.
//! Usage: tests-helper index-crash-writer DATA_DIR SEED

use planner::{Database, Output, Session};
use std::io::Write;
use storage::StoreOptions;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS reg (tenant int, id int, email text, age int, PRIMARY KEY ((tenant), id));
CREATE INDEX IF NOT EXISTS reg_by_age ON reg (age) INCLUDE (email);
CREATE UNIQUE INDEX IF NOT EXISTS reg_by_email ON reg (email);
CREATE MATERIALIZED VIEW IF NOT EXISTS reg_adults WITH (primary_key = '((age), tenant, id)') AS SELECT age, tenant, id, email FROM reg WHERE age >= 25";

async fn run(session: &mut Session, sql: &str) -> planner::Result<()> {
    for stmt in planner::parse_sql(sql)? {
        if let Output::Rows { mut stream, .. } = session.execute(stmt, &[]).await? {
            use futures::StreamExt;
            while let Some(batch) = stream.next().await {
                batch?;
            }
        }
    }
    Ok(())
}

pub fn main(args: &[String]) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(write_until_killed(args));
}

async fn write_until_killed(args: &[String]) {
    let (dir, mut state) = match (
        args.first(),
        args.get(1).and_then(|s| s.parse::<u64>().ok()),
    ) {
        (Some(dir), Some(seed)) => (dir.clone(), seed | 1),
        _ => {
            eprintln!("usage: tests-helper index-crash-writer DATA_DIR SEED");
            std::process::exit(2);
        }
    };
    let db =
        Database::open(std::path::Path::new(&dir), StoreOptions::default()).unwrap_or_else(|e| {
            eprintln!("open failed: {e}");
            std::process::exit(1);
        });
    let mut session = Session::new(db);
    if let Err(e) = run(&mut session, SCHEMA).await {
        eprintln!("schema: {e}");
        std::process::exit(1);
    }
    println!("ready");
    let mut next = move |n: u64| {
        // xorshift64*: a small deterministic generator, enough to vary the statements.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    };
    let mut stdout = std::io::stdout();
    loop {
        let (tenant, id, age, email) = (next(4), next(50), 18 + next(20), next(80));
        let sql = match next(5) {
            0 | 1 => format!(
                "INSERT INTO reg VALUES ({tenant}, {id}, 'r{email}@x', {age}) \
                 ON CONFLICT (tenant, id) DO UPDATE SET age = excluded.age, email = excluded.email"
            ),
            2 => format!("UPDATE reg SET age = age + 1 WHERE tenant = {tenant} AND id = {id}"),
            3 => format!(
                "UPDATE reg SET id = {} WHERE tenant = {tenant} AND id = {id}",
                next(50)
            ),
            _ => format!("DELETE FROM reg WHERE tenant = {tenant} AND age = {age}"),
        };
        match run(&mut session, &sql).await {
            Ok(()) => {
                let _ = writeln!(stdout, "ack");
                let _ = stdout.flush();
            }
            // A duplicate email or key: the statement wrote nothing.
            Err(planner::Error::UniqueViolation { .. }) => {}
            Err(e) => {
                eprintln!("{sql}: {e}");
                std::process::exit(1);
            }
        }
    }
}
