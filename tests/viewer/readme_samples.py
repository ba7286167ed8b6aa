"""Keeps README.md's sample outputs real, and its gallery whole (run by ctest as `readme`).

Every sample in README.md is a fenced block right after a marker line
    <!-- sample: COMMAND -->
The test runs each COMMAND with bash, in README's order, from the repository root,
with the build's `devtrace` first on PATH and /usr/bin next (Debian's python3 imports
torch), stdout and stderr together, and compares what it prints with the block.
Before running: `build/` at the start of a word becomes the build directory, and
`/tmp/` a fresh private directory. Before comparing, on both sides: the repository's
path reads /home/you/devtrace, the build directory's /home/you/devtrace/build, the
private directory's /tmp; times (`12.34 ms`), process ids in trace names, temporary
directories of `devtrace fix` and module offsets (`prog+0x1641`) are masked.
A difference fails with a unified diff. With --update as a fifth argument, the blocks
are rewritten with the outputs instead (paths as README shows them, nothing masked).

Gallery: every examples/*.c and examples/pytorch/*.py is named (`name.c`, `name.py`)
in README's "## Gallery" section. Rules: every rule of the registry (`devtrace rules --json`) is a row of
README's rule table (which scripts/gen_rules_doc.py generates; ctest rules-doc checks it whole).

usage: readme_samples.py DEVTRACE BUILD_DIR REPO_ROOT WORK_DIR [--update]
Prints one line per check and "N passed, N failed"; exits 1 on a failure.
"""

import difflib
import glob
import json
import os
import re
import shutil
import subprocess
import sys

DEVTRACE, BUILD, REPO, WORK = (os.path.abspath(a) for a in sys.argv[1:5])
UPDATE = sys.argv[5:] == ["--update"]
README = os.path.join(REPO, "README.md")
SHOWN_REPO = "/home/you/devtrace"
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + detail), flush=True)


def samples(text):
    """(line number, command, expected output) of each marked block."""
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        m = re.match(r"^<!-- sample: (.*) -->$", line.strip())
        if not m:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            out.append((i + 1, m.group(1), None))
            continue
        j = i + 2
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        out.append((i + 1, m.group(1), "\n".join(lines[i + 2 : j])))
    return out


def shown(text, tmp):
    """The machine's paths as README shows them."""
    text = text.replace(tmp, "/tmp")
    return text.replace(BUILD + "/", SHOWN_REPO + "/build/").replace(REPO + "/", SHOWN_REPO + "/")


def masked(text, tmp):
    """Both sides alike: the paths as README shows them, then what varies run to run masked."""
    text = shown(text, tmp)
    # a duration's unit too: the report says "850 ms" on a quiet machine and "1.2 s" on a loaded one
    text = re.sub(r"\b\d+(\.\d+)? (ms|s|µs)\b", "N TIME", text)
    text = re.sub(r"(devtrace\.[\w.-]*?\.)\d+\.db", "\\1PID.db", text)
    text = re.sub(r"devtrace-fix\.\w+", "devtrace-fix.XXXXXX", text)
    text = re.sub(r"\+0x[0-9a-f]+\b", "+0xADDR", text)
    return [l.rstrip() for l in text.strip("\n").split("\n")]


def run_sample(cmd, tmp):
    # /tmp/ first, and only where a word starts with it: the repository itself may be under /tmp (a CI clone)
    real = re.sub(r"(^|(?<=[\s=]))/tmp/", lambda m: m.group(1) + tmp + "/", cmd)
    real = re.sub(r"(^|(?<=[\s=]))build/", lambda m: m.group(1) + BUILD + "/", real)
    env = dict(os.environ)
    for k in ("DEVTRACE_SIM_CUDA", "DEVTRACE_OUTPUT", "DEVTRACE_OVERWRITE", "DEVTRACE_QUIET", "NO_COLOR"):
        env.pop(k, None)
    env["PATH"] = os.path.dirname(DEVTRACE) + ":/usr/bin:/bin"
    p = subprocess.run(["bash", "-c", real], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=300)
    return p.stdout


def main():
    text = open(README, encoding="utf-8").read()
    shutil.rmtree(WORK, ignore_errors=True)
    tmp = os.path.join(WORK, "tmp")
    os.makedirs(tmp)
    found = samples(text)
    check("README has marked samples", len(found) >= 3, "found %d, want 3 or more" % len(found))
    outputs = []
    for lineno, cmd, expected in found:
        name = "sample at README.md:%d: %s" % (lineno, cmd)
        if expected is None:
            check(name, False, "  the marker is not followed by a ``` block")
            continue
        got = run_sample(cmd, tmp)
        outputs.append((lineno, expected, got))
        if UPDATE:
            continue
        want_l, got_l = masked(expected, tmp), masked(got, tmp)
        diff = "\n".join(difflib.unified_diff(want_l, got_l, "README.md", "now", lineterm=""))
        check(name, want_l == got_l, diff + "\n  (the whole output now:)\n" + got)
    if UPDATE:
        lines = text.split("\n")
        for lineno, expected, got in reversed(outputs):
            n = len(expected.split("\n")) if expected else 0  # the block's lines between its fences
            lines[lineno + 1 : lineno + 1 + n] = shown(got, tmp).rstrip("\n").split("\n")
        open(README, "w", encoding="utf-8").write("\n".join(lines))
        print("README.md: %d samples rewritten" % len(outputs))
        return 0 if all(results) else 1

    # the gallery names every example
    m = re.search(r"^## Gallery.*?(?=^## |\Z)", text, re.M | re.S)
    check("README has a '## Gallery' section", m)
    gallery = m.group(0) if m else ""
    files = sorted(glob.glob(os.path.join(REPO, "examples", "*.c")) +
                   glob.glob(os.path.join(REPO, "examples", "pytorch", "*.py")))
    check("examples found", len(files) >= 20, "found %d" % len(files))
    missing = [os.path.relpath(f, REPO) for f in files if not re.search(r"\b%s\b" % re.escape(os.path.basename(f)), gallery)]
    check("the gallery names every example (%d files)" % len(files), not missing, "  not named: " + ", ".join(missing))

    # the rule table names every rule
    reg = subprocess.run([DEVTRACE, "rules", "--json"], capture_output=True, text=True)
    try:
        ids = {r["id"] for r in json.loads(reg.stdout)["rules"]}
    except ValueError:
        ids = set()
    check("rules found in the registry (devtrace rules --json)", len(ids) >= 8,
          "found %s; exit %d %s" % (sorted(ids), reg.returncode, reg.stderr[-500:]))
    rows = set(re.findall(r"^\| `([a-z-]+)` \|", text, re.M))
    missing = sorted(ids - rows)
    check("README's rule table has every rule (%d ids)" % len(ids), not missing, "  no row: " + ", ".join(missing))

    passed = sum(results)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
