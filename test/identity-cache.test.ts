// The fast path's identity cache (pipeline/identity-cache.ts) is bounded per org, and the bound
// must not forget the identifiers in use: an org that keeps gaining new users still finds its
// returning users, while what nobody used goes. And its versions rule: entries learned at an older
// identity version are ignored, a newer version starts the org over.
import t from 'tap';
import { IdentityCache, ownerKey } from '../pipeline/identity-cache.js';

const CAP = 100_000;
const key = (v: string) => ownerKey('app_1', 'userId', v);
const known = (c: IdentityCache, v: string) => c.peek('org_1')?.owners.get(key(v));

t.test('returning users stay known while new ones pass the bound; unused ones go', async (t) => {
  const c = new IdentityCache();
  c.learn('org_1', 1, [[key('hot'), 'prf_hot'], [key('cold'), 'prf_cold']]);
  // Three times the bound of new users, the hot one used now and then.
  for (let i = 0; i < 3 * CAP; i++) {
    c.learn('org_1', 1, [[key(`new-${i}`), `prf_${i}`]]);
    if (i % 10_000 === 0) t.equal(known(c, 'hot'), 'prf_hot', `hot user known after ${i} new ones`);
  }
  t.equal(known(c, 'hot'), 'prf_hot', 'the user in use is still known');
  t.equal(known(c, 'cold'), undefined, 'the user nobody used was forgotten');
  t.equal(known(c, `new-${3 * CAP - 1}`), `prf_${3 * CAP - 1}`, 'the newest is known');
  t.equal(known(c, 'new-0'), undefined, 'the oldest new user was forgotten');
  t.ok(c.peek('org_1')!.owners.size <= CAP, `at most ${CAP} entries (${c.peek('org_1')!.owners.size})`);
});

t.test('versions: an older version is ignored, a newer one starts over', async (t) => {
  const cases: Array<[string, number, boolean]> = [
    ['the same version adds', 5, true],
    ['an older version is ignored', 4, false],
    ['a newer version starts over', 6, true],
  ];
  for (const [what, version, kept] of cases) {
    const c = new IdentityCache();
    c.learn('org_1', 5, [[key('a'), 'prf_a']]);
    c.learn('org_1', version, [[key('b'), 'prf_b']]);
    t.equal(known(c, 'b'), kept ? 'prf_b' : undefined, `${what}: the new entry`);
    t.equal(known(c, 'a'), version > 5 ? undefined : 'prf_a', `${what}: the earlier entry`);
    t.equal(c.peek('org_1')!.version, Math.max(5, version), `${what}: the version held`);
  }
  const c = new IdentityCache();
  c.learn('org_1', 1, [[key('a'), 'prf_a']]);
  c.reset('org_1', 2);
  t.equal(known(c, 'a'), undefined, 'reset forgets the org');
  t.equal(c.peek('org_1')!.version, 2);
});
