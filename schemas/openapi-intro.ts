// The introduction of the OpenAPI document (info.description): conventions, credentials, the error
// table and the behaviours every route shares. Written into openapi.json by build.ts.
import { DATE_TIME_MAX, DATE_TIME_MIN } from './storable.js';
import { ERROR_STATUS } from './errors.js';

function errorTable(): string {
  const byStatus = new Map<number, string[]>();
  for (const [code, status] of Object.entries(ERROR_STATUS)) {
    if (code.startsWith('journey_')) continue;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const rows = [...byStatus.entries()].sort((a, b) => a[0] - b[0])
    .map(([status, codes]) => `| ${status} | ${codes.map((c) => `\`${c}\``).join(', ')} |`);
  return ['| HTTP status | Codes |', '|---|---|', ...rows].join('\n');
}

export function description(): string {
  const journeyCodes = Object.keys(ERROR_STATUS).filter((c) => c.startsWith('journey_')).map((c) => `\`${c}\``).join(', ');
  return `
**headwater** ingests customer profiles and behavioural events, governs which event and trait names are accepted,
groups profiles into segments, and runs durable per-profile journeys pushed from a project.

## Conventions

- **Success envelope**: \`{ data, meta }\`. \`meta\` may carry \`requestId\` (string), \`nextCursor\` (string or null) and \`hasMore\` (boolean).
  Every response, success or error, carries \`meta.requestId\`, also sent as the \`x-request-id\` header.
- **Error envelope**: \`{ error: { code, message }, meta }\`; \`code\` is one of a fixed set (table below).
  \`validation_failed\` messages name the offending field as a JSON pointer.
- **What the stores hold**: no string anywhere in a request (path segment, query parameter, body member name or value, at any
  depth, a batch call included) may contain the NUL character (U+0000) or a lone UTF-16 surrogate: 422 \`validation_failed\` naming
  it (in a batch, that call alone). Every integer has a maximum (stated in its schema); date-times run from ${DATE_TIME_MIN} to
  ${DATE_TIME_MAX} (\`formatMinimum\` / \`formatMaximum\`).
- **Request bodies** of write routes wrap their content in a top-level \`data\` object; a missing wrapper, unparseable JSON or a
  wrong content type is 400 \`malformed_request\`. Unknown members are ignored.
- **Cursor pagination**: \`cursor\` (opaque string, optional) and \`limit\` (integer 1 to 100, default 50). The next page's cursor is
  \`meta.nextCursor\`; \`meta.hasMore\` says whether more exist. Search \`q\` (0 to 200 characters) matches case-insensitively as a substring of the name.
- Identifiers are prefixed strings; timestamps are ISO 8601 date-times. The \`environment\` of an app, profile or event is \`development\` or \`production\`.
- Dashboard and ingestion routes live under \`/v1\`; \`/health/*\` and \`/openapi.json\` outside it.

## Errors

${errorTable()}

\`over_quota\` and \`rate_limited\` answers carry a \`Retry-After\` header. The ${journeyCodes} codes are journey execution failures:
they appear in an execution's \`error\` and in journal results, never as HTTP statuses. A \`/v1/sources/{sourceId}/webhook\` answer is plain text, and \`/segment/v1/...\` answers follow Segment's conventions (\`{ success, code, message }\`), not the envelope.

## Authentication

All credentials are HTTP bearer tokens. Every credential is bound to one org; a resource of another org is answered 404 \`not_found\`, never 403.

| Scheme | Credential | Valid for |
|---|---|---|
| \`operatorToken\` | \`HEADWATER_OPERATOR_TOKEN\` (generated on first start, stored in the data directory with mode 0600 and printed once, when unset) | \`POST /v1/orgs\`, \`POST /v1/orgs/{orgId}/sessions\`, \`POST /v1/orgs/{orgId}/login-links\`, \`PATCH /v1/orgs/{orgId}\` |
| \`orgApiKey\` | org API key | ingestion (\`/v1/identify\`, \`/v1/track\`, \`/v1/batch\`) and \`GET /v1/users/me\` |
| \`idpSession\` | session JWT for the org, role \`org:admin\` or \`org:member\` (built-in issuer via the operator routes, or an external identity provider: issuer + JWKS URL, org id and role as claims) | the dashboard API |
| \`orgDeployKey\` | org key with the \`deploy\` scope | the release lifecycle only (executions, artifacts, journeys, \`GET /v1/users/me\`); acts as \`org:admin\` there |
| \`orgPipelineKey\` | org pipeline key | push creation, artifacts and \`GET /v1/users/me\` |
| \`segmentWriteKey\` | source write key (\`POST /v1/sources/{id}/write-keys\`), as Basic auth \`base64(writeKey + ":")\` or \`writeKey\` in the body; public by nature | \`/segment/v1/...\` only, into its own source only |

Health routes and \`/openapi.json\` need no credential. The source webhook receiver needs no bearer: the provider's signature authorizes.
Catalog, segment, webhook, app and source mutations, \`PATCH /v1/settings\` and \`PATCH /v1/journeys/{key}\` require \`org:admin\`.

| Situation | Status | Code |
|---|---|---|
| missing, malformed, unknown, expired or revoked bearer (any scheme) | 401 | \`invalid_key\` |
| a valid credential of the wrong scheme for the route (API key on the dashboard, session on ingestion, any org credential on operator routes, the pipeline key anywhere but push creation, artifacts and \`GET /v1/users/me\`) | 401 | \`invalid_key\` |
| deploy key on a route outside the release lifecycle, ingestion included | 403 | \`deploy_key_scope\` |
| \`org:member\` session on a mutation that needs \`org:admin\` | 403 | \`forbidden\` |
| call carrying an archived source id (ingestion, receiver) | 403 | \`forbidden\` |

Rotation and revocation (\`org:admin\` sessions): \`POST /v1/credentials/rotate\` issues a new API, deploy or pipeline key; the old one
works until \`expiresOldAt\` (\`graceSeconds\`, 0 to 86400). \`POST /v1/sessions/revoke\` refuses every built-in session of the org issued
before its answer's \`revokedBefore\`. Both take effect at once in the answering process and within 5 seconds in every other process
sharing the database. Session tokens live \`HEADWATER_SESSION_TTL\`; dashboard login links (\`POST /v1/orgs/{orgId}/login-links\`) live
5 minutes, are exchanged once for a session (\`POST /v1/sessions/exchange\`) and are no session themselves.

## Limits

| Subject | Limit |
|---|---|
| Request body | 1 MiB by default (\`HEADWATER_BODY_LIMIT\`, also settable per org by the operator) -> 413 \`payload_too_large\` |
| Body nesting depth | 64 levels -> 422 \`validation_failed\` |
| Request head | up to 16 KB accepted (longer ones may get a bare 431) |
| Artifact upload | 32 MiB by default (\`HEADWATER_ARTIFACT_LIMIT\`), replacing the body limit -> 413 \`artifact_too_large\` |
| Rate | per-API-key token bucket (\`ratePerSecond\`, \`burst\`) -> 429 \`rate_limited\` with \`Retry-After\` |
| Quota | per-org monthly accepted track calls (single or batched; identify and service-written events do not count) -> 429 \`over_quota\` |
| Segment preview | scans at most 10,000 profiles (configurable); \`truncated\` says whether it stopped early |
| Batch | 1 to 500 calls |

Rate and quota are set per org by the operator (\`PATCH /v1/orgs/{orgId}\`, \`data.limits\`; \`monthlyEvents\` null for unlimited) and take effect within one second.

## Ingestion

- An app is the attribution unit; a write is attributed to the parent app of its \`sourceId\`. Profiles are scoped to (org, app), and a profile's and
  an event's \`environment\` is its app's. An unknown \`sourceId\` (or one of another org) is 404 \`not_found\`; an archived one 403 \`forbidden\`.
- **Identity resolution**: a call looks the profile up by any of its identifiers. None found: a new profile. One found: it is updated and the new
  identifiers attached. Several found: they merge into the oldest; the others get \`mergedInto\` set to the survivor, and their identifiers, traits
  (newer values win) and event history follow it. Two profiles holding different \`userId\` values are never merged; the call then lands on the
  profile of its \`userId\`. \`anonymous\` is true while a profile has only \`anonymousId\` identifiers. Concurrent calls for the same identifiers
  never create two profiles. \`traits.consent\`, when an object of booleans, is merged into \`profile.consent\` and not stored as a trait.
- **Dedup**: \`messageId\` is unique per (org, app), permanently: a replay answers 200 with the original Event, even if its body differs
  (a replay of a held event answers the quarantined answer). Identify \`messageId\` is optional and dedups the same way when given.
  Event \`timestamp\` defaults to \`receivedAt\`.
- **Governance**: ingestion is accept-by-default; rejection has exactly two sources, the deny-list (422 \`event_denied\` / \`trait_denied\`; denied always
  wins and nothing of the call is written) and the canonical trait validations (422 \`trait_validation_failed\`, naming the trait: \`email\` an e-mail
  address, \`phone\` E.164, \`createdAt\` ISO 8601 date-time, \`birthday\` ISO 8601 date, \`website\` and \`avatar\` absolute http(s) URLs, \`age\` a number
  from 0 to 150). Under the org setting \`ingestionPolicy\` \`permissive\` (default) unknown names are registered in the catalog as \`allowed\` with
  observed property types. Under \`strict\`, a track with an unknown event name is held whole and answered 200 \`{ data: { status: "quarantined" } }\`;
  on identify, unknown traits are held, the rest applied, and the Profile answered without them. Promote applies held values in arrival order;
  deny drops them.
- Every successful write updates \`lastReceivedAt\` of its source and app (visible in the next read answered by the same process; other
  front-end processes show it within about a second, the interval at which times are flushed to Postgres) and recomputes the written profile's segment memberships before it is
  answered; transitions emit \`system.segment_entered\` / \`system.segment_exited\` (properties \`segmentId\`, \`segmentName\`).

## Journeys and webhooks

- A push stores the manifest and files a version per changed journey/template key; versions compile asynchronously. Enabling is separate
  (\`PATCH /v1/journeys/{key}\`, 409 \`release_not_ready\` without a ready version). A journey runs for a profile only when \`consent[purpose]\` is true.
- Outbound webhooks follow Standard Webhooks: payload \`{ v: 1, id, type: "journey.webhook", timestamp, data }\`, headers \`webhook-id\`,
  \`webhook-timestamp\`, \`webhook-signature\` (\`v1,\` + base64 HMAC-SHA256 over \`id.timestamp.body\`). Retries with exponential backoff (default 5
  attempts); a webhook auto-disables after 5 consecutive failed deliveries, recording \`skipped_disabled\` until re-enabled. Delivery is at least
  once: a retry can repeat a request the receiver got (its answer came too late), with the same \`webhook-id\` and body, the receiver's key to deduplicate.
`.trim();
}
