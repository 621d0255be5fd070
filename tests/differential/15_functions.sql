-- Functions and operators as reports use them: math functions at the edge of their domain,
-- encode/decode, regexp_replace's replacement escapes, char(n) beside text, row-value
-- comparisons with NULL fields, and quoted literals in arithmetic.
SELECT sqrt(4), ln(1), exp(0), power(2, 10), log(100);
SELECT ln(0);
SELECT ln(-1);
SELECT log(0);
SELECT log(2, 0);
SELECT sqrt(-1);
SELECT sqrt(-1::numeric);
SELECT exp(1000::float8);
SELECT exp(-1000::float8);
SELECT power(0, -1);
SELECT power(-8, 1.0/3);
SELECT power(10::float8, 400);
SELECT encode('ab'::bytea, 'base64'), encode('abcd'::bytea, 'base64'), encode('\x00ff5c41'::bytea, 'escape'), encode('\xdead'::bytea, 'hex');
SELECT encode(repeat('x', 70)::bytea, 'base64');
SELECT decode('YWI=', 'base64'), decode('YW JjZA==', 'base64'), decode('dead', 'hex'), decode('a\\b\001', 'escape');
SELECT decode('Y*I=', 'base64');
SELECT encode('ab'::bytea, 'foo');
SELECT regexp_replace('abc', 'b', '$1x'), regexp_replace('abcb', '(b)', '\1\1', 'g'), regexp_replace('a.b', '\.', '$');
SELECT regexp_replace('Hello World', '(\w+) (\w+)', '\2, \1'), regexp_replace('aaa', 'a', 'b', 'g'), regexp_replace('AbA', 'a', 'x', 'gi'), regexp_replace('abc', 'b', '<\&>');
SELECT 'abc'::char(5) = 'abc', 'abc'::char(5) = 'abc  '::char(5), 'abc'::char(5) < 'abd';

CREATE TABLE pairs (a int PRIMARY KEY, b int);
INSERT INTO pairs VALUES (1, NULL), (2, 3), (3, 4);
SELECT (1, NULL) = (1, NULL), (1, 2) = (1, 2), (1, 2) < (1, 3), (1, NULL) <> (2, NULL), (1, NULL) < (1, 2), (1, NULL) < (2, NULL);
SELECT (1, 2, 3) < (1, 2, 4), (1, 2, 3) <= (1, 2, 3), (1, 3, 0) > (1, 2, 9), (2, NULL, 1) > (1, 5, 5), (1, NULL, 1) >= (1, 5, 5);
SELECT (1, 2) IS DISTINCT FROM (1, NULL), (1, NULL) IS NOT DISTINCT FROM (1, NULL), ROW(1, 2) = ROW(1, 2);
SELECT a FROM pairs WHERE (a, b) = (1, NULL);
SELECT a FROM pairs WHERE (a, b) > (1, 5) ORDER BY a;
SELECT a FROM pairs WHERE (a, b) IN ((1, NULL), (2, 3)) ORDER BY a;
SELECT a FROM pairs WHERE (a, b) NOT IN ((2, 3)) ORDER BY a;
SELECT a, (a, b) IS NULL, (a, b) IS NOT NULL FROM pairs ORDER BY a;

CREATE TABLE events (tenant int, ts int, seq int, v text, PRIMARY KEY (tenant, ts, seq));
INSERT INTO events VALUES (1, 10, 1, 'a'), (1, 10, 2, 'b'), (1, 11, 1, 'c'), (2, 5, 5, 'd');
SELECT * FROM events WHERE tenant = 1 AND (ts, seq) > (10, 1) ORDER BY ts, seq LIMIT 10;
SELECT * FROM events WHERE (tenant, ts, seq) >= (1, 10, 2) ORDER BY 1, 2, 3;
SELECT * FROM events WHERE tenant = 1 AND (ts, seq) <= (10, 2) ORDER BY 1, 2, 3;

CREATE TABLE amounts (id int PRIMARY KEY, q int, p numeric(6,2), f float8);
INSERT INTO amounts VALUES (1, 5, 1.50, 2.5);
SELECT 1 + '2', '3' * 2, 10 / '4', 7 % '4', 1.5 + '2.25';
SELECT q + '1', p * '2', f - '0.5', q * '1.5' FROM amounts;
SELECT date '2024-01-10' - '2024-01-01', timestamp '2024-01-10' - '2024-01-01', '1 day' + timestamp '2024-01-10', interval '1 day' + '1 hour';

