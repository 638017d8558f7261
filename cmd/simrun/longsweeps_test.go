// The record of long sweeps reads back as written, refuses a malformed
// line by its number, and RESULTS.md states the largest sweep on record.
package main

import (
	"strings"
	"testing"
)

func TestLongSweepRecord(t *testing.T) {
	record := `# a comment
2026-12-01 aaaaaaa 30000000 1000000 65000000 16 16 319.0
2026-12-06 bbbbbbb 133262000000 1000000 65100000 0 0 412.5
2026-12-06 ccccccc 5000 20000 1300000 0 0 9.1
`
	var b strings.Builder
	if err := writeLongSweeps(&b, record); err != nil {
		t.Fatal(err)
	}
	want := "The largest on record: **1000000 seeds from 133262000000, 65100000 events, 0 violations**, on commit bbbbbbb (2026-12-06)."
	if !strings.Contains(b.String(), want) {
		t.Errorf("the section does not state the latest of the largest sweeps:\n%s", b.String())
	}
	if got := strings.Count(b.String(), "\n| 2026-"); got != 3 {
		t.Errorf("the table has %d rows, want 3", got)
	}
	if _, err := parseLongSweeps("# ok\n2026-12-06 abc 1 x 1 0 0 1\n"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a malformed line gave %v, want an error naming line 2", err)
	}
	if _, err := parseLongSweeps(longSweeps); err != nil {
		t.Errorf("the committed record: %v", err)
	}
}
