// Segment-compatible ingestion: the entry of this folder.
export { segmentRoutes, CALL_LIMIT, BATCH_LIMIT, type SegmentDeps } from './routes.js';
export { WriteKeys, createWriteKey, listWriteKeys, deleteWriteKey, writeKeyOut, WRITE_KEY_PREFIX, type WriteKeyInfo } from './keys.js';
export { mapCall, correctedTimestamp, PAGE_EVENT, SCREEN_EVENT, GROUP_EVENT } from './map.js';
export { corsPolicy } from './answers.js';
