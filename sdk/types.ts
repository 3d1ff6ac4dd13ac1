// Types of the journey SDK: the records a journey reads (Profile, Event), the options of
// `journey()` and `template()` (the fields of a manifest's journey and template entries), and the
// `ctx` a journey handler receives. Pure types: nothing here exists at run time.

/** '500ms', '2s', '5m', '1h', '3d', or an integer of milliseconds. */
export type Duration = number | `${number}ms` | `${number}s` | `${number}m` | `${number}h` | `${number}d`;

export type Environment = 'development' | 'production';

export interface Identifier {
  kind: 'anonymousId' | 'userId' | 'idpId' | 'email';
  value: string;
  createdAt: string;
}

/** A customer profile as stored (what `ctx.profile.get()` answers). */
export interface Profile {
  id: string;
  orgId: string;
  environment: Environment;
  appId: string;
  sourceId: string;
  traits: Record<string, unknown>;
  /** Purpose name to consent; a journey runs only for profiles that consented to its purpose. */
  consent: Record<string, boolean>;
  mergedInto: string | null;
  createdAt: string;
  updatedAt: string;
  identifiers: Identifier[];
  anonymous: boolean;
}

/** A behavioural event (the trigger `ctx.event`, and what `ctx.waitForEvent` answers). */
export interface Event {
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
}

/** What starts a run: each such event of a profile, or a segment transition of the profile. */
export type Trigger =
  | { event: string }
  | { segment: string; on: 'entered' | 'exited' };

export interface JourneyOptions {
  /** Unique per org among journeys; 1 to 64 characters. */
  key: string;
  trigger: Trigger;
  /** The consent purpose (a key of headwater.json's `purposes`); up to 50 characters. */
  purpose: string;
  /** Up to 20 tags. */
  tags?: string[];
  /**
   * `cooldown` bounds how soon the same profile may enter again; `throttle` allows at most `limit`
   * new executions per `per` for the journey (triggers over it are skipped and counted);
   * `debounce` starts only once the trigger event has been quiet that long for the profile (the
   * latest trigger becomes `ctx.event`).
   */
  enrollment?: { cooldown?: Duration; throttle?: { limit: number; per: Duration }; debounce?: Duration };
  /** Events (1 to 20 names) that end the profile's running or waiting execution: `cancelled`, `exitReason: "event:<name>"`. */
  exitOn?: string | string[];
  /**
   * The conversion: an execution is `converted` when the profile's `event` is written within
   * `within` of its start; with `exit: true` a running or waiting one then ends (`completed`,
   * `exitReason: "goal"`).
   */
  goal?: { event: string; within: Duration; exit?: boolean };
  /** Percent of entrants (0 to 50) held out: they complete at once without running the handler; their conversions still count. */
  holdout?: number;
  /** Up to 500 characters. */
  description?: string;
  /** Sender identity for the journey's e-mails; up to 200 characters. */
  from?: string;
}

export interface TemplateOptions {
  /** Unique per org among templates; 1 to 64 characters; the name `ctx.email.send` uses. */
  key: string;
  sendClass: 'marketing' | 'transactional';
  verifyLink: boolean;
  unsubscribeLink?: boolean;
  /** JSON Schema the props of `ctx.email.send` are validated against. */
  propsSchema?: Record<string, unknown>;
  /** Up to 20 tags. */
  tags?: string[];
}

export interface RenderedEmail {
  subject: string;
  html: string;
  text?: string;
}

export interface WaitOptions {
  /** How long to wait before answering null. */
  timeout: Duration;
}

export interface JourneyLog {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/**
 * What a journey handler works with. Every call is recorded in the execution's journal and replayed
 * from it when the run resumes, so the handler must make the same calls in the same order each time
 * (no `Date.now()` or `Math.random()` deciding which calls happen).
 */
export interface JourneyContext {
  /** The event that started this run. */
  readonly event: Event;
  profile: { get(): Promise<Profile> };
  profiles: { get(id: string): Promise<Profile | null> };
  sleep(duration: Duration): Promise<void>;
  /** Waits for one of the named events written after the wait began; null on timeout. */
  waitForEvent(name: string | string[], options: WaitOptions): Promise<Event | null>;
  traits: {
    set(key: string, value: unknown): Promise<void>;
    unset(key: string): Promise<void>;
  };
  events: { track(event: string, properties?: Record<string, unknown>): Promise<void> };
  /** Renders the template of that key with `props` and sends it to the profile. */
  email: { send(template: string, props?: Record<string, unknown>): Promise<void> };
  /** Delivers `payload` to the webhook registered under `destination` (a name, never a URL). */
  webhook: { send(destination: string, payload?: Record<string, unknown>): Promise<void> };
  /** Ends this run and starts over as a fresh one, with `event` as its trigger when given. */
  restart(event?: Partial<Event> | Record<string, unknown>): Promise<never>;
  /**
   * One of the keys of `weights`, chosen with those weights by a stable hash of (journey key,
   * `name`, profile id): the same profile always gets the same key. Recorded on the execution as
   * `variants[name]`.
   */
  split<K extends string>(name: string, weights: Record<K, number>): Promise<K>;
  /** Kept in the execution's logs. */
  log: JourneyLog;
}

export type JourneyHandler = (ctx: JourneyContext) => Promise<void> | void;

export type TemplateRender<P> = (props: P) => RenderedEmail;

/** The value `journey()` returns; a journey file default-exports it. */
export interface JourneyDefinition {
  kind: 'journey';
  key: string;
  options: JourneyOptions;
  handler: JourneyHandler;
}

/** The value `template()` returns; a template file default-exports it. */
export interface TemplateDefinition<P = Record<string, unknown>> {
  kind: 'template';
  key: string;
  options: TemplateOptions;
  render: TemplateRender<P>;
}
