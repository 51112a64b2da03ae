#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Raw UDP baselines on loopback (docs/benchmarks.md). Builds nothing:
#   bench/udp/run.sh <build-dir>
# Prints "name value unit" lines; every mode is bounded to a few seconds.
set -euo pipefail
b=${1:?usage: $0 <build-dir>}
bin=$b/bench/udp/udp_bench
[[ -x $bin ]] || { echo "no $bin (build target udp_bench first)" >&2; exit 1; }
# latency: up to 50000 round trips, at most ~4 s per variant
timeout 30 "$bin" lat -n 50000 -t 2
# throughput: 3 runs x 1 s per variant, median
timeout 60 "$bin" tput -t 1 -r 3
