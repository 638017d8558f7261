//go:build plant

// switchOn for a plant build: the row's planted bug is on for the test.
package sim

import (
	"testing"

	"github.com/courierlab/courier/internal/plant"
)

// switchOn switches bug on ("" for none) until t ends.
func switchOn(t *testing.T, bug plant.Bug) {
	t.Helper()
	restore, err := plant.Set(bug)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restore)
}
