// NODE_OPTIONS as Node reads it: whitespace separates options, except inside double quotes, where
// a backslash escapes the next character (src/node_options.cc, ParseNodeOptionsEnvVar). So that
// an option naming a path with spaces survives when unhooked.ts drops tap's options.

export function splitNodeOptions(value: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  let has = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (quoted && c === '\\' && i + 1 < value.length) { cur += value[++i]; continue; }
    if (c === '"') { quoted = !quoted; has = true; continue; }
    if (!quoted && /\s/.test(c)) { if (has || cur) out.push(cur); cur = ''; has = false; continue; }
    cur += c;
    has = true;
  }
  if (has || cur) out.push(cur);
  return out;
}

/** The options as one NODE_OPTIONS value: quoted where whitespace, quotes or backslashes need it. */
export function joinNodeOptions(options: string[]): string {
  return options.map((o) => (o !== '' && !/[\s"\\]/.test(o) ? o : `"${o.replace(/["\\]/g, (m) => `\\${m}`)}"`)).join(' ');
}
