//! psql 15's describe commands against the real server: `\d`, `\dt`, `\di`, `\dm`, `\d table`
//! (columns, defaults, NOT NULL, the primary key with its partition key, indexes local and
//! global), `\d index`, `\d+ view`, `\l`, `\dn`, `\du`, and the `+` forms with sizes. psql runs its own catalog queries, so
//! this checks pg_catalog as psql reads it, output against output.

use std::process::Command;
use tests::server::TestServer;

fn psql_binary() -> String {
    let debian = "/usr/lib/postgresql/15/bin/psql";
    if std::path::Path::new(debian).exists() {
        debian.to_string()
    } else {
        "psql".to_string()
    }
}

fn psql(server: &TestServer, command: &str) -> String {
    let out = Command::new(psql_binary())
        .args(["-X", "-P", "pager=off", "-h"])
        .arg(server.addr.ip().to_string())
        .arg("-p")
        .arg(server.addr.port().to_string())
        .args(["-U", "partita", "-d", "partita", "-c", command])
        .output()
        .expect("psql 15 must be installed (.ci/run installs postgresql-15)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("ERROR"),
        "{command}: {stderr}"
    );
    // psql reports "Did not find any relations." on stderr.
    format!("{}{stderr}", String::from_utf8_lossy(&out.stdout))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_commands() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE registrations (tenant int, id int, name varchar(40) NOT NULL, \
               age int, fee numeric(6,2) DEFAULT 25.00, PRIMARY KEY ((tenant) HASH, id DESC));
             CREATE INDEX reg_by_age ON registrations (age) INCLUDE (name);
             CREATE UNIQUE INDEX reg_tenant_name ON registrations (tenant, name);
             CREATE MATERIALIZED VIEW adults WITH (primary_key = '((age), tenant, id)') AS
               SELECT age, tenant, id, name FROM registrations WHERE age >= 18;
             CREATE TABLE notes (body text);",
        )
        .await
        .unwrap();

    let commands = [
        r"\d",
        r"\dt",
        r"\di",
        r"\dm",
        r"\dv",
        r"\dt+",
        r"\di+",
        r"\dm+",
        r"\d registrations",
        r"\d+ registrations",
        r"\d reg_by_age",
        r"\d registrations_pkey",
        r"\d+ adults",
        r"\d notes",
        r"\l",
        r"\l+",
        r"\dn",
        r"\du",
    ];
    let mut actual = String::new();
    for command in commands {
        actual.push_str(&format!("=== {command}\n{}", psql(&server, command)));
    }
    // The expected transcript, checked against PostgreSQL's own layout by eye when written;
    // PSQL_BLESS=1 rewrites it from the server's output.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("psql/describe.out");
    if std::env::var_os("PSQL_BLESS").is_some() {
        std::fs::write(&path, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap();
    assert!(
        actual == expected,
        "psql output differs from {}:\n{actual}",
        path.display()
    );
}

/// The size functions behind `\dt+`: a table's and its index tables' bytes grow with their
/// rows; the primary key has no storage of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relation_sizes() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE r (tenant int, id int, name text, PRIMARY KEY ((tenant), id));
             CREATE INDEX r_by_name ON r (name);",
        )
        .await
        .unwrap();
    let sizes = "SELECT pg_table_size('r'), pg_indexes_size('r'), pg_total_relation_size('r'), \
                 pg_relation_size('r_pkey'), pg_database_size('partita')";
    let empty = client.query_one(sizes, &[]).await.unwrap();
    assert_eq!(empty.get::<_, i64>(0), 0);
    client
        .batch_execute(
            "INSERT INTO r SELECT g % 10, g, 'name ' || g FROM generate_series(1, 2000) g",
        )
        .await
        .unwrap();
    let full = client.query_one(sizes, &[]).await.unwrap();
    let (table, indexes, total) = (
        full.get::<_, i64>(0),
        full.get::<_, i64>(1),
        full.get::<_, i64>(2),
    );
    assert!(
        table > 2000 * 10 && indexes > 2000 * 10,
        "{table} {indexes}"
    );
    assert_eq!(total, table + indexes);
    assert_eq!(full.get::<_, i64>(3), 0);
    assert!(full.get::<_, i64>(4) >= total);
    let pretty = client
        .query_one(
            "SELECT pg_size_pretty(10239::bigint), pg_size_pretty(10240::bigint), \
                    pg_size_pretty(20971007::bigint), pg_size_pretty(-123456789012::bigint)",
            &[],
        )
        .await
        .unwrap();
    // PostgreSQL 15's own answers.
    let pretty: Vec<String> = (0..4).map(|i| pretty.get(i)).collect();
    assert_eq!(pretty, ["10239 bytes", "10 kB", "20 MB", "-115 GB"]);
}
