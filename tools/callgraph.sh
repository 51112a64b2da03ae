#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# File-level call graph of src/: builds the libraries with GCC's
# -fcallgraph-info into their own build directory and reports cycles
# between files and .c files over 800 lines (tools/callgraph.py). Only the
# objects that make up the libraries count (compile_commands.json names
# them), so the build is incremental: a renamed or deleted file's stale
# .ci output is ignored. Pass --edges to list every file-to-file call edge.
#   tools/callgraph.sh [--edges] [--max-lines N] [--allow tools/callgraph.allow]
#   CALLGRAPH_BUILD=dir   the build directory (default build-callgraph)
# Exit status 77 (a skip) when the compiler has no -fcallgraph-info (GCC
# 10 or later has it).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${CALLGRAPH_BUILD:-build-callgraph}
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
if ! echo 'int f(void){return 0;}' |
	"${CC:-cc}" -fcallgraph-info -x c -c - -o "$probe/p.o" 2>/dev/null; then
	echo "callgraph: ${CC:-cc} has no -fcallgraph-info: skipped"
	exit 77
fi
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG=-O0 \
	-DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
	-DCMAKE_C_FLAGS="-fcallgraph-info" >/dev/null
# liburoce-interpose.so links no layer; it defines open(), rename() and
# friends, which the graph would take for calls into it
ninja -C "$B" -j"${CALLGRAPH_JOBS:-2}" ibverbs rdmacm >/dev/null
python3 tools/callgraph.py --compdb "$B/compile_commands.json" \
	--skip-target uroce-interpose "$B/src" src "$@"
