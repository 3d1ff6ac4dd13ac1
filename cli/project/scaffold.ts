// The files `headwater init` writes: a project that `headwater push` accepts unmodified.

export const SCAFFOLD: Record<string, string> = {
  'headwater.json': JSON.stringify({
    purposes: [{ key: 'onboarding', label: 'Onboarding messages', default: 'denied' }],
  }, null, 2) + '\n',

  // For editors and `npx tsc`: the SDK's types come from `headwater` when installed here; push needs none of it.
  'tsconfig.json': JSON.stringify({
    compilerOptions: {
      target: 'ES2020', lib: ['ES2020'], module: 'ESNext', moduleResolution: 'Bundler',
      strict: true, noEmit: true, skipLibCheck: true, types: [],
    },
    include: ['journeys', 'templates'],
  }, null, 2) + '\n',

  'journeys/welcome.ts': `import { journey } from 'headwater/sdk';

// Runs for each profile that sends \`signed_up\` and consented to the \`onboarding\` purpose
// (profile.consent.onboarding = true, e.g. identify with traits: { consent: { onboarding: true } }).
export default journey({
  key: 'welcome',
  trigger: { event: 'signed_up' },
  purpose: 'onboarding',
  enrollment: { cooldown: '1d' },
  // Controls: an unsubscribe ends the run at once; activating within a week counts as a conversion.
  exitOn: 'unsubscribed',
  goal: { event: 'activated', within: '7d' },
  description: 'Greets a new sign-up, nudges them once if they have not activated within a day.',
}, async (ctx) => {
  const me = await ctx.profile.get();
  await ctx.email.send('welcome-email', { name: String(me.traits.name ?? 'there') });
  await ctx.traits.set('onboarding_stage', 'welcomed');

  const activated = await ctx.waitForEvent('activated', { timeout: '1d' });
  if (activated) {
    await ctx.events.track('onboarding_completed', { via: 'welcome' });
    ctx.log.info('activated within a day');
  } else {
    // An A/B test of the nudge's tone: a profile always gets the same variant, recorded on the
    // execution as \`variants.nudge\`.
    const tone = await ctx.split('nudge', { friendly: 50, direct: 50 });
    await ctx.sleep('1h');
    await ctx.webhook.send('crm', { profileId: me.id, stage: 'not_activated', tone });
  }
  await ctx.traits.unset('onboarding_stage');
});
`,

  'templates/welcome-email.ts': `import { escapeHtml, template } from 'headwater/sdk';

interface Props { name: string }

export default template<Props>({
  key: 'welcome-email',
  sendClass: 'transactional',
  verifyLink: false,
  propsSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
}, (props) => ({
  subject: \`Welcome, \${props.name}!\`,
  // Props carry profile data: escape every value that goes into html.
  html: \`<p>Welcome aboard, \${escapeHtml(props.name)}.</p>\`,
  text: \`Welcome aboard, \${props.name}.\`,
}));
`,

  // `headwater test` runs it with node:test; runJourney answers at once whatever the journey sleeps.
  'test/welcome.test.ts': `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runJourney } from 'headwater/sdk/testing';
import welcome from '../journeys/welcome';
import welcomeEmail from '../templates/welcome-email';

const profile = { traits: { name: 'Ada', email: 'ada@example.com' } };

test('welcome e-mails a new sign-up and tells the CRM when they have not activated within a day', async () => {
  const run = await runJourney(welcome, { event: 'signed_up', profile, templates: [welcomeEmail] });
  assert.equal(run.status, 'completed', run.error?.message);
  assert.deepEqual(run.emails.map((e) => [e.to, e.subject]), [['ada@example.com', 'Welcome, Ada!']]);
  assert.deepEqual(run.webhooks.map((w) => w.payload.stage), ['not_activated']);
  assert.ok(['friendly', 'direct'].includes(String(run.webhooks[0]?.payload.tone)), 'the split chose a variant');
  assert.equal(run.elapsedMs, 25 * 60 * 60 * 1000, 'a day of waiting and an hour of sleep, in virtual time');
});

test('welcome completes onboarding when the profile activates within the day', async () => {
  const run = await runJourney(welcome, { event: 'signed_up', profile, templates: [welcomeEmail], events: [{ event: 'activated', at: '3h' }] });
  assert.equal(run.status, 'completed', run.error?.message);
  assert.deepEqual(run.tracked.map((e) => e.event), ['onboarding_completed']);
  assert.deepEqual(run.webhooks, []);
  assert.equal(run.profile.traits.onboarding_stage, undefined, 'the temporary trait is unset at the end');
});
`,

  'README.md': `# A headwater journey project

- \`headwater.json\`: the consent purposes journeys run under (a journey runs for a profile only
  when \`profile.consent[purpose]\` is true).
- \`journeys/*.ts\`: one journey per file, \`export default journey(options, async (ctx) => { ... })\`.
- \`templates/*.ts\`: one e-mail template per file, \`export default template(options, (props) => ({ subject, html, text }))\`.

Run its tests (\`test/*.test.ts\`, node:test with \`headwater/sdk/testing\`): \`headwater test .\`

Push it to an app (a session token or the org's pipeline key):

\`\`\`sh
HEADWATER_URL=http://127.0.0.1:8080 HEADWATER_TOKEN=... headwater push . --app APP_ID
headwater enable welcome
\`\`\`

\`headwater\` is the command of a headwater checkout: there, run it as \`npm run -s headwater -- ...\`
(never \`npx headwater\`: the registry's package of that name is another project). The tool bundles
each file with its own copy of \`headwater/sdk\`: nothing needs installing here. For editor types and
\`npx tsc\` (push does not type-check), install the checkout itself:
\`npm install --save-dev /path/to/headwater\` (a path, not the registry name). The \`crm\` webhook the
journey calls must exist in the org's webhook registry; a push turns nothing on: enable the journey
with \`headwater enable welcome\` (or \`PATCH /v1/journeys/welcome\` with \`{"data":{"enabled":true}}\`).
`,
};
