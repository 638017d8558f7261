// This file proves how Migrations reads a backend's files: in version
// order, a skipped number as an empty step (two branches' migrations
// merge in either order), and a repeated or misnamed file as a panic.
package platsql

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestMigrationsSkipAGapAndRefuseRepeats(t *testing.T) {
	fsys := fstest.MapFS{
		"migrations/0001_a.sql": {Data: []byte("one")},
		"migrations/0002_b.sql": {Data: []byte("two")},
		"migrations/0005_e.sql": {Data: []byte("five")},
	}
	if d := cmp.Diff([]string{"one", "two", "", "", "five"}, Migrations(fsys)); d != "" {
		t.Errorf("Migrations (-want +got):\n%s", d)
	}
	for name, bad := range map[string]fstest.MapFS{
		"repeated": {"migrations/0001_a.sql": {Data: []byte("a")}, "migrations/0001_b.sql": {Data: []byte("b")}},
		"misnamed": {"migrations/1_a.sql": {Data: []byte("a")}},
		"zero":     {"migrations/0000_a.sql": {Data: []byte("a")}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Migrations did not panic", name)
				}
			}()
			Migrations(bad)
		}()
	}
}
