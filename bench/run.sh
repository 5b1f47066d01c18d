#!/usr/bin/env bash
# Runs the whole benchmark: installs LangGraph.js (pinned in node/package-lock.json)
# when it is missing, then measures every framework and prints the table.
# Flags go to the Go harness, e.g.:
#   bench/run.sh -quick
#   bench/run.sh -workloads react,wide -variants none -growth ""
#   bench/run.sh -frameworks eino,langgraphgo
# See `bench/run.sh -h` for all of them.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -d node/node_modules ]; then
	(cd node && npm ci --no-audit --no-fund)
fi
exec go run . "$@"
