#!/usr/bin/env bash
# Measures the embedded server under imbench, and with -vs another
# revision beside it: both built, then run in turn (this one, the other,
# this one, ...), each run on a fresh data directory with the server's
# client limits lifted, so that neighbouring runs share the machine's
# load and only their difference shows.
#
#   scripts/bench-embedded.sh [-vs REV] [-runs N] [IMBENCH FLAGS...]
#
# The flags go to `imbench dm` (default: -pairs 100 -window 4). Each run's
# line gives sent/s, read-receipted/s, send→read p99 and the server's CPU
# per read; the last lines the medians of each side and, with -vs, the
# ratio of this tree's read-receipted rate to the other's. REV is any git
# revision (a commit, a branch), built from a worktree of its own.
# IM_BENCH_KEEP=1 keeps the run's directory (servers' logs, imbench's
# JSON lines) and says where.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

vs=
runs=3
while [ $# -gt 0 ]; do
	case $1 in
	-vs) vs=$2; shift 2 ;;
	-runs) runs=$2; shift 2 ;;
	*) break ;;
	esac
done
bench_args=("$@")
[ ${#bench_args[@]} -eq 0 ] && bench_args=(-pairs 100 -window 4)

need_go
command -v jq >/dev/null 2>&1 || apt_install jq
dir=$(mktemp -d "${TMPDIR:-/tmp}/im-bench-embedded.XXXXXX")
server_pid=
cleanup() {
	set +e
	[ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
	[ -d "$dir/src-vs" ] && git worktree remove --force "$dir/src-vs" >/dev/null 2>&1
	if [ -n "${IM_BENCH_KEEP:-}" ]; then
		echo "== kept the servers' logs and imbench's JSON lines in $dir"
	else
		rm -rf "$dir"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "building imserver and imbench"
go build -o "$dir/this/" ./cmd/imserver ./cmd/imbench
sides=(this)
if [ -n "$vs" ]; then
	log "building imserver at $vs"
	git worktree add --detach "$dir/src-vs" "$vs" >/dev/null
	(cd "$dir/src-vs" && go build -o "$dir/vs/" ./cmd/imserver)
	sides=(this vs)
fi

# run SIDE N runs imbench against a fresh server of SIDE.
run() {
	local side=$1 n=$2 port
	port=$(free_port)
	"$dir/$side/imserver" -listen "127.0.0.1:$port" -data "$dir/data-$side-$n" -log-level warn \
		-rate 1e6 -rate-burst 1000000 -max-conns-per-ip 0 -max-conns-per-user 0 \
		-max-handshakes 0 -max-handshakes-per-ip 0 -group-creates 0 -group-changes 0 \
		2>"$dir/server-$side-$n.log" &
	server_pid=$!
	wait_tcp "$port" 30 || die "imserver did not listen on $port: $(tail -n 5 "$dir/server-$side-$n.log")"
	"$dir/this/imbench" dm -server "ws://127.0.0.1:$port/ws" -pid "$server_pid" \
		-json "$dir/$side.jsonl" "${bench_args[@]}" >"$dir/imbench-$side-$n.txt"
	kill -TERM "$server_pid"
	wait "$server_pid" || true
	server_pid=
	jq -r --arg side "$side" --arg n "$n" 'select(.workload == "dm") | [$side, $n,
		(.rates.sent_per_s | floor), (.rates.read_per_s | floor),
		.latency_ms.send_read.p99, (.values.server_cpu_us_per_read | floor)] | @tsv' \
		<(tail -n 1 "$dir/$side.jsonl")
}

echo -e "side\trun\tsent/s\tread/s\tsend→read p99 ms\tµs CPU per read"
for n in $(seq 1 "$runs"); do
	for side in "${sides[@]}"; do
		run "$side" "$n"
	done
done
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for side in "${sides[@]}"; do
	sent=$(jq '.rates.sent_per_s' "$dir/$side.jsonl" | median)
	read_=$(jq '.rates.read_per_s' "$dir/$side.jsonl" | median)
	p99=$(jq '.latency_ms.send_read.p99' "$dir/$side.jsonl" | median)
	cpu=$(jq '.values.server_cpu_us_per_read' "$dir/$side.jsonl" | median)
	printf 'median %s\t%.0f sent/s\t%.0f read/s\tp99 %.1f ms\t%.0f µs CPU per read\n' "$side" "$sent" "$read_" "$p99" "$cpu"
	eval "median_read_$side=$read_"
done
if [ -n "$vs" ]; then
	# shellcheck disable=SC2154 # set by the eval above
	awk -v a="$median_read_this" -v b="$median_read_vs" -v rev="$vs" \
		'BEGIN { printf "read-receipted rate of this tree / %s: %.2f\n", rev, a / b }'
fi
