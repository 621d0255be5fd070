\set t random(10000, 1000000000)
BEGIN;
INSERT INTO batch SELECT :t, g, 'runner', 20 + g % 50, 'city' || (g % 50) FROM generate_series(1, 100) g ON CONFLICT DO NOTHING;
COMMIT;
