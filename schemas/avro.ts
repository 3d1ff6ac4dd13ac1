// Avro wire records of the ingestion streams (JetStream payloads). Free-form parts (call bodies,
// result data, event properties) travel as JSON strings: their shape is validated at the front end
// and varies per org, so a fixed Avro schema would only duplicate that contract.
import avro from 'avsc';
import type { CallResult, EventRecord, IngestCall } from '../pipeline/types.js';

const Environment: avro.Schema = { type: 'enum', name: 'Environment', symbols: ['development', 'production'] };

export const ingestCallType = avro.Type.forSchema({
  type: 'record', name: 'IngestCall', namespace: 'headwater',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'kind', type: { type: 'enum', name: 'CallKind', symbols: ['identify', 'track'] } },
    { name: 'orgId', type: 'string' },
    { name: 'appId', type: 'string' },
    { name: 'sourceId', type: 'string' },
    { name: 'environment', type: Environment },
    { name: 'receivedAt', type: 'long' },
    { name: 'body', type: 'string' },
    { name: 'replyTo', type: 'string' },
    { name: 'promoted', type: 'boolean', default: false },
  ],
});

// `data` is null when the result is an error or its data is undefined; "null" is JSON null.
const callResultSchema: avro.Schema = {
  type: 'record', name: 'CallResult', namespace: 'headwater',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'status', type: 'int' },
    { name: 'data', type: ['null', 'string'], default: null },
    { name: 'error', type: ['null', { type: 'record', name: 'CallError', fields: [
      { name: 'code', type: 'string' }, { name: 'message', type: 'string' },
    ] }], default: null },
  ],
};
export const callResultType = avro.Type.forSchema(callResultSchema);
/** Results travel grouped per front end: one message carries every result of a batch for it. */
export const callResultBatchType = avro.Type.forSchema({ type: 'array', items: callResultSchema });

export const eventRecordType = avro.Type.forSchema({
  type: 'record', name: 'EventRecord', namespace: 'headwater',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'orgId', type: 'string' },
    { name: 'appId', type: 'string' },
    { name: 'sourceId', type: 'string' },
    { name: 'profileId', type: 'string' },
    { name: 'environment', type: Environment },
    { name: 'event', type: 'string' },
    { name: 'properties', type: 'string' },
    { name: 'timestamp', type: 'string' },
    { name: 'receivedAt', type: 'string' },
    { name: 'messageId', type: ['null', 'string'], default: null },
  ],
});

/** Wraps a received payload without copying (avsc wants a Buffer, NATS hands out Uint8Array). */
function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

export function encodeIngestCall(call: IngestCall, replyTo: string): Buffer {
  return ingestCallType.toBuffer({
    id: call.id, kind: call.kind, orgId: call.orgId, appId: call.appId, sourceId: call.sourceId,
    environment: call.environment, receivedAt: call.receivedAt, body: JSON.stringify(call.body),
    replyTo, promoted: call.promoted === true,
  });
}

export function decodeIngestCall(data: Uint8Array): { call: IngestCall; replyTo: string } {
  const r = ingestCallType.fromBuffer(asBuffer(data));
  const call: IngestCall = {
    id: r.id, kind: r.kind, orgId: r.orgId, appId: r.appId, sourceId: r.sourceId,
    environment: r.environment, receivedAt: r.receivedAt, body: JSON.parse(r.body),
  };
  if (r.promoted) call.promoted = true;
  return { call, replyTo: r.replyTo };
}

export interface IdentifiedResult { id: string; result: CallResult }

function toWireResult({ id, result }: IdentifiedResult) {
  if ('error' in result) return { id, status: result.status, data: null, error: { code: result.error.code, message: result.error.message } };
  const json = JSON.stringify(result.data);
  return { id, status: result.status, data: json === undefined ? null : json, error: null };
}

function fromWireResult(r: { id: string; status: number; data: string | null; error: { code: string; message: string } | null }): IdentifiedResult {
  if (r.error) return { id: r.id, result: { status: r.status, error: { code: r.error.code, message: r.error.message } } };
  return { id: r.id, result: { status: r.status, data: r.data === null ? undefined : JSON.parse(r.data) } };
}

export function encodeCallResult(id: string, result: CallResult): Buffer { return callResultType.toBuffer(toWireResult({ id, result })); }
export function decodeCallResult(data: Uint8Array): IdentifiedResult { return fromWireResult(callResultType.fromBuffer(asBuffer(data))); }
export function encodeCallResults(results: IdentifiedResult[]): Buffer { return callResultBatchType.toBuffer(results.map(toWireResult)); }
export function decodeCallResults(data: Uint8Array): IdentifiedResult[] { return callResultBatchType.fromBuffer(asBuffer(data)).map(fromWireResult); }

/** Many events in one stream message: one publish, one delivery, one ack for all of them. */
export const eventBatchType = avro.Type.forSchema({ type: 'array', items: eventRecordType });

const toWireEvent = (e: EventRecord) => ({ ...e, properties: JSON.stringify(e.properties) });
const fromWireEvent = (r: any): EventRecord => ({
  id: r.id, orgId: r.orgId, appId: r.appId, sourceId: r.sourceId, profileId: r.profileId,
  environment: r.environment, event: r.event, properties: JSON.parse(r.properties),
  timestamp: r.timestamp, receivedAt: r.receivedAt, messageId: r.messageId,
});

export function encodeEventRecord(e: EventRecord): Buffer {
  return eventRecordType.toBuffer(toWireEvent(e));
}

export function decodeEventRecord(data: Uint8Array): EventRecord {
  return fromWireEvent(eventRecordType.fromBuffer(asBuffer(data)));
}

/**
 * A batch message is the byte 0x01, then an Avro array of EventRecord. A single EventRecord (how
 * earlier versions published) starts with the zigzag length of its id, an even byte: so
 * `decodeEvents` reads both, and a stream holding messages of either kind drains after an upgrade.
 */
const BATCH_MARK = 0x01;

export function encodeEventBatch(events: EventRecord[]): Buffer {
  return Buffer.concat([Buffer.of(BATCH_MARK), eventBatchType.toBuffer(events.map(toWireEvent))]);
}

export function decodeEvents(data: Uint8Array): EventRecord[] {
  const buf = asBuffer(data);
  if (buf[0] === BATCH_MARK) return (eventBatchType.fromBuffer(buf.subarray(1)) as any[]).map(fromWireEvent);
  return [fromWireEvent(eventRecordType.fromBuffer(buf))];
}
