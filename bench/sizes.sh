#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Latency and bandwidth against message size, uroce next to its peers of
# the same path in one run, plotted (docs/benchmarks.md, "Latency and
# bandwidth by size"):
#
#   bench/sizes.sh [--only samehost|wire] [build-dir] [reps]
#
# Two comparisons, both by default (one command regenerates all four
# plots), in the same rounds:
#  samehost: uroce's same-host default (WRITEs copied between the
#    processes, SENDs through the rings: the "rings" series) and UDP next
#    to UCX's same-host UCT
#    transports posix (shared memory, bcopy) and cma (process_vm_writev,
#    zcopy): docs/img/bench_latency.svg and bench_bandwidth.svg;
#  wire: uroce over UDP (UROCE_LINK=udp: RoCEv2 datagrams, what reaches
#    another host) next to UCX's UCT tcp transport (device lo, zcopy) and
#    libfabric's tcp provider (fi_pingpong, RDM endpoint over tcp;ofi_rxm;
#    latency only: Debian's libfabric-bin has no bandwidth test):
#    docs/img/bench_wire_latency.svg and bench_wire_bandwidth.svg.
# Every round runs, in this order, so that load drift hits all alike:
# perftest's ib_write_lat -a, ib_send_lat -a and ib_write_bw -a over the
# rings (samehost) and over UDP (both), keeping sizes 2 B .. 1 MiB (-a goes
# on to 8 MiB); then ucx_perftest's put_lat and put_bw over posix and cma
# (samehost) and tcp (wire), and fi_pingpong (wire), at every second power
# of two, 4 B .. 1 MiB. All on 127.0.0.1.
# Writes sizes.tsv (series, size, round, value) and summary.tsv (series,
# size, median, lowest, highest) to the directory printed at the end, and
# gnuplot (bench/sizes_plot.gp) draws the plots from the summary (IMG_DIR
# overrides where). Every program runs under a timeout; a perftest run
# that fails keeps the sizes it completed and is named on stderr and in
# failures.txt.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/ab_lib.sh"
samehost=1 wire=1
if [[ ${1:-} == --only || ${1:-} == --only=* ]]; then
	if [[ $1 == --only ]]; then only=${2:-}; shift $(($# > 1 ? 2 : 1)); else only=${1#*=}; shift; fi
	case $only in
	samehost) wire=0 ;;
	wire) samehost=0 ;;
	*) echo "--only wants samehost or wire (got '$only')" >&2; exit 2 ;;
	esac
elif [[ ${1:-} == -* ]]; then
	echo "unknown option '$1' (bench/sizes.sh [--only samehost|wire] [build-dir] [reps])" >&2
	exit 2
fi
b=$(cd "${1:-$repo/build}" 2>/dev/null && pwd) || { echo "no build dir ${1:-build}" >&2; exit 2; }
reps=${2:-2}
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "reps must be a positive integer" >&2; exit 2; }
[[ -e $b/lib/libibverbs.so.1 ]] || { echo "missing $b/lib/libibverbs.so.1 (build it first)" >&2; exit 2; }
for t in ib_write_lat ib_send_lat ib_write_bw ucx_perftest gnuplot python3; do
	command -v $t >/dev/null || { echo "missing $t (scripts/install-deps.sh)" >&2; exit 2; }
done
fabric=0
if ((wire)); then
	if command -v fi_pingpong >/dev/null; then
		fabric=1
	else
		echo "no fi_pingpong (libfabric-bin): the wire plots leave libfabric out" >&2
	fi
