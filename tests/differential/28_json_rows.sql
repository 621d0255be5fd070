-- Movie rentals served as JSON, the way API handlers write it: whole rows (t, t.*) in
-- row_to_json, json_build_object and the aggregates, row constructors, array_to_json of
-- collected rows, pretty row_to_json; what does not take a row is refused as in PostgreSQL.
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
DROP TABLE movies, rentals;
