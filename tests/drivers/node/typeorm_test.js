// TypeORM against Partita: synchronize (its catalog reads then find nothing to change), entities
// with enums, arrays, jsonb, uuids and version columns, relations, query builder, paging,
// pessimistic locks, upsert, cascade and table metadata. Run by tests/tests/e2e/drivers.rs
// with the server's address. Its uuid keys default to uuid-ossp's uuid_generate_v4(), after
// its CREATE EXTENSION IF NOT EXISTS "uuid-ossp".
require('reflect-metadata');
const { DataSource, EntitySchema } = require('typeorm');
const assert = require('assert');
const Race = new EntitySchema({
  name: 'Race', tableName: 'races',
  columns: {
    id: { type: 'int', primary: true, generated: 'increment' },
    name: { type: 'varchar', length: 100, unique: true },
    city: { type: 'varchar', length: 50 },
    fee: { type: 'numeric', precision: 6, scale: 2 },
    starts: { type: 'timestamptz' },
    details: { type: 'jsonb', nullable: true },
    kind: { type: 'enum', enum: ['road', 'trail'], default: 'road' },
    tags: { type: 'text', array: true, nullable: true },
    created: { type: 'timestamp', createDate: true },
    version: { type: 'int', version: true },
  },
  indices: [{ columns: ['city', 'starts'] }],
  relations: { registrations: { type: 'one-to-many', target: 'Registration', inverseSide: 'race' } },
});
const Runner = new EntitySchema({
  name: 'Runner', tableName: 'runners',
  columns: {
    id: { type: 'uuid', primary: true, generated: 'uuid' },
    email: { type: 'varchar', unique: true },
    name: { type: 'varchar' },
  },
});
const Registration = new EntitySchema({
  name: 'Registration', tableName: 'registrations',
  columns: { id: { type: 'int', primary: true, generated: 'identity' }, bib: { type: 'int' }, paid: { type: 'boolean', default: false } },
  relations: {
    race: { type: 'many-to-one', target: 'Race', inverseSide: 'registrations', onDelete: 'CASCADE', joinColumn: true },
    runner: { type: 'many-to-one', target: 'Runner', joinColumn: true },
  },
  uniques: [{ columns: ['race', 'bib'] }],
});
async function main() {
  const [host, port] = process.argv.slice(2);
  const ds = new DataSource({ type: 'postgres', host, port: Number(port), username: 'partita', database: 'partita',
    entities: [Race, Runner, Registration], synchronize: true, dropSchema: true, logging: process.env.LOG ? 'all' : false });
  await ds.initialize();
  // Synchronizing again finds nothing to change.
  const pending = await ds.driver.createSchemaBuilder().log();
  assert.deepStrictEqual(pending.upQueries.map(q => q.query), []);
  const races = ds.getRepository('Race'), runners = ds.getRepository('Runner'), regs = ds.getRepository('Registration');
  const nyc = await races.save({ name: 'NYC', city: 'New York', fee: '295.50', starts: new Date('2024-11-03T09:10:00Z'), details: { km: 42.195 }, tags: ['major'] });
  const bos = await races.save({ name: 'Boston', city: 'Boston', fee: '230.00', starts: new Date('2024-04-15T10:00:00Z'), kind: 'road' });
  assert.strictEqual(nyc.version, 1);
  const rs = await runners.save([...Array(6).keys()].map(i => ({ email: `r${i}@x.com`, name: `Runner ${i}` })));
  for (const [i, r] of rs.entries()) await regs.save({ bib: 100 + i, race: i < 4 ? nyc : bos, runner: r, paid: i % 2 === 0 });
  const counts = await races.createQueryBuilder('r').leftJoin('r.registrations', 'g').select('r.name', 'name').addSelect('COUNT(g.id)', 'n').groupBy('r.id').orderBy('r.name').getRawMany();
  assert.deepStrictEqual(counts.map(c => [c.name, Number(c.n)]), [['Boston', 2], ['NYC', 4]]);
  const paid = await regs.find({ where: { paid: true }, relations: { race: true, runner: true }, order: { bib: 'DESC' } });
  assert.deepStrictEqual(paid.map(r => [r.bib, r.race.name, r.runner.name]), [[104, 'Boston', 'Runner 4'], [102, 'NYC', 'Runner 2'], [100, 'NYC', 'Runner 0']]);
  const page = await regs.find({ relations: { race: true }, order: { bib: 'ASC' }, skip: 2, take: 2 });
  assert.deepStrictEqual(page.map(r => r.bib), [102, 103]);
  const [list, total] = await runners.findAndCount({ order: { email: 'ASC' }, take: 2 });
  assert.strictEqual(total, 6); assert.strictEqual(list.length, 2);
  await ds.transaction(async m => {
    const r = await m.getRepository('Race').findOne({ where: { id: nyc.id }, lock: { mode: 'pessimistic_write' } });
    r.fee = '300.00';
    await m.getRepository('Race').save(r);
  });
  assert.strictEqual((await races.findOneBy({ id: nyc.id })).version, 2);
  await assert.rejects(runners.insert({ email: 'r1@x.com', name: 'dup' }), e => e.code === '23505');
  await runners.upsert({ email: 'r1@x.com', name: 'Upserted' }, ['email']);
  assert.strictEqual((await runners.findOneBy({ email: 'r1@x.com' })).name, 'Upserted');
  await races.delete({ id: bos.id });
  assert.strictEqual(await regs.count(), 4);
  const qr = ds.createQueryRunner();
  const table = await qr.getTable('races');
  assert(table.columns.some(c => c.name === 'fee' && c.precision === 6 && c.scale === 2), JSON.stringify(table.columns.map(c => [c.name, c.type])));
  await qr.release();
  await ds.destroy();
  console.log('typeorm ok');
}
main().catch(e => { console.error(e); process.exit(1); });
