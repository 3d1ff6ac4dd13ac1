// The suite runs twice in CI: on the embedded default, and against PostgreSQL + NATS (DATABASE_URL
// set). A file whose behaviour does not depend on the stores (the CLI's own errors and output, the
// docs, the README quick start, which starts embedded servers of its own) would only repeat its
// work in the second pass, so it marks itself skipped there (docs/development.md).

interface Root { plan(n: number, comment?: string): void; end(): unknown }

/** In the servers pass: reports the file skipped with `why` and exits; otherwise does nothing. */
export function embeddedPassOnly(t: Root, why: string): void {
  if (!process.env.DATABASE_URL) return;
  t.plan(0, `store-independent (${why}): runs in the embedded pass only`);
  t.end();
  process.exit(0);
}

/** Environment that makes a spawned headwater use the embedded default, whichever pass this is. */
export const EMBEDDED_ENV: Readonly<Record<string, string>> = Object.freeze({ DATABASE_URL: '', NATS_URL: '', CLICKHOUSE_URL: '' });
