#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The commands the README (and docs/programs.md) show run as written, so a
# command that fails cannot stay there. Every line of their ```sh blocks is
# one of:
#  - "skipped by the docs check: REASON" in its comment: listed with the
#    reason, not run;
#  - a server: its comment begins with "server". It starts in the
#    background; the lines after it, up to a blank line or the next
#    server, are its clients, run one after another once it is up. The
#    group passes when every client exits 0 and the server exits 0, or is
#    still running a few seconds after its last client (iperf3 -s, udpong
#    -b serve for ever) and is then stopped;
#  - `export VAR=...`: applies to the rest of its block;
#  - anything else runs alone and must exit 0.
# A trailing "\" joins a line to the next. In a sanitized build
# (E2E_PRELOAD, tests/e2e/CMakeLists.txt) every command runs with the
# runtime preloaded, as e2e_pair runs its pairs, and a sanitizer's report in
# any output fails the case. Lines run in a scratch directory
# that links to the repository's tools/, tests/ and scripts/, so that what
# they write (mpicc's ./pingpong) stays there. A program that is not
# installed skips its case.
#
# The commands use their programs' fixed ports (perftest 18515, iperf3
# 5201, fi_pingpong 9228): as root the script runs in a network namespace
# of its own (loopback only), where no other test meets them.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
if (($(id -u) == 0)) && [[ -z ${README_TEST_NETNS:-} ]] &&
	command -v unshare >/dev/null; then
	export README_TEST_NETNS=1
	exec unshare --net -- bash -c 'ip link set lo up && exec bash "$@"' \
		bash "$0" "$@"
fi
# shellcheck source=tests/e2e/lib.sh
. "$HERE/lib.sh"
e2e_libdir "${1:-}"
e2e_runtime_dir
# the README says to add --allow-run-as-root as root; mpirun reads the same
# permission from these
if (($(id -u) == 0)); then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

W=$E2E_TMP/work
mkdir -p "$W"
for d in tools tests scripts; do ln -s "$REPO/$d" "$W/$d"; done
ln -s "$(cd "$LIBDIR/.." && pwd)" "$W/build"

CMD_TMO=60		# seconds for one command
SERVER_LINGER=5		# seconds a server may take to end after its clients
REFUSED='couldn.t connect|connection refused|unable to connect|REJECTED|rconnect'

