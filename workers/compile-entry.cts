// Piscina's entry for ./compile-task.js: see ./entry.md for why a CommonJS file loads it with import().
let loaded: Promise<typeof import('./compile-task.js')> | undefined;
export = (task: Parameters<typeof import('./compile-task.js').default>[0]) => (loaded ??= import('./compile-task.js')).then((m) => m.default(task));
