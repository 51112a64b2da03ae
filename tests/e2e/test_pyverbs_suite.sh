#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# rdma-core's own pyverbs test suite (Debian's python3-pyverbs ships it,
# gzipped, under /usr/share/doc/rdma-core/tests) against uroce under
# `uroce run`: every module that is not vendor-specific (mlx5, efa, CUDA),
# rdma_cm's included (test_rdmacm: sync, async, reject, UD/SIDR, external
# QP, READ/WRITE through rdma_cm ids, multicast joins and leaves with UD
# traffic to the group). The modules find the device's
# interface and address through /sys/class/infiniband/<dev>/device/net
# (uroce's device tree and interposer).
# unittest counts each test as ok, skipped (the suite skips what a device
# reports unsupported: dmabuf, extended CQ, raw packet QPs...),
# failure or error. The script fails on any failure or
# error, on fewer than MIN_OK passes (a suite that stops loading modules
# must not pass by skipping), and when one of the rdma_cm or XRC tests
# named in MUST_PASS did not pass. About 2 minutes on a loaded 2-core machine.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
PY=/usr/bin/python3
SRC=/usr/share/doc/rdma-core/tests
$PY -c 'import pyverbs' 2>/dev/null || { echo "SKIP: python3-pyverbs not installed"; exit 77; }
[[ -f $SRC/run_tests.py ]] || { echo "SKIP: $SRC/run_tests.py missing"; exit 77; }
U="$(cd "$(dirname "$0")/../.." && pwd)/tools/uroce"
export UROCE_LIBDIR=$(cd "$LIBDIR" && pwd)

MODULES="test_addr test_atomic test_cq test_cq_events test_cqex test_device
	test_flow test_fork test_mr test_odp test_parent_domain test_pd test_qp
	test_qpex test_rdmacm test_relaxed_ordering test_rss_traffic
	test_shared_pd test_tag_matching"
MIN_OK=130	# 140 here (Debian 12, rdma-core 44), 143 with huge pages
MUST_PASS="test_rdmacm_sync_traffic test_rdmacm_async_traffic
	test_rdmacm_async_read test_rdmacm_async_write
	test_rdmacm_async_reject_traffic test_rdmacm_async_udp_traffic
	test_rdmacm_async_traffic_external_qp
	test_rdmacm_async_multicast_traffic
	test_rdmacm_async_ex_multicast_traffic
	test_rdmacm_async_ex_leave_multicast_traffic
	test_xrc_atomic_cmp_and_swap test_xrc_atomic_fetch_and_add
	test_xrc_traffic_cq_ex test_odp_xrc_traffic test_qp_ex_xrc_send
	test_qp_ex_xrc_send_imm test_ro_xrc_traffic"

# The suite's huge-page tests (ODP and parent-domain allocators over 2 MiB
# pages) skip on a machine with none allocated: as root, lend the run 32
# (64 MiB) and give them back at exit, and require those tests to pass.
HUGE=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if (($(id -u) == 0)) && [[ -w $HUGE ]] && (($(cat "$HUGE") == 0)); then
	trap 'echo 0 >"$HUGE"; rm -rf "$E2E_TMP"' EXIT
	echo 32 >"$HUGE"
	if (($(cat "$HUGE") > 0)); then
		MUST_PASS+=" test_odp_rc_huge_traffic
	test_odp_rc_huge_user_addr_traffic test_huge_page_traffic"
	fi
fi

cp -r "$SRC" "$E2E_TMP/rc"
gunzip -f "$E2E_TMP"/rc/*.gz
cd "$E2E_TMP"
# shellcheck disable=SC2086
timeout 600 "$U" run -- $PY rc/run_tests.py -v $MODULES >"$E2E_TMP/suite.log" 2>&1
rc=$?

ran=$(sed -n 's/^Ran \([0-9]*\) tests\? in.*/\1/p' "$E2E_TMP/suite.log")
skipped=$(sed -n 's/.*skipped=\([0-9]*\).*/\1/p' "$E2E_TMP/suite.log" | tail -n 1)
failures=$(sed -n 's/.*failures=\([0-9]*\).*/\1/p' "$E2E_TMP/suite.log" | tail -n 1)
errors=$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' "$E2E_TMP/suite.log" | tail -n 1)
ran=${ran:-0} skipped=${skipped:-0} failures=${failures:-0} errors=${errors:-0}
ok=$((ran - skipped - failures - errors))
echo "pyverbs suite: $ran run, $ok ok, $skipped skipped, $failures failed, $errors errors (exit $rc)"
grep -E '\.\.\. skipped' "$E2E_TMP/suite.log" | sed 's/.*\.\.\. skipped //' | sort | uniq -c

if ((rc == 0 && failures == 0 && errors == 0 && ran > 0 && ok >= MIN_OK)); then
	e2e_pass "pyverbs_suite ($ok ok)"
else
	e2e_fail "pyverbs_suite (need 0 failed, >= $MIN_OK ok)"
	grep -E '^(FAIL|ERROR):' "$E2E_TMP/suite.log"
	tail -n 40 "$E2E_TMP/suite.log"
fi
# unittest prints "name (module.Class.name) ... ok", or the test's own
# output first and "ok"/"ERROR"/"FAIL" alone on a later line, before the
# next test's "... " line
verdict() {
	awk -v t="$1 (" '
		index($0, t) == 1 { f = 1; if ($0 ~ /\.\.\. ok$/) { print "ok"; exit } next }
		f && (/ \.\.\. / || /^(===|---)/) { exit }
		f && /^ok$/ { print "ok"; exit }' "$E2E_TMP/suite.log"
}
for t in $MUST_PASS; do
	if [[ $(verdict "$t") == ok ]]; then
		e2e_pass "$t"
	else
		e2e_fail "$t"
		grep -A3 -E "^$t \(" "$E2E_TMP/suite.log"
	fi
done
e2e_summary
