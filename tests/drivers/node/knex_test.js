// Knex against Partita: the schema builder (create, alter with rename and type change, native
// enums, foreign keys, unique pairs), inserts with RETURNING, joins with counts, upserts
// (merge and ignore), a transaction with FOR UPDATE, JSON and ILIKE conditions, paging, and
// knex's own migrations with their lock table. Run by tests/tests/e2e/drivers.rs with the
// server's address.
const assert = require('assert');
async function main() {
  const [host, port] = process.argv.slice(2);
  const knex = require('knex')({ client: 'pg', connection: { host, port: Number(port), user: 'partita', database: 'partita' } });
  await knex.schema.dropTableIfExists('registrations');
  await knex.schema.dropTableIfExists('races');
  await knex.schema.createTable('races', t => {
    t.increments('id'); t.string('name', 100).notNullable().unique(); t.string('city').index();
    t.decimal('fee', 6, 2); t.timestamps(true, true); t.jsonb('details'); t.specificType('tags', 'text[]');
    t.enu('kind', ['road', 'trail'], { useNative: true, enumName: 'race_kind' }).defaultTo('road');
    t.uuid('ref').defaultTo(knex.raw('gen_random_uuid()'));
  });
  await knex.schema.createTable('registrations', t => {
    t.bigIncrements('id'); t.integer('race_id').unsigned().references('races.id').onDelete('CASCADE');
    t.integer('bib').notNullable(); t.boolean('paid').defaultTo(false); t.unique(['race_id', 'bib']);
  });
  await knex.schema.alterTable('races', t => { t.string('country', 2).defaultTo('US'); t.renameColumn('city', 'town'); });
  await knex.schema.alterTable('races', t => { t.text('town').alter(); t.dropColumn('country'); });
  assert(await knex.schema.hasColumn('races', 'town'));
  assert(await knex.schema.hasTable('registrations'));
  const [nyc] = await knex('races').insert({ name: 'NYC', town: 'New York', fee: '295.50', details: { km: 42.195 }, tags: ['major'] }).returning('*');
  assert.strictEqual(nyc.kind, 'road');
  const ids = await knex('races').insert([{ name: 'Boston', town: 'Boston' }, { name: 'Chicago', town: 'Chicago' }]).returning('id');
  assert.strictEqual(ids.length, 2);
  await knex('registrations').insert([1, 2, 3].map(b => ({ race_id: nyc.id, bib: b, paid: b % 2 === 1 })));
  const rows = await knex('races as r').leftJoin('registrations as g', 'g.race_id', 'r.id').groupBy('r.id').select('r.name').count('g.id as n').orderBy('r.name');
  assert.deepStrictEqual(rows.map(r => [r.name, Number(r.n)]), [['Boston', 0], ['Chicago', 0], ['NYC', 3]]);
  await knex('races').insert({ name: 'NYC', town: 'X' }).onConflict('name').merge({ town: 'Manhattan' });
  assert.strictEqual((await knex('races').where({ name: 'NYC' }).first()).town, 'Manhattan');
  await knex('races').insert({ name: 'NYC', town: 'Y' }).onConflict('name').ignore();
  await knex.transaction(async trx => {
    const r = await trx('races').where('name', 'Boston').forUpdate().first();
    await trx('races').where('id', r.id).update({ fee: knex.raw('coalesce(fee, 0) + ?', [10]) });
  });
  assert.strictEqual((await knex('races').where('name', 'Boston').first()).fee, '10.00');
  assert.strictEqual((await knex('races').whereRaw("details->>'km' = ?", ['42.195'])).length, 1);
  assert.strictEqual((await knex('races').whereILike('town', 'man%')).length, 1);
  const page = await knex('races').orderBy('name').limit(1).offset(1).pluck('name');
  assert.deepStrictEqual(page, ['Chicago']);
  await knex('races').where('name', 'NYC').del();
  assert.strictEqual(Number((await knex('registrations').count('* as n'))[0].n), 0);
  // Migrations: knex's own tables and lock.
  const fs = require('fs'); const path = require('path'); const os = require('os');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'knex-'));
  fs.writeFileSync(path.join(dir, '001_add.js'), "exports.up = k => k.schema.createTable('clubs', t => { t.increments(); t.string('name'); }); exports.down = k => k.schema.dropTable('clubs');");
  await knex.migrate.latest({ directory: dir });
  assert(await knex.schema.hasTable('clubs'));
  await knex.migrate.rollback({ directory: dir });
  assert(!(await knex.schema.hasTable('clubs')));
  await knex.destroy();
  console.log('knex ok');
}
main().catch(e => { console.error(e); process.exit(1); });
