#!/usr/bin/env python3
"""Scores devtrace's diagnosis on a corpus of public PyTorch training programs it has never seen.

For each mutation of scripts/corpus/mutations.json: copy the program (fetched beforehand into --src, see
README.md) into a work dir, apply its setup and the one-line mutation, run it under `devtrace run` on one
simulated GPU, check that it now fails with a device mismatch (else the mutation is invalid: reported, not
scored), then read `devtrace report --json` and `devtrace fix --verify` and score ORIGIN, FIX LINE and RUNS.
It never commits or keeps third-party code: everything it builds lives under --work.

usage: score.py --devtrace PATH/devtrace --src /work/corpus/src [--only NAME[,NAME]] [--work DIR] [-j N]
                [--python /usr/bin/python3] [--results FILE] [--keep]
"""

import argparse
import ast
import concurrent.futures
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def program_python(named):
    """The interpreter a program's spec names: "torch2" is the checkout's PyTorch 2 venv (scripts/torch2-venv.sh
    makes it: .venv-torch2/, or DEVTRACE_TORCH2_VENV), anything else a path as it is; None when none is named."""
    if named != "torch2":
        return named
    venv = os.environ.get("DEVTRACE_TORCH2_VENV") or os.path.join(HERE, "..", "..", ".venv-torch2")
    return os.path.normpath(os.path.join(venv, "bin", "python"))
PYTHON = "/usr/bin/python3"  # the interpreter that imports torch (--python)
TIMEOUT = 120  # seconds for one run of a program (traced) or of `devtrace fix --verify`


class SpecError(Exception):
    """The spec does not fit the fetched source (a line not found): a fault of the spec or of the fetch."""


# ---------------------------------------------------------------------------- edits


def find_line(lines, text, at=1, what="line"):
    """0-based index of the AT-th line whose stripped text is TEXT."""
    hits = [i for i, l in enumerate(lines) if l.strip() == text.strip()]
    if len(hits) < at:
        raise SpecError("%s not found%s: %r" % (what, "" if at == 1 else " (match %d)" % at, text))
    return hits[at - 1]


def replace_line(path, text, new, at=1):
    """Replace the AT-th line of PATH whose stripped text is TEXT by NEW (each of its lines at the same indentation)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = find_line(lines, text, at, "line to edit in %s" % os.path.basename(path))
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines[i : i + 1] = [indent + n if n else n for n in new.split("\n")]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def write_text(dirpath, spec):
    """Small deterministic text files (a vocabulary of VOCAB words, N words each, 16 a line) for a text corpus."""
    os.makedirs(os.path.join(dirpath, spec["dir"]), exist_ok=True)
    for name, n in spec["files"].items():
        words = ["w%d" % ((k * 7 + k // 13) % spec["vocab"]) for k in range(n)]
        with open(os.path.join(dirpath, spec["dir"], name), "w") as f:
            f.write("\n".join(" ".join(words[k : k + 16]) for k in range(0, n, 16)) + "\n")


def build(src, prog, work, mutation=None):
    """Lay out PROG (setup applied, MUTATION too when given) in WORK; returns WORK."""
    if os.path.exists(work):
        shutil.rmtree(work)
    d = os.path.join(src, prog["dir"])
    for dest in prog["files"]:
        if not os.path.isfile(os.path.join(d, dest)):
            raise SpecError("%s is missing: fetch the corpus first (scripts/corpus/README.md)" % os.path.join(d, dest))
        os.makedirs(os.path.dirname(os.path.join(work, dest)), exist_ok=True)
        shutil.copyfile(os.path.join(d, dest), os.path.join(work, dest))
    for e in prog.get("setup", []):
        replace_line(os.path.join(work, e["file"]), e["line"], e["new"], e.get("at", 1))
    for sub in prog.get("dirs", []):
        os.makedirs(os.path.join(work, sub), exist_ok=True)
    if "text" in prog:
        write_text(work, prog["text"])
    for code in prog.get("prepare", []):  # data made by Python (synthetic files), before any mutation
        p = subprocess.run([PYTHON, "-c", code], cwd=work, capture_output=True, text=True)
        if p.returncode != 0:
            raise SpecError("prepare step failed: %s" % p.stderr.strip()[-300:])
    if mutation:
        replace_line(os.path.join(work, mutation["file"]), mutation["line"], mutation["new"], mutation.get("at", 1))
    return work


# ---------------------------------------------------------------------------- statements


def stmt_span(path, line):
    """(first, last, indent) of the statement that holds LINE (1-based): a compound statement's header only."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    best = None
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.stmt):
            continue
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        last = node.end_lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and body[0].lineno > node.lineno:
            last = body[0].lineno - 1  # a header: up to its body
            while last > first and not text.split("\n")[last - 1].strip():
                last -= 1
        if first <= line <= last and (best is None or last - first <= best[1] - best[0]):
            best = (first, last)
    if best is None:
        return None
    first_text = text.split("\n")[best[0] - 1]
    return best[0], best[1], first_text[: len(first_text) - len(first_text.lstrip())]


