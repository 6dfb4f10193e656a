#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: checks the toolchain and
# the documents' links (internal/checkdocs), installs what the tests need,
# starts the services of the scaled-out deployment, then gofmt, go vet and
# go test -race.
#
#   scripts/test.sh            the whole suite
#   scripts/test.sh ./server/  only some packages (passed to go test)
#
# The services (Redis, dynalite for DynamoDB, s3rver for S3: see
# scripts/services.sh) are installed when missing and started on free
# loopback ports for the run, and stopped however it ends. Tests that need
# one fail rather than skip (IM_TEST_SERVICES_REQUIRED=1).
#
# The whole suite runs the server's end-to-end tests, FuzzConnection's
# corpus and the client's tests twice more: on the in-memory backend
# (IM_TEST_STORE=memory) and, without -race, on DynamoDB and Redis (IM_TEST_STORE=dynamodb),
# so the storage contract is proven by every backend. The DynamoDB pass
# runs beside the other two, on services of its own; each line a pass
# prints starts with its name (race, memory, dynamodb).
#
# Environment: TEST_TIMEOUT (default 25m) bounds go test.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

need_go

# The documents first: a link or a backquoted repository path that leads
# nowhere fails the run in seconds, before anything is installed.
log "checking the documents' links and repository paths"
go run ./internal/checkdocs

if command -v apt-get >/dev/null 2>&1; then
	# gcc: the race detector needs cgo.
	command -v gcc >/dev/null 2>&1 || apt_install gcc libc6-dev
	# tmux: the end-to-end test drives the real imtui in a terminal.
	command -v tmux >/dev/null 2>&1 || apt_install tmux
fi

# Redis, dynalite and s3rver, when missing.
scripts/services.sh install

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

# The services, for this run only: stopped on every way out (success,
# failure, ctrl-c), their directory removed. The DynamoDB pass, which runs
# beside the others, has a set of its own: no test of one pass sees the
# tables, keys or load of the other (the relay's tests empty their Redis).
services=$(mktemp -d "${TMPDIR:-/tmp}/im-test-services.XXXXXX")
background=() # the process groups of the passes running beside this one
stop_services() {
	local pgid
	for pgid in "${background[@]}"; do
		kill -TERM -- "-$pgid" 2>/dev/null || true
	done
	scripts/services.sh stop "$services/main" || true
	scripts/services.sh stop "$services/dynamodb" || true
	rm -rf "$services"
}
trap stop_services EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
scripts/services.sh start "$services/main"
export IM_TEST_SERVICES_REQUIRED=1

# pass NAME ARGS... runs go test ARGS on the services started in
# $services/NAME if there are any, else on those in $services/main; every
# line it prints starts with NAME.
pass() {
	local name=$1 dir="$services/main"
	shift
	[ -f "$services/$name/env" ] && dir="$services/$name"
	(
		# shellcheck source=/dev/null
		. "$dir/env"
		go test -count=1 -timeout "${TEST_TIMEOUT:-25m}" "$@" 2>&1 | sed -u "s/^/$name | /"
	)
}

# -race turns on the compiler's checkptr instrumentation everywhere, which
# checks unsafe.Pointer conversions. The project has none; the SQLite
# driver (modernc.org/sqlite, C translated to Go) is made of them, and
# checking them took a fifth of the server tests' CPU and over half of
# what storing 10,000 messages costs. Off for those packages only: the
# race detector still watches every memory access there, and checkptr
# every other package.
race=(-race "-gcflags=modernc.org/...=-d=checkptr=0")

if [ $# -gt 0 ]; then
	log "go test -race $*"
	pass race "${race[@]}" "$@"
	exit 0
fi

# The DynamoDB pass is without -race: every operation there is several
# round trips to the services, and the race detector would triple a pass
# that checks the same engine code the two other passes check with it
# (the DynamoDB store, ownership, routing, the node links and the relay
# have their own -race tests). It mostly waits on the services, so it runs beside the
# other two, which are mostly CPU and run one after the other; niced, so
# that the CPU it does take goes to them first (they are the run's
# critical path), with the services it alone uses. Started in a process
# group of its own, which a ctrl-c or a failure ends.
scripts/services.sh start "$services/dynamodb"
log "go test ./server/ ./client/ on DynamoDB and Redis (nodes of the scaled-out deployment), beside the rest"
set -m
IM_TEST_STORE=dynamodb pass dynamodb ./server/ ./client/ &
background+=($!)
renice -n 10 -g "$!" >/dev/null
awk '{print $2}' "$services/dynamodb/pids" | xargs renice -n 10 -p >/dev/null
set +m

failed=()
log "go test -race ./..."
pass race "${race[@]}" ./... || failed+=(race)
log "go test -race ./server/ ./client/ on the in-memory backend"
IM_TEST_STORE=memory pass memory "${race[@]}" ./server/ ./client/ || failed+=(memory)
log "waiting for the DynamoDB pass"
wait "${background[0]}" || failed+=(dynamodb)
background=()
if [ ${#failed[@]} -gt 0 ]; then
	die "failed: ${failed[*]}"
fi
log "all passes passed"
