#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The same-host link next to UDP and to UCX's shared-memory transports, in
# one run (docs/benchmarks.md, "Same host"):
#
#   bench/samehost.sh [build-dir] [reps]
#
# Every round runs, in this order, so that load drift hits all alike:
# perftest over uroce by default (RC WRITE/READ copied between the two
# processes, the rest through the rings), with UROCE_LINK=rings (every
# operation as packets through the rings) and with UROCE_LINK=udp, for
# 64 B ib_write_lat, ib_read_lat and ib_send_lat, 64 KiB and 1 MiB
# ib_write_bw and ib_read_bw, and the 64 B message rate with post lists
# of 16; then
# ucx_perftest over posix shared memory and cma (process_vm_writev) for
# the matching UCT tests; then rsockets next to the kernel's TCP loopback:
# rstream -T b (1 MB transfers, Gb/s) and iperf3 (400 MB, the receiver's
# Gb/s) over uroce by default, with UROCE_LINK=rings, and over kernel TCP
# (rstream -T s; plain iperf3), with the CPU seconds and context switches
# of both processes (GNU time); then Open MPI, 2 ranks, bench/mpi's
# ping-pong (8 B one-way latency, 64 KiB and 1 MiB bandwidth) over UCX
# rc_verbs on uroce (default and UROCE_LINK=udp) and over Open MPI's own
# shared memory (pml ob1, btl vader); then Open MPI with 2, 4 and 8 ranks
# streaming around a ring (bench/mpi/mpi_ring_bw.c: the bytes all ranks
# received together, 64 KiB and 1 MiB) over UCX rc_verbs on uroce and
# over vader. BENCH_ONLY (a comma list of perftest, rsockets, mpi,
# mpiscale) runs only those parts. Prints markdown tables of medians and
# same-round ratios (medians of the per-round ratios); raw outputs stay in
# the directory printed at the end. Every program runs under a timeout; a
# failed run is left out and shown as "fail".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/ab_lib.sh"
b=$(cd "${1:-$repo/build}" 2>/dev/null && pwd) || { echo "no build dir ${1:-build}" >&2; exit 2; }
reps=${2:-3}
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "reps must be a positive integer" >&2; exit 2; }
[[ -e $b/lib/libibverbs.so.1 ]] || { echo "missing $b/lib/libibverbs.so.1 (build it first)" >&2; exit 2; }
for t in ib_write_lat ib_read_lat ib_send_lat ib_write_bw ib_read_bw ucx_perftest \
	rstream iperf3 /usr/bin/time mpicc mpirun; do
	command -v $t >/dev/null || { echo "missing $t (scripts/install-deps.sh)" >&2; exit 2; }
done
out=${BENCH_OUT:-$(mktemp -d /tmp/uroce-samehost.XXXXXX)}
mkdir -p "$out/raw"
res=$out/results.txt	# "round row column value"
: >"$res"

# The rows: name | perftest binary and args | the matching UCT test over
# posix shared memory | over cma (which moves data only by zcopy).
rows=(
	"write_lat|ib_write_lat -x 0 -s 64 -n 5000|put_lat -s 64 -n 100000|put_lat -s 64 -n 20000 -D zcopy"
	"read_lat|ib_read_lat -x 0 -s 64 -n 5000|-|-"
	"send_lat|ib_send_lat -x 0 -s 64 -n 5000|am_lat -s 64 -n 100000|-"
	"write_bw_64k|ib_write_bw -x 0 -s 65536 -n 2000|put_bw -s 65536 -n 5000 -D bcopy|put_bw -s 65536 -n 5000 -D zcopy"
	"read_bw_64k|ib_read_bw -x 0 -s 65536 -n 2000|get -s 65536 -n 5000 -D bcopy|get -s 65536 -n 5000 -D zcopy"
	"write_bw_1m|ib_write_bw -x 0 -s 1048576 -n 300|put_bw -s 1048576 -n 1000 -D bcopy|put_bw -s 1048576 -n 1000 -D zcopy"
	"read_bw_1m|ib_read_bw -x 0 -s 1048576 -n 300|get -s 1048576 -n 1000 -D bcopy|get -s 1048576 -n 1000 -D zcopy"
	"msg_rate_64|ib_write_bw -x 0 -s 64 -l 16 -n 20000|put_bw -s 64 -n 1000000|put_bw -s 64 -n 100000 -D zcopy"
)