-- Numbers with an exponent are numerics; named windows refined by a call keep their
-- partitions; ORDER BY a set-returning function's column after a table's key.
SELECT 1e3/7, 2e0/3, 1.5e2/7, pg_typeof(1e3), pg_typeof(1.5e2), 1e3, -1e3, 1.5e2, 1e-2, 0e5, 1e3 + 1;
CREATE TABLE sales (id int PRIMARY KEY, region text, amount int);
INSERT INTO sales VALUES (1, 'a', 1), (2, 'b', 2), (3, 'a', 3), (4, 'b', 4);
SELECT id, sum(amount) OVER (w ORDER BY id) FROM sales WINDOW w AS (PARTITION BY region) ORDER BY id;
SELECT id, sum(amount) OVER w2 FROM sales WINDOW w AS (PARTITION BY region), w2 AS (w ORDER BY id) ORDER BY id;
SELECT id, sum(amount) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), rank() OVER w FROM sales WINDOW w AS (PARTITION BY region ORDER BY id) ORDER BY id;
CREATE TABLE lists (id int PRIMARY KEY, a int, b int);
INSERT INTO lists VALUES (1, 3, 1), (2, 1, 2);
SELECT lists.id, x FROM lists, unnest(ARRAY[lists.a, lists.b]) x ORDER BY 1, 2;
SELECT lists.id, x FROM lists, generate_series(1, lists.a) x ORDER BY id, x DESC;
SELECT lists.id, unnest(ARRAY[lists.a, lists.b]) x FROM lists ORDER BY lists.id, x;

-- Bad arguments get PostgreSQL's codes; IN (subquery) in a select list; a subquery's
-- columns under PostgreSQL's names; interval text with a sign apart from its number.
SELECT substring('abc' FROM 1 FOR -1);
SELECT * FROM generate_series(1, 10, 0);
SELECT ntile(0) OVER (ORDER BY id) FROM sales;
SELECT split_part('a,b', ',', 0);
SELECT id FROM sales WHERE row_number() OVER () > 1;
SELECT id, amount IN (SELECT amount FROM sales WHERE amount > 2), amount NOT IN (SELECT 1) FROM sales ORDER BY id;
SELECT id, CASE WHEN id IN (SELECT id FROM lists) THEN 'listed' ELSE 'not' END AS listed FROM sales ORDER BY id;
SELECT NULL::int IN (SELECT 1), NULL::int IN (SELECT 1 WHERE false), 2 IN (SELECT NULL::int UNION ALL SELECT 1);
SELECT count FROM (SELECT count(*) FROM sales) q;
SELECT q.sum, q.upper FROM (SELECT sum(amount), upper('a')) q;
SELECT * FROM (SELECT count(*), max(amount), region FROM sales GROUP BY region) q ORDER BY region;
WITH totals AS (SELECT region, sum(amount) FROM sales GROUP BY region) SELECT region, sum FROM totals ORDER BY region;
SELECT interval '1 month - 1 day', interval '1 year - 1 day', interval '- 1 day';

