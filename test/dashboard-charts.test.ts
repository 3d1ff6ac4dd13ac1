// The dashboard's numbers and pictures in real headless Chromium (docs/dashboard.md), one service and
// one org: the overview's events chart holds the API's counts for a seeded load of accepted,
// quarantined, denied and rejected track calls, and its numbers link to their pages; the first
// page's JavaScript (chart chunk included) stays under 60 KB gzip; the profile list shows names and
// e-mails and its search narrows it, a profile's traits are a key / value table; an execution's
// journal shows each entry's position and the time it was recorded (not 1970); a journey's page
// says its trigger in words and shows the API's metrics, whose totals equal the executions listed;
// a journey with a holdout, a goal, a split and an exit rule has metrics (totals, rates, lift,
// variants, throttled) equal to the counts of the executions listed with their filters, and its page
// shows the funnel, the conversion against the holdout with the lift, and the variants side by side.
// Needs Debian's `chromium` (.ci/run installs it); skipped with a message when it is missing.
import t from 'tap';
import { existsSync } from 'node:fs';
import { type Page } from 'playwright-core';
import { CHROMIUM, launchBrowser } from './helpers/browser.js';
import { startServer, call, createAppFixture, identifyCall, poll, rawRequest, trackCall, uid } from './helpers/server.js';
import { consenting, deployJourneys, executions, fire, untilExecutions } from './helpers/journeys.js';

if (!existsSync(CHROMIUM)) {
  t.plan(0, `${CHROMIUM} is not installed (apt-get install chromium; .ci/run installs it)`);
} else {
  await main();
}

type Series = Record<string, number[]>;

/** What the page's uPlot instance holds: its x values (epoch seconds) and each series by label. */
async function plotted(page: Page, testid: string): Promise<{ x: number[]; series: Series }> {
  const el = page.getByTestId(testid).locator('.plot');
  await el.locator('canvas').waitFor();
  return el.evaluate((e: any) => {
    const u = e.uplot;
    const series: Record<string, number[]> = {};
    u.series.forEach((s: any, i: number) => { if (i > 0) series[s.label] = Array.from(u.data[i] as number[]); });
    return { x: Array.from(u.data[0] as number[]), series };
  });
}

/** Non-empty buckets only: bucket start (epoch s) -> values, for comparing windows taken moments apart. */
function nonEmpty(x: number[], series: Series): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  const labels = Object.keys(series).sort();
  x.forEach((at, i) => {
    const v = labels.map((l) => series[l]![i]!);
    if (v.some((n) => n > 0)) out[String(at)] = v;
  });
  return out;
}

