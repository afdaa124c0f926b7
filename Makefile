# Flare switch emulator. `make demo` and `make test` are the two commands a
# fresh clone needs; everything else is one target per step.
GO       ?= go
PKGS     := ./...
FUZZTIME ?= 5s

.PHONY: all build pgo lib python python-test testbed-test test fmt-check vet lint unit race cover fuzz-smoke fuzz mutants bench bench-smoke bench-scaling bench-peers peers peers-deps demo figures soak clean

all: build

# -buildvcs=auto: the binary carries its commit (flare version) even where
# GOFLAGS turns VCS stamping off. go build optimises bin/flare with the
# CPU profile in cmd/flare/default.pgo (profile-guided optimisation: the
# hot calls inlined and devirtualised); the C library and the benchmarks
# take the same profile (PGO).
PGO := cmd/flare/default.pgo
build:
	$(GO) build -buildvcs=auto -o bin/flare ./cmd/flare

# A fresh $(PGO) from the daemon and the ranks of a dense allreduce at 1 KiB
# and 8 KiB packets (tools/pgo-profile.sh); commit it with the change to
# the hot path that made it stale.
pgo: build
	tools/pgo-profile.sh bin/flare $(PGO)

# The C library: bin/libflare.so and its header bin/flare.h (capi/flare.h,
# documented there; cgo's generated libflare.h is only the Go side's).
lib:
	$(GO) build -buildvcs=auto -pgo=$(PGO) -buildmode=c-shared -o bin/libflare.so ./capi
	rm -f bin/libflare.h
	cp capi/flare.h bin/flare.h

# The Python package flare (python/flare, ctypes over libflare) installed
# with its library into a venv that sees Debian's numpy and torch (there
# is no PyPI here: pip installs from the tree, offline).
PY   ?= /usr/bin/python3
VENV ?= .venv
python: lib
	cp bin/libflare.so python/flare/libflare.so
	test -x $(VENV)/bin/python || $(PY) -m venv --system-site-packages $(VENV)
	$(VENV)/bin/python -m pip install -q --no-build-isolation --no-index --no-deps ./python

# The Python tests against a real switch process (python/tests); the torch
# ones need torch and say so when it is missing. Without numpy, pytest or
# venv the whole step says it skipped, and why.
python-test: build
	@if ! $(PY) -c 'import numpy, pytest, venv, ensurepip' 2>/dev/null; then \
	  echo "python-test: SKIPPED: $(PY) lacks numpy, pytest or venv (apt-get install python3-numpy python3-pytest python3-venv python3-pip)"; \
	elif [ "$$($(GO) env CGO_ENABLED)" != 1 ]; then \
	  echo "python-test: SKIPPED: cgo is disabled (go env CGO_ENABLED), and libflare needs it (install gcc)"; \
	else \
	  $(MAKE) --no-print-directory python && $(VENV)/bin/python -m pytest -q -rs python/tests; \
	fi

# vet + lint + unit + race, shuffled, and the Python package's tests: what
# CI runs.
test: fmt-check vet lint unit race python-test

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# vet on a 32-bit platform too: a bound written as an untyped constant
# (math.MaxUint32, 1<<32) against an int does not build there.
vet:
	$(GO) vet $(PKGS)
	GOARCH=386 $(GO) vet $(PKGS)

# staticcheck, pinned, through the module proxy (go.mod is untouched): its
# default checks, unused code (U1000) among them, which vet has not; and
# that every mutant of `make mutants` still aims at code that exists (a
# refactor that moves its text makes it "survive" as stale).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) run $(STATICCHECK) $(PKGS)
	@if command -v python3 >/dev/null; then python3 tools/mutation-check.py --stale; \
	else echo "lint: SKIPPED the mutants' check: no python3"; fi

unit:
	$(GO) test -shuffle=on -count=1 $(PKGS)

race:
	$(GO) test -race -shuffle=on -count=1 $(PKGS)

# Deliberate defects in the aggregation's correctness, each against its
# package's tests: which tests catch each (tools/mutation-check.py,
# docs/RELIABILITY.md).
mutants:
	tools/mutation-check.py

# Statement coverage of each package by its own tests, per function in
# bin/cover.txt (the CLI's end-to-end tests run the binary as processes,
# which this does not count). PGO off: with cmd/flare's default.pgo, `go
# test -cover` of several packages fails to link ("fingerprint mismatch",
# golang/go#80891).
cover:
	mkdir -p bin
	$(GO) test -pgo=off -count=1 -coverprofile=bin/cover.out $(PKGS)
	$(GO) tool cover -func=bin/cover.out > bin/cover.txt
	tail -1 bin/cover.txt

# Each fuzz target briefly (FUZZTIME each); `make fuzz FUZZTIME=30s` for longer.
fuzz-smoke:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for fz in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "fuzz $$pkg $$fz ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$fz$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

fuzz: fuzz-smoke

