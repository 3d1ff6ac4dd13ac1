// Messaging rules of an org (settings.messaging; docs/authoring.md, "Controls") applied to
// `email.send` of marketing templates: quiet hours in the profile's time zone defer the send (the
// execution waits on a durable timer until they end, then sends, as one journal entry), and the
// frequency cap refuses a send past `max` marketing e-mails to the profile per `per`.
import type pg from 'pg';
import { durationMs } from '../runtime/mod.js';
import { tx } from '../../pipeline/store/postgres.js';

export interface FrequencyCap { max: number; per: string | number }
export interface QuietHours { start: string; end: string; timezoneTrait: string; defaultTimezone: string }
export interface Messaging { frequencyCap: FrequencyCap | null; quietHours: QuietHours | null }

const isObject = (v: unknown): v is Record<string, any> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The stored settings' messaging member, with its defaults (no cap, no quiet hours). */
export function messagingOf(settings: { messaging?: unknown } | null | undefined): Messaging {
  const m = isObject(settings?.messaging) ? settings!.messaging as Record<string, unknown> : {};
  return {
    frequencyCap: isObject(m.frequencyCap) ? m.frequencyCap as unknown as FrequencyCap : null,
    quietHours: isObject(m.quietHours) ? m.quietHours as unknown as QuietHours : null,
  };
}

/** 'HH:MM' (or 'HH:MM:SS') as seconds after midnight, or null. */
export function clockSeconds(v: unknown): number | null {
  const m = typeof v === 'string' ? /^([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$/.exec(v) : null;
  return m ? Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3] ?? 0) : null;
}

/** Whether `tz` is an IANA time zone name this runtime knows. */
export function isTimeZone(tz: unknown): tz is string {
  if (typeof tz !== 'string' || tz.length === 0 || tz.length > 100) return false;
  try { new Intl.DateTimeFormat('en-US', { timeZone: tz }); return true; } catch { return false; }
}

/** The problem with a messaging patch, or null. */
export function messagingProblem(m: { frequencyCap?: unknown; quietHours?: unknown }): string | null {
  const c = m.frequencyCap;
  if (c !== undefined && c !== null) {
    if (!isObject(c) || !Number.isSafeInteger(c.max) || c.max < 1 || c.max > 1_000_000) return '/data/messaging/frequencyCap/max: must be an integer from 1 to 1000000';
    const per = durationMs(c.per);
    if (per === null || per <= 0) return "/data/messaging/frequencyCap/per: must be a duration like '1h', '7d' or an integer of milliseconds, more than 0";
  }
  const q = m.quietHours;
  if (q !== undefined && q !== null) {
    if (!isObject(q)) return '/data/messaging/quietHours: must be an object or null';
    for (const k of ['start', 'end'] as const) if (clockSeconds(q[k]) === null) return `/data/messaging/quietHours/${k}: must be a time of day 'HH:MM' (24-hour)`;
    if (q.start === q.end) return '/data/messaging/quietHours: start and end must differ';
    if (typeof q.timezoneTrait !== 'string' || q.timezoneTrait.length < 1 || q.timezoneTrait.length > 200) return '/data/messaging/quietHours/timezoneTrait: must be a trait name of 1 to 200 characters';
    if (!isTimeZone(q.defaultTimezone)) return `/data/messaging/quietHours/defaultTimezone: ${JSON.stringify(String(q.defaultTimezone).slice(0, 100))} is not an IANA time zone name`;
  }
  return null;
}

const formats = new Map<string, Intl.DateTimeFormat>();
/** Seconds after local midnight at `now` in `tz` (with milliseconds as a fraction). */
function localSeconds(now: number, tz: string): number {
  let f = formats.get(tz);
  if (!f) {
    if (formats.size > 500) formats.clear();
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    formats.set(tz, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(now)).map((x) => [x.type, x.value]));
  return Number(p.hour) * 3600 + Number(p.minute) * 60 + Number(p.second) + (now % 1000) / 1000;
}

