// Segment shapes inside the pipeline (the HTTP shapes come from schemas/).

export type TraitOp = 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte' | 'exists' | 'notExists' | 'contains';
export interface TraitPredicate { kind: 'trait'; name: string; op: TraitOp; value?: unknown }
export interface EventPredicate { kind: 'event'; name: string; op: 'performed' | 'notPerformed'; atLeast: number; withinDays?: number }
export type Predicate = TraitPredicate | EventPredicate;

/** A stored definition: defaults applied (`match`, `atLeast`), `appId` null when absent. */
export interface Definition { match: 'all' | 'any'; appId: string | string[] | null; predicates: Predicate[] }

export interface SegmentDef {
  id: string;
  orgId: string;
  name: string;
  definition: Definition;
  environments: string[];
  version: number;
}

/** A definition prepared for evaluation. */
export interface Compiled {
  seg: SegmentDef;
  /** null: every app. */
  apps: Set<string> | null;
  envs: Set<string>;
  traits: TraitPredicate[];
  events: EventPredicate[];
  /** Names of the event predicates: a tracked event of one of them can change membership. */
  eventNames: Set<string>;
  /** Has a `withinDays` window: membership can also change with time alone (the sweep). */
  windowed: boolean;
}

/** The profile facts a membership decision needs. */
export interface ProfileFacts {
  id: string;
  orgId: string;
  appId: string;
  sourceId: string;
  environment: string;
  traits: Record<string, unknown>;
}
