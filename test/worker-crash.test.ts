// A `headwater worker`, or the `serve` process, killed (SIGKILL) in the middle of a stream of track
// calls, then started again, with real NATS JetStream and PostgreSQL: every acknowledged event
// (201, or 200 replay) must be listed by GET /v1/events exactly once, under the event id it was
// acknowledged with. Calls answered 503, or not answered, were not acknowledged; they are retried
// with the same messageId. Killing `serve` cuts the window where it answered calls whose events it
// had not landed in its chDB yet (pipeline/direct-landing.ts): those calls come again after ack_wait.
//
// Processes: one `serve` (HTTP front end, an engine of its own, lands events in its embedded chDB)
// and `headwater worker` processes, all sharing one stream prefix, DATABASE_URL and NATS_URL.
// Needs DATABASE_URL and NATS_URL (and NATS answering); otherwise the file plans nothing.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { call, poll, sleep } from './helpers/server.js';
import { natsAnswers, startProc, stopProc, type ChildProc } from './helpers/topology.js';

const DATABASE_URL = process.env.DATABASE_URL;
const NATS_URL = process.env.NATS_URL;

const TOTAL = 1500;          // track calls, one unique messageId each
const PROFILES = 20;
const CONCURRENCY = 30;
const KILL_AT = 500;         // dispatch index at which the worker is SIGKILLed
const RESTART_AT = 1000;     // dispatch index at which a new worker is started
const SLOT_RELEASE_MS = 3_000; // a call stuck longer than this (held by the dead worker) frees its slot
const REQUEST_TIMEOUT_MS = 45_000; // the service answers 503 after its own 30 s result timeout
const MAX_ATTEMPTS = 10;
const POLL_MS = 60_000;
const DRAIN_MS = 45_000;

type Proc = ChildProc;

const procs: Proc[] = [];

/** Spawns `node bin/headwater.js <args>` and resolves once stdout matches `ready` (60 s at most). */
async function start(name: string, args: string[], env: Record<string, string>, ready: RegExp): Promise<{ proc: Proc; match: RegExpExecArray }> {
  const r = await startProc(name, args, env, ready);
  procs.push(r.proc);
  return r;
}

const stop = (p: Proc, graceMs = 8_000) => stopProc(p, graceMs);
/** Resolves once the process is gone (its port and data directory are free). */
const exited = (p: Proc) => new Promise<void>((r) => {
  if (p.child.exitCode !== null || p.child.signalCode !== null) r();
  else p.child.once('exit', () => r());
});

