// What the stores' part of the write path costs, measured in one process without HTTP or a load
// generator, so that a change to a statement or a table reads in microseconds per call, steadily:
//   - embedded Postgres (PGlite, started as headwater starts it, migrated): headwater_track_fast per
//     call for the batch scenarios' two shapes (userId among 1,000 known profiles; a new profile per
//     call), each with no segment naming the event and with one (its history kept), the first shape's
//     statement sent again (every messageId stored: replays), and beside it
//     the parts measured alone on rows of the same shape: parsing the rows, the messages insert,
//     the segment-history insert, the profile and identifier inserts (each with its input's
//     parsing taken out);
//   - ClickHouse (chDB): the JSONEachRow insert of the events table per event, and the same rows into
//     a Null-engine table (parsing alone).
// The argument is built as pipeline/fast-track.ts builds it (migrations 26 and 27 describe it);
// keep the two in step. `node dist/bench/store-costs.js [--statements N] [--calls N]`
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { PGlite } from '@electric-sql/pglite';
import { startPglite } from '../pipeline/store/pglite-start.js';
import { CH_MIGRATIONS, PG_MIGRATIONS } from '../pipeline/store/migrations.js';
import { eventRow } from '../pipeline/store/events.js';
import { trackEvent } from '../pipeline/calls.js';
import { newId } from '../pipeline/ids.js';
import type { EventRecord, IngestCall } from '../pipeline/types.js';

const { values: flags } = parseArgs({ options: { statements: { type: 'string', default: '120' }, calls: { type: 'string', default: '400' } } });
const STATEMENTS = Math.max(20, Number(flags.statements));
const CALLS = Math.max(1, Number(flags.calls));
const WARM = 10;
const ORG = 'org_01jbenchstorecosts00000000', APP = 'app_01jbenchstorecosts00000000', SRC = 'src_01jbenchstorecosts00000000';

/** A track call as the batch scenarios send it, received now. */
function call(userId: string, n: number): IngestCall {
  return {
    id: newId('cal'), kind: 'track', orgId: ORG, appId: APP, sourceId: SRC, environment: 'production', receivedAt: Date.now(),
    body: { identifiers: { userId }, event: 'Page Viewed', properties: { path: '/pricing', plan: 'pro', n }, messageId: `m-${newId('msg')}` },
  } as IngestCall;
}

async function setup(dir: string): Promise<{ db: PGlite; users: string[] }> {
  const db = await startPglite(dir);
  for (const m of PG_MIGRATIONS) for (const s of m.statements) await db.exec(s);
  await db.exec(`INSERT INTO orgs (id, name) VALUES ('${ORG}', 'bench');
    INSERT INTO apps (id, org_id, name, environment, created_at, updated_at) VALUES ('${APP}', '${ORG}', 'bench', 'production', now(), now());
    INSERT INTO sources (id, org_id, app_id, kind, created_at, updated_at) VALUES ('${SRC}', '${ORG}', '${APP}', 'http', now(), now())`);
  const users = Array.from({ length: 1000 }, () => newId('prf'));
  await db.query(`INSERT INTO profiles (id, org_id, app_id, source_id, environment, created_at, updated_at)
    SELECT id, $1, $2, $3, 'production', now(), now() FROM unnest($4::text[]) id`, [ORG, APP, SRC, users]);
  await db.query(`INSERT INTO identifiers (org_id, app_id, kind, value, profile_id, created_at)
    SELECT $1, $2, 'userId', 'user-' || i, p, now() FROM unnest($3::text[]) WITH ORDINALITY AS u(p, i)`, [ORG, APP, users]);
  return { db, users };
}

/** One statement's argument: `calls` track calls, on known profiles or each on a new one. */
function argument(shape: 'known' | 'new', users: string[], named = false) {
  const rows: unknown[] = []; const born: unknown[] = []; const bornIds: unknown[] = [];
  for (let n = 0; n < CALLS; n++) {
    const isNew = shape === 'new';
    const profile = isNew ? newId('prf') : users[Math.floor(Math.random() * users.length)]!;
    const c = call(isNew ? `new-${newId('usr')}` : 'user', n);
    const e = trackEvent(c, profile);
    rows.push({ o: ORG, a: APP, m: e.messageId, r: { event: e }, p: profile, ...(isNew ? { n } : {}) });
    if (isNew) {
      born.push({ n, id: profile, o: ORG, a: APP, s: SRC, e: 'production', t: e.receivedAt });
      bornIds.push({ n, o: ORG, a: APP, k: 'userId', v: (c.body as { identifiers: { userId: string } }).identifiers.userId, p: profile, t: e.receivedAt });
    }
  }
  // `named`: a segment names the event, so its history is kept (migration 33).
  const watch = named ? [`${ORG}\u0001Page Viewed`] : [];
  const arg = { lock: false, orgs: [{ id: ORG, cv: 0, sv: 0, iv: 0 }], segKeys: [], sources: [SRC], rows, watch, ...(born.length ? { born, bornIds, locks: [] } : {}) };
  return { arg: JSON.stringify(arg), rows: JSON.stringify(rows), born: JSON.stringify(born), bornIds: JSON.stringify(bornIds) };
}

