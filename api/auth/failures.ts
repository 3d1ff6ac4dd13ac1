// Failed authentications per client address: a token bucket each (`limit` failures, refilled over a
// minute). An address that used its bucket is answered 429 before its next unknown key costs a
// database query. IPv6 clients count per /64 (one host usually holds the whole prefix). The table
// is bounded (least recently failing addresses go first) and belongs to the Auth that owns it.
import { LRUCache } from 'lru-cache';
import ipaddr from 'ipaddr.js';

interface Bucket { tokens: number; at: number }

const MAX_ADDRESSES = 50_000;
const WINDOW_MS = 60_000;

/** The unit failures are counted in: the IPv4 address, or the /64 of an IPv6 one. */
export function addressKey(address: string): string {
  try {
    const a = ipaddr.process(address);
    if (a.kind() === 'ipv4') return a.toString();
    const parts = (a as ipaddr.IPv6).parts;
    return `${parts.slice(0, 4).map((p) => p.toString(16)).join(':')}::/64`;
  } catch {
    return address;
  }
}

export class AuthFailures {
  private readonly buckets = new LRUCache<string, Bucket>({ max: MAX_ADDRESSES });

  /** `limit`: failures an address may have per minute; 0 turns the limit off. */
  constructor(private readonly limit: number) {}

  private refill(key: string, now: number): Bucket | undefined {
    const b = this.buckets.get(key);
    if (!b) return undefined;
    b.tokens = Math.min(this.limit, b.tokens + ((now - b.at) * this.limit) / WINDOW_MS);
    b.at = now;
    return b;
  }

  /** Seconds until `address` may try again, or 0 when it may now. */
  retryAfter(address: string): number {
    if (this.limit === 0 || !address) return 0;
    const b = this.refill(addressKey(address), Date.now());
    if (!b || b.tokens >= 1) return 0;
    return Math.max(1, Math.ceil(((1 - b.tokens) * WINDOW_MS) / this.limit / 1000));
  }

  record(address: string): void {
    if (this.limit === 0 || !address) return;
    const key = addressKey(address);
    const now = Date.now();
    const b = this.refill(key, now) ?? { tokens: this.limit, at: now };
    b.tokens = Math.max(0, b.tokens - 1);
    this.buckets.set(key, b);
  }

  close(): void { this.buckets.clear(); }
}
