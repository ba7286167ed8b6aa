#!/usr/bin/env python3
"""Every viewer command on hand-made hostile traces (docs/security.md): a real trace of a C example, edited
with sqlite3 (and its binary's DWARF file names patched in a copy) to name FIFOs, /dev/zero, a 1 GiB file
with no newline, a secret outside the source root, terminal escapes, a recorded command, URI-like trace
names, a cut-short trace. Asserts that no process starts, nothing is written outside -o and the temp dir,
every command ends within seconds, no injected text reaches any output, and each defence says what it
did; also stdout write errors, run -o to a device, and two concurrent run --overwrite.

usage: hostile_traces.py DEVTRACE EXAMPLE_BINARY EXAMPLE_SOURCE WORKDIR
"""
import atexit
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time

DEVTRACE, EXAMPLE, EXAMPLE_SRC, WORK = (os.path.abspath(a) for a in sys.argv[1:5])
TIMEOUT = 20  # seconds a command may take (a sanitized build on a busy 2-core machine included)
SECRET = "SECRET-TOKEN-7f3a"  # in the file outside the source root: never in any output
ESC = "\x1b]0;T\x07\x1b[2J"  # a title change, a bell and a clear screen
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


# ---------------------------------------------------------------- the stage

shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
TMP = os.path.join(WORK, "tmp")  # the viewer's TMPDIR: its private copies go here, and must be gone after
OUT = os.path.join(WORK, "out")  # where -o goes
HOME = os.path.join(WORK, "home")
SHADOW = os.path.join(WORK, "shadowbin")  # first on PATH: a program the viewer would start leaves MARKER
MARKER = os.path.join(WORK, "MARKER-a-process-ran")
for d in (TMP, OUT, HOME, SHADOW):
    os.makedirs(d)
for name in ("sh", "bash", "dash", "python", "python3", "cc", "gcc", "make", "patch", "git", "env", "devtrace",
             "bug_labels_on_cpu", "xdg-open", "sensible-browser", "less", "more", "pager"):
    p = os.path.join(SHADOW, name)
    with open(p, "w") as f:
        f.write("#!/bin/sh\necho \"$0 $*\" >> %s\nexit 0\n" % MARKER)
    os.chmod(p, 0o755)
marker_cmd = os.path.join(SHADOW, "python3")

# short directories: their names replace the example's source directory inside a copy of its binary
SRC = tempfile.mkdtemp(prefix="dt", dir="/tmp")  # the source root the commands run in
OUTSIDE = tempfile.mkdtemp(prefix="do", dir="/tmp")  # outside it: holds the secret
atexit.register(shutil.rmtree, SRC, True)
atexit.register(shutil.rmtree, OUTSIDE, True)

base_env = dict(os.environ)
base_env.pop("DEVTRACE_SOURCE_ROOT", None)  # the default (the current directory) is what is tested
base_env.pop("LD_PRELOAD", None)


def viewer_env():
    env = dict(base_env)
    env.update(PATH=SHADOW + ":" + env.get("PATH", "/usr/bin:/bin"), TMPDIR=TMP, HOME=HOME, DEVTRACE_SIM_CUDA="1")
    env.pop("DISPLAY", None)
    return env


# the real trace
env = dict(base_env, DEVTRACE_SIM_CUDA="1")
BASE = os.path.join(WORK, "base.db")
r = subprocess.run([DEVTRACE, "run", "-q", "-o", BASE, "--", EXAMPLE], cwd=WORK, env=env, capture_output=True,
                   timeout=120)
if r.returncode != 1 or not os.path.exists(BASE):
    sys.exit("the example did not fail with a trace (status %d): %s" % (r.returncode, r.stderr.decode()))

src_text = open(EXAMPLE_SRC).read()
with open(os.path.join(SRC, "good.c"), "w") as f:
    f.write(src_text)
with open(os.path.join(OUTSIDE, "secret.c"), "w") as f:
    f.write("".join(line + " /* " + SECRET + " */\n" for line in src_text.split("\n")))
os.symlink(os.path.join(OUTSIDE, "secret.c"), os.path.join(SRC, "link.c"))
os.mkfifo(os.path.join(SRC, "fifo.c"))
os.symlink("/dev/zero", os.path.join(SRC, "zero.c"))
with open(os.path.join(SRC, "big.c"), "wb") as f:
    f.truncate(1 << 30)  # 1 GiB of NULs, no newline, sparse
ESC_NAME = "e" + ESC + "\n.c"  # a file name with escapes and a newline
with open(os.path.join(SRC, ESC_NAME), "w") as f:
    f.write(src_text)
os.mkfifo(os.path.join(SRC, "fifo.so"))
with open(os.path.join(SRC, "big.so"), "wb") as f:
    f.truncate(5 << 30)  # past the cap on a module (4 GiB)

