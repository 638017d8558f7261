// Package channel defines what courier needs from the path to the
// downstream system: send one attempt of one event and say what came of
// it, and probe the path's health without sending an event.
//
// It is the seam between the worker, which decides, and the transports,
// which carry: the simulator's fake channel and the HTTP webhook channel
// both implement Channel, and the worker cannot tell them apart.
//
// A Channel is called from many goroutines at once, one call per attempt
// or probe in flight. It must return by the context's deadline (a call
// cut short by it reports machine.OutcomeTimedOut), must never retry on
// its own (retrying is the machine's decision, bounded by its policy), and
// must keep payloads and secrets out of Outcome.Detail.
package channel
