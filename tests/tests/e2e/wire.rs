//! The wire protocol as drivers use it: extended query with parameters (types inferred when the
//! client sends none), binary results, portal suspension, cancel, conflicts, restarts.

use std::time::Duration;
use tests::server::{ChildServer, TestServer};
use tokio_postgres::types::Type;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_with_inferred_parameter_types() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE reg (tenant int, id bigint, name text, score float8, PRIMARY KEY ((tenant), id))")
        .await
        .unwrap();
    let insert = client
        .prepare("INSERT INTO reg VALUES ($1, $2, $3, $4)")
        .await
        .unwrap();
    assert_eq!(
        insert.params(),
        &[Type::INT4, Type::INT8, Type::TEXT, Type::FLOAT8]
    );
    for id in 0..20i64 {
        client
            .execute(
                &insert,
                &[&1i32, &id, &format!("n{id}"), &(id as f64 / 4.0)],
            )
            .await
            .unwrap();
    }
    let select = client
        .prepare("SELECT id, name, score FROM reg WHERE tenant = $1 AND id >= $2 ORDER BY id")
        .await
        .unwrap();
    assert_eq!(select.params(), &[Type::INT4, Type::INT8]);
    assert_eq!(select.columns()[0].type_(), &Type::INT8);
    // tokio-postgres asks for binary results: every value below is decoded from binary.
    let rows = client.query(&select, &[&1i32, &17i64]).await.unwrap();
    let got: Vec<(i64, String, f64)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        got,
        vec![
            (17, "n17".into(), 4.25),
            (18, "n18".into(), 4.5),
            (19, "n19".into(), 4.75)
        ]
    );

    let update = client
        .prepare("UPDATE reg SET name = $1 WHERE tenant = $2 AND id = $3")
        .await
        .unwrap();
    assert_eq!(update.params(), &[Type::TEXT, Type::INT4, Type::INT8]);
    assert_eq!(
        client
            .execute(&update, &[&"renamed", &1i32, &3i64])
            .await
            .unwrap(),
        1
    );
    let name: String = client
        .query_one("SELECT name FROM reg WHERE tenant = 1 AND id = 3", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(name, "renamed");

    // Errors keep their SQLSTATE through the extended protocol, and the session stays usable.
    let err = client
        .execute(&insert, &[&1i32, &3i64, &"dup", &0.0f64])
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "23505");
    let n: i64 = client
        .query_one("SELECT count(*) FROM reg", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_results_for_every_type() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE t (id int PRIMARY KEY, b bool, s smallint, i bigint, r real, d double precision, \
             t text, v varchar(10), by bytea, dt date, ts timestamp, tz timestamptz, n numeric(10,3), u uuid);
             INSERT INTO t VALUES (1, true, -2, 9000000000, 1.5, -0.25, 'héllo', 'v', '\\x00ff', '2024-02-29', \
             '2024-02-29 10:11:12.5', '2024-02-29 10:11:12Z', 12345.678, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')",
        )
        .await
        .unwrap();
    let row = client
        .query_one(
            "SELECT b, s, i, r, d, t, v, by, n::text, u::text FROM t WHERE id = 1",
            &[],
        )
        .await
        .unwrap();
    assert!(row.get::<_, bool>(0));
    assert_eq!(row.get::<_, i16>(1), -2);
    assert_eq!(row.get::<_, i64>(2), 9_000_000_000);
    assert_eq!(row.get::<_, f32>(3), 1.5);
    assert_eq!(row.get::<_, f64>(4), -0.25);
    assert_eq!(row.get::<_, String>(5), "héllo");
    assert_eq!(row.get::<_, String>(6), "v");
    assert_eq!(row.get::<_, Vec<u8>>(7), vec![0u8, 255]);
    assert_eq!(row.get::<_, String>(8), "12345.678");
    assert_eq!(
        row.get::<_, String>(9),
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    );
    // Text results of the same row through the simple protocol.
    let messages = client
        .simple_query("SELECT dt, ts, tz, n FROM t")
        .await
        .unwrap();
    let tokio_postgres::SimpleQueryMessage::Row(r) = &messages[1] else {
        panic!("{messages:?}")
    };
    assert_eq!(r.get(0), Some("2024-02-29"));
    assert_eq!(r.get(1), Some("2024-02-29 10:11:12.5"));
    assert_eq!(r.get(2), Some("2024-02-29 10:11:12+00"));
    assert_eq!(r.get(3), Some("12345.678"));
}

