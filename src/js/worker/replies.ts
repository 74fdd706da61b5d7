// Replies as they leave the worker: errors as plain objects, results with
// their buffers moved rather than copied, and the packed form in which a
// following tab's answer is recorded with its write (see `record.ts`).

import type { QueryResult, WireError } from '../protocol.js';

export function toWireError(err: unknown): WireError {
  if (err && typeof err === 'object' && typeof (err as WireError).code === 'string') return err as WireError;
  // Anything else came from JS glue handed a value it cannot take.
  return { code: 'RESQ_BAD_PARAM', message: err instanceof Error ? err.message : String(err) };
}

/** Moves a `query` result's buffers instead of copying them. */
export function transferResult(r: QueryResult, transfer: Transferable[]): void {
  transfer.push(r.json.buffer);
  if (r.fixups) transfer.push(r.fixups.buffer, r.side!.buffer, ...r.buffers!.map((b) => b.buffer));
}
