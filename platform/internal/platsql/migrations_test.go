// This file proves that Migrations reads the embedded steps in version
// order and refuses a number twice, a skipped number or a name out of
// pattern.
package platsql

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestMigrationsInVersionOrder(t *testing.T) {
	fsys := fstest.MapFS{
		"migrations/0001_a.sql": {Data: []byte("A")},
		"migrations/0002_b.sql": {Data: []byte("B")},
		"migrations/0003_c.sql": {Data: []byte("C")},
	}
	want := []Step{{1, "A"}, {2, "B"}, {3, "C"}}
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
		"gap":       {"migrations/0001_a.sql": {}, "migrations/0003_c.sql": {}},
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
