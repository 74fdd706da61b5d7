// `query()` results back into row objects: one JSON.parse, then the fix-ups
// of src/codec/wire.rs (the layout in protocol.ts).

import { FIX_BIGINT, FIX_BLOB_OWN, type QueryResult } from './protocol.js';

/** A result row: column name → value (BLOBs as `Uint8Array`, big integers as `bigint`). */
export type Row = Record<string, null | number | bigint | string | Uint8Array>;

const decoder = new TextDecoder();

export function decodeRows(r: QueryResult): Row[] {
  const rows = JSON.parse(decoder.decode(r.json)) as Row[];
  const f = r.fixups;
  if (!f) return rows;
  const columns = r.columns!;
  for (let i = 0; i < f.length; i += 5) {
    const row = rows[f[i]];
    const name = columns[f[i + 1]];
    const kind = f[i + 2];
    if (kind === FIX_BIGINT) row[name] = BigInt(row[name] as string);
    else if (kind === FIX_BLOB_OWN) row[name] = r.buffers![f[i + 3]];
    else row[name] = r.side!.slice(f[i + 3], f[i + 3] + f[i + 4]);
  }
  return rows;
}
