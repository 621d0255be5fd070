\set t random(0, 9899)
SELECT count(*), sum(age) FROM reg WHERE tenant >= :t AND tenant < :t + 100;
