#!/usr/bin/env bash
# Runs every Go fuzz target in the repository for FUZZTIME each (default
# 100000x): the brief CI pass over request parsing, the SSE parsers and the
# other decoders. Targets are discovered, so a new Fuzz function is included
# without editing this script.
#
# The budget is a count of executions, not a duration: with a duration Go's
# fuzz coordinator (go1.26) can report a bare "context deadline exceeded" as a
# failure when the deadline races a busy worker (golang/go#75804, fixed in
# go1.27), which failed CI once with no crasher written. A count never sets
# that deadline; on a slow machine it only takes longer. A duration still
# works (FUZZTIME=30s) for a long run by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-100000x}
n=0
while IFS=: read -r file name; do
  pkg=./$(dirname "$file")
  echo "fuzz: $pkg $name ($FUZZTIME)"
  go test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" "$pkg"
  n=$((n + 1))
done < <(grep -rHo --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+' . | sed -E 's#^\./##; s#:func #:#' | sort)
[ "$n" -gt 0 ] || { echo "fuzz: no targets found" >&2; exit 1; }
echo "fuzz: $n targets passed"
