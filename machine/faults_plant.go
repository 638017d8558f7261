//go:build plant

package machine

import "github.com/courierlab/courier/internal/plant"

// plantedFaults returns the machine's share of the planted bug switched
// on (plant.Active) when the machine is made.
func plantedFaults() faults {
	bug := plant.Active()
	return faults{
		unboundedRetries:    bug == plant.UnboundedRetries,
		exhaustEarly:        bug == plant.ExhaustEarly,
		poisonBlocksForever: bug == plant.PoisonBlocksForever,
		drainOutOfOrder:     bug == plant.DrainOutOfOrder,
		sendWhileOpen:       bug == plant.SendWhileOpen,
		windowOverflow:      bug == plant.WindowOverflow,
		rateResetOnProbe:    bug == plant.RateResetOnProbe,
	}
}
