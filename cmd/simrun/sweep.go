package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/scenarios"
	"github.com/courierlab/courier/sim"
	"github.com/courierlab/courier/sim/sqlsim"
)

// maxSweepSeeds bounds one sweep; split a larger hunt with -from.
const maxSweepSeeds = 10_000_000

// printFailures is how many failing seeds a sweep prints in full.
const printFailures = 10

func sweepCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simrun sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seeds := fs.Int("seeds", 0, "how many swarm seeds to run (required)")
	fromText := fs.String("from", "1", "first seed")
	parallel := fs.Int("parallel", runtime.GOMAXPROCS(0), "goroutines; the results do not depend on it")
	dir := fs.String("failures", "sweep-failures", "directory for the replay files of failing seeds")
	storeName := fs.String("store", "memstore", "the store the workers share: memstore, or sqlite (a real SQLite file per seed)")
	storeDir := fs.String("store-dir", "", "with -store sqlite: where the seeds' databases go (default the system's temp directory; a tmpfs such as /dev/shm is faster)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "simrun sweep: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	if *seeds < 1 || *seeds > maxSweepSeeds {
		fmt.Fprintf(stderr, "simrun sweep: -seeds is %d; want 1 to %d\n", *seeds, maxSweepSeeds)
		return exitUsage
	}
	if *parallel < 1 || *parallel > 1024 {
		fmt.Fprintf(stderr, "simrun sweep: -parallel is %d; want 1 to 1024\n", *parallel)
		return exitUsage
	}
	from, err := parseSeed(*fromText)
	if err != nil {
		fmt.Fprintln(stderr, "simrun sweep: -from:", err)
		return exitUsage
	}
	if from+uint64(*seeds-1) < from {
		fmt.Fprintf(stderr, "simrun sweep: -from %d with -seeds %d runs past the largest seed\n", from, *seeds)
		return exitUsage
	}

	opt, err := storeOption(*storeName, *storeDir)
	if err != nil {
		fmt.Fprintln(stderr, "simrun sweep: -store:", err)
		return exitUsage
	}
	if err := checkFailuresDir(*dir); err != nil {
		fmt.Fprintln(stderr, "simrun sweep: -failures:", err)
		return exitOutput
	}
	bug := plant.Active()
	if bug != "" {
		fmt.Fprintf(stdout, "PLANTED BUG ACTIVE: %s (a deliberately broken build; expect %s to catch it)\n", bug, plant.Expected[bug])
	}
	fmt.Fprintf(stdout, "sweep: swarm seeds %d..%d on %d goroutines, store %s\n", from, from+uint64(*seeds-1), *parallel, *storeName)

	progress := progressPrinter(stderr, *seeds)
	start := time.Now()
	// Results stream through in seed order and are dropped once counted:
	// the sweep keeps the totals and nothing per seed, so -seeds 10000000
	// runs in the memory of SweepWindow results.
	code := exitOK
	var events, failed, violations, done int
	scenarios.SweepEachWith(from, *seeds, *parallel, opt, func(r scenarios.SeedResult) {
		done++
		if progress != nil {
			progress(done)
		}
		events += r.Stats.Accepted
		if !r.Failed() {
			return
		}
		failed++
		violations += len(r.Violations)
		code = worse(code, verdict(r.Violations, nil))
		if failed > printFailures {
			return
		}
		path, err := writeReplay(*dir, r, bug)
		if err != nil {
			fmt.Fprintf(stderr, "simrun sweep: writing the replay file of seed %d: %v\n", r.Seed, err)
			code = worse(code, exitOutput)
			path = "(not written)"
		}
		reportFailure(stdout, r, path, bug)
	})
	elapsed := time.Since(start)
	if progress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if failed > printFailures {
		fmt.Fprintf(stdout, "... and %d more failing seeds (replay files written for the first %d)\n", failed-printFailures, printFailures)
	}
	secs := elapsed.Seconds()
	fmt.Fprintf(stdout, "summary: %d seeds in %.1fs (%.0f seeds/s), %d events simulated (%.0f events/s), %d violations in %d seeds\n",
		*seeds, secs, float64(*seeds)/secs, events, float64(events)/secs, violations, failed)
	return code
}

// storeOption is the runs' options for the store named name: memstore
// (the default, the zero Options) or sqlite, a real SQLite database per
// seed under dir.
func storeOption(name, dir string) (sim.Options, error) {
	switch name {
	case "memstore", "":
		if dir != "" {
			return sim.Options{}, errors.New("-store-dir applies to -store sqlite only")
		}
		return sim.Options{}, nil
	case "sqlite":
		return sim.Options{Store: sqlsim.New(dir)}, nil
	}
	return sim.Options{}, fmt.Errorf("%q: want memstore or sqlite", name)
}

