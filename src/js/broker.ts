// The port broker (`resq-wasm/broker`), a SharedWorker every tab of an
// origin connects to. It only introduces tabs: the tab that leads a
// database registers here, and a tab that wants the database sends a
// MessagePort, which the broker hands to the leader. After that the two
// talk directly (the port ends in the leader's database worker); nothing
// of the database passes through here. A SharedWorker cannot hold the
// database itself: OPFS sync access handles exist only in dedicated workers.
//
// A leader is forgotten when it resigns, or when the Web Lock its worker
// holds for its lifetime is freed (the tab closed or crashed): followers
// waiting for a leader stay queued until the next one registers. What it
// knows is lost if the browser starts it again (WebKitGTK does when the tab
// that started it closes): it says so as it starts (BROKER_CHANNEL),
// acknowledges each registration and request, and answers pings, so tabs
// find out and tell it again (election.ts).

import { BROKER_CHANNEL, type BrokerRequest } from './protocol.js';

interface SharedScope {
  onconnect: ((e: MessageEvent) => void) | null;
}

interface Leader {
  port: MessagePort;
  /** The leader worker's lifetime lock. */
  lock: string;
}

const leaders = new Map<string, Leader>();
/** Ports of followers waiting for a database's next leader, in arrival order. */
const waiting = new Map<string, { port: MessagePort; lock: string; reply: MessagePort }[]>();

(self as unknown as SharedScope).onconnect = (e) => {
  const tab = e.ports[0];
  tab.onmessage = ({ data, ports }: MessageEvent<BrokerRequest>) => {
    if (data?.kind === 'lead') {
      tab.postMessage({ kind: 'led', name: data.name, lock: data.lock });
      lead(data.name, { port: tab, lock: data.lock });
    } else if (data?.kind === 'resign') forget(data.name, data.lock);
    else if (data?.kind === 'ping') tab.postMessage({ kind: 'pong' });
    else if (data?.kind === 'connect' && ports[0]) {
      const list = waiting.get(data.name) ?? [];
      list.push({ port: ports[0], lock: data.lock, reply: tab });
      waiting.set(data.name, list);
      tab.postMessage({ kind: 'queued', name: data.name, lock: data.lock });
      introduce(data.name);
    }
  };
};

// Started, perhaps again: leaders register (again), followers ask again.
new BroadcastChannel(BROKER_CHANNEL).postMessage({ kind: 'started' });

function lead(name: string, leader: Leader): void {
  leaders.set(name, leader);
  // Freed when the leader's worker ends, however it ends.
  void navigator.locks.request(leader.lock, () => forget(name, leader.lock));
  introduce(name);
}

function forget(name: string, lock: string): void {
  if (leaders.get(name)?.lock === lock) leaders.delete(name);
}

/** Hands every waiting follower of `name` to its leader, if there is one. */
function introduce(name: string): void {
  const leader = leaders.get(name);
  const list = waiting.get(name);
  if (!leader || !list) return;
  waiting.delete(name);
  for (const f of list) {
    leader.port.postMessage({ kind: 'follower', name, lock: f.lock }, [f.port]);
    // The follower watches this lock: when it is freed, its calls in flight
    // on this leader can never be answered.
    f.reply.postMessage({ kind: 'leader', name, lock: leader.lock });
  }
}
