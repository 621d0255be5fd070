"""psycopg 3 against Partita: parameters of every kind, transactions, executemany,
server-side cursors and COPY. Run by tests/tests/e2e/drivers.rs with the server's address."""

import datetime
import decimal
import sys
import uuid

import psycopg

host, port = sys.argv[1], int(sys.argv[2])
conn = psycopg.connect(host=host, port=port, user="partita", dbname="partita", autocommit=True)

conn.execute("DROP TABLE IF EXISTS runners")
conn.execute(
    "CREATE TABLE runners (race text, bib int, name varchar(40) NOT NULL, age smallint, "
    "fee numeric(6,2), started timestamptz, born date, tag uuid, fast boolean, "
    "PRIMARY KEY ((race), bib))"
)

# Parameters of each type, sent in binary and in text (psycopg chooses).
row = (
    "nyc", 1, "Ann", 34, decimal.Decimal("25.50"),
    datetime.datetime(2024, 11, 3, 9, 30, tzinfo=datetime.timezone.utc),
    datetime.date(1990, 5, 17), uuid.UUID("12345678-1234-5678-1234-567812345678"), True,
)
conn.execute("INSERT INTO runners VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", row)
got = conn.execute("SELECT * FROM runners WHERE race = %s AND bib = %s", ("nyc", 1)).fetchone()
assert got == row, got
got = conn.execute(
    "SELECT * FROM runners WHERE race = %s AND bib = %s", ("nyc", 1), binary=True
).fetchone()
assert got == row, got

# executemany, then a transaction that commits and one that rolls back.
with conn.cursor() as cur:
    cur.executemany(
        "INSERT INTO runners (race, bib, name, age) VALUES (%s, %s, %s, %s)",
        [("nyc", i, f"runner {i}", 20 + i % 40) for i in range(2, 102)],
    )
assert conn.execute("SELECT count(*) FROM runners").fetchone()[0] == 101
with conn.transaction():
    conn.execute("UPDATE runners SET age = age + 1 WHERE race = %s AND bib = %s", ("nyc", 2))
try:
    with conn.transaction():
        conn.execute("DELETE FROM runners WHERE race = 'nyc'")
        raise RuntimeError("roll back")
except RuntimeError:
    pass
assert conn.execute("SELECT count(*) FROM runners").fetchone()[0] == 101
assert conn.execute("SELECT age FROM runners WHERE race = 'nyc' AND bib = 2").fetchone()[0] == 23

# Errors carry their SQLSTATE and leave the connection usable.
try:
    conn.execute("INSERT INTO runners (race, bib, name) VALUES ('nyc', 1, 'dup')")
    raise AssertionError("duplicate key accepted")
except psycopg.errors.UniqueViolation:
    pass

# A server-side (named) cursor: DECLARE and FETCH inside a transaction.
with conn.transaction():
    with conn.cursor(name="by_bib") as cur:
        cur.itersize = 7
        cur.execute("SELECT bib FROM runners WHERE race = %s ORDER BY bib", ("nyc",))
        bibs = [r[0] for r in cur]
assert bibs == list(range(1, 102)), bibs

# COPY in and out.
with conn.cursor() as cur:
    with cur.copy("COPY runners (race, bib, name) FROM STDIN") as copy:
        for i in range(200, 250):
            copy.write_row(("la", i, f"copied {i}"))
    assert conn.execute("SELECT count(*) FROM runners WHERE race = 'la'").fetchone()[0] == 50
    out = []
    with cur.copy("COPY (SELECT bib, name FROM runners WHERE race = 'la' ORDER BY bib) TO STDOUT") as copy:
        for r in copy.rows():
            out.append(r)
    assert out[0] == ("200", "copied 200") and len(out) == 50, out[:3]

# Result types as PostgreSQL describes them, and values in the binary format: arrays,
# intervals (a difference of timestamps too), row numbers, a CASE mixing integer and numeric.
with conn.cursor(binary=True) as cur:
    cur.execute(
        "SELECT ARRAY[1, 2], ARRAY['a', 'b c'], timestamp '2024-01-03 10:00' - timestamp '2024-01-01',"
        " interval '1 month 2 days 3 hours', row_number() OVER (), CASE WHEN bib > 0 THEN 1 ELSE 2.5 END"
        " FROM runners WHERE race = 'la' AND bib = 200"
    )
    row = cur.fetchone()
    assert row == (
        [1, 2],
        ["a", "b c"],
        datetime.timedelta(days=2, hours=10),
        datetime.timedelta(days=32, hours=3),
        1,
        decimal.Decimal(1),
    ), row
    assert [d.type_code for d in cur.description][3:] == [1186, 20, 1700], cur.description
    # A whole Decimal is a numeric parameter (OID 1700): it divides as one, not as an integer.
    cur.execute("SELECT 10 / %s", (decimal.Decimal(3),))
    assert cur.fetchone()[0] == decimal.Decimal("3.3333333333333333")

# executemany and pipelines run up to their Sync as one implicit transaction, as in
# PostgreSQL: a failing row leaves none of the batch; a read in the pipeline sees its writes.
conn.execute("CREATE TABLE batch (k int PRIMARY KEY, v text)")
try:
    conn.cursor().executemany(
        "INSERT INTO batch VALUES (%s, %s)", [(1, "a"), (2, "b"), (1, "dup"), (3, "c")]
    )
    raise AssertionError("a duplicate key in executemany did not fail")
