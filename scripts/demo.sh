#!/usr/bin/env bash
# The demo: builds imserver and imtui, starts the server on a fresh data
# directory, seeds a few chats (a group, an account filed under a folder, a
# sub-business with its own list) and opens tmux with alice, bob and bob's
# second device side by side, the server's log below.
#
#   scripts/demo.sh              build, seed and attach
#
# Environment: IM_DEMO_PORT (default 7070), IM_DEMO_DIR (default a new
# temporary directory), IM_DEMO_SESSION (tmux session name, default
# im-demo), IM_DEMO_DETACH=1 to leave the tmux session running detached.
# Quit with ctrl+c in each imtui, or `tmux kill-session -t im-demo`.
set -euo pipefail
cd "$(dirname "$0")/.."

port=${IM_DEMO_PORT:-7070}
dir=${IM_DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/im-demo.XXXXXX")}
session=${IM_DEMO_SESSION:-im-demo}
url="ws://127.0.0.1:$port/ws"

log() { printf '== %s\n' "$*" >&2; }

if ! command -v tmux >/dev/null 2>&1; then
	if command -v apt-get >/dev/null 2>&1; then
		log "installing tmux"
		sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
		$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq tmux >/dev/null
	else
		echo "the demo needs tmux: install it with your package manager" >&2
		exit 1
	fi
fi
if tmux has-session -t "$session" 2>/dev/null; then
	echo "a tmux session named $session is running: attach with 'tmux attach -t $session' or end it with 'tmux kill-session -t $session'" >&2
	exit 1
fi

log "building into $dir/bin"
mkdir -p "$dir/bin"
go build -o "$dir/bin/" ./cmd/imserver ./cmd/imtui ./cmd/imdemo

log "filing accounts: news under the folder promotions, shop-orders and shop-support in the sub-business shop"
"$dir/bin/imserver" account set -data "$dir/server" -category promotions news
"$dir/bin/imserver" account set -data "$dir/server" -sub-biz shop shop-orders
"$dir/bin/imserver" account set -data "$dir/server" -sub-biz shop shop-support

log "starting imserver on 127.0.0.1:$port"
tmux new-session -d -s "$session" -x 240 -y 60 -n demo \
	"'$dir/bin/imserver' serve -listen 127.0.0.1:$port -data '$dir/server' 2>&1 | tee '$dir/server.log'"
for _ in $(seq 100); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
	sleep 0.1
done

log "seeding demo chats"
"$dir/bin/imdemo" -server "$url"

tui() { echo "'$dir/bin/imtui' -server $url -data '$dir/clients' -user $1 -profile $2"; }
# Three clients side by side above the server's log.
alice=$(tmux split-window -v -b -l 80% -t "$session:demo" -P -F '#{pane_id}' "$(tui alice laptop)")
bob=$(tmux split-window -h -l 66% -t "$alice" -P -F '#{pane_id}' "$(tui bob phone)")
tmux split-window -h -l 50% -t "$bob" "$(tui bob tablet)"
tmux select-pane -t "$alice"

log "demo ready: alice (left), bob (middle), bob's second device (right), server log below"
log "data in $dir; switch panes with ctrl+b then an arrow key"
if [ "${IM_DEMO_DETACH:-}" = 1 ]; then
	log "detached: tmux attach -t $session"
elif [ -n "${TMUX:-}" ]; then
	tmux switch-client -t "$session"
else
	tmux attach -t "$session"
fi
