// Piscina's entry for ./ingest-task.js: see ./entry.md for why a CommonJS file loads it with import().
let loaded: Promise<typeof import('./ingest-task.js')> | undefined;
export = (task: Parameters<typeof import('./ingest-task.js').default>[0]) => (loaded ??= import('./ingest-task.js')).then((m) => m.default(task));
