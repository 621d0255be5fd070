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
