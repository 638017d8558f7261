// The trace encoder's shortcuts (the inlined one-byte varints, noteRecord)
// are held byte for byte to the plain encoding: encoding/binary's varints
// and note with a record arg, over random and extreme inputs.
package sim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/courierlab/courier/machine"
)

func TestAppendVarintsMatchBinary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []uint64{0, 1, 0x7f, 0x80, 0xff, 0x3fff, 0x4000, math.MaxInt64, math.MaxUint64, 1 << 63}
	for range 10000 {
		vals = append(vals, r.Uint64()>>r.IntN(64))
	}
	for _, v := range vals {
		for _, u := range []uint64{v, -v} {
			if got, want := appendUvarint([]byte{9}, u), binary.AppendUvarint([]byte{9}, u); !bytes.Equal(got, want) {
				t.Fatalf("uvarint %d: got %x, want %x", u, got, want)
			}
			if got, want := appendVarint([]byte{9}, int64(u)), binary.AppendVarint([]byte{9}, int64(u)); !bytes.Equal(got, want) {
				t.Fatalf("varint %d: got %x, want %x", int64(u), got, want)
			}
		}
	}
}

// plainRecordLine is the line note(n, o, record(r)) encoded before the
// shortcuts, spelled out with encoding/binary and Time.Sub.
func plainRecordLine(elapsed time.Duration, name string, o op, r *machine.Record) []byte {
	b := []byte{byte(o)}
	b = binary.AppendVarint(b, int64(elapsed))
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = append(b, byte(kRecord))
	b = binary.AppendUvarint(b, uint64(len(r.ID)))
	b = append(b, r.ID...)
	b = binary.AppendUvarint(b, r.Seq)
	b = append(b, byte(r.State))
	b = binary.AppendVarint(b, int64(r.Attempts))
	if !r.State.Terminal() {
		b = binary.AppendVarint(b, int64(r.NextAt.Sub(Epoch)))
	}
	if r.State == machine.Dead {
		b = append(b, byte(r.Reason))
	}
	return b
}

func randomInstant(r *rand.Rand) time.Time {
	switch r.IntN(6) {
	case 0:
		return time.Time{}
	case 1:
		return Epoch.Add(time.Duration(math.MaxInt64))
	case 2:
		return Epoch.Add(time.Duration(math.MinInt64))
	case 3:
		return time.Unix(r.Int64N(1<<40)-1<<39, r.Int64N(1e9))
	}
	return Epoch.Add(time.Duration(r.Int64N(1<<50) - 1<<49))
}

func TestNoteRecordMatchesNote(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	quick, plain := &sim{}, &sim{}
	quick.hash.Reset()
	plain.hash.Reset()
	var want []byte
	for i := range 20000 {
		rec := machine.Record{
			ID:       strings.Repeat("e", r.IntN(300)),
			Seq:      r.Uint64() >> r.IntN(64),
			State:    machine.State(1 + r.IntN(int(machine.Dead))),
			Attempts: int(r.Int64() >> r.IntN(64)),
			NextAt:   randomInstant(r),
		}
		if rec.State == machine.Dead {
			rec.Reason = machine.DeadReason(r.IntN(int(machine.Rejected) + 1))
		}
		var n *node
		name := ""
		if r.IntN(2) == 0 {
			name = strings.Repeat("w", r.IntN(200))
			n = &node{name: name}
		}
		o := []op{opPersist, opStorePersist}[r.IntN(2)]
		elapsed := time.Duration(r.Int64() >> r.IntN(64))
		quick.elapsed, plain.elapsed = elapsed, elapsed
		quick.noteRecord(n, o, &rec)
		plain.note(n, o, record(&rec))
		want = plainRecordLine(elapsed, name, o, &rec)
		if got := quick.enc[len(quick.enc)-min(len(quick.enc), len(want)):]; len(quick.enc) >= len(want) && !bytes.Equal(got, want) {
			t.Fatalf("line %d: noteRecord encoded %x, want %x", i, got, want)
		}
		if got := plain.enc[len(plain.enc)-min(len(plain.enc), len(want)):]; len(plain.enc) >= len(want) && !bytes.Equal(got, want) {
			t.Fatalf("line %d: note encoded %x, want %x", i, got, want)
		}
	}
	if q, p := quick.traceHash(), plain.traceHash(); q != p {
		t.Errorf("hashes differ: noteRecord %s, note %s", q, p)
	}
}

// TestNoteIsAppendArg holds note, which encodes the commonest argument
// kinds itself, to appendArg's encoding of every argument, on lines of
// random arguments of every kind but records and inputs (which note
// leaves to appendArg).
func TestNoteIsAppendArg(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	s := &sim{}
	s.hash.Reset()
	for i := range 20000 {
		args := make([]arg, r.IntN(5))
		for j := range args {
			n := r.Uint64() >> r.IntN(64)
			switch r.IntN(5) {
			case 0:
				args[j] = str(strings.Repeat("x", r.IntN(200)))
			case 1:
				args[j] = num(int(n))
			case 2:
				args[j] = unum(n)
			case 3:
				args[j] = dur(time.Duration(n))
			case 4:
				args[j] = instant(randomInstant(r))
			}
		}
		s.elapsed = time.Duration(r.Int64() >> r.IntN(64))
		s.enc = s.enc[:0]
		s.note(nil, opOffer, args...)
		plain := &sim{elapsed: s.elapsed}
		want := plain.lineHead(opOffer, "")
		for j := range args {
			want = appendArg(want, &args[j])
		}
		if !bytes.Equal(s.enc, want) {
			t.Fatalf("line %d: note encoded %x, want %x", i, s.enc, want)
		}
	}
}

