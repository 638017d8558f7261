package sqlcore

import (
	"fmt"
	"io/fs"
	"strings"
)

// Migrations reads the migrations a backend embeds as migrations/*.sql
// in fsys and returns them in version order: the migration for version v
// is Migrations(fsys)[v-1]. Files are named NNNN_what.sql, numbered from
// 0001 without gaps; it panics otherwise, since the files are embedded
// and a gap is a build mistake, not a run-time condition.
func Migrations(fsys fs.FS) []string {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		panic(err) // the pattern is constant
	}
	out := make([]string, len(names))
	for i, name := range names { // fs.Glob returns them sorted
		if want := fmt.Sprintf("migrations/%04d_", i+1); !strings.HasPrefix(name, want) {
			panic(fmt.Sprintf("sqlcore: migration %s out of sequence, want %s*", name, want))
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			panic(err) // embedded
		}
		out[i] = string(b)
	}
	return out
}
