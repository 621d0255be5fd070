// Sequelize 6 against Partita: sync (create, then alter) of models with enums, arrays, jsonb and
// uuids, associations, eager loading, JSON and array operators, upsert, transactions with row
// locks, and the query interface's column and index changes. Run by tests/tests/e2e/drivers.rs
// with the server's address. (Not findOrCreate: outside a transaction Sequelize runs it through
// a temporary PL/pgSQL function, which Partita cannot create.)
const { Sequelize, DataTypes, Op } = require('sequelize');
const assert = require('assert');
async function main() {
  const [host, port] = process.argv.slice(2);
  const s = new Sequelize('partita', 'partita', '', { host, port: Number(port), dialect: 'postgres', logging: false });
  const Race = s.define('Race', {
    name: { type: DataTypes.STRING, allowNull: false, unique: true },
    city: DataTypes.STRING(50),
    fee: DataTypes.DECIMAL(6, 2),
    starts: DataTypes.DATE,
    details: DataTypes.JSONB,
    tags: DataTypes.ARRAY(DataTypes.TEXT),
    kind: DataTypes.ENUM('road', 'trail'),
  }, { indexes: [{ fields: ['city', 'starts'] }] });
  const Runner = s.define('Runner', {
    id: { type: DataTypes.UUID, defaultValue: DataTypes.UUIDV4, primaryKey: true },
    email: { type: DataTypes.STRING, unique: true },
    name: DataTypes.STRING,
  });
  const Reg = s.define('Registration', { bib: DataTypes.INTEGER, paid: { type: DataTypes.BOOLEAN, defaultValue: false } });
  Race.hasMany(Reg); Reg.belongsTo(Race);
  Runner.hasMany(Reg); Reg.belongsTo(Runner);
  await s.sync({ force: true });
  await s.sync({ alter: true });
  const nyc = await Race.create({ name: 'NYC', city: 'New York', fee: '295.50', starts: new Date('2024-11-03T09:10:00Z'), details: { km: 42.195 }, tags: ['major'], kind: 'road' });
  const bos = await Race.create({ name: 'Boston', city: 'Boston', fee: '230.00', starts: new Date('2024-04-15T10:00:00Z'), kind: 'road' });
  const runners = await Runner.bulkCreate([...Array(6).keys()].map(i => ({ email: `r${i}@x.com`, name: `Runner ${i}` })));
  for (const [i, r] of runners.entries()) await Reg.create({ bib: 100 + i, RaceId: i < 4 ? nyc.id : bos.id, RunnerId: r.id, paid: i % 2 === 0 });
  const counts = await Race.findAll({ attributes: ['name', [s.fn('COUNT', s.col('Registrations.id')), 'n']], include: [{ model: Reg, attributes: [] }], group: ['Race.id'], order: [['name', 'ASC']], raw: true });
  assert.deepStrictEqual(counts.map(c => [c.name, Number(c.n)]), [['Boston', 2], ['NYC', 4]]);
  const regs = await Reg.findAll({ include: [Race, Runner], where: { paid: true }, order: [['bib', 'DESC']] });
  assert.deepStrictEqual(regs.map(r => [r.bib, r.Race.name, r.Runner.name]), [[104, 'Boston', 'Runner 4'], [102, 'NYC', 'Runner 2'], [100, 'NYC', 'Runner 0']]);
  assert.strictEqual(await Race.count({ where: { details: { km: { [Op.gt]: 40 } } } }), 1);
  assert.strictEqual(await Race.count({ where: { tags: { [Op.contains]: ['major'] } } }), 1);
  assert.strictEqual(await Runner.count({ where: { name: { [Op.iLike]: '%ner 3' } } }), 1);
  await Reg.update({ paid: true }, { where: { RaceId: bos.id } });
  assert.strictEqual(await Reg.count({ where: { paid: true } }), 4);
  const r = await Runner.create({ email: 'new@x.com', name: 'New' });
  await Runner.upsert({ id: r.id, email: 'new@x.com', name: 'Newer' });
  assert.strictEqual((await Runner.findOne({ where: { email: 'new@x.com' } })).name, 'Newer');
  await assert.rejects(Runner.create({ email: 'r1@x.com', name: 'dup' }), e => e.name === 'SequelizeUniqueConstraintError');
  await s.transaction(async t => {
    await Race.create({ name: 'Tmp', city: 'X' }, { transaction: t });
    const found = await Race.findOne({ where: { name: 'Tmp' }, transaction: t, lock: t.LOCK.UPDATE });
    assert(found);
  });
  await assert.rejects(s.transaction(async t => { await Race.create({ name: 'Gone', city: 'X' }, { transaction: t }); throw new Error('stop'); }));
  assert.strictEqual(await Race.count({ where: { name: 'Gone' } }), 0);
  await bos.destroy();
  const qi = s.getQueryInterface();
  const desc = await qi.describeTable('Races');
  assert(desc.name && desc.fee && desc.kind, JSON.stringify(desc));
  await qi.addColumn('Runners', 'club', { type: DataTypes.STRING, defaultValue: 'none' });
  await qi.renameColumn('Runners', 'club', 'team');
  await qi.changeColumn('Runners', 'team', { type: DataTypes.TEXT });
  await qi.addIndex('Runners', ['team']);
  const idx = await qi.showIndex('Runners');
  assert(idx.some(i => i.name === 'runners_team'), JSON.stringify(idx.map(i => i.name)));
  await qi.removeColumn('Runners', 'team');
  await s.close();
  console.log('sequelize ok');
}
main().catch(e => { console.error(e); process.exit(1); });
