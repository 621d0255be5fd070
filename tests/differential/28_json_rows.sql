-- Movie rentals served as JSON, the way API handlers write it: whole rows (t, t.*) in
-- row_to_json, json_build_object and the aggregates, row constructors, array_to_json of
-- collected rows, pretty row_to_json; what does not take a row is refused as in PostgreSQL.
-- Then whole rows as records: `SELECT m`, `(m).title`, `m::text` fingerprints, `m IS NULL`
-- for an outer join's missing row.
CREATE TABLE movies (id int PRIMARY KEY, title text NOT NULL, year int, rating numeric(3,1));
CREATE TABLE rentals (movie_id int, customer text, rented_on date, returned_on date, PRIMARY KEY (movie_id, customer));
INSERT INTO movies VALUES (1, 'Alien', 1979, 8.5), (2, 'Heat', 1995, 8.3), (3, 'Ran', 1985, NULL);
INSERT INTO rentals VALUES (1, 'ann', '2024-03-01', '2024-03-04'), (1, 'bob', '2024-03-02', NULL), (3, 'cy', '2024-03-05', '2024-03-06');
SELECT row_to_json(m.*) FROM movies m ORDER BY id;
SELECT to_json(m.*), to_jsonb(m.*) FROM movies m WHERE id = 3;
SELECT json_build_object('movie', m, 'rentals', (SELECT count(*) FROM rentals r WHERE r.movie_id = m.id)) FROM movies m ORDER BY id;
SELECT jsonb_build_object('movie', m.*, 'kind', 'film') FROM movies m WHERE id = 2;
SELECT json_build_array(m, r) FROM movies m JOIN rentals r ON r.movie_id = m.id ORDER BY r.customer;
SELECT m.title, json_build_object('rental', r) AS rental FROM movies m LEFT JOIN rentals r ON r.movie_id = m.id ORDER BY m.id, r.customer;
SELECT m.title, json_agg(r.* ORDER BY r.customer) FILTER (WHERE r.customer IS NOT NULL) AS rentals FROM movies m LEFT JOIN rentals r ON r.movie_id = m.id GROUP BY m.title ORDER BY m.title;
SELECT jsonb_agg(m.* ORDER BY m.year DESC) FROM movies m;
SELECT json_agg(t) FROM (SELECT id, title FROM movies ORDER BY id) t;
SELECT array_to_json(array_agg(row_to_json(t))) FROM (SELECT id, title, rating FROM movies ORDER BY id) t;
SELECT array_to_json(ARRAY[1, 2, 3]), array_to_json('{a,b}'::text[], false), array_to_json(ARRAY[[1, 2], [3, 4]]);
SELECT row_to_json(ROW(1, 'a', NULL)), to_json(ROW(m.id, m.title)), to_jsonb(ROW(m.year)) FROM movies m WHERE id = 1;
SELECT row_to_json((2, 'b'));
SELECT row_to_json(m, true) FROM movies m WHERE id = 1;
SELECT row_to_json(r, false) FROM rentals r ORDER BY customer LIMIT 1;
SELECT row_to_json(ROW(m.id, m.title), true) FROM movies m WHERE id = 2;
SELECT length(m.*) FROM movies m;
SELECT upper(r.*) FROM rentals r;
NOTIFY "";
SELECT 1 AS "";
SELECT m FROM movies m ORDER BY id;
SELECT (m).title, (m).year FROM movies m WHERE id = 2;
SELECT m.title, r FROM movies m LEFT JOIN rentals r ON r.movie_id = m.id ORDER BY m.id, r.customer;
SELECT m.title FROM movies m LEFT JOIN rentals r ON r.movie_id = m.id WHERE r IS NULL ORDER BY 1;
SELECT count(*) FILTER (WHERE r IS NOT NULL) AS complete, count(*) FILTER (WHERE r IS NULL) AS missing FROM rentals r;
SELECT m.id, md5(m::text) AS fingerprint, m::text FROM movies m ORDER BY id;
SELECT array_agg(r ORDER BY customer) FROM rentals r;
SELECT t FROM (SELECT 1 AS a, 'x y' AS b, NULL::int AS c, '' AS d, 'q"\' AS e, true AS f) t;
SELECT movies FROM movies ORDER BY id LIMIT 1;
SELECT json_object_agg(m.id, m.*) FROM movies m WHERE id < 3;
SELECT array_agg(m.* ORDER BY id) FROM movies m;
SELECT ROW(m.*) FROM movies m WHERE id = 1;
SELECT row_to_json(ROW(1, ROW(2, 3))), json_build_object('k', ROW(1, 2));
SELECT json_agg((id, title) ORDER BY id) FROM movies;
WITH c AS (SELECT 'ann' AS customer) SELECT json_build_object('by', customer) FROM c, movies customer WHERE customer.id = 3;
WITH recent AS (SELECT movie_id, customer FROM rentals WHERE returned_on IS NULL) SELECT json_agg(recent) FROM recent;
SELECT json_agg(t ORDER BY t.id) FROM (SELECT * FROM movies) t;
SELECT json_agg(t.* ORDER BY t.id) FROM (SELECT m.*, 1 AS extra FROM movies m) t;
SELECT json_build_array(r) FROM movies a JOIN rentals r ON r.movie_id = a.id RIGHT JOIN movies c ON c.id = a.id ORDER BY c.id, r.customer;
SELECT json_agg(m ORDER BY m.id) FROM movies m, generate_series(1, 1) g;
SELECT (SELECT json_agg(json_build_object('customer', customer)) FROM rentals r WHERE r.movie_id = customer.id) FROM movies customer ORDER BY customer.id;
CREATE TABLE genres (id int PRIMARY KEY, parent_id int, name text, weight numeric);
INSERT INTO genres VALUES (1, NULL, 'drama', 1.5), (2, 1, 'crime', 2), (3, 2, 'heist', 0.25);
WITH RECURSIVE sub AS (SELECT id FROM genres WHERE parent_id IS NULL UNION ALL SELECT g.id FROM genres g JOIN sub ON g.parent_id = sub.id) SELECT json_agg(g ORDER BY g.id) FROM genres g JOIN sub USING (id);
SELECT g, g::text, to_json(g) FROM genres g ORDER BY id;
SELECT m.title FROM movies m WHERE EXISTS (SELECT 1 FROM genres WHERE genres.id = year - 1978) ORDER BY 1;
SELECT row_to_json(ROW(m.*)) FROM movies m WHERE id = 1;
WITH genres AS (SELECT id, to_json(genres) AS payload FROM genres) SELECT id, payload FROM genres ORDER BY id;
SELECT (SELECT row_to_json(m) FROM rentals r WHERE r.movie_id = m.id ORDER BY r.customer LIMIT 1) FROM movies m ORDER BY m.id;
SELECT g FROM genres g WHERE id = 1 UNION ALL SELECT g FROM genres g WHERE id = 3 ORDER BY 1;
DROP TABLE genres;
DROP TABLE movies, rentals;
-- Row constructors read as records: their text, and IS [NOT] NULL field by field.
SELECT row(1, 'a b', NULL)::text, row(NULL, NULL) IS NULL AS a, row(1, NULL) IS NULL AS b, row(1, NULL) IS NOT NULL AS c, (1, 'x')::text = '(1,x)' AS d;
SELECT row(1, 'it''s', '', 'a,b', 'q"q')::text;
SELECT (ROW(1, 'a'))::text;
