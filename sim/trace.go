package sim

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/courierlab/courier/machine"
)

// The trace: every input, effect and fault of a run, one line each. A line
// is recorded as an op (which names its format) and typed arguments. The
// hash covers a compact binary encoding of every line (op, instant, worker,
// arguments), so a run pays for text only when a trace is asked for; the
// text, when it is, is formatted from the same op and arguments.

// op is one kind of trace line; formats holds its text.
type op uint8

const (
	opWorld op = iota + 1
	opStop
	opEnd
	opIn
	opRefused
	opIgnored
	opCircuit
	opPersist
	opProbe
	opAck
	opAckDuplicate
	opSend
	opOffer
	opReoffer
	opReplyGaveUp
	opChannel
	opReplyNoOwner
	opOutage
	opFlap
	opLate
	opReceiver
	opLostAck
	opProbeDropped
	opRestart
	opRecovered
	opLease
	opRecovers
	opReleases
	opStoreRefusal
	opLoses
	opWriteRejected
	opPause
	opWakes
	opAlreadyDown
	opCrash
	opComesBack
	opEnqueueRefused
	opStorePersist
	opStoreAck
	opStoreAckDuplicate
	opCircuitTo
	opPastDeadline
	opFaulted
	opStall

	opLast = opStall // the last op: formats has one entry per op
)

// formats is each op's text, fmt verbs for its arguments in order. An op
// may be added, never renumbered: the hash encodes the number.
var formats = [...]string{
	opWorld:             "world seed=%d events=%d ordering=%s faults-end=%v",
	opStop:              "stop: time limit %v reached with %d happenings pending",
	opEnd:               "end",
	opIn:                "in   %s",
	opRefused:           "out  refused: queue full",
	opIgnored:           "out  ignored: %s",
	opCircuit:           "out  circuit %s -> %s",
	opPersist:           "out  persist %s",
	opProbe:             "out  probe %d",
	opAck:               "out  ack %s seq=%d",
	opAckDuplicate:      "out  ack %s seq=%d duplicate",
	opSend:              "out  send %s#%d seq=%d",
	opOffer:             "producer offers %s (copy %d)",
	opReoffer:           "producer got no ack for %s; offers it again",
	opReplyGaveUp:       "reply %s#%d %s dropped: the sender gave up on it",
	opChannel:           "channel %s#%d: %s",
	opReplyNoOwner:      "reply %s#%d %s dropped: the worker no longer owns the stream",
	opOutage:            "fault outage: %s#%d refused",
	opFlap:              "fault flap: %s#%d fails",
	opLate:              "fault late: %s#%d held %v in the network",
	opReceiver:          "receiver %s %s seq=%d (attempt %d)",
	opLostAck:           "fault lost-ack: reply to %s#%d lost",
	opProbeDropped:      "probe %d reply dropped: the sender restarted",
	opRestart:           "restart %d: %s",
	opRecovered:         "out  circuit %s (recovered)",
	opLease:             "lease %s token=%d until %s",
	opRecovers:          "recovers %d waiting records; circuit %s",
	opReleases:          "releases the stream: nothing left to do",
	opStoreRefusal:      "fault store-refusal: %s refused",
	opLoses:             "loses the stream: %s",
	opWriteRejected:     "write rejected as invalid: %s",
	opPause:             "fault pause: stalls for %v with %d sends in hand",
	opWakes:             "wakes from its pause and carries on",
	opAlreadyDown:       "fault crash: already down",
	opCrash:             "fault crash: down for %v",
	opComesBack:         "comes back as %s#%d",
	opEnqueueRefused:    "fault store-refusal: enqueue %s refused; no ack",
	opStorePersist:      "store persist %s",
	opStoreAck:          "store ack %s seq=%d",
	opStoreAckDuplicate: "store ack %s seq=%d duplicate",
	opCircuitTo:         "out  circuit -> %s",
	opPastDeadline:      "send %s#%d not started: past its lease deadline",
	opFaulted:           "worker fault: %s",
	opStall:             "fault stall: freezes for %v inside a call, after reading its clock",
}

// argKind says how an arg is encoded and printed.
type argKind uint8

const (
	kStr     argKind = iota + 1 // s, printed as is
	kInt                        // int64(n), printed in decimal
	kUint                       // n, printed in decimal
	kDur                        // time.Duration(n), printed by Duration.String
	kInstant                    // an instant t, printed as an offset from Epoch
	kRecord                     // *rec, printed by Record.Format
	kInput                      // in, printed by Input.Format
)

