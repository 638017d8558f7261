// This file proves CheckHeaders: reserved names (in any case), names
// that are no token, values with control or non-ASCII characters, a
// name repeated in another case, and the count and size bounds are each
// refused naming the header or "headers"; a set within every bound
// passes.
package platform

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheckHeaders(t *testing.T) {
	many := map[string]string{}
	for i := range MaxHeaders + 1 {
		many[fmt.Sprintf("X-H%d", i)] = "v"
	}
	big := map[string]string{}
	for i := range 5 {
		big[fmt.Sprintf("X-H%d", i)] = strings.Repeat("v", MaxHeaderBytes-5)
	}
	for _, c := range []struct {
		name    string
		headers map[string]string
		field   string // "" to pass
	}{
		{"none", nil, ""},
		{"ordinary", map[string]string{"X-Tenant": "acme", "Authorization": "Bearer x", "X-Tab": "a\tb"}, ""},
		{"content-type", map[string]string{"content-type": "text/plain"}, "headers.content-type"},
		{"content-length", map[string]string{"Content-Length": "1"}, "headers.Content-Length"},
		{"user-agent", map[string]string{"User-Agent": "me"}, "headers.User-Agent"},
		{"webhook-id", map[string]string{"WEBHOOK-ID": "x"}, "headers.WEBHOOK-ID"},
		{"courier-attempt", map[string]string{"Courier-Attempt": "9"}, "headers.Courier-Attempt"},
		{"transfer-encoding", map[string]string{"Transfer-Encoding": "chunked"}, "headers.Transfer-Encoding"},
		{"proxy", map[string]string{"Proxy-Authorization": "x"}, "headers.Proxy-Authorization"},
		{"colon", map[string]string{"X:Y": "1"}, "headers.X:Y"},
		{"empty-name", map[string]string{"": "1"}, "headers."},
		{"newline", map[string]string{"X-A": "1\n2"}, "headers.X-A"},
		{"non-ascii", map[string]string{"X-A": "é"}, "headers.X-A"},
		{"case-twice", map[string]string{"X-A": "1", "x-a": "2"}, "headers.x-a"},
		{"one-too-big", map[string]string{"X-A": strings.Repeat("v", MaxHeaderBytes-2)}, "headers.X-A"},
		{"one-at-bound", map[string]string{"X-A": strings.Repeat("v", MaxHeaderBytes-3)}, ""},
		{"too-many", many, "headers"},
		{"too-big-in-all", big, "headers"},
	} {
		err := CheckHeaders(c.headers)
		var fe *FieldError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: %v; want it taken", c.name, err)
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field):
			t.Errorf("%s: err = %v; want a FieldError naming %q", c.name, err, c.field)
		}
	}
}
