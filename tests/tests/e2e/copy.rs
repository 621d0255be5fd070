//! COPY FROM STDIN and COPY TO STDOUT over the wire: tokio-postgres (extended protocol) and
//! psql's `\copy` (simple protocol), text, CSV and binary, batches, errors with their line
//! numbers.

use bytes::Bytes;
use futures::{SinkExt, TryStreamExt};
use std::process::Command;
use tests::server::TestServer;

async fn copy_in(
    client: &tokio_postgres::Client,
    statement: &str,
    data: &str,
) -> Result<u64, tokio_postgres::Error> {
    let sink = client.copy_in(statement).await?;
    futures::pin_mut!(sink);
    // Several messages, split mid-record, as clients do.
    for chunk in data.as_bytes().chunks(7) {
        sink.send(Bytes::copy_from_slice(chunk)).await?;
    }
    sink.finish().await
}

async fn copy_out(client: &tokio_postgres::Client, statement: &str) -> String {
    let stream = client.copy_out(statement).await.unwrap();
    let chunks: Vec<Bytes> = stream.try_collect().await.unwrap();
    String::from_utf8(chunks.concat()).unwrap()
}

fn code(e: &tokio_postgres::Error) -> String {
    e.as_db_error()
        .map(|d| {
            format!(
                "{} {} [{}]",
                d.code().code(),
                d.message(),
                d.where_().unwrap_or("")
            )
        })
        .unwrap_or_else(|| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_text_and_csv_round_trip() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE r (tenant int, id int, name text, fee numeric(6,2), at timestamptz, \
             PRIMARY KEY ((tenant), id));
             CREATE INDEX r_by_name ON r (name);",
        )
        .await
        .unwrap();

    let text = "1\t1\tann\t1.50\t2024-01-01 10:00:00+00\n\
                1\t2\t\\N\t\\N\t\\N\n\
                2\t1\ttab\\there\\\\\t3\t2024-07-01 12:00:00+02\n";
    assert_eq!(
        copy_in(&client, "COPY r FROM STDIN", text).await.unwrap(),
        3
    );
    let csv = "tenant,id,name\n3,1,\"a,\"\"b\"\"\"\n3,2,\n3,3,\"\"\n3,4,\"two\nlines\"\n";
    assert_eq!(
        copy_in(
            &client,
            "COPY r (tenant, id, name) FROM STDIN WITH (FORMAT csv, HEADER)",
            csv
        )
        .await
        .unwrap(),
        4
    );

    // What was stored, as COPY TO writes it back: text escapes, \N, CSV quoting that
    // tells the empty string from NULL, timestamps in the session's zone.
    assert_eq!(
        copy_out(&client, "COPY r TO STDOUT").await,
        "1\t1\tann\t1.50\t2024-01-01 10:00:00+00\n\
         1\t2\t\\N\t\\N\t\\N\n\
         2\t1\ttab\\there\\\\\t3.00\t2024-07-01 10:00:00+00\n\
         3\t1\ta,\"b\"\t\\N\t\\N\n\
         3\t2\t\\N\t\\N\t\\N\n\
         3\t3\t\t\\N\t\\N\n\
         3\t4\ttwo\\nlines\t\\N\t\\N\n"
    );
    assert_eq!(
        copy_out(
            &client,
            "COPY r (tenant, id, name) TO STDOUT WITH (FORMAT csv, HEADER)"
        )
        .await,
        "tenant,id,name\n1,1,ann\n1,2,\n2,1,tab\there\\\n3,1,\"a,\"\"b\"\"\"\n3,2,\n3,3,\"\"\n3,4,\"two\nlines\"\n"
    );
    assert_eq!(
        copy_out(
            &client,
            "COPY (SELECT tenant, count(*) FROM r GROUP BY tenant ORDER BY tenant) TO STDOUT"
        )
        .await,
        "1\t2\n2\t1\n3\t4\n"
    );
    // The index was maintained in the same commits.
    let check = client
        .query(
            "SELECT missing, stray, different FROM partita_check('r')",
            &[],
        )
        .await
        .unwrap();
    for row in check {
        assert_eq!(
            (
                row.get::<_, i64>(0),
                row.get::<_, i64>(1),
                row.get::<_, i64>(2)
            ),
            (0, 0, 0)
        );
    }

    // COPY takes a GENERATED ALWAYS identity column's values as given (pg_dump's restores
    // rely on it); an INSERT may not.
    client
        .batch_execute("CREATE TABLE ledger (entry int GENERATED ALWAYS AS IDENTITY, note text)")
        .await
        .unwrap();
    assert_eq!(
        copy_in(
            &client,
            "COPY ledger (entry, note) FROM STDIN",
            "7\tseven\n"
        )
        .await
        .unwrap(),
        1
    );
    let e = client
        .execute("INSERT INTO ledger (entry, note) VALUES (8, 'eight')", &[])
        .await
        .unwrap_err();
    assert!(code(&e).starts_with("428C9"), "{}", code(&e));
    let entries = client.query("SELECT entry FROM ledger", &[]).await.unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].get::<_, i32>(0), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_errors_name_the_line_and_keep_earlier_batches() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE t (k int PRIMARY KEY, v text NOT NULL)")
        .await
        .unwrap();

    // A bad value on line 12,001: the two full batches before it (5,000 rows each) are
    // committed, the batch holding it is not.
    let batch = planner::copy::BATCH_ROWS;
    let mut data = String::new();
    for i in 1..=12_000 {
        data.push_str(&format!("{i}\tv{i}\n"));
    }
    data.push_str("oops\tbad\n");
    for i in 12_002..=12_500 {
        data.push_str(&format!("{i}\tv{i}\n"));
    }
    let e = copy_in(&client, "COPY t FROM STDIN", &data)
        .await
        .unwrap_err();
    assert_eq!(
        code(&e),
        "22P02 invalid input syntax for type integer: \"oops\" [COPY t, line 12001, column k: \"oops\"]"
    );
    let count: i64 = client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count as usize, 2 * batch);

    let cases = [
        (
            "1\n",
            "22P04 missing data for column \"v\" [COPY t, line 1]",
        ),
        (
            "1\ta\tb\n",
            "22P04 extra data after last expected column [COPY t, line 1]",
        ),
        (
            "20001\t\\N\n",
            "23502 null value in column \"v\" of relation \"t\" violates not-null constraint [COPY t, line 1]",
        ),
        (
            "1\tdup\n",
            "23505 duplicate key value violates unique constraint \"t_pkey\" [COPY t, line 1]",
        ),
    ];
    for (data, expected) in cases {
        let e = copy_in(&client, "COPY t FROM STDIN", data)
            .await
            .unwrap_err();
        assert_eq!(code(&e), expected, "{data:?}");
    }
    let e = copy_in(&client, "COPY t FROM STDIN CSV", "30001,\"open\n")
        .await
        .unwrap_err();
    assert_eq!(
        code(&e),
        "22P04 unterminated CSV quoted field [COPY t, line 1]"
    );
    // A COPY that fails before its data leaves tokio-postgres out of step with the server
    // (it sends CopyFail and Sync, and PostgreSQL answers that Sync too): one connection
    // each.
    for (statement, state) in [
        ("COPY t (nosuch) FROM STDIN", "42703"),
        ("COPY nosuch FROM STDIN", "42P01"),
        ("COPY t FROM STDIN (FORMAT xml)", "22023"),
        ("COPY t FROM STDIN (FORMAT binary, DELIMITER ',')", "42601"),
        ("COPY t FROM '/etc/passwd'", "0A000"),
    ] {
        let client = server.connect().await;
        let e = client
            .copy_in::<_, Bytes>(statement)
            .await
            .err()
            .expect(statement);
        assert_eq!(
            e.code().map(|c| c.code()),
            Some(state),
            "{statement}: {e:?}"
        );
    }

    // In a transaction block COPY is part of the transaction.
    client.batch_execute("BEGIN").await.unwrap();
    copy_in(&client, "COPY t FROM STDIN", "40001\tx\n40002\ty\n")
        .await
        .unwrap();
    client.batch_execute("ROLLBACK").await.unwrap();
    let count: i64 = client
        .query_one("SELECT count(*) FROM t WHERE k > 40000", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 0);
}

