#!/usr/bin/env node
// Entry of the `headwater` command; the compiled CLI lives in dist/ (built by `npm ci` / `npm run build`).
import { existsSync } from 'node:fs';
const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('headwater: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
await import(main.href);
