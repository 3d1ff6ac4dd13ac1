// Ids (pipeline/ids.ts): ULID layout in lowercase Crockford base32 behind a prefix: 10 characters of
// milliseconds, so that ids sort by creation time, then 16 random characters.
import t from 'tap';
import { newId } from '../pipeline/ids.js';

const B32 = '0123456789abcdefghjkmnpqrstvwxyz';

/** The time part as the ULID layout defines it: 10 base32 digits, most significant first. */
function timePart(ms: number): string {
  let s = '';
  for (let i = 0, t = ms; i < 10; i++, t = Math.floor(t / 32)) s = B32[t % 32]! + s;
  return s;
}

t.test('the time part encodes the milliseconds, across the 32-bit boundaries', async (t) => {
  const cases: Array<[string, number]> = [
    ['zero', 0], ['one', 1], ['one digit full', 31], ['two digits', 32], ['2^30 - 1', 2 ** 30 - 1], ['2^30', 2 ** 30],
    ['2^32 + 5', 2 ** 32 + 5], ['2026', Date.UTC(2026, 10, 29)], ['2^48 - 1 (ULID max)', 2 ** 48 - 1], ['2^50 - 1 (10 digits full)', 2 ** 50 - 1],
  ];
  for (const [name, ms] of cases) t.equal(newId('evt', ms).slice(4, 14), timePart(ms), name);
});

t.test('ids sort by time, are unique, and use the whole alphabet in every random position', async (t) => {
  t.ok(newId('evt', 1_000) < newId('evt', 1_001), 'a later millisecond sorts after');
  const seen = new Set<string>();
  const used = Array.from({ length: 16 }, () => new Set<string>());
  for (let i = 0; i < 20_000; i++) {
    const id = newId('prf');
    seen.add(id);
    for (let j = 0; j < 16; j++) used[j]!.add(id[14 + j]!);
  }
  t.equal(seen.size, 20_000, 'no repeats');
  t.match([...seen][0], /^prf_[0-9a-hjkmnp-tv-z]{26}$/, 'prefix, underscore, 26 base32 characters');
  t.same(used.map((s) => s.size), new Array(16).fill(32), 'all 32 characters seen at each random position');
});
