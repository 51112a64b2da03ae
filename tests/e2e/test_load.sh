#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Unmodified Debian programs load our libibverbs.so.1 and see uroce0:
# ibverbs-utils, perftest (which also loads libmlx5/libefa, rdma-core
# providers that call our private symbols from their constructors), pyverbs,
# UCX's libuct_ib and libfabric's verbs provider. Each check greps for what
# it expects, so each can fail.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"

# check NAME TIMEOUT "cmd" [REGEX...]: passes when cmd exits 0 (or, with
# ALLOW_RC set, with an exit status in that list) and every REGEX matches
# its output.
check() {
	local name=$1 tmo=$2 cmd=$3 out="$E2E_TMP/$1.out" rc ok=1
	shift 3
	timeout "$tmo" bash -c "$cmd" >"$out" 2>&1
	rc=$?
	if [[ " ${ALLOW_RC:-0} " != *" $rc "* ]]; then
		ok=0
		echo "  exit status $rc"
	fi
	for re in "$@"; do
		grep -qE -- "$re" "$out" || { ok=0; echo "  missing /$re/"; }
	done
	# (LD_DEBUG's own "pid: ..." lines report harmless dlsym misses)
	if grep -vE '^ *[0-9]+:' "$out" |
		grep -qE "symbol lookup error|undefined symbol|Segmentation fault|core dumped"; then
		ok=0
		echo "  loader error or crash"
	fi
	if ((ok)); then
		e2e_pass "$name"
	else
		e2e_fail "$name"
		tail -n 20 "$out"
	fi
}

# the library under test, not the system one
check ldd_uses_ours 10 "ldd \$(command -v ibv_devinfo)" \
	"libibverbs\.so\.1 => $LIBDIR/libibverbs\.so\.1"

check ibv_devices 20 "ibv_devices" "^[[:space:]]+uroce0[[:space:]]+[0-9a-f]{16}"

check ibv_devinfo 20 "ibv_devinfo -v" \
	"hca_id:[[:space:]]+uroce0" \
	"state:[[:space:]]+PORT_ACTIVE" \
	"link_layer:[[:space:]]+Ethernet" \
	"GID\[ *0\]:[[:space:]]+::ffff:127\.[0-9.]+, RoCE v2"

# configured addresses, in order (only GID 0 is bound: pick a fresh one)
a0=127.250.$((RANDOM % 250)).$((RANDOM % 250 + 1))
check ibv_devinfo_addrs 20 \
	"UROCE_ADDRS=$a0,::1 ibv_devinfo -v" \
	"GID\[ *0\]:[[:space:]]+::ffff:${a0//./\\.}, RoCE v2" \
	"GID\[ *1\]:[[:space:]]+::1, RoCE v2"

check ibv_devinfo_2dev 20 "UROCE_NUM_DEVICES=2 ibv_devinfo -l" \
	"2 HCAs? found" "uroce0" "uroce1"

# perftest: usage text, exit status 1 (it treats --help as a bad option)
ALLOW_RC="0 1" check perftest_help 20 "ib_write_bw --help" \
	"Usage:" "ib_write_bw"
ALLOW_RC="0 1" check perftest_libs_loaded 20 \
	"LD_DEBUG=files ib_write_bw --help" \
	"calling init: $LIBDIR/libibverbs\.so\.1" \
	"calling init: .*libmlx5\.so"

check pyverbs 30 \
	"/usr/bin/python3 -c 'import pyverbs.device as d; print([x.name.decode() for x in d.get_device_list()])'" \
	"\['uroce0'\]"

# UCX: libuct_ib must load with our library and ucx_info must finish.
# Here, without `uroce run`'s interposer, uroce0 is not listed (UCX wants
# a /dev/infiniband/<dev_name> node); test_ucx.sh covers it with.
if command -v ucx_info >/dev/null; then
	check ucx_info 60 "LD_DEBUG=files ucx_info -d" \
		"calling init: .*libuct_ib\.so" \
		"Memory domain:"
else
	e2e_skip ucx_info "no ucx_info (package ucx-utils)"
fi

# libfabric: the verbs provider enumerates uroce0 and offers its UD
# ("-dgram") domain; FI_EP_MSG endpoints need rdma_cm, which we lack.
if command -v fi_info >/dev/null; then
	check fi_info_verbs 60 "fi_info -p verbs" \
		"provider: verbs" "domain: uroce0-dgram" "FI_EP_DGRAM"
else
	e2e_skip fi_info_verbs "no fi_info (package libfabric-bin)"
fi

e2e_summary
