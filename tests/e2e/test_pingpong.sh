#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# ibverbs-utils pingpongs, unmodified, two processes on this host, GID 0.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"

ok_line='[0-9]+ bytes in [0-9.]+ seconds'
iters_line='[0-9]+ iters in [0-9.]+ seconds'

for size in 64 4096 20000; do
	p=$(e2e_port)
	e2e_pair "rc_pingpong_$size" 60 \
		"ibv_rc_pingpong -d uroce0 -g 0 -p $p -n 200 -s $size -c" \
		"ibv_rc_pingpong -d uroce0 -g 0 -p $p -n 200 -s $size -c 127.0.0.1" \
		"$ok_line" "$iters_line"
done
# device memory (-j): send and receive buffers in a DM, contents checked
for size in 64 8192; do
	p=$(e2e_port)
	e2e_pair "rc_pingpong_dm_$size" 60 \
		"ibv_rc_pingpong -d uroce0 -g 0 -p $p -n 200 -s $size -j -c" \
		"ibv_rc_pingpong -d uroce0 -g 0 -p $p -n 200 -s $size -j -c 127.0.0.1" \
		"$ok_line" "$iters_line"
done
# path MTU 1024 (as rxe on a 1500-byte link): many packets per message
p=$(e2e_port)
e2e_pair rc_pingpong_mtu1024 60 \
	"ibv_rc_pingpong -d uroce0 -g 0 -p $p -n 100 -s 10000 -m 1024" \
	"ibv_rc_pingpong -d uroce0 -g 0 -p $p -n 100 -s 10000 -m 1024 127.0.0.1" \
	"$ok_line"
# completion channel (events) instead of polling
p=$(e2e_port)
e2e_pair rc_pingpong_events 60 \
	"ibv_rc_pingpong -d uroce0 -g 0 -p $p -n 200 -s 1024 -e" \
	"ibv_rc_pingpong -d uroce0 -g 0 -p $p -n 200 -s 1024 -e 127.0.0.1" \
	"$ok_line"
for size in 64 4096; do
	p=$(e2e_port)
	e2e_pair "uc_pingpong_$size" 60 \
		"ibv_uc_pingpong -d uroce0 -g 0 -p $p -n 200 -s $size" \
		"ibv_uc_pingpong -d uroce0 -g 0 -p $p -n 200 -s $size 127.0.0.1" \
		"$ok_line"
done
for size in 64 2048; do
	p=$(e2e_port)
	e2e_pair "ud_pingpong_$size" 60 \
		"ibv_ud_pingpong -d uroce0 -g 0 -p $p -n 200 -s $size" \
		"ibv_ud_pingpong -d uroce0 -g 0 -p $p -n 200 -s $size 127.0.0.1" \
		"$ok_line"
done
for size in 64 8192; do
	p=$(e2e_port)
	e2e_pair "srq_pingpong_$size" 60 \
		"ibv_srq_pingpong -d uroce0 -g 0 -p $p -n 100 -s $size -q 4" \
		"ibv_srq_pingpong -d uroce0 -g 0 -p $p -n 100 -s $size -q 4 127.0.0.1" \
		"$ok_line"
done
# XRC: XRC_SEND QPs to the peer's XRC_RECV QP, receives from an XRC SRQ
# (completions on the SRQ's CQ); path MTU 1024: several packets from 4 KiB
for size in 64 4096 20000; do
	p=$(e2e_port)
	e2e_pair "xsrq_pingpong_$size" 60 \
		"ibv_xsrq_pingpong -d uroce0 -g 0 -p $p -n 100 -s $size -m 1024" \
		"ibv_xsrq_pingpong -d uroce0 -g 0 -p $p -n 100 -s $size -m 1024 127.0.0.1" \
		"^success"
done
p=$(e2e_port)
e2e_pair xsrq_pingpong_events 60 \
	"ibv_xsrq_pingpong -d uroce0 -g 0 -p $p -n 100 -s 1024 -e" \
	"ibv_xsrq_pingpong -d uroce0 -g 0 -p $p -n 100 -s 1024 -e 127.0.0.1" \
	"^success"
e2e_summary
