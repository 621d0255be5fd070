-- Everyday queries an application sends: quoted literals compared with booleans and bytea,
-- sums of integer columns inside expressions, GROUP BY a primary key, INSERT … SELECT of
-- fewer columns, quoted mixed-case tables with serial keys, and a few operators.
CREATE TABLE members (id int PRIMARY KEY, active bool, badge bytea, pts int, lvl smallint, ratio numeric(2,2));
INSERT INTO members VALUES (1, true, '\xdeadbeef', -2147483648, -32768, 0.5), (2, false, '\x01', 5, 3, -0.5), (3, NULL, NULL, NULL, NULL, NULL);
SELECT id FROM members WHERE active = 'true' ORDER BY id;
SELECT id FROM members WHERE active <> 'f' ORDER BY id;
SELECT id FROM members WHERE active IN ('t', 'no') ORDER BY id;
SELECT id FROM members WHERE active IS DISTINCT FROM 'yes' ORDER BY id;
SELECT id, active = 'on' FROM members ORDER BY id;
SELECT id FROM members WHERE active = 'maybe';
SELECT id FROM members WHERE badge = '\xdeadbeef';
SELECT id FROM members WHERE badge IN ('\x01', '\x02') ORDER BY id;
SELECT id FROM members WHERE badge = '\xzz';
SELECT -pts FROM members WHERE id = 1;
SELECT -lvl FROM members WHERE id = 1;
SELECT -pts, -lvl FROM members WHERE id = 2;
SELECT - interval '1 day', -interval '1 year 2 mons 3 days', -(interval '-2 hours');
SELECT interval '-1 day 2 hours', interval '1 day -2 hours', interval '-1 year 2 mons';
SELECT ceil(0.5), floor(-0.5), ceil(0.0000001), trunc(0.99);
SELECT id, ceil(ratio), floor(ratio) FROM members ORDER BY id;
SELECT to_hex(-1), to_hex(255);
SELECT id, to_hex(pts) FROM members ORDER BY id;
SELECT ' 2024-01-01'::date, '2024-01-01 '::date;
SELECT '2024-03-05 10:00:00+05'::timestamp, '2024-03-05 10:00:00Z'::timestamp;

CREATE TABLE scores (id int PRIMARY KEY, team text, pts int, big bigint, small smallint);
INSERT INTO scores VALUES (1, 'a', 5, 5, 5), (2, 'a', 3, 3, 3), (3, 'b', 4, 4, 4);
SELECT sum(pts) / 5, sum(big) / 5, sum(small) / 5, sum(pts) / count(*) FROM scores;
SELECT team FROM scores GROUP BY team HAVING sum(pts) >= 5 ORDER BY team;
SELECT sum(pts) * 2, sum(pts) + 1, sum(pts) % 5, sum(pts) = 12 FROM scores;
SELECT (SELECT sum(pts) FROM scores) + 1;
SELECT pts * 100 / sum(pts) OVER () FROM scores ORDER BY id;
SELECT coalesce(sum(pts), 0) + 1 FROM scores WHERE false;
SELECT team, sum(small), avg(pts) FROM scores GROUP BY team ORDER BY team;
SELECT sum(pts) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM scores ORDER BY id;

CREATE TABLE clubs (id int PRIMARY KEY, name text);
INSERT INTO clubs VALUES (1, 'one'), (2, 'two'), (3, 'three');
SELECT c.id, c.name, count(s.id) FROM clubs c LEFT JOIN scores s ON s.pts = c.id + 2 GROUP BY c.id ORDER BY c.id;
SELECT c.*, sum(s.pts) AS sum FROM clubs c LEFT JOIN scores s ON s.pts = c.id + 2 GROUP BY c.id ORDER BY c.id;
SELECT name FROM clubs GROUP BY id HAVING count(*) = 1 ORDER BY 1;
SELECT s.team FROM clubs c JOIN scores s ON s.pts = c.id + 2 GROUP BY c.id;
SELECT team, pts FROM scores GROUP BY team;

CREATE TABLE "Post" (id serial PRIMARY KEY, title text);
INSERT INTO "Post" (title) VALUES ('first'), ('second') RETURNING *;
SELECT column_default FROM information_schema.columns WHERE table_name = 'Post' AND column_name = 'id';
CREATE TABLE kv (k text PRIMARY KEY, v int, w int DEFAULT 7, z text);
INSERT INTO kv SELECT 'x', 1;
INSERT INTO kv SELECT k || 'y', v + 1, w FROM kv;
INSERT INTO kv SELECT 'q', 1, 2, 'z', 5;
SELECT * FROM kv ORDER BY k;
SELECT to_hex((-1)::bigint), to_hex(pts::bigint) FROM members WHERE id = 1;
SELECT s.*, c.name::text AS club FROM clubs c JOIN scores s ON s.pts = c.id + 2 ORDER BY s.id;
-- RETURNING of UPDATE … FROM and DELETE … USING with the FROM items' columns; upserts.
CREATE TABLE aa (id int primary key, name text, age int);
create table bb (id int primary key, aid int, v int);
insert into aa values (1, 'ann', 30), (2, 'bob', 40);
insert into bb values (10, 1, 0), (11, 2, 0), (12, 1, 5), (13, 3, 1);
update bb set v = v + aa.age from aa where aa.id = bb.aid returning bb.id, aa.name, bb.v;
update bb set v = 0 from aa where aa.id = bb.aid and aa.name = 'ann' returning *;
update bb set v = 1 from aa x where x.id = bb.aid and x.name = 'bob' returning bb.*, x.*;
update bb b set v = 2 from aa x where x.id = b.aid and x.name = 'zed' returning b.id, x.name;
update bb set v = 3 from (select id, upper(name) as up from aa) s where s.id = bb.aid returning bb.id, s.up;
delete from bb using aa where aa.id = bb.aid and aa.name = 'bob' returning bb.id, aa.name, aa.age * 2 as dbl;
delete from bb using aa where aa.id = bb.aid returning *;
create table ro (k text primary key, v int);
insert into ro values ('m', 0);
INSERT INTO ro VALUES ('zeta',1),('m',2),('alpha',3) ON CONFLICT (k) DO UPDATE SET v=EXCLUDED.v RETURNING k, v;
INSERT INTO ro VALUES ('a2',1),('zeta',5),('m',6),('b2',3) ON CONFLICT (k) DO UPDATE SET v=EXCLUDED.v + ro.v WHERE ro.v < 3 RETURNING k, v;
INSERT INTO ro VALUES ('new', 1) ON CONFLICT (k) DO UPDATE SET nosuch = 1;
INSERT INTO ro VALUES ('new', 1) ON CONFLICT (k) DO NOTHING RETURNING *;
SELECT * FROM bb ORDER BY id;
SELECT * FROM ro ORDER BY k;
