// chdb 3.4.0 lists optional platform binaries (@chdb/lib-darwin-*, lib-linux-arm64-gnu) whose
// versions the registry does not serve. `npm install` then leaves them out of package-lock.json and
// `npm ci` refuses the lock as out of sync. This adds platform-guarded entries for them (npm ci skips
// them on other platforms without fetching). Run it after any `npm install` that rewrites the lock.
import { readFileSync, writeFileSync } from 'node:fs';
const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const chdb = lock.packages['node_modules/chdb'];
let added = 0;
for (const [name, version] of Object.entries(chdb?.optionalDependencies ?? {})) {
  const key = `node_modules/${name}`;
  if (lock.packages[key]) continue;
  const [, os, cpu, libc] = /lib-(darwin|linux)-(arm64|x64)(?:-(gnu))?$/.exec(name) ?? [];
  if (!os) continue;
  lock.packages[key] = { version, cpu: [cpu], os: [os], ...(libc ? { libc: ['glibc'] } : {}), optional: true, license: 'Apache-2.0' };
  added++;
}
const sorted = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)));
lock.packages = sorted;
writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log(`package-lock.json: ${added} optional chdb platform entries added`);
