#!/usr/bin/env python3
"""Re-creates the mutation benchmark's programs (scripts/corpus/mutbench.json) from the fetched mirrors at their
pinned commits, or from an installed wheel at its pinned version, into --src/NAME: the fetched files, the setup
edits that make each run here fast with no network, our driver (scripts/corpus/mutbench/drivers) and our
stand-in modules (scripts/corpus/mutbench/support). Fetched code is never committed; this script is how it comes
back. Then `scripts/mutbench.py --list scripts/corpus/mutbench.json --src DIR` runs the benchmark.

usage: mutbench_prepare.py [--src /work/mutbench/src] [--mirrors /work/.mirror] [--python PYTHON]
                           [--only NAME[,NAME]] [--check]
  --check  also runs each prepared program once on the cpu and says whether it ends well
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import score  # noqa: E402  (its build(): the corpus's own setup format)


def resolve(spec_dir, name, p):
    """A program's full spec: one taken `from` another corpus spec (mutations.json:NAME) gets that spec's fields,
    its `setup_extra` added to the setup, and the run command made from its main and args."""
    if "from" not in p:
        return dict(p)
    f, n = p["from"].split(":")
    with open(os.path.join(spec_dir, f)) as fh:
        base = dict(json.load(fh)["programs"][n])
    base.update({k: v for k, v in p.items() if k not in ("from", "setup_extra")})
    base["setup"] = list(base.get("setup", [])) + list(p.get("setup_extra", []))
    base.setdefault("mutate", [d for d in base["files"] if d.endswith(".py")])
    base.setdefault("run", " ".join(["python", base["main"]] + [shlexq(a) for a in base.get("args", [])]))
    return base


def shlexq(a):
    return a if re.match(r"^[A-Za-z0-9_./=:+-]+$", a) else "'%s'" % a.replace("'", "'\\''")


def site_packages(python):
    return subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()


def absolute_imports(text, package):
    """`from ...modeling_utils import X` in a file of PACKAGE (dotted, the file's own package) -> absolute."""
    parts = package.split(".")

    def sub(m):
        dots, rest = m.group(1), m.group(2)
        base = parts[: len(parts) - (len(dots) - 1)]
        return "from %s import" % ".".join(base + ([rest] if rest else []))

    return re.sub(r"^from (\.+)([\w.]*) import", sub, text, flags=re.M)


def fetch_files(args, name, p, raw):
    """Write the program's files into RAW/NAME (what score.build copies from)."""
    d = os.path.join(raw, name)
    os.makedirs(d, exist_ok=True)
    if "wheel" in p:
        w = p["wheel"]
        py = score.program_python(p.get("python")) or args.python
        sp = site_packages(py)
        got = subprocess.run([py, "-c", "import importlib.metadata as m; print(m.version(%r))" % w["package"]],
                             capture_output=True, text=True).stdout.strip()
        if got != w["version"]:
            raise score.SpecError("%s wants %s %s, %s has %s" % (name, w["package"], w["version"], py, got or "none"))
        for dest, path in p["files"].items():
            with open(os.path.join(sp, path), encoding="utf-8") as f:
                text = f.read()
            pkg = os.path.dirname(path).replace("/", ".")
            out = os.path.join(d, dest)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "w", encoding="utf-8") as f:
                f.write(absolute_imports(text, pkg))
        return
    git = os.path.join(args.mirrors, p["repo"].replace("/", "+"), "repo")
    if not os.path.isdir(git):
        raise score.SpecError("%s: no mirror at %s (fetch github:%s first)" % (name, git, p["repo"]))
    for dest, path in p["files"].items():
        out = os.path.join(d, dest)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        r = subprocess.run(["git", "--git-dir", git, "show", "%s:%s" % (p["commit"], path)], capture_output=True)
        if r.returncode != 0:
            raise score.SpecError("%s: %s@%s:%s: %s" % (name, p["repo"], p["commit"][:12], path, r.stderr.decode().strip()))
        with open(out, "wb") as f:
            f.write(r.stdout)


def prepare(args, spec_dir, name, p, raw):
    p = resolve(spec_dir, name, p)
    fetch_files(args, name, p, raw)
    q = dict(p)
    q["dir"] = name
    q["prepare"] = [PREPARE[x] if x in PREPARE else x for x in
                    ([p["prepare"]] if isinstance(p.get("prepare"), str) else p.get("prepare", []))]
    dest = os.path.join(args.src, name)
    score.PYTHON = args.python
    score.build(raw, q, dest)
    for path, text in p.get("create", {}).items():
        os.makedirs(os.path.dirname(os.path.join(dest, path)) or dest, exist_ok=True)
        with open(os.path.join(dest, path), "w") as f:
            f.write(text)
    if p.get("driver"):
        shutil.copyfile(os.path.join(HERE, "mutbench", "drivers", p["driver"]), os.path.join(dest, "mutbench_driver.py"))
    for s in p.get("support", []):
        src = os.path.join(HERE, "mutbench", "support", s)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dest, s), ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(src, os.path.join(dest, s))
    with open(os.path.join(dest, ".mutbench.json"), "w") as f:
        json.dump({"name": name, "run": p["run"], "mutate": p["mutate"], "python": p.get("python")}, f)
    return p


# named prepare steps shared by programs (Python run in the program's folder before any mutation)
PREPARE = {
    # a Cora-shaped graph (the held-out gcn's prepare step): 1,800 nodes, 16 features, 3 classes, 3,000 edges
    "gcn": None,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", default=os.path.join(HERE, "mutbench.json"))
    ap.add_argument("--src", default="/work/mutbench/src")
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--python", default="/usr/bin/python3", help="the interpreter (a program may name its own)")
    ap.add_argument("--only")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    with open(args.list) as f:
        spec = json.load(f)
    with open(os.path.join(HERE, "heldout.json")) as f:
        PREPARE["gcn"] = json.load(f)["programs"]["gcn"]["prepare"][0]
    raw = tempfile.mkdtemp(prefix="mutbench-raw.")
    os.makedirs(args.src, exist_ok=True)
    bad = 0
    try:
        for name, p in spec["programs"].items():
            if args.only and name not in args.only.split(","):
                continue
            try:
                full = prepare(args, os.path.dirname(os.path.abspath(args.list)), name, p, raw)
            except (score.SpecError, OSError, subprocess.CalledProcessError) as e:
                print("%-24s FAILED: %s" % (name, e))
                bad += 1
                continue
            if args.check:
                words = [score.program_python(full.get("python")) or args.python if w in ("python", "python3") else w
                         for w in full["run"].split()]
                env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
                env.pop("DEVTRACE_SIM_CUDA", None)
                r = subprocess.run(words, cwd=os.path.join(args.src, name), capture_output=True, text=True, env=env,
                                   timeout=300)
                print("%-24s %s" % (name, "runs on the cpu" if r.returncode == 0 else
                                    "FAILS on the cpu: " + r.stderr.strip()[-400:]))
                bad += r.returncode != 0
            else:
                print("%-24s prepared in %s" % (name, os.path.join(args.src, name)))
    finally:
        shutil.rmtree(raw, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
