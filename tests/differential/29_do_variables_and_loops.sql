-- DO blocks as migrations and one-off fixes write them, with variables and loops: cash
-- transfers settled account by account, a backfill in batches, interest over a FOR loop,
-- SELECT INTO with STRICT, RETURNING INTO, FOUND, %ROWTYPE and %TYPE, EXIT/CONTINUE WHEN,
-- FOREACH over an array; each block's effect is read back from the tables.
CREATE TABLE accounts (id int PRIMARY KEY, owner text NOT NULL, balance numeric(12,2) NOT NULL, frozen boolean NOT NULL DEFAULT false, opened timestamptz);
CREATE TABLE transfers (id int PRIMARY KEY, from_id int, to_id int, amount numeric(12,2), settled boolean NOT NULL DEFAULT false);
CREATE TABLE journal (n serial PRIMARY KEY, note text);
INSERT INTO accounts VALUES (1, 'ann', 500, false, '2024-01-01 09:00+00'), (2, 'bob', 50, false, '2024-02-01 10:30+00'), (3, 'cy', 0, true, NULL), (4, 'dee', 1000, false, '2024-03-01 00:00+00');
INSERT INTO transfers (id, from_id, to_id, amount) VALUES (1, 1, 2, 100), (2, 2, 3, 25), (3, 4, 1, 300), (4, 2, 1, 1000), (5, 1, 4, 50.25);
-- Settle each transfer whose sender can pay and whose accounts are not frozen.
DO $$ DECLARE t record; sender accounts%ROWTYPE; done int := 0; skipped int := 0; BEGIN FOR t IN SELECT * FROM transfers WHERE NOT settled ORDER BY id LOOP SELECT * INTO STRICT sender FROM accounts WHERE id = t.from_id; IF sender.balance < t.amount OR sender.frozen OR (SELECT frozen FROM accounts WHERE id = t.to_id) THEN skipped := skipped + 1; INSERT INTO journal (note) VALUES ('skipped ' || t.id); CONTINUE; END IF; UPDATE accounts SET balance = balance - t.amount WHERE id = t.from_id; UPDATE accounts SET balance = balance + t.amount WHERE id = t.to_id; UPDATE transfers SET settled = true WHERE id = t.id; done := done + 1; END LOOP; INSERT INTO journal (note) VALUES (format('settled %s, skipped %s', done, skipped)); END $$;
SELECT id, owner, balance FROM accounts ORDER BY id;
SELECT id, settled FROM transfers ORDER BY id;
SELECT note FROM journal ORDER BY n;
-- Interest, compounded monthly by a FOR loop; FOUND after writes and reads.
DO $$ DECLARE rate CONSTANT numeric := 0.01; b accounts.balance%TYPE; months int := 3; who text; BEGIN SELECT balance, owner INTO b, who FROM accounts WHERE id = 4; FOR m IN 1..months LOOP b := round(b * (1 + rate), 2); END LOOP; UPDATE accounts SET balance = b WHERE id = 4; IF FOUND THEN INSERT INTO journal (note) VALUES (who || ' now ' || b); END IF; UPDATE accounts SET balance = 0 WHERE id = 99; IF NOT FOUND THEN INSERT INTO journal (note) VALUES ('no account 99'); END IF; SELECT owner INTO who FROM accounts WHERE id = 99; INSERT INTO journal (note) VALUES ('who is ' || coalesce(who, 'nobody') || ', found ' || FOUND); END $$;
SELECT note FROM journal WHERE n > 3 ORDER BY n;
SELECT balance FROM accounts WHERE id = 4;
-- A backfill in batches, with RETURNING INTO and loops that count down and step.
CREATE TABLE events (id int PRIMARY KEY, kind text, score int);
DO $$ DECLARE last_id int; batch int := 0; BEGIN FOR i IN 1..25 LOOP INSERT INTO events VALUES (i, CASE WHEN i % 3 = 0 THEN 'click' ELSE 'view' END, NULL) RETURNING id INTO last_id; END LOOP; LOOP batch := batch + 1; UPDATE events SET score = batch WHERE id IN (SELECT id FROM events WHERE score IS NULL ORDER BY id LIMIT 10); EXIT WHEN NOT FOUND; END LOOP; INSERT INTO journal (note) VALUES ('last ' || last_id || ' batches ' || batch); FOR i IN REVERSE 10..1 BY 4 LOOP INSERT INTO journal (note) VALUES ('down ' || i); END LOOP; END $$;
SELECT score, count(*) FROM events GROUP BY score ORDER BY score;
SELECT note FROM journal WHERE note LIKE 'last%' OR note LIKE 'down%' ORDER BY n;
-- WHILE, nested blocks with their own variables and handlers, FOREACH, EXIT WHEN.
DO $$ DECLARE n int := 0; tag text; owner_name text := 'outer'; BEGIN WHILE n < 5 LOOP n := n + 1; BEGIN INSERT INTO accounts (id, owner, balance) VALUES (n, 'dup', 0); EXCEPTION WHEN unique_violation THEN INSERT INTO journal (note) VALUES ('exists ' || n); END; END LOOP; DECLARE owner_name text := 'inner'; BEGIN INSERT INTO journal (note) VALUES (owner_name); END; INSERT INTO journal (note) VALUES (owner_name); FOREACH tag IN ARRAY ARRAY['red', 'green', 'stop', 'blue'] LOOP EXIT WHEN tag = 'stop'; INSERT INTO journal (note) VALUES ('tag ' || tag); END LOOP; END $$;
SELECT id, owner FROM accounts ORDER BY id;
SELECT note FROM journal WHERE n > 6 ORDER BY n;
-- What PostgreSQL refuses.
DO $$ DECLARE k CONSTANT int := 1; BEGIN k := 2; END $$;
DO $$ DECLARE k int NOT NULL := 1; BEGIN k := NULL; END $$;
DO $$ DECLARE k int NOT NULL; BEGIN NULL; END $$;
DO $$ DECLARE r record; BEGIN INSERT INTO journal (note) VALUES (r.owner); END $$;
DO $$ DECLARE n int; BEGIN SELECT id INTO STRICT n FROM accounts; END $$;
DO $$ DECLARE n int; BEGIN SELECT id INTO STRICT n FROM accounts WHERE id = 99; END $$;
DO $$ DECLARE owner text := 'x'; BEGIN UPDATE accounts SET balance = 0 WHERE owner = owner; END $$;
DO $$ DECLARE v no_such_type; BEGIN NULL; END $$;
DO $$ BEGIN EXIT; END $$;
DO $$ BEGIN FOR i IN 1..3 BY 0 LOOP NULL; END LOOP; END $$;
DO $$ DECLARE n int := 0; BEGIN FOR i IN 1..3 LOOP n := n + i; END LOOP; ASSERT n = 7, 'sum is ' || n; END $$;
-- Assignments convert to the variable's type; names that are not values stay names.
CREATE TABLE counters (k text PRIMARY KEY, hits int);
INSERT INTO counters VALUES ('a', 1), ('b', 2);
DO $$ DECLARE n int; r accounts%ROWTYPE; c CONSTANT int; "Mixed" text; BEGIN SELECT 2.6 INTO n; INSERT INTO journal (note) VALUES ('n=' || n); SELECT 7, 'gus', 12.5 INTO r; INSERT INTO journal (note) VALUES (r.id || ' ' || r.owner || ' ' || r.balance || ' ' || coalesce(r.frozen::text, 'null')); "Mixed" := 'quoted'; INSERT INTO journal (note) VALUES ("Mixed" || coalesce(c::text, ' and c is null')); END $$;
DO $$ DECLARE days int := 3; total int := 0; BEGIN INSERT INTO journal (note) VALUES (make_interval(days => days)::text); FOR total IN SELECT balance::int AS total FROM accounts ORDER BY total DESC LIMIT 1 LOOP INSERT INTO journal (note) VALUES ('top ' || total); END LOOP; END $$;
DO $$ DECLARE amount numeric := 5; BEGIN UPDATE accounts SET balance = balance - amount WHERE id IN (SELECT from_id FROM transfers WHERE settled); END $$;
DO $$ DECLARE k text := 'x'; BEGIN CREATE TABLE scratch (k text, hits int CHECK (hits > 0)); INSERT INTO scratch VALUES (k, 1); UPDATE counters SET hits = hits + 1 WHERE counters.k = 'a'; CREATE INDEX ON scratch (k); IF FOUND THEN INSERT INTO journal (note) VALUES ('found kept'); END IF; END $$;
SELECT * FROM scratch;
INSERT INTO scratch VALUES ('y', 0);
SELECT note FROM journal WHERE n > 13 ORDER BY n;
SELECT id, balance FROM accounts ORDER BY id;
DO $$ DECLARE v int; BEGIN UPDATE counters SET hits = hits RETURNING hits INTO v; END $$;
DO $$ DECLARE k text; BEGIN INSERT INTO counters VALUES ('c', 1) RETURNING k INTO k; END $$;
DO $$ DECLARE hits int := 1; BEGIN INSERT INTO counters VALUES ('a', 1) ON CONFLICT (k) DO UPDATE SET hits = hits + 1; END $$;
DO $$ DECLARE c CONSTANT int := 1; BEGIN SELECT 2 INTO c; END $$;
DO $$ DECLARE x int; BEGIN FOREACH x IN ARRAY NULL::int[] LOOP NULL; END LOOP; END $$;
DO $$ DECLARE n int := 0; BEGIN FOR i IN 1..2000000000 LOOP n := i; EXIT WHEN i >= 3; END LOOP; INSERT INTO journal (note) VALUES ('stopped at ' || n); END $$;
SELECT k, hits FROM counters ORDER BY k;
SELECT note FROM journal WHERE note LIKE 'stopped%';
DROP TABLE counters, scratch;
SELECT count(*) FROM journal;
DROP TABLE accounts, transfers, journal, events;
-- Labels, CASE statements and GET DIAGNOSTICS: a batched settlement that reports its counts.
CREATE TABLE ledger (id int PRIMARY KEY, owner text NOT NULL, balance numeric(10,2) NOT NULL, tier varchar(5));
INSERT INTO ledger VALUES (1, 'ann', 100, NULL), (2, 'bob', 50, NULL), (3, 'cy', 0, NULL), (4, 'dee', 75, NULL);
DO $$ DECLARE n bigint; total bigint := 0; BEGIN UPDATE ledger SET balance = balance + 1 WHERE balance > 10; GET DIAGNOSTICS n = ROW_COUNT; total := total + n; DELETE FROM ledger WHERE id = 99; GET CURRENT DIAGNOSTICS n := ROW_COUNT; total := total + n; INSERT INTO ledger VALUES (5, 'eve', 5, NULL); GET DIAGNOSTICS n = ROW_COUNT; INSERT INTO ledger (id, owner, balance) VALUES (100 + total, 'count', total + n); END $$;
SELECT id, owner, balance FROM ledger ORDER BY id;
DO $$ DECLARE r record; BEGIN FOR r IN SELECT * FROM ledger ORDER BY id LOOP CASE WHEN r.balance > 60 THEN UPDATE ledger SET tier = 'gold' WHERE id = r.id; WHEN r.balance > 0 THEN UPDATE ledger SET tier = 'basic' WHERE id = r.id; ELSE UPDATE ledger SET tier = 'none' WHERE id = r.id; END CASE; END LOOP; END $$;
SELECT id, tier FROM ledger ORDER BY id;
DO $$ DECLARE x int := 3; BEGIN CASE x WHEN 1, 2 THEN UPDATE ledger SET tier = 'low' WHERE id = 1; WHEN 3, 4 THEN UPDATE ledger SET tier = 'mid' WHERE id = 1; END CASE; END $$;
DO $$ DECLARE x int := 9; BEGIN CASE x WHEN 1 THEN NULL; END CASE; END $$;
SELECT tier FROM ledger WHERE id = 1;
DO $$ DECLARE i int; j int; pairs int := 0; BEGIN <<outer>> FOR i IN 1..5 LOOP <<inner>> FOR j IN 1..5 LOOP CONTINUE outer WHEN j > i; EXIT outer WHEN i * j > 12; pairs := pairs + 1; END LOOP inner; END LOOP outer; INSERT INTO ledger VALUES (200, 'pairs', pairs, NULL); END $$;
DO $$ <<main>> DECLARE n int := 0; BEGIN LOOP n := n + 1; EXIT main WHEN n >= 3; END LOOP; INSERT INTO ledger VALUES (201, 'unreached', 0, NULL); END main $$;
DO $$ BEGIN <<blk>> BEGIN INSERT INTO ledger VALUES (202, 'in', 0, NULL); EXIT blk; INSERT INTO ledger VALUES (203, 'skipped', 0, NULL); END blk; INSERT INTO ledger VALUES (204, 'after', 0, NULL); END $$;
SELECT id, owner, balance FROM ledger WHERE id >= 200 ORDER BY id;
DO $$ DECLARE s text; m text; d text; c text; t text; BEGIN INSERT INTO ledger VALUES (1, 'dup', 0, NULL); EXCEPTION WHEN unique_violation THEN GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, c = CONSTRAINT_NAME, t = TABLE_NAME; INSERT INTO ledger VALUES (300, s || '|' || c || '|' || t || '|' || d, 0, NULL); END $$;
SELECT owner FROM ledger WHERE id = 300;
DO $$ DECLARE s text; BEGIN GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE; END $$;
DO $$ DECLARE v varchar(3); BEGIN v := 'abc  '; UPDATE ledger SET tier = v WHERE id = 2; v := 'abcd'; END $$;
DO $$ DECLARE v char(2) := 'toolong'; BEGIN NULL; END $$;
DO $$ DECLARE v varchar(2); BEGIN SELECT 'xyz' INTO v; END $$;
DO $$ BEGIN LOOP EXIT nope; END LOOP; END $$;
DO $$ BEGIN <<b>> BEGIN LOOP CONTINUE b; END LOOP; END; END $$;
DO $$ BEGIN <<l>> LOOP EXIT; END LOOP m; END $$;
DO $$ DECLARE n int; BEGIN GET DIAGNOSTICS n = MESSAGE_TEXT; END $$;
SELECT id, tier FROM ledger WHERE id = 2;
DO $$ DECLARE c char := 'ab'; BEGIN NULL; END $$;
-- A simple CASE evaluates its subject once.
CREATE SEQUENCE case_seq;
DO $$ BEGIN PERFORM nextval('case_seq'); CASE nextval('case_seq') WHEN 1 THEN RAISE EXCEPTION 'one'; WHEN 2 THEN CREATE TABLE case_two (a int); END CASE; END $$;
SELECT count(*) FROM case_two;
DO $$ DECLARE r record; BEGIN SELECT 5 AS n INTO r; UPDATE case_two SET a = 1; GET DIAGNOSTICS r.n = ROW_COUNT; INSERT INTO case_two VALUES (r.n); END $$;
SELECT a FROM case_two;
DROP TABLE case_two;
DROP SEQUENCE case_seq;
DROP TABLE ledger;
-- A whole record as a value: NULL before it is assigned, then the row of its fields.
CREATE TABLE rec_log (line text);
DO $$ DECLARE r record; BEGIN INSERT INTO rec_log VALUES (coalesce(r::text, 'unset')); SELECT 1 AS a, 'x y' AS b INTO r; INSERT INTO rec_log VALUES (r::text); IF r IS NOT NULL THEN INSERT INTO rec_log VALUES ('set'); END IF; SELECT NULL::int AS a INTO r; IF r IS NULL THEN INSERT INTO rec_log VALUES ('all null'); END IF; END $$;
SELECT line FROM rec_log;
DROP TABLE rec_log;
CREATE TABLE rec_t (a int, b text);
INSERT INTO rec_t VALUES (1, 'x');
CREATE TABLE rec_log2 (line text);
DO $$ DECLARE r record; BEGIN SELECT 1 AS a, 'x y' AS b INTO r; INSERT INTO rec_log2 VALUES (to_json(r)::text), (r::text), (r.b); END $$;
DO $$ DECLARE rec_t record; BEGIN SELECT * INTO rec_t FROM rec_t LIMIT 1; INSERT INTO rec_log2 SELECT to_json(rec_t)::text FROM rec_t; END $$;
SELECT line FROM rec_log2;
DROP TABLE rec_t, rec_log2;
