-- Seed 002: student-card purchases keyed by typed DeviceID, read by the device range [15, 100).
CREATE TABLE purchases (device_id int, seller_id int, card_id bigint, order_no bigint, amount numeric(10,2), at timestamp, PRIMARY KEY ((device_id), seller_id, card_id, order_no));
INSERT INTO purchases VALUES (54, 1, 1001, 1, 12.50, '2024-03-01 12:00:00'), (54, 1, 1002, 2, 3.25, '2024-03-01 12:05:00'), (167, 2, 1001, 3, 7.00, '2024-03-01 13:00:00'), (15, 3, 1003, 4, 1.10, '2024-03-02 08:00:00'), (99, 3, 1003, 5, 2.20, '2024-03-02 09:30:00'), (100, 4, 1004, 6, 9.99, '2024-03-02 10:00:00'), (-3, 4, 1004, 7, 0.01, '2024-03-02 10:00:00');
SELECT device_id, order_no, amount FROM purchases WHERE device_id >= 15 AND device_id < 100 ORDER BY device_id, order_no;
SELECT device_id FROM purchases ORDER BY device_id;
SELECT card_id, sum(amount) FROM purchases GROUP BY card_id ORDER BY card_id;
SELECT count(*) FROM purchases WHERE at >= '2024-03-02' AND at < '2024-03-03';
SELECT device_id, amount * 2 FROM purchases WHERE amount > 5 ORDER BY device_id;
SELECT max(at) FROM purchases;
UPDATE purchases SET amount = amount + 0.005 WHERE device_id = 54;
SELECT amount FROM purchases WHERE device_id = 54 ORDER BY order_no;
INSERT INTO purchases VALUES (54, 1, 1001, 1, 1, '2024-03-01');
INSERT INTO purchases VALUES (1, 1, 1, 1, 123456789012.00, '2024-03-01');
INSERT INTO purchases VALUES ('x', 1, 1, 1, 1, '2024-03-01');