/// Arrays and json as a driver binds them: `= ANY($1)` with an int4[] or text[] parameter
/// (its type inferred from the column when the client leaves it open), a jsonb parameter
/// and jsonb results in binary format.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn array_and_jsonb_parameters() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE docs (id int PRIMARY KEY, name text, doc jsonb);
             INSERT INTO docs VALUES (1, 'a', '{\"k\": 1}'), (2, 'b', '{\"k\": 2}'), (3, 'c', '[]')",
        )
        .await
        .unwrap();
    let by_ids = client
        .prepare("SELECT id FROM docs WHERE id = ANY($1) ORDER BY id")
        .await
        .unwrap();
    assert_eq!(by_ids.params()[0], tokio_postgres::types::Type::INT4_ARRAY);
    let ids: Vec<i32> = client
        .query(&by_ids, &[&vec![3i32, 1, 7]])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(ids, vec![1, 3]);
    let names: Vec<i32> = client
        .query(
            "SELECT id FROM docs WHERE name <> ALL($1) ORDER BY id",
            &[&vec!["a", "c"]],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(names, vec![2]);
    let found = client
        .query_one(
            "SELECT doc, doc -> 'k' FROM docs WHERE doc @> $1::jsonb",
            &[&serde_json::json!({"k": 2})],
        )
        .await
        .unwrap();
    assert_eq!(
        found.get::<_, serde_json::Value>(0),
        serde_json::json!({"k": 2})
    );
    assert_eq!(found.get::<_, serde_json::Value>(1), serde_json::json!(2));
    let bad = client
        .query("SELECT id FROM docs WHERE id = ANY($1::int[])", &[&"{1,x}"])
        .await;
    assert!(bad.is_err(), "text that is no int[] is refused");
    // Rows from a JSON parameter: a bulk write in one statement.
    let written = client
        .execute(
            "INSERT INTO docs (id, name) SELECT id, name FROM jsonb_to_recordset($1) AS r(id int, name text)",
            &[&serde_json::json!([{"id": 4, "name": "d"}, {"id": 5, "name": null}])],
        )
        .await
        .unwrap();
    assert_eq!(written, 2);
    let names: Vec<Option<String>> = client
        .query("SELECT name FROM docs WHERE id >= 4 ORDER BY id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(names, [Some("d".to_string()), None]);
}

/// Array columns through a driver: parameters typed from the columns, sent and read back in
/// binary (tokio-postgres's `Vec<T>`), NULL elements, and the array operators over them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn array_columns_through_the_driver() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE post (id int PRIMARY KEY, tags text[], scores int[], refs uuid[], seen timestamptz[])",
        )
        .await
        .unwrap();
    let insert = client
        .prepare("INSERT INTO post VALUES ($1, $2, $3, $4, $5)")
        .await
        .unwrap();
    assert_eq!(
        insert.params(),
        &[
            Type::INT4,
            Type::TEXT_ARRAY,
            Type::INT4_ARRAY,
            Type::UUID_ARRAY,
            Type::TIMESTAMPTZ_ARRAY
        ]
    );
    let id = uuid::Uuid::parse_str("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").unwrap();
    let at = chrono::DateTime::parse_from_rfc3339("2024-02-29T10:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    client
        .execute(
            &insert,
            &[
                &1i32,
                &vec![Some("rust"), None, Some("a \"b\"")],
                &vec![3i32, 1],
                &vec![id],
                &vec![at],
            ],
        )
        .await
        .unwrap();
    client
        .execute(
            &insert,
            &[
                &2i32,
                &Vec::<String>::new(),
                &vec![7i32],
                &None::<Vec<uuid::Uuid>>,
                &vec![at],
            ],
        )
        .await
        .unwrap();
    let row = client
        .query_one(
            "SELECT tags, scores, refs, seen FROM post WHERE id = 1",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        row.get::<_, Vec<Option<String>>>(0),
        [Some("rust".to_string()), None, Some("a \"b\"".to_string())]
    );
    assert_eq!(row.get::<_, Vec<i32>>(1), [3, 1]);
    assert_eq!(row.get::<_, Vec<uuid::Uuid>>(2), [id]);
    assert_eq!(row.get::<_, Vec<chrono::DateTime<chrono::Utc>>>(3), [at]);
    let text = client
        .simple_query("SELECT tags, refs FROM post WHERE id = 1")
        .await
        .unwrap();
    let tokio_postgres::SimpleQueryMessage::Row(text) = &text[1] else {
        panic!("expected a row, got {:?}", text[1]);
    };
    assert_eq!(text.get(0), Some(r#"{rust,NULL,"a \"b\""}"#));
    assert_eq!(text.get(1), Some("{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}"));
    let having = |sql: &'static str| {
        let client = &client;
        async move {
            client
                .query(sql, &[&"rust"])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get::<_, i32>(0))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        having("SELECT id FROM post WHERE $1 = ANY(tags)").await,
        [1]
    );
    assert_eq!(
        having("SELECT id FROM post WHERE tags @> ARRAY[$1] ORDER BY id").await,
        [1]
    );
    let updated = client
        .query_one(
            "UPDATE post SET tags = array_append(tags, $1) WHERE id = 2 RETURNING tags",
            &[&"new"],
        )
        .await
        .unwrap();
    assert_eq!(updated.get::<_, Vec<String>>(0), ["new"]);
    let bad = client
        .execute("INSERT INTO post (id, scores) VALUES (3, '{1,x}')", &[])
        .await
        .unwrap_err();
    assert_eq!(
        bad.code(),
        Some(&tokio_postgres::error::SqlState::INVALID_TEXT_REPRESENTATION)
    );
    // jsonb[]: binary elements (a version byte, then the text) both ways.
    client
        .batch_execute("CREATE TABLE feeds (id int PRIMARY KEY, docs jsonb[])")
        .await
        .unwrap();
    let docs = vec![
        serde_json::json!({"b": 2, "a": 1}),
        serde_json::json!([true]),
    ];
    client
        .execute("INSERT INTO feeds VALUES (1, $1)", &[&docs])
        .await
        .unwrap();
    let back = client
        .query_one("SELECT docs, docs[1]->>'a' FROM feeds", &[])
        .await
        .unwrap();
    assert_eq!(back.get::<_, Vec<serde_json::Value>>(0), docs);
    assert_eq!(back.get::<_, String>(1), "1");
    let malformed = client
        .execute("INSERT INTO post (id, tags) VALUES (3, '{a')", &[])
        .await
        .unwrap_err();
    assert_eq!(
        malformed.as_db_error().map(|e| e.message()),
        Some(r#"malformed array literal: "{a""#)
    );
}

/// EXPLAIN through the extended protocol is described as its one text column, not as
/// the columns of the query it explains (drivers refused the rows otherwise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_through_the_extended_protocol() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
        .await
        .unwrap();
    let explain = client
        .prepare("EXPLAIN SELECT k, v FROM t WHERE k = $1")
        .await
        .unwrap();
    assert_eq!(explain.params(), &[tokio_postgres::types::Type::INT4]);
    assert_eq!(explain.columns().len(), 1);
    assert_eq!(explain.columns()[0].name(), "QUERY PLAN");
    let lines: Vec<String> = client
        .query(&explain, &[&1i32])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(lines.iter().any(|l| l.contains("Point")), "{lines:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn portals_suspend_and_resume() {
    let server = TestServer::start();
    let mut client = server.connect().await;
    client.batch_execute("CREATE TABLE p (k int PRIMARY KEY); INSERT INTO p SELECT generate_series FROM generate_series(1, 25)").await.unwrap();
    let txn = client.transaction().await.unwrap();
    let stmt = txn.prepare("SELECT k FROM p ORDER BY k").await.unwrap();
    let portal = txn.bind(&stmt, &[]).await.unwrap();
    let mut seen = Vec::new();
    loop {
        let rows = txn.query_portal(&portal, 10).await.unwrap();
        if rows.is_empty() {
            break;
        }
        assert!(rows.len() <= 10);
        seen.extend(rows.iter().map(|r| r.get::<_, i32>(0)));
    }
    assert_eq!(seen, (1..=25).collect::<Vec<_>>());
    txn.commit().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_running_query_and_the_session_survives() {
    // In a process of its own, so its CPU use is measured apart from the other tests'.
    let server = ChildServer::start(env!("CARGO_BIN_EXE_tests-helper"), &[]);
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE big (k int PRIMARY KEY)")
        .await
        .unwrap();
    client
        .batch_execute("INSERT INTO big SELECT g FROM generate_series(1, 3000) g")
        .await
        .unwrap();
    let token = client.cancel_token();
    let canceler = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        token.cancel_query(tokio_postgres::NoTls).await.unwrap();
    });
    // A nested-loop join whose filter rejects every pair: hours of work, none of it
    // returning from DataFusion's poll until a whole probe batch is done.
    let err = client
        .simple_query("SELECT count(*) FROM big a, big b, big c WHERE a.k + b.k + c.k = -1")
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "57014", "{err}");
    canceler.await.unwrap();
    // The work itself stops, not just the answer: the server process goes quiet.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = server.cpu_seconds();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let busy = server.cpu_seconds() - before;
    // Runaway work would use 2-4 CPU-seconds here (two cores).
    assert!(busy < 1.0, "{busy:.2} s of CPU in the 2 s after the cancel");
    let n: i64 = client
        .query_one("SELECT count(*) FROM big", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 3000);
    // statement_timeout stops the same work, through the extended protocol too, and says so.
    client
        .batch_execute("SET statement_timeout = 300")
        .await
        .unwrap();
    let err = client
        .query(
            "SELECT count(*) FROM big a, big b, big c WHERE a.k + b.k + c.k = $1",
            &[&-1i32],
        )
        .await
        .unwrap_err();
    let db = err.as_db_error().expect("a server error");
    assert_eq!(db.code().code(), "57014");
    assert_eq!(db.message(), "canceling statement due to statement timeout");
    let shown = client.simple_query("SHOW statement_timeout").await.unwrap();
    let tokio_postgres::SimpleQueryMessage::Row(r) = &shown[1] else {
        panic!("{shown:?}")
    };
    assert_eq!(r.get(0), Some("300ms"));
    // SHOW ALL lists it too, among every parameter by name.
    let all = client.simple_query("SHOW ALL").await.unwrap();
    let rows: Vec<(String, String)> = all
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some((r.get(0)?.to_string(), r.get(1)?.to_string()))
            }
            _ => None,
        })
        .collect();
    assert!(
        rows.contains(&("statement_timeout".into(), "300ms".into())),
        "{rows:?}"
    );
    assert!(
        rows.contains(&("DateStyle".into(), "ISO, MDY".into())),
        "{rows:?}"
    );
    let names: Vec<String> = rows.iter().map(|(n, _)| n.to_lowercase()).collect();
    assert!(names.is_sorted(), "{names:?}");
    // Described as it is sent, through the extended protocol.
    let described = client.query("SHOW ALL", &[]).await.unwrap();
    assert!(
        described
            .iter()
            .any(|r| r.get::<_, &str>(0) == "statement_timeout" && r.get::<_, &str>(1) == "300ms")
    );
    // Work that reads no table (no scan of ours checks the interrupt) stops too.
    let started = std::time::Instant::now();
    let err = client
        .simple_query("SELECT count(*) FROM generate_series(1, 3000000000) g WHERE g % 7 = 3")
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "57014", "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let n: i64 = client
        .query_one("SELECT count(*) FROM big", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 3000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transactions_conflict_with_40001() {
    let server = TestServer::start();
    let a = server.connect().await;
    let b = server.connect().await;
    a.batch_execute(
        "CREATE TABLE acct (id int PRIMARY KEY, bal int); INSERT INTO acct VALUES (1, 10)",
    )
    .await
    .unwrap();
    a.batch_execute("BEGIN").await.unwrap();
    b.batch_execute("BEGIN").await.unwrap();
    a.batch_execute("UPDATE acct SET bal = bal + 1 WHERE id = 1")
        .await
        .unwrap();
    b.batch_execute("UPDATE acct SET bal = bal + 2 WHERE id = 1")
        .await
        .unwrap();
    a.batch_execute("COMMIT").await.unwrap();
    let err = b.batch_execute("COMMIT").await.unwrap_err();
    let db = err.as_db_error().unwrap();
    assert_eq!(db.code().code(), "40001");
    assert!(db.hint().unwrap_or_default().contains("retr"), "{db:?}");
    let bal: i32 = b
        .query_one("SELECT bal FROM acct WHERE id = 1", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(bal, 11);
}

/// Advisory locks, as migration tools take them: a second session waits for the first's
/// lock (extended protocol, a parameter for the key) and gets it when the first unlocks;
/// `pg_try_advisory_lock` does not wait; a transaction's lock ends with it, a session's
/// with the session; `lock_timeout` ends a wait with 55P03 and a cycle of waits is 40P01.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advisory_locks_wait_for_each_other() {
    let server = TestServer::start();
    let a = server.connect().await;
    let b = server.connect().await;
    let key = 72_707_369i64;
    a.query_one("SELECT pg_advisory_lock($1)", &[&key])
        .await
        .unwrap();
    let tried: bool = b
        .query_one("SELECT pg_try_advisory_lock(72707369)", &[])
        .await
        .unwrap()
        .get(0);
    assert!(!tried);
    let waiter = tokio::spawn(async move {
        let started = std::time::Instant::now();
        b.query_one("SELECT pg_advisory_lock($1)", &[&key])
            .await
            .unwrap();
        (b, started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "the second session must wait");
    let unlocked: bool = a
        .query_one("SELECT pg_advisory_unlock($1)", &[&key])
        .await
        .unwrap()
        .get(0);
    assert!(unlocked);
    let (b, waited) = waiter.await.unwrap();
    assert!(waited >= Duration::from_millis(250), "{waited:?}");
    // b holds it now: a cannot take it, a wait past lock_timeout is 55P03.
    a.batch_execute("SET lock_timeout = '100ms'").await.unwrap();
    let err = a
        .batch_execute("SELECT pg_advisory_lock(72707369)")
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "55P03");
    // A transaction-level lock ends with the transaction.
    b.batch_execute("SELECT pg_advisory_unlock_all(); BEGIN; SELECT pg_advisory_xact_lock(5)")
        .await
        .unwrap();
    let during: bool = a
        .query_one("SELECT pg_try_advisory_lock(5)", &[])
        .await
        .unwrap()
        .get(0);
    b.batch_execute("COMMIT").await.unwrap();
    let after: bool = a
        .query_one("SELECT pg_try_advisory_xact_lock(5)", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!((during, after), (false, true));
    // a holds 1, b holds 2; b waits for 1; a asking for 2 closes the cycle: 40P01.
    a.batch_execute("SET lock_timeout = 0; SELECT pg_advisory_lock(1)")
        .await
        .unwrap();
    b.batch_execute("SELECT pg_advisory_lock(2)").await.unwrap();
    let waiter = tokio::spawn(async move {
        b.batch_execute("SELECT pg_advisory_lock(1)").await.unwrap();
        b
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let err = a
        .batch_execute("SELECT pg_advisory_lock(2)")
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "40P01");
    // The session's end releases its locks: b's wait ends.
    drop(a);
    let b = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the wait ends with the session holding the lock")
        .unwrap();
    let held: bool = b
        .query_one("SELECT pg_advisory_unlock(1)", &[])
        .await
        .unwrap()
        .get(0);
    assert!(held);
}

/// A write inside WITH, prepared with parameters as drivers send it: described (its
/// parameters typed from the columns they go into, its rows from RETURNING) and run as one
/// transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_inside_with_over_the_extended_protocol() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE jobs (id bigint PRIMARY KEY, state text); \
             CREATE TABLE done (id bigint PRIMARY KEY, state text); \
             INSERT INTO jobs VALUES (1, 'new'), (2, 'new'), (3, 'new')",
        )
        .await
        .unwrap();
    let add = client
        .prepare("WITH n AS (INSERT INTO jobs VALUES ($1, $2) RETURNING id) SELECT id * 10 AS tens FROM n")
        .await
        .unwrap();
    assert_eq!(add.params(), &[Type::INT8, Type::TEXT]);
    assert_eq!(add.columns()[0].name(), "tens");
    let tens: i64 = client
        .query_one(&add, &[&4i64, &"new"])
        .await
        .unwrap()
        .get(0);
    assert_eq!(tens, 40);
    let finish = client
        .prepare(
            "WITH moved AS (DELETE FROM jobs WHERE id <= $1 RETURNING id, state) \
             INSERT INTO done SELECT id, 'finished' FROM moved",
        )
        .await
        .unwrap();
    assert_eq!(client.execute(&finish, &[&2i64]).await.unwrap(), 2);
    // A failing part undoes the others: 1 is in done already.
    let err = client
        .execute(
            "WITH moved AS (DELETE FROM jobs WHERE id = 3 RETURNING id) \
             INSERT INTO done SELECT 1, 'again' FROM moved",
            &[],
        )
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "23505");
    let left: Vec<i64> = client
        .query("SELECT id FROM jobs ORDER BY id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(left, vec![3, 4]);
}

/// `infinity` and `-infinity` dates and timestamps in binary, both ways: PostgreSQL sends
/// them as the extremes of the type, without the epoch offset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infinite_timestamps_in_binary() {
    use tokio_postgres::types::{Date, Timestamp};
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE spans (id int PRIMARY KEY, ends timestamptz, until date)")
        .await
        .unwrap();
    let insert = client
        .prepare("INSERT INTO spans VALUES ($1, $2, $3)")
        .await
        .unwrap();
    let never: Timestamp<chrono::DateTime<chrono::Utc>> = Timestamp::PosInfinity;
    let always: Date<chrono::NaiveDate> = Date::NegInfinity;
    client
        .execute(&insert, &[&1i32, &never, &always])
        .await
        .unwrap();
    let row = client
        .query_one(
            "SELECT ends, until, ends::text, until::text, '-infinity'::timestamp FROM spans",
            &[],
        )
        .await
        .unwrap();
    let ends: Timestamp<chrono::DateTime<chrono::Utc>> = row.get(0);
    let until: Date<chrono::NaiveDate> = row.get(1);
    let texts: (String, String) = (row.get(2), row.get(3));
    let minus: Timestamp<chrono::NaiveDateTime> = row.get(4);
    assert_eq!(ends, Timestamp::PosInfinity);
    assert_eq!(until, Date::NegInfinity);
    assert_eq!(texts, ("infinity".to_string(), "-infinity".to_string()));
    assert_eq!(minus, Timestamp::NegInfinity);
}

/// A foreign key check reads through the writing transaction: a child inserted against a
/// parent another transaction deletes meanwhile, or a parent deleted while another
/// transaction adds a child, fails at commit (40001) instead of leaving a dangling
/// reference.
#[tokio::test]
async fn foreign_key_checks_conflict_with_concurrent_writes() {
    let server = TestServer::start();
    let a = server.connect().await;
    let b = server.connect().await;
    a.batch_execute(
        "CREATE TABLE p (id int PRIMARY KEY); \
         CREATE TABLE c (id int PRIMARY KEY, pid int REFERENCES p); \
         INSERT INTO p VALUES (1), (2)",
    )
    .await
    .unwrap();
    let code = |e: tokio_postgres::Error| e.as_db_error().unwrap().code().code().to_string();

    // The child's transaction read parent 1, which B deletes (no child is visible to B).
    a.batch_execute("BEGIN; INSERT INTO c VALUES (10, 1)")
        .await
        .unwrap();
    b.batch_execute("DELETE FROM p WHERE id = 1").await.unwrap();
    assert_eq!(code(a.batch_execute("COMMIT").await.unwrap_err()), "40001");

    // The parent's transaction looked for children of 2, and B adds one.
    a.batch_execute("BEGIN; DELETE FROM p WHERE id = 2")
        .await
        .unwrap();
    b.batch_execute("INSERT INTO c VALUES (11, 2)")
        .await
        .unwrap();
    assert_eq!(code(a.batch_execute("COMMIT").await.unwrap_err()), "40001");

    let rows = a
        .query(
            "SELECT c.id, p.id FROM c LEFT JOIN p ON p.id = c.pid ORDER BY c.id",
            &[],
        )
        .await
        .unwrap();
    let pairs: Vec<(i32, Option<i32>)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(pairs, vec![(11, Some(2))]);
}

/// An autocommit write through the extended protocol commits at Sync; one that conflicts
/// there runs again on its own, as an autocommit statement is retried, so concurrent
/// increments of one row all land once and none fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicting_autocommit_writes_are_retried_at_sync() {
    let server = TestServer::start();
    let setup = server.connect().await;
    setup
        .batch_execute("CREATE TABLE counter (id int PRIMARY KEY, n int)")
        .await
        .unwrap();
    setup
        .batch_execute("INSERT INTO counter VALUES (1, 0)")
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let client = server.connect().await;
        tasks.push(tokio::spawn(async move {
            let add = client
                .prepare("UPDATE counter SET n = n + $1 WHERE id = 1")
                .await
                .unwrap();
            for _ in 0..50 {
                assert_eq!(client.execute(&add, &[&1i32]).await.unwrap(), 1);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let n: i32 = setup
        .query_one("SELECT n FROM counter WHERE id = 1", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 200);
}

/// A prepared range query keeps its plan across executions, yet every execution reads its
/// own snapshot, honours the current settings and sees schema changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_queries_keep_their_plan_and_see_new_data() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE ev (dev text, ts bigint, v int, PRIMARY KEY ((dev), ts));
             INSERT INTO ev VALUES ('a', 1, 10), ('a', 2, 20), ('b', 1, 30)",
        )
        .await
        .unwrap();
    let range = client
        .prepare("SELECT ts, v FROM ev WHERE dev = $1 AND ts >= $2 ORDER BY ts")
        .await
        .unwrap();
    let rows = |rows: Vec<tokio_postgres::Row>| -> Vec<(i64, i32)> {
        rows.iter().map(|r| (r.get(0), r.get(1))).collect()
    };
    let got = rows(client.query(&range, &[&"a", &1i64]).await.unwrap());
    assert_eq!(got, vec![(1, 10), (2, 20)]);
    client
        .batch_execute("INSERT INTO ev VALUES ('a', 3, 40)")
        .await
        .unwrap();
    let got = rows(client.query(&range, &[&"a", &2i64]).await.unwrap());
    assert_eq!(
        got,
        vec![(2, 20), (3, 40)],
        "a later execution reads a later snapshot"
    );
    // Inside a transaction: its own writes, and the scan-class guard of the moment.
    client
        .batch_execute("BEGIN; INSERT INTO ev VALUES ('a', 4, 50)")
        .await
        .unwrap();
    let got = rows(client.query(&range, &[&"a", &4i64]).await.unwrap());
    assert_eq!(got, vec![(4, 50)]);
    client.batch_execute("ROLLBACK").await.unwrap();
    let scan = client
        .prepare("SELECT count(*) FROM ev WHERE v > $1")
        .await
        .unwrap();
    let n: i64 = client.query_one(&scan, &[&0i32]).await.unwrap().get(0);
    assert_eq!(n, 4);
    client
        .batch_execute("SET partita.max_scan_class = row_range")
        .await
        .unwrap();
    let err = client.query_one(&scan, &[&0i32]).await.unwrap_err();
    assert_eq!(err.code().unwrap().code(), "54000", "{err}");
    client
        .batch_execute(
            "RESET partita.max_scan_class; DROP TABLE ev; \
                        CREATE TABLE ev (dev text, ts bigint, v int, PRIMARY KEY ((dev), ts)); \
                        INSERT INTO ev VALUES ('a', 9, 90)",
        )
        .await
        .unwrap();
    let got = rows(client.query(&range, &[&"a", &0i64]).await.unwrap());
    assert_eq!(
        got,
        vec![(9, 90)],
        "a new table of the same name is read, not the old one"
    );
}

/// A prepared point SELECT is recognised once and then read by key on each execution: it
/// must still see new rows, the transaction's own writes, a recreated table, and give
/// the general path's answer when a parameter does not fit the key column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_point_selects_follow_data_and_schema() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE reg (tenant text, id int, name text, PRIMARY KEY ((tenant), id));
             INSERT INTO reg VALUES ('t1', 1, 'ann'), ('t1', 2, 'bob')",
        )
        .await
        .unwrap();
    // Parameters in the opposite order from the key columns.
    let point = client
        .prepare("SELECT name, id FROM reg WHERE id = $2 AND tenant = $1")
        .await
        .unwrap();
    let name = |rows: Vec<tokio_postgres::Row>| -> Vec<String> {
        rows.iter().map(|r| r.get::<_, String>(0)).collect()
    };
    let get = |t: &'static str, id: i32| {
        let (client, point) = (&client, &point);
        async move { name(client.query(point, &[&t, &id]).await.unwrap()) }
    };
    assert_eq!(get("t1", 2).await, vec!["bob"]);
    assert_eq!(get("t1", 3).await, Vec::<String>::new());
    assert_eq!(get("t2", 1).await, Vec::<String>::new());
    client
        .batch_execute("INSERT INTO reg VALUES ('t1', 3, 'cy')")
        .await
        .unwrap();
    assert_eq!(get("t1", 3).await, vec!["cy"], "a new row is seen");
    client
        .batch_execute("BEGIN; UPDATE reg SET name = 'dee' WHERE tenant = 't1' AND id = 3")
        .await
        .unwrap();
    assert_eq!(
        get("t1", 3).await,
        vec!["dee"],
        "the transaction's own write"
    );
    let err = client.query("SELECT 1/0", &[]).await.unwrap_err();
    assert_eq!(err.code().unwrap().code(), "22012");
    let err = client.query(&point, &[&"t1", &3i32]).await.unwrap_err();
    assert_eq!(err.code().unwrap().code(), "25P02", "{err}");
    client.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        get("t1", 3).await,
        vec!["cy"],
        "the rolled-back write is gone"
    );
    // A bigint parameter against an int key: out of the column's range, no row matches.
    let wide = client
        .prepare_typed(
            "SELECT name FROM reg WHERE tenant = $1 AND id = $2",
            &[Type::TEXT, Type::INT8],
        )
        .await
        .unwrap();
    let rows = client.query(&wide, &[&"t1", &(1i64 << 40)]).await.unwrap();
    assert!(rows.is_empty());
    let rows = client.query(&wide, &[&"t1", &1i64]).await.unwrap();
    assert_eq!(name(rows), vec!["ann"]);
    // The partition key alone: the partition's rows in key order, or its reverse.
    for (sql, want) in [
        (
            "SELECT name FROM reg WHERE tenant = $1 ORDER BY id",
            vec!["ann", "bob", "cy"],
        ),
        (
            "SELECT name FROM reg WHERE tenant = $1 ORDER BY id DESC",
            vec!["cy", "bob", "ann"],
        ),
    ] {
        let scan = client.prepare(sql).await.unwrap();
        for _ in 0..2 {
            let rows = client.query(&scan, &[&"t1"]).await.unwrap();
            assert_eq!(name(rows), want, "{sql}");
        }
        let rows = client.query(&scan, &[&"t2"]).await.unwrap();
        assert!(rows.is_empty(), "{sql}");
    }
    client
        .batch_execute("SET partita.max_scan_class = 'point'")
        .await
        .unwrap();
    let scan = client
        .prepare("SELECT name FROM reg WHERE tenant = $1 ORDER BY id")
        .await
        .unwrap();
    let err = client.query(&scan, &[&"t1"]).await.unwrap_err();
    assert_eq!(err.code().unwrap().code(), "54000", "{err}");
    client
        .batch_execute("RESET partita.max_scan_class")
        .await
        .unwrap();
    // The same name over a table keyed the other way round.
    client
        .batch_execute(
            "DROP TABLE reg; CREATE TABLE reg (id int, tenant text, name text, PRIMARY KEY ((id), tenant));
             INSERT INTO reg VALUES (2, 't1', 'eve')",
        )
        .await
        .unwrap();
    assert_eq!(
        get("t1", 2).await,
        vec!["eve"],
        "the recreated table is read"
    );
    // A column of another type: the statement was described with int4 rows, so running it
    // is refused (0A000, as in PostgreSQL) until the client prepares it again.
    client
        .batch_execute("ALTER TABLE reg ALTER COLUMN id TYPE bigint")
        .await
        .unwrap();
    let err = client.query(&point, &[&"t1", &2i32]).await.unwrap_err();
    assert_eq!(err.code().unwrap().code(), "0A000", "{err}");
    assert!(
        format!("{err:?}").contains("cached plan must not change result type"),
        "{err:?}"
    );
    let again = client
        .prepare("SELECT name, id FROM reg WHERE id = $2 AND tenant = $1")
        .await
        .unwrap();
    let row = client.query_one(&again, &[&"t1", &2i64]).await.unwrap();
    assert_eq!(
        (row.get::<_, String>(0), row.get::<_, i64>(1)),
        ("eve".into(), 2)
    );
}

