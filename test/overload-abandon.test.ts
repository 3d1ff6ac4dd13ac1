// A client that goes away before its answer: its calls still queued behind others are not
// processed (in-process stream; JetStream processes what it published), and they are counted as
// abandoned. Sent again later, every call is new.
import t from 'tap';
import { call, createAppFixture, poll, startServer, uid } from './helpers/server.js';

if (process.env.NATS_URL) {
  t.plan(0, 'JetStream processes what it published');
} else {
  t.test('calls of a client that went away are not processed', async (t) => {
    // A gate that never refuses here: every request of the burst must be queued.
    const s = await startServer(['--ingest-max-wait-ms', '600000']);
    t.teardown(() => s.close());
    const f = await createAppFixture(s);
    await call(s.url, 'PATCH', `/v1/orgs/${f.org.org.id}`, { token: s.operatorToken, body: { data: { limits: { ratePerSecond: 1e9, burst: 1e9 } } } });
    const send = (calls: unknown[], signal?: AbortSignal) => fetch(`${s.url}/v1/batch`, {
      method: 'POST', signal,
      headers: { authorization: `Bearer ${f.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: { sourceId: f.source.id, calls } }),
  });
  const batch = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({
    type: 'track', event: 'Shed', messageId: `${tag}-${i}`, identifiers: { userId: `u-${tag}-${i % 50}` },
  }));
  const dropped = async () => {
    const r = await call(s.url, 'POST', '/v1/events/reconcile', { token: s.operatorToken, body: { data: { since: new Date(Date.now() - 60_000).toISOString(), until: new Date().toISOString(), orgId: f.org.org.id } } });
    return (r.body?.data?.drops ?? []).find((d: any) => d.reason === 'abandoned_calls')?.count ?? 0;
  };
  const before = await dropped();
  // Sent together, so the gate admits them all; `gone` is queued behind the six waves.
  const wave = Array.from({ length: 6 }, (_, k) => send(batch(500, uid(`wave${k}`))));
  const gone = batch(20, uid('gone'));
  const ac = new AbortController();
  const p = send(gone, ac.signal).catch((e: Error) => e);
  await Promise.race(wave); // the first wave is answered: the later ones and `gone` still wait
  ac.abort();
  t.type(await p, Error, 'the client gave up');
  await Promise.all(wave);
  const after = await poll(dropped, (n) => n >= before + 20, 20_000, 500);
  t.ok(after >= before + 20, `its 20 calls were counted as abandoned (${before} -> ${after})`);
  const r = await send(gone);
  const body = await r.json() as any;
  t.same(body.data.map((x: any) => x.status), gone.map(() => 201), 'sent again, every call is new: none had been written');
  });
}
