#!/usr/bin/env bash
# Measures the scaled-out deployment: two imserver nodes on the services of
# scripts/services.sh (Redis, dynalite, s3rver), imbench dm against them
# (senders on node A, recipients on node B), and the cost per message read
# off both nodes' /metrics before and after the run.
#
#   scripts/bench-cluster.sh [IMBENCH FLAGS...]
#
# The flags go to `imbench dm` (default: -pairs 100 -window 4). It prints
# imbench's report, then per message sent: DynamoDB calls, write and read
# units, Redis round trips, forwarded frames, and each node's CPU seconds,
# twice: over the whole run, and from imbench's first send on (its
# -start-file: the messages without the logins and first syncs of the
# clients); before the
# load, the DynamoDB service's own ceiling on the same services.
# IM_BENCH_KEEP=1 keeps the run's directory (the nodes' logs) and says where.
# IM_BENCH_PROFILE=FILE also writes a CPU profile of node A (6 s in the
# middle of the run) to FILE, for `go tool pprof`, and its goroutines in
# the middle of that (what a latency-bound node waits on) to
# FILE.goroutines.
#
# IM_BENCH_DYNAMO_DELAY=D (a Go duration: 5ms) puts `imbench proxy -delay D`
# between the nodes and dynalite, as a region's round trip: the proxy is a
# delay line, each byte reaching the other side D/2 after the proxy read it,
# each way. So every DynamoDB request's round trip gains D once, however
# many TCP chunks the request and its answer take, and requests in flight
# together on a connection are each late by D, not by the sum (a pause
# per chunk would add D per chunk, and queue them). D=0 runs the nodes
# through the same proxy without a delay: the fair baseline, with the
# proxy's own CPU in both. Before the load it times 20 requests to dynalite
# directly and through the proxy (curl, one connection), to show the D
# added. The service's ceiling is measured directly, without the proxy.
#
# IM_BENCH_CHURN=join-leave or kill changes the membership during the load
# (-duration 60s and -drain 60s unless given): 5 s into the measurement a
# third node C starts, and the time until ownership settles is taken
# (imbench settle: every shard held by the node placement over A, B and C
# gives it, each node's holdings read from its own /status every 50 ms;
# given up after 20 s); 3 s later C is stopped — SIGTERM for join-leave
# (it hands its shards back as it leaves), SIGKILL for kill (they come back
# when its leases expire) — and the time until A and B hold every shard
# again is taken (given up after 60 s). It says how far into the load
# each event came, so a stop after the load ended shows. C holds
# the shards of a third of the load's conversations and users, but none
# of its clients: imbench does not reconnect a lost connection, so the
# nodes that hold the clients, A and B, stay. Then it prints the settle
# times, imbench's error frames and lost connections, and the sends
# acknowledged (sent) whose message never reached its recipient by the
# end of the drain (imbench's recipient_msgs_missing). The cost per
# message then leaves out what node C did.
#
# Everything runs on free loopback ports and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

