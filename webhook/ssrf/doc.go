// Package ssrf keeps outbound webhook requests away from the sender's own
// network: loopback, private, link-local (cloud metadata at
// 169.254.169.254), CGNAT, unique-local, multicast, unspecified,
// broadcast, reserved, benchmarking and documentation ranges, and IPv4
// addresses hidden in IPv6 (mapped and NAT64 are judged by the IPv4 they
// carry; compatible, 6to4, Teredo and local NAT64 are refused).
//
// The check runs at dial time, in the socket's Control hook, on the very
// address about to be connected to. Checking a name's addresses before the
// request loses to DNS rebinding (the name answers a public address to
// the check and a private one to the dial); checking in Control cannot.
// Numeric host spellings that some resolvers read as IPv4 ("2130706433",
// "0177.0.0.1", "127.1") are read the same way here, so they meet the same
// check.
//
// Use Dialer.DialContext as an http.Transport's DialContext, and keep the
// transport's Proxy nil: through a proxy, the proxy dials and this check
// sees only the proxy's address. Dialer.Allow is an explicit allow-list
// (loopback for local development and tests); whoever sets it should say
// so loudly in the logs, as the HTTP channel does.
package ssrf
