"""devtrace's pytest plugin, installed with the wheel (entry point ``pytest11``: ``devtrace``):
``pytest --devtrace`` traces the test session in-process with the recorder (devtrace.start()), with N
simulated GPUs when ``--devtrace-sim-cuda N`` is given, and a test that fails on a device mismatch gets
devtrace's short answer (``devtrace report --brief``: the odd operand, where it was made, the fix) as a
section of its failure report. Without ``--devtrace`` (or ``--devtrace-sim-cuda``) it only adds its
options. What it does not do: trace processes the tests start (the in-process tracer's limits,
docs/python.md); docs/trainers.md has the CI recipe.
"""

import ctypes
import os
import subprocess
import sys

import pytest

SECTION = "devtrace: device mismatch"
DEFAULT_TRACE = "devtrace-pytest.db"

_session = None  # this process's traced session, once started


def pytest_addoption(parser):
    group = parser.getgroup("devtrace", "devtrace (tensor device-placement bugs)")
    group.addoption("--devtrace", action="store_true", default=False,
                    help="trace the test session with devtrace; a test that fails on a device mismatch gets "
                         "devtrace's short answer (odd operand, where it was made, the fix) in its report")
    group.addoption("--devtrace-sim-cuda", type=int, default=None, metavar="N",
                    help="N simulated GPUs for a CPU-only PyTorch (DEVTRACE_SIM_CUDA=N), so the tests take their "
                         "GPU path; implies --devtrace")
    group.addoption("--devtrace-output", default=None, metavar="PATH",
                    help="the session's trace (default: %s in the directory pytest was started in); replaced "
                         "each session" % DEFAULT_TRACE)


class _Session:
    """The session's trace, and the recorder's count of device mismatches at the last report made."""

    def __init__(self, path, lib, cwd, command):
        self.path = path  # the trace being written
        self.lib = lib  # the tracer (its tr_api_flush)
        self.cwd = cwd  # where pytest was started: the report's paths are relative to it
        self.command = command  # the devtrace executable
        self.seen = 0  # mismatches recorded before the current test phase

    @staticmethod
    def recorded():
        """The recorder's count of device mismatches in this process (0 before torch is imported)."""
        count = getattr(sys.modules.get("devtrace_torch"), "mismatches", None)
        try:
            return count() if count else 0
        except Exception:
            return 0

    def answers(self, k):
        """The short answers to the last k mismatches of the live trace, as `devtrace report --brief` gives
        them, and the line naming the command for the whole report; None when the report says nothing."""
        flush = getattr(self.lib, "tr_api_flush", None)
        if flush is not None:
            flush()  # everything recorded so far committed, so that the report sees this test's mismatch
        try:
            env = dict(os.environ, DEVTRACE_READ_LIVE=str(os.getpid()))  # the viewer reads a live trace so only
            out = subprocess.run([self.command, "report", "--brief", self.path], cwd=self.cwd, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as e:
            return "devtrace: cannot run `devtrace report` on %s: %s" % (self.path, e)
        blocks, tail = _blocks(out.stdout)
        if not blocks:
            return out.stdout.strip() or None
        more = [l for l in tail if l.startswith("for the whole chain")]
        return "\n\n".join(blocks[-k:]) + ("\n\n" + "\n".join(more) if more else "")


def _blocks(text):
    """A brief report's mismatches (each from its "error:" line to the blank line after it), and the lines
    after the last one."""
    blocks, cur, tail = [], None, []
    for line in text.splitlines():
        if line.startswith("error: "):
            cur = [line]
            blocks.append(cur)
        elif cur is not None and line.strip():
            cur.append(line)
        else:
            cur = None
            if blocks and line.strip():
                tail.append(line)
    return ["\n".join(b) for b in blocks], tail


def _option(config, name):
    ns = getattr(config, "known_args_namespace", None)  # what pytest parsed before the conftests load
    value = getattr(ns, name, None) if ns is not None else None
    return value if value is not None else config.getoption(name, None)


def _start(config):
    """Starts tracing this process when asked; a devtrace that cannot start stops pytest with one line."""
    global _session
    if _session is not None:
        return
    sim = _option(config, "devtrace_sim_cuda")
    if not _option(config, "devtrace") and sim is None:
        return
    import devtrace

    cwd = str(getattr(getattr(config, "invocation_params", None), "dir", None) or os.getcwd())
    path = _option(config, "devtrace_output") or os.path.join(cwd, DEFAULT_TRACE)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:  # each pytest-xdist worker is a process of its own: a trace of its own
        stem, ext = os.path.splitext(path)
        path = "%s.%s%s" % (stem, worker, ext or ".db")
    if sim is not None:
        if sim < 1:
            raise pytest.UsageError("--devtrace-sim-cuda: give 1 or more simulated GPUs (got %d)" % sim)
        # read by the recorder when it is installed: by start() below when torch is imported already,
        # else when the tests import it
        os.environ["DEVTRACE_SIM_CUDA"] = str(sim)
    try:
        nat = devtrace.native()
        got = devtrace.start(os.path.abspath(path), overwrite=True)
    except (FileNotFoundError, RuntimeError, OSError) as e:
        raise pytest.UsageError("--devtrace: %s" % e)
    if got is None:
        raise pytest.UsageError("--devtrace: the tracer did not start (it said why above)")
    lib = devtrace._lib if devtrace._lib is not None else ctypes.CDLL(None)  # under `devtrace run`: preloaded
    _session = _Session(got, lib, cwd, nat.command)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    _start(early_config)  # before the conftests import torch: the recorder sees every tensor


def pytest_configure(config):
    _start(config)  # registered too late for the hook above (by a conftest's pytest_plugins)


def pytest_runtest_setup(item):
    if _session is None:
        return
    _session.seen = _session.recorded()
    for name, mod in list(sys.modules.items()):
        if name == "devtrace_torch" or name.startswith("devtrace_torch."):
            # the recorder's and the simulator's frames are not the test's: pytest leaves them out of its
            # tracebacks, which then end in torch as on a GPU
            setattr(mod, "__tracebackhide__", True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if _session is None:
        return
    now = _session.recorded()
    new, _session.seen = now - _session.seen, now
    rep = outcome.get_result()
    if not rep.failed or new <= 0 or call.excinfo is None:
        return
    text = _session.answers(new)
    if not text:
        return
    if hasattr(rep.longrepr, "addsection"):
        rep.longrepr.addsection(SECTION, text)  # printed under the traceback; kept by junitxml and xdist
    else:
        rep.sections.append((SECTION, text))


def pytest_terminal_summary(terminalreporter):
    if _session is not None:
        rel = os.path.relpath(_session.path, _session.cwd)
        terminalreporter.write_line("devtrace: the session's trace: devtrace report %s"
                                    % (_session.path if rel.startswith("..") else rel))


def pytest_unconfigure(config):
    global _session
    if _session is None:
        return
    import devtrace

    if devtrace.tracing():
        devtrace.stop()  # the trace finished as at exit: its indexes, the last events
    _session = None
