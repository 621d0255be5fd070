-- Timestamps as PostgreSQL keeps them: microseconds from 4713 BC on, not DataFusion's
-- nanoseconds of 1677 to 2262. Far dates (Go's zero time, 9999-12-31 sentinels, years BC),
-- timestamp(p) columns and casts rounding to p digits, more than six fractional digits
-- rounded, text compared with timestamps, and now() fixed for a transaction.
CREATE TABLE spans (id int PRIMARY KEY, starts timestamp, ends timestamptz, day date);
INSERT INTO spans VALUES (1, '0001-01-01 00:00:00', '0001-01-01 00:00:00+00', '0001-01-01');
INSERT INTO spans VALUES (2, '9999-12-31 23:59:59', '9999-12-31 23:59:59+00', '9999-12-31');
INSERT INTO spans VALUES (3, '2024-01-01 12:00:00.1234567', '2024-01-01 12:00:00.1234565+00', '2024-01-01');
INSERT INTO spans VALUES (4, '0044-03-15 12:00:00 BC', '20000-01-01 00:00:00+00', '4000-01-01 BC');
INSERT INTO spans (id, starts) VALUES (5, '1500-06-01 00:00:00'::timestamp);
SELECT * FROM spans ORDER BY id;
SELECT id FROM spans WHERE starts < '1600-01-01' ORDER BY id;
SELECT id FROM spans WHERE ends > '1000-01-01' ORDER BY id;
SELECT id FROM spans WHERE starts BETWEEN '1400-01-01' AND '2100-01-01' ORDER BY id;
SELECT id FROM spans WHERE starts IN ('1500-06-01 00:00:00', '0001-01-01') ORDER BY id;
SELECT id, starts < now(), day::timestamp, extract(year FROM starts), to_char(starts, 'YYYY-MM-DD HH24:MI:SS') FROM spans ORDER BY id;
SELECT min(starts), max(ends), min(day) FROM spans;
SELECT id, starts + interval '100 years', coalesce(ends, timestamptz '2000-01-01 00:00:00+00') FROM spans ORDER BY id;
SELECT age(timestamp '2024-01-01', starts) FROM spans WHERE id IN (1, 5) ORDER BY id;
CREATE TABLE readings (id int PRIMARY KEY, at timestamp(2), logged timestamptz(0));
INSERT INTO readings VALUES (1, '2024-03-03 10:11:12.345678', '2024-03-03 10:11:12.5+00');
INSERT INTO readings VALUES (2, '1999-12-31 23:59:59.995', '1999-12-31 23:59:59.5+00');
UPDATE readings SET at = at + interval '0.004 seconds' WHERE id = 1;
INSERT INTO readings SELECT 3, at, logged FROM spans, readings WHERE spans.id = 3 AND readings.id = 1;
SELECT * FROM readings ORDER BY id;
SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'readings'::regclass AND attnum > 0 ORDER BY attnum;
SELECT '2024-01-01 10:00:00.999999'::timestamp(0), '2024-01-01 10:00:00.5'::timestamp(0), '1999-12-31 23:59:59.5'::timestamptz(0);
SELECT cast('2024-01-01 10:00:00.123456' AS timestamp(3)), '2024-01-01 10:00:00.123456'::timestamp(6), '2024-01-01 10:00:00.16'::timestamp(1);
SELECT timestamp '2024-01-01 00:00:00.1234565', timestamptz '2024-01-01 00:00:00.9999995+00';
SELECT make_timestamp(1, 1, 1, 0, 0, 0) < timestamp '0002-01-01', '0001-01-01'::date::timestamp;
SELECT now() = current_timestamp, now() = transaction_timestamp(), pg_typeof(now()), pg_typeof(clock_timestamp()), pg_typeof(statement_timestamp());
BEGIN;
SELECT count(*) FROM (SELECT pg_sleep(0.01)) s;
SELECT now() = statement_timestamp() AS same, now() < statement_timestamp() AS earlier;
INSERT INTO readings VALUES (4, localtimestamp, now());
SELECT logged = date_trunc('second', now()) OR logged = date_trunc('second', now()) + interval '1 second' FROM readings WHERE id = 4;
COMMIT;
CREATE TABLE stamped (id int PRIMARY KEY, at timestamptz CHECK (at <= now() + interval '0.5 second'));
INSERT INTO stamped VALUES (1, now());
SELECT count(*) FROM (SELECT pg_sleep(0.7)) s;
INSERT INTO stamped VALUES (2, now());
INSERT INTO stamped VALUES (3, now() + interval '1 hour');
SELECT id FROM stamped ORDER BY id;
SELECT '2024-01-01 10:00:00.5555555'::timestamp(1), '10000-01-01 10:00:00.55'::timestamp(1);
-- infinity and -infinity: later and earlier than every other value, kept, shown and
-- compared as in PostgreSQL.
CREATE TABLE validity (id int PRIMARY KEY, valid_from timestamp, valid_to timestamptz, until date);
INSERT INTO validity VALUES (1, '-infinity', 'infinity', 'infinity'), (2, '2024-01-01', '2024-06-01 10:00+00', '2024-01-01'), (3, 'infinity', '-infinity', '-infinity');
SELECT * FROM validity ORDER BY id;
SELECT id FROM validity WHERE valid_to > '2030-01-01' ORDER BY id;
SELECT id FROM validity WHERE until < 'infinity' ORDER BY until;
SELECT id, isfinite(valid_from), isfinite(until), isfinite(valid_to) FROM validity ORDER BY valid_from;
SELECT max(valid_to), min(until), max(until)::text FROM validity;
SELECT 'infinity'::timestamp, '-infinity'::timestamptz, '-infinity'::date, 'Infinity'::timestamp(0);
UPDATE validity SET until = 'infinity' WHERE id = 2 RETURNING until;
SELECT until - '2020-01-01'::date FROM validity WHERE id = 1;
SELECT valid_from - '2020-01-01'::timestamp FROM validity WHERE id = 3;
SELECT until - '2020-01-01'::date FROM validity WHERE id = 2;
SELECT to_char(until, 'YYYY'), to_char(valid_from, 'YYYY-MM-DD') FROM validity ORDER BY id;
SELECT json_build_object('to', valid_to) FROM validity ORDER BY id;
-- to_char's zone patterns: abbreviations from the zone's rules, TZH and TZM.
SET TIME ZONE 'America/New_York';
select to_char(timestamptz '2024-01-15 10:00+00', 'YYYY-MM-DD HH24:MI TZ tz OF TZH:TZM');
select to_char(timestamptz '2024-07-15 10:00+00', 'TZ TZH TZM');
SET TIME ZONE 'Asia/Kolkata';
select to_char(timestamptz '2024-01-15 10:00+00', 'HH24:MI TZ TZH:TZM OF');
SET TIME ZONE 'Europe/Berlin';
select to_char(timestamptz '2024-07-15 10:00+00', 'TZ');
SET TIME ZONE 'America/Sao_Paulo';
select to_char(timestamptz '2024-07-15 10:00+00', 'TZ OF');
SET TIME ZONE -8;
select to_char(timestamptz '2024-07-15 10:00+00', 'TZ OF TZH:TZM');
SET TIME ZONE 'UTC';
select to_char(timestamptz '2024-07-15 10:00+00', 'TZ OF TZH:TZM');
select to_char(timestamp '2024-07-15 10:00', 'TZ|OF|TZH');
-- A month by name between dashes.
select '15-Jan-2024'::date, '2024-Jan-15'::date, '15-jan-2024 10:00'::timestamp, date '05-Feb-2023';
select '15-Foo-2024'::date;
-- A date given as a timestamp with a zone offset is the written date.
select '2024-02-01T00:00:00.000+01:00'::date, '2024-02-01T23:00:00-05:00'::date, '2024-02-01 10:00+02'::date, '2024-02-01'::date;
CREATE TABLE dates_z (id int primary key, d date);
insert into dates_z values (1, '2024-02-01T00:00:00.000+01:00');
select * from dates_z;
prepare pd as insert into dates_z values (2, $1);
execute pd('2024-02-01T23:00:00-05:00');
select * from dates_z order by id;
-- IntervalStyle iso_8601 (Rails sets it on every connection): intervals in results as P1Y2M3DT4H5M6.5S.
SET intervalstyle = iso_8601;
SHOW intervalstyle;
SELECT interval '1 year 2 mons 3 days 04:05:06.5', interval '0', interval '-1 days 02:00', interval '-01:30:00', interval '1 day -00:00:01.25', interval '-1 year -2 mons';
SELECT timestamp '2024-01-02' - timestamp '2024-01-01 10:00';
SELECT 'P1DT2H'::interval, 'PT0.000001S'::interval;
SET intervalstyle = postgres;
SELECT interval '1 year 2 mons';
BEGIN;
SET LOCAL intervalstyle = iso_8601;
SELECT interval '36 hours';
COMMIT;
SELECT interval '36 hours';
-- date_trunc in a given zone, and make_timestamptz in the session's or a given zone.
SET TIME ZONE 'America/New_York';
SELECT date_trunc('day', timestamptz '2024-03-10 05:00+00', 'America/New_York');
SELECT date_trunc('day', '2024-03-10 05:00+00', 'Asia/Tokyo');
SELECT date_trunc('month', timestamptz '2024-03-10 05:00+00', 'UTC') AS m;
SELECT make_timestamptz(2024, 1, 2, 3, 4, 5.5, 'UTC');
SELECT make_timestamptz(2024, 1, 2, 3, 4, 5.5);
SELECT make_timestamptz(2024, 7, 2, 3, 4, 0, 'Europe/Paris') AS t;
SET TIME ZONE 'UTC';
SELECT make_timestamptz(2024, 1, 2, 3, 4, 5.5);
-- (start, end) OVERLAPS (start, end): periods in either order, an interval as the end,
-- touching periods not overlapping, NULL ends as PostgreSQL treats them.
SELECT (date '2020-01-01', date '2020-02-01') OVERLAPS (date '2020-02-01', date '2020-03-01') a, (timestamp '2020-01-01', interval '1 day') OVERLAPS (timestamp '2020-01-01 12:00', timestamp '2020-01-03') b, (date '2020-03-01', date '2020-01-01') OVERLAPS (date '2020-02-01', date '2020-02-02') c, (date '2020-01-01', NULL::date) OVERLAPS (date '2020-01-01', date '2020-01-02') d, (date '2020-01-01', NULL::date) OVERLAPS (date '2019-01-01', date '2019-01-02') e, (date '2020-01-01', date '2020-01-01') OVERLAPS (date '2020-01-01', date '2020-01-01') f;
SELECT (timestamptz '2020-01-01 00:00+00', '2 hours'::interval) OVERLAPS (timestamptz '2020-01-01 01:00+00', timestamptz '2020-01-01 05:00+00');
SELECT (time '10:00', time '11:00') OVERLAPS (time '10:30', time '12:00');
CREATE TABLE bookings (id int PRIMARY KEY, starts date, ends date);
INSERT INTO bookings VALUES (1, '2024-01-01', '2024-01-05'), (2, '2024-01-05', '2024-01-09'), (3, '2024-01-03', NULL), (4, NULL, NULL);
SELECT id FROM bookings WHERE (starts, ends) OVERLAPS (date '2024-01-04', date '2024-01-06') ORDER BY id;
