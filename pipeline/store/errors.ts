// The one place that decides what a store error means. Every caller (the API's error mapping, the
// ingestion steps, the isolation of a failing batch, retries of concurrent transactions) asks
// here, so that they agree on what an outage is.
//   outage       the store cannot work now, whatever the request: connection (SQLSTATE class 08),
//                resources such as a full disk or too many connections (53), operator
//                intervention such as a shutdown (57), system errors (58), and the client's own
//                network errors. Never one call's fault: answer 503 and let it come again.
//   bad_data     the value cannot be stored: data exceptions (22: a NUL character, a number out of
//                range, an invalid date) and program limits (54: an index row too large). One call's
//                fault: answer it 422 and keep the others going.
//   unique       a unique violation (23505): the thing exists already.
//   concurrency  a deadlock (40P01), serialization failure (40001) or lock not available (55P03):
//                rolled back whole, may run again at once.
//   busy         an org is being changed (HWBSY, raised on the ingestion workers' connections by
//                headwater_org_lock_shared, migration 41; the org id is the error's detail): rolled
//                back whole; that org's calls come again once the change is done.
//   other        anything else: a bug, answered 500.
export type StoreErrorKind = 'outage' | 'bad_data' | 'unique' | 'concurrency' | 'busy' | 'other';

const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** What pg (and pg-pool) say when a connection breaks or none can be had: they carry no code. */
const NETWORK_MESSAGE = /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended unexpectedly/i;

/** The SQLSTATE of a Postgres error (five characters), if it is one. */
export function sqlState(e: unknown): string | undefined {
  const c = (e as { code?: unknown } | null)?.code;
  return typeof c === 'string' && /^[0-9A-Z]{5}$/.test(c) ? c : undefined;
}

/** The SQLSTATE headwater_org_lock_shared raises for a busy org (migration 41). */
const BUSY = 'HWBSY';

export function classifyStoreError(e: unknown): StoreErrorKind {
  const state = sqlState(e);
  if (state) {
    const cls = state.slice(0, 2);
    if (cls === '08' || cls === '53' || cls === '57' || cls === '58') return 'outage';
    if (cls === '22' || cls === '54') return 'bad_data';
    if (state === '23505') return 'unique';
    if (state === '40001' || state === '40P01' || state === '55P03') return 'concurrency';
    if (state === BUSY) return 'busy';
    return 'other';
  }
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && NETWORK.has(code)) return 'outage';
  const message = (e as { message?: unknown } | null)?.message;
  if (typeof message === 'string' && NETWORK_MESSAGE.test(message)) return 'outage';
  return 'other';
}

export const isOutage = (e: unknown) => classifyStoreError(e) === 'outage';
export const isBadData = (e: unknown) => classifyStoreError(e) === 'bad_data';
export const isUnique = (e: unknown) => classifyStoreError(e) === 'unique';
/** A deadlock or serialization failure: the transaction was rolled back whole and may run again. */
export const isConcurrencyFailure = (e: unknown) => classifyStoreError(e) === 'concurrency';

/** The org a `busy` error names (its detail), or undefined when `e` is not one. */
export function busyOrgOf(e: unknown): string | undefined {
  if (sqlState(e) !== BUSY) return undefined;
  const d = (e as { detail?: unknown }).detail;
  return typeof d === 'string' && d !== '' ? d : undefined;
}