// progressPrinter returns a progress callback that redraws one line on w,
// or nil when w is not a terminal (CI logs want no carriage returns).
func progressPrinter(w io.Writer, total int) func(int) {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	step := max(total/200, 1)
	return func(done int) {
		if done%step == 0 || done == total {
			fmt.Fprintf(w, "\r%d/%d seeds", done, total)
		}
	}
}

func reportFailure(w io.Writer, r scenarios.SeedResult, path string, bug plant.Bug) {
	kind := "liveness"
	if r.Safety() {
		kind = "safety"
	}
	fmt.Fprintf(w, "FAIL seed %d (%s)\n  world: %s\n", r.Seed, kind, r.World.Describe())
	for i, v := range r.Violations {
		if i == 5 {
			fmt.Fprintf(w, "  ... %d more violations\n", len(r.Violations)-5)
			break
		}
		fmt.Fprintf(w, "  VIOLATION %s\n", v)
	}
	fmt.Fprintf(w, "  replay file: %s\n", path)
	fmt.Fprintf(w, "  reproduce: %s\n", reproduceCommand(bug, "replay "+path+" -trace"))
	fmt.Fprintf(w, "  or:        %s\n", reproduceCommand(bug, fmt.Sprintf("sweep -from %d -seeds 1", r.Seed)))
}

// reproduceCommand is the command that reruns simrun args in the same
// build: with the planted bug linked in when one is active.
func reproduceCommand(bug plant.Bug, args string) string {
	if bug == "" {
		return "go run ./cmd/simrun " + args
	}
	return fmt.Sprintf("go run -tags plant -ldflags=-X=github.com/courierlab/courier/internal/plant.build=%s ./cmd/simrun %s", bug, args)
}

// ReplayFile is what a failing sweep seed leaves behind: enough to replay
// the run exactly, and what it looked like when it failed.
type ReplayFile struct {
	Seed       uint64    `json:"seed"`
	Bug        plant.Bug `json:"bug,omitempty"`
	Hash       string    `json:"hash"`
	World      string    `json:"world"`
	Violations []string  `json:"violations"`
	// Spec is the whole world, so that the file replays the same run
	// even after Swarm changes how it draws a seed's world. A file
	// without it (written before it existed) replays Swarm(Seed).
	Spec *sim.World `json:"spec,omitempty"`
}

// checkFailuresDir fails early for a -failures path that cannot be a
// directory: an existing file, or a parent that does not exist. The
// directory itself is made only when a seed fails.
func checkFailuresDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("%s exists and is not a directory", dir)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	parent := filepath.Dir(dir)
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		return fmt.Errorf("cannot make %s: %s is not a directory", dir, parent)
	}
	return nil
}

func writeReplay(dir string, r scenarios.SeedResult, bug plant.Bug) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f := ReplayFile{Seed: r.Seed, Bug: bug, Hash: r.Hash, World: r.World.Describe(), Spec: &r.World}
	for _, v := range r.Violations {
		f.Violations = append(f.Violations, v.String())
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "seed-"+strconv.FormatUint(r.Seed, 10)+".json")
	return path, os.WriteFile(path, append(data, '\n'), 0o644)
}

func replayCommand(args []string, stdout, stderr io.Writer) (code int) {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "simrun replay: a replay file is required: simrun replay FILE [-trace] [-html FILE]")
		return exitUsage
	}
	path := args[0]
	fs := flag.NewFlagSet("simrun replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	trace := fs.Bool("trace", false, "print the whole trace before the summary")
	html := fs.String("html", "", "write a timeline of the run to this HTML file")
	if err := fs.Parse(args[1:]); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "simrun replay: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(stderr, "simrun replay:", err)
		return exitUsage
	}
	f, err := parseReplay(data)
	if err != nil {
		fmt.Fprintf(stderr, "simrun replay: %s is not a replay file: %v\n", path, err)
		return exitUsage
	}
	restore, err := switchBug(f.Bug)
	if err != nil {
		fmt.Fprintf(stderr, "simrun replay: %s: %v\n", path, err)
		return exitUsage
	}
	defer restore()
	if f.Bug != "" {
		fmt.Fprintf(stdout, "PLANTED BUG ACTIVE (from the replay file): %s\n", f.Bug)
	}
	page, err := openOutput(*html)
	if err != nil {
		fmt.Fprintln(stderr, "simrun replay:", err)
		return exitOutput
	}
	r, full := f.run(sim.Options{Trace: *trace, Logs: page != nil})
	if *trace {
		for _, line := range full.Trace {
			fmt.Fprintln(stdout, line)
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stdout, "swarm seed %d\nworld: %s\n", f.Seed, r.World.Describe())
	printStats(stdout, r.Stats, r.Hash)
	printViolations(stdout, r.Violations)
	code = verdict(r.Violations, nil)
	if diffs := replayDiffs(path, f, r); len(diffs) > 0 {
		fmt.Fprintf(stdout, "NOT the same run: the code changed since %s was written\n", path)
		for _, d := range diffs {
			fmt.Fprintf(stdout, "  replay mismatch: %s\n", d)
		}
		code = worse(code, exitMismatch)
	} else {
		fmt.Fprintf(stdout, "replayed exactly: trace hash %s matches the file\n", r.Hash)
	}
	if page != nil {
		code = worse(code, writeTimeline(page, fmt.Sprintf("swarm seed %d", f.Seed), full, stdout, stderr))
	}
	return code
}

