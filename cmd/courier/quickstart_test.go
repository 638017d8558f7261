// This file proves the README's quickstart as a user runs it. The four
// lines and the outputs shown after them are read from README.md; the
// config they name (examples/courier.toml) must load and agree with them
// (the token, the secret, the stream, the receiver's and the API's default
// addresses); then the built binary runs them on free ports: courier
// receive with the README's secret, courier serve with the example config
// pointed at that receiver, the README's publish and the README's query.
// Each answer must be the one the README shows, and the receiver must
// print the line the README shows.
package main

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// quickstart is what the README's quickstart section shows.
type quickstart struct {
	secret, config           string // courier receive -secret, courier serve -config
	header                   string // the curl lines' -H
	publishBody, publishURL  string
	queryURL                 string
	published, applied, seen string // the three outputs shown, in order
}

var (
	qsReceive = regexp.MustCompile(`^go run \./cmd/courier receive -secret (\S+)`)
	qsServe   = regexp.MustCompile(`^go run \./cmd/courier serve -config (\S+)`)
	qsPublish = regexp.MustCompile(`^curl (?:-s )?-H '([^']+)' --json '([^']+)' (\S+)$`)
	qsQuery   = regexp.MustCompile(`^curl (?:-s )?-H '([^']+)' (\S+)$`)
)

// readQuickstart parses README.md's quickstart: its sh block of four
// lines, then the first line of each of the next three code blocks.
func readQuickstart(t *testing.T) quickstart {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Quickstart")
	if !ok {
		t.Fatal("README.md has no \"## Quickstart\" section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var blocks [][]string
	for i, part := range strings.Split(sec, "```") {
		if i%2 == 1 { // inside a fence: the first line is the language
			lines := strings.Split(strings.TrimSpace(part), "\n")
			blocks = append(blocks, lines)
		}
	}
	if len(blocks) < 4 || blocks[0][0] != "sh" || len(blocks[0]) != 5 {
		t.Fatalf("README quickstart: want a sh block of 4 lines then 3 output blocks, got %q", blocks)
	}
	cmds := blocks[0][1:]
	m := [][]string{
		qsReceive.FindStringSubmatch(cmds[0]), qsServe.FindStringSubmatch(cmds[1]),
		qsPublish.FindStringSubmatch(cmds[2]), qsQuery.FindStringSubmatch(cmds[3]),
	}
	for i := range m {
		if m[i] == nil {
			t.Fatalf("README quickstart line %d is not of the expected form: %s", i+1, cmds[i])
		}
	}
	if m[2][1] != m[3][1] {
		t.Fatalf("README quickstart: the two curl lines send different headers: %q, %q", m[2][1], m[3][1])
	}
	return quickstart{
		secret: m[0][1], config: m[1][1], header: m[2][1],
		publishBody: m[2][2], publishURL: m[2][3], queryURL: m[3][2],
		published: blocks[1][0], applied: blocks[2][0], seen: blocks[3][0],
	}
}

// receiveDefaultListen asks the binary for courier receive's default
// -listen, so that the example config is held to the code, not to a copy.
func receiveDefaultListen(t *testing.T, bin string) string {
	t.Helper()
	out, _ := exec.Command(bin, "receive", "-h").CombinedOutput() // -h exits 0 or 2 by flag's rules
	m := regexp.MustCompile(`-listen string\s+address to listen on \(default "([^"]+)"\)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("courier receive -h does not give -listen's default:\n%s", out)
	}
	return string(m[1])
}

func TestProcessREADMEQuickstart(t *testing.T) {
	qs := readQuickstart(t)
	bin := buildBinary(t)

	// The example config agrees with the lines that use it.
	cfgPath := filepath.Join("../..", qs.config)
	cfg, err := LoadConfig(cfgPath)
	if err != nil {
		t.Fatalf("%s: %v", qs.config, err)
	}
	pub, err := url.Parse(qs.publishURL)
	if err != nil {
		t.Fatal(err)
	}
	stream := strings.TrimSuffix(strings.TrimPrefix(pub.Path, "/v1/streams/"), "/events")
	sc, ok := cfg.Streams[stream]
	switch {
	case !ok:
		t.Fatalf("%s declares no stream %q, which the README publishes to", qs.config, stream)
	case !slices.Contains(sc.Secrets, qs.secret):
		t.Errorf("%s: stream %s does not sign with the README's receiver secret", qs.config, stream)
	case !slices.Contains(cfg.APITokens, strings.TrimPrefix(qs.header, "Authorization: Bearer ")):
		t.Errorf("%s: api_tokens do not hold the README's token (header %q)", qs.config, qs.header)
	case pub.Host != cfg.Listen:
		t.Errorf("README publishes to %s, but serve listens on %s", pub.Host, cfg.Listen)
	case !cfg.AllowLoopback:
		t.Errorf("%s: allow_loopback is off, so courier may not send to the receiver on loopback", qs.config)
	}
	def := receiveDefaultListen(t, bin)
	if u, err := url.Parse(sc.URL); err != nil || u.Host != def {
		t.Fatalf("%s: stream %s goes to %s, but courier receive listens on %s by default", qs.config, stream, sc.URL, def)
	}

	// Run it, on free ports: the config's receiver address is the one
	// startReceive got, and the API's is the one startProc got.
	_, addr, recvOut, _ := startReceive(t, bin, qs.secret)
	text := mustRead(t, cfgPath)
	if strings.Count(text, def) != 1 {
		t.Fatalf("%s: want the receiver's address %s once, to point it at the test's receiver", qs.config, def)
	}
	runCfg := filepath.Join(t.TempDir(), "courier.toml")
	if err := os.WriteFile(runCfg, []byte(strings.Replace(text, def, addr, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, bin, runCfg, "-db", filepath.Join(t.TempDir(), "courier.db"))
	apiURL := func(readme string) string { return p.base + strings.TrimPrefix(readme, "http://"+cfg.Listen) }

	got := qsDo(t, "POST", apiURL(qs.publishURL), qs.header, qs.publishBody)
	if got != qs.published {
		t.Errorf("publish answered\n%s\nthe README shows\n%s", got, qs.published)
	}
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got = qsDo(t, "GET", apiURL(qs.queryURL), qs.header, "")
		if strings.Contains(got, `"state":"delivered"`) || time.Now().After(end) {
			break
		}
	}
	if !matchesElided(got, qs.seen) {
		t.Errorf("the query answered\n%s\nwhich is not what the README shows (\"...\" elides)\n%s", got, qs.seen)
	}
	if out := mustRead(t, recvOut); !slices.Contains(strings.Split(out, "\n"), qs.applied) {
		t.Errorf("the receiver printed\n%s\nnot the README's line\n%s", out, qs.applied)
	}
}

// qsDo makes one of the README's curl requests and returns the body,
// trimmed, as curl would show it.
func qsDo(t *testing.T, method, u, header, body string) string {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	name, value, _ := strings.Cut(header, ": ")
	req.Header.Set(name, value)
	if body != "" { // curl --json sends these two with its body
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// matchesElided reports whether got is shown, where each "..." in shown
// stands for any text: the pieces between them appear in got, in order,
// the first at its start and the last at its end.
func matchesElided(got, shown string) bool {
	pieces := strings.Split(shown, "...")
	if len(pieces) == 1 {
		return got == shown
	}
	first, last := pieces[0], pieces[len(pieces)-1]
	if !strings.HasPrefix(got, first) || !strings.HasSuffix(got, last) || len(got) < len(first)+len(last) {
		return false
	}
	rest := got[len(first) : len(got)-len(last)]
	for _, p := range pieces[1 : len(pieces)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}
