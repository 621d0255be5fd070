-- Foot-race results turned into reports with PostgreSQL's built-in functions: finish times
-- parsed from the timing system's text with to_timestamp, paces with div and mod, age
-- groups with width_bucket, split times with regexp functions, messages with format.
CREATE TABLE results (event text, bib int, name text NOT NULL, born date, started text, finished text, splits text, PRIMARY KEY ((event), bib));
INSERT INTO results VALUES ('2011 New York City Marathon', 7, 'Bob O''Neil', '1960-05-17', '06/11/2011 09:40:00', '06/11/2011 13:05:42.5', '0:52:10|1:47:03|2:41:55'), ('2011 New York City Marathon', 1234, 'Ann', '1977-02-28', '06/11/2011 09:40:00', '06/11/2011 12:58:07', '0:49:30|1:39:12'), ('2011 New York City Marathon', 99, 'Cy', '1983-12-01', '06/11/2011 10:05:00', '06/11/2011 14:50:19.25', NULL), ('2012 Boston', 5, 'Dee', '1971-07-04', '04/16/2012 10:00:00', '04/16/2012 13:30:00', '1:01:00');
SELECT bib, to_timestamp(finished, 'MM/DD/YYYY HH24:MI:SS.MS') - to_timestamp(started, 'MM/DD/YYYY HH24:MI:SS') AS time FROM results ORDER BY event, bib;
SELECT bib, extract(epoch FROM to_timestamp(finished, 'MM/DD/YYYY HH24:MI:SS.MS') - to_timestamp(started, 'MM/DD/YYYY HH24:MI:SS')) AS seconds FROM results ORDER BY bib;
SELECT bib, div(extract(epoch FROM to_timestamp(finished, 'MM/DD/YYYY HH24:MI:SS') - to_timestamp(started, 'MM/DD/YYYY HH24:MI:SS'))::int, 60) AS minutes, mod(extract(epoch FROM to_timestamp(finished, 'MM/DD/YYYY HH24:MI:SS') - to_timestamp(started, 'MM/DD/YYYY HH24:MI:SS'))::int, 60) AS seconds FROM results ORDER BY bib;
SELECT name, age(to_date(started, 'MM/DD/YYYY'), born) AS age_at_start, extract(year FROM age(to_date(started, 'MM/DD/YYYY'), born)) AS years FROM results ORDER BY name;
SELECT width_bucket(extract(year FROM age(to_date(started, 'MM/DD/YYYY'), born))::int, 20, 60, 4) AS age_group, count(*) FROM results GROUP BY 1 ORDER BY 1;
SELECT bib, regexp_split_to_table(splits, '\|') AS split FROM results WHERE event = '2011 New York City Marathon' ORDER BY bib, split;
SELECT bib, regexp_matches(splits, '(\d+):(\d+):(\d+)', 'g') FROM results WHERE bib = 7;
SELECT bib, regexp_split_to_array(splits, '\|') FROM results ORDER BY bib;
SELECT format('%s (bib %s) ran %L', name, bib, event), quote_ident(name), quote_literal(name), quote_nullable(splits) FROM results ORDER BY bib;
SELECT name FROM results WHERE name SIMILAR TO '(A|B)%' ORDER BY name;
SELECT name FROM results WHERE name NOT SIMILAR TO '%e%' ORDER BY name;
SELECT bib, num_nulls(splits, born), num_nonnulls(splits, born, name) FROM results ORDER BY bib;
SELECT sign(bib - 50), ceil(bib / 7.0), floor(bib / 7.0), trunc(bib / 7.0, 2) FROM results ORDER BY bib;
SELECT extract(dow FROM born), extract(doy FROM born), extract(quarter FROM born), extract(century FROM born), date_part('isodow', born) FROM results ORDER BY bib;
SELECT substring(name FROM 1 FOR 2), substr(name, 2), trim(name), trim(LEADING 'B' FROM name), position('e' IN name), overlay(name PLACING 'X' FROM 1 FOR 1), ceiling(bib / 2.0), extract(month FROM born), date '2011-11-06', interval '1 day' FROM results ORDER BY bib;
SELECT every(bib > 0), bool_and(bib > 10), every(splits IS NULL) FROM results;
SELECT make_timestamp(2011, 11, 6, 9, 40, 0.5), to_date('2011-02-30', 'YYYY-MM-DD');
SELECT to_date('Nov', 'YYYY');
SELECT width_bucket(5, 10, 10, 3);
SELECT div(1, 0);
SELECT format('%s %s', 'only one');
SELECT regexp_matches('a', 'a', 'z');
-- Country codes as char(3): trailing blanks do not count in comparisons, lengths or text.
CREATE TABLE countries (code char(3) PRIMARY KEY, name varchar(30) NOT NULL, region char(6));
INSERT INTO countries VALUES ('US', 'United States', 'NA'), ('GBR', 'United Kingdom', 'EU'), ('KE ', 'Kenya', 'AF');
SELECT code, name, region FROM countries ORDER BY code;
SELECT name FROM countries WHERE code = 'US';
SELECT name FROM countries WHERE code = 'KE  ';
SELECT name FROM countries WHERE code IN ('GBR', 'KE') ORDER BY name;
SELECT name FROM countries WHERE code > 'KE' ORDER BY name;
SELECT code || '/' || region, length(code), octet_length(code), code::text, upper(code) FROM countries ORDER BY name;
SELECT c.name FROM countries c JOIN countries d ON c.code = d.code AND d.region = 'EU';
SELECT 'ab'::char(4) = 'ab'::char(2), 'abcdef'::char(3), 'ab'::char(4) || 'x';
UPDATE countries SET name = 'USA' WHERE code = 'US' RETURNING code, name;
INSERT INTO countries VALUES ('GBRX', 'too long', NULL);
SELECT code LIKE 'KE', code LIKE 'KE%', concat(code, '|'), replace(code, 'E', 'e') || '|', coalesce(code, 'x') || '|' FROM countries ORDER BY name;
SELECT string_agg(code, ',' ORDER BY code) FROM countries;
SELECT justify_hours(interval '27 hours'), justify_days(interval '35 days'), justify_interval(interval '1 mon -1 hour'), make_interval(hours => 3, mins => 25, secs => 42.5), make_interval(0, 0, 2);
-- Finishers numbered by a serial column; currval and lastval answer this session's values.
CREATE TABLE finishers (place serial PRIMARY KEY, bib int NOT NULL);
SELECT currval('finishers_place_seq');
SELECT lastval();
INSERT INTO finishers (bib) VALUES (1234), (7), (99) RETURNING place, bib;
SELECT currval('finishers_place_seq'), lastval(), currval(pg_get_serial_sequence('finishers', 'place'));
SELECT currval('no_such_seq');
-- Set-returning functions in FROM are named as PostgreSQL names them.
SELECT * FROM unnest(ARRAY[7, 1234]) ORDER BY 1;
SELECT b.bib FROM unnest(ARRAY[99, 5]) b ORDER BY b.bib;
SELECT * FROM generate_series(date '2011-11-05', date '2011-11-07', '1 day');
SELECT day FROM generate_series(timestamp '2011-11-06 09:00', timestamp '2011-11-06 12:00', '90 minutes') day;
SELECT * FROM generate_series(timestamp '2011-11-06 09:00', timestamp '2011-11-06 10:00', interval '30 minutes');
-- Intervals as PostgreSQL reads and scales them: times of day, abbreviations, ISO 8601.
SELECT interval '3 hours 25 mins 42.5 secs', '1 day 04:05:06.789'::interval, '-01:30'::interval, 'P1DT2H'::interval, '@ 2 days ago'::interval, '1.5 days'::interval, '1-2'::interval;
SELECT interval '03:25:42.5' * 2, interval '1 mon' * 1.5, interval '1 mon' / 7, 3 * interval '1 hour', interval '26.2 hours' / 4;
SELECT bib, (to_timestamp(finished, 'MM/DD/YYYY HH24:MI:SS') - to_timestamp(started, 'MM/DD/YYYY HH24:MI:SS')) / 26.2 AS per_mile FROM results WHERE event = '2011 New York City Marathon' ORDER BY bib;
SELECT 'three hours'::interval;
SELECT interval '1 day' / 0;
SELECT bib, substring(splits FROM '^[0-9]+:[0-9]+'), substring(splits FROM '\|([0-9:]+)$'), substring(name, '[A-Z]'), row(bib, name, NULL, ''), (bib, event) FROM results ORDER BY bib;
SELECT |/ 16, @ -5, @ 2.5, array_lower(ARRAY[7, 1234], 1), array_lower(ARRAY[]::int[], 1), localtimestamp IS NOT NULL;
SELECT rtrim(code, 'E'), rtrim(code), code = name, c.code = d.region FROM countries c, countries d WHERE c.name = d.name ORDER BY c.code;
SELECT 'a' || E'\n' || 'b' SIMILAR TO 'a%b', interval '05:06.789', interval '1.1 years', interval '3 04:05:06';
SELECT generate_series(1, 7, '3');
SELECT name, count(*) OVER (ORDER BY born RANGE BETWEEN INTERVAL '4000 days' PRECEDING AND CURRENT ROW) FROM results ORDER BY born;
SELECT extract(hour FROM time '10:30:15.5'), extract(seconds FROM time '10:30:15.5'), extract(secs FROM timestamp '2011-11-06 09:40:00.25'), extract(julian FROM date '2011-11-06');
SELECT to_date('150', 'YYY'), to_date('080', 'YYY'), to_date('2,011', 'Y,YYY');
SELECT to_date('200000000000', 'J');
SELECT format('%100000000000s', 'x');
SELECT name FROM results WHERE name SIMILAR TO 'A%' ESCAPE 'ab';
SELECT * FROM unnest(ARRAY['Ann', 'Bob']) WITH ORDINALITY AS t(name, place);
SELECT * FROM generate_series(10, 30, 10) WITH ORDINALITY;
SELECT s.place, s.km FROM generate_series(5, 15, 5) WITH ORDINALITY AS s(km, place) WHERE s.place > 1 ORDER BY s.place DESC;
SELECT key, n FROM jsonb_each('{"a": 1, "b": 2}') WITH ORDINALITY AS e(key, value, n) ORDER BY n;
SELECT name, date_trunc('year', born) FROM results ORDER BY bib;
SELECT round(2.5::float8), round(3.5::float8), round(-0.5::float8), round(2.5);
SELECT json_build_object('name', 'Ann', 'splits', ARRAY[61, 62]), to_jsonb(ARRAY[[1, 2], [3, 4]]);
SELECT ARRAY[61, 62], pg_typeof(ARRAY[61, 62]), pg_typeof(ARRAY[61, 62] || 63), pg_typeof(ARRAY[bib, 1]) FROM results WHERE bib = 7;
SELECT event, avg(to_timestamp(finished, 'DD/MM/YYYY HH24:MI:SS') - to_timestamp(started, 'DD/MM/YYYY HH24:MI:SS')) FROM results GROUP BY event ORDER BY event;
SELECT avg(x), sum(x) FROM (VALUES (interval '1 month'), (interval '0'), (interval '2 hours')) v(x);
SELECT g, avg(x) OVER (ORDER BY g ROWS 1 PRECEDING) FROM (VALUES (1, interval '1 hour'), (2, interval '3 hours'), (3, interval '1 month')) v(g, x) ORDER BY g;
-- Day buckets: generate_series over dates runs over timestamptz; an untyped bound takes the other's type.
SELECT d FROM generate_series('2024-03-09'::date, '2024-03-11'::date, interval '1 day') d;
SELECT generate_series('2024-03-09'::date, '2024-03-10'::date, interval '12 hours');
SELECT * FROM generate_series('2024-01-01'::timestamp, '2024-01-02', '12 hours') g;
SELECT generate_series('2024-01-01', '2024-01-02'::timestamptz, '1 day');
SELECT ~5, ~(-1), ~0::bigint, 5 & ~1;
-- Date constants in PostgreSQL's other spellings, and EXISTS in a select list.
SELECT 'today'::date = current_date, 'tomorrow'::date - 'yesterday'::date, 'epoch'::date, date 'Jan 5 2024', 'January 5, 2024 10:30 PM'::timestamp, '5 Jan 2024'::date, '1/5/24'::date, '20240105'::date;
SELECT exists(SELECT 1), NOT exists(SELECT 1 WHERE false), exists(SELECT 1 UNION SELECT 2) AS e;
-- The podium with ties: FETCH FIRST n ROWS WITH TIES keeps every runner tied with the last.
CREATE TABLE podium (runner text PRIMARY KEY, race text, minutes int);
INSERT INTO podium VALUES ('ann', 'nyc', 200), ('bob', 'nyc', 210), ('cy', 'nyc', 210), ('dee', 'nyc', 220), ('eve', 'nyc', 230), ('fay', 'nyc', 210);
SELECT runner, minutes FROM podium ORDER BY minutes FETCH FIRST 2 ROWS WITH TIES;
SELECT runner, minutes AS m FROM podium ORDER BY m, runner DESC FETCH FIRST 3 ROWS WITH TIES;
SELECT runner, minutes FROM podium ORDER BY 2 OFFSET 2 ROWS FETCH FIRST 1 ROW WITH TIES;
SELECT race, count(*) FROM podium GROUP BY race ORDER BY count(*) FETCH FIRST 1 ROW WITH TIES;
SELECT runner, minutes FROM podium ORDER BY minutes DESC FETCH NEXT 1 ROWS WITH TIES;
SELECT runner FROM podium FETCH FIRST 2 ROWS WITH TIES;
SELECT runner, minutes FROM podium ORDER BY minutes OFFSET 2 FETCH FIRST 0 ROWS WITH TIES;
