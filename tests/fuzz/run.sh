#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds the libFuzzer targets with clang in their own build dir and runs
# one for a bounded time.
# Usage: tests/fuzz/run.sh [wire|engine] [seconds] [libFuzzer args...]
#   wire:   the packet parser and codec, seeded from the repository's
#           captures (tests/data/pcaps) and tests/fuzz/corpus/wire
#   engine: live QPs driven by packets and verbs calls (fuzz_engine.c),
#           seeded from tests/fuzz/corpus/engine
# Seconds default to 60. New inputs go to <build>/corpus/<target> (the
# repository's corpus is only read), crashes to <build>/artifacts/<target>/.
# Env: BUILD_DIR (default <repo>/build-fuzz). Exits 77 without clang.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
target=wire
if [[ ${1:-} == wire || ${1:-} == engine ]]; then
	target=$1
	shift
fi
secs=${1:-${FUZZ_TIME:-60}}
shift || true
build=${BUILD_DIR:-$repo/build-fuzz}

if ! command -v clang >/dev/null; then
	echo "no clang: fuzzing skipped"
	exit 77
fi
CC=clang cmake -S "$repo" -B "$build" -G Ninja -DUROCE_FUZZ=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$build" "fuzz_$target" fuzz_seed

corpus=$build/corpus/$target
artifacts=$build/artifacts/$target
mkdir -p "$corpus" "$artifacts"
seeds=()
if [[ $target == wire ]]; then
	"$build/tests/fuzz/fuzz_seed" "$corpus" "$repo"/tests/data/pcaps/*.pcap
fi
if [[ -d $repo/tests/fuzz/corpus/$target ]]; then
	seeds=("$repo/tests/fuzz/corpus/$target")
fi
# libFuzzer exits 77 on a crash by default, which the test script reads as
# a skip: a finding must be a failure
started=$(mktemp)
rc=0
"$build/tests/fuzz/fuzz_$target" -max_total_time="$secs" -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 -error_exitcode=1 \
	-timeout_exitcode=1 \
	-artifact_prefix="$artifacts/" "$@" "$corpus" "${seeds[@]}" || rc=$?
# A finding on a CI machine is gone with the machine: its input goes to
# the log's last lines, to be saved with `base64 -d` and replayed with
# `fuzz_<target> <file>` (then kept in tests/fuzz/corpus/<target>)
if ((rc)); then
	find "$artifacts" -type f -newer "$started" | while read -r f; do
		echo "finding $(basename "$f") as base64:"
		base64 -w 0 "$f"
		echo
	done
fi
rm -f "$started"
exit $rc
