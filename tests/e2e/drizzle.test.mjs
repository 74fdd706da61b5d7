// resq-wasm/drizzle: Drizzle ORM 0.45 (installed beside the packed package,
// as a user adds an optional peer) on an OPFS database: a schema of two
// tables, insert, select with joins (columns of one name on both sides),
// update, delete, BLOBs, the relational query API, Drizzle's cache,
// transactions (commit, rollback, savepoints) and calls made outside one
// while it runs, errors, and the entry's types.

import { before, after } from 'node:test';
import { test } from './engines.mjs';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { start } from './harness.mjs';
import { inPage, dbName } from './util.mjs';

/** For tests of transactions: a deadlock fails the test instead of hanging the run. */
const HANGS = { timeout: 120_000 };

let h;
before(async () => {
  h = await start({ peers: ['drizzle-orm'] });
});
after(async () => {
  await h?.close();
});

/**
 * Runs `body(d, arg)` in the page with `d` = the package's exports and the
 * inPage helpers, plus `db` (Drizzle over `database`, an OPFS database of
 * its own, with the tables below created), the tables `users` and `posts`,
 * and Drizzle's `orm` ('drizzle-orm') and `core` ('drizzle-orm/sqlite-core')
 * modules. Closes the database afterwards.
 */
const withDrizzle = (t, body, arg = null) =>
  inPage(
    h.page,
    async (api, { name, src, arg }) => {
      const orm = await import('drizzle-orm');
      const core = await import('drizzle-orm/sqlite-core');
      const { drizzle } = await import('resq-wasm/drizzle');
      const { sqliteTable, integer, text, customType } = core;
      // Drizzle's blob() converts with Node's Buffer; a browser app stores Uint8Array.
      const bytes = customType({ dataType: () => 'blob' });
      const users = sqliteTable('users', {
        id: integer('id').primaryKey(),
        name: text('name').notNull().unique(),
        avatar: bytes('avatar'),
      });
      const posts = sqliteTable('posts', {
        id: integer('id').primaryKey(),
        author: integer('author')
          .notNull()
          .references(() => users.id),
        title: text('title').notNull(),
        views: integer('views').notNull().default(0),
      });
      const usersRelations = orm.relations(users, ({ many }) => ({ posts: many(posts) }));
      const postsRelations = orm.relations(posts, ({ one }) => ({
        writer: one(users, { fields: [posts.author], references: [users.id] }),
      }));
      const database = await api.open(name);
      try {
        const db = drizzle(database, { schema: { users, posts, usersRelations, postsRelations } });
        await database.execute(`
          CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, avatar BLOB);
          CREATE TABLE posts(id INTEGER PRIMARY KEY, author INTEGER NOT NULL REFERENCES users(id), title TEXT NOT NULL, views INTEGER NOT NULL DEFAULT 0);
        `);
        return await (0, eval)(`(${src})`)({ ...api, db, database, users, posts, orm, core, drizzle }, arg);
      } finally {
        await database.close();
      }
    },
    { name: dbName(t), src: body.toString(), arg },
  );

