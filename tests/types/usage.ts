// Every public name of resq-wasm, used as an application would, type-checked
// by tests/e2e/package.test.mjs with `tsc --noEmit --strict` in a folder
// where the packed package is installed. Never run: it only has to compile.
// The `@ts-expect-error` lines are uses the types must refuse (tsc fails if
// one of them compiles).
//
// When a public method or type is added, use it here.

import {
  DEFAULT_BLOB_TRANSFER_THRESHOLD,
  DEFAULT_TRANSACTION_TIMEOUT,
  type Database,
  ResqError,
  type StagedBlob,
  type Transfer,
  importDatabase,
  open,
  transfer,
  type BlobRange,
  type BlobReads,
  type ImportSource,
  type OpenOptions,
  type Params,
  type ResqErrorCode,
  type Row,
  type RunResult,
  type SqlValue,
  type Storage,
  type Subscription,
  type Transaction,
  type WatchOptions,
} from 'resq-wasm';

declare const file: File;
declare function show(...values: unknown[]): void;

export async function opening(): Promise<Database> {
  const storage: Storage = 'opfs';
  const options: OpenOptions = { storage, blobTransferThreshold: DEFAULT_BLOB_TRANSFER_THRESHOLD };
  const threshold: number = DEFAULT_BLOB_TRANSFER_THRESHOLD;
  const mem: Database = await open(':memory:', {
    storage: 'memory',
    blobTransferThreshold: Infinity,
    transactionTimeout: DEFAULT_TRANSACTION_TIMEOUT * 2,
  });
  const where: Storage = mem.storage;
  show(where);
  // @ts-expect-error: db.storage is read-only
  mem.storage = 'idb';
  const inIdb = await open('x.db', { storage: 'idb' });
  await inIdb.close();
  await mem.close();
  // @ts-expect-error: 'default' is what leaving storage out means, not a value
  await open('x.db', { storage: 'default' });
  // @ts-expect-error: an option the package does not know
  await open('x.db', { storge: 'memory' });
  show(threshold);
  // @ts-expect-error: storage is 'opfs', 'idb' or 'memory'
  await open('x.db', { storage: 'disk' });
  // @ts-expect-error: a name is a string
  await open(42);
  return open('app.db', options);
}

export async function statements(db: Database): Promise<void> {
  const run: RunResult = await db.execute('INSERT INTO t(a, b) VALUES (?, ?)', ['x', 1]);
  const changes: number = run.changes;
  const id: number | bigint = run.lastInsertRowid;
  await db.execute('CREATE TABLE IF NOT EXISTS t(a, b); CREATE INDEX IF NOT EXISTS t_a ON t(a)');
  const rows: Row[] = await db.query('SELECT * FROM t WHERE a = :a', { a: 'x' });
  const cell: null | number | bigint | string | Uint8Array = rows[0].a;
  const typed = await db.query<{ id: number; name: string }>('SELECT id, name FROM t');
  const name: string = typed[0].name;
  const json: Uint8Array = await db.queryBytes('SELECT ?', [new Uint8Array(4)]);
  const values: SqlValue[] = [1, 2n, null, true, 's', new Int16Array(2), new ArrayBuffer(8), transfer(new Uint8Array(2)), file];
  const positional: Params = values;
  const named: Params = { a: 1, b: 'two' };
  const batch: RunResult = await db.executeBatch('INSERT INTO t(a) VALUES (?)', [positional, [2], named]);
  show(changes, id, cell, name, json, batch);

  // @ts-expect-error: undefined is not a SQLite value
  await db.query('SELECT ?', [undefined]);
  // @ts-expect-error: lastInsertRowid may be a bigint
  const onlyNumber: number = run.lastInsertRowid;
  // @ts-expect-error: a cell is not always a string
  const onlyString: string = rows[0].a;
  // @ts-expect-error: executeBatch takes a list of parameter sets
  await db.executeBatch('INSERT INTO t(a) VALUES (?)', [1, 2]);
  // @ts-expect-error: queryBytes gives bytes, not rows
  const notRows: Row[] = await db.queryBytes('SELECT 1');
  show(onlyNumber, onlyString, notRows);
}

export async function transactions(db: Database): Promise<number> {
  return db.transaction(async (tx: Transaction) => {
    await tx.execute('DELETE FROM t');
    await tx.executeBatch('INSERT INTO t(a) VALUES (?)', [[1]]);
    const bytes: Uint8Array = await tx.queryBytes('SELECT 1');
    const head: Uint8Array = await tx.readBlob('media', 'data', 1, { offset: 0, length: 16 });
    const stream: ReadableStream<Uint8Array> = tx.blobStream('media', 'data', 1n);
    const whole: Blob = await tx.blobFile('media', 'data', 1, { type: 'video/webm' });
    await stream.cancel();
    const rows: Row[] = await tx.query('SELECT 1 AS one');
    show(bytes, head, whole);
    return rows.length;
  });
}

