"""Hostile traces against `devtrace fix` and `fix --verify` (run by ctest as `hostile-verify`; issue 39).

A trace is untrusted input. Real traces are made, then edited with sqlite3 as an attacker would, and:
  - nothing the trace holds runs without the user's say: a recorded command replaced by
    `/bin/sh -c 'touch MARK'` is refused without a terminal (one line, exit 2) and runs only with
    --run-recorded-command, or after a `y` typed at a terminal (a pseudo-terminal here); a command the
    user passes after -- runs instead of the recorded one; a sibling trace whose pid is this trace's ppid
    supplies nothing;
  - --verify copies nothing from outside the directory it runs from: a fix pointed at /etc/passwd is
    refused (with its recorded hash deleted, or set to the real file's);
  - source facts that are not what a producer writes (an `indent` holding code, a device expression, a
    callee, a bound name or a wrapper with a statement in it) make no patch: one line saying the trace is
    inconsistent, exit 2, and the injected text in no output of `fix` or `report`.
The C part (build/examples/bug_labels_on_cpu, no torch needed) always runs; the PyTorch part
(examples/pytorch/bug_labels_not_moved.py) when PYTHON is given, else it says why it is skipped.

usage: hostile_verify.py DEVTRACE BUILD_DIR REPO_ROOT WORK_DIR [PYTHON]
Prints one line per check and "N passed, N failed"; exits 1 on a failure.
"""

import hashlib
import os
import pty
import shutil
import sqlite3
import subprocess
import sys
import time

DEVTRACE, BUILD, REPO, WORK = (os.path.abspath(a) for a in sys.argv[1:5])
PYTHON = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else None
results = []
INJECTED = ("os.system", "system(", "import os", "touch ")


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + detail), flush=True)


def run(cmd, cwd, env=None, timeout=300):
    e = dict(os.environ)
    e.pop("DEVTRACE_SIM_CUDA", None)
    e.update(env or {})
    p = subprocess.run(cmd, env=e, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       errors="replace", timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def edited(src, dst, *edits):
    """A copy of trace src at dst with each edit (a function of the connection) applied."""
    for p in (dst, dst + "-wal", dst + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    a, b = sqlite3.connect(src), sqlite3.connect(dst)
    a.backup(b)
    a.close()
    for e in edits:
        e(b)
    b.commit()
    b.close()
    return dst


def sid(db, text):
    r = db.execute("SELECT id FROM strings WHERE text = ?", (text,)).fetchone()
    if r:
        return r[0]
    db.execute("INSERT INTO strings(id, text) VALUES ((SELECT max(id) + 1 FROM strings), ?)", (text,))
    return db.execute("SELECT id FROM strings WHERE text = ?", (text,)).fetchone()[0]


def meta(key, value):
    return lambda db: db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))


def argv_of(words):
    import json
    return meta("argv", json.dumps(words))


def fact(line, key, value, like):
    """Sets the value of fact `key` at `line` of the file whose name ends with like (every such row)."""
    def f(db):
        n = db.execute("UPDATE source_facts SET value = ? WHERE line = ? AND key = (SELECT id FROM strings WHERE "
                       "text = ?) AND file IN (SELECT id FROM strings WHERE text LIKE ?)",
                       (sid(db, value), line, key, "%" + like)).rowcount
        assert n > 0, "no %s fact at line %d of %s" % (key, line, like)
    return f


def rename_file(like, new):
    """The file's name, wherever the trace uses it (frames, facts), becomes new."""
    def f(db):
        old = db.execute("SELECT id FROM strings WHERE text LIKE ? ORDER BY length(text) DESC LIMIT 1",
                         ("%" + like,)).fetchone()[0]
        db.execute("UPDATE strings SET text = ? WHERE id = ?", (new, old))
    return f


