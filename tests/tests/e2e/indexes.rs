//! Index tables and views under concurrency: several sessions insert, update (indexed
//! columns and keys), delete and upsert, in transactions that conflict and roll back, while
//! another session creates indexes (one over expressions); afterwards `partita_check`
//! finds every index and the materialized view exact.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tests::server::TestServer;

/// SQLSTATEs a random workload may meet: conflicts, unique violations (on the unique index
/// or the key), and 25P02 after one of those inside a transaction.
const EXPECTED: &[&str] = &["40001", "23505", "25P02"];

fn expected(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|c| EXPECTED.contains(&c.code()))
}

async fn worker(client: tokio_postgres::Client, seed: u64, ops: usize) -> usize {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut failures = 0;
    for _ in 0..ops {
        let tenant = rng.random_range(0..4);
        let id = rng.random_range(0..40);
        let age = rng.random_range(18..30);
        let email = format!("r{}@x", rng.random_range(0..60));
        let statement = match rng.random_range(0..6) {
            0 | 1 => format!(
                "INSERT INTO reg VALUES ({tenant}, {id}, '{email}', {age}) \
                 ON CONFLICT (tenant, id) DO UPDATE SET age = excluded.age, email = excluded.email"
            ),
            2 => format!("UPDATE reg SET age = age + 1 WHERE tenant = {tenant} AND id = {id}"),
            3 => format!(
                "UPDATE reg SET id = {} WHERE tenant = {tenant} AND id = {id}",
                rng.random_range(0..40)
            ),
            4 => format!("DELETE FROM reg WHERE tenant = {tenant} AND age = {age}"),
            _ => format!("UPDATE reg SET email = NULL WHERE tenant = {tenant} AND id < {id}"),
        };
        let in_block = rng.random_bool(0.3);
        let result = if in_block {
            let finish = if rng.random_bool(0.3) {
                "ROLLBACK"
            } else {
                "COMMIT"
            };
            let r = client
                .batch_execute(&format!("BEGIN; {statement}; {statement}"))
                .await;
            let end = client.batch_execute(finish).await;
            r.and(end)
        } else {
            client.batch_execute(&statement).await
        };
        if let Err(e) = result {
            assert!(expected(&e), "{statement}: {e:?}");
            failures += 1;
            let _ = client.batch_execute("ROLLBACK").await;
        }
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_keep_every_index_exact() {
    let seed: u64 = std::env::var("INDEX_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("INDEX_SEED={seed}");
    let server = TestServer::start();
    let setup = server.connect().await;
    setup
        .batch_execute(
            "CREATE TABLE reg (tenant int, id int, email text, age int, PRIMARY KEY ((tenant), id));
             CREATE INDEX reg_by_age ON reg (age) INCLUDE (email);
             CREATE UNIQUE INDEX reg_by_email ON reg (email);
             CREATE UNIQUE INDEX reg_by_lower_email ON reg (lower(email));
             CREATE MATERIALIZED VIEW reg_young WITH (primary_key = '((age), tenant, id)') \
               AS SELECT age, tenant, id, email FROM reg WHERE age < 24;",
        )
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for w in 0..4u64 {
        let client = server.connect().await;
        tasks.push(tokio::spawn(worker(client, seed.wrapping_add(w), 150)));
    }
    // Indexes created while the others write: their backfill (and for an expression, its
    // values stored in every row) and the others' writes must agree.
    let creator = server.connect().await;
    let create = tokio::spawn(async move {
        let mut created = 0;
        for (delay, index) in [
            (300, "CREATE INDEX reg_local ON reg (tenant, age DESC)"),
            (
                200,
                "CREATE INDEX reg_expr ON reg (upper(email), (age + tenant))",
            ),
        ] {
            tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
            for _ in 0..20 {
                match creator.batch_execute(index).await {
                    Ok(()) => {
                        created += 1;
                        break;
                    }
                    Err(e) if expected(&e) => continue,
                    Err(e) => panic!("{index}: {e:?}"),
                }
            }
        }
        created == 2
    });
    let mut failures = 0;
    for t in tasks {
        failures += t.await.unwrap();
    }
    assert!(create.await.unwrap(), "CREATE INDEX kept conflicting");
    println!("{failures} statements failed with an expected SQLSTATE");
    let rows = setup
        .query("SELECT object, expected, missing, stray, different FROM partita_check('reg') ORDER BY object", &[])
        .await
        .unwrap();
    let report: Vec<(String, i64, i64, i64, i64)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
        .collect();
    assert_eq!(report.len(), 6, "{report:?}");
    for (object, expected, missing, stray, different) in &report {
        assert_eq!(
            (*missing, *stray, *different),
            (0, 0, 0),
            "{object}: {report:?} (seed {seed})"
        );
        assert!(*expected > 0, "{object} is empty: {report:?}");
    }
    // The unique index holds: no two rows share an email.
    let dup: i64 = setup
        .query_one(
            "SELECT count(*) FROM (SELECT email FROM reg WHERE email IS NOT NULL GROUP BY email HAVING count(*) > 1) d",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(dup, 0);
}

/// Two databases in one process whose views have the same keyspace number and different
/// conditions: each view keeps its own condition (they once shared a process-wide compiled
/// condition keyed by keyspace, and the second database's view took the first one's rows).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_of_two_databases_keep_their_own_conditions() {
    let mut counts = Vec::new();
    for condition in ["age < 24", "age >= 24"] {
        let server = TestServer::start();
        let client = server.connect().await;
        client
            .batch_execute(&format!(
                "CREATE TABLE reg (tenant int, id int, age int, PRIMARY KEY ((tenant), id));
                 CREATE MATERIALIZED VIEW reg_view WITH (primary_key = '((age), tenant, id)') \
                   AS SELECT age, tenant, id FROM reg WHERE {condition};
                 INSERT INTO reg SELECT 1, g, 18 + g % 10 FROM generate_series(1, 20) g;"
            ))
            .await
            .unwrap();
        let row = client
            .query_one(
                "SELECT expected, missing, stray FROM partita_check('reg') WHERE object = 'reg_view'",
                &[],
            )
            .await
            .unwrap();
        let (expected, missing, stray): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
        assert_eq!((missing, stray), (0, 0), "{condition}");
        let stored: i64 = client
            .query_one(
                &format!("SELECT count(*) FROM reg_view WHERE NOT ({condition})"),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            stored, 0,
            "{condition}: the view holds rows its condition rejects"
        );
        counts.push(expected);
    }
    assert_eq!(counts, vec![12, 8]);
}
