// node-postgres (npm `pg`) against Partita: parameters, named (prepared) statements,
// transactions and errors. Run by tests/tests/e2e/drivers.rs with the server's address.
const { Client } = require('pg');
const assert = require('assert');

async function main() {
  const [host, port] = process.argv.slice(2);
  const client = new Client({ host, port: Number(port), user: 'partita', database: 'partita' });
  await client.connect();
  await client.query('DROP TABLE IF EXISTS transfers');
  await client.query(
    'CREATE TABLE transfers (account text, seq bigint, amount numeric(10,2), note text, ' +
    'at timestamptz, PRIMARY KEY ((account), seq))');

  // Parameters (text format), including NULL.
  for (let i = 1; i <= 20; i++) {
    await client.query('INSERT INTO transfers VALUES ($1, $2, $3, $4, $5)',
      ['acct-1', i, (i * 10.25).toFixed(2), i % 2 ? null : `note ${i}`, new Date(Date.UTC(2024, 0, i))]);
  }
  let res = await client.query('SELECT seq, amount, note, at FROM transfers WHERE account = $1 AND seq = $2',
    ['acct-1', 4]);
  assert.deepStrictEqual(res.rows[0].amount, '41.00');
  assert.strictEqual(res.rows[0].note, 'note 4');
  assert.strictEqual(res.rows[0].at.toISOString(), '2024-01-04T00:00:00.000Z');
  assert.strictEqual(res.rows[0].seq, '4'); // bigint arrives as text, as from PostgreSQL

  // A named statement, parsed once and executed many times.
  for (let i = 1; i <= 5; i++) {
    res = await client.query({ name: 'one_transfer', text: 'SELECT amount FROM transfers WHERE account = $1 AND seq = $2', values: ['acct-1', i] });
    assert.strictEqual(res.rows[0].amount, (i * 10.25).toFixed(2));
  }
  res = await client.query({ name: 'sum', text: 'SELECT count(*)::int AS n, sum(amount) AS total FROM transfers WHERE account = $1', values: ['acct-1'] });
  assert.deepStrictEqual(res.rows[0], { n: 20, total: '2152.50' });

  // Transactions and errors.
  await client.query('BEGIN');
  await client.query('UPDATE transfers SET amount = 0 WHERE account = $1', ['acct-1']);
  await client.query('ROLLBACK');
  res = await client.query('SELECT sum(amount) AS total FROM transfers');
  assert.strictEqual(res.rows[0].total, '2152.50');
  await assert.rejects(client.query('INSERT INTO transfers (account, seq) VALUES ($1, $2)', ['acct-1', 1]),
    (e) => e.code === '23505');
  await assert.rejects(client.query('SELECT nosuch FROM transfers'), (e) => e.code === '42703');
  // Pages: node-postgres sends LIMIT and OFFSET values as untyped text.
  res = await client.query('SELECT seq FROM transfers WHERE account = $1 ORDER BY seq LIMIT $2 OFFSET $3', ['acct-1', 2, 1]);
  assert.deepStrictEqual(res.rows.map((r) => r.seq), ['2', '3']);
  // Untyped parameters read as PostgreSQL reads them: timestamp text in its other forms,
  // and inside expressions of INSERT VALUES and window functions.
  res = await client.query('SELECT count(*)::int AS n FROM transfers WHERE at < $1', ['infinity']);
  assert.strictEqual(res.rows[0].n, 20);
  for (let i = 0; i < 2; i++) { // the second run may use the statement's kept plan
    res = await client.query({ name: 'after', text: 'SELECT count(*)::int AS n FROM transfers WHERE at > $1', values: ['2024-01-18T12:00'] });
    assert.strictEqual(res.rows[0].n, 2);
  }
  await client.query('CREATE TABLE reminders (id int PRIMARY KEY, done bool, due timestamptz, size float8)');
  await client.query("INSERT INTO reminders VALUES ($1, NOT $2, timestamptz '2024-01-01 00:00+00' + $3 * interval '1 minute', abs($4))",
    [1, true, 90, -2.5]);
  res = await client.query('SELECT done, due, size FROM reminders');
  assert.deepStrictEqual([res.rows[0].done, res.rows[0].due.toISOString(), res.rows[0].size],
    [false, '2024-01-01T01:30:00.000Z', 2.5]);
  res = await client.query('SELECT seq, lag(seq, $1) OVER (ORDER BY seq) AS before FROM transfers WHERE seq <= 3 ORDER BY seq', [2]);
  assert.deepStrictEqual(res.rows.map((r) => r.before), [null, null, '1']);
  res = await client.query('SELECT generate_series(1, $1) AS g', [3]);
  assert.deepStrictEqual(res.rows.map((r) => Number(r.g)), [1, 2, 3]);
  // A Bind of more values than the statement takes is a protocol violation.
  await assert.rejects(client.query('SELECT $1::int AS x', [1, 2]), (e) => e.code === '08P01');
  res = await client.query('SELECT 1 AS one');
  assert.strictEqual(res.rows[0].one, 1);
  // LISTEN/NOTIFY: the 'notification' event brings what another client sent.
  const other = new Client({ host, port: Number(port), user: 'partita', database: 'partita' });
  await other.connect();
  const arrived = new Promise((resolve) => client.once('notification', resolve));
  await client.query('LISTEN jobs');
  await other.query("SELECT pg_notify('jobs', $1)", ['job 1']);
  const sender = (await other.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const note = await arrived;
  assert.deepStrictEqual([note.channel, note.payload, note.processId], ['jobs', 'job 1', sender]);
  await other.end();
  await client.end();
  console.log('node-postgres ok');
}

main().catch((e) => { console.error(e); process.exit(1); });
