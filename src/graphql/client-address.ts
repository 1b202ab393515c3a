/**
 * Who sent a request: the socket's peer, or, when that peer is one of TRUSTED_PROXIES, the
 * client named in X-Forwarded-For. The header is read from the right (each proxy appends the
 * address it got the request from) and the first address that is not itself a trusted proxy
 * is the client: everything left of it was written by the client and may be forged. From
 * anyone else the header is ignored, so a client cannot pick its own rate-limit key.
 *
 * proxy-addr (Express's own) does the walking and the address and range matching, IPv4-mapped
 * IPv6 addresses included.
 */
import type { IncomingMessage } from 'node:http';
import ipaddr from 'ipaddr.js';
import proxyaddr from 'proxy-addr';

/** The client's address of a request, IPv4-mapped IPv6 addresses (::ffff:1.2.3.4) as plain IPv4. */
export type ClientAddressOf = (req: IncomingMessage) => string;

export function clientAddressOf(trustedProxies: readonly string[]): ClientAddressOf {
  if (trustedProxies.length === 0) return (req) => canonicalAddress(req.socket.remoteAddress ?? 'unknown');
  const trust = proxyaddr.compile([...trustedProxies]);
  // proxy-addr's types ask for an Express request; it reads only the socket and the header.
  return (req) => canonicalAddress(proxyaddr(req, trust));
}

/** The canonical text of an address (IPv4-mapped IPv6 as IPv4); anything that does not parse, as given. */
export function canonicalAddress(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    return (parsed as ipaddr.IPv6).toIPv4Address().toString();
  return parsed.toString();
}

/**
 * IPv6 hosts get a /64 each (RFC 4291's interface identifier): one client can take any of its
 * 2^64 addresses, so a per-address limit keyed on the full IPv6 address would limit nothing.
 */
const IPV6_CLIENT_PREFIX_BITS = 64;

/** The key per-address rate limits count under: an IPv4 address, or an IPv6 address's /64. */
export function addressLimitKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  const parts = v6.parts.map((part, i) => (i < IPV6_CLIENT_PREFIX_BITS / 16 ? part : 0));
  return `${new ipaddr.IPv6(parts).toString()}/${IPV6_CLIENT_PREFIX_BITS}`;
}
