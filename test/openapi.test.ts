// The served /openapi.json is a valid OpenAPI 3.1 document that covers every route of both contract
// files. (Every documented route is implemented now: the check that unimplemented ones answer 404
// went with the last of them, GET /v1/emails.)
import t from 'tap';
import { Validator } from '@seriousme/openapi-schema-validator';
import { call, startServer } from './helpers/server.js';
import { embeddedPassOnly } from './helpers/modes.js';

embeddedPassOnly(t, 'the OpenAPI document');

// Every route of the contract (the OpenAPI document's paths).
const CONTRACT: Array<[string, string]> = [
  ['get', '/health/live'], ['get', '/health/ready'], ['get', '/openapi.json'],
  ['post', '/v1/identify'], ['post', '/v1/track'], ['post', '/v1/batch'],
  ['post', '/v1/catalog/events'], ['get', '/v1/catalog/events'], ['get', '/v1/catalog/events/{name}'],
  ['patch', '/v1/catalog/events/{name}'], ['post', '/v1/catalog/events/{name}/state'],
  ['post', '/v1/catalog/traits'], ['get', '/v1/catalog/traits'], ['get', '/v1/catalog/traits/{name}'],
  ['patch', '/v1/catalog/traits/{name}'], ['post', '/v1/catalog/traits/{name}/state'],
  ['post', '/v1/catalog/quarantine/promote'], ['post', '/v1/catalog/quarantine/deny'],
  ['post', '/v1/apps'], ['get', '/v1/apps'], ['get', '/v1/apps/{id}'], ['patch', '/v1/apps/{id}'],
  ['post', '/v1/apps/{appId}/sources'], ['get', '/v1/apps/{appId}/sources'],
  ['get', '/v1/sources/{id}'], ['patch', '/v1/sources/{id}'], ['delete', '/v1/sources/{id}'],
  ['post', '/v1/sources/{sourceId}/webhook'],
  ['post', '/v1/segments'], ['post', '/v1/segments/preview'], ['get', '/v1/segments'], ['get', '/v1/segments/{id}'],
  ['patch', '/v1/segments/{id}'], ['delete', '/v1/segments/{id}'], ['get', '/v1/segments/{id}/members'],
  ['get', '/v1/executions'], ['get', '/v1/executions/{id}'], ['post', '/v1/executions/{id}/cancel'],
  ['head', '/v1/artifacts/{digest}'], ['put', '/v1/artifacts/{digest}'],
  ['post', '/v1/pushes'], ['get', '/v1/pushes'], ['get', '/v1/pushes/{id}'], ['get', '/v1/pushes/{id}/source'],
  ['post', '/v1/webhooks'], ['get', '/v1/webhooks'], ['get', '/v1/webhooks/{id}'], ['patch', '/v1/webhooks/{id}'],
  ['delete', '/v1/webhooks/{id}'], ['get', '/v1/webhooks/{id}/deliveries'], ['post', '/v1/webhooks/{id}/test'],
  ['post', '/v1/orgs'], ['post', '/v1/orgs/{orgId}/sessions'], ['patch', '/v1/orgs/{orgId}'],
  ['get', '/v1/users/me'], ['get', '/v1/settings'], ['patch', '/v1/settings'],
  ['get', '/v1/events'], ['get', '/v1/profiles/{id}'], ['get', '/v1/profiles'],
  ['get', '/v1/journeys'], ['get', '/v1/journeys/{key}'], ['patch', '/v1/journeys/{key}'],
  ['get', '/v1/emails'], ['get', '/v1/emails/{id}'], ['post', '/v1/emails/test'],
  ['post', '/v1/credentials/rotate'], ['post', '/v1/sessions/revoke'],
  ['post', '/v1/orgs/{orgId}/login-links'], ['post', '/v1/sessions/exchange'],
  ['post', '/v1/profiles/{id}/erase'], ['get', '/v1/erasures'], ['get', '/v1/erasures/{id}'],
  ['get', '/v1/suppressions'], ['delete', '/v1/suppressions/{id}'], ['get', '/v1/profiles/{id}/export'],
];

const s = await startServer();
t.teardown(() => s.close());

const res = await call(s.url, 'GET', '/openapi.json');
const doc = res.body;

t.test('served without credential, not wrapped in the envelope', async (t) => {
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /application\/json/);
  t.equal(doc.openapi.startsWith('3.1'), true, 'OpenAPI 3.1');
  t.equal(doc.info.version, '1.0.0');
  t.notOk('data' in doc, 'not enveloped');
});

t.test('valid per an OpenAPI 3.1 validator', async (t) => {
  const v = new Validator();
  const r = await v.validate(doc);
  t.equal(r.valid, true, JSON.stringify(r.errors)?.slice(0, 2000));
  t.equal(v.version, '3.1');
});

t.test('every contract route is documented', async (t) => {
  for (const [m, p] of CONTRACT) t.ok(doc.paths?.[p]?.[m], `${m.toUpperCase()} ${p}`);
});

t.test('every operation has an operationId and declares its error envelope', async (t) => {
  for (const [p, item] of Object.entries<any>(doc.paths)) {
    for (const [m, op] of Object.entries<any>(item)) {
      t.ok(op.operationId, `${m} ${p} operationId`);
      t.ok(Object.keys(op.responses).some((c) => c.startsWith('2')), `${m} ${p} has a success response`);
    }
  }
});

t.test('error codes of the contract are all listed', async (t) => {
  const text = JSON.stringify(doc);
  for (const code of ['malformed_request', 'invalid_key', 'deploy_key_scope', 'dependency_unavailable', 'journey_nondeterministic', 'artifact_too_large']) {
    t.ok(text.includes(code), code);
  }
});
