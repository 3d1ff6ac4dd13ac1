// Reconciliation of acknowledged track events with the event store (POST /v1/events/reconcile and
// `headwater doctor`): a clean run reports nothing missing and every drop reason (SDK retries of
// stored calls emit no second copy of their event, so none is counted as re-emitted); an
// acknowledged event that never reached ClickHouse (its stored answer written straight into
// Postgres, servers mode only) is listed, repaired with --repair, and then read back.
import t from 'tap';
import pg from 'pg';
import { call, createAppFixture, expectError, metric, poll, startServer, trackCall, uid } from './helpers/server.js';
import { hw, oneLineFailure } from './helpers/cli.js';

const s = await startServer();
t.teardown(() => s.close());
const f = await createAppFixture(s);
const orgId = f.org.org.id;
const doctor = (...args: string[]) => hw(['doctor', '--url', s.url, '--token', s.operatorToken, '--org', orgId, ...args]);

const listed = async (event: string) => {
  const r = await call(s.url, 'GET', `/v1/events?event=${encodeURIComponent(event)}&limit=100`, { token: f.admin });
  return (r.body?.data ?? []) as Array<{ id: string; messageId: string }>;
};

t.test('acknowledged events all landed: nothing missing, retries not emitted again', async (t) => {
  const sent: Array<{ messageId: string; id: string }> = [];
  for (let i = 0; i < 12; i++) {
    const messageId = uid('msg');
    const r = await trackCall(s, f, { messageId, event: 'Reconciled', identifiers: { userId: uid('u') } });
    t.equal(r.status, 201, `track ${i} accepted`);
    sent.push({ messageId, id: r.body.data.id });
  }
  for (const m of sent.slice(0, 4)) {
    const r = await trackCall(s, f, { messageId: m.messageId, event: 'Reconciled', identifiers: { userId: uid('u') } });
    t.equal(r.body?.data?.id, m.id, 'a replay answers the original event');
  }
  // Counted (in this process's metrics) before the answers went out: none of the four was emitted again.
  t.equal(await metric(s, 'headwater_dropped_total', { reason: 'replayed_events' }), 0, 'the retries emitted no event again');
  const all = await poll(() => listed('Reconciled'), (l) => l.length >= 12, 15_000);
  t.equal(all.length, 12, 'every event listed once');

  let out: any;
  await poll(async () => {
    const r = await doctor('--since', '10m', '--until', '0s', '--json');
    out = r.code === 0 ? JSON.parse(r.stdout) : { code: r.code, stderr: r.stderr };
    return out;
  }, (o) => o.landed >= 12, 20_000, 500);
  t.equal(out.acknowledged, 12, 'twelve acknowledged track events in the window');
  t.equal(out.landed, 12, 'all of them in the event store');
  t.equal(out.missing, 0, 'none missing');
  t.same(out.missingEvents, []);
  t.same(out.drops.map((d: any) => d.reason).sort(), ['abandoned_calls', 'duplicate_messages', 'relanded_events', 'replayed_events'], 'every reason reported');

  const text = await doctor('--since', '10m', '--until', '0s');
  t.equal(text.code, 0, 'exit 0 when nothing is missing');
  t.match(text.stdout, /missing\s+0/);
});

t.test('the route is for the operator, with a bounded window', async (t) => {
  const body = (since: string, until: string) => ({ data: { since, until } });
  const asKey = await call(s.url, 'POST', '/v1/events/reconcile', { token: f.key, body: body('2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z') });
  t.equal(asKey.status, 401, 'an API key is not an operator credential');
  const asAdmin = await call(s.url, 'POST', '/v1/events/reconcile', { token: f.admin, body: body('2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z') });
  t.equal(asAdmin.status, 401, 'nor is an admin session');
  const cases: Array<[string, unknown]> = [
    ['until before since', body('2026-01-02T00:00:00Z', '2026-01-01T00:00:00Z')],
    ['more than 24 hours', body('2026-01-01T00:00:00Z', '2026-01-03T00:00:00Z')],
    ['not a date-time', body('yesterday', '2026-01-01T00:00:00Z')],
    ['a number', { data: { since: 1, until: 2 } }],
    ['a NUL in orgId', { data: { ...body('2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z').data, orgId: 'a\u0000b' } }],
  ];
  for (const [what, b] of cases) {
    const r = await call(s.url, 'POST', '/v1/events/reconcile', { token: s.operatorToken, body: b });
    if (what === 'a NUL in orgId') t.ok(r.status === 200 || r.status === 422, `${what}: ${r.status}, never a 500`);
    else expectError(t, r, 422, 'validation_failed', what);
  }
  oneLineFailure(t, await doctor('--since', 'tuesday'), /--since/, 'a bad --since');
  oneLineFailure(t, await hw(['doctor', '--url', s.url, '--token', 'hwo_wrong']), /401/, 'a wrong token');
});

t.test('an acknowledged event missing from the store is listed and repaired', async (t) => {
  if (!s.databaseUrl) { t.plan(0, 'writes Postgres directly: servers mode only'); return; }
  const r = await trackCall(s, f, { event: 'Lost', identifiers: { userId: uid('u') } });
  t.equal(r.status, 201);
  await poll(() => listed('Lost'), (l) => l.length === 1, 15_000);
  // An answer stored like any other whose event never reached the stream: what a dropped message leaves.
  const lost = { ...r.body.data, id: `evt_lost${uid('')}`, messageId: uid('msg-lost') };
  const db = new pg.Client({ connectionString: s.databaseUrl });
  await db.connect();
  t.teardown(() => db.end());
  await db.query(`INSERT INTO messages (org_id, app_id, message_id, kind, result) VALUES ($1, $2, $3, 'track', $4::jsonb)`,
    [orgId, f.app.id, lost.messageId, JSON.stringify({ event: lost })]);

  const found = await doctor('--since', '10m', '--until', '0s');
  t.equal(found.code, 1, 'exit 1 while an acknowledged event is missing');
  t.match(found.stdout, /missing\s+1/);
  t.match(found.stdout, new RegExp(`missing ${lost.id} messageId=${lost.messageId}`), 'the missing event is named with its messageId');

  const repaired = await doctor('--since', '10m', '--until', '0s', '--repair');
  t.equal(repaired.code, 0, 'exit 0 once repaired');
  t.match(repaired.stdout, /repaired 1/);
  const back = await listed('Lost');
  t.same(back.map((e) => e.id).sort(), [lost.id, r.body.data.id].sort(), 'the repaired event is listed');
  const again = await doctor('--since', '10m', '--until', '0s', '--json');
  t.equal(JSON.parse(again.stdout).missing, 0, 'nothing missing afterwards');
});