/** Microseconds per call of each part, over STATEMENTS statements of CALLS calls (the first WARM left out). */
async function pglite(shape: 'known' | 'new'): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'hw-store-costs-'));
  const { db, users } = await setup(dir);
  const ms: Record<string, number> = {};
  const time = async (part: string, i: number, sql: string, params: unknown[]) => {
    const t0 = performance.now();
    await db.query(sql, params);
    if (i >= WARM) ms[part] = (ms[part] ?? 0) + performance.now() - t0;
  };
  try {
    for (let i = 0; i < STATEMENTS; i++) {
      const a = argument(shape, users);
      await time('headwater_track_fast', i, 'SELECT headwater_track_fast($1::jsonb) AS r', [a.arg]);
      // The same calls again: every messageId stored, each answered with its stored original. (Sent
      // again, a new profile's calls are deferred instead: their identifiers are owned now.)
      if (shape === 'known') await time('replay', i, 'SELECT headwater_track_fast($1::jsonb) AS r', [a.arg]);
      await time('fast named', i, 'SELECT headwater_track_fast($1::jsonb) AS r', [argument(shape, users, true).arg]);
      // The parts alone, on rows of their own (fresh messageIds and profiles, as the statement's);
      // each parses its input, so that parsing is measured alone too and taken out below.
      const b = argument(shape, users);
      await time('parse rows', i, `SELECT jsonb_array_length($1::jsonb)`, [b.rows]);
      await time('messages', i, `INSERT INTO messages (org_id, app_id, message_id, kind, result)
        SELECT x.o, x.a, x.m, 'track', x.r FROM jsonb_to_recordset($1::jsonb) AS x(o text, a text, m text, r jsonb) ORDER BY 1, 2, 3`, [b.rows]);
      await time('history', i, `INSERT INTO event_history (profile_id, name, ts)
        SELECT x.r #>> '{event,profileId}', x.r #>> '{event,event}', (x.r #>> '{event,timestamp}')::timestamptz FROM jsonb_to_recordset($1::jsonb) AS x(r jsonb)`, [b.rows]);
      if (shape === 'new') {
        await time('parse born', i, `SELECT jsonb_array_length($1::jsonb)`, [b.born]);
        await time('profiles', i, `INSERT INTO profiles (id, org_id, app_id, source_id, environment, traits, consent, created_at, updated_at)
          SELECT x.id, x.o, x.a, x.s, x.e, '{}', '{}', x.t, x.t FROM jsonb_to_recordset($1::jsonb) AS x(id text, o text, a text, s text, e text, t timestamptz)`, [b.born]);
        await time('parse bornIds', i, `SELECT jsonb_array_length($1::jsonb)`, [b.bornIds]);
        await time('identifiers', i, `INSERT INTO identifiers (org_id, app_id, kind, value, profile_id, created_at)
          SELECT x.o, x.a, x.k, x.v, x.p, x.t FROM jsonb_to_recordset($1::jsonb) AS x(o text, a text, k text, v text, p text, t timestamptz)`, [b.bornIds]);
      }
    }
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const us = (k: string) => ((ms[k] ?? 0) * 1000) / ((STATEMENTS - WARM) * CALLS);
  const out: Record<string, number> = {
    'headwater_track_fast, no segment names the event': us('headwater_track_fast'),
    'headwater_track_fast, a segment names it (history)': us('fast named'),
    ...(shape === 'known' ? { 'headwater_track_fast, the same calls again (replays)': us('replay') } : {}),
    '  parsing the rows (call records and answers)': us('parse rows'),
    '  messages insert (stored answers), parsing out': us('messages') - us('parse rows'),
    '  segment history insert, parsing out': us('history') - us('parse rows'),
  };
  if (shape === 'new') {
    out['  profiles insert, parsing out'] = us('profiles') - us('parse born');
    out['  identifiers insert, parsing out'] = us('identifiers') - us('parse bornIds');
  }
  return out;
}

/** Process CPU microseconds per event of chDB inserts of 5,000 events, into the events table and a Null table. */
async function chdb(): Promise<Record<string, number>> {
  const { Session } = await import('chdb');
  const dir = mkdtempSync(join(tmpdir(), 'hw-store-costs-ch-'));
  const s = new Session(dir, { connectionArgs: ['--max_thread_pool_free_size=0'] });
  const out: Record<string, number> = {};
  try {
    for (const m of CH_MIGRATIONS) for (const q of m.statements) s.query(q);
    s.query('CREATE TABLE events_null AS events ENGINE = Null');
    // The rows as headwater's landing writes them (pipeline/store/events.ts).
    const rows = (events: EventRecord[]) => events.map((e) => JSON.stringify(eventRow(e))).join('\n');
    const batch = () => Array.from({ length: 5000 }, (_, n) => trackEvent(call('user', n), newId('prf')));
    for (const table of ['events', 'events_null']) {
      const bodies = Array.from({ length: 12 }, () => `INSERT INTO ${table} FORMAT JSONEachRow\n${rows(batch())}`);
      await s.queryAsync(bodies[0]!, { format: 'CSV' }); await s.queryAsync(bodies[1]!, { format: 'CSV' });
      const c0 = process.cpuUsage();
      for (const b of bodies.slice(2)) await s.queryAsync(b, { format: 'CSV' });
      const c = process.cpuUsage(c0);
      out[table === 'events' ? 'insert into events (ReplacingMergeTree)' : '  into a Null table (parsing alone)'] = (c.user + c.system) / (10 * 5000);
    }
  } finally {
    s.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

const show = (title: string, r: Record<string, number>) => {
  process.stdout.write(`${title}\n`);
  for (const [k, v] of Object.entries(r)) process.stdout.write(`  ${k.padEnd(52)} ${v.toFixed(1).padStart(7)} us\n`);
};
process.stdout.write(`store costs: ${STATEMENTS - WARM} statements of ${CALLS} calls measured per shape (after ${WARM}), Node ${process.version}\n`);
show('PGlite, per call, userId among 1,000 known profiles (batch20-users1000):', await pglite('known'));
show('PGlite, per call, a new profile per call (batch20-newusers):', await pglite('new'));
show('chDB, CPU per event, inserts of 5,000:', await chdb());
