// Holdouts and splits through a pushed project: the holdout share and the split weights over 2,000
// profiles (created with batch ingestion; shares within 4.5 standard deviations of the binomial), stable assignment on a second entry, a split answered
// from the journal on replay and recorded as `variants`, and the SDK's testing ctx choosing as the
// service does.
import t from 'tap';
import { runJourney } from '../sdk/testing.js';
import { journey } from '../sdk/index.js';
import { call, createAppFixture, poll, startServer, uid } from './helpers/server.js';
import { consenting, deployJourneys, ended, execution, fire, untilExecutions } from './helpers/journeys.js';

const s = await startServer();
t.teardown(() => s.close());
const fx = await createAppFixture(s);
const admin = fx.org.sessions.admin;

await deployJourneys(s, fx, [
  { key: 'ab', body: `await ctx.split('cta', { B: 30, A: 70 });`, options: { holdout: 20, goal: { event: 'bought', within: '1h' } } },
  { key: 'ab_nap', body: `const v = await ctx.split('cta', { A: 1, B: 1, C: 2 }); await ctx.sleep('300ms'); await ctx.traits.set('variant', v);` },
]);

const batch = (calls: unknown[]) => call(s.url, 'POST', '/v1/batch', { token: fx.key, body: { data: { sourceId: fx.source.id, calls } } });

/** Every execution of a journey (pages of 100). */
async function all(journey: string): Promise<any[]> {
  const out: any[] = [];
  let cursor = '';
  for (;;) {
    const r = await call(s.url, 'GET', `/v1/executions?journey=${journey}&limit=100${cursor ? `&cursor=${cursor}` : ''}`, { token: admin });
    out.push(...r.body.data);
    if (!r.body.meta.hasMore) return out;
    cursor = r.body.meta.nextCursor;
  }
}

const N = 2000;
const users = Array.from({ length: N }, (_, i) => `${uid('s')}-${i}`);

/**
 * How far a share of `n` assignments (percent) may stray from `p` (percent): 4.5 standard deviations
 * of the binomial. Profile ids are random, so the shares are too: a fixed 3 points was 2.6 standard
 * deviations for the split (one run in a hundred failed); a wrong split (weights swapped, even) is
 * still 20 points off.
 */
const tolerance = (p: number, n: number) => 4.5 * 100 * Math.sqrt((p / 100) * (1 - p / 100) / n);

t.test('holdout 20 % and split 70/30 over 2,000 profiles, within 4.5 standard deviations; stable on a second entry', async (t) => {
  for (let i = 0; i < N; i += 500) {
    const ids = await batch(users.slice(i, i + 500).map((u) => ({ type: 'identify', identifiers: { userId: u }, traits: { consent: { onboarding: true } } })));
    t.ok(ids.status === 200 && ids.body.data.every((x: any) => x.status === 200), ids.text.slice(0, 200));
  }
  for (let i = 0; i < N; i += 500) {
    const r = await batch(users.slice(i, i + 500).map((u) => ({ type: 'track', identifiers: { userId: u }, event: 'ab_go', messageId: uid('m') })));
    t.ok(r.status === 200 && r.body.data.every((x: any) => x.status === 201), r.text.slice(0, 200));
  }
  await poll(() => all('ab'), (l) => l.length === N && l.every(ended), 40_000, 1000);
  const l = await all('ab');
  t.ok(l.every((x) => x.status === 'completed'), 'all completed');
  const held = l.filter((x) => x.holdout);
  t.ok(Math.abs((held.length / N) * 100 - 20) <= tolerance(20, N), `holdout share ${((held.length / N) * 100).toFixed(1)} % of ${N}`);
  t.ok(held.every((x) => x.journalEntries === 0 && Object.keys(x.variants).length === 0 && x.endedAt), 'held-out executions ran no code');
  const ran = l.filter((x) => !x.holdout);
  const a = ran.filter((x) => x.variants.cta === 'A').length;
  t.equal(a + ran.filter((x) => x.variants.cta === 'B').length, ran.length, 'every executed one has a variant');
  t.ok(Math.abs((a / ran.length) * 100 - 70) <= tolerance(70, ran.length), `variant A share ${((a / ran.length) * 100).toFixed(1)} % of ${ran.length}`);

  // A conversion counts for a held-out execution too.
  const h = held[0];
  const prof = await call(s.url, 'GET', `/v1/profiles/${h.profileId}`, { token: admin });
  const hUser = prof.body.data.identifiers.find((i: any) => i.kind === 'userId').value;
  await fire(s, fx, hUser, 'bought');
  const [hc] = await untilExecutions(s, admin, { journey: 'ab', profileId: h.profileId }, (x) => x[0]?.converted === true, 10_000);
  t.same([hc.holdout, hc.converted, hc.status], [true, true, 'completed'], 'a held-out execution converts');

  // The same 100 profiles enter again: the same holdout answer and the same variant.
  const byProfile = new Map(l.map((x) => [x.profileId, x]));
  const again = users.slice(0, 100);
  const r = await batch(again.map((u) => ({ type: 'track', identifiers: { userId: u }, event: 'ab_go', messageId: uid('m') })));
  t.ok(r.status === 200 && r.body.data.every((x: any) => x.status === 201), r.text.slice(0, 200));
  await poll(() => all('ab'), (x) => x.filter((e) => ended(e)).length === N + 100, 20_000, 300);
  const firstIds = new Set(l.map((x) => x.id));
  const second = (await all('ab')).filter((x) => !firstIds.has(x.id) && x.id !== hc.id);
  t.equal(second.length, 100);
  const same = second.filter((x) => {
    const first = byProfile.get(x.profileId)!;
    return first.holdout === x.holdout && first.variants.cta === x.variants.cta;
  }).length;
  t.equal(same, 100, 'stable assignment on the second entry');
});

t.test('a split is journaled, answered from the journal after the sleep, and the testing ctx agrees', async (t) => {
  const seen = new Map<string, string>();
  for (let i = 0; i < 6; i++) {
    const u = uid('n');
    const p = await consenting(s, fx, { userId: u });
    await fire(s, fx, u, 'ab_nap_go');
    const [x] = await untilExecutions(s, admin, { journey: 'ab_nap', profileId: p.id }, (l) => l.length === 1 && ended(l[0]), 15_000);
    t.equal(x.status, 'completed', x.error);
    const d = (await execution(s, admin, x.id)).body.data;
    t.same(d.journal[0].call, { name: 'split', args: { name: 'cta', weights: { A: 1, B: 1, C: 2 } } }, 'journaled as a call');
    const v = d.journal[0].result.value;
    t.same(x.variants, { cta: v }, 'recorded as variants');
    const prof = await call(s.url, 'GET', `/v1/profiles/${p.id}`, { token: admin });
    t.equal(prof.body.data.traits.variant, v, 'the replay after the sleep answered the same variant');
    const def = journey({ key: 'ab_nap', trigger: { event: 'ab_nap_go' }, purpose: 'onboarding' }, async (ctx) => { await ctx.traits.set('variant', await ctx.split('cta', { A: 1, B: 1, C: 2 })); });
    const local = await runJourney(def, { event: 'ab_nap_go', profile: { id: p.id } });
    t.equal(local.traits[0] && 'value' in local.traits[0] ? local.traits[0].value : null, v, 'runJourney chooses as the service does');
    seen.set(p.id, v);
  }
  t.ok(seen.size === 6);
});
