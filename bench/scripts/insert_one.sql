\set t random(0, 9999)
\set i random(1000, 1000000000)
INSERT INTO reg VALUES (:t, :i, 'new runner', 30, 'city1') ON CONFLICT DO NOTHING;
