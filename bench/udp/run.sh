#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Raw UDP baselines on loopback (docs/benchmarks.md). Builds nothing:
#   bench/udp/run.sh <build-dir>
# Prints "name value unit" lines; every mode is bounded to a few seconds.
# udp_bench: plain sockets; link_bench: the same through link/.
set -euo pipefail
b=${1:?usage: $0 <build-dir>}
bin=$b/bench/udp/udp_bench
[[ -x $bin ]] || { echo "no $bin (build target udp_bench first)" >&2; exit 1; }
# latency: up to 50000 round trips, at most ~4 s per variant
timeout 30 "$bin" lat -n 50000 -t 2
# throughput: 3 runs x 1 s per variant, median
timeout 60 "$bin" tput -t 1 -r 3
# the same through link/ (ur_link_send/recv), when built
if [[ -x $b/bench/udp/link_bench ]]; then
	timeout 30 "$b/bench/udp/link_bench" lat -n 50000 -t 2
	timeout 60 "$b/bench/udp/link_bench" tput -t 1 -r 3
fi
