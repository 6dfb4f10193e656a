#!/usr/bin/env bash
# A two-node cluster on this machine, to try the scaled-out deployment by
# hand, run as a deployment is: starts the services (scripts/services.sh
# -persist: Redis, dynalite, s3rver, keeping their data on disk), builds
# imserver, creates the tables and the bucket (imserver migrate), then runs
# node A and node B on the same services and follows their logs.
#
#   scripts/cluster.sh
#
# A node that stops or is killed leaves the other node and the services
# running: the script says so and prints the command that starts that node
# again by itself, from any shell:
#
#   . DIR/cluster.env && DIR/bin/imserver serve -listen 127.0.0.1:7070 -node-id node-a -data DIR/node-a -log-level debug
#
# which is exactly how the script starts it (DIR/cluster.env exports the
# store settings and the AWS credentials as imserver's IM_ and AWS_
# variables, so every other imserver command reaches the cluster too:
# `. DIR/cluster.env && imserver status`). ctrl+c stops the nodes the
# script started and the services; the data stays in DIR, and
# `IM_CLUSTER_DIR=DIR scripts/cluster.sh` starts the whole rig again on it,
# history included.
#
# Connect imtui to either node (alice on A, bob on B: they chat across
# nodes); the script prints the commands.
#
# Environment: IM_CLUSTER_DIR (default a new temporary directory) holds
# the services' data, each node's data directory and the logs;
# IM_CLUSTER_PORT_A (default 7070) and IM_CLUSTER_PORT_B (default 7071)
# are the nodes' ports; IM_CLUSTER_LOG_LEVEL (default debug: connections
# opening and closing are logged) the nodes' -log-level; IM_CLUSTER_BIN, a
# directory with imserver already built in it, skips the build
# (scripts/demo.sh -cluster uses it).
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
log_level=${IM_CLUSTER_LOG_LEVEL:-debug}
# The services are this cluster's alone, so fixed names do.
table_prefix=im-
bucket=im-blobs
# The nodes: their ports, and the pids of those this script started.
node_ids=(node-a node-b)
declare -A node_port=([node-a]=$port_a [node-b]=$port_b) node_pid=()
node_pids=()
tail_pid=

# cleanup stops the nodes it started (SIGTERM: they shut down gracefully),
# then the services. It runs on every way out, also when the terminal is gone (tmux
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
	log "stopping the services"
	scripts/services.sh stop "$dir/services"
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

scripts/services.sh install
if [ ! -x "$bin/imserver" ]; then
	need_go
	log "building imserver into $bin"
	mkdir -p "$bin"
	go build -o "$bin/" ./cmd/imserver
fi

scripts/services.sh start -persist "$dir/services"
# shellcheck source=/dev/null
. "$dir/services/env"

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
# The scaled-out store of the cluster in $dir, as imserver's variables:
# source it, then run any imserver command (serve, status, account, ...).
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

# node_command prints the shell command that runs node ID by itself, its
# data directory (the node's lock and local files) in DIR/ID: what
# start_node runs, and what an operator runs to start it again.
# With a second argument, exec, the node replaces the shell running it.
node_command() {
	local id=$1 exec=${2:+exec }
	printf '. %q && %s%q serve -listen 127.0.0.1:%s -node-id %s -data %q -log-level %s' \
		"$dir/cluster.env" "$exec" "$bin/imserver" "${node_port[$id]}" "$id" "$dir/$id" "$log_level"
}

# start_node runs node ID in the background, its log appended to
# DIR/ID.log. The node ignores SIGHUP, so that when the terminal goes it
# shuts down gracefully, on cleanup's SIGTERM, rather than dying on the
# spot.
start_node() {
	local id=$1
	# shellcheck disable=SC2016 # expanded by the inner bash
	bash -c 'trap "" HUP; eval "$1"' start-node "$(node_command "$id" exec)" \
		</dev/null >>"$dir/$id.log" 2>&1 &
	node_pid[$id]=$!
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
for id in "${node_ids[@]}"; do
	start_node "$id"
done
for id in "${node_ids[@]}"; do
	wait_node "$id" "${node_port[$id]}" "${node_pid[$id]}"
done

cat >&2 <<EOF

Two nodes on one Redis, DynamoDB and S3 (data and logs in $dir):
  node-a  ws://127.0.0.1:$port_a/ws  pid ${node_pid[node-a]}  http://127.0.0.1:$port_a/status
  node-b  ws://127.0.0.1:$port_b/ws  pid ${node_pid[node-b]}  http://127.0.0.1:$port_b/status
Connect imtui to each, in other terminals:
  go run ./cmd/imtui -server ws://127.0.0.1:$port_a/ws -user alice
  go run ./cmd/imtui -server ws://127.0.0.1:$port_b/ws -user bob
  go run ./cmd/imtui -server ws://127.0.0.1:$port_a/ws -user bob -profile tablet
The cluster at a glance:
  . $dir/cluster.env && $bin/imserver status
A node stopped or killed leaves the other and the services running; start
it again by itself, from any shell, with the command this script ran
(add >>$dir/NODE.log 2>&1 to have it followed here):
  $(node_command node-a)
  $(node_command node-b)
ctrl+c stops the nodes started here and the services; the data stays, and
IM_CLUSTER_DIR=$dir scripts/cluster.sh starts the whole rig on it again.

EOF

# Follow both logs until ctrl+c. A node that exits is reported, with the
# command that starts it again; the rest of the cluster goes on.
tail -n +1 -F "$dir/node-a.log" "$dir/node-b.log" &
tail_pid=$!
running=("${node_pids[@]}")
while [ ${#running[@]} -gt 0 ]; do
	ended=
	set +e
	wait -n -p ended "${running[@]}"
	status=$?
	set -e
	[ -n "$ended" ] || continue
	for id in "${node_ids[@]}"; do
		if [ "${node_pid[$id]}" = "$ended" ]; then
			log "$id (pid $ended) stopped (exit status $status); the other node and the services keep running"
			log "start $id again with: $(node_command "$id")"
		fi
	done
	left=()
	for pid in "${running[@]}"; do
		[ "$pid" = "$ended" ] || left+=("$pid")
	done
	running=("${left[@]}")
done
log "no node started here runs any more; the services keep running until ctrl+c"
wait "$tail_pid"