/// psql's `\copy` sends COPY over the simple protocol.
/// The text and CSV rules drivers lean on: a backslash-escaped delimiter is data, ESCAPE
/// defaults to QUOTE, and a NUL is refused (22021) as PostgreSQL refuses it in text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_escapes_quotes_and_nul() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE notes (id int PRIMARY KEY, body text)")
        .await
        .unwrap();
    copy_in(
        &client,
        "COPY notes FROM STDIN (DELIMITER '|')",
        "1|a\\|b\n",
    )
    .await
    .unwrap();
    copy_in(
        &client,
        "COPY notes FROM STDIN (FORMAT csv, QUOTE '''', DELIMITER ';')",
        "2;'it''s'\n",
    )
    .await
    .unwrap();
    let out = copy_out(&client, "COPY notes TO STDOUT (FORMAT csv, QUOTE '''')").await;
    assert_eq!(out, "1,a|b\n2,'it''s'\n");
    let e = copy_in(&client, "COPY notes FROM STDIN", "3\tnul\\0here\n")
        .await
        .unwrap_err();
    assert_eq!(
        code(&e),
        "22021 invalid byte sequence for encoding \"UTF8\": 0x00 [COPY notes, line 1]"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_leaves_generated_columns_out() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE items (id int PRIMARY KEY, qty int, \
             twice int GENERATED ALWAYS AS (qty * 2) STORED, note text)",
        )
        .await
        .unwrap();
    // As in PostgreSQL: COPY's columns are the table's but the generated ones, whose
    // values each row computes.
    copy_in(
        &client,
        "COPY items FROM STDIN",
        "1\t5\tfive\n2\t\\N\tnone\n",
    )
    .await
    .unwrap();
    assert_eq!(
        copy_out(&client, "COPY items TO STDOUT").await,
        "1\t5\tfive\n2\t\\N\tnone\n"
    );
    assert_eq!(
        copy_out(&client, "COPY (SELECT id, twice FROM items) TO STDOUT").await,
        "1\t10\n2\t\\N\n"
    );
    let e = copy_in(&client, "COPY items (id, twice) FROM STDIN", "3\t1\n")
        .await
        .unwrap_err();
    assert!(
        code(&e).starts_with("42P10 column \"twice\" is a generated column"),
        "{e:?}"
    );
    // tokio-postgres's connection is out of step after a COPY FROM that fails to start (as
    // with PostgreSQL itself): a new one.
    let client = server.connect().await;
    let e = client
        .copy_out("COPY items (twice) TO STDOUT")
        .await
        .err()
        .unwrap();
    assert!(code(&e).starts_with("42P10"), "{e:?}");
}

