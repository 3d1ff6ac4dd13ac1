// The one result shape of the write path's steps. A batch passes through tiers (fast-track.ts,
// bulk.ts, per-call.ts), run by one driver (process.ts); each tier answers every call it was given
// with a Step instead of throwing for control flow:
//   ok      written (or a replay of a call written before): the answer, its event, its segment
//           transitions, and whether the catalog should observe it;
//   reject  refused by governance or the source's state; nothing of it is written;
//   hold    quarantined: its held rows are written, the answer says so;
//   retry   judged on a catalog snapshot that moved meanwhile: judge it again on a fresh one;
//   defer   this tier cannot take it (a merge, a stale cache, a data error in a shared statement);
//           nothing of it is written; the next tier takes it.
//   later   its org is being changed (a segment change, a promote: store/errors.ts `busy`); nothing
//           of it is written; the call goes back to the stream for a moment, unanswered.
// Store errors still throw: an outage fails the batch (the stream redelivers it), and isolate.ts
// finds the one call a bug or bad value belongs to.
import type { CallResult, EventRecord } from './types.js';
import { busyOrgOf, classifyStoreError } from './store/errors.js';

export type Step =
  | { kind: 'ok'; result: CallResult; event?: EventRecord; system?: EventRecord[]; observe?: boolean }
  | { kind: 'reject'; result: CallResult }
  | { kind: 'hold'; result: CallResult }
  | { kind: 'retry'; reason: string }
  | { kind: 'defer'; reason: string }
  | { kind: 'later'; orgId: string };

/** Steps that carry the call's answer. */
export type Answered = Extract<Step, { result: CallResult }>;

/** A call handed back: its org is busy. */
export type Later = Extract<Step, { kind: 'later' }>;

export const answered = (s: Step): s is Answered => s.kind === 'ok' || s.kind === 'reject' || s.kind === 'hold';

/** What a tier did with the calls it was given (by index in the batch). */
export interface TierOutput {
  steps: Map<number, Step>;
  /** Segment transitions of the profiles the tier wrote (system events, in the outbox). */
  system: EventRecord[];
}

export const reject = (result: CallResult): Answered => ({ kind: 'reject', result });

/** Every call of `indexes` deferred to the next tier. */
export function deferAll(indexes: Iterable<number>, reason: string): TierOutput {
  const steps = new Map<number, Step>();
  const step: Step = { kind: 'defer', reason };
  for (const i of indexes) steps.set(i, step);
  return { steps, system: [] };
}

/**
 * After a statement of many calls failed for a busy org (store/errors.ts `busy`): that org's calls
 * of `indexes` go back for later, the others to the next tier. Undefined when `e` is no such error.
 */
export function laterFor(e: unknown, indexes: Iterable<number>, orgOf: (i: number) => string): TierOutput | undefined {
  const org = busyOrgOf(e);
  if (org === undefined) return undefined;
  const steps = new Map<number, Step>();
  const later: Step = { kind: 'later', orgId: org };
  for (const i of indexes) if (orgOf(i) === org) steps.set(i, later);
  return { steps, system: [] };
}

/**
 * A store error that one shared statement of many calls hit, after which those calls go to the
 * next tier rather than failing the batch: bad data (one call's value; the per-call tier answers
 * it 422) and concurrency (deadlock, serialization failure).
 */
export function deferrable(e: unknown): boolean {
  const kind = classifyStoreError(e);
  return kind === 'bad_data' || kind === 'concurrency';
}
