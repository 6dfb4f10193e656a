#!/usr/bin/env bash
# The services of the scaled-out deployment, run on this machine for the
# tests and the cluster demo: Redis (redis-server), DynamoDB (dynalite) and
# S3 (s3rver), each on a free loopback port.
#
#   scripts/services.sh install     install what is missing: redis-server
#                                  (Debian package) and, from npm, dynalite@4
#                                  and s3rver@3 into the cache below
#   scripts/services.sh start DIR   start the three, wait until each answers,
#                                  write DIR/env
#   scripts/services.sh start -persist DIR
#                                  the same, keeping every service's data in
#                                  DIR (the cluster rig): started again on
#                                  DIR, they serve what they held, on the
#                                  same ports when those are free
#   scripts/services.sh stop DIR    stop what "start DIR" started (a second
#                                  stop does nothing)
#
# DIR/env exports what the tests read (source it: `. DIR/env`):
#   IM_TEST_REDIS=redis://127.0.0.1:PORT/0
#   IM_TEST_DYNAMODB=http://127.0.0.1:PORT
#   IM_TEST_S3=http://127.0.0.1:PORT
#   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (what s3rver accepts; dynalite
#   accepts any), AWS_REGION, and IM_SERVICES_{REDIS,DYNAMODB,S3}_PID.
# Each service logs to DIR/NAME.log. s3rver keeps its objects in DIR/s3.
# Without -persist, Redis and dynalite keep nothing on disk (the tests want
# fresh services). With it, Redis writes an append-only file and snapshots
# in DIR/redis (appendfsync everysec: a crash of Redis itself loses at most
# the last second), dynalite keeps its tables in DIR/dynamodb (LevelDB),
# and DIR/ports remembers the ports for the next start.
#
# Environment: IM_SERVICES_DIR, where the npm packages go (default
# $XDG_CACHE_HOME/im-services, else ~/.cache/im-services: outside the repo).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

root=$(cd "$(dirname "$0")/.." && pwd)
npm_dir=${IM_SERVICES_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/im-services}
dynalite_bin="$npm_dir/node_modules/.bin/dynalite"
s3rver_bin="$npm_dir/node_modules/.bin/s3rver"

# How long one service may take to answer after it was started.
start_timeout=30

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

# ---- install ---------------------------------------------------------------

install_services() {
	if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
		command -v apt-get >/dev/null 2>&1 ||
			die "redis-server is missing: install Redis (6 or newer) with your package manager"
		apt_install redis-server
	fi
	if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
		command -v apt-get >/dev/null 2>&1 ||
			die "Node.js and npm are missing: install Node.js 18 or newer (https://nodejs.org/en/download), which brings npm"
		apt_install nodejs npm
	fi
	if [ -x "$dynalite_bin" ] && [ -x "$s3rver_bin" ]; then
		return 0
	fi
	log "installing dynalite@4 and s3rver@3 into $npm_dir"
	mkdir -p "$npm_dir"
	npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error dynalite@4 s3rver@3 >&2
}

# ---- start -----------------------------------------------------------------

# Each launch_NAME runs service NAME in the foreground on 127.0.0.1:PORT.
# They exec, so that the pid of a launch started with & is the service's.
launch_redis() {
	if [ -n "$persist" ]; then
		exec redis-server --bind 127.0.0.1 --port "$1" --daemonize no \
			--dir "$dir/redis" --appendonly yes --appendfsync everysec \
			--save '3600 1 300 100 60 10000' --logfile ''
	fi
	exec redis-server --bind 127.0.0.1 --port "$1" --daemonize no \
		--save '' --appendonly no --dir "$dir" --logfile ''
}
# dynalite runs through scripts/dynalite.js, which keeps it up when a
# client abandons a request (dynalite alone exits on it).
launch_dynamodb() {
	NODE_PATH="$npm_dir/node_modules" exec node "$root/scripts/dynalite.js" "$1" ${persist:+"$dir/dynamodb"}
}
launch_s3() {
	exec "$s3rver_bin" --address 127.0.0.1 --port "$1" --directory "$dir/s3" --silent
}

# Each answers_NAME succeeds when service NAME answers on PORT.
answers_redis() { [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ]; }
# For dynalite and s3rver any HTTP answer will do: only that they serve.
answers_dynamodb() { http_status "$1" / >/dev/null; }
answers_s3() { http_status "$1" / >/dev/null; }

# listens_as succeeds when PID is the process listening on PORT, so that
# a service of someone else that took the port first is not taken for
# ours. Without ss it cannot tell, and trusts that PID is still alive.
listens_as() {
	local pid=$1 port=$2
	command -v ss >/dev/null 2>&1 || return 0
	ss -Hltnp "sport = :$port" 2>/dev/null | grep -q "pid=$pid,"
}

