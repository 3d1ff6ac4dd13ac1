// The seam between the HTTP core (routing, auth, bodies, envelopes: server.ts) and the library
// that speaks HTTP/1.1: uWebSockets.js where a build loads (uws.ts), node:http elsewhere
// (node.ts). Both implementations keep the same behaviour; the core never sees which one runs.

export type FrontEndName = 'uws' | 'node:http';

/** How the front end is chosen: `auto` (uWS where a build loads, else node:http), `uws` (refuse to
 * start without it), `node` (node:http, uWS not tried). */
export type FrontEndMode = 'auto' | 'uws' | 'node';
export const FRONT_END_MODES: readonly FrontEndMode[] = ['auto', 'uws', 'node'];

/** One request and its answer. */
export interface Exchange {
  /** Upper-case method. */
  readonly method: string;
  /** The path, undecoded, without the query string. */
  readonly path: string;
  /** The query string without `?` ('' when none). */
  readonly query: string;
  /** A request header by lower-case name, '' when absent. Only during the synchronous handler call
   * (uWS frees the request once it returns): read what is needed up front. */
  header(name: string): string;
  /** Every request header, lower-case names. Same constraint as header(). */
  headers(): Record<string, string>;
  /** The peer's address as text. Same constraint as header(). */
  remoteAddress(): string;
  /** Sets the one handler run when the client goes away before the answer is written. Set it
   * during the synchronous handler call. */
  onAborted(cb: () => void): void;
  /** Streams the request body: each chunk is the caller's to keep; `last` marks the end (a
   * bodiless request gets one empty last chunk). Set it during the synchronous handler call. */
  onData(cb: (chunk: Buffer, last: boolean) => void): void;
  /** Throttle / unthrottle body streaming (a consumer slower than the network). */
  pause(): void;
  resume(): void;
  /** Writes the whole answer, once, unless the exchange was aborted. */
  respond(a: Answer): void;
  /** Writes the head, then each chunk as the client takes it (the next is pulled only once the
   * previous one was accepted by the socket), then the end. Stops pulling when the client goes away.
   * A failing source closes the connection (the status is already sent). */
  stream(a: Omit<Answer, 'body' | 'headLength' | 'close'>, chunks: AsyncIterable<string | Uint8Array>): Promise<void>;
}

export interface Answer {
  status: number;
  requestId: string;
  headers?: Record<string, string>;
  contentType?: string;
  /** Absent: no body, and `content-length: headLength` (HEAD answers). */
  body?: string | Uint8Array;
  headLength?: number;
  /** Close the connection after answering: the rest of the request body is not read. */
  close?: boolean;
}

export interface FrontEnd {
  readonly name: FrontEndName;
  /** Starts serving `handle` for every request; resolves the bound port. */
  listen(host: string, port: number, handle: (ex: Exchange) => void): Promise<number>;
  /** Stops accepting connections; open ones are still served. */
  stopListening(): void;
  /** Closes every connection left. */
  close(): void;
}
