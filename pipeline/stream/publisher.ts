// Durable publishing without a promise per message: each message goes out with core
// `nc.publish(subject, data, { reply })` and JetStream's PubAck comes back on one per-process
// wildcard subscription, where it is counted against its publish() call. `js.publish` awaited
// message by message is client-bound (~23k msg/s here); this reaches the server's limit.
import { createHash } from 'node:crypto';
import { createInbox, headers, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Logger } from '../../lib/log.js';
import { StreamUnavailableError } from './errors.js';

export interface OutMessage { subject: string; data: Uint8Array; /** Nats-Msg-Id: JetStream drops a repeat within its window. */ msgId?: string }

/**
 * Nats-Msg-Id of a message holding the records list[first, first + count) (events or calls): a
 * digest of every record id in it. JetStream drops, within its duplicate window, any later message
 * with an id it has seen, whatever that message holds. Records are immutable once their id is
 * minted (a replayed track re-emits its stored event), so equal ids mean an equal message. An id
 * made of fewer of them (say the first id and the count) would drop a message whose first event
 * is a replay and whose other events are new.
 */
export function messageIdOf(list: ReadonlyArray<{ id: string }>, first: number, count: number): string {
  const h = createHash('sha256');
  for (let i = first; i < first + count; i++) h.update(list[i]!.id).update('\n');
  return h.digest('base64url').slice(0, 32);
}

interface Pending { left: number; first: number; count: number; resolve(): void; reject(e: Error): void; timer: NodeJS.Timeout }

export class AckedPublisher {
  private readonly prefix: string;
  private readonly sub: Subscription;
  private seq = 0;
  /** Message token -> its publish() call. */
  private readonly byToken = new Map<number, Pending>();
  private readonly decoder = new TextDecoder();
  /** Publishes waiting for the next event-loop turn. */
  private queued: Array<[Pending, OutMessage[]]> = [];
  private scheduled = false;

  /** `onDuplicate` runs for each message the stream acknowledged as a repeat (stored before, not again). */
  constructor(private readonly nc: NatsConnection, private readonly log: Logger, private readonly timeoutMs: number,
    private readonly onDuplicate?: () => void) {
    this.prefix = `${createInbox()}.`;
    this.sub = nc.subscribe(`${this.prefix}*`, { callback: (err, msg) => {
      if (err) { log.warn('puback subscription failed', { err }); return; }
      this.onAck(Number(msg.subject.slice(this.prefix.length)), msg.data);
    } });
    // A closed connection will never acknowledge: fail the waiting calls now, not at their timeout.
    void nc.closed().then(() => this.failAll(new StreamUnavailableError('the NATS connection is closed')));
  }

  /** Resolves once every message is stored; rejects with StreamUnavailableError otherwise. */
  publish(msgs: OutMessage[]): Promise<void> {
    if (msgs.length === 0) return Promise.resolve();
    if (this.nc.isClosed()) return Promise.reject(new StreamUnavailableError('the NATS connection is closed'));
    return new Promise<void>((resolve, reject) => {
      const first = this.seq + 1;
      this.seq += msgs.length;
      const p: Pending = { left: msgs.length, first, count: msgs.length, resolve, reject, timer: undefined as unknown as NodeJS.Timeout };
      p.timer = setTimeout(() => this.fail(p, new StreamUnavailableError(`the stream did not acknowledge ${p.left} of ${p.count} messages in ${this.timeoutMs} ms`)), this.timeoutMs);
      for (let i = 0; i < msgs.length; i++) this.byToken.set(first + i, p);
      // Sent on the next turn of the event loop with everything else published in this one: the
      // client writes to its socket once per burst, and each HTTP request is its own callback
      // (a socket write per request cost 15 % of the front end's CPU).
      this.queued.push([p, msgs]);
      if (!this.scheduled) { this.scheduled = true; setImmediate(this.send); }
    });
  }

  private readonly send = () => {
    this.scheduled = false;
    const batch = this.queued;
    this.queued = [];
    for (const [p, msgs] of batch) {
      if (p.left <= 0) continue; // failed or timed out meanwhile
      try {
        let token = p.first;
        for (const m of msgs) {
          let h;
          if (m.msgId !== undefined) { h = headers(); h.set('Nats-Msg-Id', m.msgId); }
          this.nc.publish(m.subject, m.data, { reply: this.prefix + token++, headers: h });
        }
      } catch (err) {
        // The connection closed (or is draining) under us.
        this.fail(p, new StreamUnavailableError(`publishing failed: ${(err as Error).message}`));
      }
    }
  };

  /** Lets the waiting publishes get their acknowledgements (up to the ack timeout, if connected), then stops. */
  async close(connected = true): Promise<void> {
    const deadline = Date.now() + this.timeoutMs;
    while (connected && this.byToken.size > 0 && Date.now() < deadline && !this.nc.isClosed()) await new Promise((r) => setTimeout(r, 20));
    this.failAll(new StreamUnavailableError('the publisher is closed'));
    if (!this.nc.isClosed()) this.sub.unsubscribe();
  }

  private onAck(token: number, data: Uint8Array) {
    const p = this.byToken.get(token);
    if (!p) return; // its call already failed or timed out
    this.byToken.delete(token);
    // A stored message gets {"stream":..,"seq":..} (maybe "duplicate":true); anything else (an
    // {"error":..} PubAck, a 503 no-responders status with an empty body) means not stored.
    let ok = false;
    let reason = 'no responders (is the stream missing?)';
    if (data.length > 0) {
      try {
        const a = JSON.parse(this.decoder.decode(data)) as { seq?: number; duplicate?: boolean; error?: { description?: string } };
        ok = typeof a.seq === 'number' && !a.error;
        if (ok && a.duplicate) this.onDuplicate?.();
        if (!ok) reason = a.error?.description ?? 'unexpected puback';
      } catch { reason = 'unreadable puback'; }
    }
    if (!ok) { this.fail(p, new StreamUnavailableError(`the stream refused a message: ${reason}`)); return; }
    if (--p.left === 0) { clearTimeout(p.timer); p.resolve(); }
  }

  private fail(p: Pending, err: Error) {
    if (p.left <= 0) return;
    p.left = -1;
    clearTimeout(p.timer);
    for (let t = p.first; t < p.first + p.count; t++) this.byToken.delete(t);
    this.log.debug('publish not acknowledged', { err: err.message });
    p.reject(err);
  }

  private failAll(err: Error) {
    for (const p of new Set(this.byToken.values())) this.fail(p, err);
  }
}
