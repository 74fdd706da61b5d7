// ResqError: the one error type the package rejects with.

/** The codes of API.md. SQLite's own use its extended names (`SQLITE_…`). */
export type ResqErrorCode =
  | 'RESQ_BAD_PARAM'
  | 'RESQ_CLOSED'
  | 'RESQ_LOCKED'
  | 'RESQ_QUOTA'
  | 'RESQ_UNSUPPORTED'
  | 'RESQ_BAD_KEY'
  | 'RESQ_RANGE'
  | 'RESQ_NOT_FOUND'
  | 'RESQ_WORKER_DIED'
  | 'RESQ_TIMEOUT'
  | `SQLITE_${string}`;

export class ResqError extends Error {
  /** `RESQ_…`, or SQLite's extended result name such as `SQLITE_CONSTRAINT_UNIQUE`. */
  readonly code: ResqErrorCode;
  /** SQLite's extended result code, where there is one. */
  readonly errno?: number;

  constructor(code: ResqErrorCode, message: string, errno?: number) {
    super(message);
    this.name = 'ResqError';
    this.code = code;
    if (errno !== undefined) this.errno = errno;
  }
}

export function badParam(message: string): ResqError {
  return new ResqError('RESQ_BAD_PARAM', message);
}
