package plant

// The real-parts catalogue (issue 28, part 2): bugs in the HTTP channel,
// the receiver kit and the signature scheme, which the simulator meets in
// its HTTP worlds (sim.HTTP), where sends go through them.
const (
	// Channel429Refused: the HTTP channel takes 429 Too Many Requests for
	// a rejection, so an event the receiver only asked to slow down goes
	// dead at once (webhook/httpchannel).
	Channel429Refused Bug = "channel-429-refused"
	// KitNoDedup: the receiver kit's memory store forgets to look up the
	// IDs it applied, so a redelivery is applied again
	// (webhook/receiver).
	KitNoDedup Bug = "kit-no-dedup"
	// VerifyFirstSecretOnly: the verifier checks the signatures against
	// its first secret only, so during a rotation the requests signed with
	// the new secret are refused (webhook).
	VerifyFirstSecretOnly Bug = "verify-first-secret-only"
)

func init() {
	for bug, rule := range map[Bug]string{
		Channel429Refused:     "channel-true",
		KitNoDedup:            "applied-once",
		VerifyFirstSecretOnly: "channel-true",
	} {
		Expected[bug] = rule
	}
}
