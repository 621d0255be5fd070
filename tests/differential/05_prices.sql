-- Numeric arithmetic as PostgreSQL shows it: fixed-scale prices, unconstrained numerics,
-- quotients and averages with at least 16 significant digits.
CREATE TABLE prices (sku text PRIMARY KEY, price numeric(10,2) NOT NULL, weight numeric);
INSERT INTO prices VALUES ('a', 9.99, 1.5), ('b', 100, 0.000123456789012), ('c', 5.25, 100);
SELECT sku, price, weight FROM prices ORDER BY sku;
SELECT sku, price / 3, price * 2, price + 1, round(price, 1), price % 2 FROM prices ORDER BY sku;
SELECT avg(price), sum(price) FROM prices;
SELECT 1.0 / 3, 10.0 / 4, 100000.0 / 3, 2::numeric / 3, 1 / 3::numeric, -2.0 / 3;
SELECT '1.50'::numeric, 3::numeric, 1.5::numeric * 2, 7.0 % 3;
SELECT avg(x), avg(x::numeric) FROM (VALUES (1), (2), (2)) t(x);
SELECT avg(x), sum(x) FROM (VALUES (1::int), (2::int), (106::int)) t(x);
SELECT avg(x) FROM (VALUES (1::int), (2::int)) t(x);
SELECT 9.99::int, (-2.5)::int, 2.5::int, 2.7::float8::int, (-9.7)::float8::bigint, 7.49::smallint;
SELECT 2.5::float8::int, 3.5::float8::int, (-2.5)::float8::int, 0.5::float4::smallint, 1.5::real::bigint, (-0.5)::float8::int;
SELECT avg(x::bigint), sum(x::bigint) FROM (VALUES (1), (2), (2)) t(x);
SELECT sum(x) FROM (VALUES (9000000000000000000::bigint), (9000000000000000001::bigint), (9223372036854775807::bigint)) t(x);
SELECT avg(x), sum(x) FROM (VALUES (1000::bigint), (2000::bigint), (4000::bigint)) t(x);
SELECT avg(x::smallint) FROM (VALUES (7), (8)) t(x);
SELECT avg(price::int) FROM prices;
SELECT 1e5, 1.5e-3, -2.5E2, 1.50e0, 2e-20, 12.5e+1;
SELECT '\x00ff'::bytea, length('\x00ff'::bytea), octet_length(CAST('\x41' AS bytea));
SELECT 'a\000b'::bytea, length('a\000b'::bytea), octet_length('é'), length('é');
SELECT '\xzz'::bytea;
SELECT nope FROM prices;
SELECT sku FROM prices WHERE weight > 1.4 ORDER BY sku;
SELECT 1 / 0.0;
SELECT 'abc'::numeric;
SELECT to_number('12,454.8-', '99G999D9S'), to_number('$1,234.56', 'L9,999.99'), to_number('1,234', '9999'), to_number('  -7', '999'), to_number('12.3456', '99.99');
SELECT to_number('abc', '999');
-- Unconstrained numerics computed from values of their own scale show those digits.
SELECT sku, weight + 1, weight - price, weight * 3, -weight, abs(weight), weight::text, (weight + price)::text FROM prices ORDER BY sku;
SELECT sum(weight), min(weight), max(weight), sum(weight) - 1.25 FROM prices;
SELECT sku, greatest(weight, 1), coalesce(weight, 0), CASE WHEN sku = 'a' THEN weight ELSE weight + 1 END FROM prices ORDER BY sku;
SELECT x, x * 2.5 FROM (VALUES (1.5), (2.25), (3)) v(x) ORDER BY x;
SELECT sku, weight FROM prices UNION ALL SELECT 'z', 7 ORDER BY 1;
-- Numeric input: blanks, signs, exponents, rounding to the declared scale.
INSERT INTO prices VALUES ('d', '1.5e1', ' 2e-3 '), ('e', '-.5', '7.');
SELECT sku, price, weight, weight + 1000 FROM prices WHERE sku >= 'd' ORDER BY sku;
SELECT '1e2'::numeric, ' 1.5e-3 '::numeric, '-.5'::numeric(3,2), '2.555'::numeric(4,2), '-2.5'::numeric(3,0);
SELECT 'x1'::numeric;
SELECT '1e'::numeric;
SELECT '123.456'::numeric(4,2);
INSERT INTO prices VALUES ('f', 123456789, 1);