need_go
scripts/services.sh install
dir=$(mktemp -d "${TMPDIR:-/tmp}/im-bench-cluster.XXXXXX")
pids=()
cleanup() {
	set +e
	[ ${#pids[@]} -gt 0 ] && kill -TERM "${pids[@]}" 2>/dev/null && wait "${pids[@]}" 2>/dev/null
	scripts/services.sh stop "$dir/services" >/dev/null 2>&1
	if [ -n "${IM_BENCH_KEEP:-}" ]; then
		echo "== kept the nodes' logs and the services' data in $dir"
	else
		rm -rf "$dir"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "building imserver and imbench"
go build -o "$dir/bin/" ./cmd/imserver ./cmd/imbench
scripts/services.sh start "$dir/services" >/dev/null
# shellcheck source=/dev/null
. "$dir/services/env"

# The service's own ceiling first, on the same fresh services: the figures
# below are to be read against it.
log "the DynamoDB service alone (BenchmarkDynamoDBCeiling)"
go test -run '^$' -bench DynamoDBCeiling -benchtime 3s ./server/store/dynamostore/ | grep '^Benchmark' || true

delay=${IM_BENCH_DYNAMO_DELAY:-}
churn=${IM_BENCH_CHURN:-}
case "$churn" in
"" | join-leave | kill) ;;
*) die "IM_BENCH_CHURN=$churn: want join-leave or kill" ;;
esac
[ -n "$churn" ] && ! command -v jq >/dev/null 2>&1 && apt_install jq
dynamo_at=$IM_TEST_DYNAMODB
if [ -n "$delay" ]; then
	"$dir/bin/imbench" proxy -target "${IM_TEST_DYNAMODB#http://}" -delay "$delay" >"$dir/proxy.addr" 2>"$dir/proxy.log" &
	pids+=($!)
	deadline=$((SECONDS + 10))
	until [ -s "$dir/proxy.addr" ]; do
		[ "$SECONDS" -lt "$deadline" ] || { cat "$dir/proxy.log" >&2; die "the delaying proxy did not start"; }
		sleep 0.1
	done
	dynamo_at="http://$(head -1 "$dir/proxy.addr")"
	# median_rtt prints the median time of 20 requests to URL on one
	# connection, in ms (dynalite answers an unsigned request at once).
	median_rtt() {
		local urls=() _
		for _ in $(seq 20); do urls+=(-o /dev/null "$1"); done
		curl -s -d '{}' -w '%{time_total}\n' "${urls[@]}" |
			sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", (v[10] + v[11]) / 2 * 1000 }'
	}
	log "DynamoDB through a proxy adding $delay per round trip: a request takes $(median_rtt "$dynamo_at") ms through it, $(median_rtt "$IM_TEST_DYNAMODB") ms directly (medians of 20)"
fi

flags=(-store dynamodb -dynamodb-endpoint "$dynamo_at" -region "$AWS_REGION" -table-prefix bench-)
"$dir/bin/imserver" migrate "${flags[@]}" >/dev/null
# The server's defaults protect it from abusive clients; a load generator
# is one (see docs/PERFORMANCE.md).
open_flags=(-log-level warn -rate 1e6 -rate-burst 1000000 -max-conns-per-ip 0 -max-conns-per-user 0
	-max-handshakes 0 -max-handshakes-per-ip 0 -group-creates 0 -group-changes 0)
pprof_port=$(free_port)
declare -A node_port node_pid
# start_node starts node ID on a free port, in the background.
start_node() {
	local id=$1 port extra=()
	port=$(free_port)
	# IM_BENCH_PROFILE=FILE: a CPU profile of node A during the load.
	[ -n "${IM_BENCH_PROFILE:-}" ] && [ "$id" = node-a ] && extra=(-pprof "127.0.0.1:$pprof_port")
	"$dir/bin/imserver" serve -listen "127.0.0.1:$port" "${flags[@]}" "${extra[@]}" -redis "$IM_TEST_REDIS" \
		-node-id "$id" -data "$dir/$id" "${open_flags[@]}" >"$dir/$id.log" 2>&1 &
	pids+=($!)
	node_port[$id]=$port
	node_pid[$id]=$!
}
# await_node waits until node ID answers /healthz.
await_node() {
	local id=$1 deadline=$((SECONDS + 60))
	until [ "$(http_status "${node_port[$1]}" /healthz)" = 200 ]; do
		[ "$SECONDS" -lt "$deadline" ] || { tail -20 "$dir/$id.log" >&2; die "$id did not come up"; }
		sleep 0.2
	done
}
start_node node-a
start_node node-b
await_node node-a
await_node node-b
ports=("${node_port[node-a]}" "${node_port[node-b]}")

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
		/^im_dynamodb_item_writes_total/ { match($0, /table="[A-Za-z0-9_.-]+"/); tb = substr($0, RSTART + 7, RLENGTH - 8); match($0, /outcome="[a-z_]+"/); oc = substr($0, RSTART + 9, RLENGTH - 10); bytab[tb " " oc] += $NF }
		END {
			printf "sends %f\ncalls %f\nwrite_units %f\nread_units %f\nredis_trips %f\nforwarded %f\ncpu %f\n", s, c, w, r, t, f, cpu
			for (op in byop) printf "%s %f\n", "  dynamodb:" op, byop[op]
			for (cmd in bycmd) printf "%s %f\n", "  redis:" cmd, bycmd[cmd]
			for (k in bytab) { split(k, p, " "); printf "%s %f\n", "  write:" p[1] ":" p[2], bytab[k] }
		}'
}
counters >"$dir/before"
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(-pairs 100 -window 4)
if [ -n "$churn" ]; then
	# Long enough for a join and a leave inside the measurement, and a
	# drain long enough that a message still missing after it is lost,
	# not late. imbench takes the last of a repeated flag.
	args=(-duration 60s -drain 60s "${args[@]}")
fi
bench=("$dir/bin/imbench" dm -server "ws://127.0.0.1:${ports[0]}/ws,ws://127.0.0.1:${ports[1]}/ws"
	-json "$dir/report.json" "${args[@]}")