/**
 * When the quiet hours around `now` end (epoch ms) in time zone `tz`, or null when `now` is outside
 * them. A window whose start is after its end spans midnight.
 */
export function quietUntil(now: number, q: QuietHours, tz: string): number | null {
  const start = clockSeconds(q.start)!;
  const end = clockSeconds(q.end)!;
  const t = localSeconds(now, tz);
  const inside = start < end ? t >= start && t < end : t >= start || t < end;
  if (!inside) return null;
  const left = (end - t + 86_400) % 86_400;
  return now + Math.round(left * 1000);
}

/**
 * Records a marketing send to the profile unless `cap` is reached: one transaction under a lock of
 * the (org, profile), so concurrent sends of several executions count one after the other. A repeat
 * of the same send (its idempotency key) is allowed and not counted again.
 */
export async function underCap(pool: pg.Pool, org: string, profile: string, key: string, cap: FrequencyCap): Promise<boolean> {
  const per = durationMs(cap.per)!;
  return tx(pool, async (c) => {
    await c.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`, [`${org}:${profile}`]);
    const r = await c.query<{ repeat: boolean; n: number }>(
      `SELECT EXISTS (SELECT 1 FROM marketing_sends WHERE org_id = $1 AND key = $3) AS repeat,
              (SELECT count(*)::int FROM marketing_sends WHERE org_id = $1 AND profile_id = $2 AND sent_at > now() - make_interval(secs => $4 / 1000.0)) AS n`,
      [org, profile, key, per]);
    const { repeat, n } = r.rows[0]!;
    if (repeat) return true;
    if (n >= cap.max) return false;
    await c.query(`INSERT INTO marketing_sends (org_id, profile_id, key, sent_at) VALUES ($1, $2, $3, now())`, [org, profile, key]);
    return true;
  });
}

/** Thrown by the host: the send waits for the end of the quiet hours (the runner sets the timer). */
export class DeferredSend extends Error {
  constructor(readonly until: number) { super(`quiet hours: the e-mail is sent at ${new Date(until).toISOString()}`); }
}

/** Profiles whose time zone trait was found invalid and logged, per process (bounded). */
const warned = new Set<string>();

export interface MarketingSend { orgId: string; journeyKey: string; profileId: string; traits: Record<string, unknown>; key: string }

/**
 * The org's rules for one marketing send: throws DeferredSend inside quiet hours, answers false
 * past the frequency cap (counted for the journey), true when it may be sent (and was counted).
 */
export async function marketingAllowed(pool: pg.Pool, warn: (msg: string, o: Record<string, unknown>) => void, s: MarketingSend,
  countCapped: () => Promise<void>): Promise<boolean> {
  const r = await pool.query<{ settings: { messaging?: unknown } | null }>('SELECT settings FROM orgs WHERE id = $1', [s.orgId]);
  const m = messagingOf(r.rows[0]?.settings);
  if (m.quietHours) {
    const q = m.quietHours;
    const trait = s.traits?.[q.timezoneTrait];
    let tz = q.defaultTimezone;
    if (trait !== undefined && trait !== null && trait !== '') {
      if (isTimeZone(trait)) tz = trait;
      else if (!warned.has(`${s.orgId}\u0000${s.profileId}`)) {
        if (warned.size > 100_000) warned.clear();
        warned.add(`${s.orgId}\u0000${s.profileId}`);
        warn('profile time zone trait is not an IANA name; quiet hours use the default', {
          orgId: s.orgId, profileId: s.profileId, trait: q.timezoneTrait, value: String(trait).slice(0, 100), defaultTimezone: q.defaultTimezone,
        });
      }
    }
    const until = quietUntil(Date.now(), q, tz);
    if (until !== null) throw new DeferredSend(until);
  }
  if (m.frequencyCap && !(await underCap(pool, s.orgId, s.profileId, s.key, m.frequencyCap))) {
    await countCapped();
    return false;
  }
  return true;
}
