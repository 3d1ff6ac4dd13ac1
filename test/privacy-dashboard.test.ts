// The dashboard's privacy controls in headless Chromium: an admin erases a profile from its page
// (the confirmation names the profile and stays disabled until its id is typed), sees the erasure
// complete and the suppressed identifiers on the Privacy page, lifts one, and sets a retention
// window; a member sees neither the erase control nor a lift button. Needs Debian's `chromium`.
import t from 'tap';
import { existsSync } from 'node:fs';
import { CHROMIUM, launchBrowser } from './helpers/browser.js';
import { startServer, call, createAppFixture, identifyCall, poll, uid } from './helpers/server.js';

if (!existsSync(CHROMIUM)) {
  t.plan(0, `${CHROMIUM} is not installed`);
} else {
  const s = await startServer();
  t.teardown(() => s.close());
  const browser = await launchBrowser(t);
  const f = await createAppFixture(s);
  const user = uid('user');
  const p = await identifyCall(s, f, { identifiers: { userId: user } });
  const id: string = p.body.data.id;

  t.test('erase from the profile page, then suppressions and retention', async (t) => {
    const ctx = await browser.newContext();
    t.teardown(() => ctx.close());
    const page = await ctx.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${s.url}/ui/profiles/${id}#token=${encodeURIComponent(f.admin)}`);
    await page.getByRole('button', { name: 'Erase…' }).click();
    const go = page.getByRole('button', { name: `Erase ${id}` });
    t.ok(await go.isDisabled(), 'the confirmation names the profile and waits for its id');
    await page.getByLabel('Type the profile id').fill('something else');
    t.ok(await go.isDisabled(), 'a wrong id does not enable it');
    await page.getByLabel('Type the profile id').fill(id);
    await go.click();
    await page.waitForURL(/\/ui\/privacy\?erasure=era_/);
    const row = page.getByTestId('erasures').locator('tr', { hasText: id });
    await t.resolves(row.waitFor(), 'the erasure is listed');
    // Completed through the API, then shown after a refresh.
    const er = await poll(() => call(s.url, 'GET', '/v1/erasures', { token: f.admin }), (r) => r.body?.data?.[0]?.status === 'completed', 30_000);
    t.equal(er.body.data[0].status, 'completed');
    await page.getByRole('button', { name: 'Refresh' }).click();
    await t.resolves(page.getByTestId('erasures').locator('td', { hasText: 'completed' }).first().waitFor(), 'shown completed');
    t.equal(await page.getByTestId('suppressions').locator('tbody tr').count(), 1, 'its userId is suppressed');
    await page.getByRole('button', { name: 'Lift' }).click();
    await t.resolves(page.getByText('None.').first().waitFor(), 'lifted');
    t.equal((await call(s.url, 'GET', '/v1/suppressions', { token: f.admin })).body.data.length, 0, 'lifted in the API too');
    await page.getByLabel('E-mails').fill('7');
    await page.getByRole('button', { name: 'Save retention' }).click();
    await poll(() => call(s.url, 'GET', '/v1/settings', { token: f.admin }), (r) => r.body?.data?.retention?.emails === 7, 5000);
    t.equal((await call(s.url, 'GET', '/v1/settings', { token: f.admin })).body.data.retention.emails, 7, 'retention saved');
    t.same(errors, [], 'no page error');
  });

  t.test('a member sees no erase control and no lift button', async (t) => {
    const other = await identifyCall(s, f, { identifiers: { userId: uid('m') } });
    const ctx = await browser.newContext();
    t.teardown(() => ctx.close());
    const page = await ctx.newPage();
    await page.goto(`${s.url}/ui/profiles/${other.body.data.id}#token=${encodeURIComponent(f.org.sessions.member)}`);
    await page.getByRole('heading', { name: 'Traits' }).waitFor();
    t.equal(await page.getByRole('button', { name: /Erase|Export/ }).count(), 0, 'no erase or export');
    await page.goto(`${s.url}/ui/privacy`);
    await page.getByRole('heading', { name: 'Retention' }).waitFor();
    t.equal(await page.getByRole('button', { name: /Lift|Save retention/ }).count(), 0, 'no mutating control');
  });
}
