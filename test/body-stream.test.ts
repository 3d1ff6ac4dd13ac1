// The streamed-body queue: memory stays bounded whatever the socket delivers (the rest spills to a
// file), the reader gets every byte in order, pause is asked for, and failures reach the reader.
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BodyQueue } from '../http/body-stream.js';

const dir = mkdtempSync(join(tmpdir(), 'hw-body-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

t.test('a fast socket and a slow reader: bytes in order, memory bounded, pause asked', async (t) => {
  const body = randomBytes(6 * 1024 * 1024);
  let pauses = 0;
  let resumes = 0;
  const q = new BodyQueue({ pause: () => { pauses++; }, resume: () => { resumes++; } }, dir);
  let maxHeld = 0;
  // The socket ignores pause (as uWS does after a resume): 64 KiB pieces, 1 ms apart.
  const feeding = (async () => {
    for (let at = 0; at < body.length; at += 65536) {
      const end = Math.min(at + 65536, body.length);
      q.push(new Uint8Array(body.subarray(at, end)), end === body.length);
      maxHeld = Math.max(maxHeld, q.buffered);
      if ((at / 65536) % 8 === 0) await new Promise((r) => setTimeout(r, 1));
    }
  })();
  const h = createHash('sha256');
  let n = 0;
  for await (const c of q) {
    h.update(c);
    n += c.byteLength;
    await new Promise((r) => setTimeout(r, 3)); // a slow store
  }
  await feeding;
  t.equal(n, body.length, 'every byte');
  t.equal(h.digest('hex'), sha(body), 'in order');
  t.ok(maxHeld <= 1024 * 1024, `memory held at most 1 MiB (${maxHeld})`);
  t.ok(pauses >= 1, 'the socket was asked to pause');
  t.ok(resumes >= 1, 'and to resume');
  t.same(readdirSync(dir), [], 'the spill file is never visible in the directory');
});

t.test('a failure reaches the reader; close drops what is queued', async (t) => {
  const q = new BodyQueue({ pause() {}, resume() {} }, dir);
  for (let i = 0; i < 40; i++) q.push(new Uint8Array(65536), false);
  const reading = (async () => { let n = 0; for await (const c of q) n += c.byteLength; return n; })();
  q.fail(new Error('too large'));
  await t.rejects(reading, /too large/);

  const q2 = new BodyQueue({ pause() {}, resume() {} }, dir);
  q2.push(new Uint8Array(10), false);
  q2.close();
  let got = 0;
  for await (const c of q2) got += c.byteLength;
  t.equal(got, 0, 'nothing after close');
  q2.push(new Uint8Array(10), true);
  t.equal(q2.buffered, 0, 'pushes after close are dropped');
});