fi
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
# transport TL (device "memory", or "lo" for tcp); lat: 50th percentile in
# us; bw: MB/s as GB/s. Iterations shrink with the size so that each pair
# takes well under a second.
ucx() {
	local r=$1 series=$2 tl=$3 t=$4 layout=$5 s=$6 n dev=memory
	local f=$out/raw/$series.$s.$r v
	[[ $tl == tcp ]] && dev=lo
	if [[ $t == *lat ]]; then
		n=$(((1 << 28) / s)); ((n > 20000)) && n=20000; ((n < 500)) && n=500
	else
		n=$(((1 << 31) / s)); ((n > 200000)) && n=200000; ((n < 500)) && n=500
	fi
	# UCT tcp emulates a PUT with messages, each zcopy one waiting for
	# its completion: a few thousand a second when small
	[[ $tl == tcp ]] && ((n > 2000)) && n=2000
	ucx_pair "$f" -x "$tl" -d "$dev" -t "$t" -s "$s" -D "$layout" -n "$n" \
		-w 100
	v=$(awk -v t="$t" '/^Final:/ {
		if (t ~ /lat$/) print $3; else printf "%.6g\n", $6 / 1000 }' "$f")
	if [[ -n $v ]]; then
		printf '%s\t%d\t%d\t%s\n' "$series" "$s" "$r" "$v" >>"$data"
	else
		echo "round $r $series $s B: ucx_perftest failed" | tee -a "$out/failures.txt" >&2
	fi
}

# fabric ROUND SIZE: one fi_pingpong pair over libfabric's tcp provider
# (RDM endpoint: tcp;ofi_rxm; its MSG endpoint stalls for milliseconds per
# small message on loopback); usec/xfer, the mean half round trip, as the
# latency.
fabric() {
	local r=$1 s=$2 n
	local f=$out/raw/fi_lat_tcp.$s.$r v
	n=$(((1 << 28) / s)); ((n > 1000)) && n=1000; ((n < 200)) && n=200
	fi_pair "$f" -p tcp -e rdm -I "$n" -S "$s"
	v=$(fi_usec "$f")
	if [[ -n $v ]]; then
		printf 'fi_lat_tcp\t%d\t%d\t%s\n' "$s" "$r" "$v" >>"$data"
	else
		echo "round $r fi_lat_tcp $s B: fi_pingpong failed" | tee -a "$out/failures.txt" >&2
	fi
}

parts=$( ((samehost)) && echo -n "samehost "; ((wire)) && echo -n wire)
echo "bench/sizes.sh: $parts, $reps round(s), $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(
	git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo ?), load $(load)" |
	tee "$out/facts.txt" >&2
start=$(date +%s)
for ((r = 1; r <= reps; r++)); do
	echo "round $r/$reps (load $(load))" >&2
	links=udp; ((samehost)) && links="rings udp"
	for link in $links; do
		env=; [[ $link == udp ]] && env=UROCE_LINK=udp
		pt "$r" "write_lat_$link" "$env" ib_write_lat -n 200
		pt "$r" "send_lat_$link" "$env" ib_send_lat -n 200
		pt "$r" "write_bw_$link" "$env" ib_write_bw -n 300
	done
	for ((s = 4; s <= 1048576; s *= 4)); do
		if ((samehost)); then
			ucx "$r" put_lat_posix posix put_lat bcopy "$s"
			ucx "$r" put_lat_cma cma put_lat zcopy "$s"
			ucx "$r" put_bw_posix posix put_bw bcopy "$s"
			ucx "$r" put_bw_cma cma put_bw zcopy "$s"
		fi
		if ((wire)); then
			ucx "$r" put_lat_tcp tcp put_lat zcopy "$s"
			ucx "$r" put_bw_tcp tcp put_bw zcopy "$s"
			((fabric)) && fabric "$r" "$s"
		fi
	done
done
echo "done in $(($(date +%s) - start)) s (load $(load))" | tee -a "$out/facts.txt" >&2

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
for part in samehost wire; do
	[[ $part == samehost ]] && ((!samehost)) && continue
	[[ $part == wire ]] && ((!wire)) && continue
	gnuplot -e "tsv='$out/summary.tsv'; dir='$img'; part='$part'" \
		"$here/sizes_plot.gp" || { echo "gnuplot failed" >&2; exit 1; }
done
((samehost)) && echo "plots: $img/bench_latency.svg $img/bench_bandwidth.svg" >&2
((wire)) && echo "plots: $img/bench_wire_latency.svg $img/bench_wire_bandwidth.svg" >&2
echo "raw outputs: $out" >&2
