// Key rotation, session revocation and dashboard login links (README "Credentials: rotation, revocation, push authors"). Rotation
// keeps the old keys of a kind working through a grace period (their `revoked_at` is its end), so a
// deployment can swap the secret without an outage; revocation cuts off every built-in session of
// the org issued before now.
import { newToken } from '../../pipeline/ids.js';
import { tx } from '../../pipeline/store/postgres.js';
import { hashToken } from '../../pipeline/secrets.js';
import { KEY_PREFIX } from '../auth/auth.js';
import { notFound } from '../../http/errors.js';
import type { Bind, Deps } from './deps.js';

export function credentialRoutes(bind: Bind, d: Deps) {
  bind('POST', '/v1/credentials/rotate', async (req) => {
    const p = req.principal;
    const orgId = p.orgId!;
    const { kind, graceSeconds } = req.body.data;
    const secret = newToken(KEY_PREFIX[kind]);
    const expiresOldAt = new Date(Date.now() + (graceSeconds ?? 0) * 1000);
    const old = await tx(d.pool, async (c) => {
      // The org row orders concurrent rotations; a key already ending sooner keeps its earlier end.
      await c.query('SELECT 1 FROM orgs WHERE id = $1 FOR UPDATE', [orgId]);
      const r = await c.query<{ hash: string }>(
        `UPDATE credentials SET revoked_at = $3 WHERE org_id = $1 AND kind = $2 AND (revoked_at IS NULL OR revoked_at > $3)
         RETURNING hash`, [orgId, kind, expiresOldAt]);
      await c.query('INSERT INTO credentials (hash, org_id, kind) VALUES ($1, $2, $3)', [hashToken(secret), orgId, kind]);
      return r.rows.map((x) => x.hash);
    });
    d.auth.expireKeys(old, expiresOldAt);
    d.auth.remember(secret, { scheme: kind, orgId, role: null, userId: null });
    d.log.info('credential rotated', { orgId, kind, by: p.userId, role: p.role, oldKeys: old.length, expiresOldAt: expiresOldAt.toISOString() });
    return { data: { kind, secret, expiresOldAt: expiresOldAt.toISOString() } };
  });

  bind('POST', '/v1/sessions/revoke', async (req) => {
    const p = req.principal;
    // The process clock, as session tokens carry it (`iat_ms`): a session minted after this answer
    // is never caught by it, one minted before (or in the same millisecond) always is.
    const r = await d.pool.query<{ before: Date }>(
      `UPDATE orgs SET sessions_revoked_before = GREATEST(sessions_revoked_before, $2) WHERE id = $1
       RETURNING sessions_revoked_before AS before`, [p.orgId, new Date()]);
    if (!r.rows[0]) throw notFound('org');
    const before = new Date(r.rows[0].before);
    d.auth.sessionsRevoked(p.orgId!, before);
    // Tokens minted in the cut-off's own millisecond are revoked too (`iat_ms <= before`); the
    // answer waits for the clock to pass it, so none minted after the answer ever is (bounded for
    // a cut-off another process's clock set ahead).
    for (let i = 0; i < 1_000 && Date.now() <= before.getTime(); i++) await new Promise((res) => setTimeout(res, 1));
    d.log.info('sessions revoked', { orgId: p.orgId, by: p.userId, revokedBefore: before.toISOString() });
    return { data: { revokedBefore: before.toISOString() } };
  });

  bind('POST', '/v1/orgs/{orgId}/login-links', async (req) => {
    const r = await d.pool.query('SELECT id FROM orgs WHERE id = $1', [req.params.orgId]);
    if (!r.rows[0]) throw notFound('org');
    const { role, userId } = req.body.data;
    return { status: 201, data: await d.auth.issueLoginLink(req.params.orgId, role, userId) };
  });

  bind('POST', '/v1/sessions/exchange', async (req) => {
    const s = await d.auth.exchangeLoginLink(req.body.data.loginToken);
    return { status: 201, data: { token: s.token, role: s.role, expiresAt: s.expiresAt } };
  });
}
