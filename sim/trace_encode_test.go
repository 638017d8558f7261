// The trace encoder's shortcuts (the inlined one-byte varints, noteRecord)
// are held byte for byte to the plain encoding: encoding/binary's varints
// and note with a record arg, over random and extreme inputs.
package sim

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

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
