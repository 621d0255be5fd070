-- Student-card purchases with a jsonb document per purchase (what was bought, with which
-- device): the documents are read with ->, ->>, @> and ?, rebuilt with jsonb_set and ||,
-- aggregated with jsonb_agg and jsonb_object_agg, and taken apart with jsonb_each.
CREATE TABLE card_purchases (card int, seq int, detail jsonb, receipt json, PRIMARY KEY ((card), seq));
INSERT INTO card_purchases VALUES (15, 1, '{"item": "coffee", "price": 2.50, "device": {"id": 15, "kind": "till"}}', '{"lines": [1,  2]}'), (15, 2, '{"item": "bagel", "price": 3, "tags": ["food", "hot"]}', '[]'), (42, 1, '{"item": "book", "price": 12.00, "device": {"id": 99, "kind": "kiosk"}}', NULL), (100, 1, '{"price": 1e1, "item": "ticket"}', '{"a": 1, "a": 2}');
SELECT card, seq, detail, receipt FROM card_purchases ORDER BY card, seq;
SELECT card, seq, detail->>'item', (detail->>'price')::numeric(10,2), detail->'device'->>'kind', detail#>>'{device,id}' FROM card_purchases ORDER BY card, seq;
SELECT card, seq FROM card_purchases WHERE detail @> '{"device": {"kind": "till"}}' ORDER BY card, seq;
SELECT card, seq FROM card_purchases WHERE detail ? 'tags' OR detail->'device'->>'id' = '99' ORDER BY card, seq;
SELECT card, sum((detail->>'price')::numeric(10,2)) AS spent, jsonb_agg(detail->'item' ORDER BY seq) AS items FROM card_purchases GROUP BY card ORDER BY card;
SELECT jsonb_object_agg(detail->>'item', detail->'price' ORDER BY card, seq) FROM card_purchases;
UPDATE card_purchases SET detail = jsonb_set(detail, '{price}', '2.75') WHERE card = 15 AND seq = 1;
UPDATE card_purchases SET detail = (detail || '{"refunded": true}') - 'tags' WHERE card = 15 AND seq = 2;
SELECT seq, detail FROM card_purchases WHERE card = 15 ORDER BY seq;
SELECT key, value FROM jsonb_each((SELECT detail FROM card_purchases WHERE card = 42)) ORDER BY key;
SELECT receipt->'lines', receipt->>'a', json_typeof(receipt) FROM card_purchases WHERE card IN (15, 100) ORDER BY card, seq;
SELECT '{"item": "coffee"'::jsonb;
INSERT INTO card_purchases VALUES (7, 1, '{"item": }', NULL);
SELECT jsonb_array_length(detail) FROM card_purchases WHERE card = 42;
SELECT count(*) FROM card_purchases;
-- jsonb equality compares values: key order, spacing and a number's trailing zeros do not count.
SELECT card, seq FROM card_purchases WHERE detail->'device' = '{"kind": "kiosk", "id": 99}' ORDER BY card, seq;
SELECT card, seq FROM card_purchases WHERE detail->'price' = '12' OR detail->'price' = '1e1' ORDER BY card, seq;
SELECT card, seq, detail->'item' IN ('"book"', '"ticket"'), detail->'price' <> '2.750' FROM card_purchases ORDER BY card, seq;
SELECT '{"a": 1.0, "b": [1, 2]}'::jsonb = '{"b":[1,2],"a":1}'::jsonb, '[1, 2]'::jsonb = '[2, 1]'::jsonb;
SELECT card FROM card_purchases WHERE detail = 'not json';
-- Whole rows as JSON objects: row_to_json, to_jsonb, json_agg and jsonb_agg of a FROM item.
SELECT row_to_json(p) FROM card_purchases p WHERE card = 42;
SELECT to_jsonb(card_purchases) FROM card_purchases WHERE card = 42;
SELECT card, json_agg(t ORDER BY t.seq) FROM (SELECT card, seq, detail->>'item' AS item FROM card_purchases) t GROUP BY card ORDER BY card;
SELECT jsonb_agg(x) FROM (SELECT seq, detail->'price' AS price FROM card_purchases WHERE card = 15 ORDER BY seq) x;
SELECT row_to_json(r) FROM (VALUES (1, 'one', NULL::text)) AS r(n, word, nothing);
SELECT c.card, row_to_json(d), to_jsonb(d) FROM card_purchases c LEFT JOIN (SELECT 42 AS card, 'gift' AS note) d ON d.card = c.card ORDER BY c.card, c.seq;
SELECT json_agg(d ORDER BY c.seq) FROM card_purchases c LEFT JOIN (SELECT 1 AS seq, 'first' AS note) d ON d.seq = c.seq WHERE c.card = 15;
-- jsonb ordering: null < strings < numbers < booleans < arrays < objects, containers by size first.
CREATE TABLE doc_order (id int PRIMARY KEY, doc jsonb);
INSERT INTO doc_order VALUES (1, '{"a":2}'), (2, '[1]'), (3, '1'), (4, '"s"'), (5, 'null'), (6, 'true'), (7, '[]'), (8, '{"a":1,"b":2}'), (9, '{"b":1}'), (10, '10'), (11, '-2.5'), (12, '1.0'), (13, '[1,2]'), (14, '[0,9]'), (15, '"abc"'), (16, 'false'), (17, '{"a":[1]}'), (18, '0.001'), (19, '-100'), (20, '[[1]]'), (21, '["a"]'), (22, '{}'), (23, '{"aa":1}'), (24, NULL);
SELECT id, doc FROM doc_order ORDER BY doc, id;
SELECT id FROM doc_order ORDER BY doc DESC NULLS LAST, id;
SELECT id FROM doc_order WHERE doc > '1' ORDER BY id;
SELECT id FROM doc_order WHERE doc <= '[1]' ORDER BY id;
SELECT detail->'price' FROM card_purchases ORDER BY detail->'price', card;
-- Set-returning functions over an earlier item's columns (implicit LATERAL).
SELECT p.card, p.seq, t.value FROM card_purchases p, jsonb_array_elements_text(p.detail->'tags') t ORDER BY 1, 2, 3;
SELECT p.card, k.key FROM card_purchases p CROSS JOIN LATERAL jsonb_object_keys(p.detail) k ORDER BY 1, 2, 3;
SELECT p.card, kv.key, kv.value FROM card_purchases p, jsonb_each(p.detail->'device') kv WHERE kv.key = 'kind' ORDER BY 1;
SELECT p.card, p.seq, t FROM card_purchases p LEFT JOIN LATERAL jsonb_array_elements(p.detail->'tags') t ON true ORDER BY 1, 2, 3;
SELECT t.value, count(*) FROM card_purchases p, jsonb_array_elements_text(p.detail->'tags') t GROUP BY t.value ORDER BY 1;
SELECT card, tag FROM card_purchases, jsonb_array_elements_text(detail->'tags') tag WHERE card = 15;
SELECT p.card, g FROM card_purchases p, generate_series(1, p.seq + 1) g ORDER BY 1, 2;
SELECT p.card, x FROM card_purchases p, unnest(ARRAY[p.card, p.seq]) AS x ORDER BY 1, 2;
SELECT p.card, i.key, j.value FROM card_purchases p, jsonb_each(p.detail) i, jsonb_array_elements_text(p.detail->'tags') j ORDER BY 1, 2, 3;
SELECT p.card, i.key, j.key, j.value FROM card_purchases p, jsonb_each(p.detail) i, jsonb_each(p.detail->'device') j WHERE i.key = 'price' ORDER BY 1, 3;
SELECT p.card, t.value FROM card_purchases p, jsonb_array_elements_text(p.detail->'tags') t WHERE NOT EXISTS (SELECT 1 FROM doc_order t WHERE t.id = 99) UNION ALL SELECT c.card, d.key FROM card_purchases c, jsonb_object_keys(c.detail) d(key) WHERE c.card = 42 ORDER BY 1, 2;
SELECT * FROM card_purchases P, jsonb_array_elements_text(p.detail->'tags') T ORDER BY 1, 2, 5;
SELECT p.seq, t.* FROM card_purchases p, jsonb_each_text(p.detail->'device') t ORDER BY 1, 2, 3;
