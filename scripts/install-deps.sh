#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs the Debian 12 packages uroce needs to build, test and demo.
# Only what is missing is installed; safe to run again.
set -euo pipefail

PKGS=(
	# build
	build-essential cmake ninja-build pkg-config
	libibverbs-dev librdmacm-dev	# rdma-core public headers: the ABI contract
	libisal-dev			# ISA-L CRC-32 for the ICRC
	libcmocka-dev			# unit-test framework
	clang libclang-rt-14-dev	# libFuzzer + sanitizer runtimes
	# the unmodified programs we test against
	ibverbs-utils rdmacm-utils perftest python3-pyverbs
	ucx-utils libfabric-bin
	openmpi-bin libopenmpi-dev	# mpirun + mpicc: Open MPI over UCX (test_ompi.sh)
	qperf fio			# rdma_cm consumers (test_qperf.sh, test_fio.sh)
	iperf3				# a TCP program over rsockets (test_rsocket.sh)
	infiniband-diags		# ibstat, ibstatus on the device tree (test_diag_tools.sh)
	# wire checks and tooling
	tshark python3 iproute2 procps
	groff-base			# renders the man pages, warnings checked (check_man.sh)
	gnuplot-nox			# plots: examples/claims_plot.gp, bench/sizes_plot.gp
	time				# /usr/bin/time: CPU per GB in bench/run.sh
	liburing-dev			# io_uring against plain calls (bench/udp/uring_bench)
	# the rxe interop step (tests/interop/run_rxe.sh): a qemu guest with
	# the stock kernel's rdma_rxe, its image made by debootstrap, the wire
	# captured by tcpdump, packets dropped on the bridge by nft
	qemu-system-x86 qemu-utils debootstrap e2fsprogs tcpdump nftables
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done

if ((${#missing[@]})); then
	echo "uroce: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "uroce: dependencies present"
