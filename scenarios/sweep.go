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

// Safety reports whether a violation other than liveness and
// availability (lease-kept) was found.
func (r SeedResult) Safety() bool {
	return slices.ContainsFunc(r.Violations, func(v invariants.Violation) bool {
		return v.Invariant != invariants.Liveness && v.Invariant != invariants.LeaseKept
	})
}

// RunSwarmSeed draws the world of seed and runs it, turning a panic into
// a Crash violation so that one broken run cannot take a sweep down. The
// full result is zero if the run crashed.
func RunSwarmSeed(seed uint64, opt sim.Options) (res SeedResult, full sim.Result) {
	return RunWorld(seed, Swarm(seed), opt)
}

// RunWorld runs world w under seed as RunSwarmSeed runs a drawn one: a
// replay file that keeps its whole world replays through it the same run
// even after Swarm changes how it draws worlds.
func RunWorld(seed uint64, w sim.World, opt sim.Options) (res SeedResult, full sim.Result) {
	res = SeedResult{Seed: seed, World: w}
	defer func() {
		if p := recover(); p != nil {
			res.Violations = append(res.Violations, invariants.Violation{Invariant: Crash, Step: -1, Detail: fmt.Sprint(p)})
		}
	}()
	full, err := sim.Run(w, seed, opt)
	if err != nil {
		// Swarm draws only valid worlds, and a replay checks its world
		// first: an invalid one here is a bug in Swarm (or a store that
		// could not be made, which is the harness's).
		panic(fmt.Sprintf("seed %d: %v", seed, err))
	}
	res.Stats, res.Hash, res.Violations = full.Stats, full.Hash, full.Violations
	return res, full
}

// Sweep runs the swarm seeds [from, from+n) on up to parallel goroutines
// (0: one per CPU) and returns one result per seed, in seed order: the
// results do not depend on parallel. progress, if not nil, is called after
// each seed with the number done. It holds every result; a long hunt
// should use SweepEach, which holds only a few.
func Sweep(from uint64, n, parallel int, progress func(done int)) []SeedResult {
	out := make([]SeedResult, 0, n)
	SweepEach(from, n, parallel, func(r SeedResult) {
		out = append(out, r)
		if progress != nil {
			progress(len(out))
		}
	})
	return out
}

// SweepWindow is how many seeds SweepEach runs ahead of the one it hands
// out next, for a given parallelism: the most results it holds at once.
func SweepWindow(parallel int) int { return 4 * parallel }

// SweepEach runs the swarm seeds [from, from+n) on up to parallel
// goroutines (0: one per CPU) and hands each result to fn, in seed order,
// on the calling goroutine: the results do not depend on parallel. It
// holds at most SweepWindow(parallel) results at once, whatever n is, so
// its memory does not grow with the number of seeds; it returns the most
// it held. This is the one place outside cmd/ that starts goroutines: it
// fans independent, single-threaded runs out over cores and shares
// nothing between them but their results.
func SweepEach(from uint64, n, parallel int, fn func(SeedResult)) (held int) {
	return SweepEachWith(from, n, parallel, sim.Options{}, fn)
}

// SweepEachWith is SweepEach with every run's options: opt.Store runs
// the seeds on another store, such as SQLite (package sim/sqlsim).
func SweepEachWith(from uint64, n, parallel int, opt sim.Options, fn func(SeedResult)) (held int) {
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	type slot struct {
		i int
		r SeedResult
	}
	window := SweepWindow(parallel)
	jobs := make(chan int)
	results := make(chan slot)
	var wg sync.WaitGroup
	for range min(parallel, max(n, 1)) {
		wg.Go(func() {
			for i := range jobs {
				r, _ := RunSwarmSeed(from+uint64(i), opt)
				results <- slot{i, r}
			}
		})
	}
	waiting := map[int]SeedResult{} // finished, not yet handed out
	next, done := 0, 0              // next seed to start, next to hand out
	receive := func(s slot) {
		waiting[s.i] = s.r
		held = max(held, next-done)
		for r, ok := waiting[done]; ok; r, ok = waiting[done] {
			delete(waiting, done)
			done++
			fn(r)
		}
	}
	for done < n {
		if next < n && next-done < window {
			select {
			case jobs <- next:
				next++
			case s := <-results:
				receive(s)
			}
			continue
		}
		receive(<-results)
	}
	close(jobs)
	wg.Wait()
	return held
}
