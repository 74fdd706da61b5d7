// The floor: a worker that answers each message with what it received.
self.onmessage = (e) => {
  const d = e.data;
  if (d.ack) return self.postMessage(true);
  const transfer = d.transferBack && d.bytes ? [d.bytes.buffer] : [];
  self.postMessage(d, transfer);
};
