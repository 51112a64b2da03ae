#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# One example as a test: its server and its client (the client may fork
# workers), each started the documented way (tools/uroce run), must both
# exit 0, and their output must show the example's self-check passed.
# With UROCE_FAULT in the environment (the *_loss entries) both run under
# that loss, and the drop counters must show packets were dropped.
#
# usage: test_examples.sh LIBDIR BINDIR NAME 'SERVER ARGS' 'CLIENT ARGS' REGEX...
set -uo pipefail
# shellcheck source=../tests/e2e/lib.sh
source "$(dirname "$0")/../tests/e2e/lib.sh"
e2e_libdir "$1"
bin=$2/$3
name=$3
srv=$4
cli=$5
shift 5
[[ -x $bin ]] || { echo "test_examples: no $bin" >&2; exit 2; }
e2e_runtime_dir
port=$(e2e_port)
# the examples retry a refused connect themselves (common.c)
export E2E_RETRY_RE='^$ never'
res=("$@")
if [[ -n ${UROCE_FAULT:-} ]]; then
	name=${name}_loss
	export UROCE_STATS=1
	res+=('fault_dropped [1-9]')
fi
if [[ -z ${EX_CLIENT_FIRST:-} ]]; then
	e2e_pair "$name" 40 \
		"$U run -- $bin -s -p $port $srv" \
		"$U run -- $bin -c 127.0.0.1 -p $port $cli" "${res[@]}"
	e2e_summary
	exit
fi
# EX_CLIENT_FIRST (with UROCE_LOG=debug): the client starts before its
# server, so its first connects are refused and it must try again on a
# fresh QP (with its first receives posted again: common.c, on_qp)
name=${name}_client_first
co=$E2E_TMP/cli so=$E2E_TMP/srv
e2e_timed 40 "$co.stacks" "$U run -- $bin -c 127.0.0.1 -p $port $cli" >"$co" 2>&1 &
cp=$!
# the server starts once the client was refused (UROCE_LOG=debug shows
# the REJ), not after a fixed time: a loaded machine may start the client
# slower than that
for _ in $(seq 200); do
	grep -q 'rdmacm: got REJ' "$co" && break
	sleep 0.05
done
e2e_timed 40 "$so.stacks" "$U run -- $bin -s -p $port $srv" >"$so" 2>&1
rs=$?
wait "$cp"
rc=$?
ok=$((rc == 0 && rs == 0))
for re in "${res[@]}"; do
	grep -qE -- "$re" "$so" "$co" || { ok=0; echo "  missing /$re/"; }
done
if ((ok)); then
	e2e_pass "$name"
else
	e2e_fail "$name (server rc=$rs, client rc=$rc)"
	echo "--- server:"; tail -n 15 "$so"
	echo "--- client:"; tail -n 15 "$co"
fi
e2e_summary
