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
	opStoreCallFault
	opStoreUnknown
	opEnqueueUnknown
	opClockStep
	opDiscard
	opOperatorRefused
	opDeleteSettled
	opReplay
	opStreamPause
	opStreamResume
	opPolicyRefused
	opPlatform
	opSlowCall

	opLast = opSlowCall // the last op: formats has one entry per op
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
	opStoreCallFault:    "fault store-call: %s %s",
	opStoreUnknown:      "store outcome unknown: %s",
	opEnqueueUnknown:    "fault store-call: enqueue %s %s; no ack",
	opClockStep:         "fault clock-step: the clock moves by %v",
	opDiscard:           "operator discards %s: %s",
	opOperatorRefused:   "operator %s %s refused: %s",
	opDeleteSettled:     "operator deletes settled records older than %v: %d deleted",
	opReplay:            "operator replays %s with token %d: %s",
	opStreamPause:       "operator pauses stream %s",
	opStreamResume:      "operator resumes stream %s",
	opPolicyRefused:     "policy refuses stream %s: paused",
	opPlatform:          "platform %s: %s",
	opSlowCall:          "fault slow-call: %s takes %v more, %s",
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

// arg is one argument of a trace line: its kind, and its value in the
// field the kind names. An instant is held as its offset from Epoch in n,
// which both its encoding and its text are made from.
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

// note records one trace line by node n (nil for none): it feeds the
// line's binary encoding (its op, instant, node and arguments) to the
// hash, and keeps its text only when the run keeps a trace.
func (s *sim) note(n *node, o op, args ...arg) {
	name := nodeName(n)
	var buf [128]byte
	b := append(buf[:0], byte(o))
	b = binary.AppendVarint(b, int64(s.elapsed))
	b = appendString(b, name)
	for i := range args {
		b = appendArg(b, &args[i])
	}
	s.hash.Write(b)
	if s.opt.Trace {
		s.trace = append(s.trace, formatLine(s.now, name, o, args))
	}
}

// nodeName is the name a trace line gives node n: none for nil.
func nodeName(n *node) string {
	if n == nil {
		return ""
	}
	return n.name
}

// traceHash is the 64-bit xxHash of the encoded trace, in 16 hex digits.
func (s *sim) traceHash() string {
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
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendInstant(b []byte, t time.Time) []byte {
	return binary.AppendVarint(b, int64(t.Sub(Epoch)))
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
		return binary.AppendVarint(b, int64(a.n))
	case kUint:
		return binary.AppendUvarint(b, a.n)
	case kRecord:
		return appendRecord(b, a.rec)
	case kInput:
		return appendInput(b, a.in)
	}
	panic(fmt.Sprintf("sim: trace argument of unknown kind %d", a.k))
}

func appendRecord(b []byte, r *machine.Record) []byte {
	b = appendString(b, r.ID)
	b = binary.AppendUvarint(b, r.Seq)
	b = append(b, byte(r.State))
	b = binary.AppendVarint(b, int64(r.Attempts))
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
		b = binary.AppendUvarint(b, uint64(len(in.Payload)))
		return appendInstant(b, in.At)
	case machine.Adopt:
		b = append(b, inAdopt)
		b = appendString(b, in.Record.ID)
		b = binary.AppendUvarint(b, in.Record.Seq)
		b = binary.AppendUvarint(b, uint64(len(in.Record.Payload)))
		return appendInstant(b, in.At)
	case machine.Tick:
		b = append(b, inTick)
		return appendInstant(b, in.At)
	case machine.Result:
		return appendResult(b, &in)
	case machine.ProbeResult:
		return appendProbeResult(b, &in)
	}
	// An input kind this encoder does not know: encode its text, so the
	// hash still pins it.
	b = append(b, 0)
	return appendString(b, in.Format(Epoch))
}

func appendResult(b []byte, in *machine.Result) []byte {
	b = append(b, inResult)
	b = appendString(b, in.ID)
	b = binary.AppendVarint(b, int64(in.Attempt))
	b = append(b, byte(in.Outcome))
	b = binary.AppendVarint(b, int64(in.RetryAfter))
	return appendInstant(b, in.At)
}

func appendProbeResult(b []byte, in *machine.ProbeResult) []byte {
	b = append(b, inProbeResult)
	b = binary.AppendUvarint(b, in.N)
	if in.Healthy {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return appendInstant(b, in.At)
}
