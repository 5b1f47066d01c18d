#!/usr/bin/env bash
# Runs the whole benchmark: installs LangGraph.js (pinned in node/package-lock.json)
# when it is missing, measures every framework, runs the repository's go test
# benchmarks and the Agent Server comparison (which installs LangGraph's server
# in agentserver/ when it is missing), and prints every table.
# Flags go to the Go harness, e.g.:
#   bench/run.sh -quick
#   bench/run.sh -workloads react,wide -variants none -growth ""
#   bench/run.sh -frameworks eino,langgraphgo -gobench ""
#   bench/run.sh -frameworks "" -gobench postgres,sandbox
# See `bench/run.sh -h` for all of them.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -d node/node_modules ]; then
	(cd node && npm ci --no-audit --no-fund)
fi
exec go run . "$@"