// plainLine is a line as encoded before the memoized instant, spelled out
// with encoding/binary, and appendArg for the arguments.
func plainLine(elapsed time.Duration, name string, o op, args []arg) []byte {
	b := []byte{byte(o)}
	b = binary.AppendVarint(b, int64(elapsed))
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	for i := range args {
		b = appendArg(b, &args[i])
	}
	return b
}

// TestMemoizedInstants holds lineHead's memoized instant, and noteResult's
// use of it, to the plain encoding: on lines whose instants repeat or not,
// into buffers with and without the room for the memo's copy.
func TestMemoizedInstants(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	s := &sim{}
	s.hash.Reset()
	var all []byte // every line, plainly encoded
	for i := range 30000 {
		if r.IntN(3) == 0 {
			s.elapsed = time.Duration(r.Int64() >> r.IntN(64))
			if r.IntN(2) == 0 {
				s.elapsed = -s.elapsed
			}
		}
		if r.IntN(4) == 0 { // little or no room past the line
			k := r.IntN(40)
			s.enc = append(make([]byte, 0, len(s.enc)+k), s.enc...)
		}
		var n *node
		if r.IntN(3) == 0 {
			n = &node{name: strings.Repeat("w", r.IntN(20))}
		}
		var want []byte
		from := len(s.enc)
		if r.IntN(2) == 0 {
			res := machine.Result{ID: "e042", Attempt: r.IntN(300), Outcome: machine.Outcome(r.IntN(4)), RetryAfter: time.Duration(r.Int64N(1 << 40))}
			res.At = randomInstant(r)
			if r.IntN(2) == 0 {
				res.At = Epoch.Add(s.elapsed) // the line's own instant
			}
			want = plainLine(s.elapsed, nodeName(n), opIn, []arg{input(&res)})
			s.noteResult(n, &res)
		} else {
			args := []arg{str(strings.Repeat("x", r.IntN(30))), num(r.IntN(1 << 20))}
			want = plainLine(s.elapsed, nodeName(n), opChannel, args)
			s.note(n, opChannel, args...)
		}
		all = append(all, want...)
		if len(s.enc) < from { // flushed to the hash: the line is its tail
			from = 0
		}
		if got := s.enc[from:]; len(s.enc) >= len(want) && !bytes.Equal(got[max(0, len(got)-len(want)):], want) {
			t.Fatalf("line %d: encoded %x, want %x", i, got, want)
		}
	}
	if got, want := s.traceHash(), fmt.Sprintf("%016x", xxhash.Sum64(all)); got != want {
		t.Errorf("hash of the lines %s, want %s", got, want)
	}
}

// TestLineIsNote holds the line builder to note: the same encoding and,
// with Options.Trace, the same text (decoded from the encoding), for
// lines of random strings and integers.
func TestLineIsNote(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, trace := range []bool{false, true} {
		built, noted := &sim{opt: Options{Trace: trace}}, &sim{opt: Options{Trace: trace}}
		built.hash.Reset()
		noted.hash.Reset()
		for i := range 5000 {
			elapsed := time.Duration(r.Int64() >> r.IntN(64))
			built.elapsed, noted.elapsed = elapsed, elapsed
			built.now, noted.now = Epoch.Add(elapsed), Epoch.Add(elapsed)
			var n *node
			if r.IntN(2) == 0 {
				n = &node{name: strings.Repeat("w", r.IntN(10))}
			}
			o := op(1 + r.IntN(int(opLast)))
			l := built.line(n, o)
			args := make([]arg, r.IntN(5))
			for j := range args {
				v := r.Uint64() >> r.IntN(64)
				switch r.IntN(3) {
				case 0:
					s := strings.Repeat("x", r.IntN(300))
					args[j], l = str(s), l.str(s)
				case 1:
					args[j], l = num(int(v)), l.num(int(v))
				case 2:
					args[j], l = unum(v), l.unum(v)
				}
			}
			l.done()
			noted.note(n, o, args...)
			if !bytes.Equal(built.enc, noted.enc) {
				t.Fatalf("line %d: built %x, noted %x", i, built.enc, noted.enc)
			}
			if trace && built.trace[i] != noted.trace[i] {
				t.Fatalf("line %d: built %q, noted %q", i, built.trace[i], noted.trace[i])
			}
		}
		if b, n := built.traceHash(), noted.traceHash(); b != n {
			t.Errorf("hashes differ: built %s, noted %s", b, n)
		}
	}
}
