package sqlitestore

import (
	"fmt"
	"testing"
)

// rebind turns every $N into an anonymous ? and lays the arguments out in
// the order the placeholders appear, repeats and all.
func TestRebindMakesPlaceholdersAnonymous(t *testing.T) {
	args := make([]any, 12)
	for i := range args {
		args[i] = fmt.Sprintf("a%d", i+1)
	}
	for _, c := range []struct {
		in, want string
		order    []int // args' indexes, 1-based
	}{
		{"SELECT 1", "SELECT 1", nil},
		{"WHERE a = $1 AND b = $2", "WHERE a = ? AND b = ?", []int{1, 2}},
		{"SET b = $2 WHERE a = $1 AND b < $2", "SET b = ? WHERE a = ? AND b < ?", []int{2, 1, 2}},
		{"VALUES ($11, $12), ($1, $10)", "VALUES (?, ?), (?, ?)", []int{11, 12, 1, 10}},
		{"x = $1$2", "x = ??", []int{1, 2}},
		// Not placeholders of these arguments: left for SQLite to refuse.
		{"a = $ AND b = $13 AND c = $0", "a = $ AND b = $13 AND c = $0", nil},
	} {
		got, ordered := rebind(c.in, args)
		want := make([]any, len(c.order))
		for i, n := range c.order {
			want[i] = args[n-1]
		}
		if got != c.want || fmt.Sprint(ordered) != fmt.Sprint(want) {
			t.Errorf("rebind(%q) = %q, %v; want %q, %v", c.in, got, ordered, c.want, want)
		}
	}
}
