// Piscina task: runs journey code (activate) and e-mail templates (render) in QuickJS, off the
// event loop of the process. The thread's engine lives as long as the thread. Host calls of an
// activation go back to the process over the MessagePort that comes with the task: the process
// owns the stores and the ingestion stream, the thread only the sandbox.
import { createEngine, type Activation, type RenderResult } from '../journeys/runtime/mod.js';
import type { JournalResult } from '../schemas/mod.js';
import type { HostAnswer, HostRequest, JourneyTask } from '../journeys/executions/mod.js';
import { isCollectTask, type CollectAnswer, type CollectTask } from '../pipeline/quiet-collect.js';
import { HeapCollector } from './idle-gc.js';

const engine = await createEngine();
// A burst's garbage is given back when the thread has gone quiet (idle-gc.ts).
const heap = new HeapCollector();

export default async function run(task: JourneyTask | CollectTask): Promise<Activation | RenderResult | CollectAnswer | null> {
  if (isCollectTask(task)) return heap.collect(task.collect.last);
  if (task.kind === 'warm') return null;
  if (task.kind === 'render') return engine.render(task.input);
  const port = task.port;
  const pending = new Map<number, { resolve(r: JournalResult): void; reject(e: Error): void }>();
  let next = 0;
  port.on('message', (m: HostAnswer) => {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.result) p.resolve(m.result); else p.reject(new Error(m.error ?? 'host call failed'));
  });
  try {
    return await engine.activate({
      ...task.input,
      host: {
        // The call goes over without its signal (not read: the engine makes it on demand).
        call: ({ name, args, position, idempotencyKey }) => new Promise<JournalResult>((resolve, reject) => {
          const id = next++;
          pending.set(id, { resolve, reject });
          port.postMessage({ id, call: { name, args, position, idempotencyKey } } satisfies HostRequest);
        }),
      },
    });
  } finally {
    port.close();
  }
}
