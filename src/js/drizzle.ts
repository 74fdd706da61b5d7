// resq-wasm/drizzle: Drizzle ORM over a resq-wasm database.
//
//   import { open } from 'resq-wasm';
//   import { drizzle } from 'resq-wasm/drizzle';
//   const db = drizzle(await open('app.db'), { schema });
//   const rows = await db.select().from(users).innerJoin(posts, eq(posts.author, users.id));
//
// A driver of its own rather than Drizzle's `sqlite-proxy`: the proxy runs
// a transaction as `begin`, the callback's statements and `commit` sent
// one by one to the same callback as every other query, so calls made
// outside the transaction meanwhile land inside it. Here a Drizzle
// transaction is one `database.transaction()`: its statements go to `tx`,
// and calls on the database made meanwhile wait until it ends. Nested
// transactions are savepoints inside it.
//
// Drizzle maps a row by column position. `query()` keys rows by column
// name, where two columns of one name (`users.id` and `posts.id` in a
// join) would be one key, so a select is first renamed by position (see
// `valuesOf`). The core entry never imports this file.

import {
  DefaultLogger,
  NoopLogger,
  createTableRelationsHelpers,
  entityKind,
  extractTablesRelationalConfig,
  fillPlaceholders,
  sql,
} from 'drizzle-orm';
// @ts-expect-error: Drizzle's own drivers map rows with it; its .d.ts marks it internal.
import { mapResultRow } from 'drizzle-orm';
import type { DrizzleConfig, Logger, Query, RelationalSchemaConfig, TablesRelationalConfig, ExtractTablesWithRelations } from 'drizzle-orm';
import type { Cache } from 'drizzle-orm/cache/core';
import {
  BaseSQLiteDatabase,
  SQLiteAsyncDialect,
  SQLitePreparedQuery,
  SQLiteSession,
  SQLiteTransaction,
  type PreparedQueryConfig,
  type SelectedFieldsOrdered,
  type SQLiteExecuteMethod,
  type SQLiteTransactionConfig,
} from 'drizzle-orm/sqlite-core';
import type { Database, Transaction } from './database.js';
import { ResqError, badParam } from './errors.js';
import type { Params } from './params.js';
import type { RunResult } from './protocol.js';
import type { Row } from './rows.js';

/** What `drizzle()` returns: Drizzle's async SQLite database; `.run()` gives `{ changes, lastInsertRowid }`. */
export class ResqDrizzleDatabase<
  TSchema extends Record<string, unknown> = Record<string, never>,
  TRelations extends TablesRelationalConfig = ExtractTablesWithRelations<TSchema>,
> extends BaseSQLiteDatabase<'async', RunResult, TSchema, TRelations> {
  static override readonly [entityKind]: string = 'ResqDrizzleDatabase';
}

/**
 * Drizzle over `database` (from `open()`). `config` as for Drizzle's other
 * drivers: `schema` (for `db.query`), `logger`, `casing`, `cache`.
 */
export function drizzle<TSchema extends Record<string, unknown> = Record<string, never>>(
  database: Database,
  config: DrizzleConfig<TSchema> = {},
): ResqDrizzleDatabase<TSchema> & { $client: Database } {
  if (typeof database?.transaction !== 'function') throw badParam('drizzle() takes a Database from open()');
  const dialect = new SQLiteAsyncDialect({ casing: config.casing });
  const logger = config.logger === true ? new DefaultLogger() : config.logger || new NoopLogger();
  let schema: RelationalSchemaConfig<ExtractTablesWithRelations<TSchema>> | undefined;
  if (config.schema) {
    const tables = extractTablesRelationalConfig<ExtractTablesWithRelations<TSchema>>(config.schema, createTableRelationsHelpers);
    schema = { fullSchema: config.schema, schema: tables.tables, tableNamesMap: tables.tableNamesMap };
  }
  const session = new ResqSession<TSchema, ExtractTablesWithRelations<TSchema>>(database, database, dialect, schema, {
    logger,
    cache: config.cache,
  });
  const db = new ResqDrizzleDatabase<TSchema>('async', dialect, session, schema) as ResqDrizzleDatabase<TSchema> & { $client: Database };
  db.$client = database;
  if (config.cache) {
    // As Drizzle's own drivers wire a cache.
    db.$cache = config.cache as never;
    (db.$cache as { invalidate?: unknown }).invalidate = config.cache.onMutate;
  }
  return db;
}

interface Options {
  logger: Logger;
  cache?: Cache;
}

