// The real browser SDK, @segment/analytics-next, in headless Chromium, on a page served from another
// origin than headwater (another port), so the browser enforces CORS on the settings request, the
// preflights and the calls. Default (one request per call) and batching mode. Needs Debian's
// `chromium` (.ci/run installs it); skipped with a message when it is missing.
import t from 'tap';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { build } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import { startServer, call, createAppFixture, poll, uid, type AppFixture } from './helpers/server.js';

const CHROMIUM = '/usr/bin/chromium';
if (!existsSync(CHROMIUM)) {
  t.plan(0, `${CHROMIUM} is not installed (apt-get install chromium; .ci/run installs it)`);
} else {
  await main();
}

async function main() {
  const s = await startServer();
  t.teardown(() => s.close());

  // The SDK bundled for the page (its dynamic imports inlined: no CDN is reachable, or needed).
  const bundle = await build({
    stdin: { contents: "import { AnalyticsBrowser } from '@segment/analytics-next'; window.AnalyticsBrowser = AnalyticsBrowser;", resolveDir: process.cwd(), loader: 'js' },
    bundle: true, format: 'iife', write: false, platform: 'browser', logLevel: 'silent',
  });
  const js = bundle.outputFiles[0]!.text;
  const page: Server = createServer((req, res) => {
    if (req.url === '/sdk.js') { res.writeHead(200, { 'content-type': 'text/javascript' }); res.end(js); return; }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><html><head><script src="/sdk.js"></script></head><body>shop</body></html>');
  });
  await new Promise<void>((r) => page.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => page.close(() => r())));
  const pageUrl = `http://127.0.0.1:${(page.address() as any).port}/`;

  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  t.teardown(() => browser.close());

  const newKey = async (f: AppFixture) => (await call(s.url, 'POST', `/v1/sources/${f.source.id}/write-keys`, { token: f.admin })).body.data.writeKey as string;
  const lookup = (f: AppFixture, kind: string, value: string) => call(s.url, 'GET', `/v1/profiles?kind=${kind}&value=${encodeURIComponent(value)}`, { token: f.admin });

  for (const batching of [false, true]) {
    t.test(`analytics-next from another origin, ${batching ? 'batching' : 'default'} mode`, async (t) => {
      const f = await createAppFixture(s);
      const writeKey = await newKey(f);
      const user = uid('user');
      const email = `${uid('e')}@example.com`;
      const ctx = await browser.newContext();
      t.teardown(() => ctx.close());
      const tab = await ctx.newPage();
      const consoleErrors: string[] = [];
      tab.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
      const sent: string[] = [];
      tab.on('requestfinished', (r) => { if (r.url().includes('/segment/v1/')) sent.push(`${r.method()} ${new URL(r.url()).pathname}`); });
      await tab.goto(pageUrl);
      t.not(new URL(pageUrl).origin, new URL(s.url).origin, 'the page is on another origin');

      await tab.evaluate(async ({ writeKey, cdnURL, user, email, batching }) => {
        const integrations = batching ? { 'Segment.io': { deliveryStrategy: { strategy: 'batching', config: { size: 3, timeout: 200 } } } } : {};
        const [analytics] = await (window as any).AnalyticsBrowser.load({ writeKey, cdnURL }, { integrations });
        await analytics.identify(user, { email, plan: 'browser' });
        await analytics.track('Added To Cart', { sku: 'A-1' });
        await analytics.page('Shop', 'Home');
      }, { writeKey, cdnURL: `${s.url}/segment`, user, email, batching });

      const found = await poll(() => lookup(f, 'userId', user), (r) => r.status === 200 && r.body.data.length === 1, 8000);
      t.equal(found.body.data.length, 1, 'the identify landed');
      const p = found.body.data[0];
      t.equal(p.traits.email, email, 'traits');
      t.ok((p.identifiers as any[]).some((i) => i.kind === 'anonymousId'), 'the browser\'s anonymousId is an identifier');
      const ev = await poll(() => call(s.url, 'GET', `/v1/events?profileId=${p.id}`, { token: f.admin }), (r) => r.status === 200 && r.body.data.length >= 2, 8000);
      const names = (ev.body.data as any[]).map((e) => e.event).sort();
      t.same(names, ['Added To Cart', 'Page Viewed'], 'track and page landed');
      const pageView = (ev.body.data as any[]).find((e) => e.event === 'Page Viewed');
      t.equal(pageView?.properties.name, 'Home', 'page name');
      t.equal(pageView?.properties.category, 'Shop', 'page category');
      t.equal(pageView?.properties.url, pageUrl, 'the SDK\'s page properties');
      t.equal(pageView?.context?.page?.url, pageUrl, 'the context is kept: page');
      t.match(pageView?.context?.userAgent, /Chrome/, 'the context is kept: userAgent');
      t.ok(typeof pageView?.context?.ip === 'string' && pageView.context.ip.length > 0, `context.ip from the request (${pageView?.context?.ip})`);
      t.ok(sent.some((r) => r.startsWith('GET /segment/v1/projects/')), 'settings fetched from headwater');
      if (batching) t.ok(sent.includes('POST /segment/v1/b'), `batching mode posts /b (${sent.join(', ')})`);
      else t.ok(sent.includes('POST /segment/v1/t') && sent.includes('POST /segment/v1/i') && sent.includes('POST /segment/v1/p'), `default mode posts /i /t /p (${sent.join(', ')})`);
      t.same(consoleErrors.filter((e) => /CORS|Failed to fetch|blocked/i.test(e)), [], 'no CORS error in the page');
    });
  }
}
