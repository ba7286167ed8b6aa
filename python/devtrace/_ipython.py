"""devtrace's IPython magics (``%load_ext devtrace``): ``%%devtrace [-o FILE] [--overwrite]
[--no-report]`` traces one cell and prints the short report under it on a device mismatch;
``%devtrace start [-o FILE] [--overwrite]``, ``%devtrace stop`` and ``%devtrace report [FILE]``
trace several cells. A kernel writes one trace (docs/python.md)."""

import shlex
import sys

import devtrace


def _options(line, allowed):
    """The magic's line as (path, overwrite, report, rest); ValueError on a bad option."""
    path, overwrite, report, rest = None, False, True, []
    words = shlex.split(line)
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("-o", "--output"):
            if i + 1 >= len(words):
                raise ValueError("%s needs a file name" % w)
            path = words[i + 1]
            i += 2
            continue
        if w == "--overwrite":
            overwrite = True
        elif w == "--no-report" and "--no-report" in allowed:
            report = False
        elif w.startswith("-"):
            raise ValueError("unknown option %s" % w)
        else:
            rest.append(w)
        i += 1
    return path, overwrite, report, rest


def register(ip):
    from IPython.core.error import UsageError

    def cell_magic(line, cell):
        try:
            path, overwrite, report, rest = _options(line, ("--no-report",))
        except ValueError as e:
            raise UsageError("%%devtrace: " + str(e) + "; usage: %%devtrace [-o FILE] [--overwrite] [--no-report]")
        if rest:
            raise UsageError("%%devtrace: unexpected %s; usage: %%devtrace [-o FILE] [--overwrite] [--no-report]"
                             % rest[0])
        block = devtrace.trace(path, overwrite=overwrite, report=report)
        try:
            block.__enter__()
        except (RuntimeError, OSError) as e:  # a second trace in this kernel, a bad path: one line
            raise UsageError(str(e)) from None
        try:
            ip.run_cell(cell, store_history=False)  # its error is shown as any cell's
        finally:
            block.__exit__(None, None, None)

    def line_magic(line):
        usage = "usage: %devtrace start [-o FILE] [--overwrite] | stop | report [FILE]"
        try:
            path, overwrite, _, rest = _options(line, ())
        except ValueError as e:
            raise UsageError("%devtrace: " + str(e) + "; " + usage)
        if not rest or rest[0] not in ("start", "stop", "report") or len(rest) > 2:
            raise UsageError("%devtrace: " + usage)
        if rest[0] == "start":
            try:
                got = devtrace.start(path, overwrite=overwrite)
            except (RuntimeError, OSError) as e:
                raise UsageError(str(e)) from None
            if got:
                print("devtrace: tracing into %s" % got)
        elif rest[0] == "stop":
            got = devtrace.stop()
            if got is None:
                raise UsageError("%devtrace stop: not tracing (%devtrace start first)")
            if devtrace.mismatches(got):
                devtrace._print_report(got)
            else:
                print("devtrace: trace written to %s" % got)
        else:
            target = rest[1] if len(rest) > 1 else devtrace._finished
            if not target:
                raise UsageError("%devtrace report: no trace yet; give its file")
            devtrace.report(target, file=sys.stdout)

    ip.register_magic_function(cell_magic, "cell", "devtrace")
    ip.register_magic_function(line_magic, "line", "devtrace")