def expected_spans(work, mutation, items):
    """The statements (file, first, last, indent) the spec accepts, resolved in the mutated program."""
    out = []
    for it in items:
        it = {"text": it} if isinstance(it, str) else it
        f = it.get("file", mutation["file"])
        with open(os.path.join(work, f), encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        n = find_line(lines, it["text"], it.get("at", 1), "expected line in %s" % f) + 1
        span = stmt_span(os.path.join(work, f), n)
        if span is None:
            raise SpecError("expected line %s:%d is in no statement" % (f, n))
        out.append((f, ) + span)
    return out


def site_file(work, site_path):
    """The program file (relative to WORK) that a trace's site names, or None for a file outside it."""
    if not site_path:
        return None
    p = site_path if os.path.isabs(site_path) else os.path.join(work, site_path)
    p = os.path.realpath(p)
    w = os.path.realpath(work) + os.sep
    return p[len(w):] if p.startswith(w) else None


def in_spans(spans, f, line):
    return any(s[0] == f and s[1] <= line <= s[2] for s in spans)


def site_ok(work, spans, f, line, placement):
    """A fix without a patch, by its site: in an expected statement S, or code to go "after" the statement
    right before S or "before" the one right after S (the block's indentation is the advice's to choose)."""
    if in_spans(spans, f, line):
        return True
    if placement not in ("after", "before"):
        return False
    at = stmt_span(os.path.join(work, f), line)
    if at is None:
        return False
    with open(os.path.join(work, f), encoding="utf-8") as fh:
        lines = fh.read().split("\n")

    def adjacent(first, last):  # nothing but blank and comment lines strictly between lines first and last
        return first < last and all(not l.strip() or l.strip().startswith("#") for l in lines[first:last - 1])

    return any(s[0] == f and (adjacent(at[1], s[1]) if placement == "after" else adjacent(s[2], at[0]))
               for s in spans)


def diff_hunks(diff):
    """The unified diff as (file, [('-', old_line, text) | ('+', old_pos, text)]): old_pos is the old line
    the inserted text goes before."""
    out, cur, old = [], None, 0
    for l in diff.split("\n"):
        if l.startswith("--- "):
            continue
        if l.startswith("+++ "):
            cur = (l[4:].strip(), [])
            out.append(cur)
        elif l.startswith("@@"):
            m = re.match(r"@@ -(\d+)", l)
            old = int(m.group(1)) if m else 0
        elif cur is None:
            continue
        elif l.startswith("-"):
            cur[1].append(("-", old, l[1:]))
            old += 1
        elif l.startswith("+"):
            cur[1].append(("+", old, l[1:]))
        elif l.startswith(" "):
            old += 1
    return out


def diff_ok(work, diff, spans):
    """The patch edits one of the expected statements, or inserts code in its block right before or after it.

    Precisely: every removed line lies in one expected statement S, and every inserted line either replaces
    lines of S or goes right before S's first line or right after its last, at S's indentation. A patch
    that touches any other line, or none, is not at the fix line."""
    hunks = diff_hunks(diff or "")
    if not hunks or not any(ch for _, ch in hunks):
        return False
    for s in spans:
        ok = True
        for fname, changes in hunks:
            if site_file(work, fname) != s[0]:
                ok = False
                break
            removed = {ln for k, ln, _ in changes if k == "-"}
            for k, ln, text in changes:
                if k == "-":
                    ok &= s[1] <= ln <= s[2]
                elif removed and s[1] <= ln <= s[2] + 1 and any(s[1] <= r <= s[2] for r in removed):
                    pass  # part of a replacement of S's lines
                else:
                    indent = text[: len(text) - len(text.lstrip())]
                    ok &= (ln == s[1] or ln == s[2] + 1) and indent == s[3]
        if ok:
            return True
    return False


# ---------------------------------------------------------------------------- runs


def run(cmd, cwd, env=None, timeout=TIMEOUT):
    """(status, stdout, stderr) of CMD; past TIMEOUT its whole process group is killed and the status is 124."""
    e = dict(os.environ)
    e.pop("DEVTRACE_SIM_CUDA", None)
    e.update(env or {})
    p = subprocess.Popen(cmd, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        so, se = p.communicate(timeout=timeout)
        return p.returncode, so, se
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # the traced program too, not only devtrace
        except ProcessLookupError:
            pass
        p.communicate()
        return 124, "", "timed out after %d s" % timeout


STALLS = []  # (what, step): runs that did not end in time, killed and run once more (list.append is atomic)


def run_again_if_stalled(what, step, fn):
    """fn() -> (status, ...); a status of 124 (a stall) is recorded and fn is run once more."""
    r = fn()
    if r[0] == 124:
        STALLS.append((what, step))
        r = fn()
    return r


def traced(args, prog, work, what=""):
    cmd = [args.devtrace, "run", "-o", "m.db", "--overwrite", "--", args.python, prog["main"]] + prog.get("args", [])
    return run_again_if_stalled(what or work, "traced run",
                                lambda: run(cmd, work, {"DEVTRACE_SIM_CUDA": "1", "DEVTRACE_QUIET": "1"}))


def baseline(args, spec, name):
    """The program with its setup only: it must run to the end on one simulated GPU, traced."""
    prog = spec["programs"][name]
    work = os.path.join(args.work, "base-" + name)
    try:
        build(args.src, prog, work)
    except SpecError as e:
        return name, False, str(e)
    t0 = time.monotonic()
    rc, so, se = traced(args, prog, work, "setup of " + name)
    took = "%.1f s traced%s" % (time.monotonic() - t0,
                                " (a stall and a second run)" if ("setup of " + name, "traced run") in STALLS else "")
    return name, rc == 0, took if rc == 0 else "exit %d: %s" % (rc, se.strip()[-600:])


def patched_runs(args, prog, work, diff):
    """Whether the program runs to the end, traced, with the patch applied in place to a copy of the whole
    program (every file a real copy): tells a patch that is wrong from one that `fix --verify` did not run."""
    copy = work + ".patched"
    if os.path.exists(copy):
        shutil.rmtree(copy)
    shutil.copytree(work, copy, ignore=shutil.ignore_patterns("__pycache__", "*.db"))
    try:
        for fname, _ in diff_hunks(diff):
            rel = site_file(work, fname)
            if rel is None:
                return False
            p = subprocess.run(["patch", "-s", "-N", os.path.join(copy, rel)], input=diff, text=True,
                               capture_output=True, cwd=copy)
            if p.returncode != 0:
                return False
        return traced(args, prog, copy, os.path.basename(work) + " (patched in place)")[0] == 0
    finally:
        if not args.keep:
            shutil.rmtree(copy, ignore_errors=True)


def score(args, spec, m):
    """One mutation: its row of the table (a dict)."""
    prog = spec["programs"][m["program"]]
    work = os.path.join(args.work, m["name"])
    row = {"name": m["name"], "program": m["program"], "kind": m.get("kind", ""), "valid": False,
           "rule": "", "origin_ok": False, "fix_ok": False, "runs": False, "patch_runs": False, "note": ""}
    try:
        build(args.src, prog, work, m)
        origins = expected_spans(work, m, m["origin"])
        fixes = expected_spans(work, m, m["fix"])
    except SpecError as e:
        row["note"] = "spec: %s" % e
        return row
    rc, so, se = traced(args, prog, work, m["name"])
    jrc, jout, jerr = run([args.devtrace, "report", "--json", "m.db"], work)
    try:
        mm = json.loads(jout)["traces"][0]["mismatches"]
    except (ValueError, KeyError, IndexError):
        mm = None
    if rc == 124:
        row["note"] = "stalled twice: the traced run did not end within %d s" % TIMEOUT
        return row
    if rc == 0 or not mm:
        row["note"] = "invalid: %s" % ("runs to the end" if rc == 0 else
                                        "exit %d without a device mismatch: %s" % (rc, se.strip()[-300:]))
        return row
    row["valid"] = True
    m0 = mm[0]
    fix = m0.get("fix") or {}
    row["rule"] = fix.get("rule") or "(none)"
    # ORIGIN: where the odd operand reached the device it is on (the chain's step that put it there:
    # its creation, or a copy off the device), else the chain's last step
    odd = [o for o in m0.get("operands", []) if o.get("odd")]
    said = []
    for o in odd:
        chain = o.get("chain") or []
        s = o.get("reached_device_at") or (chain[-1].get("site") if chain else None)
        if s:
            f = site_file(work, s.get("file"))
            at = "%s:%s" % (f or s.get("file"), s.get("line"))
            if at not in said:
                said.append(at)
            row["origin_ok"] |= f is not None and in_spans(origins, f, s.get("line", 0))
    row["origin_said"] = ", ".join(said) or "(no odd operand)"
    # FIX LINE: the patch, else the fix site
    site = fix.get("site") or {}
    sf = site_file(work, site.get("file"))
    row["fix_said"] = "%s %s:%s" % (fix.get("placement", ""), sf or site.get("file"), site.get("line")) if site else "(none)"
    if m0.get("diff"):
        row["fix_ok"] = diff_ok(work, m0["diff"], fixes)
    else:
        row["fix_ok"] = sf is not None and site_ok(work, fixes, sf, site.get("line", 0), fix.get("placement"))
    # RUNS: the patch applied to a copy makes the program run
    vrc, vout, verr = run_again_if_stalled(m["name"], "fix --verify", lambda: run(
        [args.devtrace, "fix", "--verify", "--run-recorded-command", "m.db"], work, {"DEVTRACE_QUIET": "1"}, 2 * TIMEOUT))
    row["runs"] = vrc == 0
    row["patch_runs"] = vrc == 0
    if vrc != 0:
        row["note"] = (vout + verr).strip().split("\n")[-1][:160]
        if m0.get("diff"):
            row["patch_runs"] = patched_runs(args, prog, work, m0["diff"])
    row["origin_want"] = ", ".join("%s:%d" % (s[0], s[1]) for s in origins)
    row["fix_want"] = ", ".join("%s:%d" % (s[0], s[1]) for s in fixes)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return row


# ---------------------------------------------------------------------------- table


def pct(n, d):
    return "%d/%d (%.0f%%)" % (n, d, 100.0 * n / d) if d else "0/0"


def table(rows, bases):
    yes = lambda b: "yes" if b else "**no**"
    out = ["| mutation | program | rule | origin ok | fix ok | runs | patch runs in place | devtrace said (origin; fix) "
           "| expected (origin; fix) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["valid"]:
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s; %s | %s; %s |" % (
                r["name"], r["program"], r["rule"], yes(r["origin_ok"]), yes(r["fix_ok"]), yes(r["runs"]),
                yes(r["patch_runs"]),
                r["origin_said"], r["fix_said"], r["origin_want"], r["fix_want"]))
    valid = [r for r in rows if r["valid"]]
    out.append("")
    out.append("Scored: %d mutations of %d. ORIGIN %s, FIX LINE %s, RUNS %s (the patch applied in place by the "
               "scorer: %s), all three %s." % (
        len(valid), len(rows), pct(sum(r["origin_ok"] for r in valid), len(valid)),
        pct(sum(r["fix_ok"] for r in valid), len(valid)), pct(sum(r["runs"] for r in valid), len(valid)),
        pct(sum(r["patch_runs"] for r in valid), len(valid)),
        pct(sum(r["origin_ok"] and r["fix_ok"] and r["runs"] for r in valid), len(valid))))
    bad = [r for r in rows if not r["valid"]]
    if bad:
        out.append("")
        out.append("Not scored (the mutation does not fail with a device mismatch here, the spec does not fit, "
                   "or the run stalled):")
        out.append("")
        out += ["- %s (%s): %s" % (r["name"], r["program"], r["note"].replace("\n", " ")) for r in bad]
    out.append("")
    out.append("Programs with their setup alone, traced on one simulated GPU: " +
               ", ".join("%s %s" % (b[0], b[2] if b[1] else "FAILS") for b in bases) + ".")
    failed_base = [b for b in bases if not b[1]]
    if failed_base:
        out.append("")
        out.append("Programs whose setup alone does not run (their mutations say nothing): " +
                   "; ".join("%s: %s" % (b[0], b[2].replace("\n", " ")) for b in failed_base))
    if STALLS:
        out.append("")
        out.append("Stalls: %d runs did not end within their time limit; each was killed and run once more: %s." % (
            len(STALLS), "; ".join("%s (%s)" % st for st in STALLS)))
    notes = [r for r in valid if r["note"]]
    if notes:
        out.append("")
        out.append("Verify failures:")
        out.append("")
        out += ["- %s: %s" % (r["name"], r["note"].replace("\n", " ")) for r in notes]
    return "\n".join(out)


def devtrace_commit(devtrace):
    """The commit of the sources the devtrace command was built from (the git work tree that holds it, its
    build folder being inside), and whether they differ from it; its --version otherwise."""
    where = os.path.dirname(devtrace)
    srcs = ["viewer", "tracer", "adapters", "common", "runtime", "include"]
    top = run(["git", "rev-parse", "--show-toplevel"], where)[1].strip()
    rc, so, _ = run(["git", "log", "-1", "--format=%h", "--"] + srcs, top or where)
    if not top or rc != 0 or not so.strip():
        return run([devtrace, "--version"], where)[1].strip() or "unknown"
    dirty = run(["git", "status", "--porcelain", "--untracked-files=no", "--"] + srcs, top)[1].strip()
    return "commit " + so.strip() + (" (its sources changed since)" if dirty else "")


def write_section(path, spec_name, body):
    """Write BODY as the section of PATH that belongs to SPEC_NAME (between its two marker lines), keeping the
    rest of the file (the other spec's section, text written by hand); a new file or section is appended."""
    begin, end = "<!-- score.py: %s -->" % spec_name, "<!-- end of score.py: %s -->" % spec_name
    try:
        with open(path, encoding="utf-8") as f:
            old = f.read()
    except FileNotFoundError:
        old = "# devtrace on the corpus\n"
    section = "%s\n## Scored by %s\n\n%s%s\n" % (begin, spec_name, body, end)
    if begin in old and end in old:
        new = old[:old.index(begin)] + section + old[old.index(end) + len(end) + 1:]
    else:
        new = old.rstrip("\n") + "\n\n" + section
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)


