#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The whole test suite (the README's test command):
#   1. release build (warnings are errors), then every ctest entry: unit,
#      end-to-end (unmodified ibverbs-utils, perftest...), soak;
#   2. ASan+UBSan build: the unit tests, and the end-to-end pingpongs with
#      the sanitizer runtime preloaded into the unmodified programs;
#   3. ThreadSanitizer build: the unit tests that run threads, and the same
#      end-to-end programs with libtsan preloaded; any report fails;
#   4. bounded libFuzzer runs of the packet parser and of the engine;
#   5. the wire against Linux rxe in a qemu guest (tests/interop/run_rxe.sh
#      --ci, about 5 minutes; skipped, with the reason, without root, qemu,
#      /dev/net/tun or the Debian mirror to build the guest image from).
# Each ctest entry and each step outside ctest counts once. Build and fuzzer
# output goes to $LOGS (shown when that step fails); ctest's own output is
# shown whole. Ends with exactly one line
#   summary: N passed, M failed, K skipped
# and exits non-zero if anything failed. A skip is never counted as passed:
# the lines that say why each skipped entry skipped are listed before it.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

LOGS=${UROCE_TEST_LOGS:-$PWD/build/test-logs}
FUZZ_SECONDS=${UROCE_FUZZ_SECONDS:-60}
passed=0
failed=0
skipped=0
skip_notes=()

# show_log FILE: the end of a step's log, after it failed
show_log() {
	echo "--- last 60 lines of $1:"
	tail -n 60 "$1"
	echo "---"
}

# step NAME LOG CMD...: runs CMD with its output in LOG, counts it; exit
# status 77 means skipped (the log's last line says why)
step() {
	local name=$1 log=$2 rc t0=$SECONDS
	shift 2
	"$@" >"$log" 2>&1
	rc=$?
	if ((rc == 0)); then
		passed=$((passed + 1))
		echo "=== passed: $name ($((SECONDS - t0)) s)"
	elif ((rc == 77)); then
		skipped=$((skipped + 1))
		skip_notes+=("$name: $(tail -n 1 "$log")")
		echo "=== skipped: $name: $(tail -n 1 "$log")"
	else
		failed=$((failed + 1))
		echo "=== FAILED: $name (exit status $rc, log $log)"
		show_log "$log"
	fi
}

# run_ctest TAG BUILD [ctest args]: runs ctest (output shown whole) and adds
# its entries to the counts, from its JUnit report: an entry that exited
# with its SKIP_RETURN_CODE is skipped, one that ran and passed is passed,
# anything else (failed, timed out, not found) is failed.
run_ctest() {
	local tag=$1 b=$2 junit="$LOGS/ctest-$1.xml" counts t0=$SECONDS
	shift 2
	rm -f "$junit"
	ctest --test-dir "$b" --output-on-failure --timeout 900 \
		--output-junit "$junit" "$@"
	if ! counts=$(python3 - "$junit" "$tag" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
p = f = s = 0
for tc in root.iter('testcase'):
    sk = tc.find('skipped')
    if tc.get('status') == 'run':
        p += 1
    elif sk is not None and sk.get('message', '').startswith('SKIP_'):
        s += 1
        out = tc.findtext('system-out') or ''
        why = [l.strip() for l in out.splitlines()
               if 'skip' in l.lower() and 'SKIPPED' not in l]
        for w in why or ['(no reason printed)']:
            print('note %s %s: %s' % (sys.argv[2], tc.get('name'), w))
    else:
        f += 1
if p + f + s == 0:
    f = 1       # no entry at all: a broken build dir or label
print(p, f, s)
EOF
	); then
		echo "=== FAILED: no ctest report $junit"
		failed=$((failed + 1))
		return
	fi
	while IFS= read -r line; do
		if [[ $line == note\ * ]]; then
			skip_notes+=("${line#note }")
		else
			read -r p f s <<<"$line"
			passed=$((passed + p))
			failed=$((failed + f))
			skipped=$((skipped + s))
			echo "=== ctest $tag: $p passed, $f failed, $s skipped ($((SECONDS - t0)) s)"
		fi
	done <<<"$counts"
}

