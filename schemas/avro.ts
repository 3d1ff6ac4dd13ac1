// Avro wire records of the ingestion streams (JetStream payloads). Free-form parts (call bodies,
// result data, event properties) travel as JSON strings: their shape is validated at the front end
// and varies per org, so a fixed Avro schema would only duplicate that contract.
import avro from 'avsc';
import type { CallResult, EventRecord, IngestCall } from './records.js';

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

// The fields of the event record (version 1); version 2 adds `context`.
const eventFields: any[] = [
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
];

export const eventRecordType = avro.Type.forSchema({ type: 'record', name: 'EventRecord', namespace: 'headwater', fields: eventFields });

/** Version 2 of the event record: the call's `context` (JSON, null when the call had none). */
export const eventRecordV2Type = avro.Type.forSchema({
  type: 'record', name: 'EventRecordV2', namespace: 'headwater',
  fields: [
    ...eventFields,
    { name: 'context', type: ['null', 'string'], default: null },
  ],
});

/** Wraps a received payload without copying (avsc wants a Buffer, NATS hands out Uint8Array). */
function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** Calls of one front end and one org, published together: one stream message for all of them. */
export const ingestBatchType = avro.Type.forSchema({ type: 'array', items: ingestCallType });

const toWireCall = (call: IngestCall, replyTo: string) => ({
  id: call.id, kind: call.kind, orgId: call.orgId, appId: call.appId, sourceId: call.sourceId,
  environment: call.environment, receivedAt: call.receivedAt, body: JSON.stringify(call.body),
  replyTo, promoted: call.promoted === true,
});

function fromWireCall(r: any): { call: IngestCall; replyTo: string } {
  const call: IngestCall = {
    id: r.id, kind: r.kind, orgId: r.orgId, appId: r.appId, sourceId: r.sourceId,
    environment: r.environment, receivedAt: r.receivedAt, body: JSON.parse(r.body),
  };
  if (r.promoted) call.promoted = true;
  return { call, replyTo: r.replyTo };
}

export function encodeIngestCall(call: IngestCall, replyTo: string): Buffer {
  return ingestCallType.toBuffer(toWireCall(call, replyTo));
}

/**
 * Records of one type encoded one after another into one allocation, one view each. avsc's
 * `toBuffer` allocates and copies for every record: 2-3x the cost of encoding itself for the
 * ingestion stream's small records.
 */
function encodeEach<T>(type: avro.Type, values: T[], wire: (v: T) => unknown): Buffer[] {
  let buf = Buffer.allocUnsafe(Math.max(4096, values.length * 512));
  const ends = new Array<number>(values.length);
  let pos = 0;
  for (let i = 0; i < values.length; i++) {
    const w = wire(values[i]!);
    let next = type.encode(w, buf, pos);
    if (next < 0) {
      // Too small: avsc answers minus the bytes missing. Grow (at least double) and encode again.
      const grown = Buffer.allocUnsafe(Math.max(buf.length * 2, buf.length - next + 4096));
      buf.copy(grown, 0, 0, pos);
      buf = grown;
      next = type.encode(w, buf, pos);
    }
    ends[i] = pos = next;
  }
  const out = new Array<Buffer>(values.length);
  for (let i = 0, start = 0; i < values.length; start = ends[i]!, i++) out[i] = buf.subarray(start, ends[i]);
  return out;
}

/** Calls for `batchMessages`, as `encodeIngestCall` encodes each. */
export function encodeIngestCalls(calls: IngestCall[], replyTo: string): Buffer[] {
  return encodeEach(ingestCallType, calls, (c) => toWireCall(c, replyTo));
}

export function decodeIngestCall(data: Uint8Array): { call: IngestCall; replyTo: string } {
  return fromWireCall(ingestCallType.fromBuffer(asBuffer(data)));
}

/**
 * Batch messages of both streams are the byte 0x01, then an Avro array. A single record (how earlier
 * versions published) starts with the zigzag length of its id, an even byte: so the decoders read
 * both, and a stream holding messages of either kind drains after an upgrade.
 */
const BATCH_MARK = 0x01;

/**
 * Batch messages of already encoded records: up to `maxCount` records and about `maxBytes` each (a
 * record larger than that goes alone), every one BATCH_MARK and an Avro array (one block).
 */
