// The journal a claimed execution's activation starts from (journeys/executions/resume.ts): the
// stored one plus its wait's answer, once, and the lease of the save that wrote it.
import t from 'tap';
import { resumeJournal, type ResumeRow } from '../journeys/executions/resume.js';
import type { JournalEntry } from '../schemas/mod.js';

const entry = (at: number, name = 'traits.set'): JournalEntry => ({ call: { name, args: { key: 'k', value: at } } as JournalEntry['call'], result: { ok: true, value: null }, at, recordedAt: '2026-01-01T00:00:00.000Z' });
const sleep = { kind: 'sleep' as const, until: 1, position: 2, call: { name: 'sleep', args: { duration: '1h' } }, began: 0, lease: 'lse_a' };
const paid = { kind: 'event' as const, names: ['paid'], until: 1, position: 2, call: { name: 'waitForEvent', args: { event: 'paid', timeout: '1d' } }, began: 0, lease: 'lse_b' };
const NOW = Date.parse('2026-02-01T00:00:00.000Z');

const cases: Array<[string, ResumeRow, { length: number; last: unknown; lease: string | undefined }]> = [
  ['a running execution: the stored journal', { status: 'running', journal: [entry(0)], wait: null, wake_value: null }, { length: 1, last: null, lease: undefined }],
  ['no journal yet', { status: 'running', journal: null, wait: null, wake_value: null }, { length: 0, last: undefined, lease: undefined }],
  ['a sleep ended: its entry answers null', { status: 'waiting', journal: [entry(0), entry(1)], wait: sleep, wake_value: null }, { length: 3, last: null, lease: 'lse_a' }],
  ['an event answered the wait', { status: 'waiting', journal: [entry(0), entry(1)], wait: paid, wake_value: { event: 'paid' } }, { length: 3, last: { event: 'paid' }, lease: 'lse_b' }],
  ['a wait timed out', { status: 'waiting', journal: [entry(0), entry(1)], wait: paid, wake_value: null }, { length: 3, last: null, lease: 'lse_b' }],
  // A resume whose host call failed (an outage) saved its journal, the wait's answer and the calls
  // after it included, and kept the wait: the answer is not added a second time.
  ['a retried resume', { status: 'waiting', journal: [entry(0), entry(1), { ...entry(2, 'sleep'), result: { ok: true, value: null } }, entry(3)], wait: sleep, wake_value: null }, { length: 4, last: null, lease: 'lse_a' }],
  ['a wait saved before the lease was recorded', { status: 'waiting', journal: [entry(0), entry(1)], wait: { ...sleep, lease: undefined }, wake_value: null }, { length: 3, last: null, lease: undefined }],
];

for (const [what, row, want] of cases) {
  t.test(what, async (t) => {
    const { journal, journalLease } = resumeJournal(row, NOW);
    t.equal(journal.length, want.length, 'entries');
    t.same(journal.map((e) => e.at), journal.map((_, i) => i), 'every entry at its index');
    t.same(journal.at(-1)?.result.ok ? (journal.at(-1)!.result as { value: unknown }).value : undefined, want.last, 'the last entry\'s value');
    t.equal(journalLease, want.lease, 'the lease of the save that wrote it');
    if (row.wait && row.journal && row.journal.length === row.wait.position) {
      t.same(journal.at(-1)!.call, row.wait.call, 'the wait\'s call recorded at its position');
      t.equal(journal.at(-1)!.recordedAt, new Date(NOW).toISOString());
    }
    t.not(journal, row.journal, 'a copy: the row is not changed');
  });
}
