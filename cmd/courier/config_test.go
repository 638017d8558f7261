// This file proves that the serve config is read as written, that every
// invalid or unknown field is refused at start with an error naming it,
// and that durations need their unit.
package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func TestParseConfigReadsEveryField(t *testing.T) {
	c, err := ParseConfig(`
listen = "127.0.0.1:9000"
api_tokens = ["0123456789abcdef0123"]
shutdown_timeout = "5s"

[streams.orders]
url = "https://example.com/hooks"
secrets = ["` + secret + `", "` + secret + `"]
ordering = "independent"
window = 4
max_attempts = 3
max_age = "1h"
base_backoff = "2s"
max_backoff = "1m"
jitter_percent = 0
attempt_timeout = "7s"
`)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Streams["orders"].Policy()
	switch {
	case c.Listen != "127.0.0.1:9000", c.ShutdownTimeout.Duration != 5*time.Second, c.Database != "courier.db", c.workers() != 1:
		t.Errorf("top level read wrong: %+v", c)
	case p.Ordering != machine.Independent, p.Window != 4, p.MaxAttempts != 3, p.MaxAge != time.Hour,
		p.BaseBackoff != 2*time.Second, p.MaxBackoff != time.Minute, p.JitterPercent != 0, p.AttemptTimeout != 7*time.Second:
		t.Errorf("policy read wrong: %+v", p)
	case p.BreakerThreshold != machine.DefaultConfig().BreakerThreshold:
		t.Errorf("unset field did not take the default: %+v", p)
	}
}

func TestParseConfigRefusesNamingTheField(t *testing.T) {
	stream := func(extra string) string {
		return "[streams.orders]\nurl = \"https://example.com/\"\nsecrets = [\"" + secret + "\"]\n" + extra
	}
	for _, tc := range []struct{ name, text, want string }{
		{"unknown top-level field", "lisen = \"x\"", "unknown field lisen"},
		{"negative workers", "workers = -1\n" + stream(""), "workers is -1"},
		{"more workers than streams", "workers = 257\n" + stream(""), "workers is 257"},
		{"unknown stream field", stream("retries = 3"), "unknown field streams.orders.retries"},
		{"duration without unit", stream("max_age = 30"), "max_age"},
		{"duration not a duration", stream("max_age = \"soon\""), "max_age"},
		{"missing url", "[streams.orders]\nsecrets = [\"" + secret + "\"]", "streams.orders.url: is missing"},
		{"no secrets", "[streams.orders]\nurl = \"https://example.com/\"", "streams.orders.secrets: is empty"},
		{"bad secret", "[streams.orders]\nurl = \"https://example.com/\"\nsecrets = [\"hunter2\"]", "streams.orders.secrets[0]"},
		{"bad ordering", stream("ordering = \"fifo\""), "streams.orders.ordering"},
		{"window with strict", stream("window = 3"), "streams.orders.window"},
		{"negative attempts", stream("max_attempts = -1"), "streams.orders.max_attempts"},
		{"backoff inverted", stream("base_backoff = \"1m\"\nmax_backoff = \"1s\""), "streams.orders.max_backoff"},
		{"jitter out of range", stream("jitter_percent = 150"), "streams.orders.jitter_percent"},
		{"2xx rejects", stream("reject_statuses = [404, 204]"), "streams.orders.reject_statuses[1]: 204 is a success"},
		{"status above 599", stream("reject_statuses = [600]"), "streams.orders.reject_statuses[0]: 600 is not an HTTP status"},
		{"status below 100", stream("reject_statuses = [410, 99]"), "streams.orders.reject_statuses[1]: 99 is not an HTTP status"},
		{"statuses not a list", stream("reject_statuses = 404"), "reject_statuses"},
		{"status classes as text", stream(`reject_statuses = ["4xx"]`), "reject_statuses"},
		{"short token", "api_tokens = [\"short\"]", "api_tokens[0]"},
		{"bad stream name", "[streams.\"a b\"]\nurl = \"https://example.com/\"\nsecrets = [\"" + secret + "\"]", `streams."a b"`},
		{"not TOML", "listen = ", "config:"},
		{"unknown platform key", "[platform]\nretention = \"1h\"", "unknown field platform.retention"},
		{"retention too short", "[platform]\nattempt_retention = \"1s\"", "platform.attempt_retention"},
		{"retention negative", "[platform]\nattempt_retention = \"-1h\"", "platform.attempt_retention"},
		{"retention without unit", "[platform]\nattempt_retention = 30", "attempt_retention"},
		{"disable_after negative", "[platform]\ndisable_after = \"-1h\"", "platform.disable_after"},
		{"replay_page too large", "[platform]\nreplay_page = 1001", "platform.replay_page"},
		{"replay_page negative", "[platform]\nreplay_page = -1", "platform.replay_page"},
		{"operator webhook not a URL", "[platform]\noperator_webhook = \"ftp://x/\"\noperator_secret = \"" + secret + "\"", "platform.operator_webhook"},
		{"operator webhook without secret", "[platform]\noperator_webhook = \"https://ops.example.com/\"", "platform.operator_secret"},
		{"operator secret bad", "[platform]\noperator_webhook = \"https://ops.example.com/\"\noperator_secret = \"hunter2\"", "platform.operator_secret"},
		{"operator secret alone", "[platform]\noperator_secret = \"" + secret + "\"", "platform.operator_webhook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(tc.text)
			if err == nil {
				t.Fatalf("accepted; want an error naming %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q repeats the secret", err)
			}
		})
	}
}

