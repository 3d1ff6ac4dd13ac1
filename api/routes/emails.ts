// Journey e-mail: the outbox listing, one e-mail, and the test send an operator uses to check the
// SMTP settings. Sending is the pipeline's sender.
import { randomBytes } from 'node:crypto';
import { enqueueEmail, toEmail } from '../../journeys/email/mod.js';
import { httpError, notFound } from '../../http/errors.js';
import { decodeCursor, isString, page } from '../../http/pagination.js';
import type { Bind, Deps } from './deps.js';

// Postgres text cannot hold NUL; such a value is the caller's error, never a 500.
function noNul(v: string | undefined, where: string): void {
  if (v !== undefined && v.includes('\u0000')) throw httpError('validation_failed', `${where}: must not contain NUL characters`);
}

export interface EmailRouteDeps { readonly transport: boolean; notify(): void }

export function emailRoutes(bind: Bind, d: Deps, sender: EmailRouteDeps) {
  const getRow = async (orgId: string, id: string) => {
    if (id.includes('\u0000')) throw notFound('email');
    const r = await d.pool.query('SELECT * FROM emails WHERE org_id = $1 AND id = $2', [orgId, id]);
    if (!r.rows[0]) throw notFound('email');
    return r.rows[0];
  };

  bind('GET', '/v1/emails', async (req) => {
    const { limit, status, executionId, to } = req.query;
    noNul(executionId, 'query /executionId');
    noNul(to, 'query /to');
    const args: unknown[] = [req.principal.orgId];
    let where = 'org_id = $1';
    if (status) { args.push(status); where += ` AND status = $${args.length}`; }
    if (executionId) { args.push(executionId); where += ` AND execution_id = $${args.length}`; }
    if (to) { args.push(to); where += ` AND lower(to_address) = lower($${args.length})`; }
    const after = decodeCursor(req.query.cursor, isString);
    if (after !== undefined) { noNul(after, 'query /cursor'); args.push(after); where += ` AND id < $${args.length}`; }
    args.push(limit + 1);
    const r = await d.pool.query(`SELECT * FROM emails WHERE ${where} ORDER BY id DESC LIMIT $${args.length}`, args);
    return page(r.rows, limit, (x) => x.id, toEmail);
  });

  bind('GET', '/v1/emails/{id}', async (req) => ({ data: toEmail(await getRow(req.principal.orgId!, req.params.id)) }));

  bind('POST', '/v1/emails/test', async (req) => {
    const orgId = req.principal.orgId!;
    const body = req.body.data;
    noNul(body.to, 'body /data/to');
    noNul(body.subject, 'body /data/subject');
    noNul(body.text, 'body /data/text');
    const e = await enqueueEmail(d.pool, {
      orgId, key: `test:${randomBytes(12).toString('base64url')}`, executionId: null, template: '', to: body.to,
      subject: body.subject ?? 'Headwater test e-mail',
      html: '',
      text: body.text ?? `A test e-mail from Headwater for org ${orgId}: the SMTP settings work.`,
    }, { transport: sender.transport });
    sender.notify();
    return { status: 202, data: toEmail(await getRow(orgId, e.id)) };
  });
}
