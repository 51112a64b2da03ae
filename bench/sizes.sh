#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Latency and bandwidth against message size, uroce next to UCX's
# same-host transports in one run, plotted (docs/benchmarks.md, "Latency
# and bandwidth by size"):
#
#   bench/sizes.sh [build-dir] [reps]
#
# Every round runs, in this order, so that load drift hits all alike:
# perftest's ib_write_lat -a, ib_send_lat -a and ib_write_bw -a over
# uroce's same-host rings (the default) and over UDP (UROCE_LINK=udp),
# keeping sizes 2 B .. 1 MiB (-a goes on to 8 MiB); then ucx_perftest's
# put_lat and put_bw over UCT posix (shared memory, bcopy) and cma
# (process_vm_writev, zcopy) at every second power of two, 4 B .. 1 MiB.
# Writes sizes.tsv (series, size, round, value) and summary.tsv (series,
# size, median, lowest, highest) to the directory printed at the end, and
# gnuplot (bench/sizes_plot.gp) draws docs/img/bench_latency.svg and
# docs/img/bench_bandwidth.svg from the summary (IMG_DIR overrides where).
# Every program runs under a timeout; a perftest run that fails keeps the
# sizes it completed and is named on stderr and in failures.txt.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/ab_lib.sh"
b=$(cd "${1:-$repo/build}" 2>/dev/null && pwd) || { echo "no build dir ${1:-build}" >&2; exit 2; }
reps=${2:-2}
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "reps must be a positive integer" >&2; exit 2; }
[[ -e $b/lib/libibverbs.so.1 ]] || { echo "missing $b/lib/libibverbs.so.1 (build it first)" >&2; exit 2; }
for t in ib_write_lat ib_send_lat ib_write_bw ucx_perftest gnuplot python3; do
	command -v $t >/dev/null || { echo "missing $t (scripts/install-deps.sh)" >&2; exit 2; }
done
img=${IMG_DIR:-$repo/docs/img}
out=${BENCH_OUT:-$(mktemp -d /tmp/uroce-sizes.XXXXXX)}
mkdir -p "$out/raw" "$img"
data=$out/sizes.tsv	# series, size, round, value
: >"$data"
: >"$out/failures.txt"

# pt ROUND SERIES ENV BINARY ARGS...: one perftest -a pair over uroce;
# appends one row per size up to 1 MiB (lat: t_typical in us; bw: the
# average in GB/s, from perftest's MiB/s).
pt() {
	local r=$1 series=$2 env=$3 bin=$4
	local f=$out/raw/$series.$r
	shift 4
	# shellcheck disable=SC2206 # env: one VAR=value or nothing
	ab_pre=(env LD_LIBRARY_PATH="$b/lib" $env)
	ab_timeout=150	# -a runs every size up to 8 MiB
	if [[ $(ab_pair "$f.srv" "$f.cli" "$bin" -F -x 0 -a "$@") == fail ]]; then
		echo "round $r $series: $bin failed: $(
			grep -iE 'status|error' "$f.cli" | head -2 | tr '\n' ' ')" |
			tee -a "$out/failures.txt" >&2
	fi
	grep -E '^ *[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+' "$f.cli" |
		awk -v s="$series" -v r="$r" -v bw="$([[ $bin == *_bw ]] && echo 1 || echo 0)" '
		$1 <= 1048576 {
			if (bw) printf "%s\t%d\t%d\t%.6g\n", s, $1, r, $4 * 1.048576 / 1000;
			else printf "%s\t%d\t%d\t%s\n", s, $1, r, $5 }' >>"$data"
}

# ucx ROUND SERIES TL TEST LAYOUT SIZE: one ucx_perftest pair over UCT
# transport TL (device "memory"); lat: 50th percentile in us; bw: MB/s as
# GB/s. Iterations shrink with the size so that each pair takes well
# under a second.
ucx() {
	local r=$1 series=$2 tl=$3 t=$4 layout=$5 s=$6 n
	local f=$out/raw/$series.$s.$r v
	if [[ $t == *lat ]]; then
		n=$(((1 << 28) / s)); ((n > 20000)) && n=20000; ((n < 500)) && n=500
	else
		n=$(((1 << 31) / s)); ((n > 200000)) && n=200000; ((n < 500)) && n=500
	fi
	ucx_pair "$f" -x "$tl" -d memory -t "$t" -s "$s" -D "$layout" -n "$n" \
		-w 100
	v=$(awk -v t="$t" '/^Final:/ {
		if (t ~ /lat$/) print $3; else printf "%.6g\n", $6 / 1000 }' "$f")
	if [[ -n $v ]]; then
		printf '%s\t%d\t%d\t%s\n' "$series" "$s" "$r" "$v" >>"$data"
	else
		echo "round $r $series $s B: ucx_perftest failed" | tee -a "$out/failures.txt" >&2
	fi
}

start=$(date +%s)
for ((r = 1; r <= reps; r++)); do
	echo "round $r/$reps (load $(load))" >&2
	for link in rings udp; do
		env=; [[ $link == udp ]] && env=UROCE_LINK=udp
		pt "$r" "write_lat_$link" "$env" ib_write_lat -n 200
		pt "$r" "send_lat_$link" "$env" ib_send_lat -n 200
		pt "$r" "write_bw_$link" "$env" ib_write_bw -n 300
	done
	for ((s = 4; s <= 1048576; s *= 4)); do
		ucx "$r" put_lat_posix posix put_lat bcopy "$s"
		ucx "$r" put_lat_cma cma put_lat zcopy "$s"
		ucx "$r" put_bw_posix posix put_bw bcopy "$s"
		ucx "$r" put_bw_cma cma put_bw zcopy "$s"
	done
done
echo "done in $(($(date +%s) - start)) s (load $(load))" >&2

# medians, lowest and highest of the rounds, per series and size
python3 - "$data" >"$out/summary.tsv" <<'EOF'
import statistics, sys
from collections import defaultdict
vals = defaultdict(list)
for line in open(sys.argv[1]):
    series, size, _, v = line.split("\t")
    vals[(series, int(size))].append(float(v))
for (series, size), v in sorted(vals.items()):
    print("%s\t%d\t%.6g\t%.6g\t%.6g" % (series, size, statistics.median(v), min(v), max(v)))
EOF
gnuplot -e "tsv='$out/summary.tsv'; dir='$img'" "$here/sizes_plot.gp" ||
	{ echo "gnuplot failed" >&2; exit 1; }
echo "plots: $img/bench_latency.svg $img/bench_bandwidth.svg" >&2
echo "raw outputs: $out" >&2
