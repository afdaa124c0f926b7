#!/usr/bin/env bash
# Collects the CPU profile that `go build` uses to optimise bin/flare
# (cmd/flare/default.pgo, profile-guided optimisation): the hot paths of a
# dense allreduce, measured as they run in production. A daemon
# (GOMAXPROCS=1, as flare bench runs it) serves P = 8 rank processes of
# `flare allreduce`, 16 MiB float32 sum, with unicast and multicast
# results, at 1 KiB and at 8 KiB packets; every process writes its CPU
# profile, and the daemon's and the ranks' are merged into one. Run it
# after a change to a hot path (make pgo): a profile from older code
# still applies to the functions that kept their names, and go build
# ignores what no longer matches.
#
# usage: tools/pgo-profile.sh [FLARE_BINARY [OUT]]
# PGO_ITERS (30 calls a configuration), PGO_BYTES (16MiB) and PGO_PORT
# (the daemon's data port; 0, the default, a free one the kernel picks)
# change the run.
set -euo pipefail
bin=${1:-bin/flare}
out=${2:-cmd/flare/default.pgo}
iters=${PGO_ITERS:-30}
bytes=${PGO_BYTES:-16MiB}
port=${PGO_PORT:-0}
dir=$(mktemp -d)
sw=
trap '[ -z "$sw" ] || kill "$sw" 2>/dev/null || true; rm -rf "$dir"' EXIT

# started LOG: waits until the daemon whose log is LOG says where it
# listens, and prints its data address; fails, with the log, if the
# daemon exits first or says nothing for 30 s.
started() {
	local i addr
	for ((i = 0; i < 300; i++)); do
		addr=$(sed -n 's/.*msg="switch listening" data=\([^ ]*\).*/\1/p' "$1")
		if [ -n "$addr" ]; then
			echo "$addr"
			return
		fi
		if ! kill -0 "$sw" 2>/dev/null; then
			echo "tools/pgo-profile.sh: the daemon exited:" >&2
			cat "$1" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "tools/pgo-profile.sh: the daemon did not say where it listens in 30 s:" >&2
	cat "$1" >&2
	return 1
}

job=100
for pkt in 1KiB 8KiB; do
	GOMAXPROCS=1 "$bin" switch --listen 127.0.0.1:$port --admin off --packet $pkt \
		--multicast 239.255.71.0/24 --cpuprofile "$dir/switch-$pkt.prof" 2>"$dir/switch-$pkt.log" &
	sw=$!
	addr=$(started "$dir/switch-$pkt.log")
	for mc in "" --multicast; do
		job=$((job + 1))
		FLARE_TOKEN=$("$bin" token)
		export FLARE_TOKEN
		pids=()
		for r in 0 1 2 3 4 5 6 7; do
			GOMAXPROCS=1 "$bin" allreduce --switch "$addr" --job $job --rank $r --world 8 \
				--bytes "$bytes" --iters "$iters" --warmup 1 $mc \
				--cpuprofile "$dir/rank-$pkt$mc-$r.prof" >/dev/null &
			pids+=($!)
		done
		for p in "${pids[@]}"; do wait "$p"; done
	done
	kill -INT "$sw"
	wait "$sw" || true
	sw=
done
go tool pprof -proto "$dir"/*.prof >"$out"
echo "$out: $(wc -c <"$out") bytes from $(ls "$dir"/*.prof | wc -l) profiles"
