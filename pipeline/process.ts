// The write path's driver: applies a batch of ingestion calls to Postgres (source checks, messageId
// dedup, governance, identity resolution, trait writes, quarantine, segment decisions) and returns
// each call's answer and the events to land in ClickHouse. The calls pass through tiers, each
// answering what it can with a Step (step.ts) and deferring the rest to the next:
//   1. fast-track.ts: track and identify calls whose identifiers this thread knows (and track calls
//      of identifiers it has never seen): one statement for them all;
//   2. bulk.ts: plain lanes (nothing held or promoted, messageIds used once): one transaction per
//      chunk, one statement per step;
//   3. per-call.ts: everything else, one transaction per call, lanes in arrival order.
// Catalog observation runs once per org per batch, after the tiers. Beside other sessions, the calls
// of orgs whose segments or catalog are changing go back for later (busy-orgs.ts): those of orgs
// found busy lately are left out before the tiers, the others when a tier's statement fails `busy`.
import type pg from 'pg';
import { callError } from '../schemas/errors.js';
import { bulkApply } from './bulk.js';
import { planOf, type Plan } from './plans.js';
import { messageIdOf, messageKey, messageUses } from './calls.js';
import { applyOne, type PerCallContext } from './per-call.js';
import { answered, reject, type Answered, type Later, type Step, type TierOutput } from './step.js';
import type { BatchOutcome, CallResult, EventRecord, IdentifyBody, IngestCall } from './types.js';
import type { SegmentCache } from './segments/mod.js';
import { lanesOf } from './lanes.js';
import { fastTrack } from './fast-track.js';
import type { BusyOrgs } from './busy-orgs.js';
import type { IdentityCache } from './identity-cache.js';
import {
  collectObservations, observe,
  type CatalogSnapshot, type OrgRow, type SnapshotCache,
} from './governance/mod.js';

export interface ProcessContext {
  pool: pg.Pool;
  snapshots: SnapshotCache;
  segments: SegmentCache;
  /** Calls processed at once (each in its own transaction); bounded by the pool size. */
  concurrency: number;
  /** No other transaction can run beside this context's (embedded Postgres: one session). */
  serial?: boolean;
  /** Identifier owners known to this thread: enables the track fast path (fast-track.ts). */
  identities?: IdentityCache;
  /** Which orgs' calls to leave for later (busy-orgs.ts); beside other sessions only. */
  busy?: BusyOrgs;
}

/** The batch's answers and events as the tiers settle its calls. */
class Settled {
  readonly results: CallResult[];
  readonly events: EventRecord[] = [];
  readonly outbox: string[] = [];
  /** Calls the catalog observes. */
  private readonly observed: boolean[];
  constructor(private readonly calls: IngestCall[]) {
    this.results = new Array(calls.length);
    this.observed = new Array(calls.length).fill(false);
  }

  /** The calls the catalog observes, per org, in arrival order. */
  observations(): Map<string, IngestCall[]> {
    const byOrg = new Map<string, IngestCall[]>();
    this.calls.forEach((call, i) => {
      if (!this.observed[i]) return;
      let list = byOrg.get(call.orgId);
      if (!list) byOrg.set(call.orgId, (list = []));
      list.push(call);
    });
    return byOrg;
  }

  /** Calls handed back for later (their org is being changed), and those orgs. */
  readonly later: number[] = [];
  private readonly busy = new Set<string>();

  /** Whether this call's org was found busy by an earlier step. */
  busyFor(i: number): boolean { return this.busy.has(this.calls[i]!.orgId); }

  /** Hands `indexes` back (their org, if given, is busy from now on). */
  handBack(indexes: Iterable<number>, orgId?: string) {
    if (orgId !== undefined) this.busy.add(orgId);
    for (const i of indexes) this.later.push(i);
  }

  settle(i: number, step: Answered) {
    this.results[i] = step.result;
    if (step.kind !== 'ok') return;
    if (step.event) this.events.push(step.event);
    if (step.system) this.system(step.system);
    if (step.observe) this.observed[i] = true;
  }

  system(events: EventRecord[]) { for (const e of events) { this.events.push(e); this.outbox.push(e.id); } }

  /**
   * Settles a tier's answers and hands back its `later` calls; returns the calls it deferred, in
   * arrival order, but those of an org found busy (handed back too).
   */
  take(out: TierOutput, given: number[]): number[] {
    this.system(out.system);
    const deferred: number[] = [];
    for (const i of given) {
      const step: Step | undefined = out.steps.get(i);
      if (step && answered(step)) this.settle(i, step);
      else if (step?.kind === 'later') this.handBack([i], step.orgId);
      else deferred.push(i);
    }
    return this.without(deferred);
  }

