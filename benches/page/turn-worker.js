// Experiment 029's worker: a long task in steps of `stepMs` of busy work,
// the thread given up between them by `how` ('channel': a message to
// itself on a MessageChannel, as src/js/worker/turn.ts does; 'timeout':
// setTimeout(0)); meanwhile pings from the page are answered at once.
const spin = (ms) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};
const yieldBy = {
  channel: () =>
    new Promise((resolve) => {
      const { port1, port2 } = new MessageChannel();
      port1.onmessage = () => {
        port1.close();
        resolve();
      };
      port2.postMessage(null);
    }),
  timeout: () => new Promise((resolve) => setTimeout(resolve, 0)),
  // The continuation as a task of lower priority than messages.
  background: () => scheduler.postTask(() => {}, { priority: 'background' }),
  visible: () => scheduler.postTask(() => {}, { priority: 'user-visible' }),
};
// Pings come on the worker's own port, or on a MessagePort the page sent
// (`port`), as another tab's calls reach the package's worker.
const answer = (port) => (e) => {
  if (e.data.ping !== undefined) port.postMessage({ pong: e.data.ping });
};
self.onmessage = async (e) => {
  const d = e.data;
  if (d.port) {
    d.port.onmessage = answer(d.port);
    return;
  }
  if (d.ping !== undefined) return answer(self)(e);
  const t0 = performance.now();
  for (let i = 0; i < d.steps; i++) {
    spin(d.stepMs);
    await yieldBy[d.how]();
  }
  self.postMessage({ done: performance.now() - t0 });
};
