#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# liburoce-interpose.so on its own: what it must intercept (/dev/infiniband
# nodes as character devices to stat/access, open refused with ENODEV;
# /sys/class/infiniband* resolved into the device tree of the process or
# of its nearest ancestor), and that it leaves every other path alone
# (similar names, relative paths, other /sys and /dev files, a process
# with no tree, UROCE_INTERPOSE=0). A few seconds.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
PRE=$(cd "$LIBDIR" && pwd)/liburoce-interpose.so
[[ -e $PRE ]] || { echo "FAIL: $PRE not built"; exit 1; }
# our own runtime root, so that no other test's trees are seen
export XDG_RUNTIME_DIR=$E2E_TMP/run
mkdir -p "$XDG_RUNTIME_DIR"

pre() { LD_PRELOAD=$PRE "$@"; }

# --- /dev/infiniband (no RDMA kernel support on this host) ---------------
for n in uverbs-uroce0 uverbs0 rdma_cm; do
	[[ -e /dev/infiniband/$n ]] && continue	# a real one: not ours to fake
	e2e_check "dev_${n}_chardev" pre bash -c "[[ -c /dev/infiniband/$n && -r /dev/infiniband/$n && -w /dev/infiniband/$n ]]"
	e2e_check "dev_${n}_stat" pre bash -c "[[ \$(stat -c %F /dev/infiniband/$n) == 'character special file' ]]"
	e2e_check "dev_${n}_absent_without" bash -c "[[ ! -e /dev/infiniband/$n ]]"
	e2e_check "dev_${n}_optout" env UROCE_INTERPOSE=0 LD_PRELOAD=$PRE bash -c "[[ ! -e /dev/infiniband/$n ]]"
done
e2e_check dev_open_enxio pre python3 -c '
import errno, os
for n in ("uverbs-uroce0", "rdma_cm"):
    try:
        os.open("/dev/infiniband/" + n, os.O_RDWR)
        raise SystemExit("opened " + n)
    except OSError as e:
        assert e.errno == errno.ENODEV, e
    assert os.access("/dev/infiniband/" + n, os.R_OK | os.W_OK)
    assert not os.access("/dev/infiniband/" + n, os.X_OK)
'
for n in umad0 uverbs0/x issm0; do
	e2e_check "dev_${n//\//_}_untouched" pre bash -c "[[ ! -e /dev/infiniband/$n ]]"
done

# --- /sys/class/infiniband* ---------------------------------------------
# a process with a tree sees it at the sysfs paths; a child that loads no
# verbs library (cat, ls) sees its parent's; nothing else changes
e2e_check sys_tree pre python3 - <<'PY'
import ctypes, os, subprocess
lib = ctypes.CDLL("libibverbs.so.1")
lib.ibv_get_device_list.restype = ctypes.POINTER(ctypes.c_void_p)
lib.ibv_get_sysfs_path.restype = ctypes.c_char_p
n = ctypes.c_int()
assert lib.ibv_get_device_list(ctypes.byref(n)) and n.value >= 1
tree = lib.ibv_get_sysfs_path().decode()
assert tree.endswith("/%d/sys" % os.getpid()), tree
assert os.listdir("/sys/class/infiniband") == ["uroce0"]
assert "abi_version" in os.listdir("/sys/class/infiniband_verbs")
p = "/sys/class/infiniband/uroce0/ports/1/gid_attrs/types/0"
assert open(p).read() == "RoCE v2\n"
assert open(p).read() == open(tree + "/class/infiniband/uroce0/ports/1/gid_attrs/types/0").read()
assert os.path.isdir("/sys/class/infiniband/uroce0/ports/1/hw_counters")
out = subprocess.run(["cat", "/sys/class/infiniband/uroce0/ports/1/state"],
                     capture_output=True, text=True, check=True).stdout
assert out == "4: ACTIVE\n", out
out = subprocess.run(["ls", "/sys/class/infiniband_verbs/"],
                     capture_output=True, text=True, check=True).stdout
assert "uverbs-uroce0" in out.split(), out
# untouched: similar names, relative paths, other /sys files
assert not os.path.exists("/sys/class/infinibandX")
os.chdir("/")
assert os.path.exists("sys/class/infiniband") == os.path.exists("/proc/1/root/sys/class/infiniband")
assert open("/sys/class/net/lo/mtu").read().strip().isdigit()
print("ok")
PY
e2e_check sys_untouched_without_tree pre bash -c '
	[[ ! -e /sys/class/infiniband/uroce0 ]] &&
	[[ $(cat /sys/class/net/lo/mtu) == $(LD_PRELOAD= cat /sys/class/net/lo/mtu) ]] &&
	[[ $(realpath /dev/null) == /dev/null ]] &&
	[[ $(ls /etc | wc -l) == $(LD_PRELOAD= ls /etc | wc -l) ]]'
e2e_check sys_optout env UROCE_INTERPOSE=0 LD_PRELOAD=$PRE python3 -c '
import ctypes, os
lib = ctypes.CDLL("libibverbs.so.1")
lib.ibv_get_device_list.restype = ctypes.c_void_p
assert lib.ibv_get_device_list(None)
assert not os.path.exists("/sys/class/infiniband/uroce0")
'
# UROCE_INTERPOSE takes util/parse.h's booleans; a bad value leaves it on
if [[ ! -e /dev/infiniband/rdma_cm ]]; then
	e2e_check optout_off env UROCE_INTERPOSE=off LD_PRELOAD=$PRE bash -c '[[ ! -e /dev/infiniband/rdma_cm ]]'
	e2e_check bad_value_stays_on bash -c '
		UROCE_INTERPOSE=maybe LD_PRELOAD=$0 bash -c "[[ -c /dev/infiniband/rdma_cm ]]" 2>"$1" &&
		grep -q "UROCE_INTERPOSE=maybe: want" "$1"' "$PRE" "$E2E_TMP/bad_value.err"
fi
# an unusable XDG_RUNTIME_DIR: the library and the interposer both fall
# back to /tmp/uroce-<uid> (one function, util/rundir.c), so they agree,
# and `uroce rundir` says the same
e2e_check sys_tree_xdg_fallback env XDG_RUNTIME_DIR=$E2E_TMP/missing \
	U="$(cd "$(dirname "$0")/../.." && pwd)/tools/uroce" \
	LD_PRELOAD=$PRE python3 - <<'PY'
import ctypes, os, subprocess
lib = ctypes.CDLL("libibverbs.so.1")
lib.ibv_get_device_list.restype = ctypes.POINTER(ctypes.c_void_p)
lib.ibv_get_sysfs_path.restype = ctypes.c_char_p
n = ctypes.c_int()
assert lib.ibv_get_device_list(ctypes.byref(n)) and n.value >= 1
tree = lib.ibv_get_sysfs_path().decode()
want = subprocess.run([os.environ["U"], "rundir"], capture_output=True,
                      text=True, check=True).stdout.strip()
assert want == "/tmp/uroce-%d" % os.getuid(), want
assert tree == "%s/%d/sys" % (want, os.getpid()), tree
assert os.listdir("/sys/class/infiniband") == ["uroce0"]
print("ok")
PY
e2e_summary
