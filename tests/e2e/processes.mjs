// The browsers' processes, read from Linux's /proc: a browser's process
// tree (to kill it whole) and its resident memory (to bound it).
import { readdirSync, readFileSync } from 'node:fs';

/** The pids of `pid` and all its descendants, read from /proc. */
export function processTree(pid) {
  const children = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Field 4 of /proc/<pid>/stat is the parent pid (after the command in parentheses).
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) ?? []));
  return tree;
}

/** The resident bytes of `pids` together (VmRSS, from /proc). */
export function residentBytes(pids) {
  let kb = 0;
  for (const p of new Set(pids)) {
    try {
      kb += Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      // The process ended while we looked.
    }
  }
  return kb * 1024;
}
