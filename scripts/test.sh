#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The whole test suite: build (warnings are errors), unit + end-to-end tests
# with ctest, the unit tests again under ASan+UBSan, and a bounded fuzz run
# of the packet parser. Ends with one "N passed, M failed" line.
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0
step() {	# step NAME CMD...: runs CMD, counts it
	local name=$1
	shift
	echo "=== $name"
	if "$@"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "=== FAILED: $name"
	fi
}

ctest_counts() {	# ctest_counts BUILD [ctest args]: runs ctest, adds its test counts
	local b=$1 out
	shift
	out=$(ctest --test-dir "$b" --output-on-failure --timeout 300 "$@" 2>&1)
	local rc=$?
	echo "$out" | tail -n 40
	local line
	line=$(echo "$out" | grep -E "tests passed, [0-9]+ tests failed out of" | tail -1)
	if [[ $line =~ ([0-9]+)\ tests\ failed\ out\ of\ ([0-9]+) ]]; then
		failed=$((failed + BASH_REMATCH[1]))
		passed=$((passed + BASH_REMATCH[2] - BASH_REMATCH[1]))
	else
		failed=$((failed + 1))
	fi
	return $rc
}

echo "=== build (release, -Werror)"
if ! scripts/build.sh build; then
	echo "build failed"
	echo "summary: 0 passed, 1 failed"
	exit 1
fi
echo "=== ctest: unit and end-to-end"
ctest_counts build

echo "=== build (ASan+UBSan)"
if cmake -S . -B build-asan -G Ninja -DUROCE_WERROR=ON \
	-DUROCE_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug >/dev/null &&
	ninja -C build-asan >/dev/null; then
	echo "=== ctest under ASan+UBSan: unit tests"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest_counts build-asan -L unit
else
	failed=$((failed + 1))
	echo "=== FAILED: ASan build"
fi

if [[ -x tests/fuzz/run.sh ]]; then
	step "fuzz the receive parser (bounded)" tests/fuzz/run.sh "${UROCE_FUZZ_SECONDS:-60}"
fi

echo "summary: $passed passed, $failed failed"
((failed == 0))
