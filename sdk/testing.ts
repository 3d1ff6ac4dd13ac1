// headwater/sdk/testing: run a journey in a test, in process, with an in-memory ctx and a virtual
// clock. Sleeps and waits advance the clock instead of the wall clock (a journey that sleeps a day
// finishes at once); waitForEvent is answered from the events the test supplies, or times out; e-mails
// are rendered with the project's own templates after their propsSchema check. Nothing leaves the
// process. This module is for tests only: journeys never import it (it is not bundled into them).
import { Ajv } from 'ajv';
import type { Event, JourneyDefinition, Profile, RenderedEmail, TemplateDefinition } from './types.js';

/** An event the profile sends during the run: answers a `waitForEvent` that is waiting for its name. */
export interface TestEvent {
  event: string;
  properties?: Record<string, unknown>;
  /**
   * When it arrives: a duration after the run started ('2h', '3d', ms) or an ISO date-time. Without
   * one, it arrives when the first wait for its name begins. A wait sees only events arriving at or
   * after its start and no later than its timeout.
   */
  at?: string | number;
}

export interface RunOptions {
  /** The trigger (`ctx.event`): an event name, or the fields to set (the rest is filled in). */
  event: string | (Partial<Event> & { event: string });
  /** The profile (`ctx.profile.get()`); consent to the journey's purpose is given unless set. */
  profile?: Partial<Profile>;
  /** Events the profile sends while the run goes on. */
  events?: TestEvent[];
  /** Start of the virtual clock (ISO date-time, Date or epoch ms); default the trigger's `receivedAt`, else 2026-01-01T00:00:00Z. */
  clock?: string | number | Date;
  /** Templates `ctx.email.send` may render (by key); sending another key fails like a missing template. */
  templates?: Array<TemplateDefinition<any>>;
  /** Registered webhook names; when given, `ctx.webhook.send` to another name fails like on the service. */
  webhooks?: string[];
  /** Other profiles `ctx.profiles.get(id)` can read. */
  profiles?: Array<Partial<Profile> & { id: string }>;
  /** Restarts (`ctx.restart`) followed before the run is cut short; default 10. */
  maxRestarts?: number;
}

export interface JournalEntry {
  call: { name: string; args: Record<string, unknown> };
  result: { ok: true; value: unknown } | { ok: false; error: { code: string; message: string } };
  at: number;
}

export interface SentEmail { template: string; to: string; props: Record<string, unknown>; subject: string; html: string; text: string; at: string }
export interface SentWebhook { destination: string; payload: Record<string, unknown>; at: string }
export type TraitWrite = { key: string; value: unknown; at: string } | { key: string; unset: true; at: string };
export interface TrackedEvent { event: string; properties: Record<string, unknown>; at: string }

export interface RunResult {
  status: 'completed' | 'failed';
  /** Why the run failed (`journey_error` for a throw, `journey_output_invalid` for a bad call ...), else null. */
  error: { code: string; message: string } | null;
  /** The last run's journal, as the service would record it. */
  journal: JournalEntry[];
  emails: SentEmail[];
  webhooks: SentWebhook[];
  traits: TraitWrite[];
  tracked: TrackedEvent[];
  logs: Array<{ level: 'debug' | 'info' | 'warn' | 'error'; message: string }>;
  /** The profile after the run's trait writes. */
  profile: Profile;
  /** 1, plus one per `ctx.restart`. */
  runs: number;
  /** The virtual clock when the run ended (ISO date-time) and how far it moved. */
  clock: string;
  elapsedMs: number;
}

// Node's, declared here because the SDK's declarations are built without Node's types.
declare const setImmediate: (callback: (value?: unknown) => void) => unknown;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const MAX_DURATION_MS = 315_360_000_000;
const MAX_ENTRIES = 10_000;
const DEFAULT_START = Date.parse('2026-01-01T00:00:00.000Z');

/** Milliseconds of a journey duration ('500ms' '2s' '5m' '1h' '3d' or integer ms), or null. */
function durationMs(v: unknown): number | null {
  let ms: number;
  if (typeof v === 'number') { if (!Number.isSafeInteger(v) || v < 0) return null; ms = v; } else if (typeof v === 'string') {
    const m = /^(\d{1,15})(ms|s|m|h|d)$/.exec(v);
    if (!m) return null;
    ms = Number(m[1]) * UNIT_MS[m[2]!]!;
  } else return null;
  return ms <= MAX_DURATION_MS ? ms : null;
}

