-- Seed 003: movies by title, and the same rows again by actor (a denormalized view) so
-- "which movies did this actor play in" is a row range scan, compared with a plain view.
CREATE TABLE casting (title text, actor text, genre text, year int, PRIMARY KEY ((title), actor));
INSERT INTO casting VALUES ('Alien', 'Weaver', 'scifi', 1979), ('Alien', 'Hurt', 'scifi', 1979), ('Heat', 'Pacino', 'crime', 1995), ('Heat', 'De Niro', 'crime', 1995), ('Ronin', 'De Niro', 'crime', 1998);
CREATE MATERIALIZED VIEW by_actor WITH (primary_key = '((actor), title)') AS SELECT actor, title, genre, year FROM casting WHERE year >= 1980;
SELECT title, year FROM by_actor WHERE actor = 'De Niro' ORDER BY title;
SELECT actor, title FROM by_actor ORDER BY actor, title;
UPDATE casting SET year = 1985 WHERE title = 'Alien' AND actor = 'Weaver';
UPDATE casting SET year = 1970 WHERE title = 'Heat';
UPDATE casting SET actor = 'Robert De Niro' WHERE title = 'Ronin';
INSERT INTO casting VALUES ('Up', 'Asner', 'kids', 2009), ('Jaws', 'Scheider', 'thriller', 1975);
INSERT INTO casting VALUES ('Jaws', 'Scheider', 'thriller', 1985) ON CONFLICT (title, actor) DO UPDATE SET year = excluded.year;
DELETE FROM casting WHERE title = 'Up';
SELECT actor, title, genre, year FROM by_actor ORDER BY actor, title;
SELECT count(*) FROM by_actor WHERE genre = 'crime';
BEGIN;
INSERT INTO casting VALUES ('Tron', 'Bridges', 'scifi', 1982);
SELECT actor FROM by_actor WHERE title = 'Tron';
ROLLBACK;
SELECT count(*) FROM by_actor;
-- SELECT DISTINCT ordered by what it selects, or refused (42P10).
SELECT DISTINCT year + 1 FROM casting ORDER BY year + 1;
SELECT DISTINCT upper(actor) AS a FROM casting ORDER BY a FETCH FIRST 2 ROWS ONLY;
SELECT DISTINCT upper(actor) FROM casting ORDER BY upper(actor) DESC;
SELECT DISTINCT title FROM casting ORDER BY year;
SELECT DISTINCT title AS t FROM casting ORDER BY title;
SELECT DISTINCT title || 'A' FROM casting ORDER BY title || 'a';
