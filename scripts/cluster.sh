#!/usr/bin/env bash
# A two-node cluster on this machine, to try the scaled-out deployment by
# hand: starts the engines (scripts/engines.sh: Redis, dynalite, s3rver),
# builds imserver, creates the tables and the bucket (imserver migrate),
# then runs node A and node B on the same engines and follows their logs.
# ctrl+c stops the nodes and the engines.
#
#   scripts/cluster.sh
#
# Connect imtui to either node (alice on A, bob on B: they chat across
# nodes); the script prints the commands. DIR/cluster.env exports the store
# settings as imserver's IM_ variables, so that other imserver commands
# reach the cluster: `. DIR/cluster.env && imserver account set ...`.
#
# Environment: IM_CLUSTER_DIR (default a new temporary directory) holds
# the engines' state, each node's data directory and the logs;
# IM_CLUSTER_PORT_A (default 7070) and IM_CLUSTER_PORT_B (default 7071)
# are the nodes' ports; IM_CLUSTER_BIN, a directory with imserver already
# built in it, skips the build (scripts/demo.sh -cluster uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

dir=${IM_CLUSTER_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/im-cluster.XXXXXX")}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
port_a=${IM_CLUSTER_PORT_A:-7070}
port_b=${IM_CLUSTER_PORT_B:-7071}
bin=${IM_CLUSTER_BIN:-$dir/bin}
# The engines are this cluster's alone, so fixed names do.
table_prefix=im-
bucket=im-blobs
node_pids=()
tail_pid=

# cleanup stops the nodes (SIGTERM: they shut down gracefully), then the
# engines. It runs on every way out, also when the terminal is gone (tmux
# kill-session): so nothing here may stop it, not even a failed write.
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	set +e
	trap '' INT TERM HUP PIPE
	[ -n "$tail_pid" ] && kill "$tail_pid" 2>/dev/null
	if [ ${#node_pids[@]} -gt 0 ]; then
		log "stopping the nodes"
		kill -TERM "${node_pids[@]}" 2>/dev/null
		wait "${node_pids[@]}" 2>/dev/null
	fi
	log "stopping the engines"
	scripts/engines.sh stop "$dir/engines"
	log "stopped; logs and data in $dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

for port in "$port_a" "$port_b"; do
	if port_in_use "$port"; then
		die "port $port is in use: set IM_CLUSTER_PORT_A and IM_CLUSTER_PORT_B to free ones"
	fi
done

scripts/engines.sh install
if [ ! -x "$bin/imserver" ]; then
	need_go
	log "building imserver into $bin"
	mkdir -p "$bin"
	go build -o "$bin/" ./cmd/imserver
fi

scripts/engines.sh start "$dir/engines"
# shellcheck source=/dev/null
. "$dir/engines/env"

# The store settings every imserver command of the cluster takes.
store_flags=(
	-store dynamodb
	-dynamodb-endpoint "$IM_TEST_DYNAMODB"
	-region "$AWS_REGION"
	-table-prefix "$table_prefix"
	-blob "s3://$bucket"
	-s3-endpoint "$IM_TEST_S3"
)
cat >"$dir/cluster.env" <<EOF
export IM_STORE=dynamodb
export IM_DYNAMODB_ENDPOINT=$IM_TEST_DYNAMODB
export IM_REGION=$AWS_REGION
export IM_TABLE_PREFIX=$table_prefix
export IM_BLOB=s3://$bucket
export IM_S3_ENDPOINT=$IM_TEST_S3
export IM_REDIS=$IM_TEST_REDIS
export AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID
export AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
export AWS_REGION=$AWS_REGION
EOF

log "creating the tables (prefix $table_prefix) and the bucket $bucket"
"$bin/imserver" migrate "${store_flags[@]}"

# start_node runs node ID on 127.0.0.1:PORT in the background, its data
# directory (the node's lock and local files) and its log in DIR. The node
# ignores SIGHUP, so that when the terminal goes it shuts down gracefully,
# on cleanup's SIGTERM, rather than dying on the spot.
start_node() {
	local id=$1 port=$2
	(
		trap '' HUP
		exec "$bin/imserver" serve -listen "127.0.0.1:$port" "${store_flags[@]}" \
			-redis "$IM_TEST_REDIS" -node-id "$id" -data "$dir/$id"
	) </dev/null >"$dir/$id.log" 2>&1 &
	node_pids+=($!)
}

# wait_node waits, for at most 30 seconds, until node ID answers /healthz
# with 200; when it exits or the time runs out, it shows the node's log.
wait_node() {
	local id=$1 port=$2 pid=$3 deadline=$((SECONDS + 30))
	until [ "$(http_status "$port" /healthz)" = 200 ]; do
		if ! kill -0 "$pid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
			log "the last lines of $dir/$id.log:"
			tail -n 20 "$dir/$id.log" >&2
			die "$id did not come up on port $port"
		fi
		sleep 0.1
	done
}

log "starting node-a on 127.0.0.1:$port_a and node-b on 127.0.0.1:$port_b"
start_node node-a "$port_a"
start_node node-b "$port_b"
wait_node node-a "$port_a" "${node_pids[0]}"
wait_node node-b "$port_b" "${node_pids[1]}"

cat >&2 <<EOF

Two nodes on one Redis, DynamoDB and S3 (data and logs in $dir):
  node-a  ws://127.0.0.1:$port_a/ws
  node-b  ws://127.0.0.1:$port_b/ws
Connect imtui to each, in other terminals:
  go run ./cmd/imtui -server ws://127.0.0.1:$port_a/ws -user alice
  go run ./cmd/imtui -server ws://127.0.0.1:$port_b/ws -user bob
  go run ./cmd/imtui -server ws://127.0.0.1:$port_a/ws -user bob -profile tablet
Other imserver commands on the cluster: . $dir/cluster.env, then as usual.
ctrl+c stops both nodes and the engines.

EOF

# Follow both logs until a node exits (or a signal ends the script).
tail -n +1 -F "$dir/node-a.log" "$dir/node-b.log" &
tail_pid=$!
set +e
wait -n "${node_pids[@]}"
status=$?
set -e
log "a node stopped (exit status $status): stopping the cluster"
exit "$status"