  /** `indexes` but the calls of busy orgs, which are handed back. */
  without(indexes: number[]): number[] {
    if (this.busy.size === 0) return indexes;
    const kept: number[] = [];
    for (const i of indexes) {
      if (this.busyFor(i)) this.later.push(i);
      else kept.push(i);
    }
    return kept;
  }
}

export async function processBatch(ctx: ProcessContext, calls: IngestCall[]): Promise<BatchOutcome> {
  const busy = ctx.busy ? await ctx.busy.check([...new Set(calls.map((c) => c.orgId))]) : undefined;
  if (!busy?.size) return watched(ctx, calls, await processCalls(ctx, calls));
  // The calls of busy orgs are left out, and their results with them.
  const keep: number[] = [], later: number[] = [];
  calls.forEach((c, i) => (busy.has(c.orgId) ? later : keep).push(i));
  const kept = keep.map((i) => calls[i]!);
  const out: BatchOutcome = kept.length ? watched(ctx, kept, await processCalls(ctx, kept)) : { results: [], events: [], outbox: [] };
  const results: CallResult[] = new Array(calls.length);
  keep.forEach((i, j) => { results[i] = out.results[j]!; });
  for (const j of out.later ?? []) later.push(keep[j]!);
  return { ...out, results, later: later.sort((a, b) => a - b) };
}

/**
 * The orgs whose calls `out` hands back (a statement failed `busy`) are asked about before their
 * next batches (busy-orgs.ts); those the watch found busy already are watched on by it.
 */
function watched(ctx: ProcessContext, calls: IngestCall[], out: BatchOutcome): BatchOutcome {
  if (ctx.busy && out.later?.length) ctx.busy.saw(new Set(out.later.map((i) => calls[i]!.orgId)));
  return out;
}

async function processCalls(ctx: ProcessContext, calls: IngestCall[]): Promise<BatchOutcome> {
  const done = new Settled(calls);
  let rest = calls.map((_, i) => i);
  if (ctx.identities) {
    rest = done.take(await fastTrack({ ...ctx, identities: ctx.identities, serial: !!ctx.serial }, calls), rest);
  }
  const snaps = rest.length ? await general(ctx, calls, rest, done) : new Map<string, CatalogSnapshot>();
  const later = done.later.length ? { later: done.later.sort((a, b) => a - b) } : {};
  // Catalog observation once per org per batch; no write when nothing is new.
  for (const [orgId, list] of done.observations()) {
    const snap = snaps.get(orgId) ?? ctx.snapshots.peek(orgId);
    if (snap) await observe(ctx.pool, orgId, snap, collectObservations(list));
  }
  return { results: done.results, events: done.events, outbox: done.outbox, ...later };
}

interface SourceState { archived: boolean; appArchived: boolean }

