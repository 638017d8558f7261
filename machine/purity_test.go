// The purity test proves that the machine reads no clock, draws no random
// number, does no I/O and starts no concurrency, by type-checking its
// non-test sources with go/types and rejecting any forbidden import, call,
// statement or type (and a self-test proves the checker catches each one).
package machine_test

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// allowedImports is everything the machine may import: no os, net, sync,
// math/rand, or anything else that reaches the world.
var allowedImports = []string{
	"cmp", "encoding/binary", "errors", "fmt", "math/bits", "slices", "sort", "strconv", "strings", "time",
}

// plantImport is the one package of the module the machine may import,
// and only in a build with the tag plant (faults_plant.go): the planted-bug
// switches. TestPurity holds it to the same rules (but for ranging over a
// map, which it may do when the order cannot reach the machine's output).
const plantImport = "github.com/courierlab/courier/internal/plant"

// forbiddenTime are the time functions that read the clock or wait.
var forbiddenTime = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}

// sourceImporter type-checks imported packages from source, once each.
var sourceImporter = importer.ForCompiler(token.NewFileSet(), "source", nil)

// checkPurity type-checks the files as one package and reports every
// violation, one line each, with its position.
func checkPurity(fset *token.FileSet, files []*ast.File, allowMapRange bool, allowedInternal ...string) ([]string, error) {
	var problems []string
	report := func(pos token.Pos, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s", fset.Position(pos), fmt.Sprintf(format, args...)))
	}
	for _, f := range files {
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if !slices.Contains(allowedImports, path) && !slices.Contains(allowedInternal, path) {
				report(imp.Pos(), "import %q is not allowed", path)
			}
		}
	}
	info := &types.Info{
		Types: make(map[ast.Expr]types.TypeAndValue),
		Uses:  make(map[*ast.Ident]types.Object),
	}
	conf := types.Config{Importer: sourceImporter}
	if _, err := conf.Check(files[0].Name.Name, fset, files, info); err != nil {
		return nil, err
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				report(n.Pos(), "go statement")
			case *ast.SelectStmt:
				report(n.Pos(), "select statement")
			case *ast.SendStmt:
				report(n.Pos(), "channel send")
			case *ast.UnaryExpr:
				if n.Op == token.ARROW {
					report(n.Pos(), "channel receive")
				}
			case *ast.ChanType:
				report(n.Pos(), "channel type")
			case *ast.RangeStmt:
				switch info.TypeOf(n.X).Underlying().(type) {
				case *types.Map:
					if !allowMapRange {
						report(n.Pos(), "range over a map: its order is random and must not reach output")
					}
				case *types.Chan:
					report(n.Pos(), "range over a channel")
				case *types.Signature:
					report(n.Pos(), "range over a function iterator: check it is not fed by a map")
				}
			case *ast.Ident:
				obj := info.Uses[n]
				if obj == nil || obj.Pkg() == nil {
					return true
				}
				fn, isFunc := obj.(*types.Func)
				if isFunc && fn.Pkg().Path() == "time" && fn.Signature().Recv() == nil && slices.Contains(forbiddenTime, fn.Name()) {
					report(n.Pos(), "time.%s reads the clock or waits", fn.Name())
				}
			}
			return true
		})
	}
	// Channel types can also hide behind a named type from elsewhere.
	for expr, tv := range info.Types {
		if _, isChan := tv.Type.Underlying().(*types.Chan); isChan {
			report(expr.Pos(), "expression of channel type %s", tv.Type)
		}
	}
	slices.Sort(problems)
	return slices.Compact(problems), nil
}

func TestPurity(t *testing.T) {
	// A normal build imports nothing of the module.
	problems, err := checkDir(".", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("machine is not pure: %s", p)
	}
	// A plant build imports the switches, which must be pure too.
	problems, err = checkDir(".", false, []string{"plant"}, plantImport)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("machine (tags plant) is not pure: %s", p)
	}
	dir := filepath.Join("..", strings.TrimPrefix(plantImport, "github.com/courierlab/courier/"))
	problems, err = checkDir(dir, true, []string{"plant"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s (tags plant), imported by machine, is not pure: %s", plantImport, p)
	}
}