# Benchmarks: element kernels next to copy(), packets/s through the HPU,
# then the end-to-end table: P = 8, 1 MiB and 16 MiB float32 through the
# switch, the host ring and the UDP echo relay (the ceiling), one process
# per rank, with the ratios; then the Figure 15 analogue on a tree of
# switches (docs/FIGURE15.md): bytes per link and time, in-network vs host.
bench: build
	$(GO) test -pgo=$(PGO) -run '^$$' -bench . -benchtime 1s $(PKGS)
	bin/flare bench --ranks 8 --bytes 1MiB,16MiB
	bin/flare bench --tree 4x4 --bytes 1MiB --sparse --densities 0.002,0.01

bench-smoke: build
	$(GO) test -pgo=$(PGO) -run '^$$' -bench . -benchtime 1x $(PKGS)
	@if [ "$$(nproc)" -ge 2 ]; then tools/bench-scaling.sh 1 20; else echo "bench-scaling: one CPU, nothing to compare"; fi
	@out=$$(tools/bench-ab.py --rounds 2 bin/flare 'bin/flare --busy-poll 0' -- --ranks 2 --bytes 64KiB --packet 1KiB --iters 2 --rounds 1) && \
	  echo "$$out" && echo "$$out" | grep -q 'paired B/A: of fan-out'

# What a second CPU buys the switch's own path (BenchmarkGenPath, one
# reader on one CPU against two on two), in SCALING_ROUNDS alternated
# rounds of SCALING_CALLS calls, each with the cache-line time between the
# CPUs; the medians apart for rounds where they sat near and far.
SCALING_ROUNDS ?= 6
SCALING_CALLS ?= 400
bench-scaling:
	tools/bench-scaling.sh $(SCALING_ROUNDS) $(SCALING_CALLS)

# The peers (peers/, docs/PERFORMANCE.md): MPI_Allreduce of Open MPI over
# loopback TCP and Gloo's ring allreduce over its TCP transport, our own
# small benchmarks built on Debian's packages, one process per rank, run by
# flare bench itself (--peer) in turn with the switch at each packet size,
# the ring and the relays, every round, for the same P and sizes: every
# ratio in the table compares the same spells of a shared machine.
# PEERS_FLAGS adds flare bench flags (--json).
PEERS_P       ?= 8
PEERS_BYTES   ?= 1MiB,16MiB
PEERS_PACKETS ?= 1KiB,8KiB
PEERS_ITERS   ?= 5
PEERS_ROUNDS  ?= 3
PEERS_FLAGS   ?=
# switch-mc: the embedded switch with its results on a multicast group;
# fanout-mc: the fan-out relay sending to one, switch-mc's ceiling
PEERS_PATHS   ?= switch,switch-mc,ring,relay,fanout,fanout-mc
# ob1 and tcp,self: TCP on loopback, no shared memory (vader) and no UCX.
MPIRUN_FLAGS  := --oversubscribe --bind-to none --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo \
                 $(if $(filter 0,$(shell id -u)),--allow-run-as-root)

peers-deps:
	@if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null || ! command -v g++ >/dev/null || \
	    [ ! -e /usr/include/gloo/allreduce.h ]; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends \
	    openmpi-bin libopenmpi-dev libgloo-dev g++; \
	fi

peers: peers-deps
	@mkdir -p bin
	mpicc -O2 -Wall -Wextra -o bin/peers-mpi-allreduce peers/mpi_allreduce.c
	g++ -O2 -Wall -Wextra -std=c++17 -o bin/peers-gloo-ring peers/gloo_ring.cc -lgloo -pthread

bench-peers: build peers
	bin/flare bench --ranks $(PEERS_P) --bytes $(PEERS_BYTES) --packet $(PEERS_PACKETS) --iters $(PEERS_ITERS) --rounds $(PEERS_ROUNDS) --paths $(PEERS_PATHS) \
	  --peer 'mpi-tcp=mpirun -np {ranks} $(MPIRUN_FLAGS) bin/peers-mpi-allreduce --bytes {bytes} --iters {iters} --warmup {warmup}' \
	  --peer 'gloo-ring=bin/peers-gloo-ring --ranks {ranks} --bytes {bytes} --iters {iters} --warmup {warmup}' $(PEERS_FLAGS)

demo:
	$(GO) run ./cmd/flare demo

# The emulated cluster (testbed/, docs/FIGURE15.md): as root with iproute2,
# the link-bound check (4 hosts at 200 Mbit/s) and the teardown checks
# alone (make test runs them too, and skips them, saying why, elsewhere).
testbed-test:
	$(GO) test ./cmd/flare ./testbed -run 'Testbed|TestParseRate|TestSweepRates|TestValidate|TestIdeal|TestTBF' -count=1 -v

# Five minutes of mixed jobs under 1% kernel-level loss (root: a network
# namespace with nftables); checks the daemon's memory and goroutines stay
# flat. Not part of make test. SOAK=30s for a shorter run.
SOAK ?= 5m
soak:
	$(GO) test ./cmd/flare -run '^TestSoak$$' -soak $(SOAK) -timeout 30m -count=1 -v

# The model's figures in docs/figures (docs/MODEL.md): bandwidth and memory
# against size for both presets (Figure 10 and 11 analogues) and elements
# per second per dtype (Figure 11, right).
figures:
	$(GO) test ./models -run '^TestFigures$$' -figures -count=1

clean:
	rm -rf bin $(VENV) python/build python/flare/libflare.so python/*.egg-info
