# shellcheck shell=bash
# Helpers shared by the scripts in this folder; sourced, never run:
#
#   . "$(dirname "$0")/lib.sh"
#
# log, die, need_go, apt_install (Debian packages, as root or with sudo),
# and the loopback port helpers port_in_use, free_port, wait_tcp and
# http_status. Bash only: nothing here
# needs more than a bare Debian machine has.

# log prints a progress line on stderr.
log() { printf '== %s\n' "$*" >&2; }

# die prints an error on stderr and exits.
die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# need_go makes sure go is on the PATH (Go's default install directory
# counts) and says which.
need_go() {
	if ! command -v go >/dev/null 2>&1; then
		if [ -x /usr/local/go/bin/go ]; then
			export PATH="/usr/local/go/bin:$PATH"
		else
			echo "Go is not installed: install Go 1.26 or newer (https://go.dev/doc/install)" >&2
			exit 1
		fi
	fi
	log "$(go version)"
}

# apt_install installs Debian packages that are missing (as root, or with sudo).
apt_install() {
	local missing=() pkg
	for pkg in "$@"; do
		dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	local sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	log "installing ${missing[*]}"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# port_in_use reports whether something listens on 127.0.0.1:PORT (or on
# every address): ss when the machine has it, else a connection attempt.
port_in_use() {
	local port=$1
	if command -v ss >/dev/null 2>&1 && [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then
		return 0
	fi
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

# free_port prints a loopback port nothing listens on, picked at random
# below the kernel's ephemeral range (32768 and up by default) so that no
# outgoing connection takes it meanwhile. Another process may still bind
# it before the caller does: callers retry on "address in use".
free_port() {
	local port _
	for _ in $(seq 100); do
		port=$((20000 + RANDOM % 12000))
		if ! port_in_use "$port"; then
			echo "$port"
			return 0
		fi
	done
	die "found no free port between 20000 and 32000"
}

# wait_tcp waits until 127.0.0.1:PORT accepts connections, for at most
# SECONDS (default 10); it fails when the time runs out.
wait_tcp() {
	local port=$1 deadline=$((SECONDS + ${2:-10}))
	until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# http_status prints the status code of a GET http://127.0.0.1:PORT/PATH,
# or fails when nothing answers there in HTTP. Bash only, no curl.
http_status() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1"
		printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "${2:-/}" >&3
		IFS=' ' read -r -t 5 version code _ <&3
		[[ $version == HTTP/* ]] && echo "$code"
	) 2>/dev/null
}
