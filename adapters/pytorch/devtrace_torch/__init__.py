"""devtrace's PyTorch adapter: records every tensor a PyTorch program makes,
every op with its operands, every transfer, names and device mismatches,
through devtrace's probe ABI into the preloaded tracer (libdevtrace.so).

It is installed by the bootstrap ``sitecustomize`` that ``devtrace run``
puts on ``PYTHONPATH``, when the program imports ``torch``; the program is
never edited. Nothing here raises into the program: a failure to install
prints one warning and leaves the program untraced at the tensor level
(native tracing goes on). ``DEVTRACE_PYTORCH=0`` keeps it out.
"""

import os
import sys

_installed = False


def _warn(msg):
    if os.environ.get("DEVTRACE_QUIET", "0") in ("", "0"):
        sys.stderr.write("devtrace: %s\n" % msg)


def install(torch):
    """Installs the recorder into this process's ``torch``; True when it records."""
    global _installed
    if _installed:
        return True
    if os.environ.get("DEVTRACE_PYTORCH", "1") == "0":
        return False
    overrides = getattr(torch, "overrides", None)
    if overrides is None or not hasattr(overrides, "TorchFunctionMode"):
        _warn("PyTorch %s has no torch.overrides.TorchFunctionMode (1.13 or newer has): its tensors are not "
              "recorded; native tracing goes on" % getattr(torch, "__version__", "?"))
        return False
    try:
        from . import recorder
    except Exception as e:  # an unsupported torch, or the extension did not load
        _warn("PyTorch %s: the tensor recorder did not load (%s: %s); native tracing goes on"
              % (getattr(torch, "__version__", "?"), type(e).__name__, e))
        return False
    try:
        _installed = recorder.install(torch)
    except Exception as e:
        _warn("PyTorch %s: the tensor recorder could not be installed (%s: %s); native tracing goes on"
              % (getattr(torch, "__version__", "?"), type(e).__name__, e))
        return False
    return _installed


def mismatches():
    """How many device mismatches the recorder has recorded in this process so far (0 when it is
    not installed): the pytest plugin reads it before and after each test."""
    rec = getattr(sys.modules.get(__name__ + ".recorder"), "_rec", None)
    return getattr(rec, "mismatches", 0) if _installed else 0