// arg is one argument of a trace line. It is passed by value in a variadic
// slice that does not escape, so recording a line allocates nothing.
//
// An instant is held as its offset from Epoch in n, which is what both its
// encoding and its text are made from, rather than as a time.Time: every
// argument of every line is zeroed and passed, and most are not instants.
type arg struct {
	k   argKind
	n   uint64
	s   string
	rec *machine.Record
	in  machine.Input
}

func str(s string) arg             { return arg{k: kStr, s: s} }
func num(n int) arg                { return arg{k: kInt, n: uint64(int64(n))} }
func unum(n uint64) arg            { return arg{k: kUint, n: n} }
func dur(d time.Duration) arg      { return arg{k: kDur, n: uint64(int64(d))} }
func instant(t time.Time) arg      { return arg{k: kInstant, n: uint64(int64(t.Sub(Epoch)))} }
func record(r *machine.Record) arg { return arg{k: kRecord, rec: r} }
func input(in machine.Input) arg   { return arg{k: kInput, in: in} }

// traceFlushBytes is how much encoded trace is buffered before it is fed
// to the hash.
const traceFlushBytes = 8 << 10

// value is what fmt prints for a.
func (a arg) value() any {
	switch a.k {
	case kStr:
		return a.s
	case kInt:
		return int64(a.n)
	case kUint:
		return a.n
	case kDur:
		return time.Duration(int64(a.n))
	case kInstant:
		return machine.FormatInstant(Epoch.Add(time.Duration(int64(a.n))), Epoch)
	case kRecord:
		return a.rec.Format(Epoch)
	case kInput:
		return a.in.Format(Epoch)
	}
	panic(fmt.Sprintf("sim: trace argument of unknown kind %d", a.k))
}

// note records one trace line by worker w (nil or unnamed for none): it
// feeds the line's binary encoding to the hash, and keeps its text only
// when the run keeps a trace.
func (s *sim) note(n *node, o op, args ...arg) {
	name := nodeName(n)
	b := s.lineHead(o, name)
	for i := range args {
		// The commonest kinds here, as appendArg encodes them, without
		// its call: most lines have two to four arguments.
		switch a := &args[i]; a.k {
		case kStr:
			b = appendString(append(b, byte(kStr)), a.s)
		case kInt:
			b = appendVarint(append(b, byte(kInt)), int64(a.n))
		case kUint:
			b = appendUvarint(append(b, byte(kUint)), a.n)
		default:
			b = appendArg(b, a)
		}
	}
	s.lineDone(b)
	if s.opt.Trace {
		s.trace = append(s.trace, formatLine(s.now, name, o, args))
	}
}

// noteRecord is note(n, o, record(r)), the line of every persisted record,
// the run's most frequent: it encodes the record directly, without the
// variadic arg that note zeroes and switches on. A kept trace goes through
// note, which formats the text from the arg.
func (s *sim) noteRecord(n *node, o op, r *machine.Record) {
	if s.opt.Trace {
		s.note(n, o, record(r))
		return
	}
	b := s.lineHead(o, nodeName(n))
	b = append(b, byte(kRecord))
	s.lineDone(appendRecord(b, r))
}

// line is a trace line being noted by a caller that hands its arguments
// one at a time, as typed values: note(n, o, str(a), num(b)) is
// s.line(n, o).str(a).num(b).done(). It spares the hottest lines the
// args that note zeroes, fills and switches on. With Options.Trace, the
// text's arguments are decoded from the line's encoding (lineArgs).
type line struct {
	s *sim
	b []byte
}

// line starts a line of o by worker n (nil for none).
func (s *sim) line(n *node, o op) line {
	name := nodeName(n)
	b := s.lineHead(o, name)
	if s.opt.Trace {
		s.lineText = lineText{name: name, o: o, from: len(b)}
	}
	return line{s, b}
}

// lineText is what the text of the line being built is made from: its
// arguments are its encoding from index from on.
type lineText struct {
	name string
	o    op
	from int
}

func (l line) str(v string) line {
	l.b = appendString(append(l.b, byte(kStr)), v)
	return l
}

func (l line) num(v int) line {
	l.b = appendVarint(append(l.b, byte(kInt)), int64(v))
	return l
}

func (l line) unum(v uint64) line {
	l.b = appendUvarint(append(l.b, byte(kUint)), v)
	return l
}

