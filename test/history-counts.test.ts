// Event predicates count from per-day totals (event_counts, kept by triggers on event_history) plus
// the rows of a window's first day: the counts must equal a count of the history rows themselves,
// whatever writes, moves or deletes them, and at every edge of a UTC day. Runs on the store of the
// pass: a database of its own on the PostgreSQL server (DATABASE_URL), else embedded Postgres.
import t from 'tap';
import { openOwnStore } from '../pipeline/store/own-store.js';
import { PG_MIGRATIONS } from '../pipeline/store/migrations.js';
import { countEvents, type CountSpec } from '../pipeline/segments/history.js';

const DAY = 86_400_000;
// A clock 6 h 30 min into a UTC day: a 7-day window starts at 06:30 seven days back.
const NOW = Date.parse('2026-06-15T06:30:00.000Z');
const at = (ms: number) => new Date(ms).toISOString();
const cut7 = NOW - 7 * DAY;
const midnight7 = Date.parse('2026-06-08T00:00:00.000Z');

/** Brute force: the rows of (profile, name) at or after `from`. */
async function rows(q: (s: string, p?: unknown[]) => Promise<Array<Record<string, unknown>>>, profile: string, name: string, from: number | null): Promise<number> {
  const r = await q('SELECT count(*)::int AS n FROM event_history WHERE profile_id = $1 AND name = $2 AND ($3::timestamptz IS NULL OR ts >= $3)',
    [profile, name, from === null ? null : at(from)]);
  return r[0]!.n as number;
}

t.test('window counts at the edges of a day equal the rows', async (t) => {
  const s = await openOwnStore({ url: process.env.DATABASE_URL, prefix: 'hw_counts' });
  t.teardown(() => s.close());
  // Each case: the timestamps stored (ms offsets from the 7-day window's start) and the 7-day count.
  const cases: Array<{ name: string; offsets: number[]; within7: number }> = [
    { name: 'none', offsets: [], within7: 0 },
    { name: 'exactly at the start counts', offsets: [0], within7: 1 },
    { name: 'a millisecond before the start does not', offsets: [-1], within7: 0 },
    { name: 'earlier on the start day does not', offsets: [midnight7 - cut7, midnight7 - cut7 + 1000], within7: 0 },
    { name: 'later on the start day does', offsets: [1, 3_600_000, midnight7 + DAY - 1 - cut7], within7: 3 },
    { name: 'the start day both sides', offsets: [-5, -1, 0, 5], within7: 2 },
    { name: 'the next midnight and after', offsets: [midnight7 + DAY - cut7, 2 * DAY, 6 * DAY], within7: 3 },
    { name: 'the day before the start day', offsets: [midnight7 - 1 - cut7, -DAY], within7: 0 },
    { name: 'future timestamps count', offsets: [8 * DAY, 400 * DAY], within7: 2 },
    { name: 'many on one day', offsets: Array.from({ length: 250 }, (_, i) => i * 1000), within7: 250 },
    { name: 'long ago', offsets: [-300 * DAY, -20 * DAY], within7: 0 },
  ];
  const specs: CountSpec[] = [];
  const expected: number[] = [];
  for (const [i, c] of cases.entries()) {
    const p = `prf_counts_${i}`;
    if (c.offsets.length) {
      await s.q(`INSERT INTO event_history (profile_id, name, ts) SELECT $1, 'Viewed', unnest($2::timestamptz[])`, [p, c.offsets.map((o) => at(cut7 + o))]);
    }
    t.equal(await rows(s.q, p, 'Viewed', cut7), c.within7, `${c.name}: the rows say so`);
    specs.push({ profileId: p, name: 'Viewed', withinDays: 7, limit: 1_000_000 }, { profileId: p, name: 'Viewed', limit: 1_000_000 },
      { profileId: p, name: 'Viewed', withinDays: 30, limit: 1_000_000 }, { profileId: p, name: 'Other', limit: 1_000_000 });
    expected.push(c.within7, c.offsets.length, await rows(s.q, p, 'Viewed', NOW - 30 * DAY), 0);
  }
  const got = await countEvents(s.client, specs, NOW);
  for (const [i, c] of cases.entries()) {
    t.same(got.slice(4 * i, 4 * i + 4), expected.slice(4 * i, 4 * i + 4), `${c.name}: 7 days, all history, 30 days, another name`);
  }
  // More than four windows of one (profile, name) take a second group; counts are capped at `limit`.
  const windows = [1, 2, 3, 7, 8, 30];
  const many = await countEvents(s.client, windows.map((d) => ({ profileId: 'prf_counts_6', name: 'Viewed', withinDays: d, limit: 2 })), NOW);
  const full = await Promise.all(windows.map((d) => rows(s.q, 'prf_counts_6', 'Viewed', NOW - d * DAY)));
  t.same(many, full.map((n) => Math.min(n, 2)), 'six windows of one profile and name, each capped at its limit');
});