# ucx TLS TEST...: the figure of one ucx_perftest pair over UCT transport
# TLS (device "memory"): lat: 50th percentile in us; bw: MB/s as GB/s;
# a 64 B put_bw: messages/s as M/s. "-" runs nothing (no such test).
ucx() {
	local tl=$1 f=$out/raw/ucx.$1.$RANDOM
	shift
	[[ $1 == - ]] && { echo none; return; }
	ucx_pair "$f" -x "$tl" -d memory -t "$@"
	awk -v t="$1" -v s="$3" '/^Final:/ {
		if (t ~ /lat$/) print $3;
		else if (s <= 64) printf "%.3f\n", $8 / 1e6;
		else printf "%.3f\n", $6 / 1000 }' "$f" | grep . || echo fail
}

# uroce ENV BINARY ARGS...: one perftest pair (lat: t_typical us; bw: GB/s;
# 64 B bw: perftest's MsgRate in M/s)
uroce() {
	local env=$1 bin=$2 co=$out/raw/$2.$RANDOM v
	shift 2
	# shellcheck disable=SC2206 # env: one VAR=value or nothing
	ab_pre=(env LD_LIBRARY_PATH="$b/lib" $env)
	v=$(ab_pair "$co.srv" "$co.cli" "$bin" -F "$@")
	if [[ $v == fail || $bin == *_lat ]]; then
		echo "$v"
	elif [[ " $* " == *" -s 64 "* ]]; then
		grep -E '^ *64 ' "$co.cli" | awk '{ print $5 }' | tail -1
	else
		# perftest's MB/sec are MiB/s
		awk -v v="$v" 'BEGIN { printf "%.3f\n", v * 1.048576 / 1000 }'
	fi
}

# rs_pair OUT SERVER... -- CLIENT...: one pair on 127.0.0.1 under GNU
# time, each run behind the command prefix in the array rs_pre; the
# client's output in OUT, the two time lines ("user sys involuntary
# voluntary") in OUT.t.srv and OUT.t.cli.
rs_pair() {
	local out=$1 srv=()
	shift
	while [[ $1 != -- ]]; do srv+=("$1"); shift; done
	shift
	/usr/bin/time -f "%U %S %c %w" -o "$out.t.srv" timeout 60 "${rs_pre[@]}" "${srv[@]}" \
		>"$out.srv" 2>&1 &
	sleep 0.5
	/usr/bin/time -f "%U %S %c %w" -o "$out.t.cli" timeout 60 "${rs_pre[@]}" "$@" \
		>"$out" 2>"$out.err"
	wait
}