if (!DATABASE_URL || !NATS_URL || !(await natsAnswers(NATS_URL))) {
  t.plan(0, 'needs DATABASE_URL and NATS_URL');
} else {
  for (const victim of ['worker', 'serve'] as const) t.test(`${victim === 'worker' ? 'a worker' : 'the serve process'} killed mid-stream loses and duplicates no acknowledged event`, async (t) => {
    const prefix = `w${randomBytes(5).toString('hex')}`;
    const operatorToken = `hwo_${randomBytes(24).toString('base64url')}`;
    const env: Record<string, string> = {
      DATABASE_URL: DATABASE_URL!, NATS_URL: NATS_URL!,
      HEADWATER_STREAM_PREFIX: prefix,
      HEADWATER_SECRET_KEY: randomBytes(32).toString('hex'),
      HEADWATER_OPERATOR_TOKEN: operatorToken,
      HEADWATER_WORKERS: '1',
      HEADWATER_LOG_LEVEL: 'warn',
    };
    const dirs: string[] = [];
    const tmp = (p: string) => { const d = mkdtempSync(join(tmpdir(), p)); dirs.push(d); return d; };

    t.teardown(async () => {
      await Promise.all(procs.map((p) => stop(p)));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
      // The streams of this test's prefix (whatever is left in them).
      try {
        const { connect } = await import('@nats-io/transport-node');
        const { jetstreamManager } = await import('@nats-io/jetstream');
        const { deleteStreams, streamNames } = await import('../pipeline/stream/mod.js');
        const nc = await connect({ servers: NATS_URL!, timeout: 2_000 });
        await deleteStreams(await jetstreamManager(nc), streamNames(prefix));
        await nc.close();
      } catch { /* best effort */ }
    });

    // Workers first (they create the streams too), then the serve process.
    const firstWorker = await start('worker#1', ['worker', '--data-dir', tmp('hw-wc-worker-')], env, /headwater worker running/);
    const serveDir = tmp('hw-wc-serve-');
    const served = await start('serve', ['serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', serveDir], env, /listening on (http:\/\/\S+)/);
    // A restarted serve listens on a port of its own (the old one may be taken by then: the test's
    // own client sockets draw local ports from the same range).
    let url = served.match[1]!;

    const org = await call(url, 'POST', '/v1/orgs', { token: operatorToken, body: { data: { name: `crash-${prefix}` } } });
    t.equal(org.status, 201, `org created (${org.text.slice(0, 200)})`);
    const admin: string = org.body.data.sessions.admin;
    const apiKey: string = org.body.data.apiKey;
    const app = await call(url, 'POST', '/v1/apps', { token: admin, body: { data: { name: `app-${prefix}` } } });
    t.equal(app.status, 201, `app created (${app.text.slice(0, 200)})`);
    const srcs = await call(url, 'GET', `/v1/apps/${app.body.data.id}/sources`, { token: admin });
    t.equal(srcs.status, 200);
    const sourceId: string = srcs.body.data[0].id;

    // ---------------------------------------------------------------- the stream of track calls
    interface Msg { messageId: string; profile: number; acked: string[]; statuses: Array<number | string>; ms: number[] }
    const msgs: Msg[] = Array.from({ length: TOTAL }, (_, i) => ({
      messageId: `m-${prefix}-${i}`, profile: i % PROFILES, acked: [], statuses: [], ms: [],
    }));
    const isAcked = (m: Msg) => m.acked.length > 0;
    const unexpected: string[] = [];

    /** One track call for `m`; records the answer. */
    const attempt = async (m: Msg): Promise<void> => {
      const t0 = Date.now();
      try {
        const r = await fetch(`${url}/v1/track`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ data: {
            sourceId, messageId: m.messageId, event: 'Crash Test',
            identifiers: { anonymousId: `anon-${prefix}-${m.profile}` }, properties: { messageId: m.messageId },
          } }),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await r.text();
        m.statuses.push(r.status);
        m.ms.push(Date.now() - t0);
        if (r.status === 201 || r.status === 200) {
          let id: unknown;
          try { id = JSON.parse(text)?.data?.id; } catch { id = undefined; }
          if (typeof id === 'string') m.acked.push(id);
          else unexpected.push(`${m.messageId}: ${r.status} without an event id: ${text.slice(0, 200)}`);
        } else if (r.status !== 503) {
          unexpected.push(`${m.messageId}: ${r.status} ${text.slice(0, 200)}`);
        }
      } catch (err) {
        // No answer (timeout, reset): not acknowledged, retried like a 503.
        m.statuses.push(`error: ${(err as Error).name}`);
        m.ms.push(Date.now() - t0);
      }
    };

    let secondWorker: Promise<unknown> | undefined;
    let killedAt = 0;
    const onDispatch = (i: number) => {
      if (i === KILL_AT) {
        killedAt = Date.now();
        (victim === 'worker' ? firstWorker : served).proc.child.kill('SIGKILL');
        t.comment(`${victim === 'worker' ? 'worker#1' : 'serve'} SIGKILLed at call ${i}`);
      } else if (i === RESTART_AT) {
        secondWorker = (victim === 'worker'
          ? start('worker#2', ['worker', '--data-dir', tmp('hw-wc-worker-')], env, /headwater worker running/)
          : exited(served.proc).then(() => start('serve#2', ['serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', serveDir], env, /listening on (http:\/\/\S+)/))
            .then((s) => { url = s.match[1]!; return s; }))
          .then((w) => { t.comment(`${victim}#2 running (started at call ${i})`); return w; });
        secondWorker.catch(() => undefined); // awaited (and reported) below
      }
    };

    const started = Date.now();
    const outstanding: Promise<void>[] = [];
    let next = 0;
    const slot = async () => {
      while (next < TOTAL) {
        const i = next++;
        onDispatch(i);
        const p = attempt(msgs[i]!);
        outstanding.push(p);
        // A call held by the killed worker waits for its 30 s timeout: it stops occupying the
        // slot after a while, so the stream keeps flowing through the kill and the restart.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([p, new Promise<void>((r) => { timer = setTimeout(r, SLOT_RELEASE_MS); })]);
        clearTimeout(timer);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, slot));
    const dispatchedMs = Date.now() - started;
    await Promise.all(outstanding);
    t.comment(`first pass: ${TOTAL} calls dispatched in ${dispatchedMs} ms, all answered after ${Date.now() - started} ms; ` +
      `acknowledged ${msgs.filter(isAcked).length}, slow (>10 s) ${msgs.filter((m) => m.ms[0]! > 10_000).length}, ` +
      `503 ${msgs.filter((m) => m.statuses[0] === 503).length}, no answer ${msgs.filter((m) => typeof m.statuses[0] === 'string').length}`);
    if (killedAt) t.comment(`the kill happened ${killedAt - started} ms into the stream`);
    await t.resolves(secondWorker!, `the restarted ${victim} runs`);

    // ---------------------------------------------------------------- retries (same messageId)
    for (let round = 2; round <= MAX_ATTEMPTS; round++) {
      const pending = msgs.filter((m) => !isAcked(m));
      if (pending.length === 0) break;
      t.comment(`retry round ${round}: ${pending.length} calls not acknowledged yet`);
      let k = 0;
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => { while (k < pending.length) await attempt(pending[k++]!); }));
      if (msgs.some((m) => !isAcked(m))) await sleep(1_000); // a client's back-off before its next round, not a wait
    }
    const never = msgs.filter((m) => !isAcked(m));
    t.equal(never.length, 0, `every call is acknowledged within ${MAX_ATTEMPTS} attempts`, {
      sample: never.slice(0, 5).map((m) => ({ messageId: m.messageId, statuses: m.statuses })),
    });
    t.same(unexpected.slice(0, 20), [], 'no answer other than 201, 200 (with the event) or 503');

    // Every acknowledgement of one messageId names one event id.
    const ackedId = new Map<string, string>(); // messageId -> event id
    const split = msgs.filter((m) => new Set(m.acked).size > 1);
    t.same(split.slice(0, 5).map((m) => ({ messageId: m.messageId, acked: m.acked })), [], 'no messageId acknowledged with two different event ids');
    for (const m of msgs) if (isAcked(m)) ackedId.set(m.messageId, m.acked[0]!);
    const wanted = new Set(ackedId.values());
    t.equal(wanted.size, ackedId.size, 'distinct acknowledged messageIds have distinct event ids');

    // ---------------------------------------------------------------- both streams drained
    // The killed worker's unacknowledged calls come again after ack_wait (30 s) and are processed
    // a second time (their events re-emitted): wait for that, so that a duplicate or a new event id
    // it might produce is seen by the listing below. Work-queue streams hold only unacked messages.
    {
      const { connect } = await import('@nats-io/transport-node');
      const { jetstreamManager } = await import('@nats-io/jetstream');
      const { streamNames } = await import('../pipeline/stream/mod.js');
      const names = streamNames(prefix);
      const nc = await connect({ servers: NATS_URL!, timeout: 2_000 });
      try {
        const jsm = await jetstreamManager(nc);
        const left = async () => {
          const [a, b] = await Promise.all([jsm.streams.info(names.ingestStream), jsm.streams.info(names.eventsStream)]);
          return { ingest: a.state.messages, events: b.state.messages };
        };
        const l = await poll(left, (x) => x.ingest === 0 && x.events === 0, DRAIN_MS, 500);
        t.same(l, { ingest: 0, events: 0 }, 'the ingest and event streams drain (redeliveries processed, events landed)');
      } finally {
        await nc.close();
      }
    }

    // ---------------------------------------------------------------- what GET /v1/events lists
    type Ev = { id: string; messageId: string | null };
    const listAll = async (): Promise<Ev[] | string> => {
      const all: Ev[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 200; pages++) {
        const q: string = `/v1/events?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const r = await call(url, 'GET', q, { token: admin });
        if (r.status !== 200) return `GET ${q}: ${r.status} ${r.text.slice(0, 200)}`;
        for (const e of r.body.data as Ev[]) all.push({ id: e.id, messageId: e.messageId });
        cursor = r.body.meta?.nextCursor ?? null;
        if (!cursor) return all;
      }
      return 'more than 200 pages';
    };
    const listed = await poll(listAll, (l) => typeof l !== 'string' && new Set(l.filter((e) => wanted.has(e.id)).map((e) => e.id)).size === wanted.size && l.length >= ackedId.size, POLL_MS, 500);
    if (typeof listed === 'string') { t.fail(listed); return; }
    t.comment(`listed ${listed.length} events, ${ackedId.size} acknowledged messageIds, ${Date.now() - started} ms after the stream began`);

    const count = new Map<string, number>();
    for (const e of listed) count.set(e.id, (count.get(e.id) ?? 0) + 1);
    const missing = [...ackedId].filter(([, id]) => !count.has(id));
    t.same(missing.slice(0, 10), [], `every acknowledged event is listed (${missing.length} missing)`);
    const twice = [...count].filter(([, n]) => n > 1);
    t.same(twice.slice(0, 10), [], `no event id is listed twice (${twice.length} repeated)`);
    t.equal(listed.length, ackedId.size, 'as many events as distinct acknowledged messageIds');

    // Per messageId: one listed event, the acknowledged one.
    const byMessage = new Map<string, Set<string>>();
    for (const e of listed) {
      const k = e.messageId ?? '(null)';
      let s = byMessage.get(k);
      if (!s) byMessage.set(k, (s = new Set()));
      s.add(e.id);
    }
    const multi = [...byMessage].filter(([, s]) => s.size > 1).map(([k, s]) => ({ messageId: k, ids: [...s], acked: ackedId.get(k) }));
    t.same(multi.slice(0, 10), [], `no messageId has two listed events (${multi.length} have)`);
    const stray = listed.filter((e) => e.messageId === null || ackedId.get(e.messageId) !== e.id);
    t.same(stray.slice(0, 10), [], `every listed event is the acknowledged event of its messageId (${stray.length} are not)`);
  });
}