/** Tiers 2 and 3 for the calls `rest` (indexes into `calls`); returns the snapshots used. */
async function general(ctx: ProcessContext, calls: IngestCall[], rest: number[], done: Settled): Promise<Map<string, CatalogSnapshot>> {
  const orgIds = [...new Set(rest.map((i) => calls[i]!.orgId))];
  const sourceIds = [...new Set(rest.map((i) => calls[i]!.sourceId))];
  // Per batch, not per call, in one statement: the orgs' catalog versions (snapshots are reloaded
  // only when one moved) and the archive state of every source (so an archived source is refused
  // at once, whatever the front end cached).
  const pre = await ctx.pool.query<{ orgs: OrgRow[]; sources: Array<[string, boolean, boolean]> }>(
    `SELECT (SELECT COALESCE(json_agg(json_build_object('id', o.id, 'catalog_version', o.catalog_version, 'settings', o.settings)), '[]')
             FROM orgs o WHERE o.id = ANY($1)) AS orgs,
            (SELECT COALESCE(json_agg(json_build_array(s.id, s.archived_at IS NOT NULL, a.status = 'archived')), '[]')
             FROM sources s JOIN apps a ON a.id = s.app_id WHERE s.id = ANY($2)) AS sources`, [orgIds, sourceIds]);
  const snaps = await ctx.snapshots.at(ctx.pool, pre.rows[0]!.orgs);
  const sources = new Map<string, SourceState>(pre.rows[0]!.sources.map(([id, archived, appArchived]) => [id, { archived, appArchived }]));
  const sourceError = (call: IngestCall): CallResult | undefined => {
    const src = sources.get(call.sourceId);
    if (!src) return callError('not_found', 'source not found');
    if (src.archived) return callError('forbidden', 'the source is archived');
    if (src.appArchived) return callError('forbidden', 'the app of this source is archived');
    return undefined;
  };
  const perCall: PerCallContext = { pool: ctx.pool, snapshots: ctx.snapshots, segments: ctx.segments, snaps };
  const one = (call: IngestCall): Promise<Answered | Later> => {
    const refused = sourceError(call);
    return refused ? Promise.resolve({ kind: 'reject', result: refused }) : applyOne(perCall, call);
  };

  // Calls that share an identifier form a lane and run in arrival order (one profile's writes never
  // reorder); lanes run concurrently. Plain lanes take the bulk tier; the others, and what it
  // defers, run call by call.
  const sub = rest.map((i) => calls[i]!);
  const lanes = lanesOf(sub).map((lane) => lane.map((j) => rest[j]!));
  const { bulk, serial, plans } = splitLanes(calls, lanes, { snaps, sourceError, done });

  // A lane's calls keep their order: once one of them is handed back (its org is being changed),
  // so are those after it.
  const runLane = async (lane: number[]) => {
    for (let k = 0; k < lane.length; k++) {
      const i = lane[k]!;
      if (done.busyFor(i)) { done.handBack(lane.slice(k)); return; }
      const step = await one(calls[i]!);
      if (step.kind === 'later') { done.handBack(lane.slice(k), step.orgId); return; }
      done.settle(i, step);
    }
  };
  const runLanes = async (list: number[][], width: number) => {
    let next = 0;
    const worker = async () => {
      while (next < list.length) await runLane(list[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(width, list.length) }, worker));
  };
  const deferred: number[][] = [];
  const bulkPhase = async () => {
    for (const all of chunksOf(bulk, BULK_CHUNK)) {
      // A lane is one org's (its calls share an identifier): a busy org's lanes go back whole.
      const chunk: number[][] = [];
      for (const lane of all) {
        if (done.busyFor(lane[0]!)) done.handBack(lane);
        else chunk.push(lane);
      }
      if (chunk.length === 0) continue;
      const out = await bulkApply({ pool: ctx.pool, segments: ctx.segments, serial: !!ctx.serial, identities: ctx.identities }, { calls, lanes: chunk, plans });
      done.system(out.system);
      for (const lane of chunk) {
        const left = lane.filter((i) => {
          const step = out.steps.get(i);
          if (step && answered(step)) { done.settle(i, step); return false; }
          if (step?.kind === 'later') { done.handBack([i], step.orgId); return false; }
          return true;
        });
        if (left.length) deferred.push(left);
      }
    }
  };
  await Promise.all([bulkPhase(), runLanes(serial, Math.max(1, ctx.concurrency - 1))]);
  await runLanes(deferred, ctx.concurrency);
  return snaps;
}

/** Calls per bulk transaction (lanes are never split). */
const BULK_CHUNK = 500;

function chunksOf(lanes: number[][], max: number): number[][][] {
  const out: number[][][] = [];
  let cur: number[][] = [];
  let n = 0;
  for (const lane of lanes) {
    if (n > 0 && n + lane.length > max) { out.push(cur); cur = []; n = 0; }
    cur.push(lane);
    n += lane.length;
  }
  if (cur.length) out.push(cur);
  return out;
}

/**
 * Bulk lanes: track calls and identify calls with nothing to hold, none promoted, each messageId
 * used by one call of the batch. Calls of a refused source are answered here (they write nothing).
 * Governance is pure: its decisions (rejections, the traits and consent an identify applies) are
 * known up front and travel to the bulk transaction as plans. The other lanes run call by call.
 */
function splitLanes(calls: IngestCall[], lanes: number[][], o: {
  snaps: Map<string, CatalogSnapshot>; sourceError: (call: IngestCall) => CallResult | undefined; done: Settled;
}) {
  const { snaps, sourceError, done } = o;
  const uses = messageUses(calls);
  const bulk: number[][] = [];
  const serial: number[][] = [];
  const plans = new Map<number, Plan>();
  for (const lane of lanes) {
    const lanePlans = new Map<number, Plan>();
    const plain = lane.every((i) => {
      const call = calls[i]!;
      if (sourceError(call)) return true;
      if (call.promoted) return false;
      if ((call.body as IdentifyBody).unset) return false;
      const m = messageIdOf(call);
      if (call.kind === 'track' && typeof m !== 'string') return false;
      if (typeof m === 'string' && uses.get(messageKey(call)) !== 1) return false;
      const plan = planOf(snaps.get(call.orgId)!, call);
      if (plan) lanePlans.set(i, plan);
      return plan !== undefined;
    });
    if (!plain) { serial.push(lane); continue; }
    const kept: number[] = [];
    for (const i of lane) {
      const refused = sourceError(calls[i]!);
      if (refused) { done.settle(i, reject(refused)); continue; }
      plans.set(i, lanePlans.get(i)!);
      kept.push(i);
    }
    if (kept.length) bulk.push(kept);
  }
  return { bulk, serial, plans };
}