// done ends the line, as note does.
func (l line) done() {
	s := l.s
	if s.opt.Trace {
		t := &s.lineText
		s.trace = append(s.trace, formatLine(s.now, t.name, t.o, lineArgs(l.b[t.from:])))
	}
	s.lineDone(l.b)
}

// lineArgs decodes the arguments a line encodes (as line's methods do:
// strings and integers) for its text.
func lineArgs(b []byte) []arg {
	var args []arg
	for len(b) > 0 {
		k := argKind(b[0])
		u, n := binary.Uvarint(b[1:])
		b = b[1+n:]
		switch k {
		case kStr:
			args, b = append(args, str(string(b[:u]))), b[u:]
		case kInt:
			args = append(args, arg{k: kInt, n: uint64(int64(u>>1) ^ -int64(u&1))})
		case kUint:
			args = append(args, unum(u))
		default:
			panic(fmt.Sprintf("sim: a line's argument of kind %d", k))
		}
	}
	return args
}

// noteResult is note(n, opIn, input(in)), the line of every outcome a
// sender is handed, encoded directly as noteRecord's is. Its instant is
// most often the line's own (a worker's clock unskewed), whose encoding
// lineHead has just memoized.
func (s *sim) noteResult(n *node, in *machine.Result) {
	if s.opt.Trace {
		s.note(n, opIn, input(in))
		return
	}
	b := s.lineHead(opIn, nodeName(n))
	b = appendResultBody(append(b, byte(kInput)), in)
	at, ok := int64(in.At.Sub(Epoch)), false
	if b, ok = s.at.put(b, at); !ok {
		b = appendVarint(b, at)
	}
	s.lineDone(b)
}

// nodeName is the name a trace line gives node n: none for nil.
func nodeName(n *node) string {
	if n == nil {
		return ""
	}
	return n.name
}

// lineHead starts a line's encoding in s.enc: its op, instant and
// worker. Its arguments follow, then lineDone.
func (s *sim) lineHead(o op, name string) []byte {
	b := append(s.enc, byte(o))
	n, at := len(b), int64(s.elapsed)
	// The instant's encoding, five to eight bytes of a loop each, is
	// memoized: the lines of a run come in runs of a few at one instant.
	// It is copied whole, as one 16-byte move, when b has the room (the
	// bytes past the encoding are overwritten by what follows or unused).
	if m := &s.at; m.n != 0 && m.x == at && cap(b)-n >= len(m.enc) {
		*(*[16]byte)(b[n : n+len(m.enc)]) = m.enc
		b = b[:n+int(m.n)]
	} else if b = appendVarint(b, at); cap(b)-n >= len(m.enc) {
		m.x, m.n, m.enc = at, uint8(len(b)-n), *(*[16]byte)(b[n : n+len(m.enc)])
	}
	if name == "" { // every line of a single sender's run, and the world's
		return append(b, 0) // appendString's, without a copy of nothing
	}
	return appendString(b, name)
}

// varintMemo is the varint encoding of one value (lineHead).
type varintMemo struct {
	x   int64
	n   uint8    // bytes of enc that encode x; 0 for none yet
	enc [16]byte // the encoding, then whatever followed it
}

// put is appendVarint(b, x) if x is the value memoized and b has the
// room to take the encoding as one 16-byte copy (the bytes past it are
// overwritten by what follows, or unused); it reports whether it was.
// lineHead spells it out.
func (m *varintMemo) put(b []byte, x int64) ([]byte, bool) {
	n := len(b)
	if m.n == 0 || m.x != x || cap(b)-n < len(m.enc) {
		return b, false
	}
	*(*[16]byte)(b[n : n+len(m.enc)]) = m.enc
	return b[:n+int(m.n)], true
}

// lineDone keeps an encoded line, feeding the buffer to the hash once
// it holds traceFlushBytes.
func (s *sim) lineDone(b []byte) {
	if len(b) >= traceFlushBytes {
		s.hash.Write(b)
		b = b[:0]
	}
	s.enc = b
}

// traceHash is the 64-bit xxHash of the encoded trace, in 16 hex digits.
func (s *sim) traceHash() string {
	s.hash.Write(s.enc)
	s.enc = s.enc[:0]
	return fmt.Sprintf("%016x", s.hash.Sum64())
}

