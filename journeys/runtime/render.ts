// Rendering one e-mail template in a sandbox of its code (reused like a journey's): `render(props)` of the compiled template, with
// the same clock, randomness and limits discipline as a journey. The output must be a subject
// without line breaks (it becomes a mail header) and html and text bodies.
import { unstorable } from '../../schemas/storable.js';
import { canonicalJson } from './calls.js';
import { resolveLimits, sandboxFor, type Env } from './activate.js';
import type { Failure } from './sandbox.js';
import type { RenderInput, RenderResult } from './types.js';

export const MAX_SUBJECT_CHARS = 998;
export const MAX_BODY_CHARS = 1024 * 1024;

function checkOutput(json: string): { subject: string; html: string; text: string } | string {
  let out: unknown;
  try { out = JSON.parse(json); } catch { return 'render must return { subject, html, text }'; }
  if (!out || typeof out !== 'object' || Array.isArray(out)) return 'render must return { subject, html, text }';
  const { subject, html, text } = out as Record<string, unknown>;
  if (typeof subject !== 'string' || subject.length > MAX_SUBJECT_CHARS || /[\r\n]/.test(subject)) {
    return `subject must be a string of at most ${MAX_SUBJECT_CHARS} characters without line breaks`;
  }
  for (const [k, v] of [['html', html], ['text', text]] as const) {
    if (typeof v !== 'string' || v.length > MAX_BODY_CHARS) return `${k} must be a string of at most ${MAX_BODY_CHARS} characters`;
  }
  const bad = unstorable({ subject, html, text });
  if (bad) return `${bad.pointer.slice(1)} ${bad.reason}`;
  return { subject, html: html as string, text: text as string };
}

export async function renderTemplate(env: Env, input: RenderInput): Promise<RenderResult & { poisoned: boolean }> {
  const limits = resolveLimits(input.limits);
  const deadline = performance.now() + limits.wallMs;
  let outcome: { json: string } | Failure | null = null;
  const { sb, failure } = sandboxFor(env, input.code, limits, deadline, {
    call() { return -1; },
    log() { /* a template has no log */ },
    done(json) { outcome ??= { json }; },
    fail(message) { outcome ??= sb.failWith(message); },
  });
  const failed = (f: Failure) => { sb.dispose(); return { ok: false as const, code: f.code, message: f.message, poisoned: sb.poisoned }; };
  try {
    const f = failure ?? sb.open(input.seed ?? 'template', input.now ?? Date.now()) ?? sb.start('template', canonicalJson(input.props)) ?? sb.pump();
    if (f) return failed(f);
    const o = outcome as { json: string } | Failure | null;
    if (o === null) return failed({ code: 'journey_error', message: 'render returned a promise that never settles' });
    if ('code' in o) return failed(o);
    const out = checkOutput(o.json);
    if (typeof out === 'string') return failed({ code: 'journey_output_invalid', message: out });
    env.cache.release(input.code, sb);
    return { ok: true, ...out, poisoned: sb.poisoned };
  } catch (e) {
    sb.dispose();
    throw e;
  }
}