def drop_fact(key, like):
    return lambda db: db.execute("DELETE FROM source_facts WHERE key = (SELECT id FROM strings WHERE text = ?) AND "
                                 "file IN (SELECT id FROM strings WHERE text LIKE ?)", (key, "%" + like))


def clean(*marks):
    for m in marks:
        if os.path.exists(m):
            os.remove(m)


def no_injection(*texts):
    return not any(i in t for t in texts for i in INJECTED)


def refused_inconsistent(name, db, cwd, extra=()):
    """fix on db: no patch, one line saying the trace is inconsistent, exit 2; report shows no injected code."""
    rc, out, err = run([DEVTRACE, "fix"] + list(extra) + [db], cwd)
    rrc, rep, rerr = run([DEVTRACE, "report", db], cwd)
    check("%s: fix makes no patch, says the trace is inconsistent in one line (exit 2); report shows no injected "
          "code" % name,
          rc == 2 and out == "" and err.count("\n") == 1 and "inconsistent" in err and no_injection(out, err, rep),
          "fix: %d %r %r\nreport: %d %s" % (rc, out, err, rrc, rep[-3000:]))


def pty_answer(cmd, cwd, answer):
    """cmd run on a pseudo-terminal (stdin and stderr a terminal); answer typed at its prompt. Exit status, text."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.environ.pop("DEVTRACE_SIM_CUDA", None)
        os.execv(cmd[0], cmd)
    out, sent, end = b"", False, time.time() + 240
    while time.time() < end:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
        if not sent and b"[y/N]" in out:
            os.write(fd, answer.encode() + b"\n")
            sent = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


# ---------------------------------------------------------------- C (no torch)

def c_part():
    work = os.path.join(WORK, "c")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    db = os.path.join(work, "c.db")
    run([DEVTRACE, "run", "-o", db, "--overwrite", "--quiet", "--", os.path.join(BUILD, "examples/bug_labels_on_cpu")],
        REPO, {"DEVTRACE_SIM_CUDA": "1"})
    src = "examples/bug_labels_on_cpu.c"
    rc, out, err = run([DEVTRACE, "fix", db], REPO)
    check("C: the real trace's patch", rc == 0 and "+            labels = must(dt_to(labels, dev));\n" in out,
          "%d %r %r" % (rc, out, err))
    mark = os.path.join(work, "MARK")
    bad = edited(db, os.path.join(work, "argv.db"), argv_of(["/bin/sh", "-c", "touch " + mark]))
    clean(mark)
    rc, out, err = run([DEVTRACE, "fix", "--verify", "--run-recorded-command", bad], REPO)
    check("C: --verify of a compiled program runs nothing, even the recorded command with the flag",
          rc == 2 and not os.path.exists(mark) and "cannot verify a compiled program" in err, "%d %r %r" % (rc, out, err))
    refused_inconsistent("C: indent holding code", edited(db, os.path.join(work, "indent.db"), fact(
        25, "indent", '            system("touch %s");\n            ' % mark, src)), REPO)
    refused_inconsistent("C: move_wrap with a statement", edited(db, os.path.join(work, "wrap.db"), fact(
        24, "move_wrap", 'must(0));system("touch %s");(must' % mark, src)), REPO)
    refused_inconsistent("C: device expression with a statement", edited(db, os.path.join(work, "dev.db"), fact(
        24, "device_expr", 'dev);system("touch %s");(dev' % mark, src)), REPO)
    refused_inconsistent("C: bound name with a statement", edited(db, os.path.join(work, "binds.db"), fact(
        25, "binds", 'labels;system("touch %s")' % mark, src)), REPO)
    passwd = edited(db, os.path.join(work, "passwd.db"), rename_file(src, "/etc/passwd"))
    rc, out, err = run([DEVTRACE, "fix", passwd], REPO)
    check("C: a fix pointed at /etc/passwd: no patch, none of its lines shown", rc == 2 and out == "" and
          "root:" not in err, "%d %r %r" % (rc, out, err))
    check("C: nothing the trace held ran", not os.path.exists(mark))


# ---------------------------------------------------------------- PyTorch

def py_part():
    work = os.path.join(WORK, "py")
    prog = os.path.join(work, "prog")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(prog)
    script = "bug_labels_not_moved.py"
    shutil.copy(os.path.join(REPO, "examples/pytorch", script), prog)
    traces = os.path.join(work, "traces")
    os.makedirs(traces)
    db = os.path.join(traces, "real.db")
    rc, _, se = run([DEVTRACE, "run", "-o", db, "--overwrite", "--quiet", "--", PYTHON, script], prog,
                    {"DEVTRACE_SIM_CUDA": "2"})
    rc, out, err = run([DEVTRACE, "fix", db], prog)
    check("PyTorch: the real trace's patch", rc == 0 and "+        labels = labels.to(device)\n" in out,
          "%d %r %r %r" % (rc, out, err, se[-2000:]))
    mark = os.path.join(work, "MARK")
    sh = argv_of(["/bin/sh", "-c", "touch " + mark])

    # the recorded command: never without the user's say
    bad = edited(db, os.path.join(traces, "argv.db"), sh)
    clean(mark)
    rc, out, err = run([DEVTRACE, "fix", "--verify", bad], prog)
    check("PyTorch: --verify without a terminal or the user's say runs nothing: one line, exit 2",
          rc == 2 and out == "" and err.count("\n") == 1 and "--run-recorded-command" in err
          and not os.path.exists(mark), "%d %r %r" % (rc, out, err))
    rc, out, err = run([DEVTRACE, "fix", "--verify", bad, "--", PYTHON, script], prog, timeout=300)
    check("PyTorch: -- COMMAND runs the user's command, not the recorded one",
          rc == 0 and "verified" in out and "runs your command" in err and not os.path.exists(mark),
          "%d %r %r" % (rc, out, err))
    rc, out, err = run([DEVTRACE, "fix", "--verify", "--run-recorded-command", bad], prog)
    check("PyTorch: --run-recorded-command runs the recorded command, shown first",
          os.path.exists(mark) and "runs the command the trace recorded" in err and "touch " + mark in err,
          "%d %r %r" % (rc, out, err))
    clean(mark)
    for answer, runs in (("n", False), ("y", True)):
        prc, text = pty_answer([DEVTRACE, "fix", "--verify", bad], prog, answer)
        check("PyTorch: at a terminal, the recorded command is shown and runs only on y (answered %s)" % answer,
              os.path.exists(mark) == runs and "[y/N]" in text and "touch " + mark in text and (runs or prc == 2),
              "%d %r" % (prc, text[-3000:]))
        clean(mark)

    # a sibling trace (its pid this trace's ppid) supplies nothing
    con = sqlite3.connect(db)
    ppid = con.execute("SELECT value FROM meta WHERE key = 'ppid'").fetchone()[0]
    con.close()
    edited(db, os.path.join(traces, "parent.db"), sh, meta("pid", ppid), meta("ppid", "1"))
    rc, out, err = run([DEVTRACE, "fix", "--verify", "--run-recorded-command", db], prog, timeout=300)
    check("PyTorch: a sibling trace whose pid is the ppid supplies no command",
          rc == 0 and "verified" in out and not os.path.exists(mark) and "sh -c" not in err,
          "%d %r %r" % (rc, out, err))
    rc, out, err = run([DEVTRACE, "fix", "--verify", db], prog)
    check("PyTorch: nor does it without a terminal", rc == 2 and not os.path.exists(mark), "%d %r %r" % (rc, out, err))
    os.remove(os.path.join(traces, "parent.db"))

    # files outside the tree
    full = os.path.join(prog, script)
    with open("/etc/passwd", "rb") as f:
        real = hashlib.sha256(f.read()).hexdigest()
    nohash = edited(db, os.path.join(traces, "passwd.db"), sh, rename_file(full, "/etc/passwd"),
                    drop_fact("sha256", "/etc/passwd"))
    rc, out, err = run([DEVTRACE, "fix", "--verify", "--run-recorded-command", nohash], prog)
    check("PyTorch: a fix pointed at /etc/passwd with its hash deleted: refused, nothing run",
          rc == 2 and out == "" and not os.path.exists(mark) and "root:" not in err, "%d %r %r" % (rc, out, err))
    hashed = edited(db, os.path.join(traces, "passwd2.db"), sh, rename_file(full, "/etc/passwd"),
                    fact(0, "sha256", real, "/etc/passwd"), fact(17, "indent", "", "/etc/passwd"))
    rc, out, err = run([DEVTRACE, "fix", "--verify", "--run-recorded-command", hashed], prog)
    check("PyTorch: a fix pointed at /etc/passwd with its real hash: not under the current directory, nothing run",
          rc == 2 and out == "" and not os.path.exists(mark) and ("not under" in err or "outside the source root" in err),
          "%d %r %r" % (rc, out, err))
    rc, out, err = run([DEVTRACE, "fix", "--verify", "--run-recorded-command", "--root", prog, db], work, timeout=300)
    check("PyTorch: --root names the tree when the command runs elsewhere",
          rc == 0 and "verified" in out, "%d %r %r" % (rc, out, err))
    rc, out, err = run([DEVTRACE, "fix", "--verify", "--run-recorded-command", db], traces)
    check("PyTorch: without it, a file outside the current directory is refused",
          rc == 2 and "not under" in err and out == "", "%d %r %r" % (rc, out, err))

    # facts that are not what the producer writes
    inj = "import os;os.system('touch %s')" % mark
    refused_inconsistent("PyTorch: indent holding code", edited(db, os.path.join(traces, "indent.db"), fact(
        17, "indent", "        %s\n        " % inj, script)), prog)
    rc, out, err = run([DEVTRACE, "fix", "--verify", "--run-recorded-command", os.path.join(traces, "indent.db")],
                       prog)
    check("PyTorch: indent holding code: --verify runs nothing", rc == 2 and not os.path.exists(mark),
          "%d %r %r" % (rc, out, err))
    refused_inconsistent("PyTorch: device expression with a statement", edited(
        db, os.path.join(traces, "dev.db"), fact(17, "device_expr", "device);%s;(device" % inj, script)), prog)
    refused_inconsistent("PyTorch: callee with a statement", edited(db, os.path.join(traces, "call.db"), fact(
        17, "call", "inputs.to(device);%s;inputs.to\tdevice\t0\t17\t34\t1\t0" % inj, script)), prog)
    refused_inconsistent("PyTorch: bound names with a statement", edited(db, os.path.join(traces, "binds.db"), fact(
        16, "binds", "inputs,labels;%s" % inj, script)), prog)
    refused_inconsistent("PyTorch: a loop's body indentation holding code", edited(
        db, os.path.join(traces, "loop.db"), fact(17, "loop", "16 22         %s" % inj, script)), prog)
    # a tensor's name (not a source fact) that is no identifier: no code is written with it
    named = edited(db, os.path.join(traces, "name.db"), lambda d: d.execute(
        "UPDATE names SET name = ? WHERE name = (SELECT id FROM strings WHERE text = 'labels')",
        (sid(d, "labels=__import__('os').system('touch %s')" % mark),)))
    rc, out, err = run([DEVTRACE, "fix", named], prog)
    check("PyTorch: a tensor named with code: no code made of the name", "__import__" not in out,
          "%d %r %r" % (rc, out, err))
    check("PyTorch: nothing the trace held ran", not os.path.exists(mark))


c_part()
if PYTHON:
    py_part()
else:
    print("skip the PyTorch part: no interpreter with torch and the adapter in this build (the C part ran)")
print("%d passed, %d failed" % (sum(results), len(results) - sum(results)))
sys.exit(0 if all(results) else 1)
