#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# libfabric's verbs provider (Debian's libfabric-bin, unmodified) on the
# endpoint types that need librdmacm, every fi_pingpong with -v (each
# received byte checked, exit status non-zero on a mismatch):
#  - FI_EP_DGRAM (UD; the provider's event queue is an rdma_cm event
#    channel) on loopback, 64 B and 1 KiB;
#  - FI_EP_MSG (RC connected through rdma_cm: rdma_create_ep, migrate to
#    the EQ's channel, connect/accept, shutdown, destroy) and RDM over it
#    (ofi_rxm), 1 B to 64 KiB. The provider offers MSG only on an
#    interface that is up, not loopback, and carries an address
#    rdma_bind_addr maps to a device (vrb_getifaddrs), so this part runs
#    in a network namespace of its own, with a veth pair carrying
#    10.207.0.1 (server, UROCE_ADDRS) and 10.207.0.2 (client); it needs
#    root (else skipped). fi_info must list uroce0 as FI_EP_MSG there.
# About 25 s here (a loaded 2-core machine).
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
command -v fi_pingpong >/dev/null || { echo "SKIP: libfabric-bin not installed"; exit 77; }
U="$(cd "$(dirname "$0")/../.." && pwd)/tools/uroce"
export UROCE_LIBDIR=$(cd "$LIBDIR" && pwd)
cd "$E2E_TMP"	# a timed-out fi_pingpong leaves a backtrace file in its cwd

# fi_pp NAME PROVIDER ENDPOINT SIZE ITERATIONS SERVER-PREFIX CLIENT-PREFIX DEST
fi_pp() {
	local name=$1 prov=$2 ep=$3 size=$4 n=$5 sp=$6 cp=$7 dst=$8 p
	p=$(e2e_port)
	e2e_pair "$name" 90 \
		"$sp $U run -- fi_pingpong -p '$prov' -e $ep -v -I $n -S $size -B $p" \
		"$cp $U run -- fi_pingpong -p '$prov' -e $ep -v -I $n -S $size -P $p $dst" \
		"^[0-9]+k? +$n +=$n "
}

fi_pp fi_dgram_64 verbs dgram 64 200 "" "" 127.0.0.1
fi_pp fi_dgram_1k verbs dgram 1024 100 "" "" 127.0.0.1

NS=ur-eco-fab-$$
if (($(id -u) != 0)) || ! ip netns add "$NS" 2>/dev/null; then
	e2e_skip fi_msg "needs root and ip netns"
	e2e_summary
	exit
fi
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$E2E_TMP"' EXIT
ip -n "$NS" link set lo up &&
	ip -n "$NS" link add ur-eco-va type veth peer name ur-eco-vb &&
	ip -n "$NS" addr add 10.207.0.1/24 dev ur-eco-va &&
	ip -n "$NS" addr add 10.207.0.2/24 dev ur-eco-vb &&
	ip -n "$NS" link set ur-eco-va up &&
	ip -n "$NS" link set ur-eco-vb up || {
	e2e_fail "fi_msg: cannot set up veth pair in $NS"
	e2e_summary
	exit
}
SRV="UROCE_ADDRS=10.207.0.1 ip netns exec $NS"
CLI="UROCE_ADDRS=10.207.0.2 ip netns exec $NS"

if bash -c "$SRV $U run -- fi_info -p verbs -t FI_EP_MSG" >"$E2E_TMP/info" 2>&1 &&
   grep -q "domain: uroce0$" "$E2E_TMP/info" &&
   grep -q "type: FI_EP_MSG" "$E2E_TMP/info"; then
	e2e_pass fi_info_msg
else
	e2e_fail fi_info_msg
	cat "$E2E_TMP/info"
fi
fi_pp fi_msg_1 verbs msg 1 200 "$SRV" "$CLI" 10.207.0.1
fi_pp fi_msg_4k verbs msg 4096 100 "$SRV" "$CLI" 10.207.0.1
fi_pp fi_msg_64k verbs msg 65536 30 "$SRV" "$CLI" 10.207.0.1
fi_pp fi_rxm_4k "verbs;ofi_rxm" rdm 4096 50 "$SRV" "$CLI" 10.207.0.1
fi_pp fi_rxm_64k "verbs;ofi_rxm" rdm 65536 20 "$SRV" "$CLI" 10.207.0.1
e2e_summary
