// The pipeline's record shapes, defined in schemas/records.ts (the stream's Avro encoding needs them).
export type { CallKind, Environment, IdentifierKind, Identifiers, IdentifyBody, TrackBody, IngestCall, CallResult, EventRecord, BatchOutcome, TaskFailure } from '../schemas/records.js';