// The service's stable assignment (lib/assign.ts), copied: the SDK imports nothing.
function assignPoint(...parts: string[]): number {
  let h = 0x811c9dc5;
  const s = parts.join('\u0000');
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  h ^= h >>> 16; h = Math.imul(h, 0x85ebca6b); h ^= h >>> 13; h = Math.imul(h, 0xc2b2ae35); h ^= h >>> 16;
  return (h >>> 0) / 4294967296;
}
function pickWeighted(point: number, weights: Record<string, number>): string {
  const keys = Object.keys(weights).sort();
  const total = keys.reduce((n, k) => n + weights[k]!, 0);
  let acc = 0;
  for (const k of keys) {
    acc += weights[k]! / total;
    if (point < acc && weights[k]! > 0) return k;
  }
  return [...keys].reverse().find((k) => weights[k]! > 0)!;
}
const validWeights = (w: unknown): w is Record<string, number> => {
  if (!w || typeof w !== 'object' || Array.isArray(w)) return false;
  const v = Object.values(w as Record<string, unknown>);
  return v.length >= 1 && v.length <= 20 && v.every((x) => typeof x === 'number' && Number.isFinite(x) && x >= 0) && v.some((x) => (x as number) > 0);
};

class CallError extends Error {
  constructor(readonly code: string, message: string) { super(message); }
}
/** Ends a run: a restart, or a failure the handler must not catch. */
class Stop { constructor(readonly kind: 'restart' | 'fail', readonly code = '', readonly message = '', readonly event?: Record<string, unknown>) {} }

const clone = <T>(v: T): T => (v === undefined ? v : JSON.parse(JSON.stringify(v)) as T);
const describe = (e: unknown) => (e instanceof Error ? `${e.name || 'Error'}: ${e.message}` : typeof e === 'string' ? e : JSON.stringify(e) ?? String(e));