test('insert, select with joins, update, delete, and what run/get/all/values give', async (t) => {
  const got = await withDrizzle(t, async ({ db, users, posts, orm: { eq, sql, desc }, plain }) => {
    const ran = await db.insert(users).values({ name: 'Ada', avatar: new Uint8Array([1, 2, 255]) });
    const returned = await db.insert(users).values({ name: 'Grace' }).returning();
    await db.insert(posts).values([
      { author: 1, title: 'engines' },
      { author: 1, title: 'notes' },
      { author: 2, title: 'compilers' },
    ]);
    // Both tables have `id`: a join gives two columns of one name.
    const joined = await db.select().from(posts).innerJoin(users, eq(posts.author, users.id)).orderBy(desc(posts.id));
    const picked = await db
      .select({ title: posts.title, who: users.name, postId: posts.id, userId: users.id, one: sql`1`, two: sql`2` })
      .from(users)
      .leftJoin(posts, eq(posts.author, users.id))
      .orderBy(posts.id);
    const updated = await db.update(posts).set({ views: 5 }).where(eq(posts.author, 1));
    const deleted = await db.delete(posts).where(eq(posts.title, 'compilers')).returning({ id: posts.id, title: posts.title });
    const deletedNone = await db.delete(posts).where(eq(posts.title, 'none'));
    const one = await db.select().from(users).where(eq(users.id, 1)).get();
    const missing = await db.select().from(users).where(eq(users.id, 99)).get();
    const values = await db.select({ id: posts.id, views: posts.views }).from(posts).orderBy(posts.id).values();
    const count = await db.$count(posts);
    const raw = {
      all: await db.all(sql`select ${2n ** 62n} as big, ${'text'} as t`),
      get: await db.get(sql`select count(*) as n from ${posts}`),
      values: await db.values(sql`select id, title from ${posts} order by id`),
      run: await db.run(sql`update ${posts} set views = views + 1`),
    };
    return plain({ ran, returned, joined, picked, updated, deleted, deletedNone, one, missing, values, count, raw });
  });
  const bytes = (...b) => ({ bytes: b });
  assert.deepEqual(got.ran, { changes: 1, lastInsertRowid: 1 });
  assert.deepEqual(got.returned, [{ id: 2, name: 'Grace', avatar: null }]);
  assert.deepEqual(got.joined, [
    { posts: { id: 3, author: 2, title: 'compilers', views: 0 }, users: { id: 2, name: 'Grace', avatar: null } },
    { posts: { id: 2, author: 1, title: 'notes', views: 0 }, users: { id: 1, name: 'Ada', avatar: bytes(1, 2, 255) } },
    { posts: { id: 1, author: 1, title: 'engines', views: 0 }, users: { id: 1, name: 'Ada', avatar: bytes(1, 2, 255) } },
  ]);
  assert.deepEqual(got.picked, [
    { title: 'engines', who: 'Ada', postId: 1, userId: 1, one: 1, two: 2 },
    { title: 'notes', who: 'Ada', postId: 2, userId: 1, one: 1, two: 2 },
    { title: 'compilers', who: 'Grace', postId: 3, userId: 2, one: 1, two: 2 },
  ]);
  assert.deepEqual(got.updated, { changes: 2, lastInsertRowid: 3 });
  assert.deepEqual(got.deleted, [{ id: 3, title: 'compilers' }]);
  assert.equal(got.deletedNone.changes, 0);
  assert.deepEqual(got.one, { id: 1, name: 'Ada', avatar: bytes(1, 2, 255) });
  assert.equal(got.missing, undefined);
  assert.deepEqual(got.values, [
    [1, 5],
    [2, 5],
  ]);
  assert.equal(got.count, 2);
  assert.deepEqual(got.raw, {
    all: [{ big: { bigint: String(2n ** 62n) }, t: 'text' }],
    get: { n: 2 },
    values: [
      [1, 'engines'],
      [2, 'notes'],
    ],
    run: { changes: 2, lastInsertRowid: 3 },
  });
});

test('a BLOB column: bytes round-trip, small and above the transfer threshold', async (t) => {
  const got = await withDrizzle(t, async ({ db, users, orm: { eq } }) => {
    const small = new Uint8Array([0, 1, 2, 254, 255]);
    const large = new Uint8Array(300 * 1024).map((_, i) => (i * 31 + 7) & 255);
    await db.insert(users).values([
      { name: 'small', avatar: small },
      { name: 'large', avatar: large },
      { name: 'empty', avatar: new Uint8Array(0) },
    ]);
    const rows = await db.select({ avatar: users.avatar }).from(users).orderBy(users.id);
    const same = (a, b) => a instanceof Uint8Array && a.length === b.length && a.every((v, i) => v === b[i]);
    const found = await db.select({ name: users.name }).from(users).where(eq(users.avatar, small));
    return { same: [same(rows[0].avatar, small), same(rows[1].avatar, large), same(rows[2].avatar, new Uint8Array(0))], found };
  });
  assert.deepEqual(got, { same: [true, true, true], found: [{ name: 'small' }] });
});

test('the relational query API: db.query with nested relations', async (t) => {
  const got = await withDrizzle(t, async ({ db, users, posts, plain }) => {
    await db.insert(users).values([{ name: 'Ada' }, { name: 'Grace' }]);
    await db.insert(posts).values([
      { author: 1, title: 'engines' },
      { author: 2, title: 'compilers' },
      { author: 1, title: 'notes' },
    ]);
    const all = await db.query.users.findMany({
      columns: { id: true, name: true },
      with: { posts: { columns: { title: true } } },
      orderBy: (u, { asc }) => asc(u.id),
    });
    const first = await db.query.posts.findFirst({
      where: (p, { eq }) => eq(p.title, 'compilers'),
      with: { writer: { columns: { name: true } } },
    });
    return plain({ all, first });
  });
  assert.deepEqual(got.all, [
    { id: 1, name: 'Ada', posts: [{ title: 'engines' }, { title: 'notes' }] },
    { id: 2, name: 'Grace', posts: [{ title: 'compilers' }] },
  ]);
  assert.deepEqual(got.first, { id: 2, author: 2, title: 'compilers', views: 0, writer: { name: 'Grace' } });
});

