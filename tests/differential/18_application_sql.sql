-- What applications and their tools send: counting a joined table's rows with count(t.*),
-- a quoted default beside a typed column in coalesce, the SET lines of pg_dump's scripts
-- and of ORMs, and advisory locks as migration tools take them.
CREATE TABLE customers (id int PRIMARY KEY, name text, signed_up timestamp, vip bool, birthday date);
CREATE TABLE orders (id int PRIMARY KEY, customer_id int, total int);
INSERT INTO customers VALUES (1, 'ann', '2024-01-05 10:00', true, '1990-02-03'), (2, 'bob', NULL, NULL, NULL), (3, 'cy', '2023-12-31', false, '1985-07-08');
INSERT INTO orders VALUES (10, 1, 30), (11, 1, 12), (12, 3, 7);
SELECT c.id, count(o.*), count(o), count(c.*) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.id ORDER BY c.id;
SELECT c.name FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.name HAVING count(o.*) = 0;
SELECT count(o.*) FILTER (WHERE o.total > 10) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id;
SELECT count(x.*) FROM customers c LEFT JOIN (SELECT customer_id, total FROM orders) x ON x.customer_id = c.id;
SELECT count(t.*) FROM (VALUES (NULL::int)) t(a);
SELECT id, coalesce(signed_up, '1970-01-01'), coalesce(vip, 'f'), coalesce(birthday, '2000-01-01') FROM customers ORDER BY id;
SELECT id FROM customers WHERE coalesce(vip, 'f') ORDER BY id;
SELECT greatest(signed_up, '2024-01-01'), nullif(vip, 't') FROM customers ORDER BY id;
SELECT coalesce(signed_up, 'soon') FROM customers;
SELECT 'soon'::timestamp;
SELECT * FROM customers WHERE signed_up = '2024-13-01';
SELECT 'soon'::date;
SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;
SET default_tablespace = '';
SET default_with_oids = false;
SET work_mem = '64MB';
SET maintenance_work_mem = '1GB';
SET synchronous_commit = off;
SET random_page_cost = 1.1;
SET jit = off;
SET enable_seqscan = no;
SHOW work_mem;
SHOW jit;
SHOW enable_seqscan;
SHOW row_security;
SET enable_seqscan = maybe;
SET default_with_oids = true;
SELECT pg_try_advisory_lock(42), pg_advisory_unlock(42), pg_advisory_unlock(42);
SELECT pg_advisory_lock(7), pg_advisory_lock(7), pg_try_advisory_lock(1, 2);
SELECT pg_advisory_unlock(7), pg_advisory_unlock(7), pg_advisory_unlock(7), pg_advisory_unlock(1, 2);
SELECT pg_advisory_lock_shared(8), pg_advisory_unlock_shared(8), pg_advisory_unlock(8);
SELECT pg_advisory_unlock_all();
BEGIN;
SELECT pg_advisory_xact_lock(9), pg_try_advisory_xact_lock(9);
SELECT pg_advisory_unlock(9);
COMMIT;
SELECT count(c.*) FROM customers LEFT JOIN orders c ON c.customer_id = customers.id AND c.total > 100;
-- Writes with WITH: a WITH query read by a write, a write's RETURNING rows read by the
-- statement around it (archiving: DELETE … RETURNING into INSERT), in one transaction.
CREATE TABLE archive (id int PRIMARY KEY, customer_id int, total int);
WITH big AS (SELECT id FROM orders WHERE total > 20) UPDATE orders SET total = total + 1 WHERE id IN (SELECT id FROM big);
WITH moved AS (DELETE FROM orders WHERE customer_id = 1 RETURNING *) INSERT INTO archive SELECT * FROM moved;
SELECT * FROM archive ORDER BY id;
SELECT * FROM orders ORDER BY id;
WITH n AS (INSERT INTO orders VALUES (20, 2, 5), (21, 2, 6) RETURNING id, total) SELECT sum(total), count(*) FROM n;
WITH n(order_id, amount) AS (INSERT INTO orders VALUES (22, 3, 9) RETURNING id, total) SELECT order_id, amount * 2 FROM n;
WITH u AS (UPDATE orders SET total = total * 10 WHERE customer_id = 2 RETURNING id, total) SELECT * FROM u ORDER BY id;
WITH s AS (SELECT 21 AS id) DELETE FROM orders o USING s WHERE o.id = s.id RETURNING o.id;
WITH d AS (DELETE FROM orders WHERE id = 20) SELECT * FROM d;
WITH a AS (INSERT INTO archive VALUES (30, 3, 1) RETURNING *), b AS (INSERT INTO archive VALUES (30, 3, 2) RETURNING *) SELECT * FROM a;
WITH a AS (INSERT INTO archive VALUES (31, 3, 1) RETURNING *) SELECT 1 / 0 FROM a;
SELECT count(*) FROM archive;
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3), w AS (INSERT INTO archive SELECT n + 40, 0, n FROM r RETURNING id) SELECT * FROM w ORDER BY id;
BEGIN READ ONLY;
WITH a AS (INSERT INTO archive VALUES (50, 3, 1) RETURNING *) SELECT * FROM a;
ROLLBACK;
SELECT * FROM archive ORDER BY id;
-- Parts of a WITH that name a table the statement writes, a view, or each other.
CREATE VIEW big_orders AS SELECT id, total FROM orders WHERE total > 50;
WITH big_orders AS (INSERT INTO orders VALUES (60, 3, 1) RETURNING id, total) SELECT * FROM big_orders;
WITH w AS (INSERT INTO orders VALUES (61, 3, 2) RETURNING total + 1 AS next) SELECT next FROM w;
WITH a AS (INSERT INTO orders VALUES (62, 3, 3) RETURNING *), b AS (SELECT id * 2 AS twice FROM a) SELECT * FROM b;
WITH archive AS (SELECT 30 AS id) DELETE FROM archive WHERE id = 30 RETURNING *;
WITH z AS (SELECT 1 / 0 AS x) INSERT INTO orders VALUES (63, 3, 4);
WITH a AS (WITH b AS (SELECT 64 AS id, 3 AS customer_id, 5 AS total) INSERT INTO orders SELECT * FROM b RETURNING *) SELECT * FROM a;
WITH a AS (SELECT 1), a AS (SELECT 2) INSERT INTO orders VALUES (65, 3, 6);
WITH n(x, y, z) AS (INSERT INTO orders VALUES (66, 3, 7) RETURNING id, total) SELECT * FROM n;
WITH w AS (SELECT 22 AS id, 99 AS total) UPDATE orders o SET total = w.total FROM w WHERE o.id = w.id RETURNING o.*;
SELECT * FROM orders ORDER BY id;
-- SET undone by ROLLBACK TO SAVEPOINT; current_setting with missing_ok, as row-level
-- security policies and audit triggers read an application's settings.
BEGIN;
SET lock_timeout = '10ms';
SAVEPOINT s;
SET lock_timeout = '20ms';
SET app.user_id = '42';
SELECT current_setting('app.user_id');
ROLLBACK TO s;
SHOW lock_timeout;
SELECT current_setting('app.user_id', true), current_setting('app.nothing', true) IS NULL;
COMMIT;
SHOW lock_timeout;
SELECT current_setting('app.nothing');
SET app.tenant = 'acme';
SHOW app.tenant;
-- An index on a table without a primary key finds its rows by their hidden row id.
CREATE TABLE visits (page text, day date);
CREATE INDEX visits_day ON visits (day);
INSERT INTO visits VALUES ('/', '2024-01-01'), ('/a', '2024-01-02'), ('/b', '2024-01-01');
SELECT page FROM visits WHERE day = '2024-01-01' ORDER BY page;
SELECT * FROM visits WHERE day = '2024-01-02';
-- LIMIT and OFFSET of a parameter sent without a type (node-postgres sends every one so).
PREPARE page AS SELECT page FROM visits ORDER BY page LIMIT $1 OFFSET $2;
EXECUTE page(2, 1);
EXECUTE page(1, 0);
-- set_config beside other items (asyncpg's type lookup): the others see the old value.
SELECT current_setting('jit') AS cur, set_config('jit', 'off', false) AS new, 1 + 1 AS two;
SHOW jit;
SELECT set_config('jit', 'on', false), current_setting('jit');
-- Parameters typed by their context: a cast, a condition, coalesce, a function.
PREPARE typed AS SELECT $1::int + 1, $2::date + 1, coalesce($3, 5), abs($4), 1 WHERE $5;
EXECUTE typed('41', '2024-02-28', NULL, '-2.5', 'true');
EXECUTE typed('x', '2024-02-28', NULL, '1', 'true');
SELECT array_agg(oid ORDER BY oid) FROM pg_type WHERE typname IN ('int4', 'text');
SELECT format_type(0, NULL);
-- A parameter nothing types is text.
PREPARE same AS SELECT $1 = $2;
EXECUTE same('a', 'a');
EXECUTE same(1, 2);
-- What asyncpg's pool sends when it takes a connection back, and other session resets.
SELECT pg_advisory_lock(5);
SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;
BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE;
SHOW transaction_read_only;
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY, NOT DEFERRABLE;
ROLLBACK;
PREPARE one AS SELECT 1;
SET work_mem = '8MB';
BEGIN;
DISCARD ALL;
ROLLBACK;
DISCARD ALL;
EXECUTE one;
SHOW work_mem;
DISCARD PLANS;
DISCARD SEQUENCES;
-- MOVE, and FETCH and MOVE without FROM.
BEGIN;
DECLARE c CURSOR FOR SELECT generate_series(1, 10);
MOVE FORWARD 3 FROM c;
FETCH 2 c;
MOVE c;
FETCH c;
MOVE ALL IN c;
FETCH NEXT FROM c;
COMMIT;
-- Parameters compared with uuid and jsonb columns are read as those types.
CREATE TABLE devices (id int PRIMARY KEY, tag uuid, spec jsonb);
INSERT INTO devices VALUES (1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": 1}');
PREPARE by_tag AS SELECT id FROM devices WHERE tag = $1;
EXECUTE by_tag('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11');
EXECUTE by_tag('nope');
PREPARE by_spec AS SELECT id FROM devices WHERE spec = $1;
EXECUTE by_spec('{"a":1}');
PREPARE digits AS SELECT $1::numeric, $1::numeric + 1.5;
EXECUTE digits('1.10');
-- Unknown-type arguments (quoted literals, untyped parameters) as PostgreSQL resolves
-- them: by the function (round of a numeric, repeat's int4 count, ceil of a float8) or
-- the operator (|| is text, an interval is added to a timestamp, OR takes booleans).
SELECT round('3.14159', 2), round('2.5'), ceil('3.2'), floor('-3.5'), power('2', '10');
SELECT substr('hello', '2'), repeat('ab', '3'), left('abcdef', '3'), split_part('a,b,c', ',', '2');
SELECT chr('65'), make_date('2024', '2', '29'), to_timestamp('0') AT TIME ZONE 'UTC';
SELECT repeat('ab', 'x');
SELECT make_date(2024, 2, 30);
PREPARE unknowns AS SELECT round($1, 2), $2 || $3, $4 OR $5, substr($2, $6), 2 ^ $6;
EXECUTE unknowns('3.14159', 'a', 'b', 'false', 'true', '2');
PREPARE later AS SELECT timestamp '2024-01-01' + $1, $2 BETWEEN 1 AND 10, $3 = ANY(ARRAY[1, 2]);
EXECUTE later('1 day 2 hours', '5', '2');
-- OID-alias casts of columns: named as PostgreSQL names them, text looked up by name.
CREATE TABLE rel_t (a int PRIMARY KEY);
select oid::regclass, c.oid::regclass as named, relnamespace::regnamespace, 'rel_t'::regclass::oid > 0 as found from pg_class c where relname = 'rel_t';
select count(*) > 0 from pg_attribute where attrelid = (select relname from pg_class where relname = 'rel_t')::regclass;
-- What ORMs send at connect and migrate time: Rails' type-map query (typinput compared with
-- a regprocedure), timestamp(6) columns, DROP INDEX CONCURRENTLY; TypeORM's scalar
-- functions in FROM and CASE of a boolean column WHEN 't'; a mixed-case table's serial
-- sequence through pg_get_serial_sequence and setval (Prisma, Django).
SELECT count(*) > 0 FROM pg_type as t LEFT JOIN pg_range as r ON oid = rngtypid WHERE t.typtype IN ('r', 'e', 'd') OR t.typinput = 'array_in(cstring,oid,integer)'::regprocedure OR t.typelem != 0;
SELECT typname, typinput, typoutput, typreceive, typsend FROM pg_type WHERE typname IN ('int4', '_int4', 'date', 'numeric', 'text', '_text', 'timestamptz', 'uuid', 'jsonb', 'bool', 'bytea') ORDER BY typname;
CREATE TABLE schema_migrations (version varchar NOT NULL PRIMARY KEY, created_at timestamp(6) NOT NULL, updated_at timestamp(6));
SELECT attname, format_type(atttypid, atttypmod), atttypmod FROM pg_attribute WHERE attrelid = 'schema_migrations'::regclass AND attnum > 0 ORDER BY attnum;
CREATE INDEX CONCURRENTLY index_migrations_on_created ON schema_migrations (created_at);
DROP INDEX CONCURRENTLY index_migrations_on_created;
DROP INDEX CONCURRENTLY IF EXISTS index_migrations_on_created;
SELECT * FROM current_schema();
SELECT x FROM lower('ABC') AS t(x);
SELECT s.* FROM upper('a') s;
SELECT * FROM abs(-3) a, generate_series(1, 2) g;
SELECT id, CASE vip WHEN 't' THEN 'VIP' WHEN 'f' THEN 'regular' ELSE '?' END, CASE name WHEN 'ann' THEN 1 END FROM customers ORDER BY id;
CREATE TABLE "User" (id serial PRIMARY KEY, n text);
SELECT pg_get_serial_sequence('"User"', 'id');
SELECT setval(pg_get_serial_sequence('"User"', 'id'), 5);
INSERT INTO "User" (n) VALUES ('a') RETURNING id;
SELECT currval('public."User_id_seq"');
-- Constant defaults as PostgreSQL's catalogs show them ('x'::text, ''::character varying, '-1'::integer), which Rails and Knex parse.
create table dft (a text default 'x', b varchar(10) default '', c jsonb default '{}', d bigint default '0', e int default 5, f bool default '1', g numeric(5,2) default 1.5, h float8 default 2.5, i date default '2024-01-01', k uuid default 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', l int default -1, m text default null, n char(2) default 'ab', o bigint default 0, q bool default false, r smallint default 3, s varchar default 'x'::character varying, t text default ('y'), u text default 'it''s', v int default '-2', w numeric default '-1.5', x bigint default 3000000000);
select attname, pg_get_expr(adbin, adrelid) from pg_attrdef join pg_attribute on attrelid = adrelid and attnum = adnum where adrelid = 'dft'::regclass order by attnum;
select column_name, column_default from information_schema.columns where table_name = 'dft' order by ordinal_position;
-- CREATE EXTENSION: plpgsql is there, as in every PostgreSQL database (Rails' schema.rb enables it); others are 0A000.
SELECT extname, extversion FROM pg_extension;
CREATE EXTENSION IF NOT EXISTS "plpgsql";
CREATE EXTENSION plpgsql;
CREATE EXTENSION IF NOT EXISTS nosuchthing;
-- Django's introspection of a table's constraints and indexes (get_constraints): unnest WITH
-- ORDINALITY over a column of another FROM item, in a correlated ARRAY(SELECT …) and in a
-- derived table, a subscripted outer column, and pg_am's btree.
CREATE TABLE dj_author (id serial PRIMARY KEY, name varchar(50) NOT NULL UNIQUE);
CREATE TABLE dj_book (id bigserial PRIMARY KEY, author_id int NOT NULL REFERENCES dj_author (id) DEFERRABLE INITIALLY DEFERRED, title text NOT NULL, pages int CHECK (pages > 0));
CREATE INDEX dj_book_title_idx ON dj_book (title DESC, pages);
CREATE UNIQUE INDEX dj_book_author_title ON dj_book (author_id, title);
SELECT c.conname, array(SELECT attname FROM unnest(c.conkey) WITH ORDINALITY cols(colid, arridx) JOIN pg_attribute AS ca ON cols.colid = ca.attnum WHERE ca.attrelid = c.conrelid ORDER BY cols.arridx), c.contype, (SELECT fkc.relname || '.' || fka.attname FROM pg_attribute AS fka JOIN pg_class AS fkc ON fka.attrelid = fkc.oid WHERE fka.attrelid = c.confrelid AND fka.attnum = c.confkey[1]), cl.reloptions FROM pg_constraint AS c JOIN pg_class AS cl ON c.conrelid = cl.oid WHERE cl.relname = 'dj_book' AND pg_catalog.pg_table_is_visible(cl.oid) ORDER BY 1;
SELECT indexname, array_agg(attname ORDER BY arridx), indisunique, indisprimary, array_agg(ordering ORDER BY arridx), amname, exprdef, s2.attoptions FROM (SELECT c2.relname as indexname, idx.*, attr.attname, am.amname, CASE WHEN idx.indexprs IS NOT NULL THEN pg_get_indexdef(idx.indexrelid) END AS exprdef, CASE am.amname WHEN 'btree' THEN CASE (option & 1) WHEN 1 THEN 'DESC' ELSE 'ASC' END END as ordering, c2.reloptions as attoptions FROM (SELECT * FROM pg_index i, unnest(i.indkey, i.indoption) WITH ORDINALITY koi(key, option, arridx)) idx LEFT JOIN pg_class c ON idx.indrelid = c.oid LEFT JOIN pg_class c2 ON idx.indexrelid = c2.oid LEFT JOIN pg_am am ON c2.relam = am.oid LEFT JOIN pg_attribute attr ON attr.attrelid = c.oid AND attr.attnum = idx.key WHERE c.relname = 'dj_book' AND pg_catalog.pg_table_is_visible(c.oid)) s2 GROUP BY indexname, indisunique, indisprimary, amname, exprdef, attoptions ORDER BY 1;
SELECT c.conname, u.* FROM pg_constraint c, unnest(c.conkey) WITH ORDINALITY u(v, n) WHERE c.conname LIKE 'dj_book%' ORDER BY 1, 3;
SELECT c.conname, u.ordinality, u.v FROM pg_constraint c LEFT JOIN LATERAL unnest(c.confkey) WITH ORDINALITY u(v) ON true WHERE c.conname LIKE 'dj_book%' ORDER BY 1, 2;
SELECT c.conname, (SELECT string_agg(attname, ',') FROM pg_attribute a WHERE a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)) FROM pg_constraint c WHERE c.conname LIKE 'dj_book%' ORDER BY 1;
-- Partial unique indexes, as Rails' `where:` and Django's UniqueConstraint(condition=) make
-- them for soft-deleted rows, and ON CONFLICT inferring one from its WHERE.
CREATE TABLE soft_users (id int PRIMARY KEY, email text, deleted_at timestamp, active bool NOT NULL DEFAULT true, score int);
CREATE UNIQUE INDEX soft_users_live_email ON soft_users (email) WHERE "deleted_at" IS NULL;
CREATE INDEX soft_users_active_score ON soft_users (score) WHERE active;
INSERT INTO soft_users VALUES (1, 'a@x', NULL, true, 10), (2, 'a@x', '2024-01-01', true, 20), (3, 'b@x', NULL, false, 30);
INSERT INTO soft_users VALUES (4, 'a@x', NULL, true, 40);
INSERT INTO soft_users VALUES (4, 'a@x', '2024-02-02', true, 40);
UPDATE soft_users SET deleted_at = NULL WHERE id = 2;
UPDATE soft_users SET deleted_at = '2024-03-03' WHERE id = 1;
UPDATE soft_users SET deleted_at = NULL WHERE id = 2;
SELECT id, email FROM soft_users WHERE email = 'a@x' AND deleted_at IS NULL ORDER BY id;
SELECT id, email FROM soft_users WHERE email = 'a@x' ORDER BY id;
SELECT id FROM soft_users WHERE score > 5 AND active ORDER BY id;
SELECT id FROM soft_users WHERE score > 5 AND active = true ORDER BY id;
INSERT INTO soft_users VALUES (5, 'a@x', NULL, true, 1) ON CONFLICT (email) DO NOTHING;
INSERT INTO soft_users VALUES (5, 'a@x', NULL, true, 1) ON CONFLICT (email) WHERE deleted_at IS NULL DO UPDATE SET score = soft_users.score + 100 RETURNING id, score;
INSERT INTO soft_users VALUES (6, 'a@x', NULL, true, 1) ON CONFLICT DO NOTHING;
INSERT INTO soft_users VALUES (7, 'c@x', NULL, true, 1) ON CONFLICT (email) WHERE deleted_at IS NULL DO NOTHING;
SELECT id, email, score FROM soft_users ORDER BY id;
SELECT pg_get_expr(indpred, indrelid) FROM pg_index WHERE indrelid = 'soft_users'::regclass ORDER BY 1;
CREATE INDEX soft_users_bad ON soft_users (email) WHERE score > (SELECT 1);
CREATE INDEX soft_users_bad ON soft_users (email) WHERE deleted_at < now();
CREATE INDEX soft_users_bad ON soft_users (email) WHERE nosuch > 1;
CREATE INDEX soft_users_bad ON soft_users (email) WHERE score;
ALTER TABLE soft_users DROP COLUMN deleted_at;
SELECT indexname FROM pg_indexes WHERE tablename = 'soft_users' ORDER BY 1;
-- ALTER TABLE … RENAME CONSTRAINT (of each kind), and the information_schema views of
-- constraints that introspection tools read (check_constraints, constraint_column_usage).
CREATE TABLE rc_parent (id int PRIMARY KEY, code text NOT NULL UNIQUE);
CREATE TABLE rc_child (id int PRIMARY KEY, parent_id int REFERENCES rc_parent (id) DEFERRABLE, qty int CHECK (qty > 0), note text CHECK (length(note) > 0));
ALTER TABLE rc_child RENAME CONSTRAINT rc_child_qty_check TO rc_child_qty_positive;
ALTER TABLE rc_child RENAME CONSTRAINT rc_child_parent_id_fkey TO rc_child_parent_fk;
ALTER TABLE rc_parent RENAME CONSTRAINT rc_parent_code_key TO rc_parent_code_unique;
ALTER TABLE rc_parent RENAME CONSTRAINT rc_parent_pkey TO rc_parent_pk;
ALTER TABLE rc_parent RENAME CONSTRAINT nosuch TO x;
ALTER TABLE rc_parent RENAME CONSTRAINT rc_parent_pk TO rc_parent_code_unique;
ALTER TABLE rc_child RENAME CONSTRAINT rc_child_note_check TO rc_child_qty_positive;
SELECT conname, contype FROM pg_constraint WHERE conrelid IN ('rc_parent'::regclass, 'rc_child'::regclass) ORDER BY 1;
SELECT indexname FROM pg_indexes WHERE tablename IN ('rc_parent', 'rc_child') ORDER BY 1;
INSERT INTO rc_parent VALUES (1, 'a');
INSERT INTO rc_parent VALUES (2, 'a');
INSERT INTO rc_child VALUES (1, 9, 1, 'n');
INSERT INTO rc_child VALUES (1, 1, 0, 'n');
SELECT constraint_name, check_clause FROM information_schema.check_constraints WHERE constraint_name LIKE 'rc_%' ORDER BY 1;
SELECT cc.check_clause FROM information_schema.check_constraints cc JOIN information_schema.table_constraints tc USING (constraint_name) WHERE tc.table_name = 'rc_child' ORDER BY 1;
SELECT table_name, column_name, constraint_name FROM information_schema.constraint_column_usage WHERE table_name LIKE 'rc_%' ORDER BY 1, 2, 3;
SELECT constraint_name, constraint_type, is_deferrable, initially_deferred FROM information_schema.table_constraints WHERE table_name = 'rc_child' AND constraint_name NOT LIKE '%not_null' ORDER BY 2, 1;
SELECT conname, pg_get_constraintdef(oid), pg_get_constraintdef(oid, true) FROM pg_constraint WHERE contype = 'c' AND conrelid = 'rc_child'::regclass ORDER BY 1;
-- `*` over a derived table or WITH query that has two columns of one name keeps both names.
INSERT INTO dj_author VALUES (1, 'ann');
INSERT INTO dj_book VALUES (1, 1, 'T', 10);
SELECT * FROM (SELECT a.id, b.id FROM dj_author a JOIN dj_book b ON b.author_id = a.id) s;
WITH x AS (SELECT * FROM dj_author a JOIN dj_book b ON b.author_id = a.id) SELECT * FROM x;
-- RETURNING xmax as PostgreSQL shows it: 0 for a new row version (an insert, an UPDATE), the
-- transaction's number for a row an upsert locked to update or a DELETE removed, so that
-- RETURNING (xmax = 0) AS inserted tells an upsert's inserts from its updates.
CREATE TABLE upsert_kv (k int PRIMARY KEY, v text);
INSERT INTO upsert_kv VALUES (1, 'a') ON CONFLICT (k) DO UPDATE SET v = excluded.v RETURNING k, (xmax = 0) AS inserted;
INSERT INTO upsert_kv VALUES (1, 'b') ON CONFLICT (k) DO UPDATE SET v = excluded.v RETURNING k, (xmax = 0) AS inserted;
INSERT INTO upsert_kv VALUES (1, 'c'), (2, 'd') ON CONFLICT (k) DO UPDATE SET v = excluded.v RETURNING k, xmax = 0 AS inserted, v;
BEGIN;
INSERT INTO upsert_kv VALUES (3, 'e'), (2, 'f') ON CONFLICT (k) DO UPDATE SET v = excluded.v RETURNING k, xmax::text::bigint > 0 AS updated;
UPDATE upsert_kv SET v = 'g' WHERE k = 3 RETURNING k, xmax <> 0;
COMMIT;
INSERT INTO upsert_kv VALUES (4, 'h') RETURNING *;
DELETE FROM upsert_kv WHERE k = 4 RETURNING k, xmax <> 0;
-- UPDATE … SET (a, b) = (SELECT …), ROW(…) and a row constructor; PostgreSQL's errors for the
-- other forms and for a count that does not match.
CREATE TABLE multi_acc (id int PRIMARY KEY, a int, b text);
CREATE TABLE multi_src (id int PRIMARY KEY, x int, y text);
INSERT INTO multi_acc VALUES (1, 1, 'one'), (2, 2, 'two'), (3, 3, 'three');
INSERT INTO multi_src VALUES (1, 10, 'ten'), (2, 20, 'twenty');
UPDATE multi_acc SET (a, b) = (SELECT x, y FROM multi_src WHERE multi_src.id = multi_acc.id) WHERE id <= 2;
SELECT * FROM multi_acc ORDER BY id;
UPDATE multi_acc SET (a, b) = (SELECT x, y FROM multi_src WHERE multi_src.id = multi_acc.id);
SELECT * FROM multi_acc ORDER BY id;
UPDATE multi_acc SET (b) = ROW('r') WHERE id = 1;
UPDATE multi_acc SET (a, b) = ROW(5, 'five') WHERE id = 2;
UPDATE multi_acc SET (a, b) = (7, 'seven') WHERE id = 3 RETURNING *;
UPDATE multi_acc SET (a) = (8) WHERE id = 3;
UPDATE multi_acc SET (a, b) = (1) WHERE id = 3;
UPDATE multi_acc SET (a, b) = (SELECT 1) WHERE id = 3;
UPDATE multi_acc SET (a, b) = (SELECT x, y FROM multi_src) WHERE id = 3;
SELECT * FROM multi_acc ORDER BY id;
-- TypeORM's foreign-key query: UNNEST beside an item aliased as a column it reads.
SELECT "con"."conname" AS "constraint_name", "con"."nspname" AS "table_schema", "con"."relname" AS "table_name", "att2"."attname" AS "column_name", "ns"."nspname" AS "referenced_table_schema", "cl"."relname" AS "referenced_table_name", "att"."attname" AS "referenced_column_name", "con"."confdeltype" AS "on_delete", "con"."confupdtype" AS "on_update", "con"."condeferrable" AS "deferrable", "con"."condeferred" AS "deferred" FROM ( SELECT UNNEST ("con1"."conkey") AS "parent", UNNEST ("con1"."confkey") AS "child", "con1"."confrelid", "con1"."conrelid", "con1"."conname", "con1"."contype", "ns"."nspname", "cl"."relname", "con1"."condeferrable", CASE WHEN "con1"."condeferred" THEN 'INITIALLY DEFERRED' ELSE 'INITIALLY IMMEDIATE' END as condeferred, CASE "con1"."confdeltype" WHEN 'a' THEN 'NO ACTION' WHEN 'r' THEN 'RESTRICT' WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' END as "confdeltype", CASE "con1"."confupdtype" WHEN 'a' THEN 'NO ACTION' WHEN 'r' THEN 'RESTRICT' WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' END as "confupdtype" FROM "pg_class" "cl" INNER JOIN "pg_namespace" "ns" ON "cl"."relnamespace" = "ns"."oid" INNER JOIN "pg_constraint" "con1" ON "con1"."conrelid" = "cl"."oid" WHERE "con1"."contype" = 'f' AND (("ns"."nspname" = 'public' AND "cl"."relname" = 'dj_book')) ) "con" INNER JOIN "pg_attribute" "att" ON "att"."attrelid" = "con"."confrelid" AND "att"."attnum" = "con"."child" INNER JOIN "pg_class" "cl" ON "cl"."oid" = "con"."confrelid" AND "cl"."relispartition" = 'f' INNER JOIN "pg_namespace" "ns" ON "cl"."relnamespace" = "ns"."oid" INNER JOIN "pg_attribute" "att2" ON "att2"."attrelid" = "con"."conrelid" AND "att2"."attnum" = "con"."parent";
SELECT x.a, x.b FROM (SELECT unnest(c.conkey) AS a, CASE WHEN c.condeferred THEN 'y' ELSE 'n' END AS condeferred, c.conname AS b FROM pg_constraint c WHERE c.conname = 'book_pkey') x;
-- Generated columns (GENERATED ALWAYS AS (…) STORED), as Django's GeneratedField and Rails'
-- virtual stored columns make them: computed on every write, refused a value of their own,
-- shown in the catalogs, following the columns they read through ALTER TABLE.
CREATE TABLE line_items (id int PRIMARY KEY, qty numeric(6), price numeric(8,2), total numeric(10,2) GENERATED ALWAYS AS (qty * price) STORED, label text GENERATED ALWAYS AS ('item ' || id::text) STORED);
INSERT INTO line_items (id, qty, price) VALUES (1, 2, 1.50), (2, 3, NULL) RETURNING *;
INSERT INTO line_items VALUES (3, 1, 9.99) RETURNING total, label;
INSERT INTO line_items VALUES (4, 1, 1, DEFAULT, DEFAULT) RETURNING total;
INSERT INTO line_items (id, qty, price) SELECT 5, 10, 0.5 RETURNING total;
INSERT INTO line_items VALUES (6, 1, 1, 5);
INSERT INTO line_items (id, total) VALUES (7, 1);
INSERT INTO line_items (id, qty, price, total) SELECT 8, 1, 1, 1;
INSERT INTO line_items OVERRIDING SYSTEM VALUE VALUES (9, 1, 1, 1);
UPDATE line_items SET qty = 4 WHERE id = 1 RETURNING total;
UPDATE line_items SET total = 0 WHERE id = 1;
UPDATE line_items SET total = DEFAULT, price = 2 WHERE id = 2 RETURNING total;
INSERT INTO line_items (id, qty, price) VALUES (1, 5, 5) ON CONFLICT (id) DO UPDATE SET qty = excluded.qty + 1 RETURNING total;
INSERT INTO line_items (id, qty) VALUES (1, 5) ON CONFLICT (id) DO UPDATE SET total = 1;
SELECT * FROM line_items ORDER BY id;
SELECT id FROM line_items WHERE total > 10 ORDER BY id;
SELECT column_name, column_default, is_generated, generation_expression FROM information_schema.columns WHERE table_name = 'line_items' AND column_name IN ('qty', 'total') ORDER BY ordinal_position;
SELECT attname, attgenerated, atthasdef FROM pg_attribute WHERE attrelid = 'line_items'::regclass AND attnum > 0 ORDER BY attnum;
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'line_items'::regclass AND adnum = 4;
CREATE TABLE gen_bad (a int, b int GENERATED ALWAYS AS (random() * a) STORED);
CREATE TABLE gen_bad (a int, b int GENERATED ALWAYS AS (a) STORED, c int GENERATED ALWAYS AS (b + 1) STORED);
CREATE TABLE gen_bad (a int, b int DEFAULT 1 GENERATED ALWAYS AS (a) STORED);
CREATE TABLE gen_bad (a int, b int GENERATED ALWAYS AS ((SELECT 1)) STORED);
CREATE TABLE gen_bad (a int, b int GENERATED ALWAYS AS (sum(a)) STORED);
CREATE TABLE gen_bad (a int, b int GENERATED ALWAYS AS (x + 1) STORED);
CREATE TABLE gen_bad (a int PRIMARY KEY, b int GENERATED ALWAYS AS (a + 1) STORED NOT NULL, c int GENERATED ALWAYS AS (a - 1) STORED CHECK (c > 0));
INSERT INTO gen_bad VALUES (NULL);
INSERT INTO gen_bad VALUES (1);
INSERT INTO gen_bad VALUES (2) RETURNING *;
CREATE TABLE gen_key (a int, b int GENERATED ALWAYS AS (a * 10) STORED PRIMARY KEY);
INSERT INTO gen_key VALUES (1), (2);
INSERT INTO gen_key VALUES (1);
UPDATE gen_key SET a = 3 WHERE b = 20;
SELECT * FROM gen_key ORDER BY b;
ALTER TABLE line_items ADD COLUMN doubled numeric GENERATED ALWAYS AS (qty + qty) STORED;
SELECT id, doubled FROM line_items ORDER BY id;
SELECT pg_get_expr(adbin, adrelid), pg_get_expr(adbin, adrelid, true) FROM pg_attrdef WHERE adrelid = 'line_items'::regclass AND adnum = 6;
ALTER TABLE line_items ALTER COLUMN total SET DEFAULT 0;
ALTER TABLE line_items ALTER COLUMN qty TYPE bigint;
ALTER TABLE line_items DROP COLUMN qty;
ALTER TABLE line_items RENAME COLUMN qty TO quantity;
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'line_items'::regclass AND adnum = 4;
UPDATE line_items SET quantity = 1 WHERE id = 3 RETURNING total, doubled;
ALTER TABLE line_items DROP COLUMN quantity CASCADE;
SELECT * FROM line_items ORDER BY id;
INSERT INTO line_items (id, price) VALUES (10, 3) RETURNING *;
-- The session's names (the differential connects each server under its own).
SELECT current_catalog = current_database(), current_role = current_user, session_user = user;
SELECT current_setting('session_authorization') = current_user, current_setting('is_superuser');
SHOW is_superuser;
SET is_superuser = off;
SET server_version = '1';
RESET ALL;
SELECT current_setting('session_authorization') = current_user;
-- CREATE SCHEMA of the schema every database has, as migration tools send it.
CREATE SCHEMA IF NOT EXISTS public;
CREATE SCHEMA IF NOT EXISTS "public" AUTHORIZATION CURRENT_USER;
CREATE SCHEMA public;
-- ALTER COLUMN … DROP EXPRESSION: a generated column becomes a plain one, keeping its values.
CREATE TABLE gen_drop (id int PRIMARY KEY, a int, b int GENERATED ALWAYS AS (a + 1) STORED);
INSERT INTO gen_drop VALUES (1, 1);
ALTER TABLE gen_drop ALTER COLUMN a DROP EXPRESSION;
ALTER TABLE gen_drop ALTER COLUMN a DROP EXPRESSION IF EXISTS;
ALTER TABLE gen_drop ALTER b DROP EXPRESSION;
INSERT INTO gen_drop VALUES (2, 1, 5);
UPDATE gen_drop SET a = 10 WHERE id = 1;
SELECT * FROM gen_drop ORDER BY id;
SELECT attname, attgenerated, atthasdef FROM pg_attribute WHERE attrelid = 'gen_drop'::regclass AND attnum > 0 ORDER BY attnum;
-- The session's names in a write's RETURNING; foreign keys over a generated column refuse
-- the actions that would write it.
INSERT INTO gen_drop VALUES (3, 1, 1) RETURNING id, current_user = session_user, current_database() = current_catalog;
CREATE TABLE gen_parent (id int PRIMARY KEY);
CREATE TABLE gen_child (a int PRIMARY KEY, k int GENERATED ALWAYS AS (a) STORED REFERENCES gen_parent ON DELETE SET NULL);
CREATE TABLE gen_child (a int PRIMARY KEY, k int GENERATED ALWAYS AS (a) STORED REFERENCES gen_parent ON UPDATE CASCADE);
CREATE TABLE gen_child (a int PRIMARY KEY, k int GENERATED ALWAYS AS (a) STORED REFERENCES gen_parent ON DELETE CASCADE);
INSERT INTO gen_parent VALUES (1);
INSERT INTO gen_child (a) VALUES (1), (2);
INSERT INTO gen_child (a) VALUES (1);
DELETE FROM gen_parent;
SELECT count(*) FROM gen_child;
CREATE TABLE described (id int PRIMARY KEY, title text, year int);
COMMENT ON TABLE described IS 'The catalogue';
COMMENT ON COLUMN described.title IS 'As released';
COMMENT ON COLUMN public.described.year IS 'Release year';
COMMENT ON COLUMN described.nope IS 'x';
COMMENT ON TABLE nope IS 'x';
COMMENT ON COLUMN described IS 'x';
SELECT obj_description('described'::regclass, 'pg_class'), obj_description('described'::regclass), col_description('described'::regclass, 2), col_description('described'::regclass, 3), col_description('described'::regclass, 1);
SELECT objsubid, description FROM pg_description WHERE objoid = 'described'::regclass ORDER BY objsubid;
COMMENT ON COLUMN described.year IS NULL;
COMMENT ON TABLE described IS '';
SELECT objsubid, description FROM pg_description WHERE objoid = 'described'::regclass ORDER BY objsubid;
