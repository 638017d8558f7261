// This file proves the README's platform walkthrough as a user runs it:
// its six lines, read from README.md, run in bash (with curl and jq)
// against the built binary's serve and receive on free ports, the
// example config. The receiver must print the line the README shows;
// the message must show its delivery enqueued, then delivered; and the
// replay of a delivered delivery must answer 409, as the README says;
// and the message's attempts must list the delivered attempt.
package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readWalkthrough returns the six lines of the README's platform
// walkthrough and the receiver's line shown after them.
func readWalkthrough(t *testing.T) (lines []string, applied string) {
	t.Helper()
	_, sec, ok := strings.Cut(mustRead(t, "../../README.md"), "\n## Applications and endpoints")
	if !ok {
		t.Fatal(`README.md has no "## Applications and endpoints" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var blocks [][]string
	for i, part := range strings.Split(sec, "```") {
		if i%2 == 1 {
			blocks = append(blocks, strings.Split(strings.TrimSpace(part), "\n"))
		}
	}
	if len(blocks) < 2 || blocks[0][0] != "sh" || len(blocks[0]) != 7 {
		t.Fatalf("README walkthrough: want a sh block of 6 lines then the receiver's line, got %q", blocks)
	}
	return blocks[0][1:], blocks[1][0]
}

// requireTools skips without bash, curl or jq, unless
// COURIER_TEST_README_TOOLS is set (CI sets it, having installed them).
func requireTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("COURIER_TEST_README_TOOLS") != "" {
				t.Fatalf("%s is missing, and COURIER_TEST_README_TOOLS says the README's tools are installed", tool)
			}
			t.Skipf("the README's walkthrough needs %s, which is not installed", tool)
		}
	}
}

func TestProcessREADMEWalkthrough(t *testing.T) {
	requireTools(t)
	lines, applied := readWalkthrough(t)
	qs := readQuickstart(t)
	bin := buildBinary(t)
	cfgPath := filepath.Join("../..", qs.config)
	cfg, err := LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	_, addr, recvOut, _ := startReceive(t, bin, qs.secret)
	def := receiveDefaultListen(t, bin)
	runCfg := filepath.Join(t.TempDir(), "courier.toml")
	if err := os.WriteFile(runCfg, []byte(strings.Replace(mustRead(t, cfgPath), def, addr, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, bin, runCfg, "-db", filepath.Join(t.TempDir(), "courier.db"))
	// The README's addresses become the test's.
	script := strings.NewReplacer("http://"+cfg.Listen, p.base, "http://"+def, "http://"+addr).Replace(strings.Join(lines, "\n"))
	run := func(body string) string {
		t.Helper()
		out, err := exec.Command("bash", "-e", "-o", "pipefail", "-c", body).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s\n%s", err, body, out)
		}
		return strings.TrimSpace(string(out))
	}
	sl := strings.Split(script, "\n")
	ids := strings.Fields(run(strings.Join(sl[:3], "\n") + "\necho \"$APP $EP $MSG\""))
	if len(ids) != 3 || !strings.HasPrefix(ids[0], "app_") || !strings.HasPrefix(ids[1], "ep_") || !strings.HasPrefix(ids[2], "msg_") {
		t.Fatalf("the first three lines gave the IDs %q; want an app_, an ep_ and a msg_", ids)
	}
	env := "APP=" + ids[0] + "\nEP=" + ids[1] + "\nMSG=" + ids[2] + "\n"
	var shown string
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		shown = run(env + sl[3])
		if strings.Contains(shown, `"state":"delivered"`) || time.Now().After(end) {
			break
		}
	}
	if !strings.Contains(shown, `"fanout":"enqueued"`) || !strings.Contains(shown, `"state":"delivered"`) {
		t.Errorf("the fourth line showed\n%s\nnot the delivery enqueued and delivered", shown)
	}
	if got := run(env + sl[4] + " -o /dev/null -w '%{http_code}'"); got != "409" {
		t.Errorf("replaying the delivered delivery answered %s; the README says 409", got)
	}
	// The attempt log is written off the delivery path: it may lag a little.
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		shown = run(env + sl[5])
		if strings.Contains(shown, `"outcome":"delivered"`) || time.Now().After(end) {
			break
		}
	}
	if !strings.Contains(shown, `"outcome":"delivered"`) || !strings.Contains(shown, `"delivery_id":"`+ids[2]+"."+ids[1]+`"`) {
		t.Errorf("the sixth line showed\n%s\nnot the delivered attempt of %s.%s", shown, ids[2], ids[1])
	}
	found := false
	for _, line := range strings.Split(mustRead(t, recvOut), "\n") {
		found = found || matchesElided(line, applied) && strings.Contains(line, ids[2]+"."+ids[1])
	}
	if !found {
		t.Errorf("the receiver printed\n%s\nno line like the README's\n%s", mustRead(t, recvOut), applied)
	}
}
