// The effects of journey calls, performed by the process for one activation. Writes go through the
// ingestion pipeline (governance, identity, segments, triggers) with the messageId
// `<executionId>:<position>` (`<executionId>:<run>:<position>` after a restart), so a repeated
// activation writes once; e-mail and webhooks are outbox rows keyed by the call's idempotency key.
// A refusal is a journal error result the journey can catch; an outage rejects (the activation is
// retried later, the entry not recorded).
import type pg from 'pg';
import type { HostCall, RenderResult } from '../runtime/mod.js';
import type { JournalResult } from '../../schemas/mod.js';
import { splitVariant } from '../../lib/assign.js';
import { isEmail } from '../../pipeline/governance/canonical.js';
import { profileOut, profileResource, type IdentifierRow, type ProfileRow } from '../../pipeline/identity.js';
import { newId } from '../../pipeline/ids.js';
import { latestReadyVersion, versionModule } from '../definitions/mod.js';
import type { CallResult, IdentifyBody, IngestCall, TrackBody } from '../../pipeline/types.js';
import { enqueueWebhookDelivery } from '../webhooks/mod.js';
import { marketingAllowed } from './messaging.js';
import type { PropsCheck, PropsInput } from './props.js';
import { countJourney } from './starts.js';
import type { ProfileRead, ProfileReads } from './reads.js';

/** A rendered e-mail handed to the transport (or the local outbox); idempotent on `key`. */
export interface EmailMessage {
  orgId: string; key: string; executionId: string; template: string; to: string; subject: string; html: string; text: string;
}

export interface HostDeps {
  pool: pg.Pool;
  /** Reads of the execution's own profile, coalesced across the activations in hand. */
  reads: ProfileReads;
  /** The ingestion stream: one result per call once a worker processed it. */
  submit(calls: IngestCall[]): Promise<CallResult[]>;
  render(code: string, props: Record<string, unknown>): Promise<RenderResult>;
  sendEmail(m: EmailMessage): Promise<{ id: string }>;
  /** Wakes the webhook sender of this process (best effort; it also polls). */
  webhookNotify?(): void;
  /**
   * Checks props against a template version's propsSchema on a props thread; rejects when the check
   * is still running at `deadline` (epoch ms), which ends that thread.
   */
  checkProps(input: PropsInput, deadline: number): Promise<PropsCheck>;
  /** A warning of this process's log (an invalid time zone trait, once per profile). */
  warn?(message: string, fields: Record<string, unknown>): void;
}

/** The execution fields the host needs. */
export interface HostExecution {
  id: string; orgId: string; appId: string; sourceId: string; profileId: string; environment: 'development' | 'production'; runSeq: number;
  journeyKey: string;
  /** Epoch ms when the activation's wall-clock budget ends: host work for it stops there. */
  deadline: number;
}

const ok = (value: unknown): JournalResult => ({ ok: true, value: value ?? null });
const fail = (code: string, message: string): JournalResult => ({ ok: false, error: { code, message } });
const PREFERRED = ['userId', 'anonymousId', 'idpId', 'email'] as const;

export function createHost(d: HostDeps, ex: HostExecution): (call: Omit<HostCall, 'signal'>) => Promise<JournalResult> {
  const messageId = (position: number) => (ex.runSeq === 0 ? `${ex.id}:${position}` : `${ex.id}:${ex.runSeq}:${position}`);

  /** The execution's profile, or the survivor it was merged into, with its identifiers. */
  const profile = (): Promise<ProfileRead | undefined> => d.reads.profile(ex.orgId, ex.profileId);

  // The identifier writes go through, read once per activation (trait writes do not change it).
  let through: { profileId: string; ids: Record<string, string> | undefined } | undefined;
  const remember = (profileId: string, ids: IdentifierRow[]) => {
    const x = PREFERRED.map((k) => ids.find((i) => i.kind === k)).find((i) => i !== undefined);
    through = { profileId, ids: x ? { [x.kind]: x.value } : undefined };
    return through.ids;
  };
  const identifiers = (p: ProfileRead) => (through?.profileId === p.row.id ? through.ids : remember(p.row.id, p.ids));
  /** The profile writes go through: its identifier, without re-reading the row once known. */
  const writeIdentifiers = async (): Promise<Record<string, string> | undefined | null> => {
    if (through) return through.ids;
    const p = await profile();
    return p ? identifiers(p) : null;
  };

  /** One call through the ingestion stream; a 5xx (outage) rejects so the activation retries. */
  const ingest = async (kind: 'identify' | 'track', body: IdentifyBody | TrackBody): Promise<CallResult> => {
    const call: IngestCall = {
      id: newId('call'), kind, orgId: ex.orgId, appId: ex.appId, sourceId: ex.sourceId, environment: ex.environment, receivedAt: Date.now(), body,
    };
    const [res] = await d.submit([call]);
    if (!res || res.status >= 500) throw new Error(`ingestion answered ${res?.status ?? 'nothing'}${res && 'error' in res ? `: ${res.error.message}` : ''}`);
    return res;
  };
  const refused = (r: CallResult): JournalResult | undefined => ('error' in r ? fail(r.error.code, r.error.message) : undefined);

  const writeTraits = async (position: number, traits: Record<string, unknown>, unset?: string[]) => {
    const ids = await writeIdentifiers();
    if (ids === null) return fail('not_found', 'the profile of this execution no longer exists');
    if (!ids) return fail('not_found', 'the profile of this execution has no identifier to write through');
    const r = await ingest('identify', { identifiers: ids, traits, messageId: messageId(position), ...(unset ? { unset } : {}) });
    return refused(r) ?? ok(null);
  };

  return async (call) => {
    const a = call.args as Record<string, any>;
    switch (call.name) {
      case 'profile.get': {
        const p = await profile();
        if (!p) return fail('not_found', 'the profile of this execution no longer exists');
        if (through?.profileId !== p.row.id) remember(p.row.id, p.ids);
        return ok(profileResource(p.row, p.ids));
      }
      case 'profiles.get': {
        const r = await d.pool.query<ProfileRow>(
          `SELECT * FROM profiles WHERE org_id = $1 AND id = COALESCE((SELECT merged_into FROM profiles WHERE org_id = $1 AND id = $2), $2)`,
          [ex.orgId, a.id]);
        const p = r.rows[0];
        // Another app's profile answers like a missing one: a journey reads only its own app.
        if (!p || p.app_id !== ex.appId) return fail('not_found', `no profile ${String(a.id).slice(0, 200)} in this journey's app`);
        return ok(await profileOut(d.pool, p));
      }
      case 'traits.set': return writeTraits(call.position, { [a.key]: a.value });
      case 'traits.unset': return writeTraits(call.position, {}, [a.key]);
      case 'events.track': {
        const ids = await writeIdentifiers();
        if (ids === null) return fail('not_found', 'the profile of this execution no longer exists');
        if (!ids) return fail('not_found', 'the profile of this execution has no identifier to write through');
        const r = await ingest('track', { identifiers: ids, event: a.event, properties: a.properties, messageId: messageId(call.position) });
        // The Event (a repeat answers the original), or the quarantine answer when the name is held.
        return refused(r) ?? ok('data' in r ? r.data : null);
      }
      case 'webhook.send': {
        const r = await enqueueWebhookDelivery(d.pool, { orgId: ex.orgId, webhookName: a.destination, executionId: ex.id, key: call.idempotencyKey, payload: a.payload });
        if (!r.ok) return fail('not_found', `no webhook named ${JSON.stringify(String(a.destination).slice(0, 100))} in this org`);
        d.webhookNotify?.();
        return ok({ deliveryId: r.delivery.id });
      }
      case 'email.send': return sendEmail(d, ex, call, profile);
      case 'split': {
        // Stable by (journey, split name, profile): every process and every run answers the same;
        // the journal keeps the answer for replays. Recorded on the execution as `variants`.
        const variant = splitVariant(ex.journeyKey, a.name, ex.profileId, a.weights);
        await d.pool.query(`UPDATE executions SET variants = variants || jsonb_build_object($2::text, $3::text) WHERE id = $1`, [ex.id, a.name, variant]);
        return ok(variant);
      }
    }
  };
}