def die(msg):
    """A usage error: one line, exit status 2 (as argparse's own)."""
    print("score.py: " + msg, file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--devtrace", required=True, help="the devtrace command to judge")
    ap.add_argument("--src", required=True, help="the fetched programs, one folder each (README.md)")
    ap.add_argument("--spec", default=os.path.join(HERE, "mutations.json"))
    ap.add_argument("--only", help="mutations or programs to run, comma-separated")
    ap.add_argument("--work", help="work dir (default: a new temporary one)")
    ap.add_argument("--python", default="/usr/bin/python3", help="the interpreter that imports torch")
    ap.add_argument("-j", type=int, default=2, help="mutations run at once (default 2)")
    ap.add_argument("--results", help="write the table here (default: scripts/corpus/RESULTS.md on a full run)")
    ap.add_argument("--keep", action="store_true", help="keep each mutation's work dir and trace")
    args = ap.parse_args()
    args.devtrace = os.path.abspath(args.devtrace)
    args.src = os.path.abspath(args.src)
    global PYTHON
    PYTHON = args.python
    if not os.access(args.devtrace, os.X_OK):
        die("%s is not an executable devtrace" % args.devtrace)
    if run([args.python, "-c", "import torch, torchvision"], HERE)[0] != 0:
        die("%s cannot import torch and torchvision (Debian: python3-torch python3-torchvision)"
                 % args.python)
    try:
        with open(args.spec) as f:
            spec = json.load(f)
    except (OSError, ValueError) as e:
        die("%s: %s" % (args.spec, e))
    for name, prog in spec.get("programs", {}).items():
        missing = [k for k in ("repo", "commit", "dir", "files", "main") if k not in prog]
        if missing:
            die("%s: program %s lacks %s" % (args.spec, name, ", ".join(missing)))
    for i, m in enumerate(spec.get("mutations", [])):
        missing = [k for k in ("name", "program", "file", "line", "new", "origin", "fix") if k not in m]
        if missing:
            die("%s: mutation %s lacks %s" % (args.spec, m.get("name", "#%d" % (i + 1)), ", ".join(missing)))
    muts = spec.get("mutations", [])
    if args.only:
        want = set(args.only.split(","))
        muts = [m for m in muts if m["name"] in want or m["program"] in want]
        unknown = want - {m["name"] for m in muts} - {m["program"] for m in muts}
        if unknown or not muts:
            die("no mutation or program named %s" % ", ".join(sorted(unknown or want)))
    for m in muts:
        if m["program"] not in spec["programs"]:
            die("mutation %s names no known program %r" % (m["name"], m["program"]))
    own_work = not args.work and not args.keep  # a temporary work dir of our own goes at the end
    args.work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="devtrace-corpus."))
    os.makedirs(args.work, exist_ok=True)
    progs = sorted({m["program"] for m in muts})
    with concurrent.futures.ThreadPoolExecutor(max(1, args.j)) as ex:
        bases = list(ex.map(lambda p: baseline(args, spec, p), progs))
        for b in bases:
            print("setup %-16s %s" % (b[0], "runs (%s)" % b[2] if b[1] else "FAILS: " + b[2]), flush=True)
        good = {b[0] for b in bases if b[1]}
        rows = []
        futs = [ex.submit(score, args, spec, m) for m in muts if m["program"] in good]
        for fu in futs:
            r = fu.result()
            rows.append(r)
            if r["valid"]:
                print("%-32s %-30s origin %-3s fix %-3s runs %-3s in place %-3s" % (
                    r["name"], r["rule"], "ok" if r["origin_ok"] else "NO", "ok" if r["fix_ok"] else "NO",
                    "ok" if r["runs"] else "NO", "ok" if r["patch_runs"] else "NO"), flush=True)
            else:
                print("%-32s NOT SCORED: %s" % (r["name"], r["note"]), flush=True)
    text = table(rows, bases)
    print()
    print(text)
    results = args.results or (None if args.only else os.path.join(HERE, "RESULTS.md"))
    if results:
        write_section(results, os.path.basename(args.spec), "%s, devtrace at %s, `scripts/corpus/score.py --spec %s` on %s (torch %s)\n\n%s\n" % (
            datetime.date.today().isoformat(), devtrace_commit(args.devtrace), os.path.basename(args.spec), args.python,
            run([args.python, "-c", "import torch; print(torch.__version__)"], HERE)[1].strip(), text))
        print("\nwritten to %s" % results)
    if own_work:
        shutil.rmtree(args.work, ignore_errors=True)
    elif args.keep:
        print("work dirs and traces kept in %s" % args.work)
    valid = [r for r in rows if r["valid"]]
    return 0 if valid and all(r["origin_ok"] and r["fix_ok"] and r["runs"] for r in valid) else 1


if __name__ == "__main__":
    sys.exit(main())
