-- Foot-race registrations across time zones: timestamptz values are instants, shown and
-- read in the session's zone; timestamp values are wall-clock times and never move.
CREATE TABLE race_log (bib int PRIMARY KEY, finished timestamptz, local_start timestamp);
SET TIME ZONE 'UTC';
INSERT INTO race_log VALUES (1, '2024-01-15 12:00:00+00', '2024-01-15 12:00:00'), (2, '2024-07-01 23:30:00', '2024-07-01 23:30:00');
SELECT bib, finished, local_start FROM race_log ORDER BY bib;
SET TIME ZONE 'America/New_York';
SHOW TimeZone;
SELECT bib, finished, local_start FROM race_log ORDER BY bib;
INSERT INTO race_log VALUES (3, '2024-03-10 01:30', '2024-03-10 01:30');
SELECT bib, finished FROM race_log WHERE finished > '2024-07-01 19:00' ORDER BY bib;
SELECT bib, finished::date, extract(hour from finished), date_trunc('day', finished) FROM race_log ORDER BY bib;
SELECT '2024-01-01 00:00:00+05:30'::timestamptz, '2024-06-01 12:00'::timestamptz;
SET TIME ZONE 'asia/kolkata';
SHOW timezone;
SELECT bib, finished FROM race_log ORDER BY bib;
SET TIME ZONE -8;
SHOW timezone;
SELECT bib, finished FROM race_log ORDER BY bib;
SET TIME ZONE 'Mars/Base';
SET TIME ZONE 'Europe/Berlin';
SELECT bib, finished FROM race_log WHERE bib = 3;
SELECT bib FROM race_log WHERE finished = '2024-03-10 07:30:00+01';
INSERT INTO race_log VALUES (4, '2024-08-01 09:15', '2024-08-01 09:15') RETURNING finished, finished::date, local_start;
INSERT INTO race_log VALUES (4, '2024-08-01 10:00', NULL) ON CONFLICT (bib) DO UPDATE SET finished = excluded.finished WHERE race_log.finished < '2024-08-01 09:30' RETURNING bib, finished;
-- AT TIME ZONE and the session-local casts of timestamptz.
SET TIME ZONE 'Europe/Berlin';
SELECT timestamp '2020-06-01 12:00' AT TIME ZONE 'America/New_York', timestamptz '2020-06-01 12:00+00' AT TIME ZONE 'America/New_York', timezone('Asia/Tokyo', timestamptz '2020-06-01 12:00+00');
SELECT timestamptz '2020-06-01 12:00+00'::timestamp, timestamptz '2020-06-01 23:30+00'::date, timestamp '2020-06-01 12:00'::timestamptz;
SELECT timestamp '2020-03-29 02:30' AT TIME ZONE 'Europe/Berlin', timestamp '2020-10-25 02:30' AT TIME ZONE 'Europe/Berlin';
SELECT timestamp '2020-06-01 12:00' AT TIME ZONE 'Mars/Base';
RESET TIME ZONE;
SHOW TimeZone;
SET TIME ZONE 'Europe/Berlin';
SELECT '2020-06-01 12:00' AT TIME ZONE 'UTC', '2020-06-01 12:00+05' AT TIME ZONE 'Asia/Tokyo';
RESET TIME ZONE;
SELECT '10:30'::time, '10:30:15.5'::time, '23:59:59.999999'::time;
-- Epoch seconds are UTC's whatever the session's zone; local times a zone skips or
-- repeats where its clocks change; age of timestamptz values; dates from timestamp text.
SET TIME ZONE 'America/New_York';
SELECT to_timestamp(1700000000);
SELECT to_timestamp(0)::timestamp;
SELECT to_timestamp(1700000000.5);
SELECT to_timestamp(1700000000::bigint);
SET TIME ZONE 'Europe/Berlin';
SELECT '2024-10-27 02:30'::timestamptz;
SELECT '2024-03-31 02:30'::timestamptz;
SELECT timestamp '2024-11-03 01:30' AT TIME ZONE 'America/New_York';
SELECT timestamp '2024-03-10 02:30' AT TIME ZONE 'America/New_York';
SELECT age(timestamptz '2024-03-15', timestamptz '2024-01-31');
SELECT age(date '2024-03-15', date '2024-01-31');
SELECT age(now()) < interval '1 second';
SELECT age(date '2000-01-01') > interval '20 years';
SELECT '2024-01-15 10:00'::date, '2024-01-15 10:00:00'::date, date '2024-01-15 23:59';
SELECT '2024-01-15T10:00'::date;
