-- Statements node ORMs send, on the movie rentals: Sequelize's SET TIME ZONE INTERVAL at
-- connect, TypeORM's `text array` columns, its `columns.*` over information_schema.columns
-- and its `'"pg_catalog"."int4"'::regtype::text` column types.
SET TIME ZONE INTERVAL '+00:00' HOUR TO MINUTE;
SHOW TimeZone;
SELECT timestamptz '2024-03-01 10:00+02' AS due;
SET TIME ZONE INTERVAL '-08:00' HOUR TO MINUTE;
SHOW TimeZone;
SELECT timestamptz '2024-03-01 10:00+02' AS due;
SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE;
SHOW TimeZone;
SET TIME ZONE INTERVAL '3 hours';
SHOW TimeZone;
SET TIME ZONE INTERVAL '1 day';
SET TIME ZONE 0;
SHOW TimeZone;
SET TIME ZONE 'UTC';
CREATE TABLE rentals (store int, movie text, copy_no int, genres text array, ratings int ARRAY[3], notes varchar(20) array, due timestamp with time zone array, PRIMARY KEY ((store), movie, copy_no));
INSERT INTO rentals VALUES (1, 'Alien', 1, array['horror', 'sf'], ARRAY[5, 4], array['scratched'], array[timestamptz '2024-03-01 10:00+00']);
INSERT INTO rentals VALUES (1, 'Heat', 2, '{crime}', '{3}', NULL, NULL);
SELECT movie, genres, ratings, notes, due FROM rentals ORDER BY movie;
SELECT movie FROM rentals WHERE 'sf' = ANY (genres);
SELECT CAST('{1,2}' AS int ARRAY) AS ids, ARRAY[1, 2] AS made;
SELECT column_name, data_type, udt_name FROM information_schema.columns WHERE table_name = 'rentals' ORDER BY ordinal_position;
SELECT columns.column_name, columns.is_nullable FROM information_schema.columns WHERE table_name = 'rentals' ORDER BY ordinal_position;
SELECT count(*) FROM (SELECT columns.* FROM "information_schema"."columns" WHERE "table_schema" = 'public' AND "table_name" = 'rentals') c;
SELECT rentals.* FROM public.rentals ORDER BY movie;
SELECT public.rentals.* FROM rentals ORDER BY movie;
SELECT r.movie, rentals.copy_no FROM public.rentals JOIN rentals r ON r.movie = rentals.movie ORDER BY 1;
SELECT column_name, ('"' || "udt_schema" || '"."' || "udt_name" || '"')::"regtype"::text AS "regtype" FROM "information_schema"."columns" WHERE "table_name" = 'rentals' ORDER BY ordinal_position;
SELECT 'int4'::regtype::text AS t1, '"pg_catalog"."varchar"'::regtype::text AS t2, 'pg_catalog.timestamptz'::regtype::text AS t3, 'rentals'::regclass::text AS rel;
SELECT 'no_such_type'::regtype::text;
SELECT ('no' || '_such')::regtype::text;
SELECT * FROM regexp_split_to_table('horror,sf', ',') g ORDER BY 1;
SELECT g FROM regexp_split_to_table('horror,sf', ',') AS g ORDER BY 1;
SELECT k FROM jsonb_object_keys('{"a": 1, "b": 2}') k ORDER BY 1;