test("config.cache: selects are served from Drizzle's cache, writes through Drizzle invalidate it", async (t) => {
  const got = await withDrizzle(t, async ({ database, users, drizzle }) => {
    const { Cache } = await import('drizzle-orm/cache/core');
    class MapCache extends Cache {
      map = new Map();
      strategy() {
        return 'all';
      }
      async get(key) {
        return this.map.get(key);
      }
      async put(key, response) {
        this.map.set(key, response);
      }
      async onMutate() {
        this.map.clear();
      }
    }
    const db = drizzle(database, { cache: new MapCache() });
    const names = async () => (await db.select({ name: users.name }).from(users).orderBy(users.id)).map((r) => r.name);
    await db.insert(users).values({ name: 'a' });
    const first = await names();
    // Written behind the cache's back: the cached select does not see it.
    await database.execute("INSERT INTO users(name) VALUES ('behind')");
    const cached = await names();
    await db.insert(users).values({ name: 'b' });
    return { first, cached, fresh: await names() };
  });
  assert.deepEqual(got, { first: ['a'], cached: ['a'], fresh: ['a', 'behind', 'b'] });
});

test('transaction(): commits, rolls back on tx.rollback() and on a throw, and nests as savepoints', HANGS, async (t) => {
  const got = await withDrizzle(t, async ({ db, users, orm: { asc, TransactionRollbackError } }) => {
    const names = async () => (await db.select({ name: users.name }).from(users).orderBy(asc(users.id))).map((r) => r.name);
    const kept = await db.transaction(async (tx) => {
      await tx.insert(users).values({ name: 'a' });
      await tx.insert(users).values({ name: 'b' });
      return 'kept';
    });
    let rolledBack;
    try {
      await db.transaction(async (tx) => {
        await tx.insert(users).values({ name: 'c' });
        tx.rollback();
      });
    } catch (e) {
      rolledBack = e instanceof TransactionRollbackError;
    }
    const boom = new Error('boom');
    let thrown;
    let seenInside;
    try {
      await db.transaction(async (tx) => {
        await tx.insert(users).values({ name: 'd' });
        seenInside = (await tx.select({ name: users.name }).from(users)).map((r) => r.name);
        throw boom;
      });
    } catch (e) {
      thrown = e === boom;
    }
    const nested = await db.transaction(async (tx) => {
      await tx.insert(users).values({ name: 'e' });
      await tx
        .transaction(async (inner) => {
          await inner.insert(users).values({ name: 'f' });
          inner.rollback();
        })
        .catch(() => {});
      await tx.transaction(async (inner) => {
        await inner.insert(users).values({ name: 'g' });
        await inner.transaction(async (deepest) => deepest.insert(users).values({ name: 'h' }));
      });
      return 'nested';
    });
    return { kept, rolledBack, thrown, seenInside, nested, names: await names() };
  });
  assert.deepEqual(got, {
    kept: 'kept',
    rolledBack: true,
    thrown: true,
    seenInside: ['a', 'b', 'd'],
    nested: 'nested',
    names: ['a', 'b', 'e', 'g', 'h'],
  });
});

test('calls made outside a transaction while it runs wait for it: no interleaving, no deadlock, no lost update', HANGS, async (t) => {
  const got = await withDrizzle(t, async ({ db, database, users, posts, orm: { eq, asc } }) => {
    const pause = () => new Promise((resolve) => setTimeout(resolve, 10));
    const outside = {};
    await db.transaction(async (tx) => {
      await tx.insert(users).values({ name: 'a' });
      outside.drizzle = db.select({ name: users.name }).from(users).orderBy(asc(users.id));
      outside.direct = database.query('SELECT name FROM users ORDER BY id');
      await pause();
      await tx.insert(users).values({ name: 'b' });
    });
    const afterCommit = { drizzle: await outside.drizzle, direct: await outside.direct };
    // A write made outside a transaction that rolls back is not undone with it.
    await db
      .transaction(async (tx) => {
        await tx.insert(users).values({ name: 'c' });
        outside.write = db.insert(users).values({ name: 'outside' });
        await pause();
        tx.rollback();
      })
      .catch(() => {});
    await outside.write;
    const afterRollback = (await db.select({ name: users.name }).from(users).orderBy(asc(users.id))).map((r) => r.name);
    // Ten read-modify-write transactions at once, with a pause between the
    // read and the write: interleaved, they would lose updates.
    await db.insert(posts).values({ author: 1, title: 'counter' });
    await Promise.all(
      Array.from({ length: 10 }, () =>
        db.transaction(async (tx) => {
          const { views } = await tx.select({ views: posts.views }).from(posts).where(eq(posts.id, 1)).get();
          await pause();
          await tx
            .update(posts)
            .set({ views: views + 1 })
            .where(eq(posts.id, 1));
        }),
      ),
    );
    const counter = await db.select({ views: posts.views }).from(posts).get();
    return { afterCommit, afterRollback, counter };
  });
  assert.deepEqual(got, {
    afterCommit: { drizzle: [{ name: 'a' }, { name: 'b' }], direct: [{ name: 'a' }, { name: 'b' }] },
    afterRollback: ['a', 'b', 'outside'],
    counter: { views: 10 },
  });
});