func TestBadEndpointFailsAtStart(t *testing.T) {
	c, err := ParseConfig("[streams.orders]\nurl = \"ftp://example.com/\"\nsecrets = [\"" + secret + "\"]")
	if err != nil {
		t.Fatal(err)
	}
	_, err = newRouter(c, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "streams.orders") {
		t.Fatalf("newRouter = %v; want an error naming streams.orders", err)
	}
}

// reject_statuses reaches the stream's status policy as written: absent
// is httpchannel's default (nil), an empty list rejects nothing.
func TestParseConfigReadsRejectStatuses(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []int // nil: no policy, the default
	}{
		{"", nil},
		{"reject_statuses = []", []int{}},
		{"reject_statuses = [400, 404, 410, 422, 301]", []int{400, 404, 410, 422, 301}},
	} {
		c, err := ParseConfig("[streams.orders]\nurl = \"https://example.com/\"\nsecrets = [\"" + secret + "\"]\n" + tc.line)
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		got := c.Streams["orders"].StatusPolicy()
		switch {
		case tc.want == nil && got != nil:
			t.Errorf("%q: policy %+v, want nil (the default)", tc.line, got)
		case tc.want != nil && (got == nil || !slices.Equal(got.RejectOn, tc.want) || got.RejectOn == nil):
			t.Errorf("%q: policy %+v, want RejectOn %v", tc.line, got, tc.want)
		}
	}
}

// TestEachLoadDrawsItsOwnSeed: the machine's seed keys its ID index's
// hash, so a producer must not be able to know it; the default (1) is
// public.
func TestEachLoadDrawsItsOwnSeed(t *testing.T) {
	text := "api_tokens = [\"0123456789abcdef0123\"]\n[streams.orders]\nurl = \"https://example.com/hooks\"\nsecrets = [\"" + secret + "\"]\n"
	seeds := map[uint64]bool{}
	for range 4 {
		c, err := ParseConfig(text)
		if err != nil {
			t.Fatal(err)
		}
		seeds[c.Streams["orders"].Policy().Seed] = true
	}
	if len(seeds) != 4 || seeds[machine.DefaultConfig().Seed] {
		t.Errorf("seeds drawn %v: want four different ones, none the default", seeds)
	}
}

// TestWorkersDefaultByStore: PostgreSQL gets 4 workers unless told,
// SQLite 1, and a number given is kept.
func TestWorkersDefaultByStore(t *testing.T) {
	stream := "[streams.orders]\nurl = \"https://example.com/\"\nsecrets = [\"" + secret + "\"]\n"
	for _, tc := range []struct {
		text string
		want int
	}{
		{stream, 1},
		{"postgres = \"postgres://x@127.0.0.1/db\"\n" + stream, 4},
		{"workers = 2\npostgres = \"postgres://x@127.0.0.1/db\"\n" + stream, 2},
		{"workers = 3\n" + stream, 3},
	} {
		c, err := ParseConfig(tc.text)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.workers(); got != tc.want {
			t.Errorf("%q: %d workers, want %d", tc.text, got, tc.want)
		}
	}
}

// The [platform] table is read as written, and its keys left out take
// the documented defaults.
func TestParseConfigPlatform(t *testing.T) {
	c, err := ParseConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Platform; p.AttemptRetention.Duration != 30*24*time.Hour || p.DisableAfter.Duration != 5*24*time.Hour || p.OperatorWebhook != "" ||
		p.ReplayPage != 100 {
		t.Errorf("defaults = %+v; want 720h, 120h, no operator webhook, pages of 100", p)
	}
	c, err = ParseConfig("[platform]\nattempt_retention = \"48h\"\ndisable_after = \"90m\"\n" +
		"operator_webhook = \"https://ops.example.com/hook\"\noperator_secret = \"" + secret + "\"\nreplay_page = 7")
	if err != nil {
		t.Fatal(err)
	}
	want := PlatformConfig{AttemptRetention: Duration{48 * time.Hour}, DisableAfter: Duration{90 * time.Minute},
		OperatorWebhook: "https://ops.example.com/hook", OperatorSecret: secret, ReplayPage: 7}
	if c.Platform != want {
		t.Errorf("read %+v; want %+v", c.Platform, want)
	}
}
