// The schema drizzle_test.js pushes with drizzle-kit and queries with drizzle-orm: races and
// their entrants, with an enum, a serial key, a uuid key with a random default, a composite
// key, a foreign key, a unique index and a plain one.
const { pgTable, pgEnum, serial, varchar, text, integer, numeric, boolean, timestamp, jsonb, uuid, uniqueIndex, index, primaryKey } = require('drizzle-orm/pg-core');

const raceKind = pgEnum('race_kind', ['road', 'trail', 'track']);

const races = pgTable('races', {
  id: serial('id').primaryKey(),
  name: varchar('name', { length: 100 }).notNull(),
  kind: raceKind('kind').default('road'),
  fee: numeric('fee', { precision: 8, scale: 2 }).default('0'),
  open: boolean('open').notNull().default(true),
  starts: timestamp('starts', { withTimezone: true }).defaultNow().notNull(),
  details: jsonb('details'),
}, (t) => [uniqueIndex('races_name_idx').on(t.name), index('races_kind_idx').on(t.kind)]);

const entrants = pgTable('entrants', {
  id: uuid('id').defaultRandom().primaryKey(),
  raceId: integer('race_id').notNull().references(() => races.id, { onDelete: 'cascade' }),
  runner: text('runner').notNull(),
});

const splits = pgTable('splits', {
  entrantId: uuid('entrant_id').notNull(),
  km: integer('km').notNull(),
  seconds: integer('seconds'),
}, (t) => [primaryKey({ columns: [t.entrantId, t.km] })]);

module.exports = { raceKind, races, entrants, splits };
