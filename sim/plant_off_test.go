//go:build !plant

// switchOn for a normal build: a row that needs a planted bug is skipped,
// and runs under go test -tags plant (.ci/harness).
package sim

import (
	"testing"

	"github.com/courierlab/courier/internal/plant"
)

// switchOn skips t when it needs a planted bug: a normal build has none.
func switchOn(t *testing.T, bug plant.Bug) {
	t.Helper()
	if bug != "" {
		t.Skipf("planted bug %s needs go test -tags plant", bug)
	}
}
