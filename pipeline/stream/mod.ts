// Public entry of the ingestion streams: JetStream when NATS is configured, in-process otherwise,
// behind the same two interfaces.
export { createInProcessStreams } from './inprocess.js';
export type { InProcessOptions } from './inprocess.js';
export { createJetStreams } from './jetstream.js';
export type { JetStreamOptions } from './jetstream.js';
export { StreamUnavailableError } from './errors.js';
export { HAND_BACK_MS } from './types.js';
export { deleteStreams, streamNames } from './setup.js';
export type { StreamNames } from './setup.js';
export type { SubmitOptions, StreamLag, IngestStream, EventStream, IngestHandler, IngestResults, IngestBatchInfo, EventHandler, ConsumeOptions, Consumer } from './types.js';
