#!/usr/bin/env bash
# Measures presence on the embedded server under `imbench presence`: 100
# watchers each asking the presence of 100 users they wrote to (the
# answer's latency), then 1,000 users' connections coming and going under
# them, with the server's CPU per presence change; and beside it the same
# flapping with nobody watching, the cost of a connection coming and
# going without presence's part. Each run on a fresh server with the
# client limits lifted, the two kinds in turn.
#
#   scripts/bench-presence.sh [-runs N] [IMBENCH FLAGS...]
#
# The flags go to both kinds of run (default: -duration 10s). The last
# lines give the medians and the CPU presence adds per change.
# IM_BENCH_KEEP=1 keeps the run's directory and says where.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

runs=3
while [ $# -gt 0 ]; do
	case $1 in
	-runs) runs=$2; shift 2 ;;
	*) break ;;
	esac
done
bench_args=("$@")
[ ${#bench_args[@]} -eq 0 ] && bench_args=(-duration 10s)

need_go
command -v jq >/dev/null 2>&1 || apt_install jq
dir=$(mktemp -d "${TMPDIR:-/tmp}/im-bench-presence.XXXXXX")
server_pid=
cleanup() {
	set +e
	[ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
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
go build -o "$dir/" ./cmd/imserver ./cmd/imbench

# run KIND N: KIND is "watched" (100 watchers) or "alone" (none).
run() {
	local kind=$1 n=$2 port watchers=100
	[ "$kind" = alone ] && watchers=0
	port=$(free_port)
	"$dir/imserver" -listen "127.0.0.1:$port" -data "$dir/data-$kind-$n" -log-level warn \
		-rate 1e6 -rate-burst 1000000 -max-conns-per-ip 0 -max-conns-per-user 0 \
		-max-handshakes 0 -max-handshakes-per-ip 0 -group-creates 0 -group-changes 0 \
		2>"$dir/server-$kind-$n.log" &
	server_pid=$!
	wait_tcp "$port" 30 || die "imserver did not listen on $port: $(tail -n 5 "$dir/server-$kind-$n.log")"
	"$dir/imbench" presence -server "ws://127.0.0.1:$port/ws" -pid "$server_pid" -echo 0 -q \
		-watchers "$watchers" -json "$dir/$kind.jsonl" "${bench_args[@]}" >"$dir/imbench-$kind-$n.txt"
	kill -TERM "$server_pid"
	wait "$server_pid" || true
	server_pid=
	jq -r --arg kind "$kind" --arg n "$n" '[$kind, $n, (.rates.presence_changes_per_s | floor),
		(.values.server_cpu_us_per_change // 0), (.latency_ms.presence_answer.p50 // 0),
		(.latency_ms.presence_answer.p99 // 0), (.counts.pushes // 0)] | @tsv' <(tail -n 1 "$dir/$kind.jsonl")
}

echo -e "kind\trun\tchanges/s\tµs CPU per change\tanswer p50 ms\tanswer p99 ms\tpushes"
for n in $(seq 1 "$runs"); do
	for kind in watched alone; do
		run "$kind" "$n"
	done
done
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for kind in watched alone; do
	cpu=$(jq '.values.server_cpu_us_per_change' "$dir/$kind.jsonl" | median)
	rate=$(jq '.rates.presence_changes_per_s' "$dir/$kind.jsonl" | median)
	printf 'median %s\t%.0f changes/s\t%.0f µs CPU per change\n' "$kind" "$rate" "$cpu"
	eval "median_cpu_$kind=$cpu"
done
answer=$(jq '.latency_ms.presence_answer.p50' "$dir/watched.jsonl" | median)
answer99=$(jq '.latency_ms.presence_answer.p99' "$dir/watched.jsonl" | median)
printf 'presence of 100 users, 100 watchers asking at once: p50 %.1f ms, p99 %.1f ms (medians)\n' "$answer" "$answer99"
# shellcheck disable=SC2154 # set by the eval above
awk -v a="$median_cpu_watched" -v b="$median_cpu_alone" \
	'BEGIN { printf "presence under 100 watchers adds %.0f µs of CPU per change (%.2f×)\n", a - b, a / b }'