summary() {
	local n
	if ((${#skip_notes[@]})); then
		echo "=== why entries were skipped:"
		for n in "${skip_notes[@]}"; do
			echo "  $n"
		done
	fi
	echo "=== total time $SECONDS s"
	echo "summary: $passed passed, $failed failed, $skipped skipped"
	((failed == 0))
	exit
}

mkdir -p "$LOGS"
echo "=== logs in $LOGS"

# 1. release build and every ctest entry
step "build (release, -Werror)" "$LOGS/build.log" scripts/build.sh build
if ((failed)); then
	summary
fi
run_ctest release build

# 2. ASan+UBSan: unit tests, and unmodified programs with the runtime
# preloaded (tests/e2e/CMakeLists.txt sets that up in a sanitized build)
asan_build() {
	cmake -S . -B build-asan -G Ninja -DUROCE_WERROR=ON \
		-DUROCE_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug &&
		ninja -C build-asan
}
step "build (ASan+UBSan)" "$LOGS/build-asan.log" asan_build
if [[ -e build-asan/lib/libibverbs.so.1 ]]; then
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		run_ctest asan-unit build-asan -L unit
	run_ctest asan-e2e build-asan -L asan
fi

# 3. ThreadSanitizer (-O1: TSan's own advice, and -O0 is twice as slow),
# Debug so that util/lock_assert.h's assertions are checked too. Left to
# the release and ASan runs, to bound the cost (tests/README.md): the
# wire/ codec tests and link_ipid (no threads; most of the time under
# TSan), engine_loop_v6 (engine_loop's threads over other addresses), the
# scripts that check symbols, layering and help texts; and the integrity
# test's random-fault rounds run one seed instead of three (FE_SEEDS).
tsan_build() {
	cmake -S . -B build-tsan -G Ninja -DUROCE_WERROR=ON \
		-DUROCE_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug \
		-DCMAKE_C_FLAGS_DEBUG="-g -O1" &&
		ninja -C build-tsan
}
# UROCE_TSAN=0 leaves this step out, counted and listed as skipped.
if [[ ${UROCE_TSAN:-1} == 0 ]]; then
	skipped=$((skipped + 1))
	skip_notes+=("ThreadSanitizer step: skipped (UROCE_TSAN=0)")
	echo "=== skipped: ThreadSanitizer step (UROCE_TSAN=0)"
else
	step "build (TSan)" "$LOGS/build-tsan.log" tsan_build
fi
if [[ ${UROCE_TSAN:-1} != 0 && -e build-tsan/lib/libibverbs.so.1 ]]; then
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 FE_SEEDS=1 \
		run_ctest tsan-unit build-tsan -L unit \
		-E '^unit_(wire_|link_ipid$|engine_loop_v6$|layers$|env_help$|api_symbols$|api_rdmacm_symbols$)'
	run_ctest tsan-e2e build-tsan -L tsan
fi

# 4. bounded fuzz runs (each builds its own clang build dir)
if [[ -x tests/fuzz/run.sh ]]; then
	step "fuzz the packet parser (${FUZZ_SECONDS} s)" "$LOGS/fuzz-wire.log" \
		tests/fuzz/run.sh wire "$FUZZ_SECONDS"
	step "fuzz the engine with live QPs (${FUZZ_SECONDS} s)" \
		"$LOGS/fuzz-engine.log" tests/fuzz/run.sh engine "$FUZZ_SECONDS"
fi

# 5. interoperability with the kernel's rxe, the CI subset (the guest image
# is built once per machine, 3 to 5 minutes, into /var/tmp/uroce-rxe-vm by
# the project's own tests/interop/rxe-vm, so a plain clone runs it);
# UROCE_RXE=0 leaves it out, counted and listed as skipped.
if [[ ${UROCE_RXE:-1} == 0 ]]; then
	skipped=$((skipped + 1))
	skip_notes+=("rxe interop step: skipped (UROCE_RXE=0)")
	echo "=== skipped: rxe interop step (UROCE_RXE=0)"
else
	step "interop with Linux rxe (run_rxe.sh --ci)" "$LOGS/rxe.log" \
		timeout 1500 tests/interop/run_rxe.sh --ci build/lib
fi

summary
