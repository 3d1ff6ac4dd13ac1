// Piscina's entry for ./props-task.js: see ./entry.md for why a CommonJS file loads it with import().
let loaded: Promise<typeof import('./props-task.js')> | undefined;
export = (task: Parameters<typeof import('./props-task.js').default>[0]) => (loaded ??= import('./props-task.js')).then((m) => m.default(task));