src_dir, src_base = os.path.split(EXAMPLE_SRC)


def patched_binary(tag, new_dir, new_base):
    """A copy of the example whose DWARF names new_dir/new_base as its source: the directory and file name
    strings overwritten in place, NUL-padded (each string is found by its offset, so a shorter one fits; the
    linker may keep the name as the tail of a longer path, so every copy of it is replaced)."""
    data = bytearray(open(EXAMPLE, "rb").read())
    for old, new in ((src_dir, new_dir), (src_base, new_base)):
        o, n = old.encode() + b"\0", new.encode() + b"\0"
        if len(n) > len(o):
            sys.exit("cannot patch %r over %r: the checkout's path is too short for this test" % (new, old))
        at, hits = 0, 0
        while (at := data.find(o, at)) >= 0:
            data[at:at + len(o)] = n + b"\0" * (len(o) - len(n))
            at += len(o)
            hits += 1
        if not hits:
            sys.exit("%r not found in %s" % (old, EXAMPLE))
    path = os.path.join(WORK, "bin-" + tag)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o755)
    return path


def edit(name, fn):
    path = os.path.join(WORK, name)
    shutil.copy(BASE, path)
    db = sqlite3.connect(path)
    fn(db)
    db.commit()
    db.close()
    for side in ("-wal", "-shm", "-journal"):
        if os.path.exists(path + side):
            os.unlink(path + side)
    return path


def with_source(tag, new_dir, new_base):
    """The trace with its program's source at new_dir/new_base (DWARF and source facts agree)."""
    binary = patched_binary(tag, new_dir, new_base)

    def fn(db):
        db.execute("UPDATE modules SET path = ? WHERE path = ?", (binary, EXAMPLE))
        db.execute("UPDATE strings SET text = ? WHERE text = ?", (os.path.join(new_dir, new_base), EXAMPLE_SRC))
    return edit(tag + ".db", fn)


def with_modules(tag, path):
    return edit(tag + ".db", lambda db: db.execute("UPDATE modules SET path = ?", (path,)))


def escaped_names(db):
    # every name and text a trace holds (not shapes: they are parsed), and the meta the report prints
    db.execute("UPDATE strings SET text = text || ? WHERE text NOT LIKE '[%'", (ESC + "\n\x9b2J",))
    db.execute("UPDATE errors SET message = message || ?", (ESC,))
    for key in ("program", "host", "cwd", "exit_status", "runtime", "tracing_stopped"):
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, "x" + ESC))


def recorded_command(db):
    # the recorded command and its directory name a program that leaves MARKER
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('argv', ?)", ('["%s", "-c", "x"]' % marker_cmd,))
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('program', ?)", (marker_cmd,))
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('cwd', ?)", (SHADOW,))


def cut_short(db):
    # as a full disk leaves it: no end, no exit status, the mismatch never written
    db.execute("DELETE FROM meta WHERE key IN ('complete', 'exit_status', 'end_t', 'end_time_ns', 'events_dropped')")
    db.execute("DELETE FROM errors")
    db.execute("DELETE FROM misc_events WHERE seq >= (SELECT max(seq) - 3 FROM misc_events)")


traces = {
    "good": with_source("good", SRC, "good.c"),
    "outside": with_source("outside", OUTSIDE, "secret.c"),
    "link": with_source("link", SRC, "link.c"),
    "fifo": with_source("fifo", SRC, "fifo.c"),
    "zero": with_source("zero", SRC, "zero.c"),
    "big": with_source("big", SRC, "big.c"),
    "escname": with_source("escname", SRC, ESC_NAME),
    "modfifo": with_modules("modfifo", os.path.join(SRC, "fifo.so")),
    "modzero": with_modules("modzero", "/dev/zero"),
    "modbig": with_modules("modbig", os.path.join(SRC, "big.so")),
    "names": edit("names.db", escaped_names),
    "command": edit("command.db", recorded_command),
    "cut": edit("cut.db", cut_short),
}
# names SQLite would read as URIs: each is a real trace, and a decoy stands where a URI would point
for name in ("w#1.db", "run#1.db", "%41.db", "q?x.db"):
    shutil.copy(BASE, os.path.join(WORK, name))
    traces["uri:" + name] = os.path.join(WORK, name)
for decoy in ("run", "w", "A.db", "q"):
    shutil.copy(traces["cut"], os.path.join(WORK, decoy))


def snapshot():
    """Every file under the places a command could write to, with size and mtime."""
    seen = {}
    for top in (WORK, SRC, OUTSIDE, HOME):
        for root, dirs, files in os.walk(top):
            for n in files + dirs:
                p = os.path.join(root, n)
                st = os.lstat(p)
                seen[p] = (st.st_size, st.st_mtime_ns) if not stat.S_ISDIR(st.st_mode) else (0, 0)
    return seen


