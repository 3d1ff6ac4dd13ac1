// Privacy and data lifecycle (docs/privacy.md): erasure jobs, the suppression list checked on every
// write, the NDJSON export of a profile, and the retention sweep.
export { startEraser, type Eraser, type EraserOptions } from './eraser.js';
export { erasureOut, getErasure, listErasures, requestErasure, type ErasureRow, type RequestResult } from './erasures.js';
export { Suppressions } from './suppression.js';
export { hashIdentifier } from './hash.js';
export { exportProfile, exportTarget, type ExportDeps } from './export.js';
export { RETENTION_DEFAULTS, RETENTION_KINDS, retentionOf, startRetentionSweep, sweepOrg, type Retention, type RetentionKind, type RetentionOptions } from './retention.js';