export async function blobReads(db: Database): Promise<void> {
  const range: BlobRange = { offset: 1024, length: 64 };
  const reads: BlobReads = db;
  const head: Uint8Array = await reads.readBlob('media', 'data', 1, range);
  const all: Uint8Array = await db.readBlob('media', 'data', 1n);
  // (`for await` over a ReadableStream needs TypeScript's DOM.AsyncIterable lib.)
  const reader = db.blobStream('media', 'data', 1, { offset: 0, chunkSize: 1 << 20 }).getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) show(r.value.byteLength);
  const video: Blob = await db.blobFile('media', 'data', 1, { type: 'video/mp4' });
  show(head, all, URL.createObjectURL(video));
  // @ts-expect-error: blobStream is not a promise
  await db.blobStream('media', 'data', 1).then(show);
}

export async function staging(db: Database, recording: ReadableStream<Uint8Array>): Promise<void> {
  const staged: StagedBlob = await db.stageBlob();
  await staged.append(new Uint8Array(8));
  await staged.append(new ArrayBuffer(8));
  await staged.append(new DataView(new ArrayBuffer(8)));
  await staged.append(file);
  await recording.pipeTo(staged.writable);
  const size: number = staged.size;
  await db.execute('INSERT INTO media(data) VALUES (?)', [staged]);
  const spare = await db.stageBlob();
  await spare.discard();
  show(size);
  // @ts-expect-error: a chunk is bytes or a Blob
  await staged.append('text');
}

export async function watching(db: Database): Promise<void> {
  const options: WatchOptions = { onError: (e: ResqError) => show(e.code) };
  const sub: Subscription<Row[]> = db.watch('SELECT id, name FROM t', [], (rows: Row[]) => show(rows.length), options);
  await sub.ready;
  sub();
  const typed = db.watch<{ n: number }>('SELECT count(*) AS n FROM t', [], (rows) => show(rows[0].n));
  typed();
  const bytes: Subscription<Uint8Array> = db.watchBytes('SELECT * FROM t', [], (json: Uint8Array) => show(json.byteLength));
  bytes();
  for await (const rows of db.watch('SELECT count(*) AS n FROM t')) {
    show(rows[0].n);
    break;
  }
  for await (const json of db.watchBytes('SELECT 1')) {
    show(json.byteLength);
    break;
  }
  // @ts-expect-error: a watchBytes callback gets bytes, not rows
  db.watchBytes('SELECT 1', [], (rows: Row[]) => show(rows));
}

export async function backups(db: Database, download: Response, out: FileSystemFileHandle): Promise<void> {
  const file: ReadableStream<Uint8Array> = db.export();
  await file.pipeTo(await out.createWritable());
  const sources: ImportSource[] = [new Blob([]), new File([], 'backup.db'), download.body!, db.export()];
  for (const source of sources) await importDatabase('media.db', source);
  // biome-ignore lint/suspicious/noConfusingVoidType: pins the declared Promise<void>
  const done: void = await importDatabase(db, await out.getFile());
  show(done);
  // @ts-expect-error: export is not a promise
  await db.export().then(show);
  // @ts-expect-error: a source is a Blob, a File or a stream, not bytes
  await importDatabase('media.db', new Uint8Array(8));
  // @ts-expect-error: a target is a name or a Database
  await importDatabase(42, new Blob([]));
}

export async function transferring(db: Database): Promise<void> {
  const marker: Transfer = transfer(new Uint8Array(1024));
  const fromBuffer: Transfer = transfer(new ArrayBuffer(16));
  const view: Uint8Array = marker.bytes;
  await db.execute('INSERT INTO media(data) VALUES (?)', [marker]);
  show(fromBuffer, view);
  // @ts-expect-error: transfer takes bytes
  transfer('text');
}

const CODES: ResqErrorCode[] = [
  'RESQ_BAD_PARAM',
  'RESQ_CLOSED',
  'RESQ_LOCKED',
  'RESQ_QUOTA',
  'RESQ_UNSUPPORTED',
  'RESQ_BAD_KEY',
  'RESQ_RANGE',
  'RESQ_NOT_FOUND',
  'RESQ_WORKER_DIED',
  'RESQ_TIMEOUT',
  'SQLITE_CONSTRAINT_UNIQUE',
  'SQLITE_BUSY',
];

export async function errors(db: Database): Promise<void> {
  try {
    await db.execute('SELEC 1');
  } catch (e) {
    if (e instanceof ResqError) {
      const code: ResqErrorCode = e.code;
      const errno: number | undefined = e.errno;
      const asError: Error = e;
      const known: boolean = CODES.includes(e.code);
      if (e.code === 'RESQ_LOCKED' || e.code === 'SQLITE_CONSTRAINT_UNIQUE') show(code, errno, asError.message, e.name, known);
      // @ts-expect-error: not one of the documented codes
      if (e.code === 'NOT_A_CODE') show(code);
    }
  }
  await db.close();
  // @ts-expect-error: errno is read-only
  new ResqError('RESQ_CLOSED', 'closed').errno = 1;
}
