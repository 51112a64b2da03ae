#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# pyverbs (Debian's python3-pyverbs) under `uroce run`: what the device and
# port queries return agrees with what sysfs readers find at
# /sys/class/infiniband/<dev>/... (node GUID and type, firmware, port
# state, link layer, rate, every GID with its type and net device, P_Key,
# the uverbs entry): the checks rdma-core's own device/port tests make
# against sysfs. A few seconds.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
PY=/usr/bin/python3
$PY -c 'import pyverbs' 2>/dev/null || { echo "SKIP: python3-pyverbs not installed"; exit 77; }
U="$(cd "$(dirname "$0")/../.." && pwd)/tools/uroce"
export UROCE_LIBDIR=$LIBDIR

if UROCE_NUM_DEVICES=2 UROCE_ADDRS=127.0.0.1,::1 "$U" run -- $PY - >"$E2E_TMP/py.out" 2>&1 <<'PY'
import os
from pyverbs.device import Context, get_device_list
import pyverbs.enums as e

speeds = {1: (25, "SDR"), 2: (50, "DDR"), 4: (100, "QDR"), 8: (103, "FDR10"),
          16: (140, "FDR"), 32: (250, "EDR"), 64: (500, "HDR"), 128: (1000, "NDR")}
widths = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}
devs = get_device_list()
assert len(devs) == 2, devs
assert sorted(os.listdir("/sys/class/infiniband")) == sorted(d.name.decode() for d in devs)
checked = 0
for d in devs:
    name = d.name.decode()
    base = "/sys/class/infiniband/" + name
    rd = lambda p: open(base + "/" + p).read().rstrip("\n")
    ctx = Context(name=name)
    a = ctx.query_device()
    g = "%016x" % int.from_bytes(int(a.node_guid).to_bytes(8, "little"), "big")
    assert rd("node_guid") == ":".join(g[i:i + 4] for i in range(0, 16, 4)), (rd("node_guid"), g)
    assert rd("node_type") == "1: CA"
    assert rd("fw_ver") == a.fw_version, (rd("fw_ver"), a.fw_version)
    for port in range(1, a.phys_port_cnt + 1):
        p = ctx.query_port(port)
        pd = "ports/%d/" % port
        assert rd(pd + "state").startswith("%d: " % p.state)
        assert p.link_layer == e.IBV_LINK_LAYER_ETHERNET
        assert rd(pd + "link_layer") == "Ethernet"
        tenths, sname = speeds[p.active_speed]
        r = tenths * widths[p.active_width]
        assert rd(pd + "rate") == "%d%s Gb/sec (%dX %s)" % (
            r // 10, ".5" if r % 10 else "", widths[p.active_width], sname), rd(pd + "rate")
        assert rd(pd + "pkeys/0") == "0x%04x" % ctx.query_pkey(port, 0)
        assert len(os.listdir(base + "/" + pd + "gids")) == p.gid_tbl_len
        nets = set(os.listdir(base + "/device/net"))
        for i in range(p.gid_tbl_len):
            gid = str(ctx.query_gid(port, i))
            assert rd(pd + "gids/%d" % i) == gid, (i, gid)
            if gid == "0000:0000:0000:0000:0000:0000:0000:0000":
                assert not os.path.exists(base + "/" + pd + "gid_attrs/types/%d" % i)
                continue
            assert ctx.query_gid_type(port, i) == e.IBV_GID_TYPE_SYSFS_ROCE_V2
            assert rd(pd + "gid_attrs/types/%d" % i) == "RoCE v2"
            assert rd(pd + "gid_attrs/ndevs/%d" % i) in nets
            checked += 1
uv = [x for x in os.listdir("/sys/class/infiniband_verbs") if x != "abi_version"]
assert sorted(open("/sys/class/infiniband_verbs/%s/ibdev" % x).read().strip() for x in uv) == \
    sorted(d.name.decode() for d in devs), uv
assert open("/sys/class/infiniband_verbs/abi_version").read().strip() == "6"
print("pyverbs-sysfs ok, %d GIDs" % checked)
PY
then
	# uroce0 has 127.0.0.1 and ::1, uroce1 one automatic address
	if grep -qx "pyverbs-sysfs ok, 3 GIDs" "$E2E_TMP/py.out"; then
		E2E_PASS=$((E2E_PASS + 1)); echo "PASS pyverbs_device_port_sysfs"
	else
		E2E_FAIL=$((E2E_FAIL + 1)); echo "FAIL pyverbs_device_port_sysfs"; cat "$E2E_TMP/py.out"
	fi
else
	E2E_FAIL=$((E2E_FAIL + 1)); echo "FAIL pyverbs_device_port_sysfs"; tail -20 "$E2E_TMP/py.out"
fi
e2e_summary
