-- Seed 004's movie rentals and seed 000's race registrations with the references a
-- PostgreSQL schema declares: what inserting, deleting and re-keying referenced rows does.
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, email text UNIQUE);
CREATE TABLE movies (id int, title text NOT NULL, year int, PRIMARY KEY ((id) HASH));
CREATE TABLE rentals (customer_id int REFERENCES customers ON DELETE CASCADE ON UPDATE CASCADE, rented_on date, movie_id bigint NOT NULL REFERENCES movies (id), fee numeric(5,2), PRIMARY KEY ((customer_id), rented_on, movie_id));
CREATE INDEX rentals_movie ON rentals (movie_id);
INSERT INTO customers VALUES (1, 'ann', 'ann@x'), (2, 'bob', 'bob@x'), (3, 'cy', NULL);
INSERT INTO movies VALUES (10, 'Jaws', 1975), (11, 'Alien', 1979), (12, 'Heat', 1995);
INSERT INTO rentals VALUES (1, '2024-01-02', 10, 3.5), (1, '2024-01-03', 11, 3.5), (2, '2024-01-02', 10, 2), (3, '2024-02-01', 12, 4);
INSERT INTO rentals VALUES (4, '2024-01-02', 10, 1);
INSERT INTO rentals VALUES (1, '2024-03-01', 99, 1);
INSERT INTO rentals VALUES (NULL, '2024-03-01', 10, 1);
UPDATE rentals SET movie_id = 98 WHERE customer_id = 2;
UPDATE rentals SET movie_id = 12 WHERE customer_id = 2 RETURNING customer_id, movie_id;
DELETE FROM movies WHERE id = 10;
DELETE FROM movies WHERE id = 11 RETURNING title;
DELETE FROM rentals WHERE movie_id = 11;
DELETE FROM movies WHERE id = 11 RETURNING title;
UPDATE movies SET title = 'Heat (1995)' WHERE id = 12;
UPDATE movies SET id = 13 WHERE id = 12;
DELETE FROM customers WHERE id = 1;
SELECT customer_id, rented_on, movie_id FROM rentals ORDER BY customer_id, rented_on;
UPDATE customers SET id = 20 WHERE id = 2;
SELECT customer_id, movie_id FROM rentals ORDER BY customer_id;
INSERT INTO customers VALUES (1, 'ann again', NULL) ON CONFLICT (id) DO NOTHING;
INSERT INTO rentals VALUES (1, '2024-04-01', 10, 3) ON CONFLICT DO NOTHING;
INSERT INTO rentals VALUES (1, '2024-04-01', 12, 3) ON CONFLICT (customer_id, rented_on, movie_id) DO UPDATE SET movie_id = 77;
-- One statement may write a row and the row it references, in either order.
CREATE TABLE staff (id int PRIMARY KEY, manager int REFERENCES staff ON DELETE SET NULL, name text);
INSERT INTO staff VALUES (2, 1, 'vp'), (1, NULL, 'ceo'), (3, 2, 'dev'), (4, 2, 'ops');
INSERT INTO staff VALUES (5, 6, 'orphan');
DELETE FROM staff WHERE id = 2;
SELECT id, manager, name FROM staff ORDER BY id;
DELETE FROM staff;
-- Race registrations under a composite key referenced in another column order.
CREATE TABLE races (event text, distance text, starts date, PRIMARY KEY ((event), distance));
CREATE TABLE registrations (distance text, event text, bib int, name text, PRIMARY KEY ((event, distance), bib), FOREIGN KEY (event, distance) REFERENCES races (event, distance) ON DELETE RESTRICT);
INSERT INTO races VALUES ('2011 New York City Marathon', 'Full', '2011-11-06'), ('2011 New York City Marathon', 'Half', '2011-11-06');
INSERT INTO registrations VALUES ('Full', '2011 New York City Marathon', 1234, 'Ann'), ('Half', '2011 New York City Marathon', 7, 'Bob');
INSERT INTO registrations VALUES ('10K', '2011 New York City Marathon', 8, 'Cy');
DELETE FROM races WHERE distance = 'Half';
BEGIN;
DELETE FROM registrations WHERE bib = 7;
DELETE FROM races WHERE distance = 'Half';
COMMIT;
SELECT event, distance FROM races ORDER BY distance;
-- Definitions PostgreSQL refuses.
CREATE TABLE bad1 (x int REFERENCES nope);
CREATE TABLE bad2 (x int REFERENCES customers (name));
CREATE TABLE bad3 (x text REFERENCES customers);
CREATE TABLE bad4 (x int, y int, FOREIGN KEY (x, y) REFERENCES customers (id));
CREATE TABLE bad5 (x int REFERENCES customers (nope));
CREATE TABLE bad6 (x int, FOREIGN KEY (nope) REFERENCES customers);
CREATE TABLE bad7 (x text REFERENCES customers (email) MATCH PARTIAL);
-- Constraints added and dropped later, the tables on either side dropped or emptied.
CREATE TABLE reviews (movie_id int, stars int, by_email text);
INSERT INTO reviews VALUES (13, 5, 'bob@x'), (10, 2, 'nobody@x');
ALTER TABLE reviews ADD CONSTRAINT reviews_movie FOREIGN KEY (movie_id) REFERENCES movies;
DELETE FROM reviews WHERE movie_id = 10;
ALTER TABLE reviews ADD CONSTRAINT reviews_movie FOREIGN KEY (movie_id) REFERENCES movies;
ALTER TABLE reviews ADD FOREIGN KEY (by_email) REFERENCES customers (email);
SELECT conname, contype, confupdtype, confdeltype, pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'f' ORDER BY conname;
SELECT constraint_name, unique_constraint_name, update_rule, delete_rule FROM information_schema.referential_constraints ORDER BY 1;
ALTER TABLE customers DROP CONSTRAINT customers_email_key;
TRUNCATE movies;
TRUNCATE movies, rentals, reviews;
DROP TABLE movies;
ALTER TABLE reviews DROP CONSTRAINT reviews_movie;
ALTER TABLE rentals DROP CONSTRAINT rentals_movie_id_fkey;
DROP TABLE movies;
DROP TABLE customers CASCADE;
INSERT INTO rentals VALUES (42, '2024-05-01', 1, 1);
INSERT INTO reviews VALUES (1, 1, 'who@x');
SELECT count(*) FROM pg_constraint WHERE contype = 'f';
-- DEFERRABLE constraints: INITIALLY DEFERRED checks at COMMIT (a failure rolls it back),
-- SET CONSTRAINTS ALL | name DEFERRED | IMMEDIATE (checking what was put off), as Django sends.
CREATE TABLE authors (id int PRIMARY KEY, name text);
CREATE TABLE books (id int PRIMARY KEY, author_id int REFERENCES authors (id) DEFERRABLE INITIALLY DEFERRED, title text);
CREATE TABLE notes (id int PRIMARY KEY, book_id int);
ALTER TABLE notes ADD CONSTRAINT notes_book_id_fk FOREIGN KEY (book_id) REFERENCES books (id) DEFERRABLE INITIALLY DEFERRED;
CREATE TABLE tags (id int PRIMARY KEY, book_id int REFERENCES books (id) DEFERRABLE, tag text);
SELECT conname, condeferrable, condeferred, pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'f' ORDER BY conname;
-- a child before its parent, in one transaction
BEGIN;
INSERT INTO books VALUES (1, 10, 'first');
INSERT INTO authors VALUES (10, 'ann');
COMMIT;
SELECT * FROM books;
-- a missing parent fails at COMMIT, which rolls back
BEGIN;
INSERT INTO books VALUES (2, 20, 'orphan');
SELECT count(*) FROM books;
COMMIT;
SELECT count(*) FROM books;
-- autocommit: checked when the statement commits
INSERT INTO books VALUES (3, 30, 'orphan');
-- SET CONSTRAINTS IMMEDIATE checks what was put off
BEGIN;
INSERT INTO books VALUES (4, 40, 'orphan');
SET CONSTRAINTS ALL IMMEDIATE;
ROLLBACK;
BEGIN;
SET CONSTRAINTS books_author_id_fkey IMMEDIATE;
INSERT INTO books VALUES (5, 50, 'orphan');
ROLLBACK;
-- DEFERRABLE INITIALLY IMMEDIATE, deferred by SET CONSTRAINTS
BEGIN;
INSERT INTO tags VALUES (1, 7, 'x');
ROLLBACK;
BEGIN;
SET CONSTRAINTS ALL DEFERRED;
INSERT INTO tags VALUES (1, 7, 'x');
INSERT INTO books VALUES (7, 10, 'seventh');
COMMIT;
SELECT * FROM tags;
-- deleting a parent and putting it back before commit
BEGIN;
DELETE FROM authors WHERE id = 10;
INSERT INTO authors VALUES (10, 'ann again');
COMMIT;
BEGIN;
DELETE FROM authors WHERE id = 10;
COMMIT;
SELECT count(*) FROM authors;
-- a swap of keys (Django's test teardown checks)
BEGIN;
SET CONSTRAINTS ALL IMMEDIATE;
SET CONSTRAINTS ALL DEFERRED;
UPDATE books SET author_id = 99 WHERE id = 1;
UPDATE books SET author_id = 10 WHERE id = 1;
COMMIT;
SET CONSTRAINTS ALL IMMEDIATE;
BEGIN;
SET CONSTRAINTS nosuch IMMEDIATE;
ROLLBACK;
BEGIN;
CREATE TABLE plain (id int PRIMARY KEY, a int REFERENCES authors (id));
SET CONSTRAINTS plain_a_fkey DEFERRED;
ROLLBACK;
CREATE TABLE bad (id int PRIMARY KEY, a int REFERENCES authors (id) NOT DEFERRABLE INITIALLY DEFERRED);
-- ALTER TABLE … VALIDATE CONSTRAINT checks the rows a NOT VALID foreign key or CHECK passed over.
CREATE TABLE parents (id int PRIMARY KEY);
CREATE TABLE kids (id int PRIMARY KEY, parent int, age int);
INSERT INTO parents VALUES (1);
INSERT INTO kids VALUES (1, 1, 5), (2, 9, -1);
ALTER TABLE kids ADD CONSTRAINT kids_parent_fk FOREIGN KEY (parent) REFERENCES parents (id) NOT VALID;
ALTER TABLE kids ADD CONSTRAINT kids_age_check CHECK (age >= 0) NOT VALID;
SELECT conname, convalidated FROM pg_constraint WHERE conrelid = 'kids'::regclass ORDER BY conname;
ALTER TABLE kids VALIDATE CONSTRAINT kids_parent_fk;
ALTER TABLE kids VALIDATE CONSTRAINT kids_age_check;
UPDATE kids SET parent = 1, age = 0 WHERE id = 2;
ALTER TABLE kids VALIDATE CONSTRAINT kids_parent_fk;
ALTER TABLE kids VALIDATE CONSTRAINT kids_age_check;
ALTER TABLE kids VALIDATE CONSTRAINT kids_pkey;
ALTER TABLE kids VALIDATE CONSTRAINT nosuch;
SELECT conname, convalidated FROM pg_constraint WHERE conrelid = 'kids'::regclass ORDER BY conname;
