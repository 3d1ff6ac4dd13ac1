// Minimal JSON-lines logger. Passed in everywhere; no global instance.
export type Level = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const RANK: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export function createLogger(level: Level = 'info', base: Record<string, unknown> = {},
  write: (line: string) => void = (l) => process.stderr.write(l + '\n')): Logger {
  const min = RANK[level];
  const emit = (lv: Level, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[lv] < min) return;
    const rec: Record<string, unknown> = { t: new Date().toISOString(), level: lv, msg, ...base, ...fields };
    if (fields?.err instanceof Error) rec.err = { message: fields.err.message, stack: fields.err.stack };
    write(JSON.stringify(rec));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (f) => createLogger(level, { ...base, ...f }, write),
  };
}
