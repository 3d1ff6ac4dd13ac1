// One bad call must not hold the rest of its batch back, nor come back from the stream forever.
// When a batch fails, its calls run again one by one, in arrival order (each call alone, so a
// lane's order holds). What succeeds is answered. A call that fails CALL_ATTEMPTS times on its own
// is kept in dead_letters (migration 10) with its error and answered 500 `internal`, but only when
// its error is not a store outage and Postgres answers: an outage, more than MAX_DEAD calls failing
// (something wrong for everyone, not one call), or a dead-letter write that fails throws, and the
// whole batch comes again later, as before.
import type pg from 'pg';
import type { Logger } from '../lib/log.js';
import type { BatchOutcome, CallResult, IngestCall } from './types.js';
import { isOutage, sqlState } from './store/errors.js';
import { callError } from '../schemas/errors.js';

export const CALL_ATTEMPTS = 3;
const RETRY_MS = 100;
/** More failing calls than this in one batch is not one bad call: the batch comes again. */
const MAX_DEAD = 3;

export interface IsolateOptions {
  run(calls: IngestCall[]): Promise<BatchOutcome>;
  /** Keeps the dead letters, and tells an outage from a call's own failure. */
  pool: pg.Pool;
  log: Logger;
}


export async function isolate(o: IsolateOptions, calls: IngestCall[], cause: unknown): Promise<BatchOutcome> {
  // An outage is never one call's fault (store/errors.ts).
  if (isOutage(cause)) throw cause;
  // Postgres must answer before anything is retried (a closing pool, a server gone: an outage).
  try { await o.pool.query('SELECT 1'); } catch { throw cause; }
  const results: CallResult[] = new Array(calls.length);
  const out: BatchOutcome = { results, events: [], outbox: [] };
  const failed: Array<{ i: number; err: unknown }> = [];
  for (let i = 0; i < calls.length; i++) {
    let err: unknown;
    for (let attempt = 1; attempt <= CALL_ATTEMPTS; attempt++) {
      try {
        const one = await o.run([calls[i]!]);
        // Its org became busy: handed back, as the batch would have been.
        if (one.later?.length) (out.later ??= []).push(i);
        else results[i] = one.results[0]!;
        out.events.push(...one.events);
        out.outbox.push(...one.outbox);
        err = undefined;
        break;
      } catch (e) {
        err = e;
        if (isOutage(e)) throw e;
        if (attempt < CALL_ATTEMPTS) await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
    if (err !== undefined && failed.push({ i, err }) > MAX_DEAD) throw cause;
  }
  if (failed.length === 0) return out;
  // Postgres must answer (else this is an outage) and keep every dead letter before any is answered.
  await o.pool.query(
    `INSERT INTO dead_letters (id, org_id, call, error, attempts)
     SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::text[], $5::int[]) ON CONFLICT (id) DO NOTHING`,
    [failed.map((f) => calls[f.i]!.id), failed.map((f) => calls[f.i]!.orgId), failed.map((f) => JSON.stringify(calls[f.i])),
      failed.map((f) => describe(f.err)), failed.map(() => CALL_ATTEMPTS)]);
  for (const { i, err } of failed) {
    const call = calls[i]!;
    o.log.error('call kept as a dead letter', { callId: call.id, orgId: call.orgId, kind: call.kind, err: describe(err) });
    results[i] = callError('internal', `the call failed ${CALL_ATTEMPTS} times and was not applied; it is kept as dead letter ${call.id}`);
  }
  return out;
}

function describe(e: unknown): string {
  const state = sqlState(e);
  const msg = e instanceof Error ? e.message : String(e);
  return state ? `${state}: ${msg}` : msg;
}
