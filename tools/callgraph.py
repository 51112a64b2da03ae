#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""File-level call graph of src/ from GCC's -fcallgraph-info output.

GCC writes one .ci file per translation unit (VCG text: nodes are the
functions the unit defines or calls, edges are direct calls). This script
resolves every call to the .c file that defines the callee, folds the graph
to files, and reports:
  - cycles between files (strongly connected components of more than one
    file): issue 9 asks for none;
  - .c files longer than a line limit;
  - with --edges, every file-to-file edge with the functions behind it.
Calls through function pointers (ops tables, state handlers) are not in
GCC's graph; they are the intended way for a lower layer to call up.

Usage: tools/callgraph.sh (builds the libraries with -fcallgraph-info,
       then runs this on the build's src/ directory, so that test doubles
       such as tests/unit/engine/fake_env.c do not stand in for src/)
       tools/callgraph.py [--compdb JSON] [--skip-target T]... CI_DIR
                          SRC_DIR [--edges] [--max-lines N]
Exit status: 0 when there is no cycle (but those --allow lists) and no file
over the limit, 1 when there is, 2 when the graph is missing (no .ci files,
or not all of them).
"""
import argparse
import json
import os
import re
import sys
from collections import defaultdict

NODE = re.compile(r'node: \{ title: "([^"]+)" label: "([^"\\]+)\\n([^":]+):\d+:\d+"'
                  r'( shape : ellipse)?')
EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"'
                  r'(?: label: "([^":]+):\d+:\d+")?')


def ci_files(ci_dir, compdb, skip_targets=()):
    """The .ci files to read: every one under ci_dir, or with a compilation
    database only those of its objects under ci_dir (GCC writes foo.c.ci
    next to foo.c.o); none of the CMake targets in skip_targets."""
    ci_dir = os.path.realpath(ci_dir)
    skip = tuple('%sCMakeFiles%s%s.dir%s' % (os.sep, os.sep, t, os.sep)
                 for t in skip_targets)
    if compdb:
        with open(compdb, encoding='utf-8') as f:
            entries = json.load(f)
        for e in entries:
            out = e.get('output')
            if not out:
                m = re.search(r'-o (\S+)', e.get('command', ''))
                out = m.group(1) if m else None
            if not out:
                continue
            out = os.path.realpath(os.path.join(e['directory'], out))
            if out.startswith(ci_dir + os.sep) and out.endswith('.o') \
                    and not any(k in out for k in skip):
                yield out[:-2] + '.ci'
        return
    for root, _, files in os.walk(ci_dir):
        for name in files:
            path = os.path.join(root, name)
            if name.endswith('.ci') and not any(k in path for k in skip):
                yield path


def parse(ci_dir, compdb=None, skip_targets=()):
    """Returns (definitions, declared, calls, missing): where each function
    title is defined, the function name of each callee without a body in
    its unit, (caller title, callee title) pairs over every .ci file, and
    the .ci files the compilation database names but that do not exist.

    GCC labels a node with the function's first declaration, which for an
    exported ibv_*/rdma_* function is the installed rdma-core header; such
    a definition belongs to the .c file its calls are made from."""
    defined = {}        # title -> defining file
    declared = {}       # title -> function name (callee without a body here)
    calls = []
    missing = []
    sites = defaultdict(set)    # title -> files its calls are made from
    for ci in ci_files(ci_dir, compdb, skip_targets):
        if not os.path.exists(ci):
            missing.append(ci)
            continue
        with open(ci, encoding='utf-8') as f:
            for line in f:
                m = NODE.match(line)
                if m:
                    title, func, path, ext = m.groups()
                    if ext:
                        declared[title] = func
                    else:
                        defined[title] = os.path.realpath(path)
                    continue
                m = EDGE.match(line)
                if m:
                    caller, callee, site = m.groups()
                    calls.append((caller, callee))
                    if site and site.endswith('.c'):
                        sites[caller].add(os.path.realpath(site))
    for title, path in defined.items():
        if not path.endswith('.c') and len(sites[title]) == 1:
            defined[title] = next(iter(sites[title]))
    return defined, declared, calls, missing


def file_graph(defined, declared, calls, src):
    src = os.path.realpath(src) + os.sep
    edges = defaultdict(set)    # caller file -> {callee file}
    why = defaultdict(set)      # (caller file, callee file) -> {"f -> g"}
    for caller, callee in calls:
        a = defined.get(caller)
        b = defined.get(callee)
        if b is None and callee in declared:
            b = defined.get(declared[callee])
        if not a or not b or a == b:
            continue
        # a static inline in a header is part of the file that uses it
        if not a.startswith(src) or not b.startswith(src) or \
                not a.endswith('.c') or not b.endswith('.c'):
            continue
        ra, rb = a[len(src):], b[len(src):]
        edges[ra].add(rb)
        why[(ra, rb)].add('%s -> %s' % (caller.split(':')[-1],
                                         callee.split(':')[-1]))
    return edges, why


def cycles(edges):
    """Tarjan's strongly connected components with more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    nodes = set(edges) | {v for vs in edges.values() for v in vs}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def long_files(src, limit):
    res = []
    for root, _, files in os.walk(src):
        for name in files:
            if name.endswith('.c'):
                p = os.path.join(root, name)
                with open(p, encoding='utf-8') as f:
                    n = sum(1 for _ in f)
                if n > limit:
                    res.append((os.path.relpath(p, src), n))
    return sorted(res)


