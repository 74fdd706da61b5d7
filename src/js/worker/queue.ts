// This worker's queue: the rules of turns.ts over its one connection.

import { db } from './engine.js';
import { Turns, type Work } from './turns.js';

export { EXPORT_IDLE_MS } from './turns.js';

export class Queue extends Turns {
  constructor(work: Work) {
    super(work, () => db.conn);
  }
}