async function sendEmail(d: HostDeps, ex: HostExecution, call: Omit<HostCall, 'signal'>, profile: () => Promise<ProfileRead | undefined>): Promise<JournalResult> {
  const { template, props } = call.args as { template: string; props: Record<string, unknown> };
  const version = await latestReadyVersion(d.pool, ex.orgId, template, 'template');
  if (!version) return fail('not_found', `no ready template ${JSON.stringify(template)}`);
  const schema = (version.manifest as { propsSchema?: object }).propsSchema ?? {};
  // The empty schema (the default) accepts any props: no trip to a props thread.
  if (Object.keys(schema).length > 0) {
    let v: PropsCheck;
    try { v = await d.checkProps({ versionId: version.id, schema, props }, ex.deadline); } catch (e) {
      // A result, not a retry: the same schema and props would fail the same way again.
      const why = Date.now() >= ex.deadline ? 'the activation\'s deadline passed' : (e as Error).message;
      return fail('validation_failed', `template ${template}: checking the props against its propsSchema did not finish: ${why}`);
    }
    if (!v.ok) return fail('validation_failed', v.bad === 'schema' ? `template ${template}: ${v.message}` : v.message);
  }
  const p = await profile();
  if (!p) return fail('not_found', 'the profile of this execution no longer exists');
  const to = typeof p.row.traits?.email === 'string' && p.row.traits.email ? p.row.traits.email as string
    : p.ids.find((i) => i.kind === 'email')?.value;
  if (!to) return fail('no_email_address', 'the profile has no email trait or identifier');
  // One addr-spec and nothing else: an identifier is any string, and a transport reads
  // "a@x, b@y" or "Name <b@y>" as recipients of its own.
  if (!isEmail(to)) return fail('validation_failed', `the profile's e-mail address ${JSON.stringify(to.slice(0, 100))} is not exactly one address; nothing was sent`);
  const mod = await versionModule(d.pool, ex.orgId, version.id);
  if (!mod) return fail('not_found', `no ready template ${JSON.stringify(template)}`);
  const out = await d.render(mod.code, props);
  if (!out.ok) return fail(out.code, `template ${template}: ${out.message}`);
  // Marketing e-mail follows the org's messaging rules (quiet hours defer, the cap refuses).
  if ((version.manifest as { sendClass?: string }).sendClass === 'marketing') {
    const allowed = await marketingAllowed(d.pool, d.warn ?? (() => {}), { orgId: ex.orgId, journeyKey: ex.journeyKey, profileId: p.row.id, traits: p.row.traits ?? {}, key: call.idempotencyKey },
      () => countJourney(d.pool, ex.orgId, ex.journeyKey, 'capped', 1));
    if (!allowed) return fail('frequency_capped', 'the profile reached the frequency cap for marketing e-mail (settings.messaging.frequencyCap); nothing was sent');
  }
  const sent = await d.sendEmail({ orgId: ex.orgId, key: call.idempotencyKey, executionId: ex.id, template, to, subject: out.subject, html: out.html, text: out.text });
  return ok({ emailId: sent.id, to });
}