class ResqSession<TFullSchema extends Record<string, unknown>, TSchema extends TablesRelationalConfig> extends SQLiteSession<
  'async',
  RunResult,
  TFullSchema,
  TSchema
> {
  static override readonly [entityKind]: string = 'ResqSession';

  constructor(
    /** Where statements go: the database, or the transaction this session belongs to. */
    private readonly calls: Transaction,
    /** The database, for a session that may begin a transaction; null inside one. */
    private readonly database: Database | null,
    private readonly sqlite: SQLiteAsyncDialect,
    private readonly schema: RelationalSchemaConfig<TSchema> | undefined,
    private readonly options: Options,
  ) {
    super(sqlite);
  }

  prepareQuery(
    query: Query,
    fields: SelectedFieldsOrdered | undefined,
    executeMethod: SQLiteExecuteMethod,
    _isResponseInArrayMode: boolean,
    customResultMapper?: (rows: unknown[][]) => unknown,
    queryMetadata?: { type: 'select' | 'update' | 'delete' | 'insert'; tables: string[] },
    cacheConfig?: ConstructorParameters<typeof SQLitePreparedQuery>[5],
  ): ResqPreparedQuery {
    return new ResqPreparedQuery(this.calls, query, this.options, executeMethod, fields, customResultMapper, queryMetadata, cacheConfig);
  }

  /**
   * One `database.transaction()`. Drizzle's `behavior` is not used: every
   * transaction is `BEGIN IMMEDIATE`, and with one connection to the file
   * `exclusive` would change nothing.
   */
  transaction<T>(
    fn: (tx: SQLiteTransaction<'async', RunResult, TFullSchema, TSchema>) => Promise<T>,
    _config?: SQLiteTransactionConfig,
  ): Promise<T> {
    if (this.database === null) return Promise.reject(badParam('this session belongs to a transaction; use tx.transaction() to nest'));
    return this.database.transaction((tx) => {
      const session = new ResqSession<TFullSchema, TSchema>(tx, null, this.sqlite, this.schema, this.options);
      return fn(new ResqTransaction<TFullSchema, TSchema>('async', this.sqlite, session, this.schema));
    });
  }
}

class ResqTransaction<TFullSchema extends Record<string, unknown>, TSchema extends TablesRelationalConfig> extends SQLiteTransaction<
  'async',
  RunResult,
  TFullSchema,
  TSchema
> {
  static override readonly [entityKind]: string = 'ResqTransaction';

  /** A nested transaction: a savepoint inside this one. */
  override async transaction<T>(fn: (tx: ResqTransaction<TFullSchema, TSchema>) => Promise<T>): Promise<T> {
    const name = `sp${this.nestedIndex}`;
    const tx = new ResqTransaction<TFullSchema, TSchema>('async', this.dialect, this.session, this.schema, this.nestedIndex + 1);
    await this.session.run(sql.raw(`savepoint ${name}`));
    let result: T;
    try {
      result = await fn(tx);
    } catch (err) {
      await this.session.run(sql.raw(`rollback to savepoint ${name}`));
      throw err;
    }
    await this.session.run(sql.raw(`release savepoint ${name}`));
    return result;
  }

  // The base class keeps these internal; the subclass reaches them as Drizzle's own drivers do.
  declare protected dialect: SQLiteAsyncDialect;
  declare protected session: ResqSession<TFullSchema, TSchema>;
}

/** What Drizzle's own drivers use of their prepared queries; its .d.ts marks them internal. */
interface PreparedInternals {
  joinsNotNullableMap?: Record<string, boolean>;
  queryWithCache<T>(sql: string, params: unknown[], run: () => Promise<T>): Promise<T>;
}

type ResqQueryConfig = PreparedQueryConfig & {
  type: 'async';
  run: RunResult;
  all: unknown;
  get: unknown;
  values: unknown[][];
  execute: unknown;
};

class ResqPreparedQuery extends SQLitePreparedQuery<ResqQueryConfig> {
  static override readonly [entityKind]: string = 'ResqPreparedQuery';
  readonly #calls: Transaction;
  readonly #logger: Logger;
  readonly #fields: SelectedFieldsOrdered | undefined;
  readonly #mapper: ((rows: unknown[][]) => unknown) | undefined;
  /** A builder's select, whose columns can be renamed by position. */
  readonly #select: boolean;

