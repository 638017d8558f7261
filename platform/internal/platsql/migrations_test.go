// This file proves that Migrations reads the embedded steps in version
// order, accepts a skipped number (branches built apart each take one)
// and refuses a number twice or a name out of pattern.
package platsql

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestMigrationsAcceptAGap(t *testing.T) {
	fsys := fstest.MapFS{
		"migrations/0001_a.sql": {Data: []byte("A")},
		"migrations/0002_b.sql": {Data: []byte("B")},
		"migrations/0006_f.sql": {Data: []byte("F")},
	}
	want := []Step{{1, "A"}, {2, "B"}, {6, "F"}}
	if diff := cmp.Diff(want, Migrations(fsys)); diff != "" {
		t.Errorf("Migrations (-want +got):\n%s", diff)
	}
}

func TestMigrationsRefuseABadName(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"twice":     {"migrations/0001_a.sql": {}, "migrations/0001_b.sql": {}},
		"zero":      {"migrations/0000_a.sql": {}},
		"no number": {"migrations/first.sql": {}},
		"short":     {"migrations/01_a.sql": {}},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Migrations(%v) did not panic", fsys)
				}
			}()
			Migrations(fsys)
		})
	}
}
