"""SQLAlchemy 2 Core against Partita: reflection through the inspector (tables, columns,
primary key, indexes and an expression index, foreign keys), then insert and select with
reflected tables, and a unique expression index refusing a duplicate."""

import sys

import sqlalchemy as sa

host, port = sys.argv[1], sys.argv[2]
engine = sa.create_engine(f"postgresql+psycopg://partita@{host}:{port}/partita")

with engine.begin() as conn:
    conn.execute(sa.text("DROP TABLE IF EXISTS refunds"))
    conn.execute(sa.text("DROP TABLE IF EXISTS purchases"))
    conn.execute(sa.text(
        "CREATE TABLE purchases (card text, device int, item varchar(30) NOT NULL, "
        "price numeric(8,2) DEFAULT 0, PRIMARY KEY ((card), device))"))
    conn.execute(sa.text("CREATE INDEX purchases_by_item ON purchases (item) INCLUDE (price)"))
    conn.execute(sa.text("CREATE UNIQUE INDEX purchases_card_item ON purchases (card, item)"))
    conn.execute(sa.text(
        "CREATE TABLE refunds (id int PRIMARY KEY, card text, device int, "
        "FOREIGN KEY (card, device) REFERENCES purchases ON DELETE CASCADE)"))

# An expression index as SQLAlchemy writes it (case-insensitive items per card).
with engine.begin() as conn:
    table = sa.Table("purchases", sa.MetaData(), autoload_with=conn)
    sa.Index("purchases_item_lower", table.c.card, sa.func.lower(table.c.item),
             unique=True).create(conn)

inspector = sa.inspect(engine)
assert "purchases" in inspector.get_table_names(), inspector.get_table_names()
columns = {c["name"]: c for c in inspector.get_columns("purchases")}
assert list(columns) == ["card", "device", "item", "price"], list(columns)
assert isinstance(columns["device"]["type"], sa.Integer), columns["device"]
assert isinstance(columns["item"]["type"], sa.String) and columns["item"]["type"].length == 30
assert isinstance(columns["price"]["type"], sa.Numeric) and columns["price"]["type"].scale == 2
assert columns["item"]["nullable"] is False and columns["price"]["nullable"] is True
assert columns["price"]["default"] == "0", columns["price"]
pk = inspector.get_pk_constraint("purchases")
assert pk["constrained_columns"] == ["card", "device"], pk
indexes = {i["name"]: i for i in inspector.get_indexes("purchases")}
assert indexes["purchases_by_item"]["column_names"] == ["item"], indexes
assert indexes["purchases_by_item"]["unique"] is False
assert indexes["purchases_card_item"]["column_names"] == ["card", "item"]
assert indexes["purchases_card_item"]["unique"] is True
lower = indexes["purchases_item_lower"]
assert lower["column_names"] == ["card", None], lower
assert lower["expressions"] == ["card", "lower(item)"], lower
assert lower["unique"] is True
[fk] = inspector.get_foreign_keys("refunds")
assert fk["name"] == "refunds_card_device_fkey", fk
assert fk["constrained_columns"] == ["card", "device"], fk
assert fk["referred_table"] == "purchases" and fk["referred_columns"] == ["card", "device"], fk
assert fk["options"].get("ondelete") == "CASCADE", fk

metadata = sa.MetaData()
purchases = sa.Table("purchases", metadata, autoload_with=engine)
with engine.begin() as conn:
    conn.execute(purchases.insert(), [
        {"card": "c1", "device": d, "item": f"item {d}", "price": d * 1.5} for d in range(15, 100)
    ])
with engine.connect() as conn:
    rows = conn.execute(
        sa.select(purchases.c.device, purchases.c.price)
        .where(purchases.c.card == "c1", purchases.c.device >= 15, purchases.c.device < 18)
        .order_by(purchases.c.device)
    ).all()
assert [(r.device, float(r.price)) for r in rows] == [(15, 22.5), (16, 24.0), (17, 25.5)], rows
try:
    with engine.begin() as conn:
        conn.execute(purchases.insert(), [{"card": "c1", "device": 200, "item": "ITEM 15"}])
    raise AssertionError("a duplicate of lower(item) was taken")
except sa.exc.IntegrityError as e:
    assert e.orig.sqlstate == "23505" and "purchases_item_lower" in str(e.orig), e
refunds = sa.Table("refunds", metadata, autoload_with=engine)
with engine.begin() as conn:
    conn.execute(refunds.insert(), [{"id": 1, "card": "c1", "device": 15}])
try:
    with engine.begin() as conn:
        conn.execute(refunds.insert(), [{"id": 2, "card": "c1", "device": 7}])
    raise AssertionError("a refund of no purchase was accepted")
except sa.exc.IntegrityError as e:
    assert e.orig.sqlstate == "23503", e

# An Enum and an ARRAY column as SQLAlchemy declares them: create_all makes the type (after
# looking it up in pg_type), reflection reads the labels back from pg_enum.
from sqlalchemy.dialects import postgresql

tickets_metadata = sa.MetaData()
tickets = sa.Table(
    "tickets", tickets_metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("status", sa.Enum("open", "closed", name="ticket_status"), nullable=False),
    sa.Column("labels", postgresql.ARRAY(sa.Text)),
)
tickets_metadata.drop_all(engine)
tickets_metadata.create_all(engine)
with engine.begin() as conn:
    conn.execute(tickets.insert(), [
        {"id": 1, "status": "open", "labels": ["ui", "bug"]},
        {"id": 2, "status": "closed", "labels": []},
    ])
with engine.connect() as conn:
    found = conn.execute(
        sa.select(tickets.c.id, tickets.c.status, tickets.c.labels)
        .where(tickets.c.status == "open", tickets.c.labels.contains(["bug"]))
    ).all()
assert [tuple(r) for r in found] == [(1, "open", ["ui", "bug"])], found
enums = sa.inspect(engine).get_enums()
assert [(e["name"], e["labels"]) for e in enums] == [("ticket_status", ["open", "closed"])], enums
reflected = {c["name"]: c["type"] for c in sa.inspect(engine).get_columns("tickets")}
assert isinstance(reflected["status"], sa.Enum) and reflected["status"].enums == ["open", "closed"], reflected
assert isinstance(reflected["labels"], postgresql.ARRAY), reflected
tickets_metadata.drop_all(engine)
print("sqlalchemy ok")
