// This file proves that platmem passes the platformtest conformance
// suite.
package platmem

import (
	"testing"
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/platform/platformtest"
)

func TestConformance(t *testing.T) {
	platformtest.Run(t, func(t *testing.T, now func() time.Time) platform.Store { return New(now) })
}
