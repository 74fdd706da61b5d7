// What a stored value is, from its first bytes: the inspector previews a
// BLOB by what it holds, not by what a column is called. The signatures are
// the formats' own (their specifications' magic numbers); 16 bytes suffice
// for every one here.

/** How the inspector shows a value of a sniffed type. */
export type Kind = 'image' | 'audio' | 'video' | 'other';

export interface Sniffed {
  /** A MIME type, or '' when the bytes match nothing known. */
  type: string;
  kind: Kind;
}

/** Bytes to read from a value's start for {@link sniff}. */
export const HEAD_BYTES = 16;

const ascii = (b: Uint8Array, at: number, s: string) => [...s].every((c, i) => b[at + i] === c.charCodeAt(0));
const bytes = (b: Uint8Array, at: number, sig: number[]) => sig.every((x, i) => b[at + i] === x);

/** [test, MIME type, kind], first match wins. */
const SIGNATURES: [(b: Uint8Array) => boolean, string, Kind][] = [
  [(b) => bytes(b, 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), 'image/png', 'image'],
  [(b) => bytes(b, 0, [0xff, 0xd8, 0xff]), 'image/jpeg', 'image'],
  [(b) => ascii(b, 0, 'GIF87a') || ascii(b, 0, 'GIF89a'), 'image/gif', 'image'],
  [(b) => ascii(b, 0, 'RIFF') && ascii(b, 8, 'WEBP'), 'image/webp', 'image'],
  [(b) => ascii(b, 0, 'BM'), 'image/bmp', 'image'],
  [(b) => ascii(b, 4, 'ftypavif') || ascii(b, 4, 'ftypavis'), 'image/avif', 'image'],
  [(b) => ascii(b, 4, 'ftypheic') || ascii(b, 4, 'ftypheix') || ascii(b, 4, 'ftypmif1'), 'image/heic', 'image'],
  [(b) => ascii(b, 0, 'RIFF') && ascii(b, 8, 'WAVE'), 'audio/wav', 'audio'],
  [(b) => ascii(b, 0, 'ID3') || (b[0] === 0xff && (b[1] & 0xe6) === 0xe2), 'audio/mpeg', 'audio'],
  [(b) => ascii(b, 0, 'OggS'), 'audio/ogg', 'audio'],
  [(b) => ascii(b, 0, 'fLaC'), 'audio/flac', 'audio'],
  [(b) => ascii(b, 4, 'ftypM4A'), 'audio/mp4', 'audio'],
  [(b) => bytes(b, 0, [0x1a, 0x45, 0xdf, 0xa3]), 'video/webm', 'video'],
  [(b) => ascii(b, 4, 'ftyp'), 'video/mp4', 'video'],
  [(b) => ascii(b, 0, '%PDF-'), 'application/pdf', 'other'],
  [(b) => ascii(b, 0, 'SQLite format 3\0'), 'application/vnd.sqlite3', 'other'],
  [(b) => bytes(b, 0, [0x50, 0x4b, 0x03, 0x04]), 'application/zip', 'other'],
  [(b) => bytes(b, 0, [0x1f, 0x8b]), 'application/gzip', 'other'],
];

/** The type of a value that starts with `head` (its first {@link HEAD_BYTES} bytes, or all of a shorter one). */
export function sniff(head: Uint8Array): Sniffed {
  for (const [test, type, kind] of SIGNATURES) if (test(head)) return { type, kind };
  return { type: '', kind: 'other' };
}

/** Bytes as hex pairs, `89 50 4e 47`. */
export const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(' ');