# prog CMD: the program a command line starts (after `tools/uroce run
# [options] --`, else its first word that is not VAR=value).
prog() {
	local w
	# shellcheck disable=SC2086
	set -f -- $1
	set +f
	if [[ $* == *" -- "* ]]; then
		while (($#)) && [[ $1 != -- ]]; do shift; done
		shift
	fi
	for w in "$@"; do
		[[ $w == *=* && $w != -* ]] && continue
		echo "$w"
		return
	done
}

# missing CMDS...: the first program of the commands that is not installed
missing() {
	local c p
	for c in "$@"; do
		p=$(prog "$c")
		[[ $p == tools/uroce || $p == ./* || -z $p ]] && continue
		# a path (build/examples/...) is looked up where commands run
		if [[ $p == */* ]]; then
			[[ -x $W/$p ]] || { echo "$p"; return; }
			continue
		fi
		command -v "$p" >/dev/null || { echo "$p"; return; }
	done
}

PRELOAD=:
[[ -n ${E2E_PRELOAD:-} ]] && PRELOAD="export LD_PRELOAD=$E2E_PRELOAD"

# run_one TMO OUT "cmd": runs cmd with the block's exports in $W.
run_one() {
	(cd "$W" && eval "$EXPORTS" && eval "$PRELOAD" &&
		timeout -k 5 "$1" bash -c "$3") </dev/null >"$2" 2>&1
}

# sanitized OUT...: a sanitizer's report in one of the outputs
sanitized() {
	grep -qE -- "$E2E_SANITIZER_RE" "$@" 2>/dev/null || return 1
	echo "  sanitizer report:"
	grep -hE -A12 -- "$E2E_SANITIZER_RE" "$@" | head -n 40
}

# sockets: how many TCP listeners and bound UDP sockets there are
sockets() { ss -Htuln 2>/dev/null | wc -l; }

# up BEFORE PID: waits (at most 5 s) until the server PID has opened its
# sockets: more than BEFORE, and no change for 0.3 s (its device's UDP
# 4791, then its own). In the script's network namespace they can only be
# the server's; without one this is a mere pause, and a client that is
# refused all the same is run again.
up() {
	local before=$1 pid=$2 i n last=-1 still=0
	for ((i = 0; i < 50; i++)); do
		kill -0 "$pid" 2>/dev/null || return
		n=$(sockets)
		if ((n > before && n == last)); then
			((++still >= 3)) && return
		else
			still=0
		fi
		last=$n
		sleep 0.1
	done
}

# group NAME SERVER CLIENT...: a server and its clients.
group() {
	local name=$1 srv=$2 out=$E2E_TMP/case.$RANDOM sp c rc=0 crc i n=0 m s0
	shift 2
	m=$(missing "$srv" "$@")
	[[ -n $m ]] && { e2e_skip "$name" "$m not installed"; return; }
	s0=$(sockets)
	# exec: $sp is timeout(1) itself, which passes a SIGTERM on
	(cd "$W" && eval "$EXPORTS" && eval "$PRELOAD" &&
		exec timeout -k 5 $((CMD_TMO * 2)) bash -c "$srv") \
		</dev/null >"$out.srv" 2>&1 &
	sp=$!
	up "$s0" "$sp"
	for c in "$@"; do
		n=$((n + 1))
		for i in 1 2 3 4 5 6 7 8 9 10; do
			run_one "$CMD_TMO" "$out.cli$n" "$c"
			crc=$?
			# again only while a live server refuses it
			if ((crc == 0)) || ! kill -0 "$sp" 2>/dev/null ||
				! grep -qiE "$REFUSED" "$out.cli$n"; then
				break
			fi
			sleep 0.5
		done
		((crc == 0)) || { rc=1; echo "  client failed (rc=$crc): $c"; tail -n 15 "$out.cli$n"; }
	done
	for ((i = 0; i < SERVER_LINGER * 10; i++)); do
		kill -0 "$sp" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$sp" 2>/dev/null; then
		echo "  server still serving after its clients: stopped"
		kill -TERM "$sp" 2>/dev/null
		wait "$sp"
	else
		wait "$sp" || { rc=1; echo "  server failed: $srv"; tail -n 15 "$out.srv"; }
	fi
	sanitized "$out".* && rc=1
	if ((rc == 0)); then
		e2e_pass "$name"
	else
		e2e_fail "$name"
	fi
}

alone() {
	local name=$1 c=$2 out=$E2E_TMP/case.$RANDOM m
	m=$(missing "$c")
	[[ -n $m ]] && { e2e_skip "$name" "$m not installed"; return; }
	if run_one "$CMD_TMO" "$out" "$c" && ! sanitized "$out"; then
		e2e_pass "$name"
	else
		e2e_fail "$name" "  failed: $c"
		tail -n 15 "$out"
	fi
}

# The pending server group, run when it ends.
G_NAME='' G_SRV='' G_CLI=()
flush_group() {
	[[ -n $G_SRV ]] || return
	if ((${#G_CLI[@]} == 0)); then
		e2e_fail "$G_NAME" "  a server without a client: $G_SRV"
	else
		group "$G_NAME" "$G_SRV" "${G_CLI[@]}"
	fi
	G_SRV='' G_CLI=()
}

# command FILE:LINE TEXT: one joined command line of an sh block.
command_line() {
	local where=$1 text=$2 cmd comment name
	cmd=${text%%#*}
	cmd=${cmd%"${cmd##*[![:space:]]}"}
	comment=
	[[ $text == *#* ]] && comment=${text#*#}
	comment=${comment#"${comment%%[![:space:]]*}"}
	name="$where $(prog "$cmd")"
	if [[ $comment == *"skipped by the docs check:"* ]]; then
		flush_group
		echo "NOT RUN $where: ${comment#*skipped by the docs check: }"
		NOT_RUN=$((NOT_RUN + 1))
	elif [[ $cmd == export\ * ]]; then
		flush_group
		EXPORTS="$EXPORTS; $cmd"
	elif [[ $comment == server* ]]; then
		flush_group
		G_NAME=$name G_SRV=$cmd
	elif [[ -n $G_SRV ]]; then
		G_CLI+=("$cmd")
		G_NAME="$G_NAME, $(prog "$cmd")"
	else
		alone "$name" "$cmd"
	fi
}

NOT_RUN=0
for f in README.md docs/programs.md; do
	n=0 in=0 joined='' start=0 EXPORTS=:
	while IFS= read -r l || [[ -n $l ]]; do
		n=$((n + 1))
		if ((!in)); then
			[[ $l == '```sh' ]] && { in=1; EXPORTS=:; }
			continue
		fi
		if [[ $l == '```' ]]; then
			in=0
			flush_group
			continue
		fi
		if [[ -z ${l//[[:space:]]/} ]]; then
			flush_group
			continue
		fi
		[[ -z $joined ]] && start=$n
		if [[ $l == *\\ ]]; then
			joined+="${l%\\} "
			continue
		fi
		command_line "$f:$start" "$joined$l"
		joined=
	done <"$REPO/$f"
done
echo "readme: $NOT_RUN commands skipped by the docs check"
e2e_summary
