// A caller waiting for the results of n items (one submit() or publish()): filled slot by slot,
// settled once (results, rejection or timeout), removed from its registry when settled.
export interface Waiter<R> {
  results: R[];
  remaining: number;
  settled: boolean;
  /** Nobody waits for the results any more (set by the submitter). */
  abandoned?: () => boolean;
  resolve(v: R[]): void;
  reject(e: Error): void;
}

export interface WaiterOptions {
  /** Rejects with `onTimeout()` after this long; no timer when undefined. */
  timeoutMs?: number;
  onTimeout?: () => Error;
  /** Called once when settled, whatever the outcome (cleanup of lookups). */
  onSettle?: () => void;
}

export function createWaiter<R>(n: number, registry: Set<Waiter<R>>, o: WaiterOptions = {}): { waiter: Waiter<R>; promise: Promise<R[]> } {
  let res!: (v: R[]) => void;
  let rej!: (e: Error) => void;
  const promise = new Promise<R[]>((resolve, reject) => { res = resolve; rej = reject; });
  let timer: NodeJS.Timeout | undefined;
  const settle = () => { waiter.settled = true; clearTimeout(timer); registry.delete(waiter); o.onSettle?.(); };
  const waiter: Waiter<R> = {
    results: new Array<R>(n), remaining: n, settled: false,
    resolve: (v) => { if (!waiter.settled) { settle(); res(v); } },
    reject: (e) => { if (!waiter.settled) { settle(); rej(e); } },
  };
  if (o.timeoutMs !== undefined) timer = setTimeout(() => waiter.reject(o.onTimeout?.() ?? new Error('timed out')), o.timeoutMs);
  registry.add(waiter);
  return { waiter, promise };
}

/** Fills one slot; resolves the waiter with every result once the last slot is filled. */
export function deliver<R>(waiter: Waiter<R>, index: number, result: R): void {
  if (waiter.settled || waiter.results[index] !== undefined) return;
  waiter.results[index] = result;
  if (--waiter.remaining === 0) waiter.resolve(waiter.results);
}

/** Waits for every registered waiter to settle, at most `graceMs`. */
export async function settledWithin<R>(registry: Set<Waiter<R>>, graceMs: number): Promise<void> {
  const deadline = Date.now() + graceMs;
  while (registry.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}
