"""Builds the devtrace wheel: setuptools packs the devtrace Python package (python/devtrace), and
this file's build_py step builds the native parts with CMake (the command, the tracer
libdevtrace.so, the PyTorch adapter's extension) and puts them, with the adapter's Python files,
into devtrace/_native, where the command finds its tracer and the tracer its bootstrap.

    /usr/bin/python3 -m build --wheel --no-isolation     # offline: Debian's python3-build

DEVTRACE_CMAKE_ARGS adds arguments to CMake's configure step (say -DDEVTRACE_LIBTORCH=ON);
CMAKE_BUILD_PARALLEL_LEVEL sets the build's jobs (default: the CPUs)."""

import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # the wheel package is needed to build a wheel, not to read this file
    bdist_wheel = None

ROOT = os.path.dirname(os.path.abspath(__file__))

# what the wheel carries under devtrace/_native: (built file, its name there); and the adapter's
# Python files from the sources (sitecustomize.py and every devtrace_torch/*.py), under python/
NATIVE = [
    ("viewer/devtrace", "devtrace"),
    ("tracer/libdevtrace.so", "libdevtrace.so"),
    ("adapters/pytorch/devtrace_torch/_probes.abi3.so", "python/devtrace_torch/_probes.abi3.so"),
]
ADAPTER = os.path.join(ROOT, "adapters", "pytorch")


def adapter_files():
    names = ["sitecustomize.py"] + sorted(os.path.join("devtrace_torch", n)
                                          for n in os.listdir(os.path.join(ADAPTER, "devtrace_torch"))
                                          if n.endswith(".py"))
    return [(os.path.join(ADAPTER, n), os.path.join("python", n)) for n in names]


class build_native(build_py):
    """build_py, then CMake: configure (no tests, no libtorch observer, no CUDA runtime: the wheel
    carries none of them), build the three targets, copy them into the package."""

    def run(self):
        super().run()
        build_temp = os.path.join(self.get_finalized_command("build").build_temp, "cmake")
        os.makedirs(build_temp, exist_ok=True)
        configure = ["cmake", "-S", ROOT, "-B", build_temp, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                     "-DDEVTRACE_TESTS=OFF", "-DDEVTRACE_LIBTORCH=OFF", "-DDEVTRACE_CUDA=OFF",
                     "-DPython3_EXECUTABLE=" + sys.executable]
        configure += shlex.split(os.environ.get("DEVTRACE_CMAKE_ARGS", ""))
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        build = ["cmake", "--build", build_temp, "-j", jobs, "--target", "devtrace-cli", "devtrace",
                 "devtrace_torch_probes"]
        for cmd in (configure, build):
            self.announce(" ".join(shlex.quote(c) for c in cmd), level=2)
            if subprocess.call(cmd) != 0:
                sys.exit("devtrace: `%s` failed; the native parts need cmake, a C compiler, pkg-config, "
                         "libsqlite3-dev, libdw-dev, libmd-dev and python3-dev (docs/python.md)" % " ".join(cmd[:2]))
        dest = os.path.join(self.build_lib, "devtrace", "_native")
        files = [(os.path.join(build_temp, rel), name) for rel, name in NATIVE] + adapter_files()
        for path, name in files:
            if not os.path.exists(path):
                sys.exit("devtrace: %s was not built (is python3-dev installed? the adapter needs its headers)"
                         % path)
            os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
            shutil.copy2(path, os.path.join(dest, name))


class NativeDistribution(Distribution):
    """Native files inside the package: the wheel is a platform wheel, its files installed as
    platlib (the root of the wheel), not .data/purelib."""

    def has_ext_modules(self):
        return True


cmdclass = {"build_py": build_native}
if bdist_wheel is not None:
    class bdist_native_wheel(bdist_wheel):
        """A platform wheel that serves every Python 3.10+: the command and the tracer are native
        programs, and the extension uses CPython's limited API (abi3)."""

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = bdist_native_wheel

setup(distclass=NativeDistribution, cmdclass=cmdclass, options={"build": {"build_base": os.path.join("build", "python-wheel")}})
