package main

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/webhook"
	"github.com/courierlab/courier/webhook/httpchannel"
)

// Duration is a time.Duration written with its unit ("30s", "5m"): a bare
// number is refused, so that nobody writes 30 meaning seconds and gets
// 30 nanoseconds.
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration with a unit (like \"30s\" or \"5m\")", b)
	}
	d.Duration = v
	return nil
}

// Config is the serve command's file (TOML). Every field is optional but
// the streams; a field the file names and Config has not is an error.
type Config struct {
	// Listen is the API's address; flag -listen and COURIER_LISTEN
	// override it. Default 127.0.0.1:8080.
	Listen string `toml:"listen"`
	// Database is the SQLite file (default ./courier.db); Postgres, if
	// set, is used instead.
	Database string `toml:"database"`
	Postgres string `toml:"postgres"`
	// PostgresSchema is the schema the store lives in; default "courier".
	PostgresSchema string `toml:"postgres_schema"`
	// APITokens are the bearer tokens the API accepts (several during a
	// rotation). COURIER_API_TOKENS (comma-separated) adds to them.
	APITokens []string `toml:"api_tokens"`
	// AllowLoopback lets the HTTP channel dial 127.0.0.0/8 and ::1,
	// which the SSRF policy refuses otherwise. For development and tests.
	AllowLoopback bool `toml:"allow_loopback"`
	// ShutdownTimeout bounds how long attempts in flight may finish after
	// SIGTERM. Default 30s.
	ShutdownTimeout Duration `toml:"shutdown_timeout"`
	// LeaseTTL and Poll tune the worker: defaults 30s and 1s.
	LeaseTTL Duration `toml:"lease_ttl"`
	Poll     Duration `toml:"poll"`
	// Workers is how many workers the process runs, each with its own
	// leases and its own goroutine for store calls (courier.Config.Workers):
	// on PostgreSQL the streams' commits then overlap. Default: 4 on
	// PostgreSQL, 1 on SQLite, whose writes take turns anyway.
	Workers int `toml:"workers"`
	// MaxRequestBytes bounds an API request body. Default 2 MiB.
	MaxRequestBytes int `toml:"max_request_bytes"`
	// Streams are the destinations, by stream name.
	Streams map[string]*StreamConfig `toml:"streams"`
	// Metrics tunes the metrics served at /metrics.
	Metrics MetricsConfig `toml:"metrics"`
	// Platform tunes the applications' endpoints: their attempt log and
	// their health.
	Platform PlatformConfig `toml:"platform"`
}

// PlatformConfig is the [platform] table of the config.
type PlatformConfig struct {
	// AttemptRetention is how long each HTTP attempt to an endpoint is
	// kept in the attempt log. Default 30 days ("720h").
	AttemptRetention Duration `toml:"attempt_retention"`
	// DisableAfter: an endpoint that has failed with no success for this
	// long is disabled (a 410 Gone disables it at once). Default 5 days
	// ("120h"), as Svix.
	DisableAfter Duration `toml:"disable_after"`
	// OperatorWebhook, if set, receives a signed POST (Standard Webhooks,
	// with OperatorSecret) each time an endpoint is disabled.
	OperatorWebhook string `toml:"operator_webhook"`
	OperatorSecret  string `toml:"operator_secret"`
	// ReplayPage is how many dead letters a bulk replay job replays back
	// to back before it waits for them to settle. Default 100, at most
	// 1000.
	ReplayPage int `toml:"replay_page"`
}

// check fills the defaults and names the first bad key.
func (p *PlatformConfig) check() error {
	if p.AttemptRetention.Duration == 0 {
		p.AttemptRetention.Duration = platform.DefaultAttemptRetention
	}
	if p.DisableAfter.Duration == 0 {
		p.DisableAfter.Duration = platform.DefaultDisableAfter
	}
	if p.ReplayPage == 0 {
		p.ReplayPage = replayPage
	}
	switch {
	case p.ReplayPage < 1 || p.ReplayPage > platform.MaxLimit:
		return fmt.Errorf("platform.replay_page is %d; must be from 1 to %d", p.ReplayPage, platform.MaxLimit)
	case p.AttemptRetention.Duration < time.Minute:
		return fmt.Errorf("platform.attempt_retention is %v; must be at least 1m", p.AttemptRetention.Duration)
	case p.DisableAfter.Duration < 0:
		return fmt.Errorf("platform.disable_after is %v; must be positive", p.DisableAfter.Duration)
	case p.OperatorWebhook == "" && p.OperatorSecret != "":
		return errors.New("platform.operator_secret is set but platform.operator_webhook is not")
	case p.OperatorWebhook == "":
		return nil
	}
	if err := platform.CheckURL("platform.operator_webhook", p.OperatorWebhook); err != nil {
		return err
	}
	if _, err := webhook.ParseSecret(p.OperatorSecret); err != nil {
		return errors.New("platform.operator_secret: is missing or not a whsec_ secret") // the error might echo the secret
	}
	return nil
}

