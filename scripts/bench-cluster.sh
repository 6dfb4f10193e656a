#!/usr/bin/env bash
# Measures the scaled-out deployment: two imserver nodes on the engines of
# scripts/engines.sh (Redis, dynalite, s3rver), imbench dm against them
# (senders on node A, recipients on node B), and the cost per message read
# off both nodes' /metrics before and after the run.
#
#   scripts/bench-cluster.sh [IMBENCH FLAGS...]
#
# The flags go to `imbench dm` (default: -pairs 100 -window 4). It prints
# imbench's report, then per message sent: DynamoDB calls, write and read
# units, Redis round trips, forwarded frames, and each node's CPU seconds;
# before the load, the DynamoDB engine's own ceiling on the same engines.
# IM_BENCH_PROFILE=FILE also writes a CPU profile of node A (6 s in the
# middle of the run) to FILE, for `go tool pprof`.
# Everything runs on free loopback ports and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

need_go
scripts/engines.sh install
dir=$(mktemp -d "${TMPDIR:-/tmp}/im-bench-cluster.XXXXXX")
pids=()
cleanup() {
	set +e
	[ ${#pids[@]} -gt 0 ] && kill -TERM "${pids[@]}" 2>/dev/null && wait "${pids[@]}" 2>/dev/null
	scripts/engines.sh stop "$dir/engines" >/dev/null 2>&1
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "building imserver and imbench"
go build -o "$dir/bin/" ./cmd/imserver ./cmd/imbench
scripts/engines.sh start "$dir/engines" >/dev/null
# shellcheck source=/dev/null
. "$dir/engines/env"

# The engine's own ceiling first, on the same fresh engines: the figures
# below are to be read against it.
log "the DynamoDB engine alone (BenchmarkEngineCeiling)"
go test -run '^$' -bench EngineCeiling -benchtime 3s ./server/store/dynamostore/ | grep '^Benchmark' || true

flags=(-store dynamodb -dynamodb-endpoint "$IM_TEST_DYNAMODB" -region "$AWS_REGION" -table-prefix bench-)
"$dir/bin/imserver" migrate "${flags[@]}" >/dev/null
# The server's defaults protect it from abusive clients; a load generator
# is one (see docs/PERFORMANCE.md).
open_flags=(-log-level warn -rate 1e6 -rate-burst 1000000 -max-conns-per-ip 0 -max-conns-per-user 0
	-max-handshakes 0 -max-handshakes-per-ip 0 -group-creates 0 -group-changes 0)
ports=()
pprof_port=$(free_port)
for id in node-a node-b; do
	port=$(free_port)
	ports+=("$port")
	extra=()
	# IM_BENCH_PROFILE=FILE: a CPU profile of node A during the load.
	[ -n "${IM_BENCH_PROFILE:-}" ] && [ "$id" = node-a ] && extra=(-pprof "127.0.0.1:$pprof_port")
	"$dir/bin/imserver" serve -listen "127.0.0.1:$port" "${flags[@]}" "${extra[@]}" -redis "$IM_TEST_REDIS" \
		-node-id "$id" -data "$dir/$id" "${open_flags[@]}" >"$dir/$id.log" 2>&1 &
	pids+=($!)
done
for i in 0 1; do
	deadline=$((SECONDS + 60))
	until [ "$(http_status "${ports[$i]}" /healthz)" = 200 ]; do
		[ "$SECONDS" -lt "$deadline" ] || { tail -20 "$dir/node-$i.log" >&2; die "node $i did not come up"; }
		sleep 0.2
	done
done

# counters prints the sum over both nodes of the metrics that make the
# cost of a message, one "name value" a line.
counters() {
	for port in "${ports[@]}"; do
		curl -fsS "http://127.0.0.1:$port/metrics"
	done | awk '
		/^im_dynamodb_calls_total/ { c += $NF; match($0, /operation="[A-Za-z]+"/); op = substr($0, RSTART + 11, RLENGTH - 12); byop[op] += $NF }
		/^im_redis_commands_total/ { match($0, /command="[a-z]+"/); cmd = substr($0, RSTART + 9, RLENGTH - 10); bycmd[cmd] += $NF }
		/^im_dynamodb_write_units_total/ { w += $NF }
		/^im_dynamodb_read_units_total/ { r += $NF }
		/^im_redis_round_trips_total/ { t += $NF }
		/^im_forwarded_frames_total/ { f += $NF }
		/^process_cpu_seconds_total/ { cpu += $NF }
		/^im_frames_in_total\{type="send"\}/ { s += $NF }
		END {
			printf "sends %f\ncalls %f\nwrite_units %f\nread_units %f\nredis_trips %f\nforwarded %f\ncpu %f\n", s, c, w, r, t, f, cpu
			for (op in byop) printf "%s %f\n", "  dynamodb:" op, byop[op]
			for (cmd in bycmd) printf "%s %f\n", "  redis:" cmd, bycmd[cmd]
		}'
}
counters >"$dir/before"
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(-pairs 100 -window 4)
if [ -n "${IM_BENCH_PROFILE:-}" ]; then
	# The middle of the measured window (after imbench's 2 s warm-up).
	(sleep 4 && curl -fsS -o "$IM_BENCH_PROFILE" "http://127.0.0.1:$pprof_port/debug/pprof/profile?seconds=6") &
fi
"$dir/bin/imbench" dm -server "ws://127.0.0.1:${ports[0]}/ws,ws://127.0.0.1:${ports[1]}/ws" \
	-json "$dir/report.json" "${args[@]}"
counters >"$dir/after"
log "cost per message sent (send frames read, counted on both nodes' /metrics over the whole run)"
awk '
	NR == FNR { before[$1] = $2; next }
	{ names[++k] = $1; after[$1] = $2 }
	END {
		n = after["sends"] - before["sends"]
		printf "  %-24s %10.0f\n", "messages", n
		for (i = 1; i <= k; i++) {
			name = names[i]; d = after[name] - before[name]
			if (name == "sends") continue
			if (name == "cpu") { printf "  %-24s %10.2f s in all, %8.0f µs per message\n", "node cpu", d, (n > 0 ? d * 1e6 / n : 0); continue }
			if (d == 0 && name ~ /:/) continue
			printf "  %-24s %10.0f in all, %8.2f per message\n", name, d, (n > 0 ? d / n : 0)
		}
	}' "$dir/before" "$dir/after"
