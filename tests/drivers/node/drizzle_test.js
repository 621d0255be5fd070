// postgres.js (porsager/postgres) and Drizzle against Partita: postgres.js's types, cursors,
// errors, LISTEN/NOTIFY and transactions; drizzle-kit's push, which reads the schema back
// from pg_catalog and information_schema and must then find nothing to change; and
// drizzle-orm's queries. Run by tests/tests/e2e/drivers.rs with the server's address.
const assert = require('assert');
const path = require('path');
const { spawnSync } = require('child_process');
const postgres = require('postgres');
const { drizzle } = require('drizzle-orm/postgres-js');
const { eq, and, gt, sql: dsql, count } = require('drizzle-orm');
const { races, entrants, splits } = require('./drizzle_schema');

async function driver(sql) {
  // Integer results are numbers, bigint and numeric are strings, as postgres.js reads them.
  const [types] = await sql`select 1 as one, count(*) as n, 2.50::numeric(5,2) as fee, sum(case when true then 1 else 0 end) as s from generate_series(1, 3)`;
  assert.deepStrictEqual(types, { one: 1, n: '3', fee: '2.50', s: '3' });
  const series = [];
  await sql`select g from generate_series(1, 5) g`.cursor(2, (rows) => { series.push(rows.map((r) => r.g)); });
  assert.deepStrictEqual(series, [[1, 2], [3, 4], [5]]);
  await sql`create table notes (id serial primary key, body text not null, tags text[], meta jsonb)`;
  const inserted = await sql`insert into notes ${sql([{ body: 'a', tags: ['x', 'y'], meta: { k: 1 } }, { body: 'b', tags: [], meta: null }])} returning *`;
  assert.deepStrictEqual(inserted.map((r) => [r.id, r.body, r.tags, r.meta]), [[1, 'a', ['x', 'y'], { k: 1 }], [2, 'b', [], null]]);
  const picked = await sql`select body from notes where id = any(${[2]}::int[])`;
  assert.deepStrictEqual(picked.map((r) => r.body), ['b']);
  const [named] = await sql`select ${sql('body')} from ${sql('notes')} where ${sql('id')} = ${1}`;
  assert.strictEqual(named.body, 'a');
  await assert.rejects(sql`select * from nowhere`, (e) => e.code === '42P01');
  await assert.rejects(sql.begin(async (tx) => {
    await tx`insert into notes (body) values ('rolled back')`;
    await tx`insert into notes (id, body) values (1, 'duplicate')`;
  }), (e) => e.code === '23505');
  const [{ n }] = await sql`select count(*)::int as n from notes`;
  assert.strictEqual(n, 2);
  const [ns] = await sql`select ${'public'}::regnamespace = 2200 as public`;
  assert.strictEqual(ns.public, true);
  const heard = new Promise((resolve) => sql.listen('runners', resolve));
  await new Promise((r) => setTimeout(r, 100));
  await sql.notify('runners', 'started');
  assert.strictEqual(await heard, 'started');
  // drizzle-kit would ask what became of a table its schema lacks.
  await sql`drop table notes`;
}

function push(url) {
  const bin = path.join(__dirname, 'node_modules', '.bin', 'drizzle-kit');
  const out = spawnSync(bin, ['push', '--force', '--dialect=postgresql', '--schema=./drizzle_schema.js', `--url=${url}`], { cwd: __dirname, encoding: 'utf8', timeout: 120000 });
  const text = `${out.stdout}\n${out.stderr}`;
  assert.strictEqual(out.status, 0, `drizzle-kit push failed:\n${text}`);
  return text;
}

async function orm(sql) {
  const db = drizzle(sql);
  const [nyc] = await db.insert(races).values({ name: 'NYC', fee: '295.00', details: { km: 42.195 } }).returning();
  assert.strictEqual(nyc.kind, 'road');
  assert.strictEqual(nyc.fee, '295.00');
  assert.strictEqual(nyc.open, true);
  assert.ok(nyc.starts instanceof Date);
  const [trail] = await db.insert(races).values({ name: 'Western States', kind: 'trail' }).returning({ id: races.id });
  const people = await db.insert(entrants).values([{ raceId: nyc.id, runner: 'Ann' }, { raceId: nyc.id, runner: 'Bo' }, { raceId: trail.id, runner: 'Cy' }]).returning();
  assert.strictEqual(people.length, 3);
  await db.insert(splits).values([{ entrantId: people[0].id, km: 5, seconds: 1500 }, { entrantId: people[0].id, km: 10, seconds: 3050 }]);
  const perRace = await db.select({ name: races.name, runners: count(entrants.id) }).from(races).leftJoin(entrants, eq(entrants.raceId, races.id)).groupBy(races.name).orderBy(races.name);
  assert.deepStrictEqual(perRace, [{ name: 'NYC', runners: 2 }, { name: 'Western States', runners: 1 }]);
  const slow = await db.select().from(splits).where(and(eq(splits.entrantId, people[0].id), gt(splits.km, 5)));
  assert.deepStrictEqual(slow.map((s) => s.seconds), [3050]);
  await db.update(races).set({ fee: dsql`${races.fee} + 10` }).where(eq(races.id, nyc.id));
  const [after] = await db.select({ fee: races.fee }).from(races).where(eq(races.id, nyc.id));
  assert.strictEqual(after.fee, '305.00');
  await db.transaction(async (tx) => {
    await tx.delete(races).where(eq(races.id, trail.id));
  });
  const left = await db.select({ runner: entrants.runner }).from(entrants).orderBy(entrants.runner);
  assert.deepStrictEqual(left.map((e) => e.runner), ['Ann', 'Bo']);
  await assert.rejects(db.insert(races).values({ name: 'NYC' }), (e) => (e.cause ?? e).code === '23505');
}

async function main() {
  const [host, port] = process.argv.slice(2);
  const url = `postgres://partita@${host}:${port}/partita`;
  const sql = postgres(url, { onnotice: () => {}, max: 2 });
  try {
    await driver(sql);
    push(url);
    // Read back, Partita's catalog must describe exactly what was pushed.
    const second = push(url);
    assert.match(second, /No changes detected/, `drizzle-kit wanted changes:\n${second}`);
    await orm(sql);
  } finally {
    await sql.end();
  }
  console.log('drizzle ok');
}

main().catch((e) => { console.error(e); process.exit(1); });
