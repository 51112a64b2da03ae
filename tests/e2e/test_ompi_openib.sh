#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Open MPI's openib BTL (Debian's openmpi-bin, unmodified) on uroce under
# `uroce run`. It finds its devices through ibv_get_sysfs_path()/class/
# infiniband, so it must see uroce0, port 1 (uroce's device tree).
# It can only move data over a RoCE port with the rdmacm connection method
# (CPC): udcm refuses every port whose link layer is not InfiniBand, for
# rxe and RoCE NICs alike. Debian 12's Open MPI 4.1 builds openib with
# udcm alone, so there the 2-rank ping-pong (mpi/pingpong.c, every byte
# checked) is skipped, loudly; with a build that has rdmacm it runs. Use
# --mca pml ucx (test_ompi.sh) instead. About 10 s.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
for t in mpicc mpirun ompi_info; do
	command -v $t >/dev/null || {
		echo "SKIP: $t not installed (scripts/install-deps.sh)"
		exit 77
	}
done
ompi_info 2>/dev/null | grep -q "MCA btl: openib" || {
	echo "SKIP: this Open MPI has no openib BTL"
	exit 77
}
HERE=$(cd "$(dirname "$0")" && pwd)
U=$HERE/../../tools/uroce
export UROCE_LIBDIR=$LIBDIR
root=()
(($(id -u) == 0)) && root=(--allow-run-as-root)
mpicc -O2 -o "$E2E_TMP/pingpong" "$HERE/mpi/pingpong.c" || {
	echo "FAIL: mpicc"; exit 1
}
cpcs=$(ompi_info --param btl openib --level 9 2>/dev/null |
	sed -n 's/.*btl_openib_cpc_include.*//; s/.*(valid values: \(.*\))/\1/p' | head -n 1)
echo "openib connection methods in this build: ${cpcs:-none}"

# Discovery: the BTL opens uroce0 and gets as far as choosing a CPC for
# port 1 (udcm-only builds then disable the port, which is the limit).
# The port's verdict comes through ORTE's show_help, which on a loaded
# machine has failed in show_help.c ("Out of resource" once, "Data unpack
# would read past end of buffer" once) and lost the message: then the run
# is repeated (at most 3 runs).
out=$E2E_TMP/discover.out
for try in 1 2 3; do
	timeout 120 "$U" run -- mpirun "${root[@]}" --oversubscribe -np 1 \
		--mca pml ob1 --mca btl openib,self --mca btl_base_verbose 100 \
		--mca btl_openib_warn_no_device_params_found 0 \
		"$E2E_TMP/pingpong" >"$out" 2>&1
	grep -q "ORTE_ERROR_LOG: .* in file .*show_help.c" "$out" ||
		break
	echo "openib discovery run $try: ORTE's show_help failed, again"
done
if grep -q "Checking distance from this process to device=uroce0" "$out" &&
   { [[ $cpcs == *rdmacm* ]] ||
     grep -qE "Local device: +uroce0" "$out"; }; then
	e2e_pass openib_finds_uroce0
else
	e2e_fail openib_finds_uroce0
	grep -iE "openib|uroce|error" "$out" | head -n 20
fi

if [[ $cpcs != *rdmacm* ]]; then
	e2e_skip openib_pingpong "this openib has no rdmacm CPC (udcm refuses RoCE ports)"
else
	out=$E2E_TMP/pp.out
	timeout 180 "$U" run -- mpirun "${root[@]}" --oversubscribe -np 2 \
		--mca pml ob1 --mca btl openib,self \
		--mca btl_openib_cpc_include rdmacm \
		--mca btl_openib_warn_no_device_params_found 0 \
		"$E2E_TMP/pingpong" >"$out" 2>&1
	rc=$?
	if ((rc == 0)) && grep -qx "pingpong ok 480 223696200" "$out"; then
		e2e_pass openib_pingpong
	else
		e2e_fail "openib_pingpong (rc=$rc)"
		tail -n 30 "$out"
	fi
fi
e2e_summary