# imbench connects and sets up its clients, then waits for the start file:
# the counters are read in between, so that the cost from there on is
# that of the messages alone, without the connections' own (logging in,
# the first sync), which a short run would otherwise spread over its
# messages.
"${bench[@]}" -start-file "$dir/start" 2> >(tee "$dir/imbench.err" >&2) &
bench_pid=$!
# await_bench TEXT waits until imbench said TEXT on stderr.
await_bench() {
	local deadline=$((SECONDS + 180))
	until grep -q "$1" "$dir/imbench.err" 2>/dev/null; do
		[ "$SECONDS" -lt "$deadline" ] && kill -0 "$bench_pid" 2>/dev/null || die "imbench did not say '$1'"
		sleep 0.1
	done
}
await_bench 'waiting for'
counters >"$dir/sending"
touch "$dir/start"
await_bench 'sending for'
sending=$SECONDS
if [ -n "${IM_BENCH_PROFILE:-}" ]; then
	# The measured window, after imbench's 2 s warm-up.
	(sleep 2 && curl -fsS -o "$IM_BENCH_PROFILE" "http://127.0.0.1:$pprof_port/debug/pprof/profile?seconds=6") &
	(sleep 5 && curl -fsS -o "$IM_BENCH_PROFILE.goroutines" "http://127.0.0.1:$pprof_port/debug/pprof/goroutine?debug=1") &
fi
if [ -z "$churn" ]; then
	bench_exit=0
	wait "$bench_pid" || bench_exit=$?
	[ "$bench_exit" -eq 0 ] || log "imbench exited with status $bench_exit"
else
	# settle waits until the nodes named hold their shards; it prints
	# "settled SECONDS ..." (or "unsettled ...").
	settle() {
		local within=$1 id nodes=()
		shift
		for id in "$@"; do nodes+=(-node "$id=http://127.0.0.1:${node_port[$id]}"); done
		"$dir/bin/imbench" settle "${nodes[@]}" -timeout "$within" || true
	}
	# into prints how long the load has been sending.
	into() { echo "$((SECONDS - sending)) s into the load"; }
	# The warm-up (2 s unless -warmup says otherwise), then 5 s of load.
	sleep 7
	at=$(into)
	log "node C joins, $at"
	start_node node-c
	joined="$(settle 20s node-a node-b node-c) (C started $at)"
	log "join: $joined"
	sleep 3
	at=$(into)
	if [ "$churn" = kill ]; then
		log "node C is killed (SIGKILL), $at"
		kill -KILL "${node_pid[node-c]}"
	else
		log "node C leaves (SIGTERM), $at"
		kill -TERM "${node_pid[node-c]}"
	fi
	left="$(settle 60s node-a node-b) (C stopped $at)"
	log "$churn: $left"
	c_exit=0
	wait "${node_pid[node-c]}" || c_exit=$?
	bench_exit=0
	wait "$bench_pid" || bench_exit=$?
	log "churn ($churn) during the load"
	jq -r --arg join "$joined" --arg left "$left" --arg kind "$churn" --argjson c_exit "$c_exit" --argjson bench_exit "$bench_exit" '
		def count(k): .counts[k] // 0;
		"  C joined:                " + $join,
		"  C " + (if $kind == "kill" then "killed" else "left" end) + ":                  " + $left + " (C exited " + ($c_exit | tostring) + ")",
		"  error frames, lost conns: \(.errors.total) \(.errors.by_kind // {} | tojson)",
		"  sends acknowledged:       \(count("sent")) of \(count("messages")) (\(count("failed")) refused, \(count("unanswered")) never answered)",
		"  acknowledged, never received by the recipient after the drain: \(count("recipient_msgs_missing")) (received twice: \(count("recipient_msgs_twice")))",
		"  read by the recipient:    \(count("read")) (\(count("reads_missing")) not within the drain)",
		"  imbench exit status:      \($bench_exit)"' "$dir/report.json"
	grep -h -c -E '"level":"(WARN|ERROR)"|level=(WARN|ERROR)' "$dir"/node-*.log | paste -sd' ' |
		sed 's/^/  warnings and errors in the logs of nodes A, B, C: /' >&2 || true
fi
counters >"$dir/after"
if [ -n "$delay" ]; then
	# The proxy says what it forwarded as it stops: connections, and chunks
	# delayed (a request and its answer are usually one chunk each).
	kill -TERM "${pids[0]}" && wait "${pids[0]}" || true
	cat "$dir/proxy.log" >&2
fi
# cost FROM TO prints the cost per message sent between two readings of
# the counters.
cost() {
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
	}' "$1" "$2"
}
log "cost per message sent, over the whole run (send frames read, counted on both nodes' /metrics; the clients' logins and first syncs included)"
cost "$dir/before" "$dir/after"
log "cost per message sent, from the first send to the end of the drain (the messages alone: the clients were connected and synced before)"
cost "$dir/sending" "$dir/after"
