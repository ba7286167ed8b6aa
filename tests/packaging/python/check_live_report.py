"""What the pytest plugin stands on, with any torch (ctest live-report; Debian's 1.13 here, no pytest):
a process traced in-process (devtrace.start) on a simulated GPU catches two device mismatches; after
tr_api_flush(), `devtrace report --brief` on its live trace reads both when the writer asks
(DEVTRACE_READ_LIVE=<its pid>), refuses it otherwise ("still being written"), and the recorder's count
(devtrace_torch.mismatches()) says 2. The finished trace then reports the same two.

usage: check_live_report.py BUILD_DIR SOURCE_DIR WORK_DIR
Prints one line per check and "N passed, N failed"; exits 1 on a failure."""

import os
import subprocess
import sys

BUILD, SRC, WORK = (os.path.abspath(a) for a in sys.argv[1:4])
os.makedirs(WORK, exist_ok=True)
os.environ["PATH"] = os.path.join(BUILD, "viewer") + os.pathsep + os.environ.get("PATH", "")
os.environ["DEVTRACE_SIM_CUDA"] = "1"
sys.path.insert(0, os.path.join(SRC, "python"))
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + detail), flush=True)


def brief(path, live):
    env = dict(os.environ)
    env.pop("DEVTRACE_READ_LIVE", None)
    if live:
        env["DEVTRACE_READ_LIVE"] = str(os.getpid())
    p = subprocess.run([os.path.join(BUILD, "viewer", "devtrace"), "report", "--brief", path], cwd=WORK, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    return p.returncode, p.stdout


import devtrace  # noqa: E402  (after the path above)

path = os.path.join(WORK, "live.db")
got = devtrace.start(path, overwrite=True)
check("devtrace.start() traces this process", got == path, repr(got))
import torch  # noqa: E402  (the recorder is installed when torch is imported)

w = torch.randn(3, 3).to("cuda")
for i in range(2):
    x = torch.randn(3)  # left on the cpu
    try:
        w @ x
    except RuntimeError:
        pass
count = sys.modules["devtrace_torch"].mismatches()
check("the recorder counted 2 mismatches", count == 2, repr(count))
check("tr_api_flush() commits them", devtrace._lib.tr_api_flush() == 0)
rc, out = brief(path, live=True)
check("report --brief reads the live trace when its writer asks (exit 1, two mismatches)",
      rc == 1 and out.count("\nerror: device mismatch in matmul") + out.startswith("error: device mismatch in matmul") == 2
      and "the odd one out: 'other' \"x\" on cpu" in out, "exit %d\n%s" % (rc, out))
rc, out = brief(path, live=False)
check("without DEVTRACE_READ_LIVE a live trace is refused (exit 2)", rc == 2 and "still being written" in out,
      "exit %d\n%s" % (rc, out))
devtrace.stop()
rc, out = brief(path, live=False)
check("the finished trace reports the same two", rc == 1 and out.count("error: device mismatch in matmul") == 2,
      "exit %d\n%s" % (rc, out))
failed = results.count(False)
print("%d passed, %d failed" % (len(results) - failed, failed))
sys.exit(1 if failed else 0)