// checkDir checks the non-test Go files of one package directory that a
// build with the given tags compiles, allowing the given module imports.
func checkDir(dir string, allowMapRange bool, tags []string, allowedInternal ...string) ([]string, error) {
	ctx := build.Default
	ctx.BuildTags = tags
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		if ok, err := ctx.MatchFile(dir, filepath.Base(path)); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Go source files in %s", dir)
	}
	problems, err := checkPurity(fset, files, allowMapRange, allowedInternal...)
	if err != nil {
		return nil, fmt.Errorf("type-checking %s: %w", dir, err)
	}
	return problems, nil
}

// TestPurityChecker proves that the checker catches each forbidden thing,
// one snippet at a time, and passes a clean one.
func TestPurityChecker(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // a substring of the single problem expected; "" for none
	}{
		{"clean", `import ("time"; "slices"); func f(t time.Time, d time.Duration) time.Time { s := []int{2, 1}; slices.Sort(s); return t.Add(d) }`, ""},
		{"time-methods", `import "time"; func f(t, u time.Time) bool { return t.After(u) || t.Before(u) }`, ""},
		{"range-slice", `func f(s []int) (n int) { for _, v := range s { n += v }; return }`, ""},
		{"range-int", `func f() (n int) { for i := range 3 { n += i }; return }`, ""},
		{"import-os", `import "os"; var _ = os.Getpid`, `import "os"`},
		{"import-rand", `import "math/rand"; var _ = rand.Int`, `import "math/rand"`},
		{"import-rand-v2", `import "math/rand/v2"; var _ = rand.Int`, `import "math/rand/v2"`},
		{"import-net", `import "net"; var _ = net.Dial`, `import "net"`},
		{"import-sync", `import "sync"; var _ sync.Mutex`, `import "sync"`},
		{"time-now", `import "time"; func f() time.Time { return time.Now() }`, "time.Now"},
		{"time-since", `import "time"; func f(t time.Time) time.Duration { return time.Since(t) }`, "time.Since"},
		{"time-until", `import "time"; func f(t time.Time) time.Duration { return time.Until(t) }`, "time.Until"},
		{"time-sleep", `import "time"; func f() { time.Sleep(1) }`, "time.Sleep"},
		{"time-after-value", `import "time"; var f = time.After`, "time.After"},
		{"time-afterfunc", `import "time"; func f() { time.AfterFunc(1, func() {}) }`, "time.AfterFunc"},
		{"time-tick", `import "time"; var f = time.Tick`, "time.Tick"},
		{"time-newtimer", `import "time"; var f = time.NewTimer`, "time.NewTimer"},
		{"time-newticker", `import "time"; var f = time.NewTicker`, "time.NewTicker"},
		{"time-renamed", `import clock "time"; func f() clock.Time { return clock.Now() }`, "time.Now"},
		{"go-stmt", `func f() { go func() {}() }`, "go statement"},
		{"chan-type", `type c chan int`, "channel type"},
		{"chan-send", `func f(c chan<- int) { c <- 1 }`, "channel send"},
		{"chan-receive", `func f(c <-chan int) int { return <-c }`, "channel receive"},
		{"select", `func f() { select {} }`, "select statement"},
		{"range-map", `func f(m map[string]int) (n int) { for _, v := range m { n += v }; return }`, "range over a map"},
		{"range-named-map", `type set map[string]bool; func f(s set) (n int) { for range s { n++ }; return }`, "range over a map"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, tt.name+".go", "package machine; "+tt.src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			problems, err := checkPurity(fset, []*ast.File{f}, false)
			if err != nil {
				t.Fatalf("type-checking the snippet: %v", err)
			}
			if tt.want == "" {
				if len(problems) != 0 {
					t.Errorf("clean snippet flagged: %v", problems)
				}
				return
			}
			found := slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) })
			if !found {
				t.Errorf("snippet not flagged for %q; problems: %v", tt.want, problems)
			}
		})
	}
}
