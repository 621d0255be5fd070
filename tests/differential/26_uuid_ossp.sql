-- uuid-ossp as schemas use it: movie rentals keyed by uuid_generate_v4() (TypeORM's and Rails'
-- default for uuid keys), name-based v3/v5 uuids for catalog numbers, pg_dump's qualified
-- public.uuid_generate_v4(), CREATE/DROP EXTENSION with their notices and refusals.
DROP EXTENSION IF EXISTS "uuid-ossp";
DROP EXTENSION "uuid-ossp";
CREATE EXTENSION IF NOT EXISTS "uuid-ossp" WITH SCHEMA public;
CREATE EXTENSION "uuid-ossp";
CREATE EXTENSION IF NOT EXISTS "uuid-ossp";
CREATE EXTENSION IF NOT EXISTS plpgsql;
CREATE EXTENSION no_such_extension;
SELECT extname, extversion FROM pg_extension ORDER BY 1;
CREATE TABLE movies (id uuid PRIMARY KEY DEFAULT uuid_generate_v4(), title text NOT NULL, catalog_no uuid, copy uuid DEFAULT public.uuid_generate_v1());
INSERT INTO movies (title) VALUES ('Alien'), ('Heat'), ('Ran');
UPDATE movies SET catalog_no = uuid_generate_v5(uuid_ns_url(), 'https://movies.example/' || title);
SELECT title, catalog_no FROM movies ORDER BY title;
SELECT count(DISTINCT id), count(DISTINCT copy), count(*) FROM movies;
SELECT column_name, column_default FROM information_schema.columns WHERE table_name = 'movies' ORDER BY ordinal_position;
SELECT uuid_generate_v3(uuid_ns_dns(), 'www.example.com') AS v3, uuid_generate_v5(uuid_ns_url(), 'http://www.postgresql.org') AS v5;
SELECT uuid_nil(), uuid_ns_dns(), uuid_ns_url(), uuid_ns_oid(), uuid_ns_x500();
SELECT length(uuid_generate_v4()::text) AS len, substr(uuid_generate_v4()::text, 15, 1) AS v4, substr(uuid_generate_v1()::text, 15, 1) AS v1, substr(uuid_generate_v1mc()::text, 15, 1) AS v1mc;
SELECT pg_typeof(uuid_generate_v4()) AS t4, pg_typeof(uuid_generate_v5(uuid_nil(), 'x')) AS t5;
SELECT uuid_generate_v5(NULL, 'x') IS NULL AS a, uuid_generate_v3(uuid_nil(), NULL) IS NULL AS b;
SELECT uuid_generate_v5('6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'x');
SELECT uuid_generate_v5('not a uuid', 'x');
DROP EXTENSION "uuid-ossp";
DROP TABLE movies;
BEGIN;
DROP EXTENSION "uuid-ossp";
SELECT count(*) FROM pg_extension WHERE extname = 'uuid-ossp';
ROLLBACK;
SELECT count(*) FROM pg_extension WHERE extname = 'uuid-ossp';
DROP EXTENSION "uuid-ossp";
SELECT extname FROM pg_extension ORDER BY 1;
