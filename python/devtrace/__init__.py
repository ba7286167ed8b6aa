"""devtrace for Python: the ``devtrace`` command of the wheel, and an in-process API that traces a
block of a running program (a script, a Jupyter kernel) without ``LD_PRELOAD``::

    import devtrace
    with devtrace.trace("run.db"):
        train()

The tracer (libdevtrace.so) is loaded into this process with ``dlopen(RTLD_GLOBAL)`` before the
PyTorch adapter (devtrace_torch, kept as ``devtrace run`` uses it) resolves the probe functions;
on a device mismatch inside the block the short report is printed. What works in-process and what
only under ``devtrace run``: docs/python.md. IPython and Jupyter: ``%load_ext devtrace``.
"""

import ctypes
import glob
import os
import shutil
import sqlite3
import subprocess
import sys

__all__ = ["trace", "start", "stop", "report", "tracing", "native"]

# The report printed after a block with a device mismatch: the short form, which ends by naming
# the command for the whole report.
REPORT_ARGS = ("report", "--brief")


class Native:
    """Where the pieces of this devtrace are: the command, the tracer and the adapter's bootstrap
    directory (its sitecustomize.py and devtrace_torch/)."""

    def __init__(self, command, tracer, bootstrap):
        self.command = command  # the devtrace executable
        self.tracer = tracer  # libdevtrace.so
        self.bootstrap = bootstrap  # the directory devtrace run puts on PYTHONPATH, or None

    def __repr__(self):
        return "Native(command=%r, tracer=%r, bootstrap=%r)" % (self.command, self.tracer, self.bootstrap)


