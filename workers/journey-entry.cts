// Piscina's entry for ./journey-task.js: see ./entry.md for why a CommonJS file loads it with import().
let loaded: Promise<typeof import('./journey-task.js')> | undefined;
export = (task: Parameters<typeof import('./journey-task.js').default>[0]) => (loaded ??= import('./journey-task.js')).then((m) => m.default(task));
