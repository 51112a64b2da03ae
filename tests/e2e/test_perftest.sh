#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# perftest, unmodified, two processes on this host, GID index 0: every
# RC/UC/UD/XRC benchmark the issues list, with -a, inline, post lists, and both
# posting APIs. Iteration counts are small: this checks function, the
# benchmark script (bench/run.sh) measures speed.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"

# a result row: bytes, iterations, peak, average (non-zero), msg rate
bw_line='^ *[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]*[1-9][0-9.]*[[:space:]]+[0-9.]+'
# a result row: bytes, iterations, t_min, t_max, t_typical ...
lat_line='^ *[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+'

perf() {	# perf NAME "common args" REGEX
	local name=$1 args=$2 re=$3 p
	p=$(e2e_port)
	e2e_pair "$name" 90 \
		"$name_bin -d uroce0 -x 0 -F -p $p $args" \
		"$name_bin -d uroce0 -x 0 -F -p $p $args 127.0.0.1" "$re"
}

run() {		# run BINARY TAG "args" REGEX
	name_bin=$1
	perf "$1$2" "$3" "$4"
}

for t in send write read atomic; do
	run ib_${t}_lat "" "-n 200" "$lat_line"
	run ib_${t}_bw "" "-n 200" "$bw_line"
done
# UC may lose a message (IBA) and ib_send_bw's server then waits for it
# forever: 100 messages of 64 KiB are 1 600 packets, which the receiver's
# same-host ring (2 048 slots) holds even while the server is not
# scheduled for the whole burst (with 200, a sanitized run's server, slow
# to drain, once waited for a lost one)
for t in send write; do
	run ib_${t}_lat _uc "-c UC -n 200" "$lat_line"
	run ib_${t}_bw _uc "-c UC -n 100" "$bw_line"
done
run ib_send_lat _ud "-c UD -n 200" "$lat_line"
run ib_send_bw _ud "-c UD -n 200" "$bw_line"
# XRC: XRC_SEND to XRC_RECV QPs, receives from an XRC SRQ (both APIs)
for t in send write read atomic; do
	run ib_${t}_lat _xrc "-c XRC -n 200" "$lat_line"
	run ib_${t}_bw _xrc "-c XRC -n 200" "$bw_line"
done
run ib_send_bw _xrc_oldpost "-c XRC --use_old_post_send -n 200" "$bw_line"
# all sizes 2 B .. 8 MiB (fewer iterations in the sanitized run, where
# these three are most of the script's time: E2E_ALL_ITERS, CMakeLists.txt)
all_n=${E2E_ALL_ITERS:-20}
run ib_write_bw _all "-a -n $all_n" "$bw_line"
run ib_read_lat _all "-a -n $all_n" "$lat_line"
run ib_send_lat _all "-a -n $all_n" "$lat_line"
# inline sends and writes
run ib_send_lat _inline "-I 64 -s 64 -n 200" "$lat_line"
run ib_write_lat _inline "-I 64 -s 64 -n 200" "$lat_line"
# post lists (doorbell batching)
run ib_write_bw _postlist "-l 8 -n 400" "$bw_line"
run ib_send_bw _postlist "-l 8 -n 400" "$bw_line"
# the old ibv_post_send path (default is the ibv_wr_* API)
for t in send write read atomic; do
	run ib_${t}_bw _oldpost "--use_old_post_send -n 200" "$bw_line"
done
e2e_summary