export function batchMessages(records: Buffer[], maxCount: number, maxBytes: number, mark = BATCH_MARK): Array<{ data: Buffer; first: number; count: number }> {
  const out: Array<{ data: Buffer; first: number; count: number }> = [];
  let start = 0;
  while (start < records.length) {
    let end = start;
    let bytes = 0;
    while (end < records.length && end - start < maxCount && (end === start || bytes + records[end]!.length <= maxBytes)) bytes += records[end++]!.length;
    out.push({ data: Buffer.concat([Buffer.of(mark), zigzag(end - start), ...records.slice(start, end), Buffer.of(0)]), first: start, count: end - start });
    start = end;
  }
  return out;
}

/** Avro's long encoding (zigzag varint) of a non-negative count. */
function zigzag(n: number): Buffer {
  const bytes: number[] = [];
  let v = n * 2;
  while (v > 0x7f) { bytes.push((v & 0x7f) | 0x80); v = Math.floor(v / 128); }
  bytes.push(v);
  return Buffer.from(bytes);
}

export function decodeIngestCalls(data: Uint8Array): Array<{ call: IngestCall; replyTo: string }> {
  const buf = asBuffer(data);
  if (buf[0] === BATCH_MARK) return (ingestBatchType.fromBuffer(buf.subarray(1)) as any[]).map(fromWireCall);
  return [fromWireCall(ingestCallType.fromBuffer(buf))];
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

/** Event batches of version 2 records start with this byte (odd, like BATCH_MARK, so never a single record). */
export const EVENT_BATCH_MARK = 0x03;
export const eventBatchV2Type = avro.Type.forSchema({ type: 'array', items: eventRecordV2Type });

const toWireEvent = (e: EventRecord) => ({ ...e, properties: JSON.stringify(e.properties) });
// Field by field, not a spread: avsc writes an object of a spread ~2x slower, and the spread itself
// cost 2.6 us per event.
const toWireEventV2 = (e: EventRecord) => ({
  id: e.id, orgId: e.orgId, appId: e.appId, sourceId: e.sourceId, profileId: e.profileId,
  environment: e.environment, event: e.event, properties: JSON.stringify(e.properties),
  timestamp: e.timestamp, receivedAt: e.receivedAt, messageId: e.messageId ?? null,
  context: e.context ? JSON.stringify(e.context) : null,
});
const fromWireEvent = (r: any): EventRecord => {
  const e: EventRecord = {
    id: r.id, orgId: r.orgId, appId: r.appId, sourceId: r.sourceId, profileId: r.profileId,
    environment: r.environment, event: r.event, properties: JSON.parse(r.properties),
    timestamp: r.timestamp, receivedAt: r.receivedAt, messageId: r.messageId,
  };
  if (typeof r.context === 'string') e.context = JSON.parse(r.context);
  return e;
};

/** A version 2 record, for `batchMessages(…, EVENT_BATCH_MARK)`: what the event stream publishes. */
export function encodeEvent(e: EventRecord): Buffer {
  return eventRecordV2Type.toBuffer(toWireEventV2(e));
}

/** Events for `batchMessages(…, EVENT_BATCH_MARK)`, as `encodeEvent` encodes each. */
export function encodeEvents(list: EventRecord[]): Buffer[] {
  return encodeEach(eventRecordV2Type, list, toWireEventV2);
}

export function encodeEventRecord(e: EventRecord): Buffer {
  return eventRecordType.toBuffer(toWireEvent(e));
}

export function decodeEventRecord(data: Uint8Array): EventRecord {
  return fromWireEvent(eventRecordType.fromBuffer(asBuffer(data)));
}

/**
 * A batch message (EVENT_BATCH_MARK, then version 2 records; or BATCH_MARK, then version 1 records
 * as earlier versions published), or one version 1 EventRecord of an even earlier version.
 */
export function decodeEvents(data: Uint8Array): EventRecord[] {
  const buf = asBuffer(data);
  if (buf[0] === EVENT_BATCH_MARK) return (eventBatchV2Type.fromBuffer(buf.subarray(1)) as any[]).map(fromWireEvent);
  if (buf[0] === BATCH_MARK) return (eventBatchType.fromBuffer(buf.subarray(1)) as any[]).map(fromWireEvent);
  return [fromWireEvent(eventRecordType.fromBuffer(buf))];
}
