// Public entry of ingestion governance (OpenAPI description, "Ingestion"): type inference, canonical trait formats,
// deny-list and strict-policy decisions, catalog snapshots, observation and the quarantine queue.
export type {
  TypeName, GovernanceState, IngestionPolicy, CatalogKind, CatalogEventEntry, CatalogTraitEntry, CatalogSnapshot, Queryable,
} from './types.js';
export { inferType } from './infer.js';
export { validateCanonicalTraits } from './canonical.js';
export { checkTrack, checkIdentify } from './check.js';
export type { TrackDecision, IdentifyDecision } from './check.js';
export { loadSnapshot, SnapshotCache, type OrgRow } from './snapshot.js';
export { collectObservations, diffObservations, emptyObservations, observe } from './observe.js';
export type { Observations, Observed, CatalogDiff } from './observe.js';
export { holdCalls, requeue, promote, deny } from './quarantine.js';
export { replayWaves } from './waves.js';
export type { HoldItem } from './quarantine.js';
export { bumpCatalogVersion, catalogLockKeySql, lockCatalogExclusive } from './store.js';
