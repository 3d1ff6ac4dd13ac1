/** The value after `name` on the command line, or `def`. */
export function arg(name: string, def: string): string {
  const i = process.argv.indexOf(name);
  return i !== -1 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : def;
}
