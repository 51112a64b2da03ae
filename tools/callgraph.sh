#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# File-level call graph of src/: builds the tree with GCC's
# -fcallgraph-info into a scratch directory and reports cycles between
# files and .c files over 800 lines (tools/callgraph.py). Pass --edges to
# list every file-to-file call edge.
#   tools/callgraph.sh [--edges] [--max-lines N]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${CALLGRAPH_BUILD:-build-callgraph}
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	-DCMAKE_C_FLAGS="-fcallgraph-info" >/dev/null
ninja -C "$B" -t clean >/dev/null	# every unit recompiled: no stale .ci files
ninja -C "$B" >/dev/null
exec python3 tools/callgraph.py "$B" src "$@"
