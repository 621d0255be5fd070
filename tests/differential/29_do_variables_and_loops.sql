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
