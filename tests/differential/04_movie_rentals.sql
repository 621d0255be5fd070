-- Seed 003: movies by genre, rentals and rewards kept in one customer's partition.
CREATE TABLE movies (genre text, title text, released date, rating real, PRIMARY KEY ((genre), title));
INSERT INTO movies VALUES ('action', 'Heat', '1995-12-15', 8.3), ('action', 'Speed', '1994-06-10', 7.2), ('drama', 'Up', '2009-05-29', 8.2), ('drama', 'Amour', '2012-10-24', 7.9), ('comedy', 'Airplane!', '1980-07-02', 7.7);
SELECT title FROM movies WHERE genre = 'action' ORDER BY title;
SELECT title, released FROM movies WHERE released >= '2000-01-01' ORDER BY released DESC;
SELECT genre, count(*) FROM movies GROUP BY genre HAVING count(*) > 1 ORDER BY genre;
SELECT title, rating FROM movies ORDER BY rating DESC, title;
CREATE TABLE customer (customer_id int, kind text, item text, points int, PRIMARY KEY ((customer_id), kind, item));
BEGIN;
INSERT INTO customer VALUES (1, 'rental', 'Heat', NULL);
UPDATE customer SET points = 10 WHERE customer_id = 1 AND kind = 'rental';
INSERT INTO customer VALUES (1, 'rewards', 'total', 10);
COMMIT;
SELECT kind, item, points FROM customer WHERE customer_id = 1 ORDER BY kind, item;
SELECT m.title, c.points FROM movies m JOIN customer c ON c.item = m.title;
SELECT title FROM movies WHERE title IN (SELECT item FROM customer WHERE kind = 'rental');
SELECT title FROM movies m WHERE EXISTS (SELECT 1 FROM customer c WHERE c.item = m.title);
-- Correlated scalar subqueries: by equality without an aggregate (decorrelated into a join),
-- by inequality (an aggregate: evaluated for a batch's outer values in one grouped join), in a
-- derived table, against a CTE, and ALL.
SELECT m.title, (SELECT c.points FROM customer c WHERE c.item = m.title) FROM movies m ORDER BY 1;
SELECT s.title, s.better FROM (SELECT title, (SELECT count(*) FROM movies x WHERE x.rating > m.rating) AS better FROM movies m) s ORDER BY 2, 1;
SELECT m.title, (SELECT sum(length(x.title)) FROM movies x WHERE x.rating < m.rating) FROM movies m ORDER BY 1;
SELECT m.title, (SELECT count(*) + length(m.title) FROM movies x WHERE x.released > m.released AND x.genre <> m.genre) FROM movies m ORDER BY 1;
SELECT m.title, (SELECT max(x.title) FROM movies x WHERE x.rating BETWEEN m.rating - 0.5 AND m.rating AND x.title <> m.title) FROM movies m ORDER BY 1;
SELECT sum((SELECT count(*) FROM movies x WHERE x.rating < m.rating)) FROM movies m;
SELECT title, rating / (rating - rating) FROM movies ORDER BY title;
SELECT m.title, (SELECT sum(10 / (length(x.title) - length(m.title))) FROM movies x WHERE length(x.title) <= length(m.title)) FROM movies m;
WITH g AS (SELECT genre, max(rating) AS top FROM movies GROUP BY genre) SELECT genre, (SELECT count(*) FROM g h WHERE h.top > g.top) FROM g ORDER BY 1;
SELECT title FROM movies m WHERE rating >= ALL (SELECT x.rating FROM movies x WHERE x.genre = m.genre) ORDER BY 1;
SELECT m.title, (SELECT x.title FROM movies x WHERE x.genre = m.genre AND x.title <> m.title) FROM movies m WHERE m.genre = 'comedy';
SELECT m.title, (SELECT x.title FROM movies x WHERE x.genre = m.genre AND x.title <> m.title) FROM movies m ORDER BY 1;
SELECT m.title, (SELECT x.title FROM movies x WHERE x.genre = m.genre) FROM movies m ORDER BY 1;
SELECT title FROM movies WHERE genre = 'action' UNION ALL SELECT title FROM movies WHERE genre = 'drama' ORDER BY 1;
SELECT upper(title), length(title), substr(title, 1, 2) FROM movies ORDER BY title;
SELECT CASE WHEN rating >= 8 THEN 'great' ELSE 'good' END, title FROM movies ORDER BY title;
DELETE FROM customer WHERE customer_id = 1 RETURNING item;
-- The best-rated movie of each genre, by a row-valued IN; the top three by FETCH FIRST.
SELECT genre, title FROM movies WHERE (genre, rating) IN (SELECT genre, max(rating) FROM movies GROUP BY genre) ORDER BY genre;
SELECT title FROM movies ORDER BY rating DESC FETCH FIRST 3 ROWS ONLY;
SELECT title FROM movies ORDER BY rating DESC OFFSET 1 ROW FETCH NEXT 2 ROWS ONLY;
SELECT title FROM movies ORDER BY rating DESC FETCH FIRST ROW ONLY;
SELECT ARRAY['Heat', 'Up'] && ARRAY['Up'], ARRAY['Heat'] && ARRAY['Up'], array_remove(ARRAY['Up', 'Heat', 'Up'], 'Up');
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY released), percentile_disc(0.2) WITHIN GROUP (ORDER BY title DESC) FROM movies;
SELECT genre, percentile_disc(0.5) WITHIN GROUP (ORDER BY rating) FROM movies GROUP BY genre ORDER BY genre;
TABLE movies ORDER BY title LIMIT 2;
SELECT mode() WITHIN GROUP (ORDER BY genre), mode() WITHIN GROUP (ORDER BY genre DESC) FROM movies;
-- Plain views over the catalog: read in place of their query, views over views, column names, dependents.
CREATE VIEW dramas AS SELECT title, released, rating FROM movies WHERE genre = 'drama';
CREATE VIEW top_dramas (name, score) AS SELECT title, rating FROM dramas WHERE rating > 8;
SELECT * FROM dramas ORDER BY title;
SELECT name, score FROM top_dramas;
SELECT d.title, m.genre FROM dramas d JOIN movies m ON m.title = d.title ORDER BY 1;
SELECT count(*) FROM dramas WHERE released > '2010-01-01';
WITH dramas AS (SELECT 'shadowed' AS title) SELECT title FROM dramas;
CREATE VIEW dramas AS SELECT 1;
CREATE VIEW too_many (a, b) AS SELECT 1;
CREATE VIEW broken AS SELECT nope FROM movies;
SELECT viewname FROM pg_views WHERE schemaname = 'public' ORDER BY 1;
SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' AND table_name LIKE '%dramas' ORDER BY 1;
CREATE OR REPLACE VIEW dramas AS SELECT title, released, rating, genre FROM movies WHERE genre = 'drama';
SELECT name FROM top_dramas;
DROP VIEW dramas;
DROP TABLE movies;
DROP VIEW IF EXISTS nope;
DROP VIEW nope;
DROP VIEW dramas CASCADE;
SELECT * FROM top_dramas;
SELECT count(*) FROM pg_views WHERE schemaname = 'public';
