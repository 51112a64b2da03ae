# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Helpers for end-to-end tests: run an unmodified server/client pair of
# Debian binaries against uroce's libibverbs.so.1 and check what they print.
# Sourced by the test_*.sh scripts; expects LIBDIR (the dir holding
# libibverbs.so.1) in the environment or as $1 of the script.

E2E_PASS=0
E2E_FAIL=0
E2E_SKIP=0
E2E_UNSELECTED=0
# exit status of a script with a skipped case and no failure (ctest's
# SKIP_RETURN_CODE, tests/CMakeLists.txt)
E2E_SKIP_RC=77
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

# e2e_runtime_dir: the script's own runtime directory, so that only its
# processes' device trees are in it; sets U (the uroce command) and ROOT
# (the per-user directory where each process's tree appears).
e2e_runtime_dir() {
	U="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/tools/uroce"
	export UROCE_LIBDIR=$LIBDIR
	export XDG_RUNTIME_DIR=$E2E_TMP/run
	mkdir -p "$XDG_RUNTIME_DIR"
	ROOT=$XDG_RUNTIME_DIR/uroce-$(id -u)
}

# A TCP port for the programs' own out-of-band exchange, different per run.
e2e_port() {
	echo $((20000 + (RANDOM % 20000)))
}

# e2e_kill_tagged TAG: SIGKILL every process of ours started with
# E2E_KILL_TAG=TAG in its environment, and say how many there were.
# Programs that fork a child into a session of its own (fio's jobs do),
# which outlives a `timeout` that killed its parent, are found this way;
# the tag is set on the command line of the programs alone, so the
# script and its helpers never carry it.
e2e_kill_tagged() {
	local f pids=()
	for f in $(grep -lzx "E2E_KILL_TAG=$1" /proc/[0-9]*/environ 2>/dev/null); do
		f=${f#/proc/}
		pids+=("${f%/environ}")
	done
	((${#pids[@]})) || { echo 0; return; }
	kill -9 "${pids[@]}" 2>/dev/null
	echo "${#pids[@]}"
}

# A sanitizer's report in a program's output (a sanitized build prints it
# even where the program's exit status hides it).
E2E_SANITIZER_RE='ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|ThreadSanitizer: |runtime error:|UndefinedBehaviorSanitizer'

# e2e_timed TMO STACKS "cmd": runs cmd (bash -c) for at most TMO seconds
# and returns its status, or 124 after a timeout, as timeout(1) does; but
# before it kills a program that overstayed, the stacks of its threads go
# to the file STACKS (gdb, where installed), so that a hang seen once in
# CI leaves more than an exit status.
e2e_timed() {
	local tmo=$1 stacks=$2 pid p t=0
	bash -c "$3" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if ((t >= tmo * 10)); then
			if command -v gdb >/dev/null; then
				for p in $pid $(pgrep -P "$pid"); do
					echo "--- $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-100)"
					timeout 60 gdb -p "$p" -batch \
						-ex "thread apply all bt" 2>/dev/null |
						grep -E '^(Thread|#)'
				done >>"$stacks"
			fi
			pkill -TERM -P "$pid" 2>/dev/null
			kill -TERM "$pid" 2>/dev/null
			wait "$pid"
			return 124
		fi
		sleep 0.1
		t=$((t + 1))
	done
	wait "$pid"
}

# e2e_pair NAME TIMEOUT "server cmd" "client cmd" [REGEX...]
# Runs both (server first), waits for both with a timeout, and passes when
# both exit 0, neither printed a sanitizer report, and every REGEX matches
# the client's or the server's output. With E2E_PRELOAD set (a sanitized
# build: tests/e2e/CMakeLists.txt), both run with it in LD_PRELOAD.
#
# E2E_CASES, when set, is a regex of case names: only those run, and the
# summary says how many were left out (the ThreadSanitizer build's subset,
# tests/e2e/CMakeLists.txt).
e2e_pair() {
	local name=$1 tmo=$2 srv=$3 cli=$4
	shift 4
	local so="$E2E_TMP/$name.srv" co="$E2E_TMP/$name.cli" sp rs rc ok=1
	if [[ -n ${E2E_CASES:-} && ! $name =~ ^(${E2E_CASES})$ ]]; then
		E2E_UNSELECTED=$((E2E_UNSELECTED + 1))
		return
	fi
	if [[ -n ${E2E_PRELOAD:-} ]]; then
		srv="LD_PRELOAD=$E2E_PRELOAD $srv"
		cli="LD_PRELOAD=$E2E_PRELOAD $cli"
	fi

	e2e_timed "$tmo" "$so.stacks" "$srv" >"$so" 2>&1 &
	sp=$!
	sleep 0.3
	# the client retries the connect a few times while the server starts
	# (E2E_RETRY_RE: what a refused client prints, if not the default;
	# rping and the rdma_cm examples say REJECTED: no listener yet)
	local refused="couldn't connect|connection refused|Unable to connect|RDMA_CM_EVENT_REJECTED"
	refused=${E2E_RETRY_RE:-$refused}
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		e2e_timed "$tmo" "$co.stacks" "$cli" >"$co" 2>&1
		rc=$?
		grep -qiE "$refused" "$co" || break
		sleep 0.3
	done
	wait "$sp"
	rs=$?
	if ((rc != 0 || rs != 0)); then
		ok=0
	fi
	if grep -qE -- "$E2E_SANITIZER_RE" "$so" "$co"; then
		ok=0
		echo "  sanitizer report:"
		grep -hE -A12 -- "$E2E_SANITIZER_RE" "$so" "$co" | head -n 40
	fi
	for re in "$@"; do
		grep -qE -- "$re" "$so" "$co" || { ok=0; echo "  missing /$re/"; }
	done
	if ((ok)); then
		e2e_pass "$name"
	else
		e2e_fail "$name (server rc=$rs, client rc=$rc)"
		echo "--- server:"; tail -n 15 "$so"
		echo "--- client:"; tail -n 15 "$co"
		# a program killed at the timeout: where its threads were
		cat "$so.stacks" "$co.stacks" 2>/dev/null | head -n 150
	fi
}

# e2e_pass NAME / e2e_fail NAME [DETAIL...] / e2e_skip NAME REASON: one
# case's result (a failure's details on the next line).
e2e_pass() {
	E2E_PASS=$((E2E_PASS + 1))
	echo "PASS $1"
}
e2e_fail() {
	E2E_FAIL=$((E2E_FAIL + 1))
	echo "FAIL $1"
	shift
	(($#)) && echo "$@"
	return 0
}
e2e_skip() {
	E2E_SKIP=$((E2E_SKIP + 1))
	echo "SKIP $1: $2"
}

# e2e_check NAME COMMAND...: a case that passes when COMMAND exits 0 (its
# output in $E2E_TMP/NAME.out, the end of which a failure shows)
e2e_check() {
	local name=$1
	shift
	if "$@" >"$E2E_TMP/$name.out" 2>&1; then
		e2e_pass "$name"
	else
		e2e_fail "$name"
		tail -n 20 "$E2E_TMP/$name.out"
	fi
}

# What bash prints when a script itself went wrong, not its user (and the
# usage text, which a mistake must not dump).
E2E_BASH_NOISE='unbound variable|^exec:|: line [0-9]+:|command not found|syntax error|usage: uroce'

# e2e_err_case NAME RC REGEX CMD...: a command-line mistake: CMD exits RC,
# prints nothing on stdout and exactly one line on stderr, matching REGEX
# and none of E2E_BASH_NOISE.
e2e_err_case() {
	local name=$1 want=$2 re=$3 rc lines
	shift 3
	"$@" >"$E2E_TMP/err_case.out" 2>"$E2E_TMP/err_case.err" </dev/null
	rc=$?
	lines=$(wc -l <"$E2E_TMP/err_case.err")
	if ((rc == want)) && [[ ! -s $E2E_TMP/err_case.out ]] && ((lines == 1)) &&
	   grep -qE -- "$re" "$E2E_TMP/err_case.err" &&
	   ! grep -qE -- "$E2E_BASH_NOISE" "$E2E_TMP/err_case.err"; then
		e2e_pass "$name"
	else
		e2e_fail "$name" "rc $rc (want $want), stderr: $(head -c 400 "$E2E_TMP/err_case.err"), stdout: $(head -c 200 "$E2E_TMP/err_case.out")"
	fi
}

# The script's exit status: 1 if a case failed, else E2E_SKIP_RC if one
# was skipped (ctest then reports the whole script as skipped), else 0.
e2e_summary() {
	echo "e2e: $E2E_PASS passed, $E2E_FAIL failed, $E2E_SKIP skipped"
	if ((E2E_UNSELECTED)); then
		echo "e2e: $E2E_UNSELECTED cases not selected by E2E_CASES=$E2E_CASES"
	fi
	((E2E_FAIL == 0)) || return 1
	((E2E_SKIP == 0)) || return $E2E_SKIP_RC
	return 0
}

# e2e_netns_pair CASE NS_A NS_B IF_A IF_B V4_A V4_B V6_A V6_B
# Two network namespaces joined by a veth pair IF_A (in NS_A) - IF_B (in
# NS_B), each end with an IPv4 /24 and an IPv6 /64 address (no DAD, so
# they are usable at once), deleted at exit. Returns non-zero, with CASE
# skipped (not root) or failed (set-up failed), when they are not there.
e2e_netns_pair() {
	local name=$1 na=$2 nb=$3 ia=$4 ib=$5
	shift 5
	if (($(id -u) != 0)); then
		e2e_skip "$name" "needs root (two network namespaces and a veth pair)"
		return 1
	fi
	trap 'ip netns del "'"$na"'" 2>/dev/null; ip netns del "'"$nb"'" 2>/dev/null; rm -rf "$E2E_TMP"' EXIT
	e2e_netns_up "$na" "$nb" "$ia" "$ib" "$@" && return 0
	e2e_fail "$name: cannot set up the namespaces"
	return 1
}

e2e_netns_up() {
	local na=$1 nb=$2 ia=$3 ib=$4
	ip netns add "$na" && ip netns add "$nb" &&
		ip -n "$na" link set lo up && ip -n "$nb" link set lo up &&
		ip -n "$na" link add "$ia" type veth peer name "$ib" netns "$nb" &&
		ip -n "$na" addr add "$5/24" dev "$ia" &&
		ip -n "$nb" addr add "$6/24" dev "$ib" &&
		ip -n "$na" addr add "$7/64" dev "$ia" nodad &&
		ip -n "$nb" addr add "$8/64" dev "$ib" nodad &&
		ip -n "$na" link set "$ia" up && ip -n "$nb" link set "$ib" up
}
