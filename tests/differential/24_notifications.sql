-- LISTEN, NOTIFY and pg_notify as job queues and cache invalidation use them, on the foot-race
-- registrations: a registration is written and announced in one transaction. What listeners
-- receive is checked by the wire and driver tests; here, what SQL shows: the channels a session
-- listens to (which change at commit), the statements' tags and rows, and the refusals.
CREATE TABLE registrations (race text, bib int, runner text NOT NULL, PRIMARY KEY ((race), bib));
LISTEN registrations;
LISTEN "Results";
SELECT * FROM pg_listening_channels() ORDER BY 1;
BEGIN;
INSERT INTO registrations VALUES ('nyc', 1, 'Ann');
NOTIFY registrations, 'nyc/1';
SELECT pg_notify('registrations', race || '/' || bib) FROM registrations WHERE race = 'nyc';
COMMIT;
BEGIN;
LISTEN refunds;
SELECT count(*) FROM pg_listening_channels();
SAVEPOINT before_results;
UNLISTEN registrations;
NOTIFY registrations, 'undone';
ROLLBACK TO SAVEPOINT before_results;
COMMIT;
SELECT * FROM pg_listening_channels() ORDER BY 1;
BEGIN;
UNLISTEN refunds;
ROLLBACK;
SELECT c FROM pg_listening_channels() c ORDER BY 1;
INSERT INTO registrations VALUES ('nyc', 2, 'Bob') RETURNING pg_notify('registrations', runner), bib;
WITH added AS (INSERT INTO registrations VALUES ('bos', 1, 'Cy') RETURNING race, bib) SELECT pg_notify('registrations', race || '/' || bib) FROM added;
SELECT pg_notify('registrations', NULL);
SELECT pg_notify('', 'x');
SELECT pg_notify(NULL, 'x');
SELECT pg_notify(repeat('c', 64), 'x');
SELECT pg_notify(repeat('c', 63), repeat('p', 7999));
SELECT pg_notify('registrations', repeat('p', 8000));
BEGIN;
NOTIFY registrations, 'in a failed transaction';
SELECT 1 / 0;
NOTIFY registrations;
ROLLBACK;
UNLISTEN "Results";
SELECT * FROM pg_listening_channels() ORDER BY 1;
DISCARD ALL;
SELECT count(*) FROM pg_listening_channels();
LISTEN a;
LISTEN b;
UNLISTEN *;
SELECT count(*) FROM pg_listening_channels();
SELECT pg_notification_queue_usage();
SELECT race, bib, runner FROM registrations ORDER BY race, bib;
