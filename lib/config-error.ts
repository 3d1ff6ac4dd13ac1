// A bad setting or argument: the CLI prints its message and exits 2 (cli/main.ts), without a stack.
// In lib/ so the layers below api/ (http/select.ts) can raise it too.
export class ConfigError extends Error {}
