// The private-network guard of outbound webhooks, on (the default): every target below is a
// loopback, private, link-local, unique-local, carrier-grade NAT, multicast or unspecified address,
// written literally (IPv4, IPv6, IPv4-mapped IPv6, numeric forms) or as a name that resolves to one.
// Each delivery fails at once with the reason and the listening receiver is never hit.
import t from 'tap';
import { startServer, call, createOrg, expectError, poll, type OrgCreds } from './helpers/server.js';
import { startReceiver } from './helpers/receiver.js';
import { dbEnv, ownDatabase } from './helpers/db.js';

const s = await startServer(['--webhook-attempts', '3', '--webhook-backoff-ms', '100', '--webhook-poll-ms', '50', '--webhook-timeout-ms', '2000'], dbEnv(await ownDatabase(t)));
t.teardown(() => s.close());
const rcv = await startReceiver();
t.teardown(() => rcv.close());
const P = rcv.port;

const api = (org: OrgCreds) => (method: string, path: string, data?: unknown) =>
  call(s.url, method, path, { token: org.sessions.admin, body: data === undefined ? undefined : { data } });

const TARGETS: Array<{ url: string; range: RegExp }> = [
  { url: `http://127.0.0.1:${P}/`, range: /loopback/ },
  { url: `http://127.1.2.3:${P}/`, range: /loopback/ },
  { url: `http://2130706433:${P}/`, range: /loopback/ }, // 127.0.0.1 as one number
  { url: `http://0x7f.1:${P}/`, range: /loopback/ },
  { url: `http://[::1]:${P}/`, range: /loopback/ },
  { url: `http://[::ffff:127.0.0.1]:${P}/`, range: /loopback/ },
  { url: `http://[::ffff:7f00:1]:${P}/`, range: /loopback/ },
  { url: `http://localhost:${P}/`, range: /localhost resolves to .*loopback/ },
  { url: `https://localhost:${P}/`, range: /loopback/ },
  { url: `http://0.0.0.0:${P}/`, range: /unspecified/ },
  { url: `http://[::]:${P}/`, range: /unspecified/ },
  { url: 'http://10.1.2.3/', range: /private/ },
  { url: 'http://172.16.0.1/', range: /private/ },
  { url: 'http://192.168.1.1:8080/hook', range: /private/ },
  { url: 'http://[::ffff:192.168.1.1]/', range: /private/ },
  { url: 'http://169.254.169.254/latest/meta-data/', range: /linkLocal/ },
  { url: 'http://[fe80::1]/', range: /linkLocal/ },
  { url: 'http://[fd00:ec2::254]/', range: /uniqueLocal/ },
  { url: 'http://[fc00::1]/', range: /uniqueLocal/ },
  { url: 'http://100.64.0.1/', range: /carrierGradeNat/ },
  { url: 'http://224.0.0.1/', range: /multicast/ },
  { url: 'http://[ff02::1]/', range: /multicast/ },
  { url: 'http://255.255.255.255/', range: /broadcast/ },
  { url: 'http://[64:ff9b::7f00:1]/', range: /rfc6052/ }, // NAT64 of 127.0.0.1
  { url: 'http://[2002:7f00:1::1]/', range: /6to4/ },
  // Every other form that embeds an IPv4 address is refused, whatever it embeds.
  { url: `http://[::7f00:1]:${P}/`, range: /ipv4Compatible/ }, // IPv4-compatible 127.0.0.1
  { url: `http://[::127.0.0.1]:${P}/`, range: /ipv4Compatible/ },
  { url: 'http://[::a00:1]/', range: /ipv4Compatible/ }, // 10.0.0.1
  { url: 'http://[::a9fe:a9fe]/', range: /ipv4Compatible/ }, // 169.254.169.254
  { url: 'http://[::808:808]/', range: /ipv4Compatible/ }, // even a public 8.8.8.8
  { url: 'http://[64:ff9b:1::a00:1]/', range: /rfc6052/ }, // local-use NAT64 (RFC 8215) of 10.0.0.1
  { url: 'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/', range: /teredo/ },
  { url: 'http://[2002:a00:1::1]/', range: /6to4/ }, // 6to4 of 10.0.0.1
  { url: 'http://[::ffff:0:7f00:1]/', range: /rfc6145/ }, // SIIT of 127.0.0.1
];

t.test('private targets are refused at delivery: failed with the reason, never a request', async (t) => {
  const org = await createOrg(s);
  const a = api(org);
  const sent: Array<{ hook: string; delivery: string; range: RegExp; url: string }> = [];
  for (const [i, target] of TARGETS.entries()) {
    const c = await a('POST', '/v1/webhooks', { name: `t${i}`, config: { url: target.url } });
    t.equal(c.status, 201, `${target.url} is a valid http(s) URL: ${c.text.slice(0, 200)}`);
    const d = await a('POST', `/v1/webhooks/${c.body.data.id}/test`, {});
    t.equal(d.status, 202);
    sent.push({ hook: c.body.data.id, delivery: d.body.data.id, range: target.range, url: target.url });
  }
  for (const x of sent) {
    const list = await poll(() => a('GET', `/v1/webhooks/${x.hook}/deliveries`), (r) => r.body.data[0]?.status !== 'pending', 10_000, 50);
    const d = list.body.data[0];
    t.match(d, { id: x.delivery, status: 'failed', attempts: 1, lastStatusCode: null }, `${x.url}: failed on the first attempt, no retry`);
    t.match(d.lastError, /private-network guard/, `${x.url}: the reason names the guard`);
    t.match(d.lastError, x.range, `${x.url}: and the range (${d.lastError})`);
  }
  t.equal(rcv.hits.length, 0, 'the receiver on 127.0.0.1 was never reached');
});

t.test('only http(s) URLs are accepted, on create and patch', async (t) => {
  const org = await createOrg(s);
  const a = api(org);
  for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'gopher://example.com/', 'ws://example.com/', 'data:text/plain,hi', '//example.com/', 'http:/example.com']) {
    expectError(t, await a('POST', '/v1/webhooks', { name: 'x', config: { url } }), 422, 'validation_failed', `create ${url}`, '/data/config/url');
  }
  const c = await a('POST', '/v1/webhooks', { name: 'ok', config: { url: 'HTTPS://example.com/in' } });
  t.equal(c.status, 201, 'the scheme is case-insensitive');
  expectError(t, await a('PATCH', `/v1/webhooks/${c.body.data.id}`, { config: { url: 'ftp://example.com/' } }), 422, 'validation_failed', 'patch', '/data/config/url');
});

t.test('the refusal counts toward auto-disable like any failed delivery', async (t) => {
  const org = await createOrg(s);
  const a = api(org);
  const c = await a('POST', '/v1/webhooks', { name: 'meta', config: { url: 'http://169.254.169.254/' } });
  for (let i = 0; i < 5; i++) await a('POST', `/v1/webhooks/${c.body.data.id}/test`, {});
  const w = await poll(() => a('GET', `/v1/webhooks/${c.body.data.id}`), (r) => r.body.data.disabledAt !== null, 10_000, 50);
  t.type(w.body.data.disabledAt, 'string', 'disabled after 5 refused deliveries (the default threshold)');
});
