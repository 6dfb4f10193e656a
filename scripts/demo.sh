#!/usr/bin/env bash
# The demo: builds imserver and imtui, starts the server on a fresh data
# directory, seeds a few chats (a group, an account filed under a folder, a
# sub-business with its own list; Alice, Bob and Carol by their names, bob
# has read alice's messages, carol has read receipts off so that alice's
# message to her, read, stays at grey ticks) and opens tmux with alice, bob
# and bob's second device side by side, the server's log below.
#
#   scripts/demo.sh              build, seed and attach
#   scripts/demo.sh -cluster     the same on two nodes sharing Redis,
#                                DynamoDB and S3 (scripts/cluster.sh, run in
#                                the bottom pane): alice and bob's second
#                                device on node A, bob on node B; a node
#                                killed leaves the other and the services
#                                running, the pane prints how to start it
#                                again, and the services keep their data in
#                                IM_DEMO_DIR
#
# Each client gets at least 100 columns, so that it shows the list and the
# chat side by side: on a terminal of 306 columns or more the three sit in
# a row; from 203 alice is on top and bob's phone and tablet below her;
# narrower, each client has a tmux window of its own (ctrl+b n goes to the
# next).
#
# Environment: IM_DEMO_PORT (default 7070; with -cluster node A's, node B
# on the next port), IM_DEMO_DIR (default a new temporary directory),
# IM_DEMO_SESSION (tmux session name, default im-demo), IM_DEMO_DETACH=1 to
# leave the tmux session running detached (320x80), IM_DEMO_COLS and
# IM_DEMO_ROWS to lay it out for a terminal of that size instead of this
# one.
# Quit with ctrl+c in each imtui, or `tmux kill-session -t im-demo` (with
# -cluster that stops the nodes and the services too).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

cluster=
case "${1:-}" in
"") ;;
-cluster | --cluster) cluster=1 ;;
*)
	echo "usage: scripts/demo.sh [-cluster]" >&2
	exit 2
	;;
esac

