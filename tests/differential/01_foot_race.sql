-- Seeds 000/004: foot-race registrations partitioned by (event, distance), bib as row key.
CREATE TABLE registrations (event text, distance text, bib int, name text NOT NULL, age int, city varchar(20), PRIMARY KEY ((event, distance), bib));
INSERT INTO registrations VALUES ('2011 New York City Marathon', 'Full', 1234, 'Ann', 34, 'Boston'), ('2011 New York City Marathon', 'Full', 7, 'Bob', 51, 'NYC'), ('2011 New York City Marathon', 'Half', 99, 'Cy', 28, 'NYC'), ('2012 Boston', '10K', 5, 'Dee', 40, NULL);
SELECT name, age FROM registrations WHERE event = '2011 New York City Marathon' AND distance = 'Full' AND bib = 1234;
SELECT bib, name FROM registrations WHERE event = '2011 New York City Marathon' AND distance = 'Full' AND bib BETWEEN 1 AND 2000 ORDER BY bib;
SELECT event, count(*), min(age), max(age) FROM registrations GROUP BY event ORDER BY event;
SELECT name FROM registrations WHERE age > 30 ORDER BY name;
SELECT name FROM registrations WHERE city IS NULL;
SELECT name, city FROM registrations ORDER BY city NULLS FIRST, name;
INSERT INTO registrations VALUES ('2012 Boston', '10K', 5, 'Dup', 1, NULL);
INSERT INTO registrations (event, distance, bib) VALUES ('2012 Boston', '10K', 6);
INSERT INTO registrations VALUES ('2012 Boston', NULL, 6, 'No distance', 1, NULL);
INSERT INTO registrations VALUES ('2012 Boston', '10K', 6, 'Long city', 1, 'abcdefghijklmnopqrstuvwxyz');
UPDATE registrations SET age = age + 1 WHERE event = '2011 New York City Marathon';
SELECT bib, age FROM registrations ORDER BY bib;
UPDATE registrations SET bib = 8 WHERE event = '2011 New York City Marathon' AND distance = 'Full' AND bib = 7;
SELECT bib, name FROM registrations ORDER BY bib;
DELETE FROM registrations WHERE age >= 50;
SELECT count(*) FROM registrations;
SELECT * FROM no_such_table;
SELECT no_such_column FROM registrations;
-- The seeds' by-age index: the same answers through the index as without it.
CREATE INDEX reg_by_age ON registrations (age);
CREATE UNIQUE INDEX reg_by_name ON registrations (name) INCLUDE (age);
SELECT event, bib, name FROM registrations WHERE age = 35 ORDER BY bib;
SELECT name, age FROM registrations WHERE age BETWEEN 30 AND 45 ORDER BY name;
SELECT age FROM registrations WHERE name = 'Ann';
INSERT INTO registrations VALUES ('2013 Chicago', 'Full', 1, 'Ann', 22, NULL);
INSERT INTO registrations VALUES ('2013 Chicago', 'Full', 2, 'Eve', 35, NULL), ('2013 Chicago', 'Full', 3, 'Fay', NULL, NULL);
UPDATE registrations SET age = 36 WHERE age = 35 AND event = '2013 Chicago';
SELECT event, bib, name, age FROM registrations WHERE age >= 35 ORDER BY event, bib;
DELETE FROM registrations WHERE name = 'Eve';
SELECT count(*) FROM registrations WHERE age = 36;
DROP INDEX reg_by_name;
SELECT name FROM registrations WHERE name = 'Ann';
-- Point lookups in the literal forms a simple query can take: one kept point plan serves
-- every one of them, and each answers (or fails) as PostgreSQL does.
SELECT name, age FROM registrations WHERE event = '2013 Chicago' AND distance = 'Full' AND bib = 3;
SELECT name, age FROM registrations WHERE event = '2013 Chicago' AND distance = 'Full' AND bib = 4;
SELECT name FROM registrations WHERE bib = '3' AND distance = 'Full' AND event = '2013 Chicago';
SELECT name FROM registrations WHERE event = '2013 Chicago' AND distance = 'Full' AND bib = ' 3 ';
SELECT name FROM registrations WHERE event = '2013 Chicago' AND distance = 'Full' AND bib = 3000000000;
SELECT name FROM registrations WHERE event = '2013 Chicago' AND distance = 'Full' AND bib = 'three';
SELECT name FROM registrations WHERE event = '2013 Chicago' AND distance = 'Full' AND bib = 3.0;
SELECT name FROM registrations WHERE event = 'it''s' AND distance = 'Full' AND bib = 3;
SELECT r.name FROM registrations r WHERE r.event = '2013 Chicago' AND r.distance = 'Full' AND r.bib = 3;
SELECT name FROM registrations WHERE event = '2013 Chicago' AND distance = 'Full' AND bib = 3 AND age = 1;
UPDATE registrations SET name = 'Fay B' WHERE event = '2013 Chicago' AND distance = 'Full' AND bib = 3;
SELECT name, age FROM registrations WHERE event = '2013 Chicago' AND distance = 'Full' AND bib = 3;
-- Text against a number has no operator (42883), on every path a SELECT can take.
SELECT name FROM registrations WHERE city = 2013;
SELECT name FROM registrations WHERE event = 2013 AND distance = 'Full' AND bib = 3;
SELECT name FROM registrations WHERE name IN (1, 2);
SELECT name FROM registrations WHERE age = '36' ORDER BY name;
-- ON CONFLICT DO NOTHING without a target also skips rows a unique index refuses.
CREATE UNIQUE INDEX reg_unique_name ON registrations (name);
INSERT INTO registrations VALUES ('2014 Paris', 'Full', 1, 'Ann', 20, NULL) ON CONFLICT DO NOTHING;
INSERT INTO registrations VALUES ('2014 Paris', 'Full', 1, 'Ann', 20, NULL), ('2014 Paris', 'Full', 2, 'Gil', 20, NULL) ON CONFLICT DO NOTHING;
INSERT INTO registrations SELECT '2014 Paris', 'Full', 3, 'Ann', 20, NULL FROM generate_series(1, 1) g ON CONFLICT DO NOTHING;
INSERT INTO registrations VALUES ('2014 Paris', 'Full', 4, 'Ann', 20, NULL) ON CONFLICT (event, distance, bib) DO NOTHING;
SELECT event, bib, name FROM registrations WHERE name IN ('Ann', 'Gil') ORDER BY event, bib;
DROP INDEX reg_unique_name;