def run_cmd(args, cwd=SRC, expect_files=(), stdout=None):
    """One viewer command: (status, output text), after the checks that hold for every command."""
    before = snapshot()
    t0 = time.monotonic()
    try:
        r = subprocess.run([DEVTRACE] + args, cwd=cwd, env=viewer_env(), stdin=subprocess.DEVNULL,
                           stdout=stdout if stdout is not None else subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        fail("%s: still running after %d s" % (args, TIMEOUT))
        return -1, ""
    took = time.monotonic() - t0
    out = (r.stdout or b"") + r.stderr
    for f in expect_files:
        if os.path.exists(f):
            out += open(f, "rb").read()
    text = out.decode("utf-8", "replace")
    what = "%s (%.1f s)" % (" ".join(a.replace(WORK, "W") for a in args), took)
    if b"Sanitizer" in r.stderr or b"runtime error:" in r.stderr:  # the sanitized build: any report fails
        fail("%s: %s" % (what, r.stderr.decode("utf-8", "replace")[-3000:]))
    if r.returncode not in (0, 1, 2):
        fail("%s: exit status %d: %s" % (what, r.returncode, text[-2000:]))
    if os.path.exists(MARKER):
        fail("%s: started a process: %s" % (what, open(MARKER).read()))
        os.unlink(MARKER)
    for bad, why in ((b"\x1b", "an escape"), (b"\x07", "a bell"), (b"\xc2\x9b", "a C1 CSI"), (b"\x9b2J", "a CSI")):
        if bad in out:
            fail("%s: %s from the trace reached the output" % (what, why))
    if SECRET in text and "--source-root" not in args:
        fail("%s: showed the file outside the source root" % what)
    if os.listdir(TMP):
        fail("%s: left %s in its temp dir" % (what, os.listdir(TMP)))
    after = snapshot()
    allowed = {os.path.abspath(f) for f in expect_files}
    for p, v in after.items():
        if p not in allowed and before.get(p) != v:
            fail("%s: wrote %s" % (what, p))
    for f in expect_files:
        if os.path.exists(f):
            os.unlink(f)
    return r.returncode, text


def every_command(trace, extra=()):
    """Every viewer command on one trace; {command: (status, output)}."""
    x = list(extra)
    res = {}
    for name, args, files in (
            ("report", ["report"] + x + [trace], ()),
            ("brief", ["report", "--brief"] + x + [trace], ()),
            ("json", ["report", "--json"] + x + [trace], ()),
            ("show", ["show"] + x + [trace, "11"], ()),
            ("tensors", ["tensors"] + x + [trace], ()),
            ("transfers", ["transfers"] + x + [trace], ()),
            ("chrome", ["export", "--format", "chrome", "-o", os.path.join(OUT, "t.json")] + x + [trace],
             (os.path.join(OUT, "t.json"),)),
            ("html", ["export", "--format", "html", "-o", os.path.join(OUT, "t.html")] + x + [trace],
             (os.path.join(OUT, "t.html"),)),
            ("fix", ["fix"] + x + [trace], ())):
        res[name] = run_cmd(args, expect_files=files)
    return res


def expect(cond, msg):
    if not cond:
        fail(msg)


# ---------------------------------------------------------------- every command on every trace

results = {}
for tag, path in traces.items():
    results[tag] = every_command(path)
# the regular-file and size checks, not only the source root: every file allowed
for tag in ("fifo", "zero", "big", "link", "outside", "modfifo", "modzero", "modbig"):
    results[tag + "/root"] = every_command(traces[tag], ["--source-root", "/"])

# ---------------------------------------------------------------- what each defence says

good = results["good"]
expect("dt_to(batch[0], dev)" in good["report"][1], "good: the report shows no source (the DWARF patch failed?)")
expect(good["fix"][0] == 0 and "+++ good.c\n" in good["fix"][1],
       "good: fix gave no patch: %s" % good["fix"][1][-600:])
for tag in ("outside", "link"):
    rep = results[tag]["report"][1]
    expect("source not available: outside the source root" in rep, "%s: no 'outside the source root': %s" %
           (tag, rep[-800:]))
    expect("source not available" in results[tag]["fix"][1], "%s: fix does not say why: %s" %
           (tag, results[tag]["fix"][1]))
# the secret is shown when the user names its directory: the check above can fail
r = run_cmd(["report", "--source-root", OUTSIDE, traces["outside"]])
expect(SECRET in r[1], "outside: --source-root %s does not show it: %s" % (OUTSIDE, r[1][-600:]))
for tag, why in (("fifo", "not a regular file"), ("zero", "not a regular file"), ("big", "larger than the 8 MiB")):
    rep = results[tag + "/root"]["report"][1]
    expect("source not available: " + why in rep, "%s: the report does not say '%s': %s" % (tag, why, rep[-800:]))
    expect(results[tag + "/root"]["report"][0] == 1, "%s: the report did not go on to its mismatch" % tag)
for tag in ("modfifo", "modzero", "modbig"):
    expect(results[tag]["report"][0] == 1, "%s: report status %d" % (tag, results[tag]["report"][0]))
fixout = results["escname"]["fix"][1]
heads = [line for line in fixout.split("\n") if line.startswith(("--- ", "+++ "))]
expect(len(heads) == 2 and all("\\x1b]0;T\\x07\\x1b[2J\\x0a.c" in h for h in heads),
       "escname: the diff headers are not one escaped line each: %r" % fixout[:600])
brief = results["cut"]["brief"]
expect("incomplete" in brief[1] and "no device mismatch\n" != brief[1],
       "cut: report --brief does not say the trace is incomplete: %r" % brief[1])
expect("incomplete" in results["cut"]["report"][1], "cut: report does not say it is incomplete")
for name in ("w#1.db", "run#1.db", "%41.db", "q?x.db"):
    st = results["uri:" + name]["report"][0]
    expect(st == 1, "%s: report status %d (read as an SQLite URI?): %s" %
           (name, st, results["uri:" + name]["report"][1][-300:]))

# ---------------------------------------------------------------- stdout that cannot be written

with open("/dev/full", "wb") as full:
    for args in (["report", BASE], ["report", "--brief", BASE], ["report", "--json", BASE], ["show", BASE, "11"],
                 ["tensors", BASE], ["transfers", BASE], ["tensors", "--json", BASE], ["transfers", "--json", BASE],
                 ["export", "--format", "chrome", "-o", "-", BASE], ["export", "--format", "html", "-o", "-", BASE],
                 ["fix", "--source-root", os.path.dirname(EXAMPLE_SRC), BASE], ["--help"], ["report", "--help"]):
        st, text = run_cmd(args, stdout=full)
        lines = [line for line in text.split("\n") if line]
        expect(st == 2 and len(lines) == 1 and "devtrace: " in lines[0],
               "%s >/dev/full: status %d, stderr %r" % (" ".join(args), st, text))

# ---------------------------------------------------------------- run -o

env = dict(base_env, DEVTRACE_SIM_CUDA="1")
fifo_out = os.path.join(WORK, "out.fifo")
os.mkfifo(fifo_out)
for target in ("/dev/full", "/dev/null", fifo_out):
    had = os.path.exists(target + ".1")
    r = subprocess.run([DEVTRACE, "run", "-o", target, "--", EXAMPLE], cwd=WORK, env=env, capture_output=True,
                       timeout=120)
    expect(r.returncode == 125 and b"not a regular file" in r.stderr,
           "run -o %s: status %d, %s" % (target, r.returncode, r.stderr.decode()[-300:]))
    expect(had or not os.path.exists(target + ".1"), "run -o %s wrote %s.1" % (target, target))
    expect(os.path.exists(target) and not stat.S_ISREG(os.stat(target).st_mode), "run -o %s removed it" % target)

# two run --overwrite -o same.db at once: one is refused, the other's trace is whole
same = os.path.join(WORK, "same.db")
slow = ["/bin/sh", "-c", "sleep 2; exec \"$0\"", EXAMPLE]
for attempt in range(3):
    procs = [subprocess.Popen([DEVTRACE, "run", "--overwrite", "-o", same, "--"] + slow, cwd=WORK, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    codes = sorted(p.returncode for p in procs)
    refused = [o[1].decode() for p, o in zip(procs, outs) if p.returncode == 125]
    expect(codes == [1, 125] and refused and "another 'devtrace run' is writing" in refused[0],
           "concurrent --overwrite (try %d): statuses %s: %s" % (attempt, codes, [o[1].decode()[-300:] for o in outs]))
    r = subprocess.run([DEVTRACE, "report", "--brief", same], env=env, capture_output=True, timeout=60)
    expect(r.returncode == 1, "concurrent --overwrite: the kept trace does not hold the mismatch: %s" %
           r.stderr.decode())
    leftover = [n for n in os.listdir(WORK) if n.startswith((".same.db", "same.db."))]
    expect(not leftover, "concurrent --overwrite left %s" % leftover)
# one after the other, --overwrite still overwrites
r = subprocess.run([DEVTRACE, "run", "-q", "--overwrite", "-o", same, "--", EXAMPLE], cwd=WORK, env=env,
                   capture_output=True, timeout=120)
expect(r.returncode == 1 and not os.path.exists(os.path.join(WORK, "same.1.db")),
       "run --overwrite alone: status %d" % r.returncode)

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("hostile traces: %d traces, every command: nothing ran, hung, leaked or was written" % len(traces))
