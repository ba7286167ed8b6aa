"""Checks devtrace's in-process API (devtrace.start/stop/trace) and its IPython magics, run by
check_wheel.sh with the wheel's venv Python: each case in a process of its own (a process writes
one trace), in the directory given, with DEVTRACE_SIM_CUDA=2. The magics in IPython's
InteractiveShell, and in a Jupyter kernel with `jupyter nbconvert --execute` when Debian's
jupyter-nbconvert and python3-ipykernel are installed (else said, and skipped).

    python check_inprocess.py WORK_DIR"""

import json
import os
import subprocess
import sys
import textwrap

FAILED = []

# A mismatch: x made on the cpu, w moved to the simulated cuda:0, x + w at the third line.
BUG = "x = torch.ones(3)\nw = torch.ones(3).to('cuda:0')\ny = x + w\n"


def D(text):
    return textwrap.dedent(text).lstrip("\n")


def case(name, code, want_rc=0, want=(), unwanted=()):
    """Runs code in a fresh interpreter; checks its exit status and its output (stdout + stderr)."""
    p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    bad = []
    if p.returncode != want_rc:
        bad.append("exit %d, not %d" % (p.returncode, want_rc))
    bad += ["no %r in the output" % w for w in want if w not in p.stdout]
    bad += ["%r in the output" % u for u in unwanted if u in p.stdout]
    if bad:
        FAILED.append(name)
        print("FAIL %s: %s\n--- output:\n%s---" % (name, "; ".join(bad), p.stdout))
    else:
        print("ok   %s" % name)


def main():
    os.chdir(sys.argv[1])
    os.environ["DEVTRACE_SIM_CUDA"] = "2"

    case("start/stop, one trace per process", D("""
        import os, devtrace
        p = devtrace.start("s.db")
        assert p == os.path.abspath("s.db") and devtrace.tracing() == p, (p, devtrace.tracing())
        import torch                       # imported after start(): the recorder comes with it
        """) + BUG.replace("y = x + w", "try:\n    x + w\nexcept RuntimeError:\n    pass\n") + D("""
        assert devtrace.stop() == p and devtrace.tracing() is None and devtrace.stop() is None
        assert devtrace.mismatches(p) == 1, devtrace.mismatches(p)
        assert not os.path.exists(p + "-wal") and not os.path.exists(p + "-shm")
        import sqlite3
        db = sqlite3.connect("file:%s?mode=ro&immutable=1" % p, uri=True)
        meta = dict(db.execute("SELECT key, value FROM meta"))
        assert str(meta.get("stopped_in_process")) == "1" and "exit_status" not in meta, meta
        # torch (and libstdc++) loaded after the tracer: its C++ throw is hooked, as under LD_PRELOAD
        throws = db.execute("SELECT count(*) FROM v_errors WHERE what = 'exception'").fetchone()[0]
        assert throws >= 1, "no C++ throw recorded"
        try:
            devtrace.start("again.db")
        except RuntimeError as e:
            assert "one" in str(e), e
        else:
            raise SystemExit("a second start() did not raise")
        assert not os.path.exists("again.db")
        print("checked")
        """), want=("checked",))

    case("trace() without a mismatch: no report, where the trace is", D("""
        import torch, devtrace
        with devtrace.trace("clean.db") as p:
            y = torch.ones(3).to("cuda:1") * 2
        print("mismatches", devtrace.mismatches(p))
        """), want=("mismatches 0", "devtrace: trace written to"), unwanted=("odd one out",))

    case("trace() on a mismatch: the report, then the program's exception", D("""
        import torch, devtrace
        with devtrace.trace("bug.db"):
        """) + textwrap.indent(BUG, "    "), want_rc=1,
         want=("the odd one out: 'self' \"x\" on cpu", "devtrace report ", "RuntimeError: Expected all tensors to be on the same device"))

    case("trace(report=False)", D("""
        import torch, devtrace
        try:
            with devtrace.trace("quiet.db", report=False):
        """) + textwrap.indent(BUG, "        ") + D("""
        except RuntimeError:
            print("caught")
        """), want=("caught",), unwanted=("odd one out",))

    case("a forked child records nothing, leaves no file", D("""
        import glob, os, torch, devtrace
        with devtrace.trace("fork.db", report=False):
            pid = os.fork()
            if pid == 0:
                torch.ones(2).to("cuda:1")
                os._exit(0)
            os.waitpid(pid, 0)
        print("files", sorted(glob.glob("fork*")))
        """), want=("files ['fork.db']",))

    case("an existing trace is kept, a fresh name used", D("""
        import os, devtrace
        open("kept.db", "w").write("mine")
        with devtrace.trace("kept.db") as p:
            pass
        assert p != os.path.abspath("kept.db") and open("kept.db").read() == "mine", p
        print("fresh", os.path.basename(p))
        """), want=("fresh kept.1.db",))

    case("IPython: %load_ext devtrace, %%devtrace on a cell", D("""
        import contextlib, io, devtrace
        from IPython.core.interactiveshell import InteractiveShell
        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "devtrace")
        ip.run_cell("import torch")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            ip.run_cell_magic("devtrace", "-o cell.db", %r)
        out = err.getvalue()
        assert '''the odd one out: 'self' "x" on cpu''' in out, out
        assert devtrace.mismatches("cell.db") == 1
        from IPython.core.error import UsageError
        for line, why in (("--bogus", "unknown option --bogus"), ("", "a process writes one")):
            try:
                ip.run_cell_magic("devtrace", line, "pass")
            except UsageError as e:
                assert why in str(e), e
            else:
                raise SystemExit("%%%%devtrace %%s did not fail" %% line)
        print("checked")
        """) % BUG, want=("checked",))

    case("IPython: %devtrace start / stop across cells", D("""
        import contextlib, io, devtrace
        from IPython.core.interactiveshell import InteractiveShell
        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "devtrace")
        ip.run_line_magic("devtrace", "start -o lines.db")
        ip.run_cell("import torch")
        for line in %r.splitlines():
            ip.run_cell(line)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            ip.run_line_magic("devtrace", "stop")
        assert '''the odd one out: 'self' "x" on cpu''' in err.getvalue(), err.getvalue()
        print("checked")
        """) % BUG, want=("checked",))

    notebook()
    if FAILED:
        print("%d failed: %s" % (len(FAILED), ", ".join(FAILED)))
        return 1
    return 0


