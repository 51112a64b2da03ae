#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Open MPI (Debian's openmpi-bin, unmodified) over UCX over uroce: a 2-rank
# ping-pong of 1 B .. 4 MiB that checks every byte (mpi/pingpong.c), with
# --mca pml ucx restricted to uroce's transports (UCX_TLS=rc_verbs,ud_verbs,
# UCX_NET_DEVICES=uroce0:1), under `uroce run`. UROCE_STATS shows that both
# ranks moved their packets over uroce (and is written at exit: MPI ranks
# do not close their devices). Then 8 ranks on this host pass 1 B .. 4 MiB
# around a ring and all-reduce (mpi/ring.c, every byte checked): many
# processes share the same-host link, and every rank's large messages go
# by the single-copy path. About 40 s.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
for t in mpicc mpirun ucx_info; do
	command -v $t >/dev/null || {
		echo "SKIP: $t not installed (scripts/install-deps.sh)"
		exit 77
	}
done
HERE=$(cd "$(dirname "$0")" && pwd)
U=$HERE/../../tools/uroce
export UROCE_LIBDIR=$LIBDIR
out=$E2E_TMP/ompi.out
stats=$E2E_TMP/stats

mpicc -O2 -o "$E2E_TMP/pingpong" "$HERE/mpi/pingpong.c" || {
	echo "FAIL: mpicc"; exit 1
}
# CI runs as root: mpirun needs to be told that is fine
root=()
(($(id -u) == 0)) && root=(--allow-run-as-root)
UROCE_STATS=$stats timeout 180 "$U" run -- mpirun "${root[@]}" \
	--oversubscribe -np 2 --mca pml ucx --mca btl self --mca osc ^ucx \
	-x UCX_TLS=rc_verbs,ud_verbs -x UCX_NET_DEVICES=uroce0:1 \
	"$E2E_TMP/pingpong" >"$out" 2>&1
rc=$?
# 12 sizes x 20 rounds x 2 directions; bytes = 40 x (1 + 4 + ... + 4 MiB)
if ((rc == 0)) && grep -qx "pingpong ok 480 223696200" "$out"; then
	E2E_PASS=$((E2E_PASS + 1)); echo "PASS ompi_pingpong_ucx"
else
	E2E_FAIL=$((E2E_FAIL + 1)); echo "FAIL ompi_pingpong_ucx (rc=$rc)"
	tail -n 30 "$out"
fi
# each rank's uroce0 sent and received at least its 240 messages' packets
n=$(awk '$1 == "tx_pkts" && $2 >= 240 {n++} END {print n + 0}' "$stats" 2>/dev/null)
if [[ $n == 2 ]]; then
	E2E_PASS=$((E2E_PASS + 1)); echo "PASS ompi_traffic_on_uroce"
else
	E2E_FAIL=$((E2E_FAIL + 1)); echo "FAIL ompi_traffic_on_uroce ($n ranks)"
	cat "$stats" 2>/dev/null | head -20
fi

# many processes on one host: 8 ranks, 8 devices, 16 RC connections
mpicc -O2 -o "$E2E_TMP/ring" "$HERE/mpi/ring.c" || {
	echo "FAIL: mpicc ring"; exit 1
}
rm -f "$stats"
UROCE_STATS=$stats timeout 180 "$U" run -- mpirun "${root[@]}" \
	--oversubscribe -np 8 --mca pml ucx --mca btl self --mca osc ^ucx \
	-x UCX_TLS=rc_verbs,ud_verbs -x UCX_NET_DEVICES=uroce0:1 \
	"$E2E_TMP/ring" >"$out" 2>&1
rc=$?
# 12 sizes x 5 rounds to the next rank, 8 ranks (ring.c)
if ((rc == 0)) && grep -qx "ring ok 8 480 223696200" "$out"; then
	E2E_PASS=$((E2E_PASS + 1)); echo "PASS ompi_ring_8_ranks"
else
	E2E_FAIL=$((E2E_FAIL + 1)); echo "FAIL ompi_ring_8_ranks (rc=$rc)"
	tail -n 30 "$out"
fi
# every rank's rendezvous data went by one copy between the processes
n=$(awk '$1 == "direct_bytes" && $2 >= 4194304 {n++} END {print n + 0}' "$stats" 2>/dev/null)
if [[ $n == 8 ]]; then
	E2E_PASS=$((E2E_PASS + 1)); echo "PASS ompi_ring_8_ranks_single_copy"
else
	E2E_FAIL=$((E2E_FAIL + 1)); echo "FAIL ompi_ring_8_ranks_single_copy ($n ranks)"
fi
e2e_summary
