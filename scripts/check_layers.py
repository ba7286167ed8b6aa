#!/usr/bin/env python3
"""The tracer's layering, checked from its sources: no include or call cycle among the files of tracer/core and
tracer/front, no core file that includes a front header or calls a front function, and no file outside tracer/
that includes a tracer header (docs/tracer-layout.md says why). Exit status 0 when all hold, 1 with one line per
fault when not.

    scripts/check_layers.py [REPO_ROOT]      (default: the directory above this script)
    scripts/check_layers.py --self-test      (a made-up tree with each fault: each must be found)

The graph, read without a compiler (comments, strings and character constants are blanked first):
- an include edge from a file to the tracer header it includes ("x.h" looked up in the file's own folder, then in
  tracer/core, tracer/front, common/, include/);
- a call edge from a .c file to the .c file that defines a function or variable with external linkage the file
  names; the bodies of a header's inline functions and macros count as written where they are used (that is
  where they are compiled), so a header has include edges only. A declaration is no call.
Files that include a private header <unit>_impl.h (tr_impl.h aside) are one unit, whose files may call each other
(the writer's, split by concern). Headers of the tracer are the files under tracer/ ending in .h; a front file is
one under tracer/front/.
"""

import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SEARCH = ["tracer/core", "tracer/front", "common", "include"]
IDENT = re.compile(r"[A-Za-z_]\w*")
KEYWORDS = set("""auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned void volatile
while _Bool _Atomic _Thread_local _Alignas _Noreturn __attribute__ __thread""".split())


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def split_source(text):
    """(includes, defines, code): the quoted includes, {macro: body}, and the text without comments, strings,
    character constants and preprocessor lines (a line's continuation joined first)."""
    text = text.replace("\\\n", " ")
    out, i, n = [], 0, len(text)
    while i < n:  # comments and literals to blanks, keeping the lines
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * max(0, j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    blank = "".join(out)
    includes, defines, code = [], {}, []
    raw_lines, lines = text.split("\n"), blank.split("\n")
    for raw, line in zip(raw_lines, lines):
        s = line.strip()
        if s.startswith("#"):
            m = re.match(r'\s*#\s*include\s*"([^"]+)"', raw)
            if m:
                includes.append(m.group(1))
            m = re.match(r"#\s*define\s+(\w+)(.*)", s)
            if m:
                defines[m.group(1)] = m.group(2)
            code.append("")
        else:
            code.append(line)
    return includes, defines, "\n".join(code)


def top_level(code):
    """Yields (tokens, body) for each top-level statement: body is the token list of a function's body, or
    None for a declaration; an initializer's braces stay in tokens."""
    toks = re.findall(r"[A-Za-z_]\w*|\d\w*|\S", code)
    stmt, i, n = [], 0, len(toks)
    while i < n:
        t = toks[i]
        if t == "{":
            depth, j = 1, i + 1
            while j < n and depth:
                depth += {"{": 1, "}": -1}.get(toks[j], 0)
                j += 1
            inner = toks[i + 1:j - 1]
            if stmt and stmt[-1] == ")" and "=" not in stmt:  # a function's body
                yield stmt, inner
                stmt = []
            else:
                stmt += ["{"] + inner + ["}"]
            i = j
        elif t == ";":
            yield stmt, None
            stmt, i = [], i + 1
        else:
            stmt.append(t)
            i += 1


def function_name(stmt):
    """The name before the last top-level parenthesis group of a definition's head."""
    depth, last_open = 0, None
    for k, t in enumerate(stmt):
        if t == "(":
            if depth == 0:
                last_open = k
            depth += 1
        elif t == ")":
            depth -= 1
    if last_open and IDENT.fullmatch(stmt[last_open - 1]) and stmt[last_open - 1] not in KEYWORDS:
        return stmt[last_open - 1]
    return None


def variable_names(stmt):
    """The names a file-scope definition without a body defines (none for a prototype or typedef)."""
    if not stmt or "extern" in stmt or "typedef" in stmt:
        return []
    m = re.search(r"\( \* (\w+) \)", " ".join(stmt))  # a function pointer
    if m:
        return [m.group(1)]
    names, depth, last, prev = [], 0, None, None
    for t in stmt + [","]:
        tag, prev = prev in ("struct", "union", "enum"), t
        if tag:
            continue  # a tag names a type, not an object
        if t in "([{":
            if t == "(" and depth == 0:
                return []  # a prototype
            depth += 1
        elif t in ")]}":
            depth -= 1
        elif depth == 0 and t in ",=":
            if last:
                names.append(last)
            last = None if t == "," else False
        elif depth == 0 and last is not False and IDENT.fullmatch(t) and t not in KEYWORDS:
            last = t
    return [x for x in names if x]


class Source:
    def __init__(self, rel):
        self.rel = rel
        self.includes, self.defines, code = split_source(read(os.path.join(ROOT, rel)))
        self.defs = set()  # external functions and variables defined here (.c)
        self.units = {}  # header: inline function or macro name -> identifiers its body names
        self.idents = set(IDENT.findall(code))
        for stmt, body in top_level(code):
            static = "static" in stmt
            if body is not None:
                name = function_name(stmt)
                if name and static and rel.endswith(".h"):
                    self.units[name] = set(t for t in body if IDENT.fullmatch(t))
                elif name and not static:
                    self.defs.add(name)
            elif not static:
                self.defs.update(variable_names(stmt))
        for name, body in self.defines.items():
            self.units[name] = set(IDENT.findall(body))


def resolve(src_rel, inc):
    for d in [os.path.dirname(src_rel)] + SEARCH:
        p = os.path.normpath(os.path.join(d, inc))
        if os.path.isfile(os.path.join(ROOT, p)):
            return p
    return None


def find_cycles(graph):
    """The strongly connected components with more than one file (Tarjan's algorithm, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = counter[0]
                counter[0] += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(graph.get(w, ())))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def check():
    """The faults of the tree at ROOT, one line each."""
    faults = []
    tracer = []
    for d in ("tracer/core", "tracer/front"):
        for f in sorted(os.listdir(os.path.join(ROOT, d))):
            if f.endswith((".c", ".h")):
                tracer.append(d + "/" + f)
    srcs = {rel: Source(rel) for rel in tracer}
    definer = {}
    for rel, s in srcs.items():
        for name in s.defs:
            if rel.endswith(".c"):
                definer.setdefault(name, rel)
    units = {}
    for rel, s in srcs.items():
        if rel.endswith(".h"):
            for name, body in s.units.items():
                units.setdefault(name, body)

    graph = {rel: set() for rel in srcs}
    why = {}
    for rel, s in srcs.items():
        for inc in s.includes:
            p = resolve(rel, inc)
            if p in srcs:
                graph[rel].add(p)
                why[(rel, p)] = "includes"
                if rel.startswith("tracer/core/") and p.startswith("tracer/front/"):
                    faults.append("%s: a core file includes the front header %s" % (rel, p))
        if not rel.endswith(".c"):
            continue
        names, seen, todo = set(), set(), list(s.idents)
        while todo:  # the identifiers it names, through the inline functions and macros it uses
            t = todo.pop()
            if t in seen:
                continue
            seen.add(t)
            names.add(t)
            if t in units and t not in s.defs:
                todo.extend(units[t])
        for name in sorted(names):
            d = definer.get(name)
            if d and d != rel:
                graph[rel].add(d)
                why.setdefault((rel, d), "names " + name)
                if rel.startswith("tracer/core/") and d.startswith("tracer/front/"):
                    faults.append("%s: a core file names %s, defined by the front %s" % (rel, name, d))
    # A private header <unit>_impl.h (tr_impl.h aside, the whole tracer's) makes the files that include it one
    # unit, split by concern: the writer's files share its state (writer_impl.h) and call each other freely.
    unit = {}
    for rel, s in srcs.items():
        for inc in s.includes:
            p = resolve(rel, inc)
            if p in srcs and p.endswith("_impl.h") and os.path.basename(p) != "tr_impl.h":
                unit[rel] = unit[p] = p[:-len("_impl.h")] + "*"
    merged = {}
    for a, outs in graph.items():
        for b in outs:
            ua, ub = unit.get(a, a), unit.get(b, b)
            merged.setdefault(ua, set())
            merged.setdefault(ub, set())
            if ua != ub:
                merged[ua].add(ub)
                why.setdefault((ua, ub), "%s %s" % (os.path.basename(a), why[(a, b)]))
    graph = merged
    for comp in find_cycles(graph):
        edges = ["%s -> %s (%s)" % (a, b, why[(a, b)]) for a in comp for b in sorted(graph[a]) if b in comp]
        faults.append("a cycle among %d files: %s" % (len(comp), "; ".join(edges)))

    headers = {os.path.basename(p) for p in tracer if p.endswith(".h")}
    for d in ("adapters", "common", "runtime", "viewer", "tests", "examples", "bench", "include", "python"):
        top = os.path.join(ROOT, d)
        for dirpath, dirs, files in os.walk(top):
            dirs[:] = [x for x in dirs if not x.startswith(".") and x != "build"]
            for f in files:
                if not f.endswith((".c", ".h", ".cc", ".cpp", ".cu")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
                for inc in split_source(read(os.path.join(ROOT, rel)))[0]:
                    local = [x for x in [os.path.dirname(rel), "common", "include"]
                             if os.path.isfile(os.path.join(ROOT, x, inc))]
                    if "tracer/" in inc or (not local and os.path.basename(inc) in headers):
                        faults.append("%s: includes the tracer header %s" % (rel, inc))
    if not faults:
        print("check_layers: %d tracer files and units, %d edges, no cycle, core names no front, nothing outside tracer/ "
              "includes a tracer header" % (len(graph), sum(len(v) for v in graph.values())))
    return faults


SELF_TEST = {  # a tree with one of each fault, and a writer unit whose files call each other (no fault)
    "tracer/core/tr_impl.h": "int core_f(void);\nstatic inline int core_g(void) { return front_f(); }\n",
    "tracer/core/init.c": '#include "tr_impl.h"\nint core_f(void) { return core_g(); }\n',
    "tracer/core/ring.c": '#include "tr_impl.h"\n#include "front.h"\nint ring_x = 1;\n',
    "tracer/core/writer_impl.h": "int w_a(void);\nint w_b(void);\n",
    "tracer/core/writer.c": '#include "writer_impl.h"\nint w_a(void) { return w_b(); }\n',
    "tracer/core/writer_sql.c": '#include "writer_impl.h"\nint w_b(void) { return w_a(); }\n',
    "tracer/front/front.h": '#include "tr_impl.h"\nint front_f(void);\n',
    "tracer/front/cuda.c": '#include "front.h"\nint front_f(void) { return core_f(); }\n',
    "tests/check_x.c": '#include "front.h"\nint t;\n',
    "viewer/v.c": '#include "../tracer/core/tr_impl.h"\n',
}
SELF_WANT = [
    "tracer/core/init.c: a core file names front_f, defined by the front tracer/front/cuda.c",
    "tracer/core/ring.c: a core file includes the front header tracer/front/front.h",
    "a cycle among 2 files: tracer/core/init.c -> tracer/front/cuda.c",
    "tests/check_x.c: includes the tracer header front.h",
    "viewer/v.c: includes the tracer header ../tracer/core/tr_impl.h",
]


def self_test():
    import tempfile

    global ROOT
    with tempfile.TemporaryDirectory() as root:
        for rel, text in SELF_TEST.items():
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        ROOT = root
        faults = check()
    missed = [w for w in SELF_WANT if not any(f.startswith(w) for f in faults)]
    extra = [f for f in faults if not any(f.startswith(w) for w in SELF_WANT)]
    for m in missed:
        print("check_layers --self-test: not found: " + m)
    for e in extra:
        print("check_layers --self-test: found, not wanted: " + e)
    if not missed and not extra:
        print("check_layers --self-test: the %d faults found, nothing else" % len(SELF_WANT))
    return 1 if missed or extra else 0


def main(argv):
    global ROOT
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) > 1:
        ROOT = os.path.abspath(argv[1])
    faults = check()
    for f in faults:
        print("check_layers: " + f)
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
