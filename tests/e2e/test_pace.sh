#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Pacing (engine/cc.c; docs/design.md, "Pacing") through a real bottleneck:
# `uroce cluster` with two hosts, tbf at 1 Gbit/s and a 48 KB queue on
# every link, MTU 9000, the data-integrity soak between them (every byte
# and every completion checked by both sides):
#  - paced (the default): the soak passes, and the requesters waited for
#    their pacing credit (pace_waits > 0);
#  - UROCE_PACE=0: the soak passes and nothing waited (pace_waits 0), so
#    the counter counts pacing and nothing else.
# The drops of the hosts' own queues are printed, not judged (timing).
# The soak's QP timeout is 0.5 s (-T 17), not perftest's 67 ms: without
# pacing a loaded host can lose a request and its retries at the full
# queue (RETRY_EXC), and the unpaced run is a control of the counter,
# not a test of that.
# Needs root and tc; skipped without them. About 20 s.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
e2e_runtime_dir
SOAK=${SOAK:-$LIBDIR/../tests/soak/uroce_soak}

if (($(id -u) != 0)) || ! command -v tc >/dev/null; then
	e2e_skip pace "needs root and tc (network namespaces, veth, tbf)"
	e2e_summary
	exit
fi
if [[ ! -x $SOAK ]]; then
	e2e_fail pace "no soak binary at $SOAK"
	e2e_summary
	exit
fi

# counter FILE NAME: a counter of a UROCE_STATS file (all devices)
counter() {
	awk -v n="$2" '$1 == n { s += $2 } END { print s + 0 }' "$1"
}

# soak NAME ENV: the soak between hosts 0 and 1, ENV set for both; its
# logs in $E2E_TMP/NAME/; true when both sides checked everything
soak() {
	local name=$1 env=$2 port d=$E2E_TMP/$1 rc line ok=1 f
	port=$(e2e_port)
	mkdir -p "$d"
	# shellcheck disable=SC2086 # ENV: empty, or words of NAME=VALUE
	env $env timeout 120 "$U" cluster -n 2 --rate 1gbit --queue 48000 \
		--mtu 9000 --timeout 100 --output "$d" \
		--host 0 "UROCE_STATS=$d/h0.stats $SOAK -l 10.77.0.1:$port -s 11 -m 48 -t 80 -S 20 -T 17; tc -s qdisc show dev eth0" \
		--host 1 "sleep 1; UROCE_STATS=$d/h1.stats $SOAK -c 10.77.0.1:$port -s 11 -m 48 -t 80 -S 20 -T 17; tc -s qdisc show dev eth0" \
		2>"$d.err"
	rc=$?
	for h in 0 1; do
		f=$d/h$h.0.log
		line=$(grep '^soak [AB]:' "$f" | tail -n 1)
		echo "  h$h: ${line:0:100}..."
		echo "    pace_waits $(counter "$d/h$h.stats" pace_waits)" \
			"timeouts $(counter "$d/h$h.stats" timeouts)" \
			"retransmits $(counter "$d/h$h.stats" retransmits)" \
			"own queue dropped $(sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' "$f" | head -n 1)"
		[[ $line =~ bytes_wrong=0( |$) && $line =~ completions_wrong=0( |$) ]] || ok=0
	done
	if ((rc != 0 || !ok)); then
		e2e_fail "$name: the soak failed (exit $rc)" "$(tail -n 5 "$d.err")"
		tail -n 8 "$d"/*.log
		return 1
	fi
}

if soak paced ""; then
	waits=$(($(counter "$E2E_TMP/paced/h0.stats" pace_waits) +
		$(counter "$E2E_TMP/paced/h1.stats" pace_waits)))
	if ((waits > 0)); then
		e2e_pass "paced: every byte right, the requesters waited $waits times to pace"
	else
		e2e_fail "paced: no pace_waits through a 1 Gbit/s bottleneck"
	fi
fi
if soak unpaced UROCE_PACE=0; then
	waits=$(($(counter "$E2E_TMP/unpaced/h0.stats" pace_waits) +
		$(counter "$E2E_TMP/unpaced/h1.stats" pace_waits)))
	if ((waits == 0)); then
		e2e_pass "unpaced: every byte right, UROCE_PACE=0 never waited"
	else
		e2e_fail "unpaced: UROCE_PACE=0 waited $waits times"
	fi
fi
e2e_summary