/// PostgreSQL's binary COPY format both ways, through tokio-postgres's own binary writer and
/// reader: every value comes back as written, NULLs included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_binary_round_trip() {
    use tokio_postgres::binary_copy::{BinaryCopyInWriter, BinaryCopyOutStream};
    use tokio_postgres::types::Type;
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE cards (student int, device int, price numeric(8,2), paid timestamptz, \
             note text, PRIMARY KEY (student, device))",
        )
        .await
        .unwrap();
    let types = [Type::INT4, Type::INT4, Type::TIMESTAMPTZ, Type::TEXT];
    let paid = chrono::DateTime::parse_from_rfc3339("2024-03-01T10:30:00.25Z")
        .unwrap()
        .to_utc();
    let sink = client
        .copy_in("COPY cards (student, device, paid, note) FROM STDIN (FORMAT binary)")
        .await
        .unwrap();
    let writer = BinaryCopyInWriter::new(sink, &types);
    futures::pin_mut!(writer);
    for device in 15..100 {
        let note = (device % 2 == 0).then(|| format!("device {device}"));
        writer
            .as_mut()
            .write(&[&7i32, &device, &paid, &note])
            .await
            .unwrap();
    }
    assert_eq!(writer.finish().await.unwrap(), 85);
    let row = client
        .query_one(
            "SELECT count(*), count(note) FROM cards WHERE student = 7",
            &[],
        )
        .await
        .unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (85, 42));
    let stream = client
        .copy_out(
            "COPY (SELECT student, device, paid, note FROM cards ORDER BY device) \
             TO STDOUT (FORMAT binary)",
        )
        .await
        .unwrap();
    let rows: Vec<_> = BinaryCopyOutStream::new(stream, &types)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(rows.len(), 85);
    let first = &rows[0];
    assert_eq!(first.get::<i32>(1), 15);
    assert_eq!(first.get::<chrono::DateTime<chrono::Utc>>(2), paid);
    assert_eq!(first.get::<Option<String>>(3), None);
    assert_eq!(
        rows[1].get::<Option<String>>(3).as_deref(),
        Some("device 16")
    );
    // A stream that is not PostgreSQL's binary format is refused with 22P04.
    let e = copy_in(&client, "COPY cards FROM STDIN (FORMAT binary)", "7\t15\n")
        .await
        .unwrap_err();
    assert!(
        code(&e).starts_with("22P04 COPY file signature not recognized"),
        "{e:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_backslash_copy() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE t (k int PRIMARY KEY, v text)")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    let output = dir.path().join("out.csv");
    std::fs::write(&input, "k,v\n1,one\n2,\"t,wo\"\n3,\n").unwrap();
    let psql = |command: String| {
        let debian = "/usr/lib/postgresql/15/bin/psql";
        let bin = if std::path::Path::new(debian).exists() {
            debian
        } else {
            "psql"
        };
        let out = Command::new(bin)
            .args(["-X", "-h"])
            .arg(server.addr.ip().to_string())
            .arg("-p")
            .arg(server.addr.port().to_string())
            .args(["-U", "partita", "-d", "partita", "-c", &command])
            .output()
            .expect("psql 15 must be installed (.ci/run installs postgresql-15)");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    assert_eq!(
        psql(format!(
            "\\copy t from '{}' with csv header",
            input.display()
        )),
        "COPY 3\n"
    );
    assert_eq!(
        psql(format!(
            "\\copy t to '{}' with csv header",
            output.display()
        )),
        "COPY 3\n"
    );
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        "k,v\n1,one\n2,\"t,wo\"\n3,\n"
    );
    std::fs::write(&input, "4,four\nfive,5\n").unwrap();
    assert_eq!(
        psql(format!("\\copy t from '{}' with csv", input.display())),
        "ERROR:  invalid input syntax for type integer: \"five\"\nCONTEXT:  COPY t, line 2, column k: \"five\"\n"
    );
}
