// Shared glue for the Playwright tests: run a snippet in the page with the
// package imported, and bring its results back as plain JSON.
//
//   const r = await inPage(page, async ({ open, plain }, arg) => { … }, arg);
//   const rows = await withDb(page, dbName(t), async (db, { plain }) => plain(await db.query('SELECT 1 AS x')));
//
// The snippet is sent as source text, so it can use only its arguments: the
// package's exports plus the helpers below, and `arg` (JSON-able).

/**
 * Runs `body(api, arg)` in the page, where `api` is the package's exports plus
 * `plain` (a value → JSON-able, see below), `outcome` (a promise →
 * `{ ok, value }` or `{ ok: false, error }`), `probe(name, what, value?)` (asks the
 * probe worker of database `name`; see tests/e2e/probe-worker.js), and for
 * media `mediaFile(size, seed, head?)` (a `File` of `size` known bytes,
 * `(i * 7 + seed) & 255`, its first bytes `head` if given) and `sha(x)` (the
 * SHA-256 hex of a `Blob`, buffer or view), `seeded(seed)` (a seeded random
 * number function, [0, 1)).
 */
export function inPage(page, body, arg = null) {
  return page.evaluate(
    async ([src, arg]) => {
      const lib = await import('resq-wasm');
      // Tags what JSON cannot carry: bigint, -0, bytes. Rows and arrays recurse.
      const plain = (v) => {
        if (typeof v === 'bigint') return { bigint: String(v) };
        if (typeof v === 'number' && Object.is(v, -0)) return { number: '-0' };
        if (typeof v === 'number' && !Number.isFinite(v)) return { number: String(v) };
        if (v instanceof Uint8Array) return { bytes: Array.from(v) };
        if (Array.isArray(v)) return v.map(plain);
        if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
        return v;
      };
      const describe = (e) =>
        e && typeof e === 'object'
          ? {
              isResqError: e instanceof lib.ResqError,
              isError: e instanceof Error,
              name: e.name,
              code: e.code,
              errno: e.errno,
              message: e.message,
            }
          : { thrown: String(e) };
      const outcome = async (p) => {
        try {
          return { ok: true, value: plain(await p) };
        } catch (e) {
          return { ok: false, error: describe(e) };
        }
      };
      // Asks the probe worker (harness `start({ probe })`) of database `name`.
      const probe = (name, what, value) =>
        new Promise((resolve, reject) => {
          const channel = new BroadcastChannel('resq-wasm-probe');
          const id = Math.random();
          channel.onmessage = ({ data }) => {
            if (data.id !== id) return;
            channel.close();
            // null: the probe worker has no wasm instance to look at.
            if (data.value === null) reject(new Error(`the probe worker of ${name} could not answer ${what}: it saw no wasm instance`));
            else resolve(data.value);
          };
          channel.postMessage({ probe: what, worker: `resq-wasm: ${name}`, id, value });
        });
      const mediaFile = (size, seed, head = []) => {
        const bytes = new Uint8Array(size);
        for (let i = 0; i < size; i++) bytes[i] = (i * 7 + seed) & 255;
        bytes.set(head);
        return new File([bytes], `media-${seed}.bin`);
      };
      const sha = async (x) => {
        const buf = x instanceof Blob ? await x.arrayBuffer() : x;
        return Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', buf)), (b) => b.toString(16).padStart(2, '0')).join('');
      };
      // A seeded xorshift32: `seeded(seed)()` gives the same numbers in [0, 1) for the same seed.
      const seeded = (seed) => {
        let x = seed >>> 0 || 1;
        return () => {
          x ^= x << 13;
          x >>>= 0;
          x ^= x >>> 17;
          x ^= x << 5;
          x >>>= 0;
          return x / 4294967296;
        };
      };
      const fn = (0, eval)(`(${src})`);
      return fn({ ...lib, plain, describe, outcome, probe, mediaFile, sha, seeded }, arg);
    },
    [body.toString(), arg],
  );
}

/**
 * Opens `name` (with `options`), runs `body(db, api, arg)` and closes the
 * database whatever happens.
 */
export function withDb(page, name, body, { options, arg = null } = {}) {
  return inPage(
    page,
    async (api, { name, options, src, arg }) => {
      const db = await api.open(name, options);
      try {
        return await (0, eval)(`(${src})`)(db, api, arg);
      } finally {
        await db.close();
      }
    },
    { name, options, src: body.toString(), arg },
  );
}

let counter = 0;

/** A database name no other test uses: a counter plus the test's name. */
export function dbName(t, suffix = 'db') {
  const slug = t.name
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 40);
  counter += 1;
  return `${counter}-${slug}.${suffix}`;
}

/** What `plain()` makes of a Uint8Array, for expected values. */
export const bytes = (...b) => ({ bytes: b });

/**
 * Makes `page` keep the workers it starts in `window.workers`, so a test can
 * stop one the way a browser under memory pressure does: `terminate()`,
 * with no message to anyone. Call before the page opens a database.
 */
export function keepWorkers(page) {
  return page.evaluate(() => {
    const Base = Worker;
    window.workers = [];
    window.Worker = class extends Base {
      constructor(...args) {
        super(...args);
        window.workers.push(this);
      }
    };
  });
}

/**
 * Opens `name` in `page` as `globalThis.db` (with `options`), and gives the
 * page a wait helper, `until(cond, ms)`.
 */
export function openIn(page, name, options = {}) {
  return inPage(
    page,
    async ({ open }, { name, options }) => {
      globalThis.until = async (cond, ms = 10_000) => {
        const t0 = performance.now();
        while (!(await cond())) {
          if (performance.now() - t0 > ms) throw new Error(`gave up waiting after ${ms} ms`);
          await new Promise((r) => setTimeout(r, 10));
        }
      };
      globalThis.db = await open(name, options);
      return true;
    },
    { name, options },
  );
}
