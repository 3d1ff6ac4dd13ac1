// Many callers' lookups as few statements: while one load runs, the keys asked for meanwhile queue
// and go together in the next (no timer, so a lone caller waits for nothing). Callers of the same
// turn of the event loop share the first load.

/** `load` answers its keys in order (one value per key). */
export function coalesce<K, V>(load: (keys: K[]) => Promise<V[]>, max = 256): (key: K) => Promise<V> {
  let queue: Array<{ key: K; resolve(v: V): void; reject(e: unknown): void }> = [];
  let running = false;
  const drain = async () => {
    while (queue.length) {
      const part = queue.slice(0, max);
      queue = queue.slice(part.length);
      try {
        const values = await load(part.map((x) => x.key));
        part.forEach((x, i) => x.resolve(values[i]!));
      } catch (err) {
        for (const x of part) x.reject(err);
      }
    }
    running = false;
  };
  return (key) => new Promise<V>((resolve, reject) => {
    queue.push({ key, resolve, reject });
    if (!running) { running = true; queueMicrotask(() => void drain()); }
  });
}