-- CREATE TABLE … AS: the query's columns, names and types, filled in the same transaction.
CREATE TABLE sales_copy AS SELECT * FROM sales;
SELECT * FROM sales_copy ORDER BY id;
CREATE TABLE region_totals AS SELECT region, count(*), sum(amount) total, 1 + 1, 'lit' FROM sales GROUP BY region;
SELECT * FROM region_totals ORDER BY region;
SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'region_totals' ORDER BY ordinal_position;
CREATE TABLE IF NOT EXISTS region_totals AS SELECT 1;
CREATE TABLE sales_copy AS SELECT 1;
BEGIN;
CREATE TABLE in_txn AS SELECT id FROM sales;
INSERT INTO in_txn VALUES (9);
SELECT count(*) FROM in_txn;
ROLLBACK;
SELECT * FROM in_txn;
CREATE TABLE no_rows AS SELECT * FROM sales WHERE false;
SELECT count(*) FROM no_rows;
-- round and trunc of an integer to a number of digits are numerics with that scale.
SELECT round(5, 2), trunc(5, 1), round(5::bigint, 1), round(1234.5678, -2), round(9.99, 1), numeric '1.10' + 1;
-- DISTINCT aggregates collect their values sorted, as PostgreSQL's do.
CREATE TABLE line_items (id int PRIMARY KEY, sku text, n int);
INSERT INTO line_items VALUES (1, 'c', 3), (2, 'b', 1), (3, 'a', 2), (4, 'c', 3), (5, NULL, NULL);
SELECT array_agg(DISTINCT n), string_agg(DISTINCT sku, ','), array_agg(DISTINCT sku) FILTER (WHERE n > 1) FROM line_items;
SELECT array_agg(DISTINCT sku ORDER BY sku DESC) FROM line_items;
-- Values as their output functions write them: concat and format show true as t, an
-- array's text is {1,2}.
select true::text, 'x' || true, concat(true, false), concat_ws('-', true, 1), format('%s', true);
select array[1,2]::text, array['a b','c']::text, 'ids: ' || array[1,2]::text, format('%s', array[1,2]);
select cast(array[1.5, null] as text), array[true]::text;
select concat(array[1,2]), string_agg(b::text, ',') from (values (true), (false)) v(b);
-- User errors DataFusion raises with its own words get PostgreSQL's SQLSTATEs.
select 'abc' ~ '(';
select regexp_replace('abc', '(', 'x');
select array_agg(distinct a order by b) from (values (1,2)) t(a,b);
select sum(a) over (rows between 1 following and current row) from (values (1)) t(a);
select grouping(b) from (values (1,2)) t(a,b) group by a;
-- Set-returning generate_series inside select-list expressions: a row each.
select generate_series(date '2024-01-31', date '2024-04-30', interval '1 month')::date;
select date '2024-03-01' - generate_series(0, 2) as d;
select generate_series(1, 3) * 10;
select to_char(generate_series(date '2024-01-01', date '2024-01-03', interval '1 day'), 'Dy');
select 'n' || generate_series(1, 2);
select generate_series(1, 2) as g, generate_series(1,2)::text as t;
-- LIKE … ESCAPE with another character than the backslash (SQLAlchemy's autoescape uses /).
select 'a%c' like 'a!%c' escape '!', 'abc' like 'a!%c' escape '!', 'a\c' like 'a\c' escape '!', 'a_c' ilike 'A/_C' escape '/';
select 'a\c' like 'a\\c' escape '', 'a%' like 'a%' escape '';
create table words (id int primary key, w text);
insert into words values (1, '50% off'), (2, '50 off'), (3, 'a/b');
select id from words where w like '%' || '0/%' || '%' escape '/' order by id;
select id from words where w not like '%//%' escape '/' order by id;
select 'x' like 'x!' escape '!';
select 'x' like 'x' escape 'ab';
prepare lk as select id from words where w like $1 escape '/' order by id;
execute lk('%0/%%');
-- A window function without OVER is 42809.
select row_number() from (values(1)) t(a);
select lag(a) from (values(1)) t(a);
select rank() from (values (1)) t(a);
-- json[b]_to_record and json[b]_to_recordset with a column definition list: members by
-- the columns' names, cast to their types (json columns take the member's JSON), as bulk
-- writes from a JSON parameter use them.
SELECT * FROM jsonb_to_record('{"a":1,"b":"x","c":[1,2],"d":{"e":true}}') AS r(a int, b text, c jsonb, d json, missing int);
SELECT * FROM json_to_record('{"a":"1.5","b":null}') AS r(a numeric, b text);
SELECT * FROM jsonb_to_recordset('[{"a":1,"b":"x"},{"a":2},{"b":"z","a":null}]') AS r(a int, b text) ORDER BY a;
SELECT r.a * 10, r."B" FROM json_to_recordset('[{"a":1,"B":"up"}]') AS r(a bigint, "B" varchar(5));
SELECT count(*) FROM jsonb_to_recordset('[]') AS r(a int);
SELECT * FROM jsonb_to_recordset('[{"a":"x"}]') AS r(a int);
SELECT * FROM jsonb_to_record('{"a":1}');
SELECT * FROM jsonb_to_record('{"a":true, "t":"2024-01-02 03:04:05"}') AS r(a bool, t timestamp);
CREATE TABLE json_rows (id int PRIMARY KEY, name text);
INSERT INTO json_rows SELECT * FROM jsonb_to_recordset('[{"id":1,"name":"ann"},{"id":2,"name":"bob"}]') AS x(id int, name text);
SELECT * FROM json_rows ORDER BY id;
SELECT d IS NULL, e IS NULL, f FROM jsonb_to_record('{"d":null,"e":null,"f":"x"}') AS r(d jsonb, e json, f text);
CREATE TABLE json_codes (id int PRIMARY KEY, code varchar(3));
INSERT INTO json_codes SELECT * FROM jsonb_to_recordset('[{"id":1,"code":"abcdef"}]') AS x(id int, code varchar(3));
INSERT INTO json_codes SELECT * FROM jsonb_to_recordset('[{"id":2,"code":"abc"}]') AS x(id int, code varchar(3)) RETURNING *;
SELECT * FROM jsonb_to_recordset('[{"a":1}]') WITH ORDINALITY AS r(a int);
-- A series of integer constants is of integers, as drivers read it; a bigint bound makes bigints.
SELECT pg_typeof(g), g FROM generate_series(1, 3) g;
SELECT pg_typeof(g) FROM generate_series(1, 3000000000, 1000000000) g;
SELECT pg_typeof(g) FROM generate_series(1::bigint, 2) g;
SELECT x, pg_typeof(x) FROM generate_series(-2, 2, 2) AS x;
SELECT generate_series(1, 3) AS s, pg_typeof(generate_series(1, 2));
SELECT lists.id, x, pg_typeof(x) FROM lists, generate_series(1, lists.a) x ORDER BY 1, 2;
SELECT v, n, pg_typeof(v), pg_typeof(n) FROM generate_series(1, 2) WITH ORDINALITY AS t(v, n);
SELECT sum(g), pg_typeof(sum(g)), avg(g) FROM generate_series(1, 100) g;
SELECT generate_series(2147483646, 2147483647);
