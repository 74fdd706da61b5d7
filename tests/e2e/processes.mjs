// The browsers' and servers' processes, read from Linux's /proc: a
// browser's process tree (to kill it whole), its resident memory (to bound
// it) and the ports a process listens on. A server the tests start listens
// on a port it picks itself (port 0) and the tests read it here: a port
// picked free and handed over can be taken meanwhile by any other bind(0)
// on the machine, such as another test file's server.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { basename } from 'node:path';

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

/**
 * The TCP ports `pid` listens on: its sockets (the links in
 * /proc/<pid>/fd) that /proc/<pid>/net/tcp and tcp6 list as listening.
 */
export function listeningPorts(pid) {
  const inodes = new Set();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (socket) inodes.add(socket[1]);
      } catch {
        // The descriptor closed while we looked.
      }
    }
  } catch {
    return [];
  }
  const ports = new Set();
  for (const table of ['tcp', 'tcp6']) {
    let text = '';
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st … inode: state 0A is LISTEN.
      const f = line.trim().split(/\s+/);
      if (f[3] === '0A' && inodes.has(f[9])) ports.add(Number.parseInt(f[1].split(':')[1], 16));
    }
  }
  return [...ports];
}

/**
 * The port `child` or a process under it listens on, once it does: see
 * until().
 */
export const portOf = (child, what, output, seconds) =>
  until(() => processTree(child.pid).flatMap(listeningPorts)[0], child, what, output, seconds);

/**
 * Polls `found()` every 50 ms until it gives a value, and resolves with it;
 * rejects if `child` exits first, or after `seconds`, with `what` and the
 * last lines of `output()` (what the child has written).
 */
export async function until(found, child, what, output, seconds = 60) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = found();
    if (value) return value;
    const tail = () => output().trim().split('\n').slice(-10).join('\n');
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${what}: ${basename(child.spawnfile)} exited (${child.exitCode ?? child.signalCode}) first:\n${tail()}`);
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${seconds} s:\n${tail()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