def native():
    """The devtrace this package drives: the one inside the wheel (devtrace/_native), else the
    ``devtrace`` on PATH (a build tree or an install prefix, found as the command finds its tracer;
    DEVTRACE_LIB and DEVTRACE_PYTHON_BOOTSTRAP override, as for ``devtrace run``). Raises
    FileNotFoundError when there is none."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native")
    command = os.path.join(here, "devtrace")
    if not os.access(command, os.X_OK):
        command = _native_on_path()
    if not command:
        raise FileNotFoundError("devtrace: no devtrace command: install the wheel (pip install devtrace-*.whl), "
                                "or put a built or installed devtrace on PATH")
    bindir = os.path.dirname(command)
    tracer = os.environ.get("DEVTRACE_LIB") or None
    if not tracer:
        cands = [os.path.join(bindir, "libdevtrace.so"), os.path.join(bindir, "..", "tracer", "libdevtrace.so")]
        cands += sorted(glob.glob(os.path.join(bindir, "..", "lib", "*", "devtrace", "libdevtrace.so")))
        cands.append(os.path.join(bindir, "..", "lib", "devtrace", "libdevtrace.so"))
        tracer = next((os.path.realpath(c) for c in cands if os.path.exists(c)), None)
    if not tracer or not os.path.exists(tracer):
        raise FileNotFoundError("devtrace: no libdevtrace.so beside %s (nor in DEVTRACE_LIB); reinstall devtrace"
                                % command)
    bootstrap = os.environ.get("DEVTRACE_PYTHON_BOOTSTRAP") or None
    if not bootstrap:
        d = os.path.dirname(tracer)
        for cand in (os.path.join(d, "python"), os.path.join(d, "..", "adapters", "pytorch")):
            if os.path.exists(os.path.join(cand, "sitecustomize.py")):
                bootstrap = os.path.realpath(cand)
                break
    return Native(command, tracer, bootstrap)


def _native_on_path():
    """The first devtrace on PATH that is the native command (an ELF file), not the console
    script of a wheel installed elsewhere; None when there is none."""
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cand = shutil.which("devtrace", path=d or ".")
        if not cand:
            continue
        try:
            with open(cand, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    return os.path.realpath(cand)
        except OSError:
            pass
    return None


# ---------------------------------------------------------------- the in-process tracer

_lib = None  # the tracer, once loaded into this process
_path = None  # the trace being written, while tracing
_finished = None  # the trace this process wrote and finished (a process has one)
_saved_env = {}  # the environment the tracer was started with, to restore at stop()


def tracing():
    """The trace this process is writing now, or None."""
    return _path


def _preloaded():
    """This process runs under ``devtrace run`` (or LD_PRELOAD): the tracer is there already."""
    try:
        return getattr(ctypes.CDLL(None), "tr_api_trace_path", None) is not None
    except OSError:
        return False


def start(path=None, overwrite=False):
    """Starts tracing this process into path (default: DEVTRACE_OUTPUT, else devtrace.PROGRAM.PID.db
    here, as ``devtrace run``): loads the tracer, and the PyTorch recorder when torch is imported
    (now or later). Returns the trace's path, or None when the tracer could not start (it said why
    in one line; the program goes on untraced). A process writes one trace: a second start() after
    stop() raises RuntimeError (restart the kernel, or use ``devtrace run``). Under ``devtrace run``
    the whole process is traced already: start() returns that trace's path and changes nothing."""
    global _lib, _path
    if _path:
        raise RuntimeError("devtrace: tracing into %s already; call devtrace.stop() first" % _path)
    if _finished:
        raise RuntimeError("devtrace: this process wrote its trace already (%s), and a process writes one: "
                           "restart the kernel or the program to trace again" % _finished)
    if _lib is None and _preloaded():
        p = ctypes.CDLL(None).tr_api_trace_path
        p.restype = ctypes.c_char_p
        got = p()
        return os.fsdecode(got) if got else None
    if path is not None:
        path = os.path.abspath(os.fspath(path))
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            raise FileNotFoundError("devtrace: cannot write %s: no directory %s" % (path, parent))
        if os.path.isdir(path):
            raise IsADirectoryError("devtrace: %s is a directory; give the trace's file name" % path)
    nat = native()
    env = {}  # without a path or overwrite, DEVTRACE_OUTPUT and DEVTRACE_OVERWRITE count as set
    if path is not None:
        env["DEVTRACE_OUTPUT"] = path
    if overwrite:
        env["DEVTRACE_OVERWRITE"] = "1"
    for k, v in env.items():
        _saved_env[k] = os.environ.get(k)
        os.environ[k] = v  # read by the tracer's constructor, and again in a forked child
    try:
        # RTLD_GLOBAL: the adapter's extension finds the dtp_* probes with dlsym(RTLD_DEFAULT)
        _lib = ctypes.CDLL(nat.tracer, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
    except OSError as e:
        _restore_env()
        raise RuntimeError("devtrace: cannot load the tracer %s into this process (%s); trace the program "
                           "with `devtrace run` instead" % (nat.tracer, e)) from None
    _lib.tr_api_trace_path.restype = ctypes.c_char_p
    _lib.tr_api_finish.restype = ctypes.c_int
    _lib.tr_api_untraced_children()  # a forked child could not finish its trace (docs/python.md)
    got = _lib.tr_api_trace_path()
    if not got:  # the tracer said why (one warning line): the program goes on untraced
        _restore_env()
        return None
    _path = os.fsdecode(got)
    _load_recorder(nat)
    return _path


def stop():
    """Finishes the trace (as at exit: the last events, the indexes) and returns its path; tracing is
    off for the rest of the process (the PyTorch recorder stays installed and records nothing).
    None when this process was not tracing through start()."""
    global _path, _finished
    if not _path:
        return None
    path, _path = _path, None
    _finished = path
    try:
        _lib.tr_api_finish()
    finally:
        _restore_env()
    return path


def _restore_env():
    for k, v in _saved_env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    _saved_env.clear()


def _load_recorder(nat):
    """devtrace_torch from the bootstrap directory, as ``devtrace run``'s sitecustomize loads it:
    installed now when torch is imported, else when the program imports it."""
    if nat.bootstrap is None or os.environ.get("DEVTRACE_PYTORCH", "1") == "0":
        return
    mod = sys.modules.get("devtrace_torch")
    if mod is None:
        import importlib.util

        init = os.path.join(nat.bootstrap, "devtrace_torch", "__init__.py")
        spec = importlib.util.spec_from_file_location("devtrace_torch", init,
                                                      submodule_search_locations=[os.path.dirname(init)])
        mod = importlib.util.module_from_spec(spec)
        sys.modules["devtrace_torch"] = mod
        try:
            spec.loader.exec_module(mod)
        except Exception as e:
            del sys.modules["devtrace_torch"]
            sys.stderr.write("devtrace: the PyTorch adapter at %s did not load (%s: %s); native tracing goes on\n"
                             % (init, type(e).__name__, e))
            return
    if "torch" in sys.modules:
        mod.install(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchImportHook(mod))


class _TorchImportHook:
    """Installs the recorder once the program has imported torch (a meta path finder that steps
    aside after the first import of torch)."""

    def __init__(self, adapter):
        self.adapter = adapter

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        inner, adapter = spec.loader.exec_module, self.adapter

        def exec_module(module):
            inner(module)
            adapter.install(module)

        spec.loader.exec_module = exec_module
        return spec


# ---------------------------------------------------------------- the report

def mismatches(path):
    """How many device mismatches the finished trace at path recorded (opened read-only and
    immutable: nothing is written next to it)."""
    uri = "file:%s?mode=ro&immutable=1" % os.path.abspath(path).replace("?", "%3f").replace("#", "%23")
    db = sqlite3.connect(uri, uri=True)
    try:
        return db.execute("SELECT count(*) FROM v_errors WHERE what = 'device_mismatch'").fetchone()[0]
    finally:
        db.close()


def report(path, *args, file=None):
    """Runs ``devtrace report [ARGS] PATH`` and writes its output to file (sys.stderr by default,
    which a notebook shows under the cell). Returns the command's exit status."""
    out = subprocess.run([native().command, "report", *args, os.fspath(path)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    (file or sys.stderr).write(out.stdout)
    return out.returncode


class trace:
    """``with devtrace.trace("run.db"):`` traces the block (start() and stop()); on a device
    mismatch inside it the short report is printed to sys.stderr (report=False: not). The block's
    exception, if any, goes on as it would have. ``as`` gives the trace's path."""

    def __init__(self, path=None, overwrite=False, report=True):
        self.path = path
        self.overwrite = overwrite
        self.report = report

    def __enter__(self):
        self.path = start(self.path, overwrite=self.overwrite)
        return self.path

    def __exit__(self, etype, value, tb):
        if _lib is None or self.path is None:  # under devtrace run, or the tracer did not start
            return False
        path = stop()
        if path is None:
            return False
        sys.stderr.flush()
        try:
            found = self.report and mismatches(path) > 0
        except sqlite3.Error as e:
            sys.stderr.write("devtrace: cannot read %s (%s)\n" % (path, e))
            found = False
        if found:
            _print_report(path)
        else:
            sys.stderr.write("devtrace: trace written to %s\n" % path)
        return False


def _print_report(path):
    report(path, *REPORT_ARGS[1:])


def load_ipython_extension(ipython):
    """``%load_ext devtrace``: the %%devtrace cell magic and the %devtrace line magic."""
    from . import _ipython

    _ipython.register(ipython)
