// When the embedded event writer lands a batch (pipeline/landing-yield.ts): at once when nobody
// waits at the front door, after the queue there has cleared and stayed clear, and never later than
// its bound. The backlog is scripted over time since the call began. The upper bounds leave room
// for a loaded machine's late timers and descheduled process (CI runs two passes at once); the
// lower ones are exact, and "at once" is checked exactly by the wait it reports (0: no timer).
import t from 'tap';
import { yieldToIngestion } from '../pipeline/landing-yield.js';

type Backlog = { calls: number; oldestMs: number };
const QUIET = { calls: 0, oldestMs: 0 };
const STANDING = { calls: 2_000, oldestMs: 120 };
const QUICK = { calls: 500, oldestMs: 5 };
const opts = { standingMs: 50, quietMs: 40, maxHoldMs: 1_500, pollMs: 2 };

const cases: Array<[string, (ms: number) => Backlog, number, { min: number; max: number }]> = [
  ['nobody waits: at once', () => QUIET, 0, { min: 0, max: 250 }],
  ['past its bound already: at once', () => STANDING, -2_000, { min: 0, max: 250 }],
  ['calls answered quickly: after the quiet spell only', () => QUICK, 0, { min: 40, max: 1_000 }],
  ['a queue stands 150 ms: after it cleared and stayed clear', (ms) => (ms < 150 ? STANDING : QUICK), 0, { min: 190, max: 1_000 }],
  // Between a client's answer and its next request the oldest call is new: not a clear queue (the
  // last gap, from 175 ms, runs into the clear spell).
  ['short gaps in a standing queue do not end it', (ms) => (ms < 200 && ms % 50 >= 25 ? { calls: 2_000, oldestMs: 3 } : ms < 200 ? STANDING : QUIET), 0, { min: 210, max: 1_000 }],
  ['a queue that never clears: at the bound', () => STANDING, 0, { min: 1_490, max: 2_500 }],
  ['the bound counts from the first event, not the call', () => STANDING, -1_300, { min: 190, max: 1_000 }],
];

for (const [what, script, sinceOffset, want] of cases) {
  t.test(what, async (t) => {
    const t0 = Date.now();
    const waited = await yieldToIngestion({ ...opts, backlog: () => script(Date.now() - t0) }, t0 + sinceOffset);
    const took = Date.now() - t0;
    t.ok(took >= want.min && took <= want.max, `resolved after ${took} ms (want ${want.min}-${want.max})`);
    // What it reports is its own span: inside the test's, and at least what its rule makes it wait.
    if (want.min === 0) t.equal(waited, 0, 'at once: it reports no wait');
    else t.ok(waited >= want.min - 5 && waited <= took, `answers how long it waited (${waited} ms, measured ${took} ms)`);
  });
}
