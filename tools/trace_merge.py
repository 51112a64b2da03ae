#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Lays the progress traces of a same-host pair side by side.

A build configured with -DUROCE_TRACE=ON and run with UROCE_TRACE=PREFIX
writes PREFIX.<pid> per process (src/util/trace.h). This matches every
datagram one process sent with its arrival in the other (by destination
QPN, opcode and PSN), prints how long datagrams sat between the two, what
the receiver's progress thread was doing when each late one was sent and
what ended its wait, and how long the receiver's thread took to wake after
each doorbell; --show N prints the events of both sides around the N
latest datagrams.

  tools/trace_merge.py PREFIX [--late-us 100] [--show N]
"""
import argparse
import bisect
import collections
import glob

THREAD_EVENTS = ('wait', 'woke', 'arm_hit', 'burst', 'rx', 'deadline', 'tx')


def load(prefix):
    ev = {}
    for f in sorted(glob.glob(prefix + '.*')):
        pid = f.rsplit('.', 1)[1]
        recs = []
        with open(f) as fh:
            for line in fh:
                t, tid, e, a, b = line.split()
                recs.append((int(t), int(tid), e, int(a), int(b)))
        recs.sort()
        ev[pid] = recs
    return ev


def pct(v, p):
    return v[min(len(v) - 1, int(len(v) * p))] if v else float('nan')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('prefix')
    ap.add_argument('--late-us', type=float, default=100.0)
    ap.add_argument('--show', type=int, default=0)
    args = ap.parse_args()
    ev = load(args.prefix)
    if len(ev) != 2:
        raise SystemExit('want the traces of exactly two processes, got %d'
                         % len(ev))
    pids = list(ev)
    other = {pids[0]: pids[1], pids[1]: pids[0]}
    # the progress thread is the one that waits
    prog = {p: {r[1] for r in ev[p] if r[2] == 'wait'} for p in pids}
    thread_ev = {p: [r for r in ev[p] if r[1] in prog[p] and
                     r[2] in THREAD_EVENTS] for p in pids}
    rx = {p: collections.defaultdict(list) for p in pids}
    for p in pids:
        for (t, tid, e, a, b) in ev[p]:
            if e == 'rx':
                rx[p][(a, b)].append((t, tid))

    sat = []	# (delay ns, tx time, sender, receiver, a, b, rx tid)
    for p in pids:
        q = other[p]
        for (t, tid, e, a, b) in ev[p]:
            if e != 'tx':
                continue
            lst = rx[q].get((a, b), [])
            i = bisect.bisect_left(lst, (t, 0))
            if i < len(lst):
                sat.append((lst[i][0] - t, t, p, q, a, b, lst[i][1]))
    sat.sort()
    delays = [s[0] / 1e3 for s in sat]
    print('datagrams %d: in the ring/socket median %.1f us, p90 %.1f, '
          'p99 %.1f' % (len(sat), pct(delays, .5), pct(delays, .9),
                        pct(delays, .99)))
    late = [s for s in sat if s[0] > args.late_us * 1e3]
    print('late (> %.0f us): %d' % (args.late_us, len(late)))
    why = collections.Counter()
    for (dl, t, p, q, a, b, rtid) in late:
        lst = thread_ev[q]
        i = bisect.bisect_left(lst, (t, 0))
        before = lst[i - 1][2] if i else '-'
        if before == 'wait' and lst[i - 1][3]:
            before = 'wait(deaf)'
        after = lst[i][2] if i < len(lst) else '-'
        if after == 'woke':
            after = 'woke(%s)' % '+'.join(
                n for bit, n in ((1, 'wake'), (2, 'timer'), (4, 'fd'))
                if lst[i][3] & bit)
        elif after == 'rx' and before == 'wait':
            after = 'wait timed out'
        who = 'progress thread' if rtid in prog[q] else 'poll_cq'
        why[(before, after, who)] += 1
    print('receiver thread at send / what came next / who received:')
    for k, v in why.most_common(12):
        print('  %6d  %s / %s / %s' % (v, k[0], k[1], k[2]))
    for p in pids:
        q = other[p]
        lst = [r for r in thread_ev[q] if r[2] in ('woke', 'rx', 'arm_hit')]
        lat = []
        for (t, tid, e, a, b) in ev[p]:
            if e != 'doorbell':
                continue
            i = bisect.bisect_left(lst, (t, 0))
            if i < len(lst):
                lat.append((lst[i][0] - t) / 1e3)
        lat.sort()
        if lat:
            print('doorbells %s -> %s: %d, to the thread awake median %.1f '
                  'us, p90 %.1f, p99 %.1f' % (p, q, len(lat), pct(lat, .5),
                                              pct(lat, .9), pct(lat, .99)))
    for (dl, t, p, q, a, b, rtid) in (late[-args.show:] if args.show else []):
        print('--- %.1f us: %s -> %s opcode %d QPN %d PSN %d, received by '
              'tid %d' % (dl / 1e3, p, q, a & 255, a >> 8, b, rtid))
        for pid in (p, q):
            for r in ev[pid]:
                if t - 20000 <= r[0] <= t + dl + 5000:
                    print('  %s %10.1f %7d %-12s %d %d' % (
                        pid, (r[0] - t) / 1e3, r[1], r[2], r[3], r[4]))


if __name__ == '__main__':
    main()
