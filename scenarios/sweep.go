package scenarios

import (
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/sim"
)

// Crash is the pseudo-invariant a sweep reports when a run panicked: a
// broken internal invariant of the machine or the simulator.
const Crash = "crash"

// SeedResult is the outcome of one swarm seed.
type SeedResult struct {
	Seed       uint64
	World      sim.World
	Stats      sim.Stats
	Hash       string
	Violations []invariants.Violation // Crash included
}

// Failed reports whether any invariant was violated or the run crashed.
func (r SeedResult) Failed() bool { return len(r.Violations) > 0 }

// Safety reports whether a violation other than liveness was found.
func (r SeedResult) Safety() bool {
	return slices.ContainsFunc(r.Violations, func(v invariants.Violation) bool { return v.Invariant != invariants.Liveness })
}

// RunSwarmSeed draws the world of seed and runs it, turning a panic into
// a Crash violation so that one broken run cannot take a sweep down. The
// full result is zero if the run crashed.
func RunSwarmSeed(seed uint64, opt sim.Options) (res SeedResult, full sim.Result) {
	w := Swarm(seed)
	res = SeedResult{Seed: seed, World: w}
	defer func() {
		if p := recover(); p != nil {
			res.Violations = append(res.Violations, invariants.Violation{Invariant: Crash, Step: -1, Detail: fmt.Sprint(p)})
		}
	}()
	full, err := sim.Run(w, seed, opt)
	if err != nil {
		// Swarm draws only valid worlds; an invalid one is a bug in Swarm.
		panic(fmt.Sprintf("swarm seed %d drew an invalid world: %v", seed, err))
	}
	res.Stats, res.Hash, res.Violations = full.Stats, full.Hash, full.Violations
	return res, full
}

// Sweep runs the swarm seeds [from, from+n) on up to parallel goroutines
// (0: one per CPU) and returns one result per seed, in seed order: the
// results do not depend on parallel. progress, if not nil, is called after
// each seed with the number done, never by two goroutines at once. This is the one place outside cmd/ that starts goroutines: it
// fans independent, single-threaded runs out over cores and shares nothing
// between them but the result slots.
func Sweep(from uint64, n, parallel int, progress func(done int)) []SeedResult {
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	out := make([]SeedResult, n)
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range min(parallel, max(n, 1)) {
		wg.Go(func() {
			for i := range next {
				out[i], _ = RunSwarmSeed(from+uint64(i), sim.Options{})
				if progress != nil {
					mu.Lock()
					done++
					progress(done)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