// StreamConfig is one destination and its delivery policy. Zero fields
// take machine.DefaultConfig's value.
type StreamConfig struct {
	URL     string   `toml:"url"`
	Secrets []string `toml:"secrets"`
	// Ordering is "strict" (one at a time, in order) or "independent"
	// (up to Window at once).
	Ordering string `toml:"ordering"`
	Window   int    `toml:"window"`

	MaxAttempts       int      `toml:"max_attempts"`
	MaxAge            Duration `toml:"max_age"`
	BaseBackoff       Duration `toml:"base_backoff"`
	MaxBackoff        Duration `toml:"max_backoff"`
	JitterPercent     *int     `toml:"jitter_percent"`
	MaxRetryAfter     Duration `toml:"max_retry_after"`
	AttemptTimeout    Duration `toml:"attempt_timeout"`
	BreakerThreshold  int      `toml:"breaker_threshold"`
	ProbeTimeout      Duration `toml:"probe_timeout"`
	ProbeBaseInterval Duration `toml:"probe_base_interval"`
	ProbeMaxInterval  Duration `toml:"probe_max_interval"`
	ProbePath         string   `toml:"probe_path"`
	MaxQueued         int      `toml:"max_queued"`
	MaxPayloadBytes   int      `toml:"max_payload_bytes"`
	// RejectStatuses are the HTTP statuses that make an event a dead
	// letter at once. Absent: only 410 (httpchannel.DefaultStatusPolicy);
	// every other non-2xx is retried. An empty list rejects nothing.
	RejectStatuses *[]int `toml:"reject_statuses"`

	policy machine.Config
}

// maxStreams is the most streams one serve process owns at once, over
// all its workers.
const maxStreams = 256

// workers is the number of workers to run on the chosen store.
func (c *Config) workers() int {
	switch {
	case c.Workers > 0:
		return c.Workers
	case c.Postgres != "":
		return 4
	}
	return 1
}

// loopback is what AllowLoopback lets the channel dial.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// LoadConfig reads and checks the file at path. The error names the
// field at fault.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseConfig(string(b))
}

// ParseConfig decodes and checks a TOML config.
func ParseConfig(text string) (*Config, error) {
	var c Config
	md, err := toml.Decode(text, &c)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if un := md.Undecoded(); len(un) > 0 {
		keys := make([]string, len(un))
		for i, k := range un {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("config: unknown field %s", strings.Join(keys, ", "))
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return &c, nil
}

func (c *Config) check() error {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8080"
	}
	if c.Database == "" {
		c.Database = "courier.db"
	}
	if c.PostgresSchema == "" {
		c.PostgresSchema = "courier"
	}
	if c.ShutdownTimeout.Duration == 0 {
		c.ShutdownTimeout.Duration = 30 * time.Second
	}
	if c.LeaseTTL.Duration == 0 {
		c.LeaseTTL.Duration = 30 * time.Second
	}
	if c.Poll.Duration == 0 {
		c.Poll.Duration = time.Second
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = 2 << 20
	}
	switch {
	case c.ShutdownTimeout.Duration < 0:
		return errors.New("shutdown_timeout must not be negative")
	case c.LeaseTTL.Duration < 0:
		return errors.New("lease_ttl must not be negative")
	case c.Poll.Duration < 0:
		return errors.New("poll must not be negative")
	case c.Workers < 0 || c.Workers > maxStreams:
		return fmt.Errorf("workers is %d; must be within [1, %d] (0: the default)", c.Workers, maxStreams)
	case c.MaxRequestBytes < 1:
		return errors.New("max_request_bytes must be positive")
	}
	if err := c.Metrics.check(); err != nil {
		return err
	}
	if err := c.Platform.check(); err != nil {
		return err
	}
	for i, t := range c.APITokens {
		if len(t) < 16 {
			return fmt.Errorf("api_tokens[%d] is %d characters; use at least 16 (random)", i, len(t))
		}
	}
	names := make([]string, 0, len(c.Streams))
	for name := range c.Streams {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := webhook.CheckID(name); err != nil || name == "" {
			return fmt.Errorf("streams.%q: not a valid stream name", name)
		}
		if platform.IsEndpointStream(name) {
			return fmt.Errorf("streams.%q: names like ep_ and 26 base32 characters are the platform's endpoints' streams; choose another name", name)
		}
		if err := c.Streams[name].check(); err != nil {
			return fmt.Errorf("streams.%s.%w", name, err)
		}
	}
	return nil
}

// fieldErr makes "field: why" errors that check's caller prefixes with
// the stream's path.
func fieldErr(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...))
}

