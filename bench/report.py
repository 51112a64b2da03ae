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

# issue 23's targets, as ratios to what ran beside them in the same round
LAT_UCX = 1.0		# default mode: typical <= UCX tcp am_lat
LAT_BUSY = 1.5		# busy polling: typical <= 1.5 x raw UDP busy one-way
P99_TYP = 3.0		# p99 <= 3 x typical
AVG_TYP = 1.5		# average <= 1.5 x typical
BW_TARGET = 0.60	# 64 KiB write/read >= 0.6 x raw UDP GSO+GRO
BW_1M_UCX = 1.0		# 1 MiB write >= UCX tcp put_bw 1 MiB
MRATE = 2.0		# M/s, 64 B with -l 16
CPU_UCX = 0.5		# both sides <= 0.5 x UCX tcp put_bw's
CPU_TARGET = 0.25	# s/GB, the target side alone
QP_TARGET = 1.0		# -q 4/16/64 >= -q 1; two pairs >= one
THR_TARGET = 0.8	# T = 4 and 8 >= 0.8 x T = 1
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


def moving_cpu(data, tag):
    """<tag>_cpu_{both,target}_moving per round: the run's CPU less its
    -n 10 twin's (<tag>_setup), over the bytes the difference moved."""
    setup = tag + "_setup"
    for r, srv in data.get(tag + "_cpu_srv_s", {}).items():
        try:
            cli = data[tag + "_cpu_cli_s"][r]
            gb = data[tag + "_cpu_gb"][r] - data[setup + "_cpu_gb"][r]
            s_srv = data[setup + "_cpu_srv_s"][r]
            s_cli = data[setup + "_cpu_cli_s"][r]
        except KeyError:
            continue
        if gb <= 0:
            continue
        data.setdefault(tag + "_cpu_both_moving", {})[r] = max(
            0.0, (srv + cli - s_srv - s_cli) / gb)
        data.setdefault(tag + "_cpu_target_moving", {})[r] = max(
            0.0, (srv - s_srv) / gb)


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


def ratio_of(data, num, den):
    """ratio_cell of num over den, per round."""
    d = data.get(den, {})
    return ratio_cell(ratios(data, num, lambda r: d.get(r, 0)))


def xcell(cell, m):
    return cell + "×" if m is not None else cell


def checks(parts):
    """'met' cell of several (label, value, ok) checks: yes only if all
    hold; otherwise names the ones that do not."""
    parts = [(lab, v, ok) for lab, v, ok in parts if v is not None]
    if not parts:
        return "—"
    bad = [lab for lab, v, ok in parts if not ok(v)]
    return "**yes**" if not bad else "no (" + ", ".join(bad) + ")"


