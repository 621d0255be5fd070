\set t random(0, 9999)
\set i random(1000, 1000000000)
\set a random(18, 77)
\set c random(0, 49)
INSERT INTO reg_ix VALUES (:t, :i, 'new runner', :a, 'city' || :c) ON CONFLICT DO NOTHING;