async function main() {
  const s = await startServer();
  t.teardown(() => s.close());
  const browser = await launchBrowser(t);
  const f = await createAppFixture(s);
  const admin = f.admin;
  const ctx = await browser.newContext();
  t.teardown(() => ctx.close());
  const page = await ctx.newPage();
  const errors: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`${page.url()}: ${m.text()}`); });
  page.on('pageerror', (e) => errors.push(`${page.url()}: ${e.message}`));
  const scripts = new Set<string>();
  page.on('request', (r) => { if (r.url().endsWith('.js')) scripts.add(new URL(r.url()).pathname); });
  const signIn = `#token=${encodeURIComponent(f.org.sessions.admin)}`;

  // The seeded load: 5 accepted, 2 quarantined (strict policy, an unknown name), 2 denied, 1
  // rejected (its source is archived), and a segment entered (a system event, no track call).
  const who = uid('user');
  const accepted = uid('Accepted Event');
  const denied = uid('Denied Event');
  const held = uid('Held Event');
  t.test('a seeded load of track calls', async (t) => {
    // Entering a segment writes a system.segment_entered event: stored, but no track call.
    const seg = await call(s.url, 'POST', '/v1/segments', { token: admin, body: { data: { name: 'Movers', definition: { match: 'all', predicates: [{ kind: 'trait', name: 'stage', op: 'eq', value: 'moving' }] } } } });
    t.equal(seg.status, 201, seg.text);
    t.equal((await identifyCall(s, f, { identifiers: { userId: who }, traits: { stage: 'moving' } })).status, 200);
    const entered = await poll(() => call(s.url, 'GET', '/v1/events?event=system.segment_entered', { token: admin }), (r) => r.body?.data?.length === 1, 20_000, 200);
    t.equal(entered.body.data.length, 1, 'the segment transition is an event');
    for (let i = 0; i < 5; i++) t.equal((await trackCall(s, f, { identifiers: { userId: who }, event: accepted })).status, 201);
    t.equal((await call(s.url, 'POST', '/v1/catalog/events', { token: admin, body: { data: { name: denied } } })).status, 201);
    t.equal((await call(s.url, 'POST', `/v1/catalog/events/${encodeURIComponent(denied)}/state`, { token: admin, body: { data: { state: 'denied' } } })).status, 200);
    for (let i = 0; i < 2; i++) t.equal((await trackCall(s, f, { identifiers: { userId: who }, event: denied })).body?.error?.code, 'event_denied');
    t.equal((await call(s.url, 'PATCH', '/v1/settings', { token: admin, body: { data: { ingestionPolicy: 'strict' } } })).status, 200);
    for (let i = 0; i < 2; i++) t.equal((await trackCall(s, f, { identifiers: { userId: who }, event: held })).body?.data?.status, 'quarantined');
    t.equal((await call(s.url, 'PATCH', '/v1/settings', { token: admin, body: { data: { ingestionPolicy: 'permissive' } } })).status, 200);
    const src2 = await call(s.url, 'POST', `/v1/apps/${f.app.id}/sources`, { token: admin, body: { data: { name: 'old', kind: 'api' } } });
    t.equal(src2.status, 201, src2.text);
    t.equal((await call(s.url, 'DELETE', `/v1/sources/${src2.body.data.id}`, { token: admin })).status, 200);
    const refused = await trackCall(s, { ...f, source: src2.body.data }, { identifiers: { userId: who }, event: accepted });
    t.equal(refused.status, 403, `a track on an archived source is refused (${refused.text})`);
  });

  t.test('the events chart holds the API\'s counts, and the numbers link to their pages', async (t) => {
    const want = { accepted: 5, quarantined: 2, denied: 2, rejected: 1 };
    const api = await poll(() => call(s.url, 'GET', '/v1/stats/events?bucket=hour', { token: admin }),
      (r) => r.status === 200 && JSON.stringify(r.body.data.totals) === JSON.stringify(want), 20_000, 250);
    t.same(api.body.data.totals, want, 'the API counts the seeded load');
    t.equal(api.body.data.series.length, 25, '24 hours per hour: 25 bucket starts (the first one partly before the window)');
    const other = await createAppFixture(s);
    t.same((await call(s.url, 'GET', '/v1/stats/events?bucket=hour', { token: other.admin })).body.data.totals, { accepted: 0, quarantined: 0, denied: 0, rejected: 0 }, 'another org counts none of it');
    const tooMany = await call(s.url, 'GET', `/v1/stats/events?bucket=minute&since=${new Date(Date.now() - 3 * 86_400_000).toISOString()}`, { token: admin });
    t.equal(tooMany.body?.error?.code, 'validation_failed', `3 days per minute is over 1,500 buckets: 422 (${tooMany.status})`);
    t.equal((await call(s.url, 'GET', '/v1/stats/events', { token: f.key })).status, 401, 'an ingestion key may not read it');
    await page.goto(`${s.url}/ui/${signIn}`);
    const drawn = await plotted(page, 'events-chart');
    t.same(Object.keys(drawn.series), ['accepted', 'quarantined', 'denied', 'rejected'], 'four series');
    const fromApi: Series = { accepted: [], quarantined: [], denied: [], rejected: [] };
    for (const p of api.body.data.series) for (const k of Object.keys(fromApi)) fromApi[k]!.push(p[k]);
    t.same(nonEmpty(drawn.x, drawn.series), nonEmpty(api.body.data.series.map((p: any) => Date.parse(p.at) / 1000), fromApi), 'the drawn series equal the API\'s');
    for (const [k, n] of Object.entries(want)) {
      t.equal(drawn.series[k]!.reduce((a, b) => a + b, 0), n, `${k}: ${n} drawn`);
      t.equal(await page.getByTestId('events-totals').locator(`[data-outcome=${k}]`).textContent(), String(n));
    }
    await page.getByLabel('Per').selectOption('minute');
    await poll(async () => (await plotted(page, 'events-chart')).x.length, (n) => n > 1000, 10_000, 100);
    const perMinute = await plotted(page, 'events-chart');
    t.equal(perMinute.series.accepted!.reduce((a, b) => a + b, 0), 5, 'per minute: the same 5 accepted');
    // The numbers, each a link to its page.
    const sum = (await call(s.url, 'GET', '/v1/stats/summary', { token: admin })).body.data;
    t.equal(sum.profiles, 1);
    t.match(await page.getByTestId('stat-profiles').textContent(), new RegExp(`^${sum.profiles}Profiles`));
    t.match(await page.getByTestId('stat-emails').textContent(), /^0E-mails/);
    for (const [id, path] of [['stat-profiles', '/ui/profiles'], ['stat-segments', '/ui/segments'], ['stat-journeys', '/ui/journeys'], ['stat-emails', '/ui/emails'], ['stat-webhooks', '/ui/webhooks']]) {
      await page.goto(`${s.url}/ui/`);
      await page.getByTestId(id!).click();
      await page.waitForURL(new RegExp(`${path}(\\?|$)`));
      await page.locator('main h1').first().waitFor();
    }
    t.pass('each number opens its page');
  });

  t.test('the first page\'s JavaScript, chart chunk included, is under 60 KB gzip', async (t) => {
    scripts.clear();
    await page.goto(`${s.url}/ui/`);
    await plotted(page, 'events-chart');
    let bytes = 0;
    for (const p of scripts) bytes += Buffer.byteLength((await rawRequest(s.url, p, { method: 'GET', headers: { 'accept-encoding': 'gzip' } })).text, 'latin1');
    t.ok(scripts.size >= 2, `the chart code is a chunk of its own (${[...scripts].join(', ')})`);
    t.comment(`overview JS: ${scripts.size} files, ${bytes} bytes gzip`);
    t.ok(bytes > 0 && bytes < 60_000, `under 60 KB gzip (${bytes})`);
  });

  t.test('the profile list shows names and e-mails, the search narrows it, traits are a table', async (t) => {
    const tag = uid('tag').slice(4);
    const people = [
      { userId: uid('ada'), traits: { name: `Ada Lovelace ${tag}`, email: `ada.${tag}@example.com`, plan: 'pro' } },
      { userId: uid('alan'), traits: { firstName: 'Alan', lastName: `Turing ${tag}`, email: `alan.${tag}@example.com` } },
      { userId: uid('anon'), traits: { plan: 'free' } },
    ];
    for (const p of people) t.equal((await identifyCall(s, f, { identifiers: { userId: p.userId }, traits: p.traits })).status, 200);
    await page.goto(`${s.url}/ui/profiles`);
    const list = page.getByTestId('profiles');
    await list.getByRole('link', { name: `Ada Lovelace ${tag}` }).waitFor();
    await list.getByRole('link', { name: `Alan Turing ${tag}` }).waitFor();
    t.pass('names from traits (name, or firstName + lastName)');
    t.match(await list.getByRole('row').filter({ hasText: `Ada Lovelace ${tag}` }).textContent(), `ada.${tag}@example.com`, 'the e-mail beside the name');
    t.match(await list.getByRole('row').filter({ hasText: people[2]!.userId }).getByRole('link').textContent(), /^prf_/, 'no name: the id');
    await page.getByLabel('Search', { exact: true }).fill(`lovelace ${tag}`);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.waitForURL(/\/ui\/profiles\?q=/);
    await poll(() => list.locator('tbody tr').count(), (n) => n === 1, 10_000, 100);
    t.equal(await list.locator('tbody tr').count(), 1, 'the search narrows the list to one');
    const api = await call(s.url, 'GET', `/v1/profiles?q=${encodeURIComponent(`lovelace ${tag}`)}`, { token: admin });
    t.equal(api.body.data.length, 1, 'as the API does');
    await list.getByRole('link', { name: `Ada Lovelace ${tag}` }).click();
    await page.waitForURL(new RegExp(`/ui/profiles/${api.body.data[0].id}$`));
    const traits = page.getByTestId('traits');
    await traits.waitFor();
    t.match(await traits.getByRole('row').filter({ hasText: 'plan' }).textContent(), /plan\s*pro/, 'plan: pro');
    t.match(await traits.getByRole('row').filter({ hasText: 'email' }).textContent(), `ada.${tag}@example.com`);
    t.match(await page.locator('main h1').textContent(), `Ada Lovelace ${tag}`, 'the name heads the page');
  });

  t.test('a journey: its trigger in words, metrics as the API says, the journal\'s positions and times', async (t) => {
    const key = uid('onboard').replace(/-/g, '_').slice(0, 40);
    await deployJourneys(s, f, [{
      key,
      body: `await ctx.traits.set('seen', true);
if (ctx.event.properties.fail) throw new Error('boom');
if (ctx.event.properties.wait) await ctx.sleep('1h');`,
    }]);
    const users = { done: [uid('d'), uid('d')], failed: [uid('f')], waiting: [uid('w'), uid('w'), uid('w')] };
    for (const u of [...users.done, ...users.failed, ...users.waiting]) await consenting(s, f, { userId: u });
    const started = Date.now();
    for (const u of users.done) t.ok((await fire(s, f, u, `${key}_go`)).status < 300);
    for (const u of users.failed) t.ok((await fire(s, f, u, `${key}_go`, { fail: true })).status < 300);
    for (const u of users.waiting) t.ok((await fire(s, f, u, `${key}_go`, { wait: true })).status < 300);
    const list = await untilExecutions(s, admin, { journey: key }, (l) => l.length === 6 && l.every((x) => x.status !== 'running'), 60_000);
    const cancel = list.find((x) => x.status === 'waiting')!;
    t.equal((await call(s.url, 'POST', `/v1/executions/${cancel.id}/cancel`, { token: admin, body: { data: {} } })).status, 200);
    const count = async (status: string) => (await executions(s, admin, { journey: key, status, limit: '100' })).body.data.length as number;
    const byList = { completed: await count('completed'), failed: await count('failed'), waiting: await count('waiting'), cancelled: await count('cancelled'), running: await count('running') };
    t.same(byList, { completed: 2, failed: 1, waiting: 2, cancelled: 1, running: 0 }, 'the executions listed');

    const m = (await call(s.url, 'GET', `/v1/journeys/${key}/metrics`, { token: admin })).body.data;
    t.same(m.totals, { entered: 6, ...byList, exited: 0, converted: 0, holdout: 0, holdoutConverted: 0, throttled: 0, capped: 0 }, 'the API\'s totals equal the executions listed');
    t.same(m.waitingBySteps, { '#1 sleep 1h': 2 }, 'both wait on the sleep, the journal\'s entry 1');
    t.equal(m.series.reduce((a: number, p: any) => a + p.entered, 0), 6, 'the series holds the 6 entries');
    t.same([m.conversionRate, m.holdoutConversionRate, m.lift, m.byVariant], [0, null, null, {}], 'no goal: none of the 6 converted; no holdout: no holdout rate, no lift; no split');
    t.equal((await call(s.url, 'GET', `/v1/journeys/${key}/metrics?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z`, { token: admin })).body?.error?.code, 'validation_failed', 'since after until: 422');
    t.equal((await call(s.url, 'GET', '/v1/journeys/nope/metrics', { token: admin })).status, 404, 'an unknown journey: 404');
    const other = await createAppFixture(s);
    t.equal((await call(s.url, 'GET', `/v1/journeys/${key}/metrics`, { token: other.admin })).status, 404, 'another org\'s journey: 404');

    await page.goto(`${s.url}/ui/journeys`);
    await page.getByRole('row').filter({ hasText: key }).getByText(`when ${key}_go is tracked`).waitFor();
    await page.getByRole('link', { name: key, exact: true }).click();
    await page.waitForURL(new RegExp(`/ui/journeys/${key}$`));
    t.equal((await page.getByTestId('trigger').textContent())?.trim(), `when ${key}_go is tracked`, 'the trigger in words');
    for (const k of ['entered', 'running', 'waiting', 'completed', 'failed', 'cancelled']) {
      t.match(await page.getByTestId(`total-${k}`).textContent(), new RegExp(`^${m.totals[k]}`), `${k}: ${m.totals[k]} shown`);
    }
    const drawn = await plotted(page, 'journey-chart');
    for (const k of ['entered', 'completed', 'failed']) {
      t.equal(drawn.series[k]!.reduce((a, b) => a + b, 0), m.series.reduce((a: number, p: any) => a + p[k], 0), `${k} over time, drawn as the API says`);
    }
    const waits = await plotted(page, 'waiting-chart');
    t.same(waits.series.waiting, [2], 'where executions wait, drawn');
    t.match(await page.getByTestId('waiting-chart').textContent(), '#1 sleep 1h');

    // The journal: positions from 0 and the real time of each entry.
    const x = (await call(s.url, 'GET', `/v1/executions/${list.find((e) => e.status === 'completed')!.id}`, { token: admin })).body.data;
    await page.goto(`${s.url}/ui/executions/${x.id}`);
    const rows = page.getByTestId('journal').locator('tbody tr');
    await rows.first().waitFor();
    t.equal(await rows.count(), x.journal.length);
    for (let i = 0; i < x.journal.length; i++) {
      const cells = rows.nth(i).locator('td');
      t.equal((await cells.nth(0).textContent())?.trim(), String(x.journal[i].at), `entry ${i}: its position`);
      const shown = await cells.nth(4).locator('time').getAttribute('datetime');
      t.equal(shown, x.journal[i].recordedAt, `entry ${i}: the time it was recorded`);
      const when = Date.parse(shown!);
      t.ok(when >= started - 60_000 && when <= Date.now() + 60_000, `entry ${i}: today, not 1970 (${shown})`);
      t.notMatch(await cells.nth(4).textContent(), /1970/);
    }
    t.same(errors, [], 'no console error or uncaught exception');
  });

  t.test('journey controls: metrics equal the executions listed, and the page shows them', async (t) => {
    const g = await createAppFixture(s);
    const key = uid('promo').replace(/-/g, '_').slice(0, 40);
    const thr = uid('thr').replace(/-/g, '_').slice(0, 40);
    await deployJourneys(s, g, [
      { key, body: `await ctx.split('copy', { A: 50, B: 50 }); await ctx.sleep('1h');`,
        options: { holdout: 40, exitOn: `${key}_stop`, goal: { event: `${key}_bought`, within: '1h', exit: true } } },
      { key: thr, body: '', enrollment: { throttle: { limit: 1, per: '3650d' } } },
    ]);
    const users = Array.from({ length: 20 }, () => uid('p'));
    const userOf = new Map<string, string>();
    for (const u of users) userOf.set((await consenting(s, g, { userId: u })).id, u);
    for (const u of users) t.ok((await fire(s, g, u, `${key}_go`)).status < 300);
    for (const u of users.slice(0, 3)) t.ok((await fire(s, g, u, `${thr}_go`)).status < 300);
    const all = await untilExecutions(s, g.admin, { journey: key, limit: '100' }, (l) => l.length === 20 && l.every((x) => x.status === (x.holdout ? 'completed' : 'waiting')), 60_000);
    const held = all.filter((x) => x.holdout);
    const treated = all.filter((x) => !x.holdout);
    t.ok(held.length >= 1 && treated.length >= 3, `both groups (${held.length} held out, ${treated.length} treated)`);
    // Held out: every other one buys. Treated: a third buy (goal exit), a third stop (exit rule).
    const buy = [...held.filter((_, i) => i % 2 === 0), ...treated.filter((_, i) => i % 3 === 0)];
    const stop = treated.filter((_, i) => i % 3 === 1);
    for (const x of buy) t.ok((await fire(s, g, userOf.get(x.profileId)!, `${key}_bought`)).status < 300);
    for (const x of stop) t.ok((await fire(s, g, userOf.get(x.profileId)!, `${key}_stop`)).status < 300);
    const list = async (q: Record<string, string> = {}) => (await executions(s, g.admin, { journey: key, limit: '100', ...q })).body.data as any[];
    await poll(async () => [(await list({ converted: 'true' })).length, (await list({ status: 'cancelled' })).length], (n) => n[0] === buy.length && n[1] === stop.length, 30_000, 200);
    const now = await list();
    const conv = await list({ converted: 'true' });
    const hold = await list({ holdout: 'true' });
    const holdConv = await list({ holdout: 'true', converted: 'true' });
    const exited = [...await list({ exitReason: 'goal' }), ...await list({ exitReason: `event:${key}_stop` })];
    const status = (st: string) => now.filter((x) => x.status === st).length;
    const want = {
      entered: now.length, running: status('running'), waiting: status('waiting'), completed: status('completed'), failed: status('failed'), cancelled: status('cancelled'),
      exited: exited.length, converted: conv.length, holdout: hold.length, holdoutConverted: holdConv.length, throttled: 0, capped: 0,
    };
    t.same([want.entered, want.converted, want.holdout, want.holdoutConverted, want.exited], [20, buy.length, held.length, Math.ceil(held.length / 2), buy.length - Math.ceil(held.length / 2) + stop.length], 'the listed counts are the load');
    const m = (await call(s.url, 'GET', `/v1/journeys/${key}/metrics`, { token: g.admin })).body.data;
    t.same(m.totals, want, 'totals equal the executions listed with the converted / holdout / exitReason filters');
    const rate = (want.converted - want.holdoutConverted) / (want.entered - want.holdout);
    const holdRate = want.holdoutConverted / want.holdout;
    t.equal(m.conversionRate, rate, `conversion of the treated: ${rate}`);
    t.equal(m.holdoutConversionRate, holdRate, `conversion of the holdout: ${holdRate}`);
    t.equal(m.lift, (rate - holdRate) / holdRate, 'lift = (rate - holdout rate) / holdout rate');
    const byVariant: Record<string, Record<string, { entered: number; converted: number; conversionRate: number | null }>> = { copy: {} };
    for (const x of now) {
      if (x.holdout) { t.same(x.variants, {}, 'a held-out execution runs no split'); continue; }
      const v = (byVariant.copy![x.variants.copy] ??= { entered: 0, converted: 0, conversionRate: null });
      v.entered++;
      if (x.converted) v.converted++;
    }
    for (const v of Object.values(byVariant.copy!)) v.conversionRate = v.converted / v.entered;
    t.same(m.byVariant, byVariant, 'byVariant equals the variants listed');
    t.equal(m.series.reduce((a: number, p: any) => a + p.converted, 0), want.converted, 'the series holds every conversion');
    const mt = await poll(() => call(s.url, 'GET', `/v1/journeys/${thr}/metrics`, { token: g.admin }), (r) => r.body?.data?.totals?.throttled === 2, 10_000, 200);
    t.same([mt.body.data.totals.entered, mt.body.data.totals.throttled], [(await executions(s, g.admin, { journey: thr })).body.data.length, 2], 'the throttle: 1 started, 2 skipped');
    const past = (await call(s.url, 'GET', `/v1/journeys/${key}/metrics?since=2026-01-01T00:00:00Z&until=2026-01-02T00:00:00Z&bucket=day`, { token: g.admin })).body.data;
    t.same([past.totals.entered, past.totals.converted, past.conversionRate, past.lift, past.byVariant], [0, 0, null, null, {}], 'a window before it all: nothing, no rates');

    const pct = (r: number) => `${(r * 100).toFixed(1)} %`;
    await page.goto(`${s.url}/ui/#token=${encodeURIComponent(g.org.sessions.admin)}`);
    await page.goto(`${s.url}/ui/journeys/${key}`);
    const funnel = await plotted(page, 'funnel-chart');
    t.same(funnel.series.executions, [want.entered, want.completed, want.converted], 'the funnel: entered, completed, converted');
    t.match(await page.getByTestId('total-converted').textContent(), new RegExp(`^${want.converted}Converted`));
    t.match(await page.getByTestId('conversion-rate').textContent(), `${pct(rate)}Conversion`);
    t.match(await page.getByTestId('holdout-rate').textContent(), `${pct(holdRate)}Holdout conversion`);
    const lift = (rate - holdRate) / holdRate;
    t.match(await page.getByTestId('lift').textContent(), `${lift > 0 ? '+' : ''}${pct(lift)}Lift`);
    t.match(await page.getByTestId('total-exited').textContent(), new RegExp(`^${want.exited}Exited`));
    for (const [k, v] of Object.entries(byVariant.copy!)) {
      const cells = await page.getByTestId('split-copy').locator(`tr[data-variant="${k}"] td`).allTextContents();
      t.same(cells, [k, String(v.entered), String(v.converted), pct(v.conversionRate!)], `variant ${k} side by side`);
    }
    const drawn = await plotted(page, 'journey-chart');
    t.equal(drawn.series.converted!.reduce((a, b) => a + b, 0), want.converted, 'conversions over time, drawn');
    t.same((await plotted(page, 'waiting-chart')).series.waiting, [want.waiting], 'where executions wait, still drawn');
    t.same(errors, [], 'no console error or uncaught exception');
  });

}
