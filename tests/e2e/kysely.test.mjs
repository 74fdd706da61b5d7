// resq-wasm/kysely: Kysely 0.29 (installed beside the packed package, as a
// user adds an optional peer) running on an OPFS database through
// ResqDialect: the schema builder, queries and their figures, BLOBs and big
// integers, transactions (callback, controlled, savepoints), calls made
// outside a transaction while it runs, the Migrator with transactional DDL,
// errors, and the entry's types.

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { notInNode, start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';

/** For tests of transactions: a deadlock fails the test instead of hanging the run. */
const HANGS = { timeout: 120_000 };

let h;
before(async () => {
  h = await start({ peers: ['kysely'] });
});
after(async () => {
  await h?.close();
});

/**
 * Runs `body(k, arg)` in the page with `k` = the package's exports and the
 * inPage helpers, plus `db` (a Kysely over `database`, an OPFS database of
 * its own), `sql` and `Kysely`. Destroys `db` (which closes `database`)
 * afterwards.
 */
const withKysely = (t, body, arg = null) =>
  inPage(
    h.page,
    async (api, { name, src, arg }) => {
      const { Kysely, sql } = await import('kysely');
      const { ResqDialect } = await import('resq-wasm/kysely');
      const database = await api.open(name);
      const db = new Kysely({ dialect: new ResqDialect({ database }) });
      try {
        return await (0, eval)(`(${src})`)({ ...api, db, database, sql, Kysely, ResqDialect }, arg);
      } finally {
        await db.destroy();
      }
    },
    { name: dbName(t), src: body.toString(), arg },
  );

test('schema builder, insert with insertId, select, update and delete figures, raw sql', async (t) => {
  const got = await withKysely(t, async ({ db, sql, plain }) => {
    await db.schema
      .createTable('person')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('big', 'integer')
      .execute();
    const ada = await db
      .insertInto('person')
      .values({ name: 'Ada', big: 2n ** 62n })
      .executeTakeFirstOrThrow();
    const linus = await db.insertInto('person').values({ name: 'Linus', big: 7 }).executeTakeFirstOrThrow();
    const returned = await db.insertInto('person').values({ name: 'Grace' }).returning(['id', 'name']).execute();
    const selected = await db.selectFrom('person').select(['id', 'name', 'big']).orderBy('id').execute();
    const updated = await db.updateTable('person').set({ big: 1 }).where('name', 'in', ['Linus', 'Grace']).executeTakeFirstOrThrow();
    const deleted = await db.deleteFrom('person').where('name', '=', 'Grace').executeTakeFirstOrThrow();
    const count = await db
      .selectFrom('person')
      .select((e) => e.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    const raw = await sql`select name from person where id = ${linus.insertId}`.execute(db);
    const rawWrite = await sql`update person set big = big + 1`.execute(db);
    const tables = await db.introspection.getTables();
    return plain({
      ada: { insertId: ada.insertId, rows: ada.numInsertedOrUpdatedRows },
      linus: linus.insertId,
      returned,
      selected,
      updated: updated.numUpdatedRows,
      deleted: deleted.numDeletedRows,
      count,
      raw: raw.rows,
      rawWrite: rawWrite.numAffectedRows,
      columns: tables.map((t) => [t.name, t.columns.map((c) => `${c.name}:${c.dataType}`)]),
    });
  });
  assert.deepEqual(got, {
    ada: { insertId: { bigint: '1' }, rows: { bigint: '1' } },
    linus: { bigint: '2' },
    returned: [{ id: 3, name: 'Grace' }],
    selected: [
      { id: 1, name: 'Ada', big: { bigint: String(2n ** 62n) } },
      { id: 2, name: 'Linus', big: 7 },
      { id: 3, name: 'Grace', big: null },
    ],
    updated: { bigint: '2' },
    deleted: { bigint: '1' },
    count: { n: 2 },
    raw: [{ name: 'Linus' }],
    rawWrite: { bigint: '2' },
    columns: [['person', ['id:INTEGER', 'name:TEXT', 'big:INTEGER']]],
  });
});

test('BLOBs round-trip as Uint8Array, small and above the transfer threshold', async (t) => {
  const got = await withKysely(t, async ({ db }) => {
    await db.schema
      .createTable('file')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('data', 'blob')
      .execute();
    const small = new Uint8Array([0, 1, 2, 254, 255]);
    const large = new Uint8Array(300 * 1024).map((_, i) => (i * 31 + 7) & 255);
    await db
      .insertInto('file')
      .values([{ data: small }, { data: large }, { data: new Uint8Array(0) }])
      .execute();
    const rows = await db.selectFrom('file').select('data').orderBy('id').execute();
    const same = (a, b) => a instanceof Uint8Array && a.length === b.length && a.every((v, i) => v === b[i]);
    const found = await db.selectFrom('file').select('id').where('data', '=', small).execute();
    return { same: [same(rows[0].data, small), same(rows[1].data, large), same(rows[2].data, new Uint8Array(0))], found };
  });
  assert.deepEqual(got, { same: [true, true, true], found: [{ id: 1 }] });
});

test('transaction(): commits when the callback resolves, rolls back and re-throws its own error when it throws', HANGS, async (t) => {
  const got = await withKysely(t, async ({ db, database, plain }) => {
    await db.schema.createTable('t').addColumn('x', 'integer').execute();
    const value = await db.transaction().execute(async (trx) => {
      await trx.insertInto('t').values({ x: 1 }).execute();
      await trx.insertInto('t').values({ x: 2 }).execute();
      return 'kept';
    });
    const boom = new Error('boom');
    let seenInside;
    let caught;
    try {
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('t').values({ x: 3 }).execute();
        seenInside = await trx.selectFrom('t').select('x').orderBy('x').execute();
        throw boom;
      });
    } catch (e) {
      caught = e;
    }
    const rows = await db.selectFrom('t').select('x').orderBy('x').execute();
    return plain({ value, seenInside, sameError: caught === boom, rows, direct: await database.query('SELECT count(*) AS n FROM t') });
  });
  assert.deepEqual(got, {
    value: 'kept',
    seenInside: [{ x: 1 }, { x: 2 }, { x: 3 }],
    sameError: true,
    rows: [{ x: 1 }, { x: 2 }],
    direct: [{ n: 2 }],
  });
});

