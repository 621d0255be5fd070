-- The top rows per outer row: LATERAL subqueries with ORDER BY and LIMIT/OFFSET correlated
-- by equality, as ORM relation loaders write them (Drizzle's json_agg over a limited
-- subquery nested in the LATERAL item), including `*` (no added columns show).
CREATE TABLE users (id int PRIMARY KEY, name text);
CREATE TABLE posts (id int PRIMARY KEY, author_id int, title text, likes int);
INSERT INTO users VALUES (1, 'ann'), (2, 'bob'), (3, 'cy');
INSERT INTO posts VALUES (1, 1, 'a1', 5), (2, 1, 'a2', 9), (3, 1, 'a3', 7), (4, 2, 'b1', 1), (5, 2, 'b2', 2);
SELECT u.name, p.title FROM users u CROSS JOIN LATERAL (SELECT title FROM posts WHERE posts.author_id = u.id ORDER BY likes DESC LIMIT 2) p ORDER BY 1, 2;
SELECT u.name, p.title FROM users u LEFT JOIN LATERAL (SELECT p.title FROM posts p WHERE p.author_id = u.id ORDER BY p.likes DESC, p.id LIMIT 1 OFFSET 1) p ON true ORDER BY 1;
SELECT * FROM users u CROSS JOIN LATERAL (SELECT * FROM posts p WHERE u.id = p.author_id ORDER BY p.id DESC LIMIT 1) x ORDER BY u.id;
SELECT u.id, x.n FROM users u CROSS JOIN LATERAL (SELECT p.likes * 2 AS n FROM posts p WHERE p.author_id = u.id AND p.likes > 1 ORDER BY 1 LIMIT 1) x ORDER BY 1;
SELECT u.id, d.data FROM users u LEFT JOIN LATERAL (SELECT coalesce(json_agg(json_build_array(p.id, p.title) ORDER BY p.likes DESC), '[]'::json) AS data FROM (SELECT * FROM posts p WHERE p.author_id = u.id ORDER BY p.likes DESC LIMIT 2) p) d ON true ORDER BY 1;
SELECT count(*) FROM users u, LATERAL (SELECT 1 FROM posts p WHERE p.author_id = u.id LIMIT 1) x;
SELECT u.id, x.title FROM users u CROSS JOIN LATERAL (SELECT title FROM posts p WHERE p.author_id = u.id ORDER BY likes LIMIT NULL OFFSET 1) x ORDER BY 1, 2;
SELECT u.id, x.likes FROM users u CROSS JOIN LATERAL (SELECT p.likes::text AS likes FROM posts p WHERE p.author_id = u.id ORDER BY likes LIMIT 1) x ORDER BY 1;
CREATE VIEW top_post AS SELECT u.id, x.title FROM users u CROSS JOIN LATERAL (SELECT p.title FROM posts p WHERE p.author_id = u.id AND (p.likes > 8 OR p.likes < 2) AND p.id > 0 ORDER BY p.likes LIMIT 1) x;
SELECT * FROM top_post ORDER BY 1;
SELECT u.id, x.* FROM users u CROSS JOIN LATERAL (SELECT p.title AS "user", p.likes FROM posts p WHERE p.author_id = u.id ORDER BY 2 DESC LIMIT 1) x ORDER BY 1;
