package storetest

import (
	"bytes"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// The checks in this file pin what the store does with bytes: names are
// text, refused otherwise before anything is written; an outcome's detail
// is cleaned into text and never fails a Save; a payload is kept byte for
// byte. A backend whose storage cannot hold some byte string (a
// PostgreSQL text column holds no NUL) would otherwise fail such a call
// with ErrUnavailable, which tells the caller to try again, for ever.

// badNames are names no store accepts: each is refused with
// ErrBadArgument.
var badNames = []struct{ name, value string }{
	{"NUL", "a\x00b"},
	{"only-NUL", "\x00"},
	{"invalid-UTF-8", "a\xffb"},
	{"truncated-rune", "a\xc3"},
	{"surrogate", "a\xed\xa0\x80b"}, // U+D800 encoded: not UTF-8
}

// namesAreText: a stream name, an event ID, an owner or an operator that
// is not valid UTF-8 or holds a NUL byte is refused by every method that
// takes it with ErrBadArgument, an error that names the argument, and
// changes nothing: no record, no Seq, no lease. The same holds for a
// lease or an update carrying such a name. Names in any script, which
// are valid UTF-8, are kept and compared exactly.
func namesAreText(e *env) {
	e.enqueue("s", "e1", "p")
	l := e.acquire("s", "w")
	e.update("t", e.enqueue("t", "x1", "p").ID, func(r *machine.Record) { r.State, r.Reason = machine.Dead, machine.Expired })
	before := e.snapshot("e1", "x1")
	for _, b := range badNames {
		v := b.value
		bad := l
		bad.Stream = v
		badOwner := l
		badOwner.Owner = v
		calls := []struct {
			name, field string
			call        func() error
		}{
			{"Enqueue stream", "stream", func() error { _, _, err := e.s.Enqueue(e.ctx, v, "n1", []byte("p")); return err }},
			{"Enqueue id", "id", func() error { _, _, err := e.s.Enqueue(e.ctx, "s", v, []byte("p")); return err }},
			{"Acquire stream", "stream", func() error { _, err := e.s.Acquire(e.ctx, v, "w2", ttl); return err }},
			{"Acquire owner", "owner", func() error { _, err := e.s.Acquire(e.ctx, "u", v, ttl); return err }},
			{"ClaimDue owner", "owner", func() error { _, err := e.s.ClaimDue(e.ctx, v, ttl, 10); return err }},
			{"Renew lease stream", "stream", func() error { _, err := e.s.Renew(e.ctx, bad, ttl); return err }},
			{"Renew lease owner", "owner", func() error { _, err := e.s.Renew(e.ctx, badOwner, ttl); return err }},
			{"Release lease stream", "stream", func() error { return e.s.Release(e.ctx, bad) }},
			{"Release lease owner", "owner", func() error { return e.s.Release(e.ctx, badOwner) }},
			{"Pending lease stream", "stream", func() error { _, err := e.s.Pending(e.ctx, bad, 0, 10); return err }},
			{"Pending lease owner", "owner", func() error { _, err := e.s.Pending(e.ctx, badOwner, 0, 10); return err }},
			{"Save lease stream", "stream", func() error { return e.s.Save(e.ctx, bad, nil) }},
			{"Save lease owner", "owner", func() error { return e.s.Save(e.ctx, badOwner, nil) }},
			{"Save update id", "id", func() error {
				r := before["e1"]
				return e.s.Save(e.ctx, l, []store.Update{up(r, machine.Pending, 1, r.NextAt, 0, nil), {ID: v, Delivery: r.Delivery}})
			}},
			{"Get id", "id", func() error { _, err := e.s.Get(e.ctx, v); return err }},
			{"DeadLetters stream", "stream", func() error { _, err := e.s.DeadLetters(e.ctx, v, 0, 10); return err }},
			{"Replay id", "id", func() error { _, err := e.s.Replay(e.ctx, v, "op"); return err }},
			{"Replay operator", "by", func() error { _, err := e.s.Replay(e.ctx, "x1", v); return err }},
			{"Discard id", "id", func() error { _, err := e.s.Discard(e.ctx, v, "op"); return err }},
			{"Discard operator", "by", func() error { _, err := e.s.Discard(e.ctx, "x1", v); return err }},
		}
		for _, c := range calls {
			what := c.name + " " + b.name
			err := c.call()
			e.wantErr(what, err, store.ErrBadArgument)
			if err != nil && !regexp.MustCompile(`\b`+c.field+`\b`).MatchString(err.Error()) {
				e.t.Errorf("%s: error %q does not name the argument %q", what, err, c.field)
			}
		}
	}
	e.unchanged("calls with names that are not text", before)
	e.leaseValid("the lease after calls with names that are not text", l)
	if got := e.claim("w3", 10); len(got) != 0 {
		e.t.Errorf("ClaimDue after the refused calls = %+v, want nothing (no stream gained due work)", got)
	}
	if got := e.enqueue("s", "e2", "p").Seq; got != 2 {
		e.t.Errorf("Seq of the next event on s = %d, want 2 (refused enqueues take no Seq)", got)
	}
	e.unicodeNames()
}

// unicodeNames: names in any script, emoji and U+FFFD itself are valid
// UTF-8: kept, returned and told apart byte for byte.
func (e *env) unicodeNames() {
	const stream, id, owner, by = "Ströme/日本語", "ïd-🚀-\uFFFD", "wörker-Ω", "opérateur ✓"
	rec := e.enqueue(stream, id, "p")
	if _, err := e.s.Get(e.ctx, "ïd-🚀-?"); err == nil {
		e.t.Errorf("Get of an ID that differs from %q in one rune found a record", id)
	}
	l, err := e.s.Acquire(e.ctx, stream, owner, ttl)
	if err != nil {
		e.t.Fatalf("Acquire(%q, %q): %v", stream, owner, err)
	}
	if l.Stream != stream || l.Owner != owner {
		e.t.Errorf("lease = %+v, want stream %q owner %q", l, stream, owner)
	}
	e.leaseValid("a lease with non-ASCII names", l)
	if got := e.pending(l, 0); len(got) != 1 || got[0].ID != id {
		e.t.Errorf("Pending = %+v, want the one record %q", got, id)
	}
	r := rec
	e.saveUpdates(l, up(r, machine.Pending, 1, r.NextAt, 0, nil))
	e.saveUpdates(l, up(r, machine.Dead, 1, r.NextAt, machine.Rejected, &store.Outcome{Attempt: 1, Status: 400, Detail: "nein"}))
	e.release(l)
	if dead := e.deadLetters(stream); len(dead) != 1 || dead[0].ID != id || dead[0].Stream != stream {
		e.t.Errorf("DeadLetters(%q) = %+v, want the record %q", stream, dead, id)
	}
	got, err := e.s.Replay(e.ctx, id, by)
	if err != nil {
		e.t.Fatalf("Replay(%q, %q): %v", id, by, err)
	}
	if got.ID != id || got.Stream != stream || len(got.History) != 1 || got.History[0].By != by {
		e.t.Errorf("Replay returned %+v, want %q on %q replayed by %q", got, id, stream, by)
	}
	if diff := cmp.Diff(got, e.get(id), diffOpts...); diff != "" {
		e.t.Errorf("Get after Replay differs from what Replay returned (-replay +get):\n%s", diff)
	}
}

// outcomeDetailCleaned: an outcome's detail is free text from a receiver
// or a channel, and it never makes a Save fail. The store keeps it as
// store.CleanDetail makes it: each run of bytes that is not UTF-8 and each
// NUL becomes U+FFFD, and the result is cut to MaxDetailBytes on a rune
// boundary. Every backend gives back exactly that, in Get, DeadLetters
// and the history of an operator action; a terminal record saved again
// with the same raw detail is unchanged.
func outcomeDetailCleaned(e *env) {
	long := strings.Repeat("x", store.MaxDetailBytes+50)
	odd := "x" + strings.Repeat("é", store.MaxDetailBytes) // a cut at MaxDetailBytes splits an é
	cases := []struct{ name, raw, want string }{
		{"plain", "HTTP 503: upstream unavailable", "HTTP 503: upstream unavailable"},
		{"NUL", "a\x00b\x00", "a\uFFFDb\uFFFD"},
		{"invalid-UTF-8", "a\xffb\xfe\xfdc", "a\uFFFDb\uFFFDc"},
		{"truncated-rune", "caf\xc3", "caf\uFFFD"},
		{"valid-non-ASCII", "Dienst nicht verfügbar ✗", "Dienst nicht verfügbar ✗"},
		{"too-long", long, long[:store.MaxDetailBytes]},
		{"too-long-on-a-rune", odd, odd[:store.MaxDetailBytes-1]},
		{"grows-past-the-bound", strings.Repeat("a\xff", store.MaxDetailBytes/2), strings.Repeat("a\uFFFD", store.MaxDetailBytes/4)},
	}
	for i, c := range cases {
		id := "e" + string(rune('a'+i))
		stream := "s-" + c.name
		r := e.enqueue(stream, id, "p")
		l := e.acquire(stream, "w")
		raw := store.Outcome{Attempt: 1, Status: 503, Detail: c.raw}
		want := store.Outcome{Attempt: 1, Status: 503, Detail: c.want}
		e.saveUpdates(l, up(r, machine.Pending, 1, r.NextAt, 0, nil))
		if err := e.s.Save(e.ctx, l, []store.Update{up(r, machine.Retry, 1, r.NextAt, 0, &raw)}); err != nil {
			e.t.Errorf("Save with a %s detail: %v, want it accepted", c.name, err)
			continue
		}
		e.wantLast("after a retry with a "+c.name+" detail", id, want, e.clock.Now())
		e.saveUpdates(l, up(r, machine.Dead, 1, r.NextAt, machine.Rejected, &raw))
		before := e.snapshot(id)
		e.clock.Advance(time.Second)
		e.saveUpdates(l, up(r, machine.Dead, 1, r.NextAt, machine.Rejected, &raw))
		e.unchanged("re-saving a dead letter with its raw "+c.name+" detail", before)
		if dead := e.deadLetters(stream); len(dead) != 1 || dead[0].Last != want {
			e.t.Errorf("DeadLetters(%q) = %+v, want one with Last %+v", stream, dead, want)
		}
		e.release(l)
		got, err := e.s.Discard(e.ctx, id, "op")
		if err != nil {
			e.t.Fatalf("Discard(%q): %v", id, err)
		}
		if h := e.get(id).History; len(h) != 1 || h[0].Last != want || got.History[0].Last != want {
			e.t.Errorf("history after Discard = %+v (Discard returned %+v), want the action to keep Last %+v", h, got.History, want)
		}
		if !utf8Clean(e.get(id).Last.Detail) {
			e.t.Errorf("the kept %s detail %q is not NUL-free UTF-8 of at most %d bytes", c.name, e.get(id).Last.Detail, store.MaxDetailBytes)
		}
	}
}

// utf8Clean says whether d is what CleanDetail promises, judged without
// it: no NUL, valid UTF-8, bounded.
func utf8Clean(d string) bool {
	return len(d) <= store.MaxDetailBytes && strings.ToValidUTF8(d, "!") == d && !strings.Contains(d, "\x00")
}

// payloadsByteExact: a payload is bytes, not text: every byte value, NUL,
// sequences that are not UTF-8, an empty payload and a large one are kept
// and returned exactly, by Enqueue, a repeated Enqueue, Get, Pending and
// DeadLetters.
func payloadsByteExact(e *env) {
	every := make([]byte, 0, 512)
	for i := range 256 {
		every = append(every, byte(i), byte(255-i))
	}
	large := bytes.Repeat([]byte("\x00\xff\xc3(\r\n"), 1<<16)
	cases := []struct {
		name    string
		payload []byte
	}{
		{"every-byte", every},
		{"NUL", []byte{0}},
		{"not-UTF-8", []byte("\xff\xfe\xed\xa0\x80\xc3")},
		{"empty", []byte{}},
		{"nil", nil},
		{"trailing-spaces", []byte("p  \t\n ")},
		{"large", large},
	}
	for i, c := range cases {
		id := "e" + string(rune('a'+i))
		rec, _, err := e.s.Enqueue(e.ctx, "s", id, bytes.Clone(c.payload))
		if err != nil {
			e.t.Fatalf("Enqueue of the %s payload: %v", c.name, err)
		}
		e.wantPayload("Enqueue "+c.name, c.payload, rec.Payload)
		again, created, err := e.s.Enqueue(e.ctx, "s", id, []byte("other"))
		if err != nil || created {
			e.t.Fatalf("Enqueue of %s again: created %v, %v", id, created, err)
		}
		e.wantPayload("Enqueue again "+c.name, c.payload, again.Payload)
		e.wantPayload("Get "+c.name, c.payload, e.get(id).Payload)
	}
	l := e.acquire("s", "w")
	recs := e.pending(l, 0)
	if len(recs) != len(cases) {
		e.t.Fatalf("Pending returned %d records, want %d", len(recs), len(cases))
	}
	for i, c := range cases {
		e.wantPayload("Pending "+c.name, c.payload, recs[i].Payload)
		r := recs[i]
		r.Attempts = 1
		e.save(l, r)
		r.State, r.Reason = machine.Dead, machine.Rejected
		e.save(l, r)
	}
	dead := e.deadLetters("s")
	if len(dead) != len(cases) {
		e.t.Fatalf("DeadLetters returned %d records, want %d", len(dead), len(cases))
	}
	for i, c := range cases {
		e.wantPayload("DeadLetters "+c.name, c.payload, dead[i].Payload)
	}
}

// wantPayload fails the check unless got holds exactly want's bytes (an
// empty payload may come back nil or empty).
func (e *env) wantPayload(what string, want, got []byte) {
	e.t.Helper()
	if !bytes.Equal(want, got) {
		e.t.Errorf("%s: payload of %d bytes came back as %d bytes that differ", what, len(want), len(got))
	}
}
