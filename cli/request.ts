// How CLI commands find the service and their credential, and call it: every failure is a
// CliError whose message is one line for the user (no stack), with the exit code it ends with.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** A failure the user reads as one line; `exitCode` 1 (the work failed) or 2 (wrong usage). */
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) { super(message); }
}

export interface Target {
  url: string;
  token: string;
  /** Where the token came from, said in a 401 line: `--token`, an environment variable, a file. */
  from: string;
  kind: 'operator' | 'org';
}

export function flag(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  if (i !== -1) return argv[i + 1];
  const eq = argv.find((a) => a.startsWith(name + '='));
  return eq?.slice(name.length + 1);
}

const urlOf = (argv: string[]) => (flag(argv, '--url') ?? process.env.HEADWATER_URL ?? DEFAULT_URL).replace(/\/+$/, '');

/**
 * The operator credential, one rule: `--token`, else HEADWATER_OPERATOR_TOKEN, else the token the
 * server generated into its data directory (`--data-dir`, else HEADWATER_DATA_DIR, else ./.headwater).
 */
export function operatorTarget(argv: string[]): Target {
  const url = urlOf(argv);
  const given = flag(argv, '--token');
  if (given) return { url, token: given, from: '--token', kind: 'operator' };
  const env = process.env.HEADWATER_OPERATOR_TOKEN;
  if (env) return { url, token: env, from: 'HEADWATER_OPERATOR_TOKEN', kind: 'operator' };
  const file = join(resolve(flag(argv, '--data-dir') ?? process.env.HEADWATER_DATA_DIR ?? './.headwater'), 'operator-token');
  if (existsSync(file)) return { url, token: readFileSync(file, 'utf8').trim(), from: file, kind: 'operator' };
  throw new CliError(`no operator token: pass --token, set HEADWATER_OPERATOR_TOKEN, or run where the server's data directory is (${file} does not exist)`, 2);
}

/** An org credential: `--token`, else HEADWATER_TOKEN (a session token; push also takes the pipeline key). */
export function orgTarget(argv: string[], what = 'a session token'): Target {
  const url = urlOf(argv);
  const given = flag(argv, '--token');
  if (given) return { url, token: given, from: '--token', kind: 'org' };
  const env = process.env.HEADWATER_TOKEN;
  if (env) return { url, token: env, from: 'HEADWATER_TOKEN', kind: 'org' };
  throw new CliError(`no credential: pass --token or set HEADWATER_TOKEN (${what} of the org, e.g. sessions.admin from org create)`, 2);
}

/** The line for a refused credential: what the route wants and where this token came from. */
export function unauthorized(t: Pick<Target, 'from' | 'kind'>, detail: string): string {
  if (t.kind === 'operator') {
    const stale = t.from.endsWith('operator-token')
      ? '; a server started with HEADWATER_OPERATOR_TOKEN ignores the generated file: set the same HEADWATER_OPERATOR_TOKEN here'
      : '';
    return `the service refused the operator token taken from ${t.from} (${detail}): this command needs the server's operator token${stale}`;
  }
  return `the service refused the credential taken from ${t.from} (${detail}): this command needs an org session token (sessions.admin or sessions.member from org create, or a dashboard session)`;
}

/** One line for a fetch that never got an answer. */
export function unreachable(url: string, err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string; errors?: Array<{ code?: string }> } }).cause;
  const why = cause?.code ?? cause?.errors?.[0]?.code ?? cause?.message ?? (err as Error).message;
  return `cannot reach the service at ${url}: ${why} (is headwater serve running there? set --url or HEADWATER_URL)`;
}

/** Calls the API and answers its parsed body; a refusal or no answer is a CliError. */
export async function callApi<T = any>(t: Target, method: string, path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(t.url + path, {
      method,
      headers: { authorization: `Bearer ${t.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify({ data: body }),
      signal: AbortSignal.timeout(60_000),
    });
  } catch (err) {
    throw new CliError(unreachable(t.url, err));
  }
  const text = await res.text();
  let parsed: any;
  try { parsed = JSON.parse(text); } catch { parsed = undefined; }
  if (res.ok && parsed !== undefined) return parsed as T;
  const e = parsed?.error as { code?: string; message?: string } | undefined;
  const detail = e?.code ? `${res.status} ${e.code}${e.message ? ': ' + e.message : ''}` : `HTTP ${res.status}`;
  if (res.status === 401) throw new CliError(unauthorized(t, detail));
  throw new CliError(`${method} ${path} failed: ${detail}`);
}