test('controlled transactions and savepoints: commit, rollback, rollbackToSavepoint, releaseSavepoint', HANGS, async (t) => {
  const got = await withKysely(t, async ({ db }) => {
    await db.schema.createTable('t').addColumn('x', 'integer').execute();
    const trx = await db.startTransaction().execute();
    await trx.insertInto('t').values({ x: 1 }).execute();
    const a = await trx.savepoint('a').execute();
    await a.insertInto('t').values({ x: 2 }).execute();
    const back = await a.rollbackToSavepoint('a').execute();
    await back.insertInto('t').values({ x: 3 }).execute();
    const b = await back.savepoint('b "quoted"').execute();
    await b.insertInto('t').values({ x: 4 }).execute();
    const released = await b.releaseSavepoint('b "quoted"').execute();
    await released.commit().execute();
    const other = await db.startTransaction().execute();
    await other.insertInto('t').values({ x: 5 }).execute();
    await other.rollback().execute();
    return db.selectFrom('t').select('x').orderBy('x').execute();
  });
  assert.deepEqual(got, [{ x: 1 }, { x: 3 }, { x: 4 }]);
});

test('calls made outside a transaction while it runs wait for it: no interleaving, no deadlock, no lost update', HANGS, async (t) => {
  const got = await withKysely(t, async ({ db, database }) => {
    await db.schema.createTable('t').addColumn('x', 'integer').execute();
    await db.schema
      .createTable('counter')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('n', 'integer')
      .execute();
    await db.insertInto('counter').values({ id: 1, n: 0 }).execute();
    const pause = () => new Promise((resolve) => setTimeout(resolve, 10));
    const outside = {};
    // Calls started (not awaited) inside the callback through `db` and the
    // database itself are outside the transaction: they see its outcome.
    await db.transaction().execute(async (trx) => {
      await trx.insertInto('t').values({ x: 1 }).execute();
      outside.kysely = db.selectFrom('t').select('x').orderBy('x').execute();
      outside.direct = database.query('SELECT x FROM t ORDER BY x');
      await pause();
      await trx.insertInto('t').values({ x: 2 }).execute();
    });
    const afterCommit = { kysely: await outside.kysely, direct: await outside.direct };
    // A write made outside a transaction that rolls back is not undone with it.
    await db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('t').values({ x: 3 }).execute();
        outside.write = db.insertInto('t').values({ x: 100 }).execute();
        await pause();
        throw new Error('undo');
      })
      .catch(() => {});
    await outside.write;
    const afterRollback = await db.selectFrom('t').select('x').orderBy('x').execute();
    // Ten read-modify-write transactions at once, with a pause between the
    // read and the write: interleaved, they would lose updates.
    await Promise.all(
      Array.from({ length: 10 }, () =>
        db.transaction().execute(async (trx) => {
          const { n } = await trx.selectFrom('counter').select('n').where('id', '=', 1).executeTakeFirstOrThrow();
          await pause();
          await trx
            .updateTable('counter')
            .set({ n: n + 1 })
            .where('id', '=', 1)
            .execute();
        }),
      ),
    );
    const counter = await db.selectFrom('counter').select('n').executeTakeFirstOrThrow();
    return { afterCommit, afterRollback, counter };
  });
  assert.deepEqual(got, {
    afterCommit: { kysely: [{ x: 1 }, { x: 2 }], direct: [{ x: 1 }, { x: 2 }] },
    afterRollback: [{ x: 1 }, { x: 2 }, { x: 100 }],
    counter: { n: 10 },
  });
});

