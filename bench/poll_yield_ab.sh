#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# What the yield of a poll that ends a wait (UROCE_POLL_YIELD, see
# src/engine/progress.c, ur_engine_poll_done()) does to perftest on
# 127.0.0.1, on and off in the same build and in the same rounds:
#
#   bench/poll_yield_ab.sh [rounds]       (default 7)
#
# 64 B ib_write_lat with the runtime directory on ext4 (XDG_RUNTIME_DIR
# under /tmp) and on a tmpfs (under /dev/shm): the case of
# docs/benchmarks.md's "ib_write_lat and the runtime directory"; the same
# with both processes pinned to one CPU ("stacked", the state that case
# falls into: both spinners on one core); and, for regressions, 64 B
# ib_send_lat (also stacked) and ib_read_lat and 64 KiB ib_write_bw. Prints a markdown
# table: every round's value, the medians and the on/off ratio. The build
# goes to BENCH_BUILD (default <repo>/build-yield), raw perftest output to
# BENCH_OUT (default a temp dir).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=bench/ab_lib.sh
. "$here/ab_lib.sh"
rounds=${1:-7}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "rounds must be a positive integer" >&2; exit 2; }
for t in ib_write_lat ib_send_lat ib_read_lat ib_write_bw taskset cmake ninja; do
	command -v $t >/dev/null || { echo "missing $t" >&2; exit 2; }
done
bb=${BENCH_BUILD:-$repo/build-yield}
out=${BENCH_OUT:-$(mktemp -d /tmp/uroce-yield.XXXXXX)}
mkdir -p "$out"
ext4=$(mktemp -d /tmp/uroce-yield-xdg.XXXXXX)
tmpfs=$(mktemp -d /dev/shm/uroce-yield-xdg.XXXXXX)
trap 'rm -rf "$ext4" "$tmpfs"' EXIT
stack_cpu=$(($(nproc) - 1))

cmake -S "$repo" -B "$bb" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null 2>&1 &&
	ninja -C "$bb" ibverbs >/dev/null || { echo "build failed: $bb" >&2; exit 1; }

# run YIELD XDG PIN NAME BINARY ARGS...: one perftest pair (PIN: a CPU
# list for taskset, or - for none; bench/ab_lib.sh's ab_pair says what it
# prints)
run() {
	local y=$1 xdg=$2 pin=$3 name=$4
	shift 4
	local -a ab_pre=(env UROCE_POLL_YIELD="$y" XDG_RUNTIME_DIR="$xdg"
		LD_LIBRARY_PATH="$bb/lib")

	[[ $pin == - ]] || ab_pre=(taskset -c "$pin" "${ab_pre[@]}")
	ab_pair "$out/$name.$y.srv" "$out/$name.$y.cli" "$@"
}

# the tests: key, label, directory, pin, binary and arguments
tests=(wl_ext4 wl_tmpfs wl_stacked sl sl_stacked rl bw)
declare -A label=(
	[wl_ext4]="ib_write_lat 64 B, runtime dir ext4 (us)"
	[wl_tmpfs]="ib_write_lat 64 B, runtime dir tmpfs (us)"
	[wl_stacked]="ib_write_lat 64 B, both on CPU $stack_cpu (us)"
	[sl]="ib_send_lat 64 B (us)"
	[sl_stacked]="ib_send_lat 64 B, both on CPU $stack_cpu (us)"
	[rl]="ib_read_lat 64 B (us)"
	[bw]="ib_write_bw 64 KiB (Gb/s)"
)
one() { # KEY YIELD ROUND
	local lat=(-s 64 -x 0 -F -n 3000)
	case $1 in
	wl_ext4) run "$2" "$ext4" - "$1.$3" ib_write_lat "${lat[@]}" ;;
	wl_tmpfs) run "$2" "$tmpfs" - "$1.$3" ib_write_lat "${lat[@]}" ;;
	wl_stacked) run "$2" "$tmpfs" "$stack_cpu" "$1.$3" ib_write_lat "${lat[@]}" ;;
	sl) run "$2" "$tmpfs" - "$1.$3" ib_send_lat "${lat[@]}" ;;
	sl_stacked) run "$2" "$tmpfs" "$stack_cpu" "$1.$3" ib_send_lat "${lat[@]}" ;;
	rl) run "$2" "$tmpfs" - "$1.$3" ib_read_lat "${lat[@]}" ;;
	bw) run "$2" "$tmpfs" - "$1.$3" ib_write_bw -s 65536 -x 0 -F -n 5000 \
		--report_gbits ;;
	esac
}

declare -A res m
echo "poll-yield A/B: $rounds rounds, raw output in $out (load $(load))" >&2
for ((r = 1; r <= rounds; r++)); do
	echo "round $r/$rounds (load $(load))" >&2
	# alternate which side goes first, so that a drift in load is shared
	sides=(1 0)
	((r % 2)) || sides=(0 1)
	for k in "${tests[@]}"; do
		for s in "${sides[@]}"; do
			res[$k,$s]+="$(one "$k" "$s" "$r") "
		done
	done
done

echo "\`bench/poll_yield_ab.sh $rounds\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit" \
	"$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo ?)," \
	"$(nproc) cores, load $(load) at the end. One Release build;" \
	"on = UROCE_POLL_YIELD=1, off = 0 (the default). Every round's value, then the median."
echo
echo "| test | side | per round | median |"
echo "|---|---|---|---|"
for k in "${tests[@]}"; do
	for s in 1 0; do
		v=${res[$k,$s]}
		m[$s]=$(median <<<"$v")
		echo "| ${label[$k]} | $( ((s)) && echo on || echo off) | ${v% } | ${m[$s]} |"
	done
	# each round's own ratio too: both sides of a round saw the same load
	read -ra on <<<"${res[$k,1]}"
	read -ra off <<<"${res[$k,0]}"
	pr=""
	for ((i = 0; i < ${#on[@]}; i++)); do
		pr+="$(ratio "${on[i]}" "${off[i]:-}") "
	done
	echo "| | on / off | ${pr% } | $(ratio "${m[1]}" "${m[0]}") (of the medians), $(median <<<"$pr") (median of the rounds') |"
done
