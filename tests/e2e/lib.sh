# SPDX-License-Identifier: BSD-2-Clause
# Helpers for end-to-end tests: run an unmodified server/client pair of
# Debian binaries against uroce's libibverbs.so.1 and check what they print.
# Sourced by the test_*.sh scripts; expects LIBDIR (the dir holding
# libibverbs.so.1) in the environment or as $1 of the script.

E2E_PASS=0
E2E_FAIL=0
E2E_TMP=$(mktemp -d /tmp/uroce-e2e.XXXXXX)
trap 'rm -rf "$E2E_TMP"' EXIT

e2e_libdir() {
	LIBDIR=${LIBDIR:-${1:-}}
	if [[ -z $LIBDIR || ! -e $LIBDIR/libibverbs.so.1 ]]; then
		echo "e2e: LIBDIR must hold libibverbs.so.1 (got '$LIBDIR')" >&2
		exit 2
	fi
	export LD_LIBRARY_PATH=$LIBDIR
}

# A TCP port for the programs' own out-of-band exchange, different per run.
e2e_port() {
	echo $((20000 + (RANDOM % 20000)))
}

# e2e_pair NAME TIMEOUT "server cmd" "client cmd" [REGEX...]
# Runs both (server first), waits for both with a timeout, and passes when
# both exit 0 and every REGEX matches the client's or the server's output.
e2e_pair() {
	local name=$1 tmo=$2 srv=$3 cli=$4
	shift 4
	local so="$E2E_TMP/$name.srv" co="$E2E_TMP/$name.cli" sp rs rc ok=1

	timeout "$tmo" bash -c "$srv" >"$so" 2>&1 &
	sp=$!
	sleep 0.3
	# the client retries the connect a few times while the server starts
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		timeout "$tmo" bash -c "$cli" >"$co" 2>&1
		rc=$?
		grep -qiE "couldn't connect|connection refused|Unable to connect|Couldn't connect" "$co" || break
		sleep 0.3
	done
	wait "$sp"
	rs=$?
	if ((rc != 0 || rs != 0)); then
		ok=0
	fi
	for re in "$@"; do
		grep -qE -- "$re" "$so" "$co" || { ok=0; echo "  missing /$re/"; }
	done
	if ((ok)); then
		E2E_PASS=$((E2E_PASS + 1))
		echo "PASS $name"
	else
		E2E_FAIL=$((E2E_FAIL + 1))
		echo "FAIL $name (server rc=$rs, client rc=$rc)"
		echo "--- server:"; tail -n 15 "$so"
		echo "--- client:"; tail -n 15 "$co"
	fi
}

e2e_summary() {
	echo "e2e: $E2E_PASS passed, $E2E_FAIL failed"
	((E2E_FAIL == 0))
}
