\set t random(0, 9999)
\set i random(0, 99)
UPDATE reg SET age = 41 WHERE tenant = :t AND id = :i;