# rsock MODE TEST: "Gb/s cpu_s ctxsw" of one pair of TEST (rstream,
# iperf3) over uroce's rsockets (MODE: the UROCE_LINK value, "" for the
# default) or over kernel TCP (MODE tcp), or "fail"
rsock() {
	local mode=$1 f=$out/raw/rs.$2.$RANDOM port=$((20000 + RANDOM % 20000)) g
	local lk=() sock=()
	[[ -n $mode && $mode != tcp ]] && lk=(UROCE_LINK="$mode")
	case $2 in
	rstream)
		# rstream calls rsockets itself: uroce's librdmacm, no preload;
		# -T s: the same program on kernel sockets
		if [[ $mode == tcp ]]; then
			rs_pre=(env)
			sock=(-T s)
		else
			rs_pre=(env LD_LIBRARY_PATH="$b/lib" "${lk[@]}")
		fi
		rs_pair "$f" rstream -b 127.0.0.1 -p "$port" -S 1000000 -C 100 -T b "${sock[@]}" \
			-- rstream -s 127.0.0.1 -p "$port" -S 1000000 -C 100 -T b "${sock[@]}"
		g=$(awk '$1 == "custom" { print $7 }' "$f" | tail -1) ;;
	iperf3)
		if [[ $mode == tcp ]]; then
			rs_pre=(env)
		else
			rs_pre=(env UROCE_LIBDIR="$b/lib" "${lk[@]}" "$repo/tools/uroce" run --rsocket --)
		fi
		rs_pair "$f" iperf3 -s -1 -B 127.0.0.1 -p "$port" \
			-- iperf3 -c 127.0.0.1 -p "$port" -n 400M -J
		g=$(python3 -c 'import json, sys
print("%.3f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e9))' "$f" 2>/dev/null) ;;
	esac
	[[ -n $g && -s $f.t.srv && -s $f.t.cli ]] || { echo fail; return; }
	awk -v g="$g" '{ c += $1 + $2; s += $3 + $4 }
		END { printf "%s %.2f %d\n", g, c, s }' "$f.t.srv" "$f.t.cli"
}

# Open MPI's two ranks run as root only when told they may
mpi_root=()
(($(id -u) == 0)) && mpi_root=(--allow-run-as-root)
mpicc -O2 -o "$out/mpi_pingpong" "$here/mpi/mpi_pingpong.c" &&
	mpicc -O2 -o "$out/mpi_ring_bw" "$here/mpi/mpi_ring_bw.c" ||
	{ echo "mpicc failed" >&2; exit 2; }

# mpi MODE: "lat bw64k bw1m" of one 2-rank run (MODE: vader, or the
# UROCE_LINK value for UCX rc_verbs over uroce, "" for the default)
mpi() {
	local f=$out/raw/mpi.${1:-auto}.$RANDOM
	if [[ $1 == vader ]]; then
		timeout 120 mpirun "${mpi_root[@]}" --oversubscribe -np 2 \
			--mca pml ob1 --mca btl self,vader "$out/mpi_pingpong" \
			>"$f" 2>&1
	else
		env UROCE_LIBDIR="$b/lib" ${1:+UROCE_LINK="$1"} timeout 120 \
			"$repo/tools/uroce" run -- mpirun "${mpi_root[@]}" \
			--oversubscribe -np 2 --mca pml ucx --mca btl self \
			--mca osc ^ucx -x UCX_TLS=rc_verbs,ud_verbs \
			-x UCX_NET_DEVICES=uroce0:1 "$out/mpi_pingpong" >"$f" 2>&1
	fi
	awk '$1 == "mpi_lat_8" { l = $2 } $1 == "mpi_bw_64k" { a = $2 }
	     $1 == "mpi_bw_1m" { m = $2 }
	     END { if (l == "" || a == "" || m == "") print "fail fail fail";
		   else print l, a, m }' "$f"
}

# mpiscale NP MODE: "bw64k bw1m" of one ring of NP ranks (MODE: vader,
# or "" for UCX rc_verbs over uroce by default)
mpiscale() {
	local f=$out/raw/mpiscale.$1.${2:-auto}.$RANDOM
	if [[ $2 == vader ]]; then
		timeout 120 mpirun "${mpi_root[@]}" --oversubscribe -np "$1" \
			--mca pml ob1 --mca btl self,vader "$out/mpi_ring_bw" \
			>"$f" 2>&1
	else
		env UROCE_LIBDIR="$b/lib" timeout 120 \
			"$repo/tools/uroce" run -- mpirun "${mpi_root[@]}" \
			--oversubscribe -np "$1" --mca pml ucx --mca btl self \
			--mca osc ^ucx -x UCX_TLS=rc_verbs,ud_verbs \
			-x UCX_NET_DEVICES=uroce0:1 "$out/mpi_ring_bw" >"$f" 2>&1
	fi
	awk '$1 == "ring_bw_64k" { a = $2 } $1 == "ring_bw_1m" { m = $2 }
	     END { if (a == "" || m == "") print "fail fail"; else print a, m }' "$f"
}

only=,${BENCH_ONLY:-perftest,rsockets,mpi,mpiscale},
part() { [[ $only == *",$1,"* ]]; }

for ((r = 1; r <= reps; r++)); do
	echo "round $r/$reps (load $(load))" >&2
	part mpi && for m in auto udp vader; do
		read -r l a mm <<<"$(mpi "${m#auto}")"
		{
			echo "$r mpi_lat_8 $m $l"
			echo "$r mpi_bw_64k $m $a"
			echo "$r mpi_bw_1m $m $mm"
		} >>"$res"
	done
	part mpiscale && for np in 2 4 8; do
		for m in auto vader; do
			read -r a mm <<<"$(mpiscale $np "${m#auto}")"
			{
				echo "$r ring_64k_np$np $m $a"
				echo "$r ring_1m_np$np $m $mm"
			} >>"$res"
		done
	done
	part rsockets && for t in rstream iperf3; do
		for m in auto rings tcp; do
			read -r g c s <<<"$(rsock "${m#auto}" $t)"
			{
				echo "$r rs_$t $m $g"
				echo "$r rs_${t}_cpu $m ${c:-fail}"
				echo "$r rs_${t}_ctxsw $m ${s:-fail}"
			} >>"$res"
		done
	done
	part perftest && for row in "${rows[@]}"; do
		IFS='|' read -r name pt posix cma <<<"$row"
		read -r bin args <<<"$pt"
		# shellcheck disable=SC2086 # the rows' words
		{
			echo "$r $name auto $(uroce "" "$bin" $args)"
			echo "$r $name rings $(uroce UROCE_LINK=rings "$bin" $args)"
			echo "$r $name udp $(uroce UROCE_LINK=udp "$bin" $args)"
			echo "$r $name ucx_posix $(ucx posix $posix)"
			echo "$r $name ucx_cma $(ucx cma $cma)"
		} >>"$res"
	done
done

python3 - "$res" "$reps" <<'EOF'
import statistics, sys
from collections import defaultdict
vals = defaultdict(dict)
notrun = set()
for line in open(sys.argv[1]):
    r, row, col, v = line.split()
    if v == "none":
        notrun.add((row, col))
    try:
        vals[(row, col)][int(r)] = float(v)
    except ValueError:
        pass
def med(row, col):
    v = list(vals[(row, col)].values())
    return statistics.median(v) if v else None
def ratio(row, a, b):
    rs = [vals[(row, a)][r] / vals[(row, b)][r] for r in vals[(row, a)]
          if r in vals[(row, b)] and vals[(row, b)][r] > 0]
    return statistics.median(rs) if rs else None
def f(v):
    return "fail" if v is None else ("%.3g" % v)
unit = {"write_lat": "µs", "read_lat": "µs", "send_lat": "µs",
        "msg_rate_64": "M/s"}
cols = ["auto", "rings", "udp", "ucx_cma", "ucx_posix"]
def has(rows):
    return any(vals.get((r, c)) for r in rows for c in
               ["auto", "rings", "udp", "tcp", "vader", "ucx_cma", "ucx_posix"])
perftest = ["write_lat", "read_lat", "send_lat", "write_bw_64k",
            "read_bw_64k", "write_bw_1m", "read_bw_1m", "msg_rate_64"]
if has(perftest):
    print("| median of %s rounds | unit | uroce (default) | uroce rings | uroce UDP | UCX cma | UCX posix | default / UDP | default / cma |" % sys.argv[2])
    print("|---|---|---|---|---|---|---|---|---|")
    for row in perftest:
        print("| %s | %s | %s | %s | %s |" % (
            row, unit.get(row, "GB/s"),
            " | ".join("–" if (row, c) in notrun else f(med(row, c))
                       for c in cols),
            f(ratio(row, "auto", "udp")),
            "–" if (row, "ucx_cma") in notrun else
            f(ratio(row, "auto", "ucx_cma"))))
    print()
def named_table(first, titles, names, cols, ratio_title):
    """the rows of names over the columns cols, and the ratio of the first
    column to the last; nothing if none of them ran"""
    if not has(names):
        return False
    print("| median of %s rounds%s | %s | %s |" % (
        sys.argv[2], first, " | ".join(titles), ratio_title))
    print("|---" * (len(cols) + 2) + "|")
    for row in names:
        print("| %s | %s | %s |" % (
            names[row], " | ".join(f(med(row, c)) for c in cols),
            f(ratio(row, cols[0], cols[-1]))))
    return True
if named_table("", ["uroce (default)", "uroce rings", "kernel TCP"],
               {"rs_rstream": "rstream -T b, 1 MB: Gb/s",
                "rs_rstream_cpu": "rstream: CPU s (both)",
                "rs_rstream_ctxsw": "rstream: context switches",
                "rs_iperf3": "iperf3 400 MB: Gb/s",
                "rs_iperf3_cpu": "iperf3: CPU s (both)",
                "rs_iperf3_ctxsw": "iperf3: context switches"},
               ["auto", "rings", "tcp"], "default / TCP"):
    print()
named_table(", Open MPI 2 ranks",
            ["UCX rc_verbs on uroce (default)", "the same, UROCE_LINK=udp",
             "vader (shared memory)"],
            {"mpi_lat_8": "8 B one-way latency, µs",
             "mpi_bw_64k": "64 KiB, 16 in flight: GB/s",
             "mpi_bw_1m": "1 MiB, 16 in flight: GB/s"},
            ["auto", "udp", "vader"], "default / vader")
if has(["ring_64k_np2"]):
    print()
named_table(", Open MPI ring, all ranks' GB/s",
            ["UCX rc_verbs on uroce (default)", "vader (shared memory)"],
            dict(("ring_%s_np%d" % (s, n), "%s, %d ranks" % (t, n))
                 for s, t in (("64k", "64 KiB"), ("1m", "1 MiB"))
                 for n in (2, 4, 8)),
            ["auto", "vader"], "default / vader")
EOF
echo "raw outputs: $out" >&2
