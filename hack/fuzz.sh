#!/usr/bin/env bash
# Runs every Go fuzz target in the repository for FUZZTIME each (default 10s):
# the brief CI pass over request parsing, the SSE parsers and the other
# decoders. Targets are discovered, so a new Fuzz function is included
# without editing this script.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-10s}
n=0
while IFS=: read -r file name; do
  pkg=./$(dirname "$file")
  echo "fuzz: $pkg $name ($FUZZTIME)"
  go test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" "$pkg"
  n=$((n + 1))
done < <(grep -rHo --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+' . | sed -E 's#^\./##; s#:func #:#' | sort)
[ "$n" -gt 0 ] || { echo "fuzz: no targets found" >&2; exit 1; }
echo "fuzz: $n targets passed"