t.test('moves and deletes keep the day totals equal to the rows', async (t) => {
  const s = await openOwnStore({ url: process.env.DATABASE_URL, prefix: 'hw_counts' });
  t.teardown(() => s.close());
  const totals = async () => s.q(`SELECT profile_id, name, day::text, n FROM event_counts ORDER BY 1, 2, 3`);
  const fromRows = async () => s.q(`SELECT profile_id, name, ((ts AT TIME ZONE 'UTC')::date)::text AS day, count(*)::int AS n
    FROM event_history GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`);
  const base = Date.parse('2026-03-01T23:59:59.000Z');
  // Three profiles, two names, over four days, written in several statements (one statement may
  // touch a total several times).
  for (let k = 0; k < 4; k++) {
    await s.q(`INSERT INTO event_history (profile_id, name, ts) SELECT p, n, $1::timestamptz + g * interval '1 second'
      FROM unnest(ARRAY['prf_a', 'prf_b', 'prf_c']) p, unnest(ARRAY['Viewed', 'Bought']) n, generate_series(0, $2::int) g`, [at(base + k * 43_200_000), k + 1]);
  }
  t.same(await totals(), await fromRows(), 'after inserts');
  t.ok((await totals()).length > 10, 'several totals');
  // A merge moves the merged profiles' rows onto the survivor (pipeline/identity.ts).
  await s.q(`UPDATE event_history SET profile_id = $1 WHERE profile_id = ANY($2)`, ['prf_a', ['prf_b']]);
  t.same(await totals(), await fromRows(), 'after a merge');
  t.same((await totals()).filter((r) => r.profile_id === 'prf_b'), [], 'the merged profile has no totals left');
  // Retention deletes rows older than a cutoff (part of a day), erasure a profile's rows.
  await s.q(`DELETE FROM event_history WHERE ts < $1`, [at(base + 43_200_000 + 1500)]);
  t.same(await totals(), await fromRows(), 'after a retention cutoff inside a day');
  await s.q(`DELETE FROM event_history WHERE profile_id = $1`, ['prf_c']);
  t.same(await totals(), await fromRows(), 'after an erasure');
  t.same((await s.q(`SELECT count(*)::int AS n FROM event_counts WHERE n <= 0`))[0]!.n, 0, 'no empty totals kept');
  // A rolled-back write leaves the totals as they were.
  const before = await totals();
  await s.q('BEGIN');
  await s.q(`INSERT INTO event_history (profile_id, name, ts) VALUES ('prf_a', 'Viewed', now())`);
  await s.q('ROLLBACK');
  t.same(await totals(), before, 'after a rollback');
});

t.test('migration 38 counts the history a store already has', async (t) => {
  const before = PG_MIGRATIONS.filter((m) => m.version < 38);
  const m38 = PG_MIGRATIONS.find((m) => m.version === 38)!;
  const s = await openOwnStore({ url: process.env.DATABASE_URL, prefix: 'hw_counts', migrations: before });
  t.teardown(() => s.close());
  await s.q(`INSERT INTO event_history (profile_id, name, ts) SELECT 'prf_old', 'Viewed', $1::timestamptz - g * interval '5 hours' FROM generate_series(1, 40) g`, [at(NOW)]);
  await s.q('BEGIN');
  for (const sql of m38.statements) await s.q(sql);
  await s.q('COMMIT');
  t.same(await countEvents(s.client, [{ profileId: 'prf_old', name: 'Viewed', limit: 1000 }, { profileId: 'prf_old', name: 'Viewed', withinDays: 3, limit: 1000 }], NOW),
    [40, await rows(s.q, 'prf_old', 'Viewed', NOW - 3 * DAY)], 'all history and a window, from rows stored before the migration');
  await s.q(`INSERT INTO event_history (profile_id, name, ts) VALUES ('prf_old', 'Viewed', $1)`, [at(NOW - 1000)]);
  t.same(await countEvents(s.client, [{ profileId: 'prf_old', name: 'Viewed', limit: 1000 }], NOW), [41], 'and rows written after it');
});
