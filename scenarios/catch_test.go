// A normal build has no planted bug switched on; the catch matrix itself
// runs in a plant build (catch_plant_test.go).
package scenarios

import (
	"testing"

	"github.com/courierlab/courier/internal/plant"
)

func TestNoBugIsActiveByDefault(t *testing.T) {
	if b := plant.Active(); b != "" {
		t.Fatalf("planted bug %q is active in a normal build", b)
	}
}
