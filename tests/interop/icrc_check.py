#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Check the RoCEv2 invariant CRC of every packet in pcap files.

  icrc_check.py [-v] FILE.pcap...

tshark shows the ICRC field but never checks it. This checker is the
project's independent one: it shares no code with uroce (src/wire/icrc.c)
and follows the specification (InfiniBand Architecture, annex A17, RoCEv2):
the ICRC is the CRC-32 of the IEEE 802.3 polynomial (zlib.crc32), sent
least significant byte first, over

  * 8 bytes of ones, standing for the LRH that RoCEv2 has not;
  * the IP header with the fields routers may change set to ones:
    IPv4 type of service, time to live and header checksum; IPv6 traffic
    class, flow label and hop limit;
  * the UDP header with its checksum set to ones;
  * the base transport header with its reserved byte (byte 4, which holds
    the FECN and BECN bits) set to ones;
  * everything after the BTH up to the ICRC itself.

Frames: classic pcap (either byte order, micro- or nanosecond stamps) with
Ethernet (VLAN tags allowed) or raw IP link types. One line per file,
"FILE: N ICRC ok, M ICRC bad, K not RoCEv2" (K counts the frames the
capture cut short too), after the first bad frames (all with -v). Exit 1
if any ICRC is wrong, 2 on an unreadable file. pcap_xcheck.py imports
icrc_of().
"""
import struct
import sys
import zlib

ROCEV2_PORT = 4791
ETH_IPV4, ETH_IPV6, ETH_VLANS = 0x0800, 0x86DD, (0x8100, 0x88A8)
# link types: Ethernet; raw IP (two numbers for it); raw IPv4; raw IPv6
LINK_ETHERNET, LINK_RAW = 1, (101, 12, 228, 229)


class PcapError(Exception):
    pass


def pcap_frames(path):
    """Yield (frame number, link type, bytes) for every whole frame;
    frames the capture cut short come back as bytes None."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise PcapError(f"{path}: too short for a pcap file")
    order = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<",
             b"\xa1\xb2\xc3\xd4": ">", b"\xa1\xb2\x3c\x4d": ">"}.get(data[:4])
    if order is None:
        raise PcapError(f"{path}: not a classic pcap file")
    (link,) = struct.unpack(order + "I", data[20:24])
    link &= 0xFFFF
    pos, num = 24, 0
    while pos + 16 <= len(data):
        caplen, wirelen = struct.unpack(order + "II", data[pos + 8:pos + 16])
        pos += 16
        num += 1
        frame = data[pos:pos + caplen]
        pos += caplen
        whole = caplen == wirelen and len(frame) == caplen
        yield num, link, frame if whole else None


def ip_start(frame, link=LINK_ETHERNET):
    """Offset of the IP header in a frame, or None."""
    if link in LINK_RAW:
        return 0
    if link != LINK_ETHERNET or len(frame) < 14:
        return None
    off = 12
    (etype,) = struct.unpack_from(">H", frame, off)
    while etype in ETH_VLANS and len(frame) >= off + 6:
        off += 4
        (etype,) = struct.unpack_from(">H", frame, off)
    return off + 2 if etype in (ETH_IPV4, ETH_IPV6) else None


def icrc_of(frame, link=LINK_ETHERNET):
    """(ICRC computed, ICRC in the packet), 4 bytes each, for a RoCEv2
    packet; None for anything else."""
    ip = ip_start(frame, link)
    if ip is None or len(frame) < ip + 1:
        return None
    version = frame[ip] >> 4
    if version == 4:
        hlen = (frame[ip] & 0x0F) * 4
        if hlen < 20 or len(frame) < ip + hlen or frame[ip + 9] != 17:
            return None
        iphdr = bytearray(frame[ip:ip + hlen])
        iphdr[1] = 0xFF                  # type of service
        iphdr[8] = 0xFF                  # time to live
        iphdr[10] = iphdr[11] = 0xFF     # header checksum
    elif version == 6:
        hlen = 40
        if len(frame) < ip + hlen or frame[ip + 6] != 17:
            return None                  # (extension headers: not RoCEv2)
        iphdr = bytearray(frame[ip:ip + hlen])
        iphdr[0] |= 0x0F                 # traffic class, high half
        iphdr[1] = iphdr[2] = iphdr[3] = 0xFF  # its low half, flow label
        iphdr[7] = 0xFF                  # hop limit
    else:
        return None
    udp = ip + hlen
    if len(frame) < udp + 8:
        return None
    dport, ulen = struct.unpack_from(">HH", frame, udp + 2)
    # the BTH (12), at least, and the ICRC (4)
    if dport != ROCEV2_PORT or ulen < 8 + 12 + 4 or len(frame) < udp + ulen:
        return None
    udphdr = bytearray(frame[udp:udp + 8])
    udphdr[6] = udphdr[7] = 0xFF         # checksum
    bth = bytearray(frame[udp + 8:udp + 20])
    bth[4] = 0xFF                        # FECN, BECN, reserved
    rest = frame[udp + 20:udp + ulen - 4]
    crc = zlib.crc32(bytes(rest), zlib.crc32(bytes(bth), zlib.crc32(
        bytes(udphdr), zlib.crc32(bytes(iphdr), zlib.crc32(b"\xff" * 8)))))
    return crc.to_bytes(4, "little"), bytes(frame[udp + ulen - 4:udp + ulen])


def check_file(path, verbose):
    good = bad = other = 0
    for num, link, frame in pcap_frames(path):
        r = icrc_of(frame, link) if frame is not None else None
        if r is None:
            other += 1
        elif r[0] == r[1]:
            good += 1
        else:
            bad += 1
            if verbose or bad <= 5:
                print(f"  {path} frame {num}: ICRC {r[1].hex()} in the"
                      f" packet, {r[0].hex()} computed")
    print(f"{path}: {good} ICRC ok, {bad} ICRC bad, {other} not RoCEv2")
    return bad


def main(args):
    verbose = "-v" in args
    files = [a for a in args if a != "-v"]
    if not files:
        sys.stderr.write(__doc__)
        return 2
    bad = 0
    try:
        for path in files:
            bad += check_file(path, verbose)
    except (OSError, PcapError) as e:
        print(f"icrc_check: {e}", file=sys.stderr)
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