// formatLine is the text of one trace line: the instant, right-aligned in
// ten columns, two spaces, the worker's name and a space if it has one,
// and the op's format filled in.
func formatLine(now time.Time, name string, o op, args []arg) string {
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.value()
	}
	format := formats[o]
	if name != "" {
		format = name + " " + format
	}
	return fmt.Sprintf("%10s  %s", machine.FormatInstant(now, Epoch), fmt.Sprintf(format, vals...))
}

func appendString(b []byte, s string) []byte {
	b = appendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendUvarint is binary.AppendUvarint, byte for byte, with the one-byte
// case (most lengths, sequence numbers, attempts) inlined at the caller:
// binary's is a call every time.
func appendUvarint(b []byte, x uint64) []byte {
	if x < 0x80 {
		return append(b, byte(x))
	}
	return binary.AppendUvarint(b, x)
}

// appendVarint is binary.AppendVarint, byte for byte: the same zig-zag
// mapping, then appendUvarint.
func appendVarint(b []byte, x int64) []byte {
	ux := uint64(x) << 1
	if x < 0 {
		ux = ^ux
	}
	return appendUvarint(b, ux)
}

func appendInstant(b []byte, t time.Time) []byte {
	return appendVarint(b, int64(t.Sub(Epoch)))
}

// appendArg encodes one argument: its kind, then its value. A record is
// encoded with what Record.Format prints, and an input with what
// Input.Format prints, so the hash pins exactly what the trace shows.
func appendArg(b []byte, a *arg) []byte {
	b = append(b, byte(a.k))
	switch a.k {
	case kStr:
		return appendString(b, a.s)
	case kInt, kDur, kInstant: // an instant as appendInstant encodes it
		return appendVarint(b, int64(a.n))
	case kUint:
		return appendUvarint(b, a.n)
	case kRecord:
		return appendRecord(b, a.rec)
	case kInput:
		return appendInput(b, a.in)
	}
	panic(fmt.Sprintf("sim: trace argument of unknown kind %d", a.k))
}

func appendRecord(b []byte, r *machine.Record) []byte {
	b = appendString(b, r.ID)
	b = appendUvarint(b, r.Seq)
	b = append(b, byte(r.State))
	b = appendVarint(b, int64(r.Attempts))
	if !r.State.Terminal() {
		b = appendInstant(b, r.NextAt)
	}
	if r.State == machine.Dead {
		b = append(b, byte(r.Reason))
	}
	return b
}

// Input kinds in the encoding.
const (
	inAccept byte = iota + 1
	inAdopt
	inTick
	inResult
	inProbeResult
)

func appendInput(b []byte, in machine.Input) []byte {
	switch in := in.(type) {
	case machine.Accept:
		b = append(b, inAccept)
		b = appendString(b, in.ID)
		b = appendUvarint(b, uint64(len(in.Payload)))
		return appendInstant(b, in.At)
	case machine.Adopt:
		b = append(b, inAdopt)
		b = appendString(b, in.Record.ID)
		b = appendUvarint(b, in.Record.Seq)
		b = appendUvarint(b, uint64(len(in.Record.Payload)))
		return appendInstant(b, in.At)
	case machine.Tick:
		b = append(b, inTick)
		return appendInstant(b, in.At)
	case machine.Result:
		return appendResult(b, &in)
	case *machine.Result:
		return appendResult(b, in)
	case machine.ProbeResult:
		return appendProbeResult(b, &in)
	case *machine.ProbeResult:
		return appendProbeResult(b, in)
	}
	// An input kind this encoder does not know: encode its text, so the
	// hash still pins it.
	b = append(b, 0)
	return appendString(b, in.Format(Epoch))
}

// appendResult and appendProbeResult encode a result, whether the input is
// the value or a pointer to it (which the simulator passes to spare an
// allocation).
func appendResult(b []byte, in *machine.Result) []byte {
	return appendInstant(appendResultBody(b, in), in.At)
}

// appendResultBody is appendResult but for the instant, which ends it.
func appendResultBody(b []byte, in *machine.Result) []byte {
	b = append(b, inResult)
	b = appendString(b, in.ID)
	b = appendVarint(b, int64(in.Attempt))
	b = append(b, byte(in.Outcome))
	return appendVarint(b, int64(in.RetryAfter))
}

func appendProbeResult(b []byte, in *machine.ProbeResult) []byte {
	b = append(b, inProbeResult)
	b = appendUvarint(b, in.N)
	if in.Healthy {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return appendInstant(b, in.At)
}