test(
  "errors: Drizzle's DrizzleQueryError around the ResqError; a failed call changes nothing; ambiguous columns are refused",
  HANGS,
  async (t) => {
    const got = await withDrizzle(t, async ({ db, users, drizzle, describe, ResqError, orm: { DrizzleQueryError } }) => {
      await db.insert(users).values({ name: 'a' });
      const failure = async (promise) => {
        try {
          await promise;
          return 'resolved';
        } catch (e) {
          return {
            isDrizzleQueryError: e instanceof DrizzleQueryError,
            cause: describe(e.cause),
            causeIsResqError: e.cause instanceof ResqError,
          };
        }
      };
      const duplicate = await failure(db.insert(users).values({ name: 'a' }));
      const inTransaction = await failure(
        db.transaction(async (tx) => {
          await tx.insert(users).values({ name: 'b' });
          await tx.insert(users).values({ name: 'a' });
        }),
      );
      // RETURNING "id", "id": query() keys rows by name, so the two are one.
      const ambiguous = await failure(db.insert(users).values({ name: 'c' }).returning({ first: users.id, second: users.id }));
      let badDatabase;
      try {
        drizzle('app.db');
      } catch (e) {
        badDatabase = e.code;
      }
      const names = (await db.select({ name: users.name }).from(users).orderBy(users.id)).map((r) => r.name);
      return { duplicate, inTransaction, ambiguous, badDatabase, names };
    });
    assert.equal(got.duplicate.isDrizzleQueryError, true);
    assert.equal(got.duplicate.causeIsResqError, true);
    assert.equal(got.duplicate.cause.code, 'SQLITE_CONSTRAINT_UNIQUE');
    assert.equal(got.inTransaction.cause.code, 'SQLITE_CONSTRAINT_UNIQUE');
    assert.equal(got.ambiguous.cause.code, 'RESQ_UNSUPPORTED');
    assert.equal(got.badDatabase, 'RESQ_BAD_PARAM');
    // The RETURNING statement ran; only its rows could not be mapped.
    assert.deepEqual(got.names, ['a', 'c']);
  },
);

test('TypeScript: the entry type-checks with Drizzle, and a wrong database is an error', () => {
  writeFileSync(
    join(h.app, 'drizzle-uses.ts'),
    `import { eq } from 'drizzle-orm';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { open, type Database } from 'resq-wasm';
import { drizzle } from 'resq-wasm/drizzle';

const users = sqliteTable('users', { id: integer('id').primaryKey(), name: text('name').notNull() });

export async function uses(): Promise<void> {
  const db = drizzle(await open('app.db'), { schema: { users } });
  const client: Database = db.$client;
  const { changes, lastInsertRowid } = await db.insert(users).values({ name: 'Ada' });
  const n: number = changes;
  const id: number | bigint = lastInsertRowid;
  const rows = await db.select().from(users).where(eq(users.id, 1));
  const name: string = rows[0].name;
  const found = await db.query.users.findFirst();
  const total: number = await db.transaction(async (tx) => (await tx.select().from(users)).length);
  console.log(client, n, id, name, found?.name, total);
  // @ts-expect-error: a name is not a Database
  drizzle('app.db');
}
`,
  );
  const tsc = resolve(import.meta.dirname, '../../node_modules/.bin/tsc');
  // Drizzle's own .d.ts files need skipLibCheck (they name every driver's optional peer), as its docs say.
  const args = [
    '--noEmit',
    '--strict',
    '--skipLibCheck',
    '--target',
    'ES2022',
    '--module',
    'ES2022',
    '--moduleResolution',
    'bundler',
    '--lib',
    'ES2022,DOM',
    'drizzle-uses.ts',
  ];
  const r = spawnSync(tsc, args, { cwd: h.app, encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
});
