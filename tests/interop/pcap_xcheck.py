#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Cross-check RoCEv2 captures (classic pcap, Ethernet, IPv4 or IPv6).

  pcap_xcheck.py pair A_IP A.pcap B_IP B.pcap
      A.pcap / B.pcap are what two uroce devices recorded (UROCE_PCAP): every
      frame must be A<->B; what B received from A must be, byte for byte,
      among what A sent (and the other way round), and little may be missing
      (the last ACK can arrive after the peer closed its capture).

  pcap_xcheck.py wire KIND WIRE.pcap IP=FILE [IP=FILE...]
      WIRE.pcap is what the kernel carried (tshark on lo, tcpdump on a
      bridge or tap). Each IP=FILE (IPv4 also IP:FILE) is a uroce device's
      own capture (several files of one IP: one process's tries): the
      frames it sent (source IP) must all be on the wire, and every wire
      frame from that IP must be exactly one or more of them back to back
      (a UDP GSO train captured before segmentation; each segment's ICRC
      must be right for the IPv4 ID software segmentation gives it, train
      ID + i (IPv6: no ID), as a device without UDP segmentation offload, e.g. a tap to
      a VM, puts it on the wire). Wire frames from
      addresses without a FILE are counted only. For every wire frame that
      is a single RoCE packet the ICRC is checked with the real IP header
      (by the independent checker icrc_check.py, imported). KIND is a label.
      Exit 1 on any mismatch.

Prints one summary line per check; details of the first mismatches.
"""
import collections
import os
import socket
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = HERE          # icrc_check.py sits beside this file
ROCE_PORT = 4791


def load_checker():
    path = os.environ.get("ICRC_CHECK") or os.path.join(CHECKER,
                                                         "icrc_check.py")
    if not os.path.exists(path):
        sys.exit(f"pcap_xcheck: independent ICRC checker missing: {path}")
    sys.path.insert(0, os.path.dirname(path))
    import icrc_check  # noqa: E402 (the independent checker, by design)
    return icrc_check


def frames(path):
    """Yield dicts: src, dst, ipid, df, payload (UDP), frame (bytes)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        sys.exit(f"{path}: empty or truncated pcap")
    magic = data[:4]
    if magic == b"\xd4\xc3\xb2\xa1" or magic == b"\x4d\x3c\xb2\xa1":
        e = "<"
    elif magic == b"\xa1\xb2\xc3\xd4" or magic == b"\xa1\xb2\x3c\x4d":
        e = ">"
    else:
        sys.exit(f"{path}: not a classic pcap file")
    if struct.unpack(e + "I", data[20:24])[0] != 1:
        sys.exit(f"{path}: linktype is not Ethernet")
    off = 24
    while off + 16 <= len(data):
        incl, orig = struct.unpack(e + "II", data[off + 8:off + 16])
        fr = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if incl != orig or len(fr) < 14 + 20 + 8:
            yield None
            continue
        etype = struct.unpack(">H", fr[12:14])[0]
        if etype == 0x0800 and fr[23] == 17:
            ihl = (fr[14] & 15) * 4
            ip = fr[14:14 + ihl]
            src = socket.inet_ntoa(ip[12:16])
            dst = socket.inet_ntoa(ip[16:20])
            ipid = struct.unpack(">H", ip[4:6])[0]
            df = bool(ip[6] & 0x40)
        elif etype == 0x86DD and len(fr) >= 14 + 40 + 8 and fr[20] == 17:
            ihl = 40
            src = socket.inet_ntop(socket.AF_INET6, fr[22:38])
            dst = socket.inet_ntop(socket.AF_INET6, fr[38:54])
            ipid = None
            df = True
        else:
            yield None
            continue
        udp = fr[14 + ihl:14 + ihl + 8]
        ulen = struct.unpack(">H", udp[4:6])[0]
        yield {
            "src": src,
            "dst": dst,
            "ipid": ipid,
            "df": df,
            "dport": struct.unpack(">H", udp[2:4])[0],
            "payload": bytes(fr[14 + ihl + 8:14 + ihl + ulen]),
            "frame": bytes(fr),
        }


def pair(a, fa, b, fb):
    bad = 0
    sent = {a: collections.Counter(), b: collections.Counter()}
    recv = {a: collections.Counter(), b: collections.Counter()}
    for me, other, path in ((a, b, fa), (b, a, fb)):
        n = 0
        for fr in frames(path):
            n += 1
            if fr is None or {fr["src"], fr["dst"]} != {me, other}:
                bad += 1
                print(f"  {path} frame {n}: not a RoCEv2 frame {me}<->{other}")
                continue
            (sent if fr["src"] == me else recv)[me][fr["payload"]] += 1
        if n == 0:
            bad += 1
            print(f"  {path}: no frames")
    for s, r in ((a, b), (b, a)):
        tx, rx = sent[s], recv[r]
        extra = rx - tx
        lost = sum((tx - rx).values())
        ntx = sum(tx.values())
        print(f"{s} -> {r}: {ntx} sent, {sum(rx.values())} received, "
              f"{lost} not received, {sum(extra.values())} received but "
              f"never sent")
        if extra:
            bad += 1
        if ntx == 0 or lost > max(2, ntx // 20):
            bad += 1
    return 1 if bad else 0


def peel(payload, rem, lens):
    """Split payload into packets of the multiset rem (consumed), or None;
    lens: the lengths rem's packets have, longest first."""
    pos, parts = 0, []
    while pos < len(payload):
        for ln in lens:
            seg = payload[pos:pos + ln]
            if len(seg) == ln and rem[seg] > 0:
                parts.append(seg)
                pos += ln
                break
        else:
            for seg in parts:
                rem[seg] += 1
            return None
        rem[parts[-1]] -= 1
    return parts


def segment_frame(fr, seg, i):
    """Segment i of a GSO train as Linux software segmentation emits it:
    the train's IP/UDP headers with the lengths of this segment and, for
    IPv4, ID + i."""
    f = fr["frame"]
    if fr["ipid"] is None:
        ip = bytearray(f[14:14 + 40])
        ip[4:6] = struct.pack(">H", 8 + len(seg))
    else:
        ihl = (f[14] & 15) * 4
        ip = bytearray(f[14:14 + ihl])
        ip[2:4] = struct.pack(">H", ihl + 8 + len(seg))
        ip[4:6] = struct.pack(">H", (fr["ipid"] + i) & 0xffff)
    ihl = len(ip)
    udp = bytearray(f[14 + ihl:14 + ihl + 8])
    udp[4:6] = struct.pack(">H", 8 + len(seg))
    return f[:14] + bytes(ip) + bytes(udp) + seg


def wire(kind, wpath, specs):
    chk = load_checker()
    bad = 0
    own = {}
    for spec in specs:
        ip, path = spec.split("=" if "=" in spec else ":", 1)
        c = own.setdefault(ip, collections.Counter())
        for fr in frames(path):
            if fr is not None and fr["src"] == ip:
                c[fr["payload"]] += 1
    ntx = {ip: sum(c.values()) for ip, c in own.items()}
    lens = {ip: sorted({len(p) for p in c}, reverse=True)
            for ip, c in own.items()}
    stats = collections.Counter()
    n = 0
    for fr in frames(wpath):
        n += 1
        if fr is None or fr["dport"] != ROCE_PORT:
            stats["other"] += 1
            continue
        src = fr["src"]
        stats["from " + src] += 1
        if src in own:
            parts = peel(fr["payload"], own[src], lens[src])
            if parts is None:
                bad += 1
                print(f"  {wpath} frame {n} ({src}, {len(fr['payload'])} B):"
                      " not what the sender recorded")
                continue
            if len(parts) > 1:
                stats["trains"] += 1
                stats["train segments"] += len(parts)
                for i, seg in enumerate(parts):
                    r = chk.icrc_of(segment_frame(fr, seg, i))
                    if r is None or r[0] != r[1]:
                        bad += 1
                        stats["train segments ICRC bad"] += 1
                        if stats["train segments ICRC bad"] <= 5:
                            print(f"  {wpath} frame {n}: train segment {i}"
                                  " ICRC wrong" + ("" if fr["ipid"] is None
                                  else " for IPv4 ID "
                                  f"{(fr['ipid'] + i) & 0xffff}"))
                continue
        r = chk.icrc_of(fr["frame"])
        if r is None:
            stats["not RoCEv2"] += 1
            continue
        calc, onwire = r
        if calc == onwire:
            stats["ICRC ok"] += 1
        else:
            bad += 1
            stats["ICRC bad"] += 1
            if stats["ICRC bad"] <= 5:
                print(f"  {wpath} frame {n} ({src} -> {fr['dst']} id "
                      f"{fr['ipid']} df {int(fr['df'])}): ICRC on wire "
                      f"{onwire.hex()} computed {calc.hex()}")
    for ip, c in own.items():
        left = sum(c.values())
        if left:
            bad += 1
            print(f"  {left} of {ntx[ip]} packets {ip} recorded are not on "
                  f"the wire")
    print(f"{kind}: {n} frames; " +
          ", ".join(f"{k} {v}" for k, v in sorted(stats.items())) +
          "; recorded by senders: " +
          ", ".join(f"{ip} {v}" for ip, v in ntx.items()))
    if n == 0:
        bad += 1
    return 1 if bad else 0


def main(argv):
    if len(argv) == 5 and argv[0] == "pair":
        return pair(argv[1], argv[2], argv[3], argv[4])
    if len(argv) >= 4 and argv[0] == "wire":
        return wire(argv[1], argv[2], argv[3:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
