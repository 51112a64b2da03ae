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

# CI runs as root: mpirun needs to be told that is fine
root=()
(($(id -u) == 0)) && root=(--allow-run-as-root)

# ompi_job NAME NP PROG LINE: mpi/PROG.c on NP ranks over UCX on uroce
# (its devices' counters in $stats); passes when it exits 0 having
# printed LINE
ompi_job() {
	local name=$1 np=$2 prog=$3 line=$4 rc
	mpicc -O2 -o "$E2E_TMP/$prog" "$HERE/mpi/$prog.c" || {
		echo "FAIL: mpicc $prog"; exit 1
	}
	rm -f "$stats"
	UROCE_STATS=$stats timeout 180 "$U" run -- mpirun "${root[@]}" \
		--oversubscribe -np "$np" --mca pml ucx --mca btl self \
		--mca osc ^ucx -x UCX_TLS=rc_verbs,ud_verbs \
		-x UCX_NET_DEVICES=uroce0:1 "$E2E_TMP/$prog" >"$out" 2>&1
	rc=$?
	if ((rc == 0)) && grep -qx "$line" "$out"; then
		e2e_pass "$name"
	else
		e2e_fail "$name (rc=$rc)" "$(tail -n 30 "$out")"
	fi
}

# ranks_with COUNTER MIN: how many ranks' devices counted at least MIN
ranks_with() {
	awk -v c="$1" -v m="$2" '$1 == c && $2 >= m {n++} END {print n + 0}' \
		"$stats" 2>/dev/null
}

# ranks_sent MIN: how many ranks' devices sent at least MIN packets and
# SENDs copied into the peer's receives (UROCE_SRQ_COPY=1) together
ranks_sent() {
	awk -v m="$1" '/^#/ { if (seen && t >= m) n++; t = 0; seen = 1 }
		$1 == "tx_pkts" || $1 == "direct_sends" { t += $2 }
		END { if (seen && t >= m) n++; print n + 0 }' \
		"$stats" 2>/dev/null
}

# 12 sizes x 20 rounds x 2 directions; bytes = 40 x (1 + 4 + ... + 4 MiB)
ompi_job ompi_pingpong_ucx 2 pingpong "pingpong ok 480 223696200"
# each rank's uroce0 sent at least its 240 messages, as packets or copies
n=$(ranks_sent 240)
if [[ $n == 2 ]]; then
	e2e_pass ompi_traffic_on_uroce
else
	e2e_fail "ompi_traffic_on_uroce ($n ranks)" "$(head -20 "$stats" 2>/dev/null)"
fi

# many processes on one host: 8 ranks, 8 devices, 16 RC connections;
# 12 sizes x 5 rounds to the next rank (ring.c)
ompi_job ompi_ring_8_ranks 8 ring "ring ok 8 480 223696200"
# every rank's rendezvous data went by one copy between the processes
n=$(ranks_with direct_bytes 4194304)
if [[ $n == 8 ]]; then
	e2e_pass ompi_ring_8_ranks_single_copy
else
	e2e_fail "ompi_ring_8_ranks_single_copy ($n ranks)"
fi
e2e_summary
