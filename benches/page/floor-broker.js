// A SharedWorker for benches/tabs.mjs's floors: pairs up the first two
// pages that connect, handing each one end of a fresh MessageChannel.
const ports = [];
self.onconnect = (e) => {
  ports.push(e.ports[0]);
  if (ports.length === 2) {
    const { port1, port2 } = new MessageChannel();
    ports[0].postMessage(null, [port1]);
    ports[1].postMessage(null, [port2]);
    ports.length = 0;
  }
};
