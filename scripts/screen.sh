#!/usr/bin/env bash
# Makes the README's picture of imtui from a real run: builds imserver,
# imtui and imdemo, starts a server on a fresh data directory, seeds the
# demo chats, runs alice and bob in a tmux server of its own, has them
# exchange messages with imtui's keys — a message to carol, who is
# offline (sent), a message bob reads, a reply to his question, his
# reaction to it, a message delivered while he is in another chat — and
# writes alice's screen into README.md between the
# lines <!-- screen:begin --> and <!-- screen:end -->.
#
#   scripts/screen.sh          make the picture and write it into README.md
#   scripts/screen.sh -print   print the picture only
#
# The clients run with NO_COLOR, so that the picture, plain text, tells
# the ticks apart by their glyphs (read is ✔✔) where colours would. Every
# step waits for what the screen shows, for at most IM_SCREEN_WAIT
# seconds (default 30); a step that does not show prints every pane and
# the logs, and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

print_only=
case "${1:-}" in
"") ;;
-print) print_only=1 ;;
*)
	echo "usage: scripts/screen.sh [-print]" >&2
	exit 2
	;;
esac

need_go
command -v tmux >/dev/null 2>&1 || die "scripts/screen.sh needs tmux: install it with your package manager"

# The picture's terminal: wide enough for the list and the chat side by side.
cols=100 rows=30
wait_s=${IM_SCREEN_WAIT:-30}
dir=$(mktemp -d "${TMPDIR:-/tmp}/im-screen.XXXXXX")
socket="im-screen-$$"
server_pid=
t() { TMUX='' tmux -f /dev/null -L "$socket" "$@"; }
cleanup() {
	t kill-server 2>/dev/null || true
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

log "building into $dir/bin"
go build -o "$dir/bin/" ./cmd/imserver ./cmd/imtui ./cmd/imdemo

# The default port when it is free, so that the status bar reads as it
# does for a newcomer.
port=7070
port_in_use "$port" && port=$(free_port)
url="ws://127.0.0.1:$port/ws"
"$dir/bin/imserver" account set -data "$dir/server" -category promotions news >/dev/null
log "starting imserver on 127.0.0.1:$port"
"$dir/bin/imserver" serve -listen "127.0.0.1:$port" -data "$dir/server" >"$dir/server.log" 2>&1 &
server_pid=$!
wait_tcp "$port" 10 || die "imserver did not start: $(tail -n 20 "$dir/server.log")"
"$dir/bin/imdemo" -server "$url"

# screen PANE prints what PANE shows, its trailing blanks trimmed.
screen() { t capture-pane -p -t "$1" | sed 's/[[:space:]]*$//'; }

# failed prints every pane and the logs, then exits.
failed() {
	local p
	for p in alice bob; do
		printf -- '--- %s:\n%s\n' "$p" "$(screen "$p" 2>&1)" >&2
		printf -- '--- %s client log:\n%s\n' "$p" "$(tail -n 15 "$dir/$p.log" 2>&1)" >&2
	done
	printf -- '--- imserver log:\n%s\n' "$(tail -n 15 "$dir/server.log")" >&2
	die "$1"
}

# wait_for PANE WHAT EXTENDED-REGEX... waits until PANE shows a line
# matching each pattern, in that order, one below the other.
wait_for() {
	local pane=$1 what=$2 deadline=$((SECONDS + wait_s))
	shift 2
	until screen "$pane" | lines_in_order "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || failed "$pane's screen did not show $what within ${wait_s}s"
		sleep 0.1
	done
}

# wait_gone PANE WHAT FIXED-TEXT waits until PANE no longer shows the text.
wait_gone() {
	local pane=$1 what=$2 text=$3 deadline=$((SECONDS + wait_s))
	while [[ $(screen "$pane") == *"$text"* ]]; do
		[ "$SECONDS" -lt "$deadline" ] || failed "$pane's screen did not show $what within ${wait_s}s"
		sleep 0.1
	done
}

# lines_in_order EXTENDED-REGEX... succeeds when its input has a line
# matching each pattern, in that order.
lines_in_order() {
	local line i=1
	while IFS= read -r line; do
		if [ "$i" -le $# ] && [[ $line =~ ${!i} ]]; then
			i=$((i + 1))
		fi
	done
	[ "$i" -gt $# ]
}

keys() {
	local pane=$1
	shift
	t send-keys -t "$pane" "$@"
}
type_text() { t send-keys -t "$1" -l "$2"; }

# A message sent and how it shows in its sender's chat: text, time, tick.
at='[0-9]{2}:[0-9]{2}'
sent='✓( |$)'
delivered='✓✓( |$)'
read='✔✔( |$)'

imtui() {
	echo "env NO_COLOR=1 '$dir/bin/imtui' -server $url -data '$dir/clients' -log '$dir/$1.log' -user $1 -profile laptop"
}
log "running alice and bob in tmux"
t set-option -g remain-on-exit on \; \
	new-session -d -s alice -x "$cols" -y "$rows" "$(imtui alice)" \; \
	new-session -d -s bob -x "$cols" -y "$rows" "$(imtui bob)"
wait_for alice "alice online" '● online'
wait_for bob "bob online" '● online'

# open PANE USER opens the direct chat with USER: n, the user id, enter,
# from the list (esc gives it the keys back from a chat's input).
open() {
	if [[ $(screen "$1") == *'enter send'* ]]; then
		keys "$1" Escape
		wait_gone "$1" "the list with the keys" 'enter send'
	fi
	keys "$1" n
	wait_for "$1" "the new chat dialog" 'New chat'
	type_text "$1" "$2"
	wait_for "$1" "$2 typed in the dialog" "› $2"
	keys "$1" Enter
	wait_gone "$1" "the chat with $2 open" 'New chat'
	wait_for "$1" "the chat with $2 open" 'enter send'
}

# to_history gives the open chat's history the keys, its newest message
# selected (the gutter ▌ marks it).
to_history() {
	keys "$1" Tab
	wait_for "$1" "the history with the keys" '↑↓ select'
}

log "alice answers carol, who is offline: sent, not delivered"
open alice carol
type_text alice "noon works for me"
keys alice Enter
wait_for alice "her answer to carol sent" "noon works for me +$at $sent"

log "alice writes to bob; bob opens the chat and reads"
open alice bob
type_text alice "the release build is up, try it?"
keys alice Enter
wait_for alice "her message sent" "up, try it\\? +$at ($sent|$delivered|$read)"
open bob alice
wait_for alice "her message read" "up, try it\\? +$at $read"

log "bob asks; alice replies to his question"
type_text bob "on it. new ticks in it?"
keys bob Enter
wait_for alice "bob's question" 'new ticks in it\?'
to_history alice
wait_for alice "bob's question selected" '▌.*new ticks in it\?'
keys alice R
wait_for alice "the reply's bar" '↪ Replying to Bob'
type_text alice "yes, replies and reactions too"
keys alice Enter
wait_for alice "her reply read, under its quote" '↪ Bob: on it' "reactions too +$at $read"

log "bob reacts to the reply"
wait_for bob "the reply at bob" 'reactions too'
to_history bob
wait_for bob "the reply selected" '▌.*reactions too'
keys bob :
wait_for bob "the reaction picker" 'React to'
keys bob 1
wait_for alice "bob's reaction under her reply" "reactions too +$at $read" ' 👍 1( |$)'

log "bob goes to another chat; alice's next message is delivered, not read"
keys bob Escape
wait_gone bob "the list with the keys" '↑↓ select'
open bob carol
wait_gone bob "bob's chat with alice closed" 'new ticks'
type_text alice "see you at the review"
keys alice Enter
wait_for alice "her last message delivered" "see you at the review +$at $delivered"

picture=$(screen alice)
if [ -n "$print_only" ]; then
	printf '%s\n' "$picture"
	exit 0
fi
grep -q '^<!-- screen:begin -->$' README.md && grep -q '^<!-- screen:end -->$' README.md ||
	die "README.md has no <!-- screen:begin --> and <!-- screen:end --> lines to put the picture between"
{
	sed -n '1,/^<!-- screen:begin -->$/p' README.md
	printf '```text\n%s\n```\n' "$picture"
	sed -n '/^<!-- screen:end -->$/,$p' README.md
} >"$dir/README.md"
cp "$dir/README.md" README.md
log "README.md: alice's screen written between the screen markers"
