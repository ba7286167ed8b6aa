"""devtrace's bootstrap for Python programs run by ``devtrace run``.

``devtrace run`` puts this file's directory first on ``PYTHONPATH``, so
Python imports it at start-up as ``sitecustomize``. It then:

1. takes its own directory off ``sys.path`` (the program sees the path it
   would have had) and runs the ``sitecustomize`` that would otherwise have
   run, if there is one, as ``site`` would;
2. waits for the program to import ``torch``: only then is the tensor
   recorder (``devtrace_torch``) loaded, so Python programs that never
   import torch pay one import hook and nothing else.

``DEVTRACE_PYTORCH=0`` turns the recorder off. Nothing here raises into the
program: any failure prints one warning line.
"""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _warn(msg):
    if os.environ.get("DEVTRACE_QUIET", "0") in ("", "0"):
        sys.stderr.write("devtrace: %s\n" % msg)


def _chain_user_sitecustomize():
    """Runs the sitecustomize this one shadows, as site.execsitecustomize would."""
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    me = sys.modules.pop("sitecustomize", None)
    try:
        import importlib

        importlib.import_module("sitecustomize")
    except ImportError as e:
        if getattr(e, "name", None) != "sitecustomize":
            _print_site_error()
    except Exception:
        _print_site_error()
    finally:
        if "sitecustomize" not in sys.modules and me is not None:
            sys.modules["sitecustomize"] = me


def _print_site_error():
    # what site.py prints for a failing sitecustomize, and then goes on
    err = sys.exc_info()[1]
    if sys.flags.verbose:
        sys.excepthook(*sys.exc_info())
    else:
        sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s\n"
                         % (type(err).__name__, err))


def _load_adapter(torch):
    import importlib.util

    path = os.path.join(_here, "devtrace_torch", "__init__.py")
    try:
        spec = importlib.util.spec_from_file_location(
            "devtrace_torch", path, submodule_search_locations=[os.path.dirname(path)])
        mod = importlib.util.module_from_spec(spec)
        sys.modules["devtrace_torch"] = mod
        spec.loader.exec_module(mod)
        mod.install(torch)
    except Exception as e:
        _warn("the PyTorch adapter at %s did not load (%s: %s); native tracing goes on"
              % (path, type(e).__name__, e))


class _TorchImportHook:
    """A meta path finder that runs the adapter once torch has been imported."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)  # once, and never in the way again
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        inner = spec.loader.exec_module

        def exec_module(module):
            inner(module)
            _load_adapter(module)

        try:
            spec.loader.exec_module = exec_module
        except Exception:
            return spec
        return spec


def _main():
    _chain_user_sitecustomize()
    if os.environ.get("DEVTRACE_PYTORCH", "1") == "0":
        return
    if "torch" in sys.modules:
        _load_adapter(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchImportHook())


try:
    _main()
except Exception as _e:  # never into the program
    _warn("the Python bootstrap failed (%s: %s)" % (type(_e).__name__, _e))
