// Where the project tool finds its own copy of the SDK and the package version it names in manifests.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The compiled SDK next to this tool (dist/sdk/index.js): projects bundle it, so they install nothing. */
export const SDK_FILE = fileURLToPath(new URL('../../sdk/index.js', import.meta.url));

/** `headwater/sdk@<version of this package>`, the manifest's `sdk`. */
export function sdkName(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'headwater') return `headwater/sdk@${pkg.version ?? '0.0.0'}`;
    }
    const up = dirname(dir);
    if (up === dir) return 'headwater/sdk@0.0.0';
    dir = up;
  }
}