# start_one starts service NAME on a free port and waits until it answers,
# setting port to the port it listens on. Another process may take the
# port between the pick and the bind: then it tries another, up to 3 times.
start_one() {
	local name=$1 pid deadline attempt
	for attempt in 1 2 3; do
		port=$(free_port)
		# A persistent service started again takes its port of last time
		# when it is free, so that what points at it still does.
		if [ "$attempt" = 1 ] && [ -n "$persist" ] && [ -r "$dir/ports" ]; then
			local previous
			previous=$(sed -n "s/^$name //p" "$dir/ports")
			if [ -n "$previous" ] && ! port_in_use "$previous"; then
				port=$previous
			fi
		fi
		"launch_$name" "$port" </dev/null >"$dir/$name.log" 2>&1 &
		pid=$!
		# Recorded at once, so that a failure from here on stops it.
		echo "$name $pid $port" >>"$dir/pids"
		deadline=$((SECONDS + start_timeout))
		while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
			if "answers_$name" "$port" && listens_as "$pid" "$port"; then
				printf -v "${name}_pid" '%s' "$pid"
				return 0
			fi
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			log "$name did not answer on port $port within ${start_timeout}s"
			break
		fi
		if ! grep -qiE 'in use|EADDRINUSE' "$dir/$name.log"; then
			log "$name exited"
			break
		fi
		log "$name: port $port was taken meanwhile (attempt $attempt), trying another"
	done
	log "the last lines of $dir/$name.log:"
	tail -n 20 "$dir/$name.log" >&2 || true
	die "$name did not start"
}

start_services() {
	if [ ! -x "$dynalite_bin" ] || [ ! -x "$s3rver_bin" ] || ! command -v redis-server >/dev/null 2>&1; then
		die "the services are not installed: run scripts/services.sh install"
	fi
	if [ -s "$dir/pids" ]; then
		if any_running; then
			die "services were started in $dir and not stopped: scripts/services.sh stop $dir"
		fi
		# What started them was killed before it could stop them, and
		# they are gone too: nothing to stop.
		log "the services once started in $dir are gone; starting them again"
	fi
	mkdir -p "$dir/s3"
	if [ -n "$persist" ]; then
		mkdir -p "$dir/redis" "$dir/dynamodb"
	fi
	: >"$dir/pids"
	# Whatever fails from here on, nothing started is left running.
	trap 'stop_services' EXIT

	local port redis_port dynamodb_port s3_port redis_pid dynamodb_pid s3_pid
	start_one redis
	redis_port=$port
	start_one dynamodb
	dynamodb_port=$port
	start_one s3
	s3_port=$port

	cat >"$dir/env.tmp" <<-EOF
		export IM_TEST_REDIS=redis://127.0.0.1:$redis_port/0
		export IM_TEST_DYNAMODB=http://127.0.0.1:$dynamodb_port
		export IM_TEST_S3=http://127.0.0.1:$s3_port
		export AWS_ACCESS_KEY_ID=S3RVER
		export AWS_SECRET_ACCESS_KEY=S3RVER
		export AWS_REGION=us-east-1
		export IM_SERVICES_REDIS_PID=$redis_pid
		export IM_SERVICES_DYNAMODB_PID=$dynamodb_pid
		export IM_SERVICES_S3_PID=$s3_pid
	EOF
	mv "$dir/env.tmp" "$dir/env"
	if [ -n "$persist" ]; then
		printf 'redis %s\ndynamodb %s\ns3 %s\n' "$redis_port" "$dynamodb_port" "$s3_port" >"$dir/ports"
	fi
	trap - EXIT
	log "services up: Redis on $redis_port, DynamoDB on $dynamodb_port, S3 on $s3_port (. $dir/env)"
}

# ---- stop ------------------------------------------------------------------

# is_ours succeeds when PID is alive and still the service started on PORT
# (a pid recorded long ago may belong to another process by now).
is_ours() {
	local pid=$1 port=$2
	kill -0 "$pid" 2>/dev/null || return 1
	[ -r "/proc/$pid/cmdline" ] || return 0
	# Redis shows "redis-server 127.0.0.1:PORT", the others "--port PORT".
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qE "(^|[^0-9])$port([^0-9]|\$)"
}

# any_running succeeds when a service DIR/pids lists still runs.
any_running() {
	local lines=() line name pid port
	mapfile -t lines <"$dir/pids" || return 1
	for line in "${lines[@]}"; do
		read -r name pid port <<<"$line"
		is_ours "$pid" "$port" && return 0
	done
	return 1
}

# stop_one ends PID with SIGTERM, and with SIGKILL if it is still there 5
# seconds later.
stop_one() {
	local name=$1 pid=$2 port=$3 deadline
	is_ours "$pid" "$port" || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	deadline=$((SECONDS + 5))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "$name (pid $pid) ignored SIGTERM: killing it"
			kill -KILL "$pid" 2>/dev/null || true
			return 0
		fi
		sleep 0.1
	done
}

stop_services() {
	local lines=() line name pid port
	# No pids file: never started, or stopped already.
	[ -f "$dir/pids" ] || return 0
	mapfile -t lines <"$dir/pids" || return 0
	for line in "${lines[@]}"; do
		read -r name pid port <<<"$line"
		stop_one "$name" "$pid" "$port"
	done
	rm -f "$dir/pids" "$dir/env"
}

# ---- main ------------------------------------------------------------------

# A signal ends the script through exit, so that the EXIT trap runs.
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

case "${1:-}" in
install)
	[ $# -eq 1 ] || usage
	install_services
	;;
start)
	persist=
	if [ "${2:-}" = -persist ] || [ "${2:-}" = --persist ]; then
		persist=1
		shift
	fi
	[ $# -eq 2 ] || usage
	mkdir -p "$2"
	dir=$(cd "$2" && pwd)
	start_services
	;;
stop)
	[ $# -eq 2 ] || usage
	[ -d "$2" ] || exit 0
	dir=$(cd "$2" && pwd)
	stop_services
	;;
*)
	usage
	;;
esac
