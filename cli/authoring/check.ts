// The replay check of one journey: its latest executions' journals replayed against the local build.
import type { AuthoringApi, Journals } from './api.js';
import type { LocalJourney } from './build.js';
import { createReplayer, describeCall, type Verdict } from './replayer.js';
import { fail, ok, type Result } from '../project/result.js';

export interface Broken { id: string; status: string; releaseId: string; verdict: Exclude<Verdict, { ok: true }> }
export interface CheckReport { key: string; file: string; journals: Journals | null; replayed: number; broken: Broken[] }

export async function checkJourney(api: AuthoringApi, local: LocalJourney, limit: number, progress?: (done: number, total: number) => void): Promise<Result<CheckReport>> {
  const fetched = await api.journals(local.key, limit);
  if (!fetched.ok) return fetched;
  const journals = fetched.value;
  const report: CheckReport = { key: local.key, file: local.file, journals, replayed: 0, broken: [] };
  if (!journals || journals.executions.length === 0) return ok(report);
  const made = await createReplayer(local.key, local.code);
  if (!made.ok) return fail(made.error);
  const { replayer } = made;
  try {
    const total = journals.executions.length;
    for (const x of journals.executions) {
      const v = await replayer.replay(x);
      report.replayed++;
      if (!v.ok) report.broken.push({ id: x.id, status: x.status, releaseId: x.releaseId, verdict: v });
      progress?.(report.replayed, total);
    }
  } finally {
    replayer.close();
  }
  return ok(report);
}

/** One line per broken execution: the position and both calls, or the failure. */
export function brokenLine(b: Broken): string {
  const v = b.verdict;
  const head = `${b.id} (${b.status}, release ${b.releaseId})`;
  if (v.kind === 'fails') return `${head}: fails on replay: ${v.code}: ${v.message}`;
  return `${head}: nondeterministic at call ${v.at}: the journal records ${describeCall(v.recorded)}, the code now calls ${describeCall(v.code)}`;
}