def render(data, facts):
    rounds = len({r for v in data.values() for r in v}) or 0
    L = []
    L.append("Measured %s (HEAD %s; library built %s), %s build, %d "
             "round(s) in %s. Machine: %s "
             "cores, %s, Linux %s; load average (1/5/15 min) at start %s, "
             "at end %s. perftest %s, UCX %s, libfabric %s (Debian)."
             % (facts.get("date", "?"), facts.get("commit", "?"),
                facts.get("lib_built", "?"),
                facts.get("build_type") or "default", rounds,
                facts.get("duration", "?"),
                facts.get("nproc", "?"), facts.get("cpu", "?"),
                facts.get("kernel", "?"), facts.get("load_start", "?"),
                facts.get("load_end", "?"), facts.get("perftest", "?"),
                facts.get("ucx", "?"), facts.get("libfabric", "?")))
    L.append("")
    L.append("Command: `%s`" % facts.get("command", "bench/run.sh"))
    L.append("")

    # --- latency ---
    L.append("**Latency**, 64 B (atomic 8 B), µs: t_typical median over "
             "rounds [min–max], and the medians of the average and the "
             "99th percentile. Write and send are one-way (RTT/2), read "
             "and atomic a round trip. Ratios are medians of per-round "
             "ratios: to UCX over TCP `am_lat` (one-way) and to raw UDP "
             "of the same mode (one-way; × 2 for a round trip). The raw "
             "UDP relay rows are `ib_write_lat`'s shape with plain "
             "sockets: each process's main thread spins on memory, as "
             "perftest's does, and another thread must receive.")
    L.append("")
    L.append("| test | mode | t_typical | avg | p99 | / UCX am_lat | "
             "/ raw UDP | target | met |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    rows = [("ib_write_lat", "write_lat_block", "block", 1, True),
            ("ib_send_lat", "send_lat_block", "block", 1, True),
            ("ib_read_lat", "read_lat_block", "block", 2, False),
            ("ib_atomic_lat", "atomic_lat_block", "block", 2, False),
            ("ib_write_lat", "write_lat_busy", "busy", 1, True),
            ("ib_send_lat", "send_lat_busy", "busy", 1, True)]
    for test, tag, mode, mult, targeted in rows:
        bd = data.get("udp_lat_%s_median" % mode, {})
        ud = data.get("ucx_am_lat_typ", {})
        ucell, um = ratio_cell(ratios(
            data, tag + "_typ", lambda r: ud.get(r, 0) * mult))
        rcell, rm = ratio_cell(ratios(
            data, tag + "_typ", lambda r: bd.get(r, 0) * mult))
        typ, avg, p99 = (med(data, tag + "_typ"), med(data, tag + "_avg"),
                         med(data, tag + "_p99"))
        if targeted:
            parts = [("p99", p99 / typ if typ and p99 else None,
                      lambda x: x <= P99_TYP),
                     ("avg", avg / typ if typ and avg else None,
                      lambda x: x <= AVG_TYP)]
            if mode == "block":
                tgt = "≤ %.1f× UCX" % LAT_UCX
                parts.insert(0, ("UCX", um, lambda x: x <= LAT_UCX))
            else:
                tgt = "≤ %.1f× UDP" % LAT_BUSY
                parts.insert(0, ("UDP", rm, lambda x: x <= LAT_BUSY))
            tgt += "; p99 ≤ %g×, avg ≤ %g× typ" % (P99_TYP, AVG_TYP)
            met = checks(parts)
        else:
            tgt, met = "—", "—"
        L.append("| %s%s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            test, failed(data, tag, rounds),
            "default" if mode == "block" else "UROCE_BUSY_POLL=1",
            med_range(data, tag + "_typ"), fmt(avg), fmt(p99),
            xcell(ucell, um), xcell(rcell, rm), tgt, met))
    peers = [("UCX over TCP `am_lat` (50th percentile)", "ucx_am_lat_typ"),
             ("libfabric tcp, `fi_pingpong -e rdm` (mean)", "fi_tcp_typ"),
             ("libfabric udp, `fi_pingpong -e dgram` (mean)", "fi_udp_typ"),
             ("raw UDP ping-pong, blocking (median)", "udp_lat_block_median"),
             ("raw UDP ping-pong, busy poll (median)", "udp_lat_busy_median"),
             ("raw UDP relay (spinning main thread fed by a receiving "
              "thread), blocking (median)", "udp_lat_relay_block_median"),
             ("raw UDP relay, busy poll (median)",
              "udp_lat_relay_busy_median")]
    for label, name in peers:
        tag = name.rsplit("_", 1)[0]
        ucell, um = ratio_of(data, name, "ucx_am_lat_typ")
        p99 = None
        if name.startswith("udp_lat"):
            p99 = med(data, name.replace("_median", "_p99"))
        L.append("| %s%s | — | %s | — | %s | %s | — | — | — |" % (
            label, failed(data, tag, rounds), med_range(data, name),
            fmt(p99), xcell(ucell, um) if name != "ucx_am_lat_typ" else "1"))
    L.append("")

    # --- bandwidth ---
    L.append("**Bandwidth**, GB/s (10^9 B/s; perftest's BW average, UCX's "
             "overall average), median [min–max]; ratios to the raw UDP "
             "4 KiB throughput with GSO+GRO and to UCX over TCP `put_bw` "
             "(zcopy) of the same size and round.")
    L.append("")
    L.append("| test | size | GB/s | / raw UDP GSO+GRO | / UCX put_bw | "
             "target | met |")
    L.append("|---|---|---|---|---|---|---|")
    rows = [("ib_write_bw", "write_bw", "64 KiB", "ucx_put_bw",
             ("gso", BW_TARGET)),
            ("ib_read_bw", "read_bw", "64 KiB", "ucx_put_bw",
             ("gso", BW_TARGET)),
            ("ib_send_bw", "send_bw", "64 KiB", "ucx_put_bw", None),
            ("ib_write_bw", "write_bw_1m", "1 MiB", "ucx_put_bw_1m",
             ("ucx", BW_1M_UCX)),
            ("UCX over TCP `put_bw`", "ucx_put_bw", "64 KiB", None, None),
            ("UCX over TCP `put_bw`", "ucx_put_bw_1m", "1 MiB", None, None)]
    for test, tag, size, ucx, tgt in rows:
        gcell, gm = ratio_of(data, tag + "_bw", "udp_tput_gso15_gro")
        ucell, um = (ratio_of(data, tag + "_bw", ucx + "_bw") if ucx
                     else ("—", None))
        if tgt is None:
            tcell, met = "—", "—"
        elif tgt[0] == "gso":
            tcell = "≥ %.2f× UDP" % tgt[1]
            met = verdict(gm, lambda x: x >= tgt[1])
        else:
            tcell = "≥ %.1f× UCX" % tgt[1]
            met = verdict(um, lambda x: x >= tgt[1])
        L.append("| %s%s | %s | %s | %s | %s | %s | %s |" % (
            test, failed(data, tag, rounds), size,
            med_range(data, tag + "_bw"), xcell(gcell, gm), xcell(ucell, um),
            tcell, met))
    L.append("")

    # --- message rate ---
    m = med(data, "msg_rate_mrate")
    L.append("**Message rate**: `ib_write_bw -s 64 -l 16` (post lists of "
             "16), M WRITEs/s, median [min–max].")
    L.append("")
    L.append("| test | M/s | target | met |")
    L.append("|---|---|---|---|")
    L.append("| ib_write_bw 64 B, -l 16%s | %s | ≥ %g M/s | %s |" % (
        failed(data, "msg_rate", rounds), med_range(data, "msg_rate_mrate"),
        MRATE, verdict(m, lambda x: x >= MRATE)))
    L.append("")

    # --- scaling ---
    L.append("**Scaling**: aggregate GB/s, median [min–max], and the "
             "median of the per-round ratios to the one-QP, one-pair or "
             "one-thread run of the same round. QPs: `ib_write_bw -s "
             "65536 -q Q` moving the same bytes as the `-q 1` row of the "
             "bandwidth table; pairs: `ib_write_bw -D 3`, two pairs at "
             "once against one pair run just before and just after; "
             "threads: `threads_bench`, one process, T threads each "
             "writing 4 KiB WRITEs (16 in flight) between its own two RC "
             "QPs, every byte checked; its CPU is the whole process's "
             "(user + system, `getrusage`) per GB written.")
    L.append("")
    L.append("| test | GB/s | ratio | CPU, s/GB | target | met |")
    L.append("|---|---|---|---|---|---|")
    L.append("| -q 1%s | %s | 1 | — | — | — |" % (
        failed(data, "write_bw", rounds), med_range(data, "write_bw_bw")))
    for q in (4, 16, 64):
        c, m = ratio_of(data, "write_bw_q%d_bw" % q, "write_bw_bw")
        L.append("| -q %d%s | %s | %s | — | ≥ %.1f× | %s |" % (
            q, failed(data, "write_bw_q%d" % q, rounds),
            med_range(data, "write_bw_q%d_bw" % q), xcell(c, m), QP_TARGET,
            verdict(m, lambda x: x >= QP_TARGET)))
    # one pair before and after the two: their mean, so that drift during
    # the three runs does not land on the ratio
    one = defaultdict(dict)
    for r, v in data.get("pair1_bw", {}).items():
        b = data.get("pair1b_bw", {}).get(r)
        one["pair_one_bw"][r] = v if b is None else (v + b) / 2
    data = dict(data, **one)
    L.append("| one pair (mean of before and after)%s | %s | 1 | — | — "
             "| — |" % (failed(data, "pair1", rounds) or
                failed(data, "pair1b", rounds),
                med_range(data, "pair_one_bw")))
    c, m = ratio_of(data, "pair2_bw", "pair_one_bw")
    L.append("| two pairs at once%s | %s | %s | — | ≥ %.1f× | %s |" % (
        failed(data, "pair2", rounds), med_range(data, "pair2_bw"),
        xcell(c, m), QP_TARGET, verdict(m, lambda x: x >= QP_TARGET)))
    for t in (1, 2, 4, 8):
        name = "threads_%d_bw" % t
        if t == 1:
            c, m, tc, met = "1", None, "—", "—"
        else:
            c, m = ratio_of(data, name, "threads_1_bw")
            c = xcell(c, m)
            tc = "≥ %.1f×" % THR_TARGET if t >= 4 else "—"
            met = verdict(m, lambda x: x >= THR_TARGET) if t >= 4 else "—"
        L.append("| threads, T = %d%s | %s | %s | %s | %s | %s |" % (
            t, failed(data, "threads_%d" % t, rounds), med_range(data, name),
            c, med_range(data, "threads_%d_cpu_per_gb" % t), tc, met))
    L.append("")

    # --- CPU ---
    L.append("**CPU per GB moved**, s/GB: user + system time of each "
             "process (`/usr/bin/time`) over the bytes the run moves, "
             "median [min–max], for the whole run and for the moving "
             "alone (the whole run less the same pair's run of 10 "
             "messages: start-up and teardown, which for uroce includes "
             "writing its device tree). The target side is the server "
             "(the WRITEs' or PUTs' target). perftest's and UCX's clients "
             "spin on their completion queue, so both sides include one "
             "busy core. The targets are judged on the moving alone.")
    L.append("")
    L.append("| test | both sides, moving | target side, moving | "
             "both / UCX's | whole run: both / target | targets | met |")
    L.append("|---|---|---|---|---|---|---|")
    moving_cpu(data, "write_bw")
    moving_cpu(data, "ucx_put_bw")
    c, m = ratio_of(data, "write_bw_cpu_both_moving",
                    "ucx_put_bw_cpu_both_moving")
    tm = med(data, "write_bw_cpu_target_moving")
    L.append("| uroce ib_write_bw 64 KiB | %s | %s | %s | %s / %s | both "
             "≤ %.1f× UCX's; target ≤ %.2f s/GB | %s |" % (
                 med_range(data, "write_bw_cpu_both_moving"),
                 med_range(data, "write_bw_cpu_target_moving"),
                 xcell(c, m), med_range(data, "write_bw_cpu_both"),
                 med_range(data, "write_bw_cpu_target"),
                 CPU_UCX, CPU_TARGET,
                 checks([("both", m, lambda x: x <= CPU_UCX),
                         ("target", tm, lambda x: x <= CPU_TARGET)])))
    L.append("| UCX over TCP put_bw 64 KiB | %s | %s | 1 | %s / %s | — "
             "| — |" % (
                 med_range(data, "ucx_put_bw_cpu_both_moving"),
                 med_range(data, "ucx_put_bw_cpu_target_moving"),
                 med_range(data, "ucx_put_bw_cpu_both"),
                 med_range(data, "ucx_put_bw_cpu_target")))
    L.append("")

    # --- namespaces ---
    ns = facts.get("netns", "")
    L.append("**Between two network namespaces** (%s): the latency and "
             "64 KiB bandwidth rows again, with the same flags, and their "
             "ratio to the same row on 127.0.0.1 in the same round."
             % (ns or "not run"))
    L.append("")
    if any(k.startswith("ns_") for k in data):
        L.append("| test | value | / on 127.0.0.1 | / UCX, namespaces | "
                 "target | met |")
        L.append("|---|---|---|---|---|---|")
        rows = [("ib_write_lat t_typical, µs", "ns_write_lat_typ",
                 "write_lat_block_typ", "ns_ucx_am_lat_typ", "lat"),
                ("ib_send_lat t_typical, µs", "ns_send_lat_typ",
                 "send_lat_block_typ", "ns_ucx_am_lat_typ", "lat"),
                ("UCX over TCP am_lat, µs", "ns_ucx_am_lat_typ",
                 "ucx_am_lat_typ", None, None),
                ("ib_write_bw 64 KiB, GB/s", "ns_write_bw_bw",
                 "write_bw_bw", "ns_ucx_put_bw_bw", None),
                ("UCX over TCP put_bw 64 KiB, GB/s", "ns_ucx_put_bw_bw",
                 "ucx_put_bw_bw", None, None)]
        for label, name, lo, ucx, tgt in rows:
            tag = name.rsplit("_", 1)[0]
            lc, lm = ratio_of(data, name, lo)
            uc, um = ratio_of(data, name, ucx) if ucx else ("—", None)
            if tgt:
                typ = med(data, name)
                p99 = med(data, tag + "_p99")
                avg = med(data, tag + "_avg")
                tc = "≤ %.1f× UCX; p99 ≤ %g×, avg ≤ %g× typ" % (
                    LAT_UCX, P99_TYP, AVG_TYP)
                met = checks([
                    ("UCX", um, lambda x: x <= LAT_UCX),
                    ("p99", p99 / typ if typ and p99 else None,
                     lambda x: x <= P99_TYP),
                    ("avg", avg / typ if typ and avg else None,
                     lambda x: x <= AVG_TYP)])
                label += " (avg %s, p99 %s)" % (fmt(avg), fmt(p99))
            else:
                tc, met = "—", "—"
            L.append("| %s%s | %s | %s | %s | %s | %s |" % (
                label, failed(data, tag, rounds), med_range(data, name),
                xcell(lc, lm), xcell(uc, um), tc, met))
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
