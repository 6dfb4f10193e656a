#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: checks the toolchain,
# installs what the tests need, starts the engines of the scaled-out
# deployment, then gofmt, go vet and go test -race.
#
#   scripts/test.sh            the whole suite
#   scripts/test.sh ./server/  only some packages (passed to go test)
#
# The engines (Redis, dynalite for DynamoDB, s3rver for S3: see
# scripts/engines.sh) are installed when missing and started on free
# loopback ports for the run, and stopped however it ends. Tests that need
# one fail rather than skip (IM_TEST_ENGINES_REQUIRED=1).
#
# The whole suite runs the server's end-to-end tests, FuzzConnection's
# corpus and the client's tests twice more: on the in-memory backend
# (IM_TEST_STORE=memory) and, without -race, on DynamoDB and Redis (IM_TEST_STORE=dynamodb),
# so the storage contract is proven by every backend.
#
# Environment: TEST_TIMEOUT (default 25m) bounds go test.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

need_go
if command -v apt-get >/dev/null 2>&1; then
	# gcc: the race detector needs cgo.
	command -v gcc >/dev/null 2>&1 || apt_install gcc libc6-dev
	# tmux: the end-to-end test drives the real imtui in a terminal.
	command -v tmux >/dev/null 2>&1 || apt_install tmux
fi

# Redis, dynalite and s3rver, when missing.
scripts/engines.sh install

log "downloading modules"
go mod download

log "gofmt"
# shellcheck disable=SC2046 # Go file names have no spaces
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi

log "go vet"
go vet ./...

# The engines, for this run only: stopped on every way out (success,
# failure, ctrl-c), their directory removed.
engines=$(mktemp -d "${TMPDIR:-/tmp}/im-test-engines.XXXXXX")
stop_engines() {
	scripts/engines.sh stop "$engines" || true
	rm -rf "$engines"
}
trap stop_engines EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
scripts/engines.sh start "$engines"
# shellcheck source=/dev/null
. "$engines/env"
export IM_TEST_ENGINES_REQUIRED=1

packages=("$@")
[ ${#packages[@]} -eq 0 ] && packages=(./...)
log "go test -race ${packages[*]}"
go test -race -count=1 -timeout "${TEST_TIMEOUT:-25m}" "${packages[@]}"

if [ $# -eq 0 ]; then
	log "go test -race ./server/ ./client/ on the in-memory backend"
	IM_TEST_STORE=memory go test -race -count=1 -timeout "${TEST_TIMEOUT:-25m}" ./server/ ./client/
	# Without -race: every operation there is several round trips to the
	# engines, and the race detector would triple a pass that checks the
	# same engine code the two passes above check with it (the DynamoDB
	# store, the Redis cache, locks and relay have their own -race tests).
	log "go test ./server/ ./client/ on DynamoDB and Redis (nodes of the scaled-out deployment)"
	IM_TEST_STORE=dynamodb go test -count=1 -timeout "${TEST_TIMEOUT:-25m}" ./server/ ./client/
fi
