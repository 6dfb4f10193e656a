#!/usr/bin/env bash
# Counts the server's lines of Go at a revision (default: the work tree's
# HEAD), without tests:
#
#   scripts/count-lines.sh [REV...]
#
# For each revision: "logic", server/ without the storage backends, their
# test kits and servertest; "scaled-out", the files of the scaled-out
# deployment as first counted (server/ownership, routing, nodelink, relay,
# the engine's owned*/settle*/effects* files, and server/owners.go,
# scaleout.go, cluster.go, status.go, recovery.go, nodelog.go); "all",
# every non-test file under server/; then the logic by package.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 0 ] && set -- HEAD
for rev in "$@"; do
	files=$(git ls-tree -r --name-only "$rev" server | grep '\.go$' | grep -v '_test\.go$')
	logic=$(grep -vE '^server/(store/(sqlitestore|memstore|dynamostore|backendtest|storetest)|servertest)/' <<<"$files")
	scaled=$(grep -E '^server/(ownership|routing|nodelink|relay)/|^server/engine/(owned[^/]*|settle[^/]*|effects[^/]*)\.go$|^server/(owners|scaleout|cluster|status|recovery|nodelog)\.go$' <<<"$files" || true)
	count() { local n=0 f; for f in $1; do n=$((n + $(git show "$rev:$f" | wc -l))); done; echo "$n"; }
	printf '%s\tlogic %s\tscaled-out %s\tall %s\n' "$(git rev-parse --short "$rev")" "$(count "$logic")" "$(count "$scaled")" "$(count "$files")"
	for f in $logic; do printf '%s %s\n' "$(dirname "$f")" "$(git show "$rev:$f" | wc -l)"; done |
		awk '{ n[$1] += $2 } END { for (d in n) printf "\t%6d %s\n", n[d], d }' | sort -rn -k1
done
