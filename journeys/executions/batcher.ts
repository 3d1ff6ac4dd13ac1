// Trait writes and tracked events of all the activations of a process go to the ingestion stream
// together: calls made in the same turn of the event loop (up to MAX_BATCH) are submitted as one
// batch, and each caller gets its own result. The stream's entry point takes arrays already; this
// turns many one-call submits into few.
import type { CallResult, IngestCall } from '../../pipeline/types.js';

const MAX_BATCH = 500;

export function batchSubmits(submit: (calls: IngestCall[]) => Promise<CallResult[]>): (calls: IngestCall[]) => Promise<CallResult[]> {
  const queue: Array<{ call: IngestCall; resolve(r: CallResult): void; reject(e: unknown): void }> = [];
  let scheduled = false;

  const flush = () => {
    scheduled = false;
    while (queue.length) {
      const part = queue.splice(0, MAX_BATCH);
      submit(part.map((x) => x.call)).then(
        (results) => part.forEach((x, i) => {
          const r = results[i];
          if (r) x.resolve(r); else x.reject(new Error('ingestion answered no result for the call'));
        }),
        (err) => { for (const x of part) x.reject(err); },
      );
    }
  };

  return (calls) => Promise.all(calls.map((call) => new Promise<CallResult>((resolve, reject) => {
    queue.push({ call, resolve, reject });
    if (!scheduled) { scheduled = true; setImmediate(flush); }
  })));
}