port=${IM_DEMO_PORT:-7070}
port_b=$((port + 1))
dir=${IM_DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/im-demo.XXXXXX")}
dir=$(mkdir -p "$dir" && cd "$dir" && pwd)
session=${IM_DEMO_SESSION:-im-demo}
# The size the tmux window is laid out for: the terminal's when attaching
# (tmux resizes the window to it), a wide one when detached.
if [ "${IM_DEMO_DETACH:-}" = 1 ]; then
	cols=${IM_DEMO_COLS:-320} rows=${IM_DEMO_ROWS:-80}
else
	cols=${IM_DEMO_COLS:-$(tput cols 2>/dev/null || echo 240)}
	rows=${IM_DEMO_ROWS:-$(tput lines 2>/dev/null || echo 60)}
fi
url="ws://127.0.0.1:$port/ws"
url_b="ws://127.0.0.1:$port_b/ws"

if ! command -v tmux >/dev/null 2>&1; then
	command -v apt-get >/dev/null 2>&1 || die "the demo needs tmux: install it with your package manager"
	apt_install tmux
fi
if tmux has-session -t "$session" 2>/dev/null; then
	die "a tmux session named $session is running: attach with 'tmux attach -t $session' or end it with 'tmux kill-session -t $session'"
fi

log "building into $dir/bin"
mkdir -p "$dir/bin"
go build -o "$dir/bin/" ./cmd/imserver ./cmd/imtui ./cmd/imdemo

# file_accounts files news under the folder promotions, and shop-orders and
# shop-support in the sub-business shop; imserver's other flags (the store
# of a cluster) come from the environment.
file_accounts() {
	log "filing accounts: news under the folder promotions, shop-orders and shop-support in the sub-business shop"
	"$dir/bin/imserver" account set -data "$1" -category promotions news
	"$dir/bin/imserver" account set -data "$1" -sub-biz shop shop-orders
	"$dir/bin/imserver" account set -data "$1" -sub-biz shop shop-support
}

# demo_failed shows the last lines of LOG, ends the tmux session and exits.
demo_failed() {
	log "the last lines of $1:"
	tail -n 20 "$1" >&2 || true
	tmux kill-session -t "$session" 2>/dev/null || true
	die "$2"
}

if [ -z "$cluster" ]; then
	file_accounts "$dir/server"
	log "starting imserver on 127.0.0.1:$port"
	tmux new-session -d -s "$session" -x "$cols" -y "$rows" -n demo \
		"'$dir/bin/imserver' serve -listen 127.0.0.1:$port -data '$dir/server' 2>&1 | tee '$dir/server.log'"
	wait_tcp "$port" 10 || demo_failed "$dir/server.log" "imserver did not start"
else
	# Installed here, before tmux, so that a first install shows its progress.
	scripts/services.sh install
	log "starting the cluster: the services, node A on 127.0.0.1:$port, node B on 127.0.0.1:$port_b"
	# The bottom pane runs the cluster: killing the session (its SIGHUP)
	# stops the nodes and the services.
	tmux new-session -d -s "$session" -x "$cols" -y "$rows" -n demo -c "$PWD" \
		"IM_CLUSTER_DIR='$dir' IM_CLUSTER_BIN='$dir/bin' IM_CLUSTER_PORT_A=$port IM_CLUSTER_PORT_B=$port_b scripts/cluster.sh 2>&1 | tee '$dir/cluster.log'"
	deadline=$((SECONDS + 120))
	until [ "$(http_status "$port" /healthz)" = 200 ] && [ "$(http_status "$port_b" /healthz)" = 200 ]; do
		if ! tmux has-session -t "$session" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
			demo_failed "$dir/cluster.log" "the cluster did not start"
		fi
		sleep 0.2
	done
	# account set reaches the cluster's tables through the IM_ variables
	# of cluster.env.
	# shellcheck source=/dev/null
	(. "$dir/cluster.env" && file_accounts "$dir/admin")
fi

log "seeding demo chats through $url"
"$dir/bin/imdemo" -server "$url"
log "seeded: Alice, Bob and Carol by name; bob read alice's messages (blue ✓✓), carol has read receipts off (her chat stays grey ✓✓; S changes yours)"

tui() { echo "'$dir/bin/imtui' -server $1 -data '$dir/clients' -user $2 -profile $3"; }
# Three clients above the server's log (with -cluster, the nodes' logs):
# bob's phone on node B, the others on node A, each given both nodes'
# URLs, its own first: kill a node and its clients fail over to the
# other. The profiles name bob's devices: his status bars read bob@phone
# and bob@tablet.
bob_url=$url
if [ -n "$cluster" ]; then
	bob_url=$url_b,$url
	url=$url,$url_b
fi
where_node=
[ -n "$cluster" ] && where_node=" (bob's phone on node B, the others on node A)"
if [ "$cols" -ge 306 ]; then
	alice=$(tmux split-window -v -b -l 80% -t "$session:demo" -P -F '#{pane_id}' "$(tui "$url" alice laptop)")
	bob=$(tmux split-window -h -l 66% -t "$alice" -P -F '#{pane_id}' "$(tui "$bob_url" bob phone)")
	tmux split-window -h -l 50% -t "$bob" "$(tui "$url" bob tablet)"
	tmux select-pane -t "$alice"
	layout="alice (left), bob's phone (middle), bob's tablet (right), the logs below (ctrl+b then an arrow key: the next pane)"
elif [ "$cols" -ge 203 ]; then
	alice=$(tmux split-window -v -b -l 85% -t "$session:demo" -P -F '#{pane_id}' "$(tui "$url" alice laptop)")
	bob=$(tmux split-window -v -l 50% -t "$alice" -P -F '#{pane_id}' "$(tui "$bob_url" bob phone)")
	tmux split-window -h -l 50% -t "$bob" "$(tui "$url" bob tablet)"
	tmux select-pane -t "$alice"
	layout="alice (top), bob's phone (bottom left), bob's tablet (bottom right), the logs below (ctrl+b then an arrow key: the next pane)"
else
	tmux rename-window -t "$session:demo" logs
	tmux new-window -t "$session" -n tablet "$(tui "$url" bob tablet)"
	tmux new-window -t "$session" -n phone "$(tui "$bob_url" bob phone)"
	tmux new-window -t "$session" -n alice "$(tui "$url" alice laptop)"
	layout="one window each: alice, bob's phone, bob's tablet, the logs (ctrl+b n: the next window)"
fi
log "demo ready$where_node: $layout"
log "data in $dir"
if [ "${IM_DEMO_DETACH:-}" = 1 ]; then
	log "detached: tmux attach -t $session"
elif [ -n "${TMUX:-}" ]; then
	tmux switch-client -t "$session"
else
	tmux attach -t "$session"
fi
