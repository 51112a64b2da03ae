#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# What the fault-safe path (src/util/memguard.c) costs an ordinary MR end
# to end, for issue 8's bound (at most 2 % of 64 KiB ib_write_bw and of
# 64 B ib_write_lat, medians of the same run):
#
#   bench/memguard_ab.sh [rounds]       (default 7)
#
# Builds the tree twice with the same options, once as shipped and once with
# -DUROCE_BENCH_UNGUARDED=ON (every access the engine makes to application
# memory a plain one), then runs both in alternating order in each round on
# 127.0.0.1. Prints a markdown table: every round's value, the medians and
# the guarded/plain ratio. Builds go to BENCH_BUILD (default
# <repo>/build-ab), raw perftest output to BENCH_OUT (default a temp dir).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=bench/ab_lib.sh
. "$here/ab_lib.sh"
rounds=${1:-7}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "rounds must be a positive integer" >&2; exit 2; }
for t in ib_write_bw ib_write_lat cmake ninja; do
	command -v $t >/dev/null || { echo "missing $t" >&2; exit 2; }
done
bb=${BENCH_BUILD:-$repo/build-ab}
out=${BENCH_OUT:-$(mktemp -d /tmp/uroce-memguard.XXXXXX)}
mkdir -p "$out"

build() { # DIR UNGUARDED
	cmake -S "$repo" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release \
		-DUROCE_BENCH_UNGUARDED="$2" >/dev/null 2>&1 &&
		ninja -C "$1" ibverbs >/dev/null
}
build "$bb/guarded" OFF || { echo "build failed: $bb/guarded" >&2; exit 1; }
build "$bb/plain" ON || { echo "build failed: $bb/plain" >&2; exit 1; }

# run SIDE NAME BINARY ARGS...: one perftest pair with SIDE's library
# (bench/ab_lib.sh's ab_pair says what it prints)
run() {
	local side=$1 name=$2
	shift 2
	local -a ab_pre=(env LD_LIBRARY_PATH="$bb/$side/lib")

	ab_pair "$out/$name.$side.srv" "$out/$name.$side.cli" "$@"
}

declare -A res m
echo "memguard A/B: $rounds rounds, raw output in $out (load $(load))" >&2
for ((r = 1; r <= rounds; r++)); do
	echo "round $r/$rounds (load $(load))" >&2
	# alternate which side goes first, so that a drift in load is shared
	sides=(guarded plain)
	((r % 2)) || sides=(plain guarded)
	for s in "${sides[@]}"; do
		res[bw,$s]+="$(run "$s" "bw.$r" ib_write_bw -s 65536 -n 5000 \
			-F --report_gbits) "
		res[lat,$s]+="$(run "$s" "lat.$r" ib_write_lat -s 64 -n 5000 -F) "
	done
done


echo "## The fault-safe path, end to end"
echo
echo "\`bench/memguard_ab.sh $rounds\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit" \
	"$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo ?)," \
	"$(nproc) cores, load $(load) at the end. Release builds of the same" \
	"tree; plain = -DUROCE_BENCH_UNGUARDED=ON. Every round's value, then the median."
echo
echo "| test | side | per round | median |"
echo "|---|---|---|---|"
for k in bw lat; do
	for s in guarded plain; do
		v=${res[$k,$s]}
		m[$s]=$(median <<<"$v")
		case $k in
		bw) name="ib_write_bw 64 KiB (Gb/s)" ;;
		lat) name="ib_write_lat 64 B, t_typical (us)" ;;
		esac
		echo "| $name | $s | ${v% } | ${m[$s]} |"
	done
	# each round's own ratio too: both sides of a round saw the same load
	read -ra g <<<"${res[$k,guarded]}"
	read -ra p <<<"${res[$k,plain]}"
	pr=""
	for ((i = 0; i < ${#g[@]}; i++)); do
		pr+="$(ratio "${g[i]}" "${p[i]:-}") "
	done
	echo "| | guarded / plain | ${pr% } (per round) | $(ratio "${m[guarded]}" "${m[plain]}") (of the medians), $(median <<<"$pr") (median of the rounds') |"
done
echo
echo "Bound (issue 8): guarded costs at most 2 %: bandwidth ratio >= 0.98," \
	"latency ratio <= 1.02."
