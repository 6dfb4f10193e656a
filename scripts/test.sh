#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: checks the toolchain,
# installs what the tests need, then gofmt, go vet and go test -race.
#
#   scripts/test.sh            the whole suite
#   scripts/test.sh ./server/  only some packages (passed to go test)
#
# The whole suite runs the server's end-to-end tests, FuzzConnection's
# corpus and the client's tests a second time on the in-memory backend
# (IM_TEST_STORE=memory), so the storage contract is proven by two
# backends.
#
# Environment: TEST_TIMEOUT (default 25m) bounds go test.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '== %s\n' "$*" >&2; }

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
	local missing=()
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

need_go
if command -v apt-get >/dev/null 2>&1; then
	# gcc: the race detector needs cgo.
	command -v gcc >/dev/null 2>&1 || apt_install gcc libc6-dev
	# tmux: the end-to-end test drives the real imtui in a terminal.
	command -v tmux >/dev/null 2>&1 || apt_install tmux
fi

log "downloading modules"
go mod download

log "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi

log "go vet"
go vet ./...

packages=("$@")
[ ${#packages[@]} -eq 0 ] && packages=(./...)
log "go test -race ${packages[*]}"
go test -race -count=1 -timeout "${TEST_TIMEOUT:-25m}" "${packages[@]}"

if [ $# -eq 0 ]; then
	log "go test -race ./server/ ./client/ on the in-memory backend"
	IM_TEST_STORE=memory go test -race -count=1 -timeout "${TEST_TIMEOUT:-25m}" ./server/ ./client/
fi
