#!/usr/bin/env python3
"""Fails on a cycle among the C files of a directory: file A depends on file B when A calls a function that B
defines (not static), or includes the header named after B (b.h for b.c). Headers shared by many
files (vw.h, diag.h) count through the functions they declare: what a file calls is what it depends on.

usage: check_include_graph.py DIR [DIR...]
Prints each cycle (its files and, per edge, a function or header that makes it) and exits 1 when there is one;
prints the files and edges counted, and exits 0, when there is none. Subdirectories are part of DIR's graph.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_layers import find_cycles  # noqa: E402  (the one cycle finder of the scripts)

DEF = re.compile(r"^(?!static\b|typedef\b|extern\b|struct\s+\w+\s*\{|enum\b|union\b|#|\s|}|/)"
                 r"[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(", re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')


ATTRIBUTE = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*")


def strip(text):
    return ATTRIBUTE.sub("", STRING.sub('""', COMMENT.sub(" ", text)))


def definitions(text):
    """Names of the functions text defines with external linkage: a declarator at column 0 whose parameter list
    is followed by a body, not by a semicolon."""
    names = set()
    for m in DEF.finditer(text):
        rest = text[m.end():m.end() + 2000]
        end = re.search(r"[;{]", rest)
        if end and end.group(0) == "{" and m.group(1) not in ("if", "while", "for", "switch", "return", "sizeof"):
            names.add(m.group(1))
    return names


def graph(root):
    files = []
    for d, _, names in os.walk(root):
        files += [os.path.join(d, n) for n in names if n.endswith(".c")]
    files.sort()
    text = {f: strip(open(f, errors="replace").read()) for f in files}
    raw = {f: open(f, errors="replace").read() for f in files}
    owner = {}
    for f in files:
        for name in definitions(text[f]):
            owner.setdefault(name, f)
    stem = {}
    for f in files:
        base = os.path.splitext(os.path.basename(f))[0]
        stem.setdefault(base, f)
    edges = {f: {} for f in files}
    for f in files:
        for name in set(CALL.findall(text[f])):
            g = owner.get(name)
            if g and g != f:
                edges[f].setdefault(g, name + "()")
        for inc in INCLUDE.findall(raw[f]):
            base = os.path.splitext(os.path.basename(inc))[0]
            g = stem.get(base)
            if g and g != f:
                edges[f].setdefault(g, '#include "%s"' % inc)
    return files, edges


def cycles(files, edges):
    """Strongly connected components of more than one file: check_layers.py's Tarjan, over these edges."""
    return find_cycles({f: edges[f] for f in files})


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().split("\n\n")[1])
    bad = 0
    for root in sys.argv[1:]:
        files, edges = graph(root)
        if not files:
            print("%s: no C files" % root)
            bad = 1
            continue
        found = cycles(files, edges)
        rel = lambda f: os.path.relpath(f, root)
        for comp in found:
            bad = 1
            print("%s: a cycle among %d files: %s" % (root, len(comp), ", ".join(rel(f) for f in comp)))
            for f in comp:
                for g, why in sorted(edges[f].items()):
                    if g in comp:
                        print("  %s -> %s (%s)" % (rel(f), rel(g), why))
        if not found:
            print("%s: no cycle (%d files, %d edges)" % (root, len(files), sum(len(e) for e in edges.values())))
    sys.exit(bad)


main()
