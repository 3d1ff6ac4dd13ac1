// `headwater doctor`: asks the service to reconcile acknowledged track events with the event store
// (POST /v1/events/reconcile), one hour at a time so that long windows show progress, and prints
// what it found. Exit 0 when nothing is missing (or everything missing was repaired), 1 otherwise.
import { callApi, type Target } from './request.js';
import { parseArgs } from 'node:util';
import { ConfigError } from '../api/config.js';

export const DOCTOR_HELP = `usage: headwater doctor [--since T] [--until T] [--org ORG_ID] [--repair] [--json]
                        [--url URL] [--token T] [--data-dir D]

Compares every track event the service acknowledged in a window (its answer stored in Postgres)
with the event store (ClickHouse), lists acknowledged events that are missing, counts the extra
copies that reads collapse, and shows what the pipeline dropped or collapsed on purpose.

  --since T      start: an ISO date-time or an age such as 90m, 24h, 7d (default 24h)
  --until T      end, exclusive (default 1m: events answered in the last minute may be on their way)
  --org ORG_ID   only this org
  --repair       land the missing events from their stored copies
  --json         print the combined answer as JSON
  --url URL      service URL (default $HEADWATER_URL or http://127.0.0.1:8080)
  --token T      operator token (default $HEADWATER_OPERATOR_TOKEN, else <data dir>/operator-token)
  --data-dir D   where to find the generated operator token (default $HEADWATER_DATA_DIR or ./.headwater)`;

const SLICE_MS = 3600_000;
const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3600_000, d: 86_400_000 };

/** An ISO date-time, or an age before `now` such as 24h. */
export function parseTime(s: string, now: number, what: string): number {
  const age = /^(\d+)([smhd])$/.exec(s);
  if (age) return now - Number(age[1]) * UNITS[age[2]!]!;
  const t = Date.parse(s);
  if (Number.isNaN(t)) throw new ConfigError(`${what}: expected an ISO date-time or an age such as 24h, got ${JSON.stringify(s)}`);
  return t;
}

interface Missing { orgId: string; appId: string; messageId: string; eventId: string; profileId: string; event: string; storedAt: string }
interface Answer {
  acknowledged: number; landed: number; missing: number; collapsed: number; repaired: number;
  missingEvents: Missing[]; drops: Array<{ reason: string; description: string; count: number; lastAt: string | null }>;
}

export async function runDoctor(argv: string[], target: (flags: { url?: string; token?: string; dataDir?: string }) => Target): Promise<number> {
  let v;
  try {
    ({ values: v } = parseArgs({
      args: argv, strict: true, allowPositionals: false,
      options: {
        since: { type: 'string', default: '24h' }, until: { type: 'string', default: '1m' }, org: { type: 'string' },
        repair: { type: 'boolean', default: false }, json: { type: 'boolean', default: false },
        url: { type: 'string' }, token: { type: 'string' }, 'data-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) { throw new ConfigError((err as Error).message); }
  if (v.help) { process.stdout.write(DOCTOR_HELP + '\n'); return 0; }
  const now = Date.now();
  const since = parseTime(v.since!, now, '--since');
  const until = parseTime(v.until!, now, '--until');
  if (until <= since) throw new ConfigError('--until must be after --since');
  const t = target({ url: v.url, token: v.token, dataDir: v['data-dir'] });

  const total: Answer = { acknowledged: 0, landed: 0, missing: 0, collapsed: 0, repaired: 0, missingEvents: [], drops: [] };
  const slices = Math.ceil((until - since) / SLICE_MS);
  const tty = process.stderr.isTTY;
  for (let i = 0; i < slices; i++) {
    const a = since + i * SLICE_MS;
    const b = Math.min(until, a + SLICE_MS);
    const body = await callApi<{ data: Answer }>(t, 'POST', '/v1/events/reconcile', {
      since: new Date(a).toISOString(), until: new Date(b).toISOString(), repair: v.repair, limit: 1000, ...(v.org ? { orgId: v.org } : {}),
    });
    const d = body.data;
    for (const k of ['acknowledged', 'landed', 'missing', 'collapsed', 'repaired'] as const) total[k] += d[k];
    total.missingEvents.push(...d.missingEvents.slice(0, Math.max(0, 1000 - total.missingEvents.length)));
    total.drops = d.drops;
    if (tty) process.stderr.write(`\rchecked ${i + 1}/${slices} hour(s): ${total.acknowledged} acknowledged, ${total.missing} missing`);
  }
  if (tty) process.stderr.write('\n');

  if (v.json) {
    process.stdout.write(JSON.stringify({ since: new Date(since).toISOString(), until: new Date(until).toISOString(), ...total }, null, 2) + '\n');
  } else {
    const w = (s: string) => process.stdout.write(s + '\n');
    w(`window            ${new Date(since).toISOString()} .. ${new Date(until).toISOString()}`);
    w(`acknowledged      ${total.acknowledged} track events`);
    w(`in the store      ${total.landed}`);
    w(`missing           ${total.missing}${v.repair ? ` (repaired ${total.repaired})` : ''}`);
    w(`extra copies      ${total.collapsed} (collapsed on read)`);
    for (const m of total.missingEvents) w(`  missing ${m.eventId} messageId=${m.messageId} org=${m.orgId} app=${m.appId} profile=${m.profileId} stored ${m.storedAt}`);
    if (total.missing > total.missingEvents.length) w(`  ... and ${total.missing - total.missingEvents.length} more`);
    w('dropped or collapsed on purpose (all time):');
    for (const x of total.drops) w(`  ${x.reason.padEnd(20)} ${String(x.count).padStart(10)}  ${x.description}`);
  }
  return total.missing > total.repaired ? 1 : 0;
}