def read_allow(path):
    """Allowed cycles, one per line: "cycle: a.c b.c ..." (# comments)."""
    allowed = []
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line.startswith('cycle:'):
                allowed.append(frozenset(line[len('cycle:'):].split()))
    return allowed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('ci_dir')
    ap.add_argument('src_dir')
    ap.add_argument('--edges', action='store_true')
    ap.add_argument('--max-lines', type=int, default=800)
    ap.add_argument('--compdb', help='compile_commands.json: read only the '
                    '.ci files of its objects')
    ap.add_argument('--allow', help='file of cycles to report but not fail '
                    'on (a cycle whose files all appear in one of its lines)')
    ap.add_argument('--skip-target', action='append', default=[],
                    help='a CMake target left out: one that defines libc '
                    'names (the interposer\'s open, rename, ...), which '
                    'other files would seem to call')
    args = ap.parse_args()

    defined, declared, calls, missing = parse(args.ci_dir, args.compdb,
                                              args.skip_target)
    if missing:
        print('callgraph: %d objects without their .ci file (built without '
              '-fcallgraph-info?), e.g. %s' % (len(missing), missing[0]))
        return 2
    if not defined:
        print('callgraph: no .ci files under %s' % args.ci_dir)
        return 2
    edges, why = file_graph(defined, declared, calls, args.src_dir)
    if args.edges:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print('%s -> %s: %s' % (a, b, ', '.join(sorted(why[(a, b)]))))
    allowed = read_allow(args.allow) if args.allow else []
    used = set()
    bad = 0
    for comp in cycles(edges):
        ok = [a for a in allowed if set(comp) <= a]
        used.update(ok)
        if not ok:
            bad = 1
        print('%scycle: %s' % ('allowed ' if ok else '', ' '.join(comp)))
        for a in comp:
            for b in sorted(edges[a] & set(comp)):
                print('  %s -> %s: %s' % (a, b,
                                         ', '.join(sorted(why[(a, b)]))))
    for a in allowed:
        if a not in used:
            print('stale allow entry (no such cycle now; delete it from '
                  '%s): %s' % (args.allow, ' '.join(sorted(a))))
    for path, n in long_files(args.src_dir, args.max_lines):
        bad = 1
        print('too long: %s (%d lines > %d)' % (path, n, args.max_lines))
    nfiles = len(set(edges) | {v for vs in edges.values() for v in vs})
    print('callgraph: %d files with calls, %d file edges, %s' %
          (nfiles, sum(len(v) for v in edges.values()),
           'problems above' if bad else
           'no cycle but allowed ones' if used else 'no cycle'))
    return bad


if __name__ == '__main__':
    sys.exit(main())