// checkChannel checks what the stream's HTTP channel is built from.
func (s *StreamConfig) checkChannel() error {
	if s.URL == "" {
		return fieldErr("url", "is missing")
	}
	if len(s.Secrets) == 0 {
		return fieldErr("secrets", "is empty; give at least one \"whsec_...\" secret")
	}
	for i, sec := range s.Secrets {
		if _, err := webhook.ParseSecret(sec); err != nil {
			return fieldErr(fmt.Sprintf("secrets[%d]", i), "is not a whsec_ secret") // the error might echo the secret
		}
	}
	if s.RejectStatuses != nil {
		for i, code := range *s.RejectStatuses {
			if err := httpchannel.CheckRejectStatus(code); err != nil {
				return fieldErr(fmt.Sprintf("reject_statuses[%d]", i), "%v", err)
			}
		}
	}
	return nil
}

func (s *StreamConfig) check() error {
	if err := s.checkChannel(); err != nil {
		return err
	}
	p := machine.DefaultConfig()
	// A random seed per process: jitter then differs between hosts (as
	// jitter should), and a producer cannot know the seed of the machine's
	// ID index and choose IDs that collide in it.
	p.Seed = randomSeed()
	switch s.Ordering {
	case "", "strict":
		p.Ordering, p.Window = machine.Strict, 1
		if s.Window > 1 {
			return fieldErr("window", "is %d; strict ordering sends one at a time (use ordering = \"independent\")", s.Window)
		}
	case "independent":
		p.Ordering, p.Window = machine.Independent, 8
		if s.Window != 0 {
			p.Window = s.Window
		}
	default:
		return fieldErr("ordering", "is %q; must be \"strict\" or \"independent\"", s.Ordering)
	}
	setInt := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	setDur := func(dst *time.Duration, v Duration) {
		if v.Duration != 0 {
			*dst = v.Duration
		}
	}
	setInt(&p.MaxAttempts, s.MaxAttempts)
	setDur(&p.MaxAge, s.MaxAge)
	setDur(&p.BaseBackoff, s.BaseBackoff)
	setDur(&p.MaxBackoff, s.MaxBackoff)
	if s.JitterPercent != nil {
		p.JitterPercent = *s.JitterPercent
	}
	setDur(&p.MaxRetryAfter, s.MaxRetryAfter)
	setDur(&p.AttemptTimeout, s.AttemptTimeout)
	setInt(&p.BreakerThreshold, s.BreakerThreshold)
	setDur(&p.ProbeTimeout, s.ProbeTimeout)
	setDur(&p.ProbeBaseInterval, s.ProbeBaseInterval)
	setDur(&p.ProbeMaxInterval, s.ProbeMaxInterval)
	setInt(&p.MaxQueued, s.MaxQueued)
	setInt(&p.MaxPayloadBytes, s.MaxPayloadBytes)
	if err := p.Validate(); err != nil {
		// machine names its field in Go (MaxAttempts); the file says max_attempts.
		return fieldErr(platform.ConfigFieldName(err), "%v", err)
	}
	s.policy = p
	return nil
}

// randomSeed draws a machine seed from crypto/rand.
func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return binary.LittleEndian.Uint64(b[:])
}

// Policy is the stream's delivery policy, defaults filled in.
func (s *StreamConfig) Policy() machine.Config { return s.policy }

// StatusPolicy is what the stream's channel rejects at once; nil means
// httpchannel's default.
func (s *StreamConfig) StatusPolicy() *httpchannel.StatusPolicy {
	if s.RejectStatuses == nil {
		return nil
	}
	return &httpchannel.StatusPolicy{RejectOn: *s.RejectStatuses}
}