test('Migrator: two migrations run; a failing one leaves nothing behind, not even the table of its first statement', HANGS, async (t) => {
  const got = await withKysely(t, async ({ db, sql, describe }) => {
    const { Migrator } = await import('kysely/migration');
    const migrations = {
      '001_people': {
        up: (db) =>
          db.schema
            .createTable('people')
            .addColumn('id', 'integer', (c) => c.primaryKey())
            .addColumn('name', 'text')
            .execute(),
      },
      '002_pets': {
        async up(db) {
          await db.schema
            .createTable('pets')
            .addColumn('id', 'integer', (c) => c.primaryKey())
            .addColumn('owner', 'integer', (c) => c.references('people.id'))
            .execute();
          await db.schema.createIndex('pets_owner').on('pets').column('owner').execute();
        },
      },
    };
    const migrate = (all) => new Migrator({ db, provider: { getMigrations: async () => all } }).migrateToLatest();
    const summary = ({ error, results }) => ({
      error: error && describe(error),
      results: results?.map((r) => [r.migrationName, r.status]),
    });
    const first = summary(await migrate(migrations));
    const failing = summary(
      await migrate({
        ...migrations,
        '003_toys': {
          async up(db) {
            await db.schema.createTable('toys').addColumn('id', 'integer').execute();
            await db.insertInto('toys').values({ id: 1 }).execute();
            await sql`insert into no_such_table values (1)`.execute(db);
          },
        },
      }),
    );
    const schema = await sql`select type, name from sqlite_schema where name not like 'sqlite_%' order by name`.execute(db);
    const ran = await db.selectFrom('kysely_migration').select('name').orderBy('name').execute();
    const again = summary(await migrate(migrations));
    return { first, failing, schema: schema.rows.map((r) => `${r.type} ${r.name}`), ran: ran.map((r) => r.name), again };
  });
  assert.deepEqual(got.first, {
    error: undefined,
    results: [
      ['001_people', 'Success'],
      ['002_pets', 'Success'],
    ],
  });
  assert.deepEqual(got.failing.results, [['003_toys', 'Error']]);
  assert.equal(got.failing.error.isResqError, true);
  assert.equal(got.failing.error.code, 'SQLITE_ERROR');
  assert.match(got.failing.error.message, /no such table: no_such_table/);
  assert.deepEqual(got.schema, ['table kysely_migration', 'table kysely_migration_lock', 'table people', 'table pets', 'index pets_owner']);
  assert.deepEqual(got.ran, ['001_people', '002_pets']);
  assert.deepEqual(got.again, { error: undefined, results: [] });
});