  constructor(
    calls: Transaction,
    query: Query,
    { logger, cache }: Options,
    executeMethod: SQLiteExecuteMethod,
    fields: SelectedFieldsOrdered | undefined,
    mapper: ((rows: unknown[][]) => unknown) | undefined,
    queryMetadata: { type: 'select' | 'update' | 'delete' | 'insert'; tables: string[] } | undefined,
    cacheConfig: ConstructorParameters<typeof SQLitePreparedQuery>[5],
  ) {
    super('async', executeMethod, query, cache, queryMetadata, cacheConfig);
    this.#calls = calls;
    this.#logger = logger;
    this.#fields = fields;
    this.#mapper = mapper;
    this.#select = queryMetadata?.type === 'select';
  }

  run(placeholderValues?: Record<string, unknown>): Promise<RunResult> {
    return this.#send(placeholderValues, (sql, params) => this.#calls.execute(sql, params));
  }

  async all(placeholderValues?: Record<string, unknown>): Promise<unknown> {
    if (!this.#fields && !this.#mapper) return this.#send(placeholderValues, (sql, params) => this.#calls.query(sql, params));
    return this.mapAllResult(await this.values(placeholderValues));
  }

  async get(placeholderValues?: Record<string, unknown>): Promise<unknown> {
    if (!this.#fields && !this.#mapper) return (await this.#send(placeholderValues, (sql, params) => this.#calls.query(sql, params)))[0];
    return this.mapGetResult(await this.values(placeholderValues));
  }

  values(placeholderValues?: Record<string, unknown>): Promise<unknown[][]> {
    return this.#send(placeholderValues, (sql, params) =>
      valuesOf(this.#calls, sql, params, this.#select ? this.#fields?.length : undefined, this.#fields?.length),
    );
  }

  override mapAllResult(rows: unknown[][]): unknown {
    if (this.#mapper) return this.#mapper(rows);
    return rows.map((row) => this.#mapRow(row));
  }

  override mapGetResult(rows: unknown[][]): unknown {
    if (rows.length === 0) return undefined;
    if (this.#mapper) return this.#mapper(rows);
    return this.#mapRow(rows[0]);
  }

  #mapRow(row: unknown[]): unknown {
    return mapResultRow(this.#fields, row, (this as unknown as PreparedInternals).joinsNotNullableMap);
  }

  /** Fills the placeholders, logs, and runs through Drizzle's cache (which wraps errors in `DrizzleQueryError`). */
  #send<T>(placeholderValues: Record<string, unknown> | undefined, run: (sql: string, params: Params) => Promise<T>): Promise<T> {
    const { sql, params } = this.getQuery();
    const values = fillPlaceholders(params, placeholderValues ?? {});
    this.#logger.logQuery(sql, values);
    return (this as unknown as PreparedInternals).queryWithCache(sql, values, () => run(sql, values as Params));
  }
}

/**
 * A statement's rows as arrays, in column order. `renamed` (a builder's
 * select, with its column count) is run inside a CTE whose column list
 * names the columns `c0`, `c1`, … by position: SQLite keeps the select's
 * order (it drops a subquery's ORDER BY only when the outer query has its
 * own or joins), and the names are distinct and never integer-like, which
 * JS would move to the front of an object. Any other statement (one with
 * RETURNING, raw SQL) is taken in key order, and refused where that order
 * cannot be trusted.
 */
async function valuesOf(
  calls: Transaction,
  text: string,
  params: Params,
  renamed: number | undefined,
  columns: number | undefined,
): Promise<unknown[][]> {
  if (renamed) {
    const names = Array.from({ length: renamed }, (_, i) => `"c${i}"`);
    const rows = await calls.query(`with "resq_rows"(${names.join(', ')}) as (${text}) select * from "resq_rows"`, params);
    return rows.map((row) => names.map((_, i) => row[`c${i}`]));
  }
  const rows = await calls.query(text, params);
  return rows.map((row) => inKeyOrder(row, columns));
}

/** A canonical array index ("0", "42"): JS puts such keys first in any object. */
const INDEX_KEY = /^(0|[1-9][0-9]*)$/;

function inKeyOrder(row: Row, columns: number | undefined): unknown[] {
  const keys = Object.keys(row);
  if (
    (columns !== undefined && keys.length !== columns) ||
    (keys.length > 1 && keys.some((k) => INDEX_KEY.test(k) && Number(k) < 2 ** 32 - 1))
  ) {
    throw new ResqError(
      'RESQ_UNSUPPORTED',
      `resq-wasm/drizzle cannot tell this statement's result columns apart (${keys.join(', ')}): two share a name, or a name is an integer; give them distinct names`,
    );
  }
  return keys.map((k) => row[k]);
}
