//go:build !plant

package main

import (
	"fmt"

	"github.com/courierlab/courier/internal/plant"
)

// switchBug refuses any planted bug: a normal build has no switch.
func switchBug(b plant.Bug) (restore func(), err error) {
	if b == "" {
		return func() {}, nil
	}
	if err := plant.Check(b); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("it names planted bug %q; %s", b, rebuildHint)
}

// plantedResults refuses: RESULTS.md's catch matrix switches every planted
// bug on in turn, which only a plant build can do.
func plantedResults() (string, error) {
	return "", fmt.Errorf("RESULTS.md includes the planted-bug catch matrix, which only a build with -tags plant can run: go run -tags plant ./cmd/simrun results > RESULTS.md")
}
