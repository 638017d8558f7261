package platform

import (
	"slices"
	"strings"
)

// Bounds on an endpoint's custom headers: how many, the bytes of one
// (name and value), and of all.
const (
	MaxHeaders      = 20
	MaxHeaderBytes  = 1024
	MaxHeadersBytes = 4096
)

// reservedHeaders are header names an endpoint may not set, in lower
// case: those the sender sets itself (the body's type and length, its
// user agent), those the transport owns (hop-by-hop and framing), and
// Host, which would send the request to one server under another's name.
// Every name starting with a reservedPrefixes entry is reserved too: the
// signature scheme's (webhook-), courier's own (courier-), the browser's
// (sec-) and the proxies' (proxy-). Authorization is not reserved: a
// receiver behind a gateway that wants a bearer token is the usual
// reason for a custom header.
var (
	reservedHeaders = []string{"connection", "content-encoding", "content-length", "content-type", "expect", "host",
		"keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "user-agent"}
	reservedPrefixes = []string{"courier-", "proxy-", "sec-", "webhook-"}
)

// ReservedHeader reports whether an endpoint may not set the header
// name (in any case).
func ReservedHeader(name string) bool {
	l := strings.ToLower(name)
	return slices.Contains(reservedHeaders, l) || slices.ContainsFunc(reservedPrefixes, func(p string) bool { return strings.HasPrefix(l, p) })
}

// CheckHeaders checks an endpoint's custom headers: at most MaxHeaders,
// each an HTTP token for a name (not a ReservedHeader, not repeated in
// another case) and printable ASCII, space or tab for a value, at most
// MaxHeaderBytes each and MaxHeadersBytes in all (names and values).
// The error names the header ("headers.X-Name"); headers are checked in
// name order, so the same input always names the same one.
func CheckHeaders(h map[string]string) error {
	if len(h) > MaxHeaders {
		return fieldErr("headers", "has %d headers; at most %d", len(h), MaxHeaders)
	}
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	total := 0
	for i, name := range names {
		field, value := "headers."+clip(name), h[name]
		switch {
		case !isToken(name):
			return fieldErr(field, "is not an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)")
		case ReservedHeader(name):
			return fieldErr(field, "is reserved: courier sets it, or the transport does (see the list of reserved headers)")
		case slices.ContainsFunc(names[:i], func(n string) bool { return strings.EqualFold(n, name) }):
			return fieldErr(field, "repeats another header's name in another case")
		case strings.ContainsFunc(value, func(r rune) bool { return (r < ' ' && r != '\t') || r > '~' }):
			return fieldErr(field, "value holds a character that is not printable ASCII, space or tab")
		case len(name)+len(value) > MaxHeaderBytes:
			return fieldErr(field, "is %d bytes with its value; at most %d", len(name)+len(value), MaxHeaderBytes)
		}
		total += len(name) + len(value)
	}
	if total > MaxHeadersBytes {
		return fieldErr("headers", "are %d bytes in all; at most %d", total, MaxHeadersBytes)
	}
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}
