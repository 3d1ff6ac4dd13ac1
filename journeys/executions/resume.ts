// The journal an activation of a claimed execution starts from.
import type { JournalEntry } from '../../schemas/mod.js';
import type { WaitRecord } from './landed.js';

export interface ResumeRow { status: string; journal: JournalEntry[] | null; wait: WaitRecord | null; wake_value: unknown }

/**
 * The stored journal, plus the answer of the wait a waiting execution resumes from (the event, or
 * null on a timeout, for waitForEvent; null for sleep) at the wait's position. A resume that ended
 * in a retry (a host outage) saved its journal with that answer in it and kept the wait, so the
 * answer is added only where the journal ends at the wait. `journalLease` is the claim whose save
 * wrote the journal with this wait (runtime: ActivationInput.execution).
 */
export function resumeJournal(row: ResumeRow, now = Date.now()): { journal: JournalEntry[]; journalLease: string | undefined } {
  const journal = (row.journal ?? []).slice();
  const w = row.wait;
  if (row.status !== 'waiting' || !w) return { journal, journalLease: undefined };
  if (journal.length === w.position) {
    const value = w.kind === 'event' ? (row.wake_value ?? null) : null;
    journal.push({ call: w.call as JournalEntry['call'], result: { ok: true, value }, at: w.position, recordedAt: new Date(now).toISOString() });
  }
  return { journal, journalLease: w.lease };
}
