// `for await (const chunk of stream)` on the streams the package returns,
// in every engine. The Streams spec makes a ReadableStream async-iterable,
// and Chromium and Firefox do so; WebKit (WebKitGTK 2.50, tested here)
// does not, and that loop throws a TypeError there. Where the engine has
// none, the stream gets the iterator the spec describes, made of its reader.

/**
 * Returns `stream`, async-iterable: as the spec's iterator, each step reads
 * one chunk, the end releases the reader, and leaving the loop early (break,
 * return, a throw) cancels the stream.
 */
export function iterable<T>(stream: ReadableStream<T>): ReadableStream<T> {
  if (Symbol.asyncIterator in stream) return stream;
  const iterate = (): AsyncIterableIterator<T> => {
    const reader = stream.getReader();
    return {
      async next(): Promise<IteratorResult<T>> {
        try {
          const { done, value } = await reader.read();
          if (!done) return { done: false, value };
        } catch (err) {
          reader.releaseLock();
          throw err;
        }
        reader.releaseLock();
        return { done: true, value: undefined };
      },
      async return(): Promise<IteratorResult<T>> {
        const cancelled = reader.cancel();
        reader.releaseLock();
        await cancelled;
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  };
  return Object.defineProperty(stream, Symbol.asyncIterator, { value: iterate, configurable: true, writable: true });
}
