// The rate-limit rule reports a start (an attempt persisted) that makes
// RateLimit+1 in one RatePer, by whichever owner, beyond the clock slack
// (2*Skew), and nothing for logs that keep the limit: starts exactly
// RatePer apart, a sliding window, starts within the slack, sends a pause
// delayed after their persist, probes (which do not count), no limit at
// all, and a retry the limit held past its NextAt.
package invariants_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
)

// threePerSecond is timedPolicy with a rate limit of 3 starts per second.
func threePerSecond(p *machine.Config) { p.RateLimit, p.RatePer = 3, time.Second }

// sendSteps accepts an event per instant at 0 and starts each at its
// instant; it returns the step of each start's persist.
func (b *tlog) sendSteps(at ...time.Duration) []int {
	for i := range at {
		b.at(0).accept(fmt.Sprintf("e%d", i+1))
	}
	var steps []int
	for i, d := range at {
		steps = append(steps, b.at(d).start(fmt.Sprintf("e%d", i+1)))
	}
	return steps
}

func TestRateLimit(t *testing.T) {
	checkPolicyRows(t, []policyRow{
		{
			name:   "four in one second",
			reason: "the fourth start comes 0.5s after the first of three: four in one RatePer",
			policy: threePerSecond,
			build: func(b *tlog) []found {
				s := b.sendSteps(0, 0, 0, ms(500))
				return []found{{invariants.RateLimit, "e4", s[3]}}
			},
		},
		{
			name:   "sliding window",
			reason: "starts at 0, 0.5, 0.9 and 1.0 keep the limit; one at 1.4 makes four within 0.5..1.4",
			policy: threePerSecond,
			build: func(b *tlog) []found {
				s := b.sendSteps(0, ms(500), ms(900), ms(1000), ms(1400))
				return []found{{invariants.RateLimit, "e5", s[4]}}
			},
		},
		{
			name:   "across a restart",
			reason: "the limit is the stream's: a restarted sender's start counts with its predecessor's",
			policy: threePerSecond,
			build: func(b *tlog) []found {
				b.accept("e4")
				b.sendSteps(0, 0, 0)
				for _, id := range []string{"e1", "e2", "e3"} {
					b.at(ms(100)).deliver(id)
				}
				b.at(ms(200)).restart()
				b.circuit(machine.Closed)
				return []found{{invariants.RateLimit, "e4", b.at(ms(600)).start("e4")}}
			},
		},
		{
			name:   "beyond the clock slack",
			reason: "with Skew 100ms the fourth start may come 0.8s after the first, not 0.7s",
			policy: threePerSecond,
			build: func(b *tlog) []found {
				b.run.Skew = ms(100)
				s := b.sendSteps(0, 0, 0, ms(700))
				return []found{{invariants.RateLimit, "e4", s[3]}}
			},
		},
		{
			name:   "at the limit",
			reason: "three starts, then three more exactly RatePer later",
			policy: threePerSecond,
			build: func(b *tlog) []found {
				b.sendSteps(0, 0, 0, time.Second, time.Second, time.Second)
				return nil
			},
		},
		{
			name:   "sliding window kept",
			reason: "starts at 0, 0.5, 0.9, 1.0 and 1.5: no RatePer holds four",
			policy: threePerSecond,
			build: func(b *tlog) []found {
				b.sendSteps(0, ms(500), ms(900), ms(1000), ms(1500))
				return nil
			},
		},
		{
			name:   "within the clock slack",
			reason: "with Skew 100ms, a fourth start 0.85s after the first may be 1s after it by its owner's clocks",
			policy: threePerSecond,
			build: func(b *tlog) []found {
				b.run.Skew = ms(100)
				b.sendSteps(0, 0, 0, ms(850))
				return nil
			},
		},
		{
			name:   "sends a pause delayed",
			reason: "three attempts persisted at 0 and sent at 0.9s after a pause, a fourth started at 1s: the starts keep the limit",
			policy: threePerSecond,
			build: func(b *tlog) []found {
				for _, id := range []string{"e1", "e2", "e3", "e4"} {
					b.accept(id)
				}
				for _, id := range []string{"e1", "e2", "e3"} {
					b.put(id, func(r *machine.Record) { r.Attempts, r.NextAt = 1, epoch.Add(b.run.Policy.AttemptTimeout) })
				}
				for _, id := range []string{"e1", "e2", "e3"} {
					b.at(ms(900)).add(invariants.Entry{Kind: invariants.Sent, ID: id, Seq: b.recs[id].Seq, Attempt: 1})
				}
				b.at(time.Second).start("e4")
				return nil
			},
		},
		{
			name:   "probes do not count",
			reason: "three starts and two probes in one second: probes carry no event",
			policy: threePerSecond,
			build: func(b *tlog) []found {
				b.sendSteps(0, 0, 0)
				b.at(ms(100)).probe()
				b.at(ms(200)).probeReply("healthy")
				b.at(ms(300)).probe()
				b.at(ms(400)).probeReply("healthy")
				return nil
			},
		},
		{
			name:   "no limit",
			reason: "RateLimit 0: any number of starts at once",
			build: func(b *tlog) []found {
				b.sendSteps(0, 0, 0, 0, 0, 0)
				return nil
			},
		},
		{
			name:   "a retry the limit held",
			reason: "e1's retry is due at 0.95s, but two starts since 0 fill the window until 1s: it goes out then, not late",
			policy: func(p *machine.Config) { p.RateLimit, p.RatePer = 2, time.Second },
			build: func(b *tlog) []found {
				b.accept("e1")
				b.accept("e2")
				b.start("e1")
				b.at(ms(50)).fail("e1", machine.Retry, ms(900), 0)
				b.at(ms(100)).start("e2")
				b.at(ms(200)).deliver("e2")
				b.at(time.Second).start("e1")
				b.at(ms(1100)).deliver("e1")
				return nil
			},
		},
		{
			name:   "a retry held for nothing",
			reason: "with a limit of 3 the window has room at 0.95s: a retry that waits until 1.2s is late",
			policy: threePerSecond,
			build: func(b *tlog) []found {
				b.accept("e1")
				b.accept("e2")
				b.start("e1")
				b.at(ms(50)).fail("e1", machine.Retry, ms(900), 0)
				b.at(ms(100)).start("e2")
				b.at(ms(200)).deliver("e2")
				step := len(b.run.Entries)
				b.at(ms(1200)).start("e1")
				return []found{{invariants.RetryTiming, "e1", step}}
			},
		},
	})
}
