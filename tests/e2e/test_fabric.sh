#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# libfabric (Debian's libfabric-bin, unmodified) over uroce: fi_pingpong
# with the verbs provider, RDM endpoints (libfabric layers them on verbs
# datagrams: ofi_rxd), with -v: every received byte is checked, 1 B to
# 64 KiB (64 KiB messages timed out in an earlier session; which change
# cured them was not bisected). MSG and DGRAM endpoints (through
# librdmacm) are in test_fabric_cm.sh.
# About 20 s on a loaded 2-core machine.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
command -v fi_pingpong >/dev/null || { echo "SKIP: libfabric-bin not installed"; exit 77; }
U="$(cd "$(dirname "$0")/../.." && pwd)/tools/uroce"
export UROCE_LIBDIR=$(cd "$LIBDIR" && pwd)
cd "$E2E_TMP"	# a timed-out fi_pingpong leaves a backtrace file in its cwd

fi_pp() {	# NAME ENDPOINT SIZE ITERATIONS
	local name=$1 ep=$2 size=$3 n=$4 p
	p=$(e2e_port)
	e2e_pair "$name" 90 \
		"$U run -- fi_pingpong -p verbs -e $ep -v -I $n -S $size -B $p" \
		"$U run -- fi_pingpong -p verbs -e $ep -v -I $n -S $size -P $p 127.0.0.1" \
		"^[0-9]+k? +$n +=$n "
}

fi_pp fi_rdm_64 rdm 64 200
fi_pp fi_rdm_4k rdm 4096 100
fi_pp fi_rdm_1 rdm 1 200
fi_pp fi_rdm_64k rdm 65536 50
e2e_summary