// run runs the file's world: its Spec if it has one, else its seed's
// swarm world.
func (f ReplayFile) run(opt sim.Options) (scenarios.SeedResult, sim.Result) {
	if f.Spec != nil {
		return scenarios.RunWorld(f.Seed, *f.Spec, opt)
	}
	return scenarios.RunSwarmSeed(f.Seed, opt)
}

// parseReplay decodes and validates a replay file: a missing seed is an
// error, never seed 0, and a world it keeps must be valid.
func parseReplay(data []byte) (ReplayFile, error) {
	var raw struct {
		ReplayFile
		Seed *uint64 `json:"seed"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return ReplayFile{}, err
	}
	f := raw.ReplayFile
	if raw.Seed == nil {
		return ReplayFile{}, errors.New("it has no seed (a replay file names the swarm seed it replays; a missing seed is not seed 0)")
	}
	f.Seed = *raw.Seed
	if f.Spec != nil {
		if err := f.Spec.Validate(); err != nil {
			return ReplayFile{}, fmt.Errorf("its spec: %w", err)
		}
	}
	return f, nil
}

// replayDiffs lists what differs between the replay file and the run it
// names: the seed its name gives (seed-N.json), the world, the trace hash.
func replayDiffs(path string, f ReplayFile, r scenarios.SeedResult) []string {
	var out []string
	var named uint64
	if _, err := fmt.Sscanf(filepath.Base(path), "seed-%d.json", &named); err == nil && named != f.Seed {
		out = append(out, fmt.Sprintf("seed: the file is named for seed %d but holds seed %d", named, f.Seed))
	}
	if w := r.World.Describe(); f.World != "" && w != f.World {
		out = append(out, fmt.Sprintf("world: the file has\n    %s\n  this build draws\n    %s", f.World, w))
	}
	if r.Hash != f.Hash {
		out = append(out, fmt.Sprintf("hash: trace hash %s, the file has %s", r.Hash, f.Hash))
	}
	return out
}

func printStats(w io.Writer, s sim.Stats, hash string) {
	if s.LeaseGrants > 0 {
		fmt.Fprintf(w, "cluster:  %d leases granted, %d stale-lease calls refused, %d sends by fenced-off owners\n",
			s.LeaseGrants, s.FencedWrites, s.ZombieSends)
	}
	fmt.Fprintf(w, "events:   %d accepted, %d applied, %d dead, %d lost, %d applied twice\n",
		s.Accepted, s.Applied, s.Dead, s.Lost, s.AppliedTwice)
	fmt.Fprintf(w, "receiver: %d duplicates discarded, %d fenced\n", s.Duplicates, s.Fenced)
	fmt.Fprintf(w, "sender:   %d offers, %d sends (most for one event %d), %d probes, %d circuit openings, %d restarts (%d mid-batch)\n",
		s.Offers, s.Sends, s.MaxSends, s.Probes, s.CircuitOpenings, s.Restarts, s.Crashes)
	if s.Batches > 0 {
		fmt.Fprintf(w, "driver:   %d flushes of several replies (%d replies, at most %d in one; %d spanning several streams)\n",
			s.Batches, s.BatchedReplies, s.MaxBatch, s.MixedBatches)
	}
	fmt.Fprintf(w, "time:     drained in %v, stopped at %v (virtual)\n", s.Drain, s.End)
	fmt.Fprintf(w, "trace:    hash %s\n", hash)
}

func printViolations(w io.Writer, vs []invariants.Violation) {
	if len(vs) == 0 {
		fmt.Fprintf(w, "invariants: all %d held\n", len(invariants.Names))
		return
	}
	fmt.Fprintf(w, "invariants: %d violations\n", len(vs))
	for _, v := range vs {
		fmt.Fprintf(w, "  VIOLATION %s\n", v)
	}
}

// severity orders the exit codes from the least serious: when several
// apply, the worst wins. An output error or a replay mismatch never hides
// a verdict of the runs themselves.
var severity = []int{exitOK, exitExpectation, exitOutput, exitMismatch, exitLiveness, exitSafety, exitCrash}

// worse returns the more serious of two exit codes.
func worse(a, b int) int {
	if slices.Index(severity, b) > slices.Index(severity, a) {
		return b
	}
	return a
}