test('Migrator: two runs at once on two shares of one database (as two tabs) apply each migration once', {
  ...HANGS,
  skip: notInNode('two shares of one database need a stored one'),
}, async (t) => {
  const got = await inPage(
    h.page,
    async ({ open, describe }, name) => {
      const { Kysely, sql } = await import('kysely');
      const { Migrator } = await import('kysely/migration');
      const { ResqDialect } = await import('resq-wasm/kysely');
      // The second open() of the name shares the first one's database, as another tab's would.
      const [a, b] = [await open(name), await open(name)].map((database) => new Kysely({ dialect: new ResqDialect({ database }) }));
      const pause = () => new Promise((resolve) => setTimeout(resolve, 10));
      const migrations = {
        // No "if not exists": run twice, each would fail.
        '001_a': { up: async (db) => (await pause(), db.schema.createTable('a').addColumn('x', 'integer').execute()) },
        '002_b': { up: async (db) => (await pause(), db.schema.createTable('b').addColumn('x', 'integer').execute()) },
      };
      const migrate = (db) => new Migrator({ db, provider: { getMigrations: async () => migrations } }).migrateToLatest();
      try {
        const runs = await Promise.all([migrate(a), migrate(b)]);
        const ran = await sql`select name from kysely_migration order by name`.execute(a);
        return {
          runs: runs.map(({ error, results }) => ({
            error: error && describe(error),
            results: results.map((r) => [r.migrationName, r.status]),
          })),
          ran: ran.rows.map((r) => r.name),
        };
      } finally {
        await b.destroy();
        await a.destroy();
      }
    },
    dbName(t),
  );
  assert.deepEqual(got.ran, ['001_a', '002_b']);
  const applied = got.runs.flatMap((r) => r.results);
  assert.deepEqual(
    applied,
    [
      ['001_a', 'Success'],
      ['002_b', 'Success'],
    ],
    JSON.stringify(got.runs),
  );
  assert.deepEqual(
    got.runs.map((r) => r.error),
    [undefined, undefined],
  );
});

