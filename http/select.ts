// Picks the front end: the first uWS build that loads on this Node and libc, else node:http with
// one warning saying why. `node` skips uWS (tests of the fallback); `uws` refuses to run without it.
import type { Logger } from '../lib/log.js';
import { ConfigError } from '../lib/config-error.js';
import type { FrontEnd, FrontEndMode } from './front-end.js';
import { loadUws, uwsFrontEnd } from './uws.js';
import { nodeFrontEnd } from './node.js';

/** `--front-end uws` where no uWS build loads: a configuration error (one line, exit 2). */
export class FrontEndError extends ConfigError {}

export async function openFrontEnd(mode: FrontEndMode, log: Logger): Promise<FrontEnd> {
  if (mode === 'node') return nodeFrontEnd();
  const uws = await loadUws();
  if (uws.ok) return uwsFrontEnd(uws.mod);
  const why = uws.failures.map((f) => `${f.pkg}: ${f.error}`).join('; ');
  if (mode === 'uws') throw new FrontEndError(`no uWS build loads on Node ${process.versions.node} (${why})`);
  log.warn('no uWS build loads on this Node and libc: serving through node:http', {
    node: process.versions.node, tried: Object.fromEntries(uws.failures.map((f) => [f.pkg, f.error])),
  });
  return nodeFrontEnd();
}