/** Runs `definition` once for the trigger in `options`, to completion, in virtual time. */
export async function runJourney(definition: JourneyDefinition, options: RunOptions): Promise<RunResult> {
  if (!definition || definition.kind !== 'journey' || typeof definition.handler !== 'function') throw new TypeError('runJourney: pass the journey definition (the default export of a journey file)');
  const purpose = definition.options?.purpose;
  const trigger = typeof options.event === 'string' ? { event: options.event } : options.event;
  const startAt = options.clock !== undefined ? new Date(options.clock).getTime()
    : typeof trigger.receivedAt === 'string' ? Date.parse(trigger.receivedAt) : DEFAULT_START;
  if (!Number.isFinite(startAt)) throw new TypeError('runJourney: clock is not a date');
  let clock = startAt;
  const iso = () => new Date(clock).toISOString();

  const profile: Profile = {
    id: 'prf_test', orgId: 'org_test', environment: 'development', appId: 'app_test', sourceId: 'src_test',
    traits: {}, consent: typeof purpose === 'string' ? { [purpose]: true } : {}, mergedInto: null,
    createdAt: new Date(startAt).toISOString(), updatedAt: new Date(startAt).toISOString(), identifiers: [], anonymous: false,
    ...clone(options.profile),
  } as Profile;
  let seq = 0;
  const makeEvent = (name: string, properties: Record<string, unknown>, base: Partial<Event> = {}): Event => ({
    id: `evt_test_${++seq}`, orgId: profile.orgId, appId: profile.appId, sourceId: profile.sourceId, profileId: profile.id,
    environment: profile.environment, timestamp: iso(), receivedAt: iso(), messageId: null, ...base, event: name, properties,
  });

  const arrivals = (options.events ?? []).map((e, i) => {
    let at: number | undefined;
    if (e.at !== undefined) {
      const d = durationMs(e.at);
      at = d !== null ? startAt + d : typeof e.at === 'string' ? Date.parse(e.at) : NaN;
      if (!Number.isFinite(at)) throw new TypeError(`runJourney: events[${i}].at is neither a duration nor a date-time`);
    }
    return { ...e, at, used: false, i };
  });
  const templates = new Map((options.templates ?? []).map((t) => [t.key, t]));
  const others = new Map((options.profiles ?? []).map((p) => [p.id, p]));
  const ajv = new Ajv({ allErrors: false, strict: false, logger: false });

  const out: Omit<RunResult, 'status' | 'error' | 'profile' | 'runs' | 'clock' | 'elapsedMs'> = {
    journal: [], emails: [], webhooks: [], traits: [], tracked: [], logs: [],
  };

  /** The effect of one call: its value, or a CallError the handler sees as a rejection. */
  const effect = async (name: string, a: Record<string, any>): Promise<unknown> => {
    switch (name) {
      case 'sleep': clock += durationMs(a.duration)!; return null;
      case 'waitForEvent': {
        const names = ([] as string[]).concat(a.event);
        const until = clock + durationMs(a.timeout)!;
        let best: (typeof arrivals)[number] | undefined;
        for (const e of arrivals) {
          if (e.used || !names.includes(e.event)) continue;
          const when = e.at ?? clock;
          if (when < clock || when > until) continue;
          if (!best || when < (best.at ?? clock)) best = e;
        }
        if (!best) { clock = until; return null; }
        best.used = true;
        clock = Math.max(clock, best.at ?? clock);
        return makeEvent(best.event, clone(best.properties ?? {}));
      }
      case 'profile.get': return clone(profile);
      case 'profiles.get': {
        const p = others.get(a.id);
        if (!p) throw new CallError('not_found', `no profile ${String(a.id).slice(0, 200)} in this journey's app`);
        return clone({ ...profile, traits: {}, identifiers: [], ...p });
      }
      case 'traits.set': profile.traits[a.key] = clone(a.value); out.traits.push({ key: a.key, value: clone(a.value), at: iso() }); return null;
      case 'traits.unset': delete profile.traits[a.key]; out.traits.push({ key: a.key, unset: true, at: iso() }); return null;
      case 'events.track': out.tracked.push({ event: a.event, properties: a.properties, at: iso() }); return makeEvent(a.event, a.properties);
      case 'webhook.send':
        if (options.webhooks && !options.webhooks.includes(a.destination)) throw new CallError('not_found', `no webhook named ${JSON.stringify(a.destination)} in this org`);
        out.webhooks.push({ destination: a.destination, payload: a.payload, at: iso() });
        return { deliveryId: `whd_test_${out.webhooks.length}` };
      case 'email.send': return sendEmail(a.template, a.props);
      case 'split': return pickWeighted(assignPoint('split', definition.key, a.name, profile.id), a.weights);
      default: throw new Stop('fail', 'journey_output_invalid', `unknown call ${name}`);
    }
  };

  const sendEmail = async (key: string, props: Record<string, unknown>) => {
    const t = templates.get(key);
    if (!t) throw new CallError('not_found', `no ready template ${JSON.stringify(key)} (pass it in runJourney's templates)`);
    const schema = t.options?.propsSchema ?? {};
    if (Object.keys(schema).length > 0) {
      let ok: boolean;
      const validate = ajv.compile(schema);
      try { ok = validate(props) as boolean; } catch (e) { throw new CallError('validation_failed', `template ${key}: propsSchema does not compile: ${describe(e)}`); }
      if (!ok) { const e = validate.errors?.[0]; throw new CallError('validation_failed', `props${e?.instancePath ?? ''}: ${e?.message ?? 'do not match the propsSchema'}`); }
    }
    const to = typeof profile.traits.email === 'string' && profile.traits.email ? profile.traits.email
      : profile.identifiers?.find((i) => i.kind === 'email')?.value;
    if (!to) throw new CallError('no_email_address', 'the profile has no email trait or identifier');
    let r: RenderedEmail;
    try { r = await t.render(clone(props)); } catch (e) { throw new CallError('journey_error', `template ${key}: ${describe(e)}`); }
    if (!r || typeof r.subject !== 'string' || typeof r.html !== 'string' || (r.text !== undefined && typeof r.text !== 'string')) {
      throw new CallError('journey_output_invalid', `template ${key}: the render result must be { subject, html, text? } strings`);
    }
    out.emails.push({ template: key, to, props: clone(props), subject: r.subject, html: r.html, text: r.text ?? '', at: iso() });
    return { emailId: `eml_test_${out.emails.length}`, to };
  };

  const check = (name: string, args: Record<string, unknown>): string | null => {
    if (name === 'sleep' && durationMs(args.duration) === null) return `sleep: duration must be a duration like '500ms', '2s', '5m', '1h', '3d' or an integer of milliseconds (got ${JSON.stringify(args.duration)})`;
    if (name === 'waitForEvent' && durationMs(args.timeout) === null) return `waitForEvent: timeout must be a duration (got ${JSON.stringify(args.timeout)})`;
    if (name === 'waitForEvent' && !(typeof args.event === 'string' || (Array.isArray(args.event) && args.event.length > 0))) return 'waitForEvent: event must be an event name or an array of names';
    if (name === 'split' && (typeof args.name !== 'string' || !args.name || !validWeights(args.weights))) return 'split: name must be a string and weights an object of 1 to 20 keys to non-negative numbers, not all 0';
    if ((name === 'email.send' || name === 'webhook.send' || name === 'events.track') && typeof (args.template ?? args.destination ?? args.event) !== 'string') return `${name}: the first argument must be a string`;
    return null;
  };

  let runs = 0;
  let event: Record<string, unknown> = makeEvent(trigger.event, clone(trigger.properties ?? {}), clone(trigger) as Partial<Event>) as unknown as Record<string, unknown>;
  for (;;) {
    runs++;
    out.journal = [];
    let stop: (s: Stop) => void = () => {};
    const stopped = new Promise<Stop>((r) => { stop = r; });
    let inflight = 0;
    let settled = false;
    const call = (name: string, args: Record<string, unknown>): Promise<any> => {
      let json: Record<string, unknown>;
      try { json = JSON.parse(JSON.stringify(args)) as Record<string, unknown>; } catch (e) {
        stop(new Stop('fail', 'journey_output_invalid', `call ${out.journal.length}: ${name}: arguments are not JSON-serializable (${describe(e)})`));
        return new Promise(() => {});
      }
      const why = check(name, json);
      if (why) { stop(new Stop('fail', 'journey_output_invalid', `call ${out.journal.length}: ${why}`)); return new Promise(() => {}); }
      const at = out.journal.length;
      if (at >= MAX_ENTRIES) { stop(new Stop('fail', 'journey_fuel_exceeded', `the run reached ${MAX_ENTRIES} journal entries`)); return new Promise(() => {}); }
      if (name === 'restart') {
        out.journal.push({ call: { name, args: json }, result: { ok: true, value: null }, at });
        stop(new Stop('restart', '', '', (json.event as Record<string, unknown> | undefined) ?? event));
        return new Promise(() => {});
      }
      const entry: JournalEntry = { call: { name, args: json }, result: { ok: true, value: null }, at };
      out.journal.push(entry);
      inflight++;
      return effect(name, json).finally(() => { inflight--; }).then(
        (value) => { entry.result = { ok: true, value: clone(value ?? null) }; return clone(value ?? null); },
        (e: unknown) => {
          if (e instanceof Stop) { stop(e); return new Promise(() => {}); }
          const c = e instanceof CallError ? e : new CallError('internal', describe(e));
          entry.result = { ok: false, error: { code: c.code, message: c.message } };
          throw Object.assign(new Error(c.message), { code: c.code });
        });
    };
    const log = (level: 'debug' | 'info' | 'warn' | 'error') => (...parts: unknown[]) => {
      out.logs.push({ level, message: parts.map((p) => (typeof p === 'string' ? p : describe(p))).join(' ') });
    };
    const ctx = Object.freeze({
      event: clone(event),
      sleep: (duration: unknown) => call('sleep', { duration }),
      waitForEvent: (name: unknown, o?: { timeout?: unknown }) => call('waitForEvent', { event: name, timeout: o?.timeout }),
      email: Object.freeze({ send: (template: string, props?: Record<string, unknown>) => call('email.send', { template, props: props ?? {} }) }),
      webhook: Object.freeze({ send: (destination: string, payload?: Record<string, unknown>) => call('webhook.send', { destination, payload: payload ?? {} }) }),
      traits: Object.freeze({ set: (key: string, value: unknown) => call('traits.set', { key, value }), unset: (key: string) => call('traits.unset', { key }) }),
      profile: Object.freeze({ get: () => call('profile.get', {}) }),
      profiles: Object.freeze({ get: (id: string) => call('profiles.get', { id }) }),
      events: Object.freeze({ track: (name: string, properties?: Record<string, unknown>) => call('events.track', { event: name, properties: properties ?? {} }) }),
      restart: (e?: Record<string, unknown>) => call('restart', e === undefined ? {} : { event: e }),
      split: (name: string, weights: Record<string, number>) => call('split', { name, weights }),
      log: Object.freeze({ debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') }),
    });
    const ran = Promise.resolve().then(() => definition.handler(ctx as never)).then(
      () => null as Stop | null,
      (e: unknown) => new Stop('fail', 'journey_error', describe(e)),
    );
    // A handler awaiting something no ctx call settles would hang the test: after a few idle turns
    // of the event loop with no call in flight, the run fails as it would on the service.
    void (async () => {
      for (let quiet = 0; !settled;) {
        await new Promise((r) => setImmediate(r));
        quiet = inflight === 0 ? quiet + 1 : 0;
        if (quiet >= 3 && !settled) stop(new Stop('fail', 'journey_error', 'the handler awaits a promise that no ctx call settles'));
      }
    })();
    const end = await Promise.race([ran, stopped]);
    settled = true;
    const finish = (status: RunResult['status'], error: RunResult['error']): RunResult => ({
      status, error, ...out, profile: clone(profile), runs, clock: iso(), elapsedMs: clock - startAt,
    });
    if (!end) return finish('completed', null);
    if (end.kind === 'fail') return finish('failed', { code: end.code, message: end.message });
    if (runs > (options.maxRestarts ?? 10)) return finish('failed', { code: 'journey_error', message: `the run restarted more than ${options.maxRestarts ?? 10} times` });
    event = { ...makeEvent(String(end.event?.event ?? event.event), {}), ...clone(end.event) };
  }
}