test('errors are ResqErrors with their codes; a failed call changes nothing and the next one works', HANGS, async (t) => {
  const got = await withKysely(t, async ({ db, sql, outcome, ResqDialect, ResqError }) => {
    await db.schema
      .createTable('u')
      .addColumn('email', 'text', (c) => c.unique())
      .execute();
    await db.insertInto('u').values({ email: 'a@x' }).execute();
    const duplicate = await outcome(db.insertInto('u').values({ email: 'a@x' }).execute());
    const inTransaction = await outcome(
      db.transaction().execute(async (trx) => {
        await trx.insertInto('u').values({ email: 'b@x' }).execute();
        await trx.insertInto('u').values({ email: 'a@x' }).execute();
      }),
    );
    let streamed;
    try {
      for await (const row of db.selectFrom('u').selectAll().stream()) streamed = row;
    } catch (e) {
      streamed = { code: e.code, isResqError: e instanceof ResqError };
    }
    let badConfig;
    try {
      new ResqDialect({ database: 'app.db' });
    } catch (e) {
      badConfig = e.code;
    }
    // COMMIT itself fails (a deferred foreign key): the transaction rolls back.
    await sql`PRAGMA foreign_keys = ON`.execute(db);
    await sql`CREATE TABLE parent(id INTEGER PRIMARY KEY)`.execute(db);
    await sql`CREATE TABLE child(parent INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)`.execute(db);
    const atCommit = await outcome(db.transaction().execute((trx) => trx.insertInto('child').values({ parent: 99 }).execute()));
    const children = await db.selectFrom('child').selectAll().execute();
    const rows = await db.selectFrom('u').select('email').execute();
    return { duplicate, inTransaction, streamed, badConfig, atCommit, children, rows };
  });
  assert.equal(got.duplicate.ok, false);
  assert.equal(got.duplicate.error.isResqError, true);
  assert.equal(got.duplicate.error.code, 'SQLITE_CONSTRAINT_UNIQUE');
  assert.equal(got.duplicate.error.errno, 2067);
  assert.equal(got.inTransaction.error.code, 'SQLITE_CONSTRAINT_UNIQUE');
  assert.deepEqual(got.streamed, { code: 'RESQ_UNSUPPORTED', isResqError: true });
  assert.equal(got.badConfig, 'RESQ_BAD_PARAM');
  assert.equal(got.atCommit.error.code, 'SQLITE_CONSTRAINT_FOREIGNKEY');
  assert.deepEqual(got.children, []);
  assert.deepEqual(got.rows, [{ email: 'a@x' }]);
});

test('database as a function: opened when Kysely first needs it; destroy() closes it', async (t) => {
  const got = await inPage(
    h.page,
    async ({ open, outcome }, name) => {
      const { Kysely, sql } = await import('kysely');
      const { ResqDialect } = await import('resq-wasm/kysely');
      let opened = null;
      const db = new Kysely({ dialect: new ResqDialect({ database: async () => (opened = await open(name)) }) });
      const before = opened;
      const { rows } = await sql`select 6 * 7 as answer`.execute(db);
      await db.destroy();
      return { before, rows, after: await outcome(opened.query('SELECT 1')) };
    },
    dbName(t),
  );
  assert.equal(got.before, null);
  assert.deepEqual(got.rows, [{ answer: 42 }]);
  assert.equal(got.after.error.code, 'RESQ_CLOSED');
});

test('TypeScript: the entry type-checks with Kysely, and a wrong database is an error', () => {
  writeFileSync(
    join(h.app, 'kysely-uses.ts'),
    `import { Kysely, type Generated } from 'kysely';
import { open } from 'resq-wasm';
import { ResqDialect, type ResqDialectConfig } from 'resq-wasm/kysely';

interface DB {
  person: { id: Generated<number>; name: string; photo: Uint8Array | null };
}

export async function uses(): Promise<void> {
  const db = new Kysely<DB>({ dialect: new ResqDialect({ database: await open('app.db') }) });
  const lazy: ResqDialectConfig = { database: () => open('other.db') };
  new Kysely<DB>({ dialect: new ResqDialect(lazy) });
  const { insertId } = await db.insertInto('person').values({ name: 'Ada', photo: new Uint8Array(2) }).executeTakeFirstOrThrow();
  const id: bigint | undefined = insertId;
  const rows = await db.selectFrom('person').select(['id', 'name']).execute();
  const name: string = rows[0].name;
  console.log(id, name);
  // @ts-expect-error: a name is not a Database
  new ResqDialect({ database: 'app.db' });
}
`,
  );
  const tsc = resolve(import.meta.dirname, '../../node_modules/.bin/tsc');
  const args = [
    '--noEmit',
    '--strict',
    '--target',
    'ES2022',
    '--module',
    'ES2022',
    '--moduleResolution',
    'bundler',
    '--lib',
    'ES2022,DOM',
    'kysely-uses.ts',
  ];
  const r = spawnSync(tsc, args, { cwd: h.app, encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
});
