\set t random(0, 9999)
SELECT id, name, age FROM reg WHERE tenant = :t ORDER BY id;
