-- What schema tools read back on the foot-race registrations (drizzle-kit's push, Sequelize's
-- describeTable): enum labels and view definitions in subqueries, regtype arrays,
-- information_schema.columns in full, operator classes of index columns, a LATERAL select
-- list over pg_index, OID-alias values shown by name, integer constants through CASE,
-- and a USING join's column named in WHERE.
CREATE TYPE race_kind AS ENUM ('road', 'trail', 'track');
CREATE TABLE races (race_id serial PRIMARY KEY, name varchar(40) NOT NULL, kind race_kind DEFAULT 'road', fee numeric(8,2), starts timestamptz);
CREATE TABLE entrants (race_id int, bib int GENERATED ALWAYS AS IDENTITY (START 100 INCREMENT 5), runner text NOT NULL, PRIMARY KEY (race_id, bib));
CREATE INDEX entrants_runner ON entrants (runner DESC, race_id);
CREATE UNIQUE INDEX races_name ON races (name);
CREATE VIEW road_races AS SELECT race_id, name FROM races WHERE kind = 'road';
INSERT INTO races (name, kind, fee) VALUES ('NYC', 'road', 295.00), ('Western States', 'trail', 410.50);
INSERT INTO entrants (race_id, runner) VALUES (1, 'Ann'), (1, 'Bo'), (2, 'Cy');
SELECT t.typname, ARRAY(SELECT e.enumlabel FROM pg_enum e WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder) AS labels FROM pg_type t WHERE t.typname = 'race_kind';
SELECT c.relname, (SELECT count(*) FROM pg_views v WHERE v.viewname = c.relname) AS views FROM pg_class c WHERE c.relname IN ('road_races', 'races') ORDER BY 1;
SELECT extname FROM pg_extension WHERE extname = 'plpgsql';
SELECT 23 = ANY ('{int,int8,int2}'::regtype[]) AS is_int, CASE 20::oid WHEN 'int'::regtype THEN 'serial' WHEN 'int8'::regtype THEN 'bigserial' END AS kind;
-- Every column but the catalog (database) names.
SELECT table_schema, table_name, column_name, ordinal_position, column_default, is_nullable, data_type, character_maximum_length, character_octet_length, numeric_precision, numeric_precision_radix, numeric_scale, datetime_precision, interval_type, interval_precision, character_set_catalog, character_set_schema, character_set_name, collation_catalog, collation_schema, collation_name, domain_catalog, domain_schema, domain_name, udt_schema, udt_name, scope_catalog, scope_schema, scope_name, maximum_cardinality, dtd_identifier, is_self_referencing, is_identity, identity_generation, identity_start, identity_increment, identity_maximum, identity_minimum, identity_cycle, is_generated, generation_expression, is_updatable FROM information_schema.columns WHERE table_name IN ('races', 'entrants') ORDER BY table_name, ordinal_position;
SELECT ic.relname AS index_name, k.i AS position, a.attname, opc.opcname, i.indoption[k.i - 1] & 1 = 1 AS descending FROM pg_class t JOIN pg_index i ON t.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid CROSS JOIN LATERAL (SELECT unnest(i.indkey), generate_subscripts(i.indkey, 1) + 1) AS k(attnum, i) LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum JOIN pg_opclass opc ON opc.oid = ANY(i.indclass) WHERE t.relname = 'entrants' AND opc.oid = i.indclass[k.i - 1] ORDER BY 1, 2;
SELECT idx.indexrelname, idx.relname, CASE WHEN con.conname IS NOT NULL THEN 1 ELSE 0 END AS by_constraint FROM pg_stat_user_indexes idx LEFT JOIN pg_constraint con ON con.conindid = idx.indexrelid WHERE idx.relname IN ('races', 'entrants') ORDER BY 1;
SELECT relname FROM pg_statio_all_tables WHERE relname IN ('races', 'entrants') ORDER BY 1;
SELECT 'races'::regclass, 'int4'::regtype, 'public'::regnamespace, pg_get_serial_sequence('races', 'race_id')::regclass AS seq;
SELECT c.relname, c.oid::regclass AS shown FROM pg_class c WHERE c.relname IN ('races', 'entrants') ORDER BY c.relname;
SELECT 'nextval(''' || pg_get_serial_sequence('races', 'race_id')::regclass || '''::regclass)' AS default_text, pg_get_serial_sequence('races', 'race_id')::regclass::text AS seq_text;
SELECT conname FROM pg_constraint JOIN pg_class ON pg_class.oid = conrelid WHERE contype = 'p' AND connamespace = 'public'::regnamespace AND relname = 'entrants';
SELECT 'nowhere'::regnamespace;
SELECT CASE WHEN fee > 300 THEN 1 ELSE 0 END AS dear, coalesce(NULL, 7) AS seven, pg_typeof(CASE WHEN fee > 300 THEN 1 ELSE 0 END), pg_typeof(nullif(1, 2)), pg_typeof(greatest(1, 2)) FROM races ORDER BY race_id;
SELECT sum(CASE WHEN kind = 'road' THEN 1 ELSE 0 END) AS road, pg_typeof(sum(CASE WHEN kind = 'road' THEN 1 ELSE 0 END)), max(1) FROM races;
SELECT race_id, runner FROM races JOIN entrants USING (race_id) WHERE race_id = 1 ORDER BY runner;
SELECT race_id, runner FROM races r LEFT JOIN entrants e USING (race_id) WHERE race_id > 1 AND runner IS NOT NULL;
SELECT race_id FROM races NATURAL JOIN road_races WHERE race_id = 1;
SELECT count(*) FROM races JOIN entrants USING (race_id) JOIN races r2 ON r2.race_id = entrants.race_id AND race_id = 2;
SELECT name FROM races JOIN entrants USING (race_id) WHERE EXISTS (SELECT 1 FROM road_races v WHERE v.name = races.name AND race_id = 1) ORDER BY bib;
SELECT count(*) FROM races JOIN entrants USING (race_id) JOIN road_races AS v (rid, rname) ON v.rname = races.name AND race_id = 1;
-- Column defaults as PostgreSQL's deparser shows them (ORMs compare them with their own).
CREATE TABLE race_defaults (id int PRIMARY KEY, a numeric DEFAULT '0', b numeric DEFAULT '1.5', c numeric(8,2) DEFAULT '2', d numeric DEFAULT 0, e numeric DEFAULT '-3', f numeric DEFAULT 2.50, h int DEFAULT '-5', i bigint DEFAULT '7', k real DEFAULT '1.5', l float8 DEFAULT 2, m date DEFAULT current_date, n timestamptz DEFAULT current_timestamp, o timestamptz DEFAULT now(), p text DEFAULT current_user);
SELECT column_name, column_default FROM information_schema.columns WHERE table_name = 'race_defaults' ORDER BY ordinal_position;
-- LATERAL select lists over an earlier item, with and without set-returning functions.
CREATE TABLE laps (runner int PRIMARY KEY, lap int, splits int[]);
INSERT INTO laps VALUES (1, 10, ARRAY[61, 59]), (2, 20, ARRAY[70]);
SELECT s.y FROM laps CROSS JOIN LATERAL (SELECT laps.runner + 1 AS y) s ORDER BY 1;
SELECT s.lap FROM laps, LATERAL (SELECT laps.runner AS lap) s ORDER BY 1;
SELECT s.* FROM laps CROSS JOIN LATERAL (SELECT unnest(laps.splits) AS v, laps.runner AS w, laps.runner AS w2) s ORDER BY 1;
SELECT s.d, t.f FROM laps CROSS JOIN LATERAL (SELECT laps.runner * 2 AS d, laps.lap AS e) s CROSS JOIN LATERAL (SELECT s.d + 1 AS f) t ORDER BY 1;
SELECT runner, q FROM laps LEFT JOIN LATERAL (SELECT laps.runner * 3 AS q) s ON true ORDER BY 1;
-- A later item with a USING column's name makes it ambiguous.
SELECT 1 FROM races JOIN entrants USING (race_id) CROSS JOIN road_races WHERE race_id = 1;
-- GROUP BY, DISTINCT and ORDER BY that repeat a select-list expression with constants.
SELECT coalesce(lap, 0), count(*) FROM laps GROUP BY coalesce(lap, 0) ORDER BY 1;
SELECT CASE WHEN lap >= 15 THEN 1 ELSE 0 END, count(*) FROM laps GROUP BY CASE WHEN lap >= 15 THEN 1 ELSE 0 END ORDER BY 1;
SELECT DISTINCT coalesce(lap, 0) FROM laps ORDER BY coalesce(lap, 0);
SELECT coalesce(lap, 0), count(*) FROM laps GROUP BY 1 ORDER BY coalesce(lap, 0);
SELECT * FROM generate_series(1, NULL);
SELECT * FROM generate_series(NULL, 3);
SELECT ARRAY(SELECT enumlabel FROM pg_enum e WHERE e.enumtypid = t.oid) AS labels, array_to_string(ARRAY(SELECT enumlabel FROM pg_enum e WHERE e.enumtypid = t.oid), ',') AS text FROM pg_type t WHERE typname = 'int4';
SELECT ARRAY(SELECT splits[1] FROM laps WHERE lap > 100) AS none, ARRAY(SELECT runner FROM laps ORDER BY runner DESC) AS runners;
SELECT 'pg_class'::regclass::text, 'pg_class'::regclass;
SELECT DISTINCT 'races'::regclass FROM races;
SELECT c.oid::regclass, count(*) FROM pg_class c WHERE relname = 'races' GROUP BY 1;
SELECT r FROM (SELECT 'entrants'::regclass AS r) s WHERE r IS NOT NULL;
SELECT 'races'::regclass UNION ALL SELECT 'entrants'::regclass ORDER BY 1;
SELECT count(*) FROM laps GROUP BY coalesce(lap, 0) HAVING coalesce(lap, 0) > 0 ORDER BY 1;
SELECT coalesce(lap, 0) + 1 FROM laps GROUP BY coalesce(lap, 0) ORDER BY 1;
SELECT coalesce(lap, 0), count(*) FROM laps GROUP BY ROLLUP (coalesce(lap, 0)) ORDER BY 1;
SELECT CASE WHEN lap > 15 THEN 1 ELSE 0 END AS late, sum(CASE WHEN lap > 15 THEN 1 ELSE 0 END) FROM laps GROUP BY CASE WHEN lap > 15 THEN 1 ELSE 0 END ORDER BY 1;
SELECT s."Total" FROM laps, LATERAL (SELECT laps.runner + 100 AS "Total") s ORDER BY 1;
SELECT s.* FROM laps, LATERAL (SELECT laps.runner + 100 AS "Total") s ORDER BY 1;
