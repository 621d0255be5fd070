\set t random(0, 999)
\set i random(0, 99)
\set a random(18, 77)
\set c random(0, 49)
UPDATE reg_ix SET age = :a, city = 'city' || :c WHERE tenant = :t AND id = :i;
