#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# rdma-core's sysfs readers (Debian's infiniband-diags, unmodified) on
# uroce's device tree: ibstat (libibumad: scandir of the ports) and
# ibstatus (a shell script: cd /sys/class/infiniband, then relative
# paths). They never open a verbs device, so they see the tree of the
# nearest uroce process above them (the interposer's rule): here a
# pyverbs process that holds uroce0 open (UROCE_ADDRS=127.0.0.1,::1) and
# runs them, and `uroce run --hold`, whose uroce-hold parent opens the
# devices (for these two tools also without --hold). Each must report
# uroce0 port 1 Active/LinkUp, link layer Ethernet, and the GID the verbs
# API returns (127.0.0.1's). Not covered: `rdma`
# (iproute2) needs a NETLINK_RDMA socket, which only a kernel provides;
# ibdev2netdev and show_gids are not in Debian. A few seconds.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
PY=/usr/bin/python3
$PY -c 'import pyverbs' 2>/dev/null || { echo "SKIP: python3-pyverbs not installed"; exit 77; }
for t in ibstat ibstatus; do
	command -v $t >/dev/null || { echo "SKIP: $t not installed (infiniband-diags)"; exit 77; }
done
U="$(cd "$(dirname "$0")/../.." && pwd)/tools/uroce"
export UROCE_LIBDIR=$(cd "$LIBDIR" && pwd)

cat >"$E2E_TMP/hold.py" <<'PY'
import subprocess, sys
from pyverbs.device import Context
ctx = Context(name="uroce0")
print("gid0", ctx.query_gid(1, 0), flush=True)
for cmd in sys.argv[1:]:
    print("== " + cmd, flush=True)
    subprocess.run(cmd, shell=True)
PY
UROCE_ADDRS=127.0.0.1,::1 timeout 60 "$U" run -- $PY "$E2E_TMP/hold.py" \
	ibstat "ibstat -l" ibstatus >"$E2E_TMP/out" 2>&1
cat "$E2E_TMP/out"
gid=$(awk '$1 == "gid0" { print $2 }' "$E2E_TMP/out")
# section NAME: the lines a command printed
section() {
	awk -v c="== $1" '$0 == c { f = 1; next } /^== / { f = 0 } f' "$E2E_TMP/out"
}
check() {	# NAME REGEX...: every REGEX found in NAME's output
	local name=$1 re ok=1
	shift
	for re in "$@"; do
		section "$name" | grep -qE -- "$re" || { ok=0; echo "  $name: missing /$re/"; }
	done
	if ((ok)); then e2e_pass "$name"; else e2e_fail "$name"; fi
}
[[ $gid == 0000:0000:0000:0000:0000:ffff:7f00:0001 ]] ||
	e2e_fail "pyverbs GID 0 is '$gid', not ::ffff:127.0.0.1"
check ibstat "^CA 'uroce0'" "Number of ports: 1" "State: Active" \
	"Physical state: LinkUp" "Link layer: Ethernet" "Firmware version: uroce "
check "ibstat -l" "^uroce0$"
check ibstatus "device 'uroce0' port 1 status" "default gid:[[:space:]]+$gid" \
	"state:[[:space:]]+4: ACTIVE" "phys state:[[:space:]]+5: LinkUp" \
	"link_layer:[[:space:]]+Ethernet"

# the same tools on their own, under `uroce run --hold`
for t in ibstat ibstatus; do
	{
		echo "== hold $t"
		UROCE_ADDRS=127.0.0.1,::1 timeout 60 "$U" run --hold -- $t
		echo "exit $?"
	} >>"$E2E_TMP/out" 2>&1
done
check "hold ibstat" "^CA 'uroce0'" "State: Active" "Link layer: Ethernet" "^exit 0$"
check "hold ibstatus" "default gid:[[:space:]]+$gid" "state:[[:space:]]+4: ACTIVE" "^exit 0$"
# ibstat and ibstatus are held without being asked (tools/uroce,
# sysfs_only()): `uroce run -- ibstat` used to print nothing and exit 0
UROCE_ADDRS=127.0.0.1 timeout 60 "$U" run -- ibstat -l >"$E2E_TMP/auto" 2>&1
if grep -qx uroce0 "$E2E_TMP/auto"; then
	e2e_pass "ibstat -l held without --hold"
else
	e2e_fail "ibstat -l without --hold found no device ($(cat "$E2E_TMP/auto"))"
fi
# with --no-hold they see nothing (no uroce process above them)
UROCE_ADDRS=127.0.0.1 timeout 60 "$U" run --no-hold -- ibstat -l >"$E2E_TMP/bare" 2>&1
if grep -q uroce0 "$E2E_TMP/bare"; then
	e2e_fail "ibstat --no-hold found a tree it should not have ($(cat "$E2E_TMP/bare"))"
else
	e2e_pass "ibstat -l --no-hold: no device"
fi
e2e_summary