/// Two sessions creating one table at once: one succeeds, the other gets 42P07 as in
/// PostgreSQL (its implicit transaction is retried and then finds the table).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_create_table_gives_42p07() {
    let server = TestServer::start();
    let a = server.connect().await;
    let b = server.connect().await;
    for round in 0..10 {
        let sql = format!("CREATE TABLE race{round} (k int PRIMARY KEY)");
        let (ra, rb) = tokio::join!(a.batch_execute(&sql), b.batch_execute(&sql));
        let codes: Vec<String> = [ra, rb]
            .into_iter()
            .filter_map(|r| r.err())
            .map(|e| e.code().map(|c| c.code().to_string()).unwrap_or_default())
            .collect();
        assert_eq!(codes, vec!["42P07".to_string()], "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn syntax_errors_carry_their_position() {
    use tokio_postgres::error::ErrorPosition;
    let server = TestServer::start();
    let client = server.connect().await;
    // Counted in characters of the whole query text, from 1, as PostgreSQL counts (psql
    // draws its caret from it): simple query, several statements and lines, extended Parse.
    let position = |e: tokio_postgres::Error| {
        let db = e.as_db_error().cloned().expect("a server error");
        (db.code().code().to_string(), db.position().cloned())
    };
    let e = client
        .batch_execute("SELECT 1;\nSELECT 'é' AS x FRM t")
        .await
        .unwrap_err();
    assert_eq!(
        position(e),
        ("42601".into(), Some(ErrorPosition::Original(27)))
    );
    let e = client
        .prepare("SELECT a FROM t WHER a = 1")
        .await
        .unwrap_err();
    assert_eq!(
        position(e),
        ("42601".into(), Some(ErrorPosition::Original(22)))
    );
    // At the end of the input: just after its last character.
    let e = client.batch_execute("SELECT 1 +").await.unwrap_err();
    assert_eq!(
        position(e),
        ("42601".into(), Some(ErrorPosition::Original(11)))
    );
    client.batch_execute("SELECT 1").await.unwrap();
    // Inside a transaction block a statement that does not parse fails the block, through
    // Parse as through a simple query.
    client.batch_execute("BEGIN").await.unwrap();
    let e = client.prepare("SELEC 1").await.unwrap_err();
    assert_eq!(position(e).0, "42601");
    let e = client.query("SELECT 1", &[]).await.unwrap_err();
    assert_eq!(position(e).0, "25P02");
    client.batch_execute("ROLLBACK").await.unwrap();
    client.query("SELECT 1", &[]).await.unwrap();
}

/// Temporary tables are their session's: another session does not find them and may make
/// its own of the same name; a temporary and a permanent table never share a name (42P07
/// either way, where PostgreSQL lets the temporary one shadow the other); and they are gone
/// when their session ends (here, at shutdown) and after a crash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_tables_belong_to_their_session() {
    use tokio_postgres::error::SqlState;
    let mut server = TestServer::start();
    let a = server.connect().await;
    let b = server.connect().await;
    a.batch_execute(
        "CREATE TABLE shared (k int PRIMARY KEY); INSERT INTO shared VALUES (1); \
         CREATE TEMP TABLE stage (k int PRIMARY KEY, v text); INSERT INTO stage VALUES (1, 'a')",
    )
    .await
    .unwrap();
    let err = b.simple_query("SELECT * FROM stage").await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::UNDEFINED_TABLE));
    // Neither kind takes the other's name, nor its indexes' names.
    for (client, sql) in [
        (&a, "CREATE TEMP TABLE shared (note text)"),
        (&b, "CREATE TABLE stage (k int)"),
        (
            &b,
            "CREATE TABLE pk (k int CONSTRAINT stage_pkey PRIMARY KEY)",
        ),
        (&a, "ALTER TABLE stage RENAME TO shared"),
    ] {
        let err = client.simple_query(sql).await.unwrap_err();
        assert_eq!(err.code(), Some(&SqlState::DUPLICATE_TABLE), "{sql}");
    }
    b.batch_execute("CREATE TEMP TABLE stage (other int); INSERT INTO stage VALUES (7)")
        .await
        .unwrap();
    let other: i32 = b
        .query_one("SELECT other FROM stage", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(other, 7);
    let v: String = a
        .query_one("SELECT v FROM stage", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, "a");
    let k: i32 = b
        .query_one("SELECT k FROM shared", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(k, 1);
    drop((a, b));
    server.stop();
    // The sessions dropped them as they ended: the store holds none.
    assert_eq!(
        tests::server::stored_temporary_tables(&server.data_dir),
        Vec::<String>::new()
    );
    drop(server);

    // A crash leaves them in the store; opening it drops them.
    let crashed = ChildServer::start(env!("CARGO_BIN_EXE_tests-helper"), &[]);
    let client = crashed.connect().await;
    client
        .batch_execute("CREATE TEMP TABLE left_behind (a int); INSERT INTO left_behind VALUES (1)")
        .await
        .unwrap();
    let dir = crashed.kill();
    assert_eq!(
        tests::server::stored_temporary_tables(dir.path()),
        vec!["left_behind".to_string()]
    );
    drop(tests::server::open_database(dir.path()));
    assert_eq!(
        tests::server::stored_temporary_tables(dir.path()),
        Vec::<String>::new()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_a_restart() {
    let mut server = TestServer::start();
    {
        let client = server.connect().await;
        client
            .batch_execute("CREATE TABLE keep (k text PRIMARY KEY, v int); INSERT INTO keep VALUES ('a', 1), ('b', 2)")
            .await
            .unwrap();
        // A changed column type rewrites the rows into fresh keyspaces: they are what stays.
        client
            .batch_execute(
                "CREATE INDEX keep_v ON keep (v); \
                 ALTER TABLE keep ALTER COLUMN v TYPE bigint USING v * 10",
            )
            .await
            .unwrap();
        client
            .batch_execute(
                "CREATE TABLE serials (id serial PRIMARY KEY, v text); \
                 INSERT INTO serials (v) VALUES ('one'), ('two')",
            )
            .await
            .unwrap();
        // A sequence made by CREATE SEQUENCE keeps its options and its place.
        client
            .batch_execute(
                "CREATE SEQUENCE tickets START 100 INCREMENT BY 10; \
                 SELECT nextval('tickets'); SELECT nextval('tickets')",
            )
            .await
            .unwrap();
        // An enum type, a value added to it, and an array column keep their definitions.
        client
            .batch_execute(
                "CREATE TYPE mood AS ENUM ('sad', 'happy'); \
                 CREATE TABLE moods (id int PRIMARY KEY, m mood, tags text[]); \
                 ALTER TYPE mood ADD VALUE 'ok' BEFORE 'happy'; \
                 INSERT INTO moods VALUES (1, 'ok', '{a,\"b c\"}')",
            )
            .await
            .unwrap();
        // An extension stays installed.
        client
            .batch_execute("CREATE EXTENSION \"uuid-ossp\"")
            .await
            .unwrap();
    }
    server.stop();
    let again = TestServer::start_in(server.data_dir.clone());
    let client = again.connect().await;
    let rows = client
        .query("SELECT k, v FROM keep ORDER BY k", &[])
        .await
        .unwrap();
    let got: Vec<(String, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, vec![("a".into(), 10), ("b".into(), 20)]);
    let by_index = client
        .query_one("SELECT k FROM keep WHERE v = 20", &[])
        .await
        .unwrap();
    assert_eq!(by_index.get::<_, String>(0), "b");
    // A serial column goes on after a restart and never hands out a value twice (a
    // restart may skip the values reserved and not used, as PostgreSQL's sequences may).
    let ids: Vec<i32> = client
        .query("INSERT INTO serials (v) VALUES ('three') RETURNING id", &[])
        .await
        .unwrap()
        .iter()
        .chain(
            client
                .query("SELECT id FROM serials WHERE id < 3 ORDER BY id", &[])
                .await
                .unwrap()
                .iter(),
        )
        .map(|r| r.get(0))
        .collect();
    assert!(
        ids[0] > 2,
        "a value after the two before the restart: {ids:?}"
    );
    assert_eq!(ids[1..], [1, 2]);
    let row = client
        .query_one(
            "SELECT nextval('tickets'), increment_by FROM pg_sequences WHERE sequencename = 'tickets'",
            &[],
        )
        .await
        .unwrap();
    let (next, increment): (i64, i64) = (row.get(0), row.get(1));
    assert_eq!(increment, 10);
    client
        .batch_execute("INSERT INTO moods VALUES (2, 'happy', ARRAY['x'])")
        .await
        .unwrap();
    let moods = client
        .query("SELECT m::text, tags FROM moods ORDER BY id", &[])
        .await
        .unwrap();
    let moods: Vec<(String, Vec<String>)> = moods.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        moods,
        [
            ("ok".to_string(), vec!["a".to_string(), "b c".to_string()]),
            ("happy".to_string(), vec!["x".to_string()])
        ]
    );
    let labels: Vec<String> = client
        .query(
            "SELECT enumlabel::text FROM pg_enum ORDER BY enumsortorder",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(labels, ["sad", "ok", "happy"]);
    let bad = client
        .execute("INSERT INTO moods VALUES (3, 'meh', NULL)", &[])
        .await
        .unwrap_err();
    assert_eq!(
        bad.as_db_error().map(|e| e.message()),
        Some(r#"invalid input value for enum mood: "meh""#)
    );
    assert!(
        next > 110 && (next - 100) % 10 == 0,
        "a value after 110 on the sequence's steps: {next}"
    );
    let extensions: Vec<String> = client
        .query("SELECT extname::text FROM pg_extension ORDER BY 1", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(extensions, ["plpgsql", "uuid-ossp"]);
    let again = client
        .batch_execute("CREATE EXTENSION \"uuid-ossp\"")
        .await
        .unwrap_err();
    assert_eq!(again.code().unwrap().code(), "42710");
}

/// `numeric` in PostgreSQL's binary format (base-10000 digits), decoded to text and encoded
/// from text: tokio-postgres has no numeric type of its own.
#[derive(Debug, PartialEq)]
struct Numeric(String);

impl<'a> postgres_types::FromSql<'a> for Numeric {
    fn from_sql(
        _: &postgres_types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let word = |i: usize| i16::from_be_bytes([raw[2 * i], raw[2 * i + 1]]);
        let (ndigits, weight, sign, dscale) = (word(0), word(1), word(2) as u16, word(3));
        let digits: Vec<i16> = (0..ndigits as usize).map(|i| word(4 + i)).collect();
        let mut int = String::new();
        for w in 0..=weight.max(0) {
            let d = digits.get(w as usize).copied().unwrap_or(0);
            if int.is_empty() {
                int = d.to_string()
            } else {
                int.push_str(&format!("{d:04}"))
            }
        }
        if weight < 0 {
            int = "0".into();
        }
        let mut frac = String::new();
        for i in 0..(dscale as usize).div_ceil(4) {
            let pos = weight as i32 + 1 + i as i32;
            let d = if pos >= 0 {
                digits.get(pos as usize).copied().unwrap_or(0)
            } else {
                0
            };
            frac.push_str(&format!("{d:04}"));
        }
        frac.truncate(dscale as usize);
        let sign = if sign == 0x4000 { "-" } else { "" };
        Ok(Numeric(if frac.is_empty() {
            format!("{sign}{int}")
        } else {
            format!("{sign}{int}.{frac}")
        }))
    }

    fn accepts(ty: &postgres_types::Type) -> bool {
        *ty == postgres_types::Type::NUMERIC
    }
}

impl postgres_types::ToSql for Numeric {
    fn to_sql(
        &self,
        _: &postgres_types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres_types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use bytes::BufMut;
        let (sign, text) = match self.0.strip_prefix('-') {
            Some(t) => (0x4000u16, t),
            None => (0, self.0.as_str()),
        };
        let (int, frac) = text.split_once('.').unwrap_or((text, ""));
        let pad_int = format!("{}{int}", "0".repeat((4 - int.len() % 4) % 4));
        let pad_frac = format!("{frac}{}", "0".repeat((4 - frac.len() % 4) % 4));
        let mut digits: Vec<i16> = pad_int
            .as_bytes()
            .chunks(4)
            .chain(pad_frac.as_bytes().chunks(4))
            .map(|c| std::str::from_utf8(c).unwrap().parse().unwrap())
            .collect();
        let mut weight = (pad_int.len() / 4) as i16 - 1;
        while digits.first() == Some(&0) && weight > 0 {
            digits.remove(0);
            weight -= 1;
        }
        out.put_i16(digits.len() as i16);
        out.put_i16(weight);
        out.put_u16(sign);
        out.put_i16(frac.len() as i16);
        for d in digits {
            out.put_i16(d);
        }
        Ok(postgres_types::IsNull::No)
    }

    fn accepts(ty: &postgres_types::Type) -> bool {
        *ty == postgres_types::Type::NUMERIC
    }

    postgres_types::to_sql_checked!();
}

/// Every stored type as a binary parameter and back as a binary result, compared with the
/// value sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_parameters_and_results_for_every_type() {
    use chrono::{NaiveDate, TimeZone, Utc};
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE every (id int PRIMARY KEY, b bool, s smallint, i int, l bigint, r real, \
             d double precision, n numeric(12,4), t text, v varchar(10), c char(3), by bytea, \
             dt date, ts timestamp, tz timestamptz, u uuid, j json, jb jsonb)",
        )
        .await
        .unwrap();
    let date = NaiveDate::from_ymd_opt(2024, 2, 29).unwrap();
    let ts = date.and_hms_micro_opt(10, 11, 12, 500_000).unwrap();
    let tz = Utc.with_ymd_and_hms(1999, 12, 31, 23, 59, 59).unwrap();
    let u = uuid::Uuid::parse_str("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").unwrap();
    let j = serde_json::json!({"a": [1, 2, {"b": null}]});
    let n = Numeric("-12345.0625".into());
    client
        .execute(
            "INSERT INTO every VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
            &[
                &1i32, &true, &-2i16, &7i32, &9_000_000_000i64, &1.5f32, &-0.25f64, &n,
                &"héllo", &"v", &"abc", &vec![0u8, 255], &date, &ts, &tz, &u, &j, &j,
            ],
        )
        .await
        .unwrap();
    let row = client
        .query_one("SELECT * FROM every WHERE id = $1", &[&1i32])
        .await
        .unwrap();
    assert!(row.get::<_, bool>(1));
    assert_eq!(row.get::<_, i16>(2), -2);
    assert_eq!(row.get::<_, i32>(3), 7);
    assert_eq!(row.get::<_, i64>(4), 9_000_000_000);
    assert_eq!(row.get::<_, f32>(5), 1.5);
    assert_eq!(row.get::<_, f64>(6), -0.25);
    assert_eq!(row.get::<_, Numeric>(7), n);
    assert_eq!(row.get::<_, String>(8), "héllo");
    assert_eq!(row.get::<_, String>(9), "v");
    assert_eq!(row.get::<_, String>(10), "abc");
    assert_eq!(row.get::<_, Vec<u8>>(11), vec![0u8, 255]);
    assert_eq!(row.get::<_, NaiveDate>(12), date);
    assert_eq!(row.get::<_, chrono::NaiveDateTime>(13), ts);
    assert_eq!(row.get::<_, chrono::DateTime<Utc>>(14), tz);
    assert_eq!(row.get::<_, uuid::Uuid>(15), u);
    assert_eq!(row.get::<_, serde_json::Value>(16), j);
    assert_eq!(row.get::<_, serde_json::Value>(17), j);
    // NULL of every type.
    client
        .execute("INSERT INTO every (id) VALUES (2)", &[])
        .await
        .unwrap();
    let row = client
        .query_one("SELECT * FROM every WHERE id = 2", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<bool>>(1), None);
    assert_eq!(row.get::<_, Option<i64>>(4), None);
    assert_eq!(row.get::<_, Option<Numeric>>(7), None);
    assert_eq!(row.get::<_, Option<String>>(8), None);
    assert_eq!(row.get::<_, Option<NaiveDate>>(12), None);
    assert_eq!(row.get::<_, Option<chrono::DateTime<Utc>>>(14), None);
    assert_eq!(row.get::<_, Option<uuid::Uuid>>(15), None);
    assert_eq!(row.get::<_, Option<serde_json::Value>>(17), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn constraint_errors_name_their_table_column_and_constraint() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE p (id int PRIMARY KEY, name text NOT NULL, n int CHECK (n > 0));
             CREATE TABLE c (id int PRIMARY KEY, pid int REFERENCES p (id));
             INSERT INTO p VALUES (1, 'a', 1);",
        )
        .await
        .unwrap();
    let fields = |sql: &'static str| {
        let client = &client;
        async move {
            let err = client.batch_execute(sql).await.unwrap_err();
            let db = err.as_db_error().cloned().expect("a server error");
            (
                db.code().code().to_string(),
                db.schema().map(String::from),
                db.table().map(String::from),
                db.column().map(String::from),
                db.constraint().map(String::from),
                db.detail().map(String::from),
            )
        }
    };
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        fields("INSERT INTO p (id, n) VALUES (2, 5)").await,
        (
            "23502".into(),
            some("public"),
            some("p"),
            some("name"),
            None,
            some("Failing row contains (2, null, 5).")
        )
    );
    assert_eq!(
        fields("INSERT INTO p VALUES (1, 'b', 1)").await,
        (
            "23505".into(),
            some("public"),
            some("p"),
            None,
            some("p_pkey"),
            some("Key (id)=(1) already exists.")
        )
    );
    assert_eq!(fields("UPDATE p SET n = 0").await.4, some("p_n_check"));
    let fk = fields("INSERT INTO c VALUES (1, 9)").await;
    assert_eq!(
        (fk.0, fk.2, fk.4),
        ("23503".into(), some("c"), some("c_pid_fkey"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interval_literals_in_writes_over_the_extended_protocol() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE sessions (id int PRIMARY KEY, seen timestamptz);
             INSERT INTO sessions VALUES (1, now()), (2, now() - interval '40 days');",
        )
        .await
        .unwrap();
    // Described before they run: the statement is read back from its text with its
    // interval already read.
    let touched = client
        .execute(
            "UPDATE sessions SET seen = seen + interval '1 hour' WHERE id = $1",
            &[&1i32],
        )
        .await
        .unwrap();
    assert_eq!(touched, 1);
    let expired = client
        .execute(
            "DELETE FROM sessions WHERE seen < now() - interval '30 days'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(expired, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parameter_compared_with_columns_of_two_types() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE codes (id int PRIMARY KEY, name text, code varchar(20));
             INSERT INTO codes VALUES (1, 'B2', 'x'), (2, 'y', 'B2'), (3, 'z', 'z');",
        )
        .await
        .unwrap();
    // Run twice: the second run may use the statement's kept plan.
    for _ in 0..2 {
        let rows = client
            .query(
                "SELECT id FROM codes WHERE name = $1 OR code = $1 ORDER BY id",
                &[&"B2"],
            )
            .await
            .unwrap();
        let ids: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
        assert_eq!(ids, [1, 2]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_is_named_by_its_startup_user_and_database() {
    let server = TestServer::start();
    let connect = |names: &'static str| {
        let conn = format!(
            "host={} port={} {names}",
            server.addr.ip(),
            server.addr.port()
        );
        async move {
            let (client, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
        }
    };
    let client = connect("user=bob dbname=shop").await;
    client
        .batch_execute("CREATE TABLE items (id int PRIMARY KEY)")
        .await
        .unwrap();
    let row = client
        .query_one(
            "SELECT current_database(), current_catalog, current_user, session_user,
                    current_role, user,
                    (SELECT datname FROM pg_database),
                    (SELECT rolname FROM pg_roles WHERE rolsuper),
                    (SELECT tableowner FROM pg_tables WHERE tablename = 'items'),
                    (SELECT table_catalog FROM information_schema.tables
                      WHERE table_name = 'items'),
                    current_setting('session_authorization')",
            &[],
        )
        .await
        .unwrap();
    let names: Vec<String> = (0..11).map(|i| row.get(i)).collect();
    assert_eq!(
        names,
        [
            "shop", "shop", "bob", "bob", "bob", "bob", "shop", "bob", "bob", "shop", "bob"
        ]
    );
    // Without a database name, PostgreSQL's default: the user's name.
    let client = connect("user=carol").await;
    let row = client
        .query_one("SELECT current_database(), current_user", &[])
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, String>(0), row.get::<_, String>(1)),
        ("carol".into(), "carol".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn do_blocks_over_the_extended_protocol() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        .await
        .unwrap();
    // Parse, Describe and Execute of a DO, twice: the second insert is caught and undone.
    let block = "DO $$ BEGIN INSERT INTO t VALUES (1, 'a'); \
                 EXCEPTION WHEN unique_violation THEN INSERT INTO t VALUES (2, SQLSTATE); END $$";
    assert_eq!(client.execute(block, &[]).await.unwrap(), 0);
    assert_eq!(client.execute(block, &[]).await.unwrap(), 0);
    let rows = client
        .query("SELECT id, v FROM t ORDER BY id", &[])
        .await
        .unwrap();
    let rows: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(rows, vec![(1, "a".into()), (2, "23505".into())]);
    // RAISE's SQLSTATE, DETAIL and HINT, and PL/pgSQL's context line.
    let err = client
        .execute(
            "DO $$\nBEGIN\n  RAISE EXCEPTION 'bad %', 7 USING ERRCODE = 'P0042', \
             DETAIL = 'd', HINT = 'h';\nEND $$",
            &[],
        )
        .await
        .unwrap_err();
    let db = err.as_db_error().expect("a server error");
    assert_eq!(db.code().code(), "P0042");
    assert_eq!(db.message(), "bad 7");
    assert_eq!((db.detail(), db.hint()), (Some("d"), Some("h")));
    assert_eq!(
        db.where_(),
        Some("PL/pgSQL function inline_code_block line 3 at RAISE")
    );
    // The session goes on.
    let n: i64 = client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_rows_per_outer_row_with_parameters() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE u (id int PRIMARY KEY);
             CREATE TABLE p (id int PRIMARY KEY, uid int, likes int);
             INSERT INTO u VALUES (1), (2);
             INSERT INTO p VALUES (1, 1, 5), (2, 1, 9), (3, 1, 7), (4, 2, 1);",
        )
        .await
        .unwrap();
    // LIMIT and OFFSET parameters typed from the numbering they now bound.
    let rows = client
        .query(
            "SELECT u.id, x.id FROM u LEFT JOIN LATERAL (SELECT p.id FROM p WHERE p.uid = u.id \
             ORDER BY p.likes DESC LIMIT $1 OFFSET $2) x ON true ORDER BY 1, 2",
            &[&2i64, &0i64],
        )
        .await
        .unwrap();
    let got: Vec<(i32, Option<i32>)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, vec![(1, Some(2)), (1, Some(3)), (2, Some(4))]);
}

/// An expression index through a driver: a parameter compared with the indexed expression
/// finds the row through the index, a unique violation names the index, the table and the
/// expression's value, and creating an index leaves rows' `_etag` as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expression_index_with_parameters() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE users (id int PRIMARY KEY, email text);
             CREATE UNIQUE INDEX users_email ON users (lower(email));
             INSERT INTO users VALUES (1, 'Ann@X.com'), (2, 'bob@x.com');",
        )
        .await
        .unwrap();
    let found = client
        .query(
            "SELECT id FROM users WHERE lower(email) = lower($1)",
            &[&"ANN@x.COM"],
        )
        .await
        .unwrap();
    assert_eq!(found.iter().map(|r| r.get(0)).collect::<Vec<i32>>(), [1]);
    let plan: Vec<String> = client
        .query(
            "EXPLAIN SELECT id FROM users WHERE lower(email) = $1",
            &[&"bob@x.com"],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(
        plan.iter().any(|l| l.contains("on index users_email")),
        "{plan:?}"
    );
    let err = client
        .execute("INSERT INTO users VALUES ($1, $2)", &[&3i32, &"BOB@X.COM"])
        .await
        .unwrap_err();
    let db = err.as_db_error().expect("a server error");
    assert_eq!(
        (db.code().code(), db.table(), db.constraint(), db.detail()),
        (
            "23505",
            Some("users"),
            Some("users_email"),
            Some("Key (lower(email))=(bob@x.com) already exists.")
        )
    );
    // CREATE INDEX writes no row: an edit in progress keeps the version it read.
    let etag: String = client
        .query_one("SELECT _etag FROM users WHERE id = 1", &[])
        .await
        .unwrap()
        .get(0);
    client
        .batch_execute("CREATE INDEX users_name ON users (upper(email), (id * 2))")
        .await
        .unwrap();
    let updated = client
        .execute(
            "UPDATE users SET email = 'ann@y.com' WHERE id = 1 AND _etag = $1",
            &[&etag],
        )
        .await
        .unwrap();
    assert_eq!(updated, 1);
    let found = client
        .query("SELECT id FROM users WHERE upper(email) = 'ANN@Y.COM'", &[])
        .await
        .unwrap();
    assert_eq!(found.iter().map(|r| r.get(0)).collect::<Vec<i32>>(), [1]);
}

/// A connection whose notifications (LISTEN) arrive on a channel, read as tokio-postgres's
/// documentation shows.
async fn listening_client(
    server: &TestServer,
) -> (
    tokio_postgres::Client,
    tokio::sync::mpsc::UnboundedReceiver<tokio_postgres::Notification>,
) {
    let (client, mut connection) =
        tokio_postgres::connect(&server.conn_string(), tokio_postgres::NoTls)
            .await
            .unwrap();
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(message) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            match message {
                Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                    let _ = sender.send(n);
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    (client, receiver)
}

/// The next notification, waiting at most `wait`.
async fn next_notification(
    queue: &mut tokio::sync::mpsc::UnboundedReceiver<tokio_postgres::Notification>,
    wait: Duration,
) -> Option<(String, String, i32)> {
    let n = tokio::time::timeout(wait, queue.recv()).await.ok()??;
    Some((
        n.channel().to_string(),
        n.payload().to_string(),
        n.process_id(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_reach_listening_sessions_at_commit() {
    let server = TestServer::start();
    let (worker, mut inbox) = listening_client(&server).await;
    let (producer, mut own) = listening_client(&server).await;
    let pid = |row: tokio_postgres::Row| row.get::<_, i32>(0);
    let worker_pid = pid(worker
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap());
    let producer_pid = pid(producer
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap());
    assert_ne!(worker_pid, producer_pid);
    worker.batch_execute("LISTEN jobs").await.unwrap();
    let quick = Duration::from_millis(300);
    let long = Duration::from_secs(10);

    // A rolled-back NOTIFY sends nothing; a committed one reaches the idle worker, which
    // sends no query to receive it.
    producer
        .batch_execute("BEGIN; NOTIFY jobs, 'lost'; ROLLBACK")
        .await
        .unwrap();
    producer
        .batch_execute(
            "BEGIN; NOTIFY jobs, 'first'; NOTIFY jobs, 'second'; NOTIFY jobs, 'first'; COMMIT",
        )
        .await
        .unwrap();
    let first = next_notification(&mut inbox, long).await;
    assert_eq!(first, Some(("jobs".into(), "first".into(), producer_pid)));
    let second = next_notification(&mut inbox, long).await;
    assert_eq!(second, Some(("jobs".into(), "second".into(), producer_pid)));
    assert_eq!(next_notification(&mut inbox, quick).await, None);

    // pg_notify with parameters (extended protocol), as job queues call it; the channel is
    // taken as written, where NOTIFY's identifier is lowercased.
    producer
        .execute("SELECT pg_notify($1, $2)", &[&"jobs", &"42"])
        .await
        .unwrap();
    producer
        .execute("SELECT pg_notify($1, $2)", &[&"JOBS", &"not ours"])
        .await
        .unwrap();
    let got = next_notification(&mut inbox, long).await;
    assert_eq!(got, Some(("jobs".into(), "42".into(), producer_pid)));
    assert_eq!(next_notification(&mut inbox, quick).await, None);

    // While the worker is inside a transaction block, notifications wait for its end.
    worker.batch_execute("BEGIN").await.unwrap();
    producer
        .batch_execute("NOTIFY jobs, 'later'")
        .await
        .unwrap();
    assert_eq!(next_notification(&mut inbox, quick).await, None);
    worker.batch_execute("COMMIT").await.unwrap();
    let later = next_notification(&mut inbox, long).await;
    assert_eq!(later, Some(("jobs".into(), "later".into(), producer_pid)));

    // A session hears its own notifications, before its statement's ReadyForQuery.
    producer
        .batch_execute("LISTEN jobs; NOTIFY jobs, 'self'")
        .await
        .unwrap();
    let mine = next_notification(&mut own, long).await;
    assert_eq!(mine, Some(("jobs".into(), "self".into(), producer_pid)));
    let theirs = next_notification(&mut inbox, long).await;
    assert_eq!(theirs, Some(("jobs".into(), "self".into(), producer_pid)));

    // UNLISTEN stops them; a statement that fails sends nothing.
    worker.batch_execute("UNLISTEN *").await.unwrap();
    let failed = producer
        .batch_execute("SELECT pg_notify('jobs', 'x'); SELECT 1 / 0")
        .await;
    assert_eq!(failed.unwrap_err().code().unwrap().code(), "22012");
    producer.batch_execute("NOTIFY jobs, 'end'").await.unwrap();
    let end = next_notification(&mut own, long).await;
    assert_eq!(end, Some(("jobs".into(), "end".into(), producer_pid)));
    assert_eq!(next_notification(&mut inbox, quick).await, None);
    let bad = producer
        .execute("SELECT pg_notify('jobs', repeat('x', 8000))", &[])
        .await
        .unwrap_err();
    assert_eq!(bad.code().unwrap().code(), "22023");

    // ROLLBACK and COMMIT end what the statements before them in one query queued: the
    // rolled-back one is dropped, the committed one survives a later failure.
    producer
        .batch_execute("NOTIFY jobs, 'dropped'; ROLLBACK")
        .await
        .unwrap();
    let kept = producer
        .batch_execute("NOTIFY jobs, 'kept'; COMMIT; SELECT 1 / 0")
        .await;
    assert_eq!(kept.unwrap_err().code().unwrap().code(), "22012");
    let got = next_notification(&mut own, long).await;
    assert_eq!(got, Some(("jobs".into(), "kept".into(), producer_pid)));
    assert_eq!(next_notification(&mut own, quick).await, None);

    // Channel names longer than 63 bytes are cut as identifiers are.
    let long_name = "c".repeat(70);
    producer
        .batch_execute(&format!("LISTEN {long_name}; NOTIFY {long_name}, 'cut'"))
        .await
        .unwrap();
    let got = next_notification(&mut own, long).await;
    assert_eq!(got, Some(("c".repeat(63), "cut".into(), producer_pid)));

    // An autocommit write's RETURNING notifies once; with a system column beside it, which
    // would evaluate it twice, it is refused.
    producer
        .batch_execute("CREATE TABLE jobs (id int PRIMARY KEY)")
        .await
        .unwrap();
    producer
        .batch_execute("INSERT INTO jobs VALUES (1) RETURNING pg_notify('jobs', 'job ' || id)")
        .await
        .unwrap();
    let got = next_notification(&mut own, long).await;
    assert_eq!(got, Some(("jobs".into(), "job 1".into(), producer_pid)));
    let refused = producer
        .batch_execute("INSERT INTO jobs VALUES (2) RETURNING _etag, pg_notify('jobs', 'x')")
        .await
        .unwrap_err();
    assert_eq!(refused.code().unwrap().code(), "0A000");
    assert_eq!(next_notification(&mut own, quick).await, None);
}
