#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# uroce's promise of no root and no locked memory, tested: rdma-core's
# pingpongs, perftest and UCX run as an unprivileged user (nobody, when the
# suite runs as root) with RLIMIT_MEMLOCK 0 (prlimit --memlock=0), under
# `uroce run`, with their own runtime directory (/tmp/uroce-<uid>). About
# 40 s.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
LIBDIR=$(cd "$LIBDIR" && pwd)
U=$(cd "$(dirname "$0")/../.." && pwd)/tools/uroce
command -v prlimit >/dev/null || { echo "SKIP: prlimit missing"; exit 77; }

# as: the unprivileged user (nobody) with no locked memory allowed
as=(prlimit --memlock=0:0)
if (($(id -u) == 0)); then
	as=(setpriv --reuid=nobody --regid=nogroup --clear-groups
	    --inh-caps=-all --bounding-set=-all "${as[@]}")
	# the checkout may be unreadable to nobody (CI clones under /root):
	# run a copy of the libraries and the command from our temp dir
	chmod 755 "$E2E_TMP"
	mkdir -m 755 "$E2E_TMP/lib"
	cp -a "$LIBDIR"/lib*.so* "$E2E_TMP/lib/"
	cp "$U" "$E2E_TMP/uroce"
	LIBDIR=$E2E_TMP/lib
	U=$E2E_TMP/uroce
fi
who=$(env -u XDG_RUNTIME_DIR "${as[@]}" sh -c 'echo $(id -u) $(ulimit -l)')
if [[ $who == "0 "* || ${who#* } != 0 ]]; then
	echo "FAIL: not unprivileged with memlock 0 (got uid/memlock: $who)"
	exit 1
fi
echo "running as uid ${who% *} with memlock ${who#* }"
R="env -u XDG_RUNTIME_DIR UROCE_LIBDIR=$LIBDIR ${as[*]} $U run --"

p=$(e2e_port)
e2e_pair rc_pingpong 60 "$R ibv_rc_pingpong -d uroce0 -g 0 -n 200 -p $p" \
	"$R ibv_rc_pingpong -d uroce0 -g 0 -n 200 -p $p 127.0.0.1" \
	"200 iters in"
p=$(e2e_port)
e2e_pair ud_pingpong 60 "$R ibv_ud_pingpong -d uroce0 -g 0 -n 200 -p $p" \
	"$R ibv_ud_pingpong -d uroce0 -g 0 -n 200 -p $p 127.0.0.1" \
	"200 iters in"
bw_line='^ *[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]*[1-9][0-9.]*'
for t in ib_write_bw ib_read_bw ib_send_lat; do
	p=$(e2e_port)
	re=$bw_line
	[[ $t == *lat ]] && re='^ *[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+'
	e2e_pair "$t" 60 "$R $t -d uroce0 -x 0 -F -p $p -n 200" \
		"$R $t -d uroce0 -x 0 -F -p $p -n 200 127.0.0.1" "$re"
done
if command -v ucx_perftest >/dev/null; then
	p=$(e2e_port)
	e2e_pair ucx_tag_bw 90 \
		"env UCX_NET_DEVICES=uroce0:1 UCX_TLS=rc_verbs,ud_verbs $R ucx_perftest -p $p -t tag_bw -s 65536 -n 200" \
		"env UCX_NET_DEVICES=uroce0:1 UCX_TLS=rc_verbs,ud_verbs $R ucx_perftest 127.0.0.1 -p $p -t tag_bw -s 65536 -n 200" \
		'^Final: +200 '
else
	e2e_skip ucx_tag_bw "ucx-utils not installed"
fi
e2e_summary
