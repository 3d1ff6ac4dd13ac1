// Which peers may speak for a client through X-Forwarded-* headers. A header any client can send
// is trusted only from the configured proxies (HEADWATER_TRUSTED_PROXIES); from anyone else the
// peer's own address and the request's own Host count. Used for the client address (auth failure
// limits) and for the public origin the Segment settings document points browsers at.
import ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** An address parsed for matching: IPv4-mapped IPv6 (how dual-stack sockets report IPv4 peers) as IPv4. */
function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  try { return ipaddr.process(text.trim()); } catch { return undefined; }
}

// A Host / X-Forwarded-Host value: a DNS name or IPv4, or a bracketed IPv6, with an optional port.
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

export const isHost = (v: string): boolean => v.length <= 260 && HOST.test(v);

export interface Origin { host: string; protocol: 'http' | 'https' }

export class TrustedProxies {
  private readonly ranges: Range[];

  /** `list`: addresses and CIDR ranges, comma-separated (`10.0.0.0/8, ::1`); a bad entry throws. */
  constructor(list: string | undefined) {
    this.ranges = [];
    for (const entry of (list ?? '').split(',').map((x) => x.trim()).filter(Boolean)) {
      let range: Range;
      try {
        if (entry.includes('/')) {
          const [addr, bits] = ipaddr.parseCIDR(entry);
          // An IPv4-mapped range (::ffff:10.0.0.0/104) matches the IPv4 peers it stands for.
          range = addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96
            ? [(addr as ipaddr.IPv6).toIPv4Address(), bits - 96] : [addr, bits];
        } else {
          const addr = ipaddr.process(entry);
          range = [addr, addr.kind() === 'ipv4' ? 32 : 128];
        }
      } catch {
        throw new Error(`"${entry}" is not an IP address or CIDR range`);
      }
      this.ranges.push(range);
    }
  }

  get size(): number { return this.ranges.length; }

  trusts(address: string): boolean {
    const a = parseAddress(address);
    return !!a && this.ranges.some(([r, bits]) => r.kind() === a.kind() && a.match(r, bits));
  }

  /** The client's address: the peer's, or, when the peer is a trusted proxy, the nearest
   * X-Forwarded-For hop that is not one (each proxy appends the address it saw). */
  client(peer: string, forwardedFor: string): string {
    if (!forwardedFor || !this.trusts(peer)) return peer;
    const hops = forwardedFor.split(',').map((x) => x.trim()).filter(Boolean);
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!;
      if (!parseAddress(hop)) return peer; // garbage in the chain: fall back to what we saw
      if (!this.trusts(hop) || i === 0) return hop;
    }
    return peer;
  }

  /** Where clients reach this service: the forwarded host and scheme of a trusted proxy, else
   * the configured public URL, else the request's own Host header (or `fallback`). */
  origin(peer: string, h: { host?: string; forwardedHost?: string; forwardedProto?: string }, publicUrl: URL | undefined, fallback: string): Origin {
    if (this.trusts(peer)) {
      // A chain of proxies lists the client-facing host first.
      const fwdHost = h.forwardedHost?.split(',')[0]!.trim();
      if (fwdHost && isHost(fwdHost)) {
        const proto = h.forwardedProto?.split(',')[0]!.trim().toLowerCase();
        return { host: fwdHost, protocol: proto === 'https' ? 'https' : 'http' };
      }
    }
    if (publicUrl) return { host: publicUrl.host, protocol: publicUrl.protocol === 'https:' ? 'https' : 'http' };
    return { host: h.host && isHost(h.host) ? h.host : fallback, protocol: 'http' };
  }
}