except psycopg.errors.UniqueViolation:
    pass
assert conn.execute("SELECT count(*) FROM batch").fetchone()[0] == 0
with conn.pipeline():
    conn.execute("INSERT INTO batch VALUES (10, 'x')")
    seen = conn.execute("SELECT count(*) FROM batch")
assert seen.fetchone()[0] == 1
assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
# A multi-statement simple query is one transaction too.
try:
    conn.execute("INSERT INTO batch VALUES (20, 'y'); INSERT INTO batch VALUES (10, 'dup')", prepare=False)
    raise AssertionError("a duplicate key in a multi-statement query did not fail")
except psycopg.errors.UniqueViolation:
    pass
assert conn.execute("SELECT array_agg(k) FROM batch").fetchone()[0] == [10]
# A write alone before its Sync commits there, and RETURNING shows the commit's etag.
etag = conn.execute("UPDATE batch SET v = %s WHERE k = 10 RETURNING _etag", ("z",), prepare=True).fetchone()[0]
assert etag is not None and etag == conn.execute("SELECT _etag FROM batch WHERE k = 10").fetchone()[0]

# A FROM function's arguments as parameters (psycopg sends small ints as int2), and the
# built-in functions with parameters.
assert conn.execute("SELECT g FROM generate_series(1, %s) g", (3,)).fetchall() == [(1,), (2,), (3,)]
assert conn.execute("SELECT count(*) FROM generate_series(%s::int, %s::int)", (2, 6)).fetchone()[0] == 5
assert conn.execute("SELECT regexp_matches(%s, %s, 'g')", ("a1b22", r"\d+")).fetchall() == [(["1"],), (["22"],)]
# A set-returning function over an earlier item's columns (implicit LATERAL), with a parameter.
conn.execute("CREATE TABLE orders (id int PRIMARY KEY, doc jsonb)")
conn.execute(
    "INSERT INTO orders VALUES (1, %s), (2, %s)",
    ('{"lines": [{"sku": "a"}, {"sku": "b"}]}', '{"lines": [{"sku": "c"}]}'),
)
rows = conn.execute(
    "SELECT o.id, l.value->>'sku' FROM orders o, jsonb_array_elements(o.doc->'lines') l "
    "WHERE o.id = %s ORDER BY 2",
    (1,),
).fetchall()
assert rows == [(1, "a"), (1, "b")], rows
assert conn.execute("SELECT format('%%s has %%s', %s::text, %s::int)", ("x", 3)).fetchone()[0] == "x has 3"
# Array columns: Python lists in and out, NULL elements, uuids, and the array operators.
import uuid as uuidlib
conn.execute("CREATE TABLE posts (id int PRIMARY KEY, tags text[], scores int[], refs uuid[])")
ref = uuidlib.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
conn.execute("INSERT INTO posts VALUES (%s, %s, %s, %s)", (1, ["a", None, 'b "c"'], [3, 1], [ref]))
conn.execute("INSERT INTO posts VALUES (%s, %s, %s, %s)", (2, [], [7], None), prepare=True)
assert conn.execute("SELECT tags, scores, refs FROM posts WHERE id = 1").fetchone() == (
    ["a", None, 'b "c"'], [3, 1], [ref])
assert conn.execute("SELECT id FROM posts WHERE tags @> %s ORDER BY id", (["a"],)).fetchall() == [(1,)]
assert conn.execute("SELECT id FROM posts WHERE %s = ANY(scores)", (7,)).fetchall() == [(2,)]
assert conn.execute("SELECT tags FROM posts WHERE id = 2").fetchone()[0] == []
# An enum column, as SQLAlchemy's and Django's migrations make them: its values as strings,
# a parameter cast to the type, and a bad label refused.
conn.execute("CREATE TYPE status AS ENUM ('draft', 'live')")
conn.execute("ALTER TABLE posts ADD COLUMN state status NOT NULL DEFAULT 'draft'")
conn.execute("UPDATE posts SET state = %s::status WHERE id = %s", ("live", 1))
assert conn.execute("SELECT id, state FROM posts ORDER BY id").fetchall() == [(1, "live"), (2, "draft")]
try:
    conn.execute("UPDATE posts SET state = %s WHERE id = 2", ("gone",))
    raise AssertionError("a label the enum lacks was taken")
except psycopg.errors.InvalidTextRepresentation:
    pass

# LISTEN/NOTIFY: notifies() yields what another connection sent while this one waits idle.
conn.execute("LISTEN jobs")
with psycopg.connect(host=host, port=port, user="partita", dbname="partita") as other:
    other.execute("NOTIFY jobs, 'job 1'")
    sender = other.execute("SELECT pg_backend_pid()").fetchone()[0]
    other.commit()
got = [(n.pid, n.channel, n.payload) for n in conn.notifies(timeout=10, stop_after=1)]
assert got == [(sender, "jobs", "job 1")], got
conn.execute("UNLISTEN jobs")

cur = conn.execute("SHOW TimeZone")
assert cur.description[0].name == "TimeZone", cur.description

print("psycopg ok")
