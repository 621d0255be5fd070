-- Cash transfers loaded through temporary tables: a staging table per batch, private to the
-- session, dropped at commit or emptied at each one. (A temporary table of a permanent
-- table's name is 42P07 in Partita, where PostgreSQL lets it shadow the other: see the e2e
-- test of temporary tables.)
CREATE TABLE accounts (id int PRIMARY KEY, owner text NOT NULL, balance numeric(12,2) NOT NULL CHECK (balance >= 0));
INSERT INTO accounts VALUES (1, 'ann', 100), (2, 'bob', 50), (3, 'cy', 0);
CREATE TEMP TABLE batch (n serial PRIMARY KEY, src int NOT NULL, dst int NOT NULL, amount numeric(12,2) NOT NULL);
INSERT INTO batch (src, dst, amount) VALUES (1, 2, 30), (2, 3, 60), (1, 3, 10);
SELECT n, src, dst, amount FROM batch ORDER BY n;
UPDATE accounts a SET balance = a.balance + d.delta FROM (SELECT id, sum(delta) AS delta FROM (SELECT src AS id, -amount AS delta FROM batch UNION ALL SELECT dst, amount FROM batch) x GROUP BY id) d WHERE a.id = d.id;
SELECT id, owner, balance FROM accounts ORDER BY id;
SELECT relname, relpersistence, relkind FROM pg_class WHERE relname IN ('batch', 'batch_pkey', 'accounts') ORDER BY relname;
SELECT table_name, table_type, commit_action FROM information_schema.tables WHERE table_name IN ('batch', 'accounts') ORDER BY table_name;
CREATE TEMP TABLE batch (n int);
CREATE TEMP TABLE IF NOT EXISTS batch (n int);
SELECT relname, relpersistence, pg_table_is_visible(oid) AS visible FROM pg_class WHERE relname IN ('accounts', 'batch') ORDER BY relname;
DROP TABLE batch;
SELECT * FROM batch;
CREATE TEMP TABLE batch (n int PRIMARY KEY);
SELECT count(*) FROM batch;
-- ON COMMIT DROP lives in its transaction only.
BEGIN;
CREATE TEMP TABLE fees ON COMMIT DROP AS SELECT id, balance * 0.01 AS fee FROM accounts;
SELECT id, fee::numeric(12,2) FROM fees ORDER BY id;
UPDATE accounts SET balance = balance - f.fee FROM fees f WHERE f.id = accounts.id;
COMMIT;
SELECT * FROM fees;
SELECT id, balance FROM accounts ORDER BY id;
CREATE TEMP TABLE gone (a int) ON COMMIT DROP;
SELECT * FROM gone;
BEGIN;
CREATE TEMP TABLE kept_back (a int) ON COMMIT DROP;
ROLLBACK;
SELECT * FROM kept_back;
-- ON COMMIT DELETE ROWS empties it at every commit.
CREATE TEMPORARY TABLE pending (id int PRIMARY KEY, amount numeric) ON COMMIT DELETE ROWS;
INSERT INTO pending VALUES (1, 5);
SELECT count(*) FROM pending;
BEGIN;
INSERT INTO pending VALUES (2, 7), (3, 8);
SELECT sum(amount) FROM pending;
INSERT INTO pending VALUES (2, 1);
ROLLBACK;
BEGIN;
INSERT INTO pending VALUES (2, 7);
SELECT count(*) FROM pending;
COMMIT;
SELECT count(*) FROM pending;
-- A copy of a permanent table's shape, and CREATE TEMP TABLE AS.
CREATE TEMP TABLE accounts_copy (LIKE accounts INCLUDING ALL);
INSERT INTO accounts_copy SELECT * FROM accounts WHERE balance > 0;
INSERT INTO accounts_copy VALUES (1, 'dup', 1);
SELECT count(*) FROM accounts_copy;
CREATE TEMP TABLE rich AS SELECT owner FROM accounts WHERE balance > 40;
SELECT owner FROM rich ORDER BY owner;
CREATE INDEX rich_owner ON rich (owner);
SELECT indexname FROM pg_indexes WHERE tablename = 'rich';
-- ON COMMIT is for temporary tables; a permanent table cannot reference one.
CREATE TABLE plain (a int) ON COMMIT DROP;
CREATE TABLE refs (id int PRIMARY KEY, b int REFERENCES accounts_copy (id));
CREATE TEMP TABLE trefs (id int PRIMARY KEY, b int REFERENCES accounts_copy (id));
CREATE SEQUENCE per_copy OWNED BY accounts_copy.id;
INSERT INTO trefs VALUES (1, 1);
INSERT INTO trefs VALUES (2, 42);
-- A temporary table dropped in a transaction frees its name for a permanent one.
CREATE TEMP TABLE swap (a int);
BEGIN;
DROP TABLE swap;
CREATE TABLE swap (a int);
COMMIT;
SELECT relpersistence FROM pg_class WHERE relname = 'swap';
DROP TABLE swap;
DISCARD TEMP;
SELECT * FROM accounts_copy;
SELECT * FROM rich;
SELECT count(*) FROM pg_class WHERE relpersistence = 't';
SELECT id, balance FROM accounts ORDER BY id;
