// This file proves that Migrations returns the embedded files in version
// order and refuses a gap or a misnamed file loudly.
package sqlcore

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestMigrationsInOrder(t *testing.T) {
	fsys := fstest.MapFS{
		"migrations/0002_b.sql": {Data: []byte("two")},
		"migrations/0001_a.sql": {Data: []byte("one")},
		"migrations/0003_c.sql": {Data: []byte("three")},
		"migrations/README.txt": {Data: []byte("not a migration")},
		"elsewhere/0004_d.sql":  {Data: []byte("not under migrations/")},
	}
	if diff := cmp.Diff([]string{"one", "two", "three"}, Migrations(fsys)); diff != "" {
		t.Errorf("Migrations (-want +got):\n%s", diff)
	}
}

func TestMigrationsOutOfSequence(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"gap":      {"migrations/0001_a.sql": {}, "migrations/0003_c.sql": {}},
		"no-start": {"migrations/0002_b.sql": {}},
		"misnamed": {"migrations/0001_a.sql": {}, "migrations/2_b.sql": {}},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Migrations did not panic")
				}
			}()
			Migrations(fsys)
		})
	}
}
