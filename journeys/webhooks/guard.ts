// The SSRF guard of outbound webhooks. A target host is resolved once, EVERY address is checked
// (IPv4-mapped IPv6 judged as the IPv4 it carries), and the request then connects to a checked
// address through http.request's `lookup` option, so a DNS answer that changes between the check
// and the connection (rebinding) cannot reach a refused address. Only global unicast passes:
// loopback, private, link-local (cloud metadata 169.254.169.254), unique-local (fd00:ec2::254),
// carrier-grade NAT, multicast, unspecified, broadcast, reserved and the IPv6 ranges that embed an
// IPv4 address are all refused. IPv4-mapped (::ffff:0:0/96) is judged as the IPv4 it carries (the
// socket reaches exactly that address). Every other embedding is refused whatever it embeds, not
// decoded and judged: IPv4-compatible ::/96 (deprecated since RFC 4291, ipaddr.js calls it
// unicast), 6to4 2002::/16, Teredo 2001::/32 (its IPv4 is obfuscated), NAT64 64:ff9b::/96 and
// 64:ff9b:1::/48, SIIT ::ffff:0:0:0/96. No real receiver needs them, while a relay or translator
// in the path would carry the request to the embedded (possibly private) IPv4. Network-specific
// NAT64 prefixes (RFC 6052 §2.2) cannot be told from global unicast; operators running one refuse
// it at the network.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export interface Address { address: string; family: 4 | 6 }

export type Target =
  | { ok: true; addresses: Address[] }
  /** The guard refused the target: never a request, a failed delivery with this reason. */
  | { ok: false; refused: true; reason: string }
  /** Resolution failed (e.g. NXDOMAIN): a failed attempt that may succeed later. */
  | { ok: false; refused: false; reason: string };

// ::/96 (RFC 4291 §2.5.5.1, deprecated): ::7f00:1 is 127.0.0.1 to some stacks and relays.
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96') as [ipaddr.IPv6, number];

/** IPv6 text in its canonical form: ipaddr.js reads a dotted tail such as `::8.8.8.8` as
 * IPv4-mapped, while the socket would reach the IPv4-compatible ::808:808. */
const canonical = (address: string) => (isIP(address) === 6 ? new URL(`http://[${address}]/`).hostname.slice(1, -1) : address);

/** Why an address may not be reached, or undefined when it is global unicast. */
export function addressRefusal(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try { parsed = ipaddr.process(canonical(address)); } catch { return `${address} is not an IP address`; }
  let range: string = parsed.range();
  // ipaddr.js has no name for ::/96 and calls it unicast (:: and ::1 keep their own names).
  if (range === 'unicast' && parsed.kind() === 'ipv6' && parsed.match(IPV4_COMPATIBLE)) range = 'ipv4Compatible';
  if (range === 'unicast') return undefined;
  const shown = parsed.toString() === address ? address : `${address} (${parsed.toString()})`;
  return `${shown} is a ${range} address`;
}

/** The host of a URL without IPv6 brackets. */
export const bareHost = (hostname: string) => (hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname);

/** Resolves `host` and checks every address (unless private targets are allowed). */
export async function resolveTarget(host: string, allowPrivate: boolean): Promise<Target> {
  const family = isIP(host);
  let addresses: Address[];
  if (family !== 0) addresses = [{ address: host, family: family as 4 | 6 }];
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family as 4 | 6 }));
    } catch (err) {
      const e = err as { code?: string; message?: string };
      return { ok: false, refused: false, reason: `cannot resolve ${host}: ${e.code ?? e.message ?? String(err)}` };
    }
    if (addresses.length === 0) return { ok: false, refused: false, reason: `cannot resolve ${host}: no address` };
  }
  if (!allowPrivate) {
    for (const a of addresses) {
      const why = addressRefusal(a.address);
      if (why !== undefined) {
        return { ok: false, refused: true, reason: `refused by the private-network guard: ${family === 0 ? `${host} resolves to ` : ''}${why} (HEADWATER_WEBHOOK_ALLOW_PRIVATE=true allows it)` };
      }
    }
  }
  return { ok: true, addresses };
}
