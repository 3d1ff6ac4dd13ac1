// Shapes that cross the ingestion pipeline: front end -> stream -> workers -> stores. They live in
// schemas/ because the stream's Avro encoding (avro.ts) is defined over them.

export type CallKind = 'identify' | 'track';
export type Environment = 'development' | 'production';
export type IdentifierKind = 'anonymousId' | 'userId' | 'idpId' | 'email';

export interface Identifiers { anonymousId?: string; userId?: string; idpId?: string; email?: string }

/** The validated `data` of an identify call (sourceId already resolved into the envelope). */
export interface IdentifyBody {
  identifiers: Identifiers; traits?: Record<string, unknown>; timestamp?: string; messageId?: string;
  /** Trait names to remove (journeys' `traits.unset`; no public route accepts it). */
  unset?: string[];
}
/** The validated `data` of a track call. */
export interface TrackBody {
  identifiers: Identifiers; event: string; properties?: Record<string, unknown>; timestamp?: string; messageId: string;
  /** Where the call came from (library, page, userAgent, ip, ...): kept with the event, outside the tracking plan. */
  context?: Record<string, unknown>;
}

/** One ingestion call as it travels on the stream (Avro-encoded there). */
export interface IngestCall {
  /** Correlation id, unique per call. */
  id: string;
  kind: CallKind;
  orgId: string;
  appId: string;
  sourceId: string;
  environment: Environment;
  /** Epoch milliseconds at the front end. */
  receivedAt: number;
  body: IdentifyBody | TrackBody;
  /**
   * Set when the call replays a held (quarantined) value after a promote: governance treats the
   * promoted name as allowed and does not hold it again.
   */
  promoted?: boolean;
}

/** What the HTTP answer of a call will be: the status it would have alone and its data or error. */
export type CallResult =
  | { status: number; data: unknown }
  | { status: number; error: { code: string; message: string } };

/** An event row as it lands in ClickHouse (and the Event resource returned by track). */
export interface EventRecord {
  id: string;
  orgId: string;
  appId: string;
  sourceId: string;
  profileId: string;
  environment: Environment;
  event: string;
  properties: Record<string, unknown>;
  timestamp: string;
  receivedAt: string;
  messageId: string | null;
  /** The call's `context`, when it had one (Segment-compatible calls). */
  context?: Record<string, unknown>;
}

/** The outcome of processing one batch of calls in a worker. */
export interface BatchOutcome {
  /** One per call, in order; none for the calls in `later`. */
  results: CallResult[];
  /**
   * Calls not processed, by index: their org's segments are changing (pipeline/busy-orgs.ts). The
   * stream offers them again shortly.
   */
  later?: number[];
  /** Events to land in ClickHouse (new ones and re-emitted originals of replays; ids make it idempotent). */
  events: EventRecord[];
  /** Ids of the system events among them, stored in the outbox: cleared once they are published. */
  outbox: string[];
}

/** A failure, as a value: an Error thrown across the thread boundary loses its SQLSTATE `code`. */
export interface TaskFailure { failed: { message: string; code?: string } }
