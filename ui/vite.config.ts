// Vite builds the dashboard into dist/ui, where the service serves it under /ui/ (api/http/static.ts).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/ui/',
  plugins: [preact()],
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    // Only evergreen browsers load the dashboard; no inline polyfill script (the page's CSP allows
    // scripts from its own origin only).
    modulePreload: { polyfill: false },
    target: 'es2022',
    sourcemap: false,
    assetsInlineLimit: 0,
  },
});