def notebook():
    """%%devtrace in a real kernel: a notebook run by `jupyter nbconvert --execute`."""
    try:
        import ipykernel  # noqa: F401
        import nbconvert  # noqa: F401
        import nbformat
    except ImportError as e:
        print("skip notebook: %s (apt-get install jupyter-nbconvert python3-ipykernel)" % e)
        return
    # a kernel spec for this interpreter (the venv's, which has devtrace), in a directory of the
    # test's own: Debian's python3 spec runs /usr/bin/python3
    prefix = os.path.abspath("jupyter")
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", prefix, "--name", "devtrace-check"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext devtrace"), nbformat.v4.new_code_cell("import torch"),
                nbformat.v4.new_code_cell("%%devtrace -o nb.db\n" + BUG)]
    nbformat.write(nb, "nb.ipynb")
    env = dict(os.environ, JUPYTER_PATH=os.path.join(prefix, "share", "jupyter"))
    p = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute", "--allow-errors",
                        "--ExecutePreprocessor.kernel_name=devtrace-check", "--ExecutePreprocessor.timeout=120",
                        "--output", "nb.out.ipynb", "nb.ipynb"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=env, timeout=180)
    if p.returncode != 0:
        FAILED.append("notebook")
        print("FAIL notebook: nbconvert exit %d\n%s" % (p.returncode, p.stdout))
        return
    with open("nb.out.ipynb") as f:
        cell = json.load(f)["cells"][2]
    text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []) if o.get("name") == "stderr")
    error = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if "the odd one out: 'self' \"x\" on cpu" not in text or not error:
        FAILED.append("notebook")
        print("FAIL notebook: the cell's report or its error is missing:\n%s" % json.dumps(cell, indent=1))
    else:
        print("ok   notebook: %%devtrace in a Jupyter kernel (nbconvert --execute)")


if __name__ == "__main__":
    sys.exit(main())
