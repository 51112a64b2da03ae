#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Medians and same-run ratios for bench/run.sh.

    report.py RESULTS FACTS [--write docs/benchmarks.md]

RESULTS holds "round name value unit" lines, FACTS "key<TAB>value" lines.
Prints the generated part of docs/benchmarks.md's "perftest over uroce"
section as markdown; with --write, replaces what lies between its markers
(appending the section when the markers are missing).

Ratios are the median over rounds of the per-round ratio, so that both
sides of each ratio come from the same round (same load); the range over
rounds is in brackets.
"""
import statistics
import sys
import textwrap
from collections import defaultdict

BEGIN = "<!-- bench/run.sh: begin (generated; edit bench/report.py) -->"
END = "<!-- bench/run.sh: end -->"
HEADING = "## perftest over uroce"

LAT_TARGET = 1.5
BW_TARGET = 0.60
TPUT = [("gso15_gro", "GSO 15 x 4 KiB + GRO"),
        ("mmsg32", "sendmmsg/recvmmsg x 32"),
        ("sendto_recv", "sendto/recv")]


def load(path):
    """{name: {round: value}} from the results file."""
    data = defaultdict(dict)
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 3:
                continue
            try:
                data[parts[1]][int(parts[0])] = float(parts[2])
            except ValueError:
                continue
    return data


def load_facts(path):
    facts = {}
    with open(path) as f:
        for line in f:
            key, _, val = line.rstrip("\n").partition("\t")
            facts[key] = val
    return facts


def fmt(v, unit=""):
    if v is None:
        return "—"
    if abs(v) >= 100:
        s = "%.0f" % v
    elif abs(v) >= 10:
        s = "%.1f" % v
    else:
        s = "%.2f" % v
    return s + unit


def med(data, name):
    vals = list(data.get(name, {}).values())
    return statistics.median(vals) if vals else None


def med_range(data, name, unit=""):
    vals = sorted(data.get(name, {}).values())
    if not vals:
        return "—"
    m = statistics.median(vals)
    if len(vals) == 1:
        return fmt(m, unit)
    return "%s [%s–%s]" % (fmt(m, unit), fmt(vals[0]), fmt(vals[-1]))


def ratios(data, num, den_fn):
    """Per-round num/den, for the rounds that have both."""
    out = []
    for r, v in data.get(num, {}).items():
        d = den_fn(r)
        if d:
            out.append(v / d)
    return sorted(out)


def ratio_cell(rs):
    if not rs:
        return "—", None
    m = statistics.median(rs)
    if len(rs) == 1:
        return "%.2f" % m, m
    return "%.2f [%.2f–%.2f]" % (m, rs[0], rs[-1]), m


def failed(data, tag, rounds):
    n = len(data.get(tag + "_fail", {}))
    return " (%d/%d runs failed)" % (n, rounds) if n else ""


def verdict(m, ok):
    if m is None:
        return "—"
    return "**yes**" if ok(m) else "no"


def render(data, facts):
    rounds = len({r for v in data.values() for r in v}) or 0
    L = []
    L.append("Measured %s (HEAD %s; library built %s), %s build, %d "
             "round(s). Machine: %s "
             "cores, %s, Linux %s; load average (1/5/15 min) at start %s, "
             "at end %s. perftest %s (Debian)."
             % (facts.get("date", "?"), facts.get("commit", "?"),
                facts.get("lib_built", "?"), facts.get("build_type") or "default", rounds,
                facts.get("nproc", "?"), facts.get("cpu", "?"),
                facts.get("kernel", "?"), facts.get("load_start", "?"),
                facts.get("load_end", "?"), facts.get("perftest", "?")))
    L.append("")
    L.append("Command: `%s`" % facts.get("command", "bench/run.sh"))
    L.append("")

    # --- latency ---
    L.append("**Latency** (64 B; atomic 8 B), µs, median over rounds "
             "[min–max]. perftest's t_typical is one-way (RTT/2) for write "
             "and send, a full round trip for read and atomic, so those are "
             "read against 2 × the UDP one-way figure. Ratio = median of "
             "the per-round ratios.")
    L.append("")
    L.append("| test | mode | t_typical | p99 | raw UDP, same mode | "
             "ratio | target | met |")
    L.append("|---|---|---|---|---|---|---|---|")
    rows = [("ib_write_lat", "write_lat_block", "block", 1, True),
            ("ib_send_lat", "send_lat_block", "block", 1, True),
            ("ib_read_lat", "read_lat_block", "block", 2, False),
            ("ib_atomic_lat", "atomic_lat_block", "block", 2, False),
            ("ib_write_lat", "write_lat_busy", "busy", 1, True),
            ("ib_send_lat", "send_lat_busy", "busy", 1, True)]
    for test, tag, mode, mult, targeted in rows:
        base = "udp_lat_%s_median" % mode
        bd = data.get(base, {})
        rs = ratios(data, tag + "_typ",
                    lambda r, bd=bd, mult=mult: bd.get(r, 0) * mult)
        cell, m = ratio_cell(rs)
        bm = med(data, base)
        bcell = "—" if bm is None else (
            "%s one-way" % fmt(bm) if mult == 1 else
            "%s round trip" % fmt(bm * mult))
        L.append("| %s%s | %s | %s | %s | %s | %s | %s | %s |" % (
            test, failed(data, tag, rounds),
            "blocking (default)" if mode == "block" else
            "UROCE_BUSY_POLL=1 (vs busy-poll UDP)",
            med_range(data, tag + "_typ"), fmt(med(data, tag + "_p99")),
            bcell, cell + "×" if m is not None else cell,
            "≤ %.1f×" % LAT_TARGET if targeted else "—",
            verdict(m, lambda x: x <= LAT_TARGET) if targeted else "—"))
    L.append("")

    # --- bandwidth ---
    L.append("**Bandwidth** (64 KiB messages, `-n 5000`), GB/s (10^9 B/s; "
             "perftest's BW average), median [min–max], and its fraction of "
             "the raw UDP 4 KiB throughput of the same round. *best* is the "
             "best of the three UDP modes in that round.")
    L.append("")
    L.append("| test | GB/s | / GSO+GRO | / mmsg x 32 | / sendto | / best "
             "| target | met |")
    L.append("|---|---|---|---|---|---|---|---|")

    def best(r):
        vals = [data.get("udp_tput_" + k, {}).get(r, 0) for k, _ in TPUT]
        return max(vals) if vals else 0

    for test, tag in [("ib_write_bw", "write_bw"), ("ib_read_bw", "read_bw"),
                      ("ib_send_bw", "send_bw")]:
        cells = []
        for k, _ in TPUT:
            d = data.get("udp_tput_" + k, {})
            c, _m = ratio_cell(ratios(data, tag + "_bw",
                                      lambda r, d=d: d.get(r, 0)))
            cells.append(c)
        c, m = ratio_cell(ratios(data, tag + "_bw", best))
        targeted = tag in ("write_bw", "read_bw")
        L.append("| %s%s | %s | %s | %s | %s | %s | %s | %s |" % (
            test, failed(data, tag, rounds), med_range(data, tag + "_bw"),
            cells[0], cells[1], cells[2], c,
            "≥ %.2f" % BW_TARGET if targeted else "—",
            verdict(m, lambda x: x >= BW_TARGET) if targeted else "—"))
    L.append("")

    # --- baselines ---
    L.append("**Baselines of the same rounds** (median [min–max])")
    L.append("")
    L.append("| measurement | value |")
    L.append("|---|---|")
    for mode, label in [("block", "blocking recv"), ("busy", "busy poll")]:
        L.append("| raw UDP 64 B one-way, %s: median / p99 | %s / %s µs |"
                 % (label, med_range(data, "udp_lat_%s_median" % mode),
                    fmt(med(data, "udp_lat_%s_p99" % mode))))
    if "link_lat_block_median" in data:
        for mode, label in [("block", "blocking"), ("busy", "busy poll")]:
            L.append("| through link/ (link_bench), %s: median / p99 | "
                     "%s / %s µs |"
                     % (label, med_range(data, "link_lat_%s_median" % mode),
                        fmt(med(data, "link_lat_%s_p99" % mode))))
    for k, label in TPUT:
        L.append("| raw UDP 4 KiB throughput, %s (loss) | %s GB/s (%s %%) |"
                 % (label, med_range(data, "udp_tput_" + k),
                    fmt(med(data, "udp_tput_%s_loss" % k))))
    for size, label in [(65536, "64 KiB"), (1048576, "1 MiB")]:
        L.append("| memcpy %s, hot cache | %s GB/s |"
                 % (label, med_range(data, "memcpy_%d" % size)))
    out = []
    for line in L:
        if line.startswith("|") or line.startswith("Command:"):
            out.append(line)
        else:
            out.append(textwrap.fill(line, 78, break_long_words=False,
                                     break_on_hyphens=False))
    return "\n".join(out) + "\n"


def write_doc(path, body):
    with open(path) as f:
        doc = f.read()
    block = BEGIN + "\n" + body + END + "\n"
    b = doc.find(BEGIN)
    e = doc.find(END)
    if b >= 0 and e > b:
        doc = doc[:b] + block + doc[e + len(END):].lstrip("\n")
        if not doc[b + len(block):].startswith("\n") and \
                len(doc) > b + len(block):
            doc = doc[:b + len(block)] + "\n" + doc[b + len(block):]
    else:
        if HEADING not in doc:
            doc = doc.rstrip("\n") + "\n\n" + HEADING + "\n\n"
        doc = doc.rstrip("\n") + "\n\n" + block
    with open(path, "w") as f:
        f.write(doc)


def main(argv):
    if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] != "--write"):
        sys.stderr.write(__doc__)
        return 2
    data = load(argv[1])
    body = render(data, load_facts(argv[2]))
    sys.stdout.write(body)
    if len(argv) == 5:
        write_doc(argv[4], body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
