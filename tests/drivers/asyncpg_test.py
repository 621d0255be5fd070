"""asyncpg against Partita. asyncpg prepares every statement, encodes each parameter in
binary by the type the server describes for it, reads results in binary, looks types it
does not know up in pg_type (with `set_config('jit', …)` around the lookup), and loads
rows with COPY in binary. Run by tests/tests/e2e/drivers.rs with the server's address."""

import asyncio
import datetime
import decimal
import io
import sys
import uuid

import asyncpg

host, port = sys.argv[1], int(sys.argv[2])


async def main():
    conn = await asyncpg.connect(host=host, port=port, user="partita", database="partita")
    await conn.execute("DROP TABLE IF EXISTS rentals")
    await conn.execute(
        "CREATE TABLE rentals (store text, id int, title varchar(60) NOT NULL, "
        "fee numeric(6,2), due timestamptz, born date, copy uuid, extras jsonb, "
        "returned boolean, poster bytea, PRIMARY KEY ((store), id))"
    )

    # Parameters of each type, in binary, typed by the columns they go into.
    row = (
        "north", 1, "Alien", decimal.Decimal("3.50"),
        datetime.datetime(2024, 11, 3, 9, 30, 15, 250000, tzinfo=datetime.timezone.utc),
        datetime.date(1979, 5, 25), uuid.UUID("12345678-1234-5678-1234-567812345678"),
        '{"cut": "director"}', False, b"\x00\x01\xff",
    )
    await conn.execute("INSERT INTO rentals VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", *row)
    got = await conn.fetchrow("SELECT * FROM rentals WHERE store = $1 AND id = $2", "north", 1)
    assert tuple(got) == row, got

    # Parameters typed only by their context: a cast, a condition, coalesce, a function.
    got = await conn.fetchrow(
        "SELECT $1::int + 1 AS n, $2::date + 1 AS d, $3::interval AS i, coalesce($4, 5) AS c, "
        "abs($5) AS a",
        41, datetime.date(2024, 2, 28), datetime.timedelta(days=1, seconds=5), 7, -2.5,
    )
    assert tuple(got) == (
        42, datetime.date(2024, 2, 29), datetime.timedelta(days=1, seconds=5), 7, 2.5,
    ), got
    assert await conn.fetchval("SELECT count(*) FROM rentals WHERE $1", False) == 0
    # Functions and operators type what they take: round a numeric, substr an int4 position,
    # || text, an interval added to a timestamp, OR booleans.
    got = await conn.fetchrow(
        "SELECT round($1, 2), substr($2, $3), $2 || $4, timestamp '2024-01-01' + $5, $6 OR $7",
        decimal.Decimal("3.14159"), "hello", 2, "!", datetime.timedelta(hours=2), False, True,
    )
    assert tuple(got) == (
        decimal.Decimal("3.14"), "ello", "hello!", datetime.datetime(2024, 1, 1, 2), True,
    ), got
    # A numeric parameter keeps its digits; a uuid compared with a uuid column is a uuid.
    assert await conn.fetchval("SELECT $1::numeric", decimal.Decimal("1.10")) == decimal.Decimal("1.10")
    assert str(await conn.fetchval("SELECT $1 + 1.5", decimal.Decimal("2.5"))) == "4.0"
    assert await conn.fetchval("SELECT id FROM rentals WHERE copy = $1", row[6]) == 1
    await conn.execute("UPDATE rentals SET copy = $1 WHERE store = 'north' AND id = 1", row[6])
    assert await conn.fetchval("SELECT time '10:11:12.5'") == datetime.time(10, 11, 12, 500000)

    # INSERT … SELECT and ON CONFLICT parameters are typed by their target columns.
    await conn.execute(
        "INSERT INTO rentals (store, id, title, fee) SELECT $1, $2, $3, $4 "
        "WHERE NOT EXISTS (SELECT 1 FROM rentals WHERE store = $1 AND id = $2)",
        "east", 1, "Brazil", decimal.Decimal("2.75"),
    )
    await conn.execute(
        "INSERT INTO rentals (store, id, title) VALUES ($1, $2, $3) "
        "ON CONFLICT (store, id) DO UPDATE SET fee = $4",
        "east", 1, "Brazil", decimal.Decimal("3.25"),
    )
    assert await conn.fetchval("SELECT fee FROM rentals WHERE store = 'east'") == decimal.Decimal("3.25")
    await conn.execute("DELETE FROM rentals WHERE store = 'east'")

    # Arrays make asyncpg look their type up in pg_type.
    await conn.executemany(
        "INSERT INTO rentals (store, id, title, fee) VALUES ($1, $2, $3, $4)",
        [("north", i, f"title {i}", decimal.Decimal(i) / 4) for i in range(2, 52)],
    )
    got = await conn.fetch("SELECT id FROM rentals WHERE id = any($1::int[]) ORDER BY id", [3, 5, 99])
    assert [r["id"] for r in got] == [3, 5], got
    assert await conn.fetchval("SELECT array[1, 2, 3]") == [1, 2, 3]
    assert await conn.fetchval("SELECT array_agg(id ORDER BY id) FROM rentals WHERE id < 4") == [1, 2, 3]

    # Transactions: one commits, one rolls back on an error, and a conflict's SQLSTATE.
    async with conn.transaction():
        await conn.execute("UPDATE rentals SET returned = true WHERE store = $1 AND id = $2", "north", 2)
    try:
        async with conn.transaction():
            await conn.execute("DELETE FROM rentals WHERE store = 'north'")
            await conn.execute("INSERT INTO rentals (store, id, title) VALUES ('north', 2, 'x'), ('north', 2, 'y')")
    except asyncpg.UniqueViolationError:
        pass
    assert await conn.fetchval("SELECT count(*) FROM rentals") == 51
    assert await conn.fetchval("SELECT returned FROM rentals WHERE id = 2") is True

    # A cursor in a transaction, fetched a few rows at a time.
    async with conn.transaction():
        ids = [r["id"] async for r in conn.cursor("SELECT id FROM rentals ORDER BY id", prefetch=7)]
    assert ids == list(range(1, 52)), ids

    # A read-only serializable deferrable transaction, as asyncpg spells it.
    async with conn.transaction(isolation="serializable", readonly=True, deferrable=True):
        assert await conn.fetchval("SELECT count(*) FROM rentals WHERE poster = $1", b"\x00\x01\xff") == 1

    # A cached statement whose result changed after ALTER TABLE is prepared again (asyncpg
    # knows PostgreSQL's error by its routine name).
    before = await conn.fetchrow("SELECT * FROM rentals WHERE store = 'north' AND id = 1")
    await conn.execute("ALTER TABLE rentals ADD COLUMN note text")
    after = await conn.fetchrow("SELECT * FROM rentals WHERE store = 'north' AND id = 1")
    assert len(after) == len(before) + 1 and after["note"] is None, after
    await conn.execute("ALTER TABLE rentals DROP COLUMN note")

    # A pool: each connection goes back through asyncpg's reset query
    # (pg_advisory_unlock_all, CLOSE ALL, UNLISTEN *, RESET ALL).
    pool = await asyncpg.create_pool(host=host, port=port, user="partita", database="partita",
                                     min_size=2, max_size=2)
    doubled = await asyncio.gather(*[pool.fetchval("SELECT $1::int * 2", i) for i in range(6)])
    assert doubled == [0, 2, 4, 6, 8, 10], doubled
    async with pool.acquire() as pooled:
        await pooled.execute("SET work_mem = '8MB'")
    async with pool.acquire() as pooled:
        assert await pooled.fetchval("SHOW work_mem") == "4MB"
    await pool.close()

    # A prepared statement run with several arguments.
    title = await conn.prepare("SELECT title FROM rentals WHERE store = $1 AND id = $2")
    assert [await title.fetchval("north", i) for i in (1, 10)] == ["Alien", "title 10"]

    # COPY in binary: records in, the table out and back in, and a bad file's SQLSTATE.
    result = await conn.copy_records_to_table(
        "rentals", columns=["store", "id", "title", "fee", "due"],
        records=[("south", i, f"copied {i}", decimal.Decimal("1.25"), row[4]) for i in range(3)],
    )
    assert result == "COPY 3", result
    got = await conn.fetchrow("SELECT title, fee, due FROM rentals WHERE store = 'south' AND id = 2")
    assert tuple(got) == ("copied 2", decimal.Decimal("1.25"), row[4]), got
    out = io.BytesIO()
    assert await conn.copy_from_table("rentals", output=out, format="binary") == "COPY 54"
    await conn.execute("DELETE FROM rentals")
    assert await conn.copy_to_table("rentals", source=io.BytesIO(out.getvalue()), format="binary") == "COPY 54"
    got = await conn.fetchrow("SELECT * FROM rentals WHERE store = $1 AND id = $2", "north", 1)
    assert tuple(got) == row, got
    try:
        await conn.copy_to_table("rentals", source=io.BytesIO(b"not a copy file"), format="binary")
        raise AssertionError("a bad COPY file was taken")
    except asyncpg.BadCopyFileFormatError:
        pass

    # time and interval columns: binary parameters in, binary values out.
    await conn.execute("CREATE TABLE shifts (id int PRIMARY KEY, starts time, ends time(0), length interval)")
    await conn.execute(
        "INSERT INTO shifts VALUES ($1, $2, $3, $4)", 1, datetime.time(9, 0, 0, 250000),
        datetime.time(17, 30, 15, 600000), datetime.timedelta(days=1, hours=2, microseconds=5))
    got = await conn.fetchrow("SELECT starts, ends, length, starts + length AS later FROM shifts")
    assert tuple(got) == (datetime.time(9, 0, 0, 250000), datetime.time(17, 30, 16),
                          datetime.timedelta(days=1, hours=2, microseconds=5),
                          datetime.time(11, 0, 0, 250005)), got
    assert await conn.fetchval("SELECT id FROM shifts WHERE length > $1",
                               datetime.timedelta(hours=25)) == 1

    # Array columns: lists in binary both ways, NULL elements, and a typed parameter.
    await conn.execute("CREATE TABLE posts (id int PRIMARY KEY, tags text[], seen timestamptz[])")
    at = datetime.datetime(2024, 2, 29, 10, 0, tzinfo=datetime.timezone.utc)
    await conn.execute("INSERT INTO posts VALUES ($1, $2, $3)", 1, ["a", None, "b c"], [at])
    got = await conn.fetchrow("SELECT tags, seen FROM posts WHERE id = 1")
    assert tuple(got) == (["a", None, "b c"], [at]), got
    assert await conn.fetchval("SELECT id FROM posts WHERE tags && $1", ["b c", "z"]) == 1

    # Notices carry PostgreSQL's SQLSTATEs (42P07 for an existing relation).
    notices = []
    conn.add_log_listener(lambda _conn, message: notices.append((message.sqlstate, message.message)))
    await conn.execute("CREATE TABLE IF NOT EXISTS shifts (id int PRIMARY KEY)")
    await conn.execute("DROP TABLE IF EXISTS nosuch")
    await asyncio.sleep(0.1)  # listeners are called soon after, not during, the command
    assert notices == [("42P07", 'relation "shifts" already exists, skipping'),
                       ("00000", 'table "nosuch" does not exist, skipping')], notices

    # LISTEN/NOTIFY as job queues use them: add_listener's callback gets what another
    # connection's committed transaction sent, with the sender's process ID.
    got = asyncio.Queue()
    await conn.add_listener("jobs", lambda _c, pid, channel, payload: got.put_nowait((pid, channel, payload)))
    other = await asyncpg.connect(host=host, port=port, user="partita", database="partita")
    sender = await other.fetchval("SELECT pg_backend_pid()")
    async with other.transaction():
        await other.execute("SELECT pg_notify('jobs', $1)", "job 1")
        await other.execute("NOTIFY jobs, 'job 2'")
    assert await asyncio.wait_for(got.get(), 10) == (sender, "jobs", "job 1")
    assert await asyncio.wait_for(got.get(), 10) == (sender, "jobs", "job 2")
    await conn.remove_listener("jobs", lambda *_: None)
    await other.close()

    await conn.close()
    print("asyncpg ok")


asyncio.run(main())
