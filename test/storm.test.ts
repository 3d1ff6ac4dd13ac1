// Issue 21: an identity-churn storm (helpers/storm.ts) must lose no acknowledged track event and
// leave every identifier component on exactly one live profile holding exactly its identifiers.
// Embedded mode: one storm against the in-process service. With DATABASE_URL and NATS_URL (and
// NATS answering): one storm against the in-process service on the servers, and one against
// `headwater serve` + one `headwater worker` as child processes (a stream prefix of their own).
// STORM_SEED fixes the seed (otherwise random, printed); STORM_CALLS the storm size (3000 here).
import t, { type Test } from 'tap';
import { randomInt } from 'node:crypto';
import { poll } from './helpers/server.js';
import { runStorm, type StormReport } from './helpers/storm.js';
import { serversFromEnv, startTopology, type TopologyKind } from './helpers/topology.js';

const CALLS = Number(process.env.STORM_CALLS ?? 3000);
const baseSeed = process.env.STORM_SEED ? Number(process.env.STORM_SEED) : randomInt(1, 2 ** 31);
const servers = await serversFromEnv();

function summary(r: StormReport): string {
  return `seed ${r.seed}: ${r.calls} calls (${r.tracks} tracks, ${r.replays} replays) in ${r.requests} requests, ${r.retries} retries; ` +
    `${r.ackedTracks} acknowledged tracks, ${r.components} components; storm ${(r.stormMs / 1000).toFixed(1)} s, ` +
    `settled ${(r.settleMs / 1000).toFixed(1)} s, total ${(r.durationMs / 1000).toFixed(1)} s; ${r.violationCount} violations (missing ${r.missing})`;
}

async function storm(t: Test, kind: TopologyKind, seed: number) {
  t.comment(`storm seed ${seed} (STORM_SEED=${seed} to repeat), ${CALLS} calls, ${kind}${servers ? ' on Postgres + NATS' : ' embedded'}`);
  const topo = await startTopology({ kind, servers: !!servers });
  t.teardown(() => topo.close());
  const r = await runStorm({ url: topo.url, operatorToken: topo.operatorToken, seed, calls: CALLS });
  t.comment(summary(r));
  t.same(r.violations, [], `no violations (seed ${seed})`);
  t.ok(r.ackedTracks > CALLS * 0.4, `most tracks acknowledged (${r.ackedTracks})`);
  t.ok(r.components >= 250, `identifiers form components (${r.components})`);
  if (servers) {
    // Every acknowledged event landed: nothing waits in the work-queue streams.
    const left = await poll(() => topo.streamsLeft(), (l) => !!l && l.ingest === 0 && l.events === 0, 15_000, 250);
    t.same(left, { ingest: 0, events: 0 }, 'the ingest and event streams are drained');
  }
}

t.test(`storm against the in-process service${servers ? ' (Postgres + NATS)' : ' (embedded)'}`, (t) => storm(t, 'in-process', baseSeed));
if (servers) t.test('storm against serve + one worker', (t) => storm(t, 'serve+worker', baseSeed + 1));
