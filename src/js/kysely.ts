// resq-wasm/kysely: Kysely over a resq-wasm database.
//
//   import { Kysely } from 'kysely';
//   import { open } from 'resq-wasm';
//   import { ResqDialect } from 'resq-wasm/kysely';
//   const db = new Kysely<DB>({ dialect: new ResqDialect({ database: await open('app.db') }) });
//
// Kysely's own SQLite compiler and introspector write the SQL; this file
// runs it. A statement that returns rows goes to `query`, any other to
// `execute`, whose figures become `numAffectedRows` and `insertId`. A Kysely
// transaction is one `database.transaction()`, held open from
// `beginTransaction` until `commitTransaction` or `rollbackTransaction`
// settles its callback. Kysely's connections are views of the one
// `Database`, which orders the calls itself: while a transaction is open,
// every call made outside it (another connection, the database used
// directly, another tab) waits until it ends, so nothing interleaves with
// it. The core entry never imports this file.

import {
  type CompiledQuery,
  DeleteQueryNode,
  IdentifierNode,
  InsertQueryNode,
  RawNode,
  SelectQueryNode,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  UpdateQueryNode,
  createQueryId,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
} from 'kysely';
import type { Database, Transaction } from './database.js';
import { ResqError, badParam } from './errors.js';
import type { Params } from './params.js';

export interface ResqDialectConfig {
  /**
   * A `Database` from `open()`, or a function that opens one (called once,
   * when Kysely first needs it). `kysely.destroy()` closes it.
   */
  database: Database | (() => Promise<Database>);
}

/** The dialect: `new Kysely<DB>({ dialect: new ResqDialect({ database }) })`. */
export class ResqDialect implements Dialect {
  readonly #database: ResqDialectConfig['database'];

  constructor(config: ResqDialectConfig) {
    const database = config?.database;
    if (typeof database !== 'function' && typeof (database as Database | undefined)?.transaction !== 'function') {
      throw badParam('ResqDialect takes { database }: a Database from open(), or a function that returns a promise of one');
    }
    this.#database = database;
  }

  createAdapter(): DialectAdapter {
    return new ResqAdapter();
  }

  createDriver(): Driver {
    return new ResqDriver(this.#database);
  }

  // biome-ignore lint/suspicious/noExplicitAny: Kysely's Dialect interface declares it so
  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }

  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }
}

class ResqAdapter extends SqliteAdapter {
  /**
   * SQLite's DDL is transactional: a migration that fails leaves nothing
   * behind, since Kysely's Migrator then runs each run in one transaction.
   * Its migration lock can stay the stock no-op: the Migrator reads which
   * migrations ran inside that transaction, and transactions never
   * interleave, even between tabs.
   */
  override get supportsTransactionalDdl(): boolean {
    return true;
  }

  /**
   * Connections are views of one `Database`, which keeps calls in order and
   * makes calls outside a transaction wait for it; Kysely need not hand out
   * one connection at a time.
   */
  override get supportsMultipleConnections(): boolean {
    return true;
  }
}

class ResqDriver implements Driver {
  readonly #source: ResqDialectConfig['database'];
  #database: Database | undefined;

  constructor(source: ResqDialectConfig['database']) {
    this.#source = source;
  }

  async init(): Promise<void> {
    this.#database = typeof this.#source === 'function' ? await this.#source() : this.#source;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new ResqConnection(this.#database!);
  }

  async releaseConnection(): Promise<void> {}

  beginTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as ResqConnection).begin();
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as ResqConnection).end(true);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as ResqConnection).end(false);
  }

  savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return savepointCommand(connection, 'savepoint', name, compile);
  }

  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return savepointCommand(connection, 'rollback to', name, compile);
  }

  releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return savepointCommand(connection, 'release', name, compile);
  }

  async destroy(): Promise<void> {
    await this.#database?.close();
  }
}

/** `SAVEPOINT name` and its kin, the name quoted by Kysely's compiler. */
async function savepointCommand(
  connection: DatabaseConnection,
  command: string,
  name: string,
  compile: QueryCompiler['compileQuery'],
): Promise<void> {
  const node = RawNode.createWithChildren([RawNode.createWithSql(`${command} `), IdentifierNode.create(name)]);
  await connection.executeQuery(compile(node, createQueryId()));
}

/** What a transaction's callback rejects with when Kysely rolls it back. */
const ROLLBACK = Symbol('rollback');

/** A transaction this connection holds open. */
interface Held {
  tx: Transaction;
  /** Settles the callback `database.transaction()` waits on: commit or roll back. */
  finish(commit: boolean): void;
  /** `database.transaction()` itself: settles once the transaction has ended. */
  ended: Promise<unknown>;
}

class ResqConnection implements DatabaseConnection {
  readonly #database: Database;
  #held: Held | null = null;

  constructor(database: Database) {
    this.#database = database;
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const calls: Transaction = this.#held?.tx ?? this.#database;
    // Always an array, even empty: exactly one statement, never a script.
    const params = compiled.parameters as Params;
    if (returnsRows(compiled)) return { rows: (await calls.query(compiled.sql, params)) as R[] };
    const { changes, lastInsertRowid } = await calls.execute(compiled.sql, params);
    return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
  }

  // biome-ignore lint/correctness/useYield: refuses before the first row, with a ResqError
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    // A stream would have to hold the whole result anyway: `query` returns
    // all rows at once.
    throw new ResqError('RESQ_UNSUPPORTED', 'resq-wasm/kysely cannot stream a query: use execute(), or page with limit and offset');
  }

  async begin(): Promise<void> {
    let finish!: (commit: boolean) => void;
    const decided = new Promise<void>((resolve, reject) => (finish = (commit) => (commit ? resolve() : reject(ROLLBACK))));
    let begun!: (tx: Transaction) => void;
    const started = new Promise<Transaction>((resolve) => (begun = resolve));
    const ended = this.#database.transaction((tx) => {
      begun(tx);
      return decided;
    });
    // `ended` settles first only when the transaction could not begin.
    const tx = (await Promise.race([started, ended])) as Transaction;
    this.#held = { tx, finish, ended };
  }

  async end(commit: boolean): Promise<void> {
    const held = this.#held;
    // Kysely rolls back after a failed commit, which has already ended it.
    if (held === null) return;
    this.#held = null;
    held.finish(commit);
    try {
      await held.ended;
    } catch (err) {
      if (err !== ROLLBACK) throw err;
    }
  }
}

/** Writes that return no rows, when Kysely has only the SQL text (`sql`…``, `CompiledQuery.raw`). */
const NO_ROWS = /^\s*(insert|update|delete|replace|create|drop|alter)\b/i;

/**
 * Whether a statement returns rows (run with `query`) or figures (with
 * `execute`). Either runs any statement; a wrong guess costs only the rows
 * or the figures, so raw SQL goes to `query` unless it plainly writes.
 */
function returnsRows({ query, sql }: CompiledQuery): boolean {
  if (SelectQueryNode.is(query)) return true;
  if (InsertQueryNode.is(query) || UpdateQueryNode.is(query) || DeleteQueryNode.is(query)) return query.returning !== undefined;
  if (RawNode.is(query)) return !NO_ROWS.test(sql) || /\breturning\b/i.test(sql);
  return false;
}
