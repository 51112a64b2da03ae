#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The interop suite's own instruments, without a guest (seconds):
#  - icrc_check.py finds every ICRC right in the reference captures, which
#    Linux rxe sent (tests/data/pcaps), and wrong in each frame of a copy
#    with one byte after the BTH changed; a copy with each frame's TTL,
#    IPv4 checksum and UDP checksum changed (fields the ICRC masks)
#    still checks;
#  - rxe-vm answers help, rejects an unknown command, and refuses to make
#    its bridge outside a network namespace of ip netns (as root);
#  - the tool's scripts parse.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CHK=$HERE/icrc_check.py
VM=$HERE/rxe-vm/rxe-vm
PCAPS=$ROOT/tests/data/pcaps
T=$(mktemp -d /tmp/uroce-interop-tools.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { fail=$((fail + 1)); echo "FAIL $1"; }

command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }

# mutate KIND IN OUT: a copy of a capture with every RoCEv2 frame changed
mutate() {
	python3 - "$@" <<'PY'
import struct, sys
kind, src, dst = sys.argv[1:]
data = bytearray(open(src, "rb").read())
e = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
pos = 24
while pos + 16 <= len(data):
    (incl,) = struct.unpack_from(e + "I", data, pos + 8)
    f = pos + 16
    ip = f + 14
    if data[f + 12:f + 14] == b"\x08\x00":
        udp = ip + (data[ip] & 15) * 4
        if kind == "payload":
            data[udp + 8 + 12] ^= 0x01      # the first byte after the BTH
        else:
            data[ip + 8] ^= 0x3f            # TTL
            data[ip + 10] ^= 0x55           # IPv4 header checksum
            data[udp + 6] ^= 0xaa           # UDP checksum
    pos = f + incl
open(dst, "wb").write(data)
PY
}

for f in "$PCAPS"/*.pcap; do
	n=$(basename "$f" .pcap)
	frames=$(python3 -c '
import sys, struct
d = open(sys.argv[1], "rb").read(); p = 24; n = 0
e = "<" if d[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
while p + 16 <= len(d):
    p += 16 + struct.unpack_from(e + "I", d, p + 8)[0]; n += 1
print(n)' "$f")
	out=$(python3 "$CHK" "$f")
	if [[ $? == 0 && $out == *": $frames ICRC ok, 0 ICRC bad, 0 not RoCEv2" ]]; then
		ok "icrc_rxe_$n ($frames frames)"
	else
		ko "icrc_rxe_$n: $out"
	fi
	mutate payload "$f" "$T/$n.bad.pcap"
	python3 "$CHK" "$T/$n.bad.pcap" >"$T/out"
	rc=$?
	out=$(tail -n 1 "$T/out")
	if [[ $rc == 1 && $out == *": 0 ICRC ok, $frames ICRC bad, 0 not RoCEv2" ]]; then
		ok "icrc_flip_$n"
	else
		ko "icrc_flip_$n (exit $rc): $out"
	fi
	mutate masked "$f" "$T/$n.masked.pcap"
	out=$(python3 "$CHK" "$T/$n.masked.pcap")
	if [[ $? == 0 && $out == *": $frames ICRC ok, 0 ICRC bad"* ]]; then
		ok "icrc_masked_$n"
	else
		ko "icrc_masked_$n: $out"
	fi
done
python3 "$CHK" /dev/null >/dev/null 2>&1
[[ $? == 2 ]] && ok icrc_not_pcap || ko "icrc_not_pcap: not exit 2"

for s in "$VM" "$HERE/rxe-vm/mkimage.sh" "$HERE/rxe-vm/guest-init" "$HERE/run_rxe.sh"; do
	bash -n "$s" && ok "parses_$(basename "$s")" || ko "parses_$(basename "$s")"
done
"$VM" help | grep -q '^usage: rxe-vm' && ok vm_help || ko vm_help
"$VM" bogus >/dev/null 2>&1
[[ $? == 2 ]] && ok vm_unknown_command || ko "vm_unknown_command: not exit 2"
if [[ $(id -u) == 0 ]]; then
	# no namespace named: refused before any link is made
	out=$(RXE_VM_NETNS= RXE_VM_STATE=$T/vm "$VM" start 1 2>&1)
	rc=$?
	if [[ $rc != 0 && $out == *"not a namespace of ip netns"* ]] &&
		! ip link show rxebr0 >/dev/null 2>&1; then
		ok vm_refuses_own_netns
	else
		ko "vm_refuses_own_netns (exit $rc): $out"
	fi
else
	echo "(vm_refuses_own_netns: not root, not run)"
fi
echo "interop tools: $pass passed, $fail failed"
((fail == 0))
