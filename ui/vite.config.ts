// Vite builds the dashboard into dist/ui, where the service serves it under /ui/ (http/static.ts).
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/ui/',
  plugins: [preact()],
  logLevel: 'warn',
  build: {
    // The build output beside the compiled server (a directory written, not a module imported).
    outDir: resolve(root, '..', 'dist', 'ui'),
    emptyOutDir: true,
    // Only evergreen browsers load the dashboard; no inline polyfill script (the page's CSP allows
    // scripts from its own origin only).
    modulePreload: { polyfill: false },
    target: 'es2022',
    sourcemap: false,
    assetsInlineLimit: 0,
  },
});
