-- Seed 000's race registrations numbered by sequences: bib numbers handed out by CREATE
-- SEQUENCE, order numbers by identity columns, and what ALTER and DROP do to them.
CREATE SEQUENCE bibs START WITH 1000 INCREMENT BY 10 MAXVALUE 1030;
CREATE TABLE registrations (event text, bib int DEFAULT nextval('bibs'), name text, PRIMARY KEY (event, bib));
INSERT INTO registrations (event, name) VALUES ('NYC', 'ann'), ('NYC', 'bob'), ('Boston', 'cy') RETURNING bib, name;
SELECT nextval('bibs');
INSERT INTO registrations (event, name) VALUES ('NYC', 'dee');
SELECT currval('bibs'), lastval();
ALTER SEQUENCE bibs MAXVALUE 2000 INCREMENT BY 100;
INSERT INTO registrations (event, name) VALUES ('NYC', 'dee') RETURNING bib;
ALTER SEQUENCE bibs RESTART WITH 1500;
SELECT nextval('bibs'), nextval('bibs');
SELECT setval('bibs', 1900, false), nextval('bibs');
SELECT setval('bibs', 5);
SELECT last_value, is_called FROM bibs;
SELECT sequencename, data_type, start_value, min_value, max_value, increment_by, cycle, last_value FROM pg_sequences ORDER BY sequencename;
SELECT sequence_name, data_type, start_value, maximum_value, increment, cycle_option FROM information_schema.sequences ORDER BY sequence_name;
CREATE SEQUENCE countdown AS smallint INCREMENT -1 MINVALUE -2 MAXVALUE 1 CYCLE;
SELECT nextval('countdown'), nextval('countdown'), nextval('countdown'), nextval('countdown'), nextval('countdown');
CREATE SEQUENCE heats NO CYCLE START 3 MAXVALUE 4 NO MINVALUE;
SELECT nextval('heats'), nextval('heats');
SELECT nextval('heats');
CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY (INCREMENT BY 5 START WITH 100) PRIMARY KEY, item text);
INSERT INTO orders (item) VALUES ('shoes'), ('socks') RETURNING id;
ALTER SEQUENCE orders_id_seq RESTART;
INSERT INTO orders (item) VALUES ('cap') ON CONFLICT DO NOTHING RETURNING id;
SELECT seqstart, seqincrement, seqmin, seqcycle FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid WHERE c.relname = 'orders_id_seq';
-- Errors: each as PostgreSQL gives it.
CREATE SEQUENCE bibs;
CREATE SEQUENCE IF NOT EXISTS bibs;
CREATE SEQUENCE bad INCREMENT 0;
CREATE SEQUENCE bad MINVALUE 10 MAXVALUE 5;
CREATE SEQUENCE bad START 0;
CREATE SEQUENCE bad AS text;
CREATE SEQUENCE bad AS smallint MAXVALUE 100000;
CREATE SEQUENCE bad START 1 START 2;
CREATE SEQUENCE bad CACHE 0;
SELECT nextval('nope');
SELECT nextval('registrations');
ALTER SEQUENCE nope RESTART;
ALTER SEQUENCE IF EXISTS nope RESTART;
ALTER SEQUENCE bibs RESTART WITH 1;
DROP SEQUENCE registrations;
DROP SEQUENCE nope;
DROP SEQUENCE IF EXISTS nope;
DROP SEQUENCE orders_id_seq;
DROP SEQUENCE bibs;
-- A sequence renamed keeps its values and its callers; one owned by a column goes with it.
ALTER SEQUENCE bibs RENAME TO race_bibs;
SELECT setval('race_bibs', 1000);
INSERT INTO registrations (event, name) VALUES ('Paris', 'eve') RETURNING bib;
CREATE SEQUENCE tags OWNED BY registrations.name;
ALTER TABLE registrations DROP COLUMN name;
SELECT nextval('tags');
DROP SEQUENCE race_bibs CASCADE;
INSERT INTO registrations (event) VALUES ('Rome');
DROP SEQUENCE countdown, heats;
SELECT count(*) FROM pg_class WHERE relkind = 'S';
-- Transactions: a sequence made in a rolled-back transaction is gone; values are not
-- given back.
BEGIN;
CREATE SEQUENCE laps;
SELECT nextval('laps');
ROLLBACK;
SELECT nextval('laps');
-- A number a rolled-back sequence took is not given again; names fold as regclass reads them.
CREATE SEQUENCE fresh MAXVALUE 100;
SELECT nextval('fresh');
CREATE SEQUENCE runner_SEQ START 1 INCREMENT 50;
SELECT nextval('runner_SEQ'), nextval('public.RUNNER_seq');
-- Bounds are checked against where the sequence stands; a type change moves the bounds.
SELECT setval('runner_seq', 40000, false);
ALTER SEQUENCE runner_seq AS smallint;
CREATE SEQUENCE wide AS integer MINVALUE -2147483648;
ALTER SEQUENCE wide AS bigint;
SELECT min_value, max_value FROM pg_sequences WHERE sequencename = 'wide';
CREATE SEQUENCE unused;
ALTER SEQUENCE unused START 100;
SELECT nextval('unused');
-- pg_dump's form: a sequence, a default calling it as regclass, then OWNED BY.
CREATE SEQUENCE entries_id_seq AS integer START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1;
CREATE TABLE entries (id integer DEFAULT nextval('public.entries_id_seq'::regclass) NOT NULL PRIMARY KEY, runner text);
ALTER SEQUENCE public.entries_id_seq OWNED BY public.entries.id;
INSERT INTO entries (runner) VALUES ('ann'), ('bob') RETURNING id;
SELECT pg_get_serial_sequence('entries', 'id');
CREATE TABLE results (id int PRIMARY KEY DEFAULT nextval('entries_id_seq'), time_s int);
DROP TABLE entries;
TRUNCATE entries RESTART IDENTITY;
INSERT INTO entries (runner) VALUES ('cy') RETURNING id;
DROP TABLE entries CASCADE;
INSERT INTO results (time_s) VALUES (1);
SELECT count(*) FROM pg_class WHERE relname = 'entries_id_seq';
