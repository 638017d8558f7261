package worker

import (
	"errors"

	"github.com/courierlab/courier/machine"
)

// ErrPolicyChanged is why a stream closes when Policy, asked again at a
// renewal, answers another policy than the one its machine was built
// with: the Faulted event's Err wraps it. It is no fault but an
// operator's change, and an observer may report it as such.
var ErrPolicyChanged = errors.New("the stream's policy changed; giving it back so that the next claim builds its machine with the new one")

// policyChanged reports whether cfg, Policy's answer at a renewal,
// differs from built, the policy the stream's machine runs, but for Seed
// (a Policy may draw a fresh one at each call, as courier serve does).
// The machine takes no config mid-flight, so a changed policy (an
// endpoint's rate limit, attempts in flight or attempt timeout changed
// by API) closes the stream as a pause does: it drains, is released, and
// the next claim builds the machine anew, with no takeover.
func policyChanged(built, cfg machine.Config) bool {
	cfg = plantedConfig(cfg)
	cfg.Seed = built.Seed
	return cfg != built
}
