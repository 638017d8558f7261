# Every target is plain `go` underneath; make is a convenience, not a
# requirement. The README's two set-up commands need only Go.
GO ?= go

.PHONY: all test race lint bench results plant simrun cross sweep longsweep

all: lint test

# The test command the README gives and .ci/run calls.
test:
	$(GO) test ./...

race:
	$(GO) test -race ./...

lint:
	@fmt=$$(gofmt -l .); if [ -n "$$fmt" ]; then echo "gofmt would change:"; echo "$$fmt"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

# Benchmarks: compare runs with `go tool benchstat old.txt new.txt`.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./... | tee bench.txt

# Regenerate RESULTS.md from the code (a test holds the file to it). It
# includes the planted-bug catch matrix, so it needs a plant build.
results:
	$(GO) run -tags plant ./cmd/simrun results > RESULTS.md

# The tests that switch planted bugs on (the catch matrix among them) exist
# only in a build with the tag plant; .ci/harness runs them in CI.
plant:
	$(GO) test -tags plant ./...

simrun:
	$(GO) build -o simrun ./cmd/simrun

# Determinism across architectures: the golden trace hashes and the
# machine's test vectors must hold on 32-bit (386, natively or under
# qemu-i386) and on WebAssembly (js/wasm, run by Node). See .ci/cross.
cross:
	bash .ci/cross

# A swarm sweep of 10,000 seeds.
sweep:
	$(GO) run ./cmd/simrun sweep -seeds 10000

# A sweep of 1,000,000 swarm seeds from a range drawn at random (it prints
# the range): run it before resolving a change to the worker, the
# simulator or the checker. SEEDS and FROM override; see .ci/longsweep.
longsweep:
	bash .ci/longsweep
