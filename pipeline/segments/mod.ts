// Segments: definitions, membership decisions, synchronous recompute on writes, backfills, the
// window sweep and previews.
export type { Compiled, Definition, EventPredicate, Predicate, ProfileFacts, SegmentDef, TraitPredicate } from './types.js';
export { applies, compile, instant, jsonEqual, normalizeDefinition, traitMatches } from './predicates.js';
export { SegmentCache, segmentLockKey, segmentOf, versionArgs } from './cache.js';
export { holdSegments, planRead, recompute, refreshSegments, touchesSegments, CASCADE_ROUNDS, type Touch } from './recompute.js';
export { ENTERED, EXITED, fillHistory, keepsHistory, watchedNames } from './history.js';
export { backfill, preview, startSweeper, sweepOnce, LEASE, type JobDeps, type Preview, type Sweeper } from './jobs.js';
export { clearOutbox, startOutboxRelay, type OutboxRelay } from './outbox.js';
