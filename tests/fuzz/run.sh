#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Build the wire fuzzer with clang in its own build dir and run it for a
# bounded time, seeded from the repository's captures.
# Usage: tests/fuzz/run.sh [seconds]   (default 60; env BUILD_DIR overrides
# the build directory, default <repo>/build-fuzz)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-${FUZZ_TIME:-60}}
build=${BUILD_DIR:-$repo/build-fuzz}

CC=clang cmake -S "$repo" -B "$build" -G Ninja -DUROCE_FUZZ=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$build" fuzz_wire fuzz_seed

corpus=$build/fuzz-corpus
mkdir -p "$corpus" "$build/fuzz-artifacts"
"$build/tests/fuzz/fuzz_seed" "$corpus" "$repo"/tests/data/pcaps/*.pcap
"$build/tests/fuzz/fuzz_wire" -max_total_time="$secs" -timeout=10 \
	-rss_limit_mb=1024 -print_final_stats=1 \
	-artifact_prefix="$build/fuzz-artifacts/" "$corpus"
