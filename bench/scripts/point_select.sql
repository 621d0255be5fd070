\set t random(0, 9999)
\set i random(0, 99)
SELECT name, age FROM reg WHERE tenant = :t AND id = :i;
