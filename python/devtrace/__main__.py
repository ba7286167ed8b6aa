"""``python -m devtrace`` and the wheel's ``devtrace`` command: runs the native devtrace command of
this package with the same arguments. ``devtrace run SCRIPT.py ARGS`` (no ``--``, a Python script,
``-m MODULE`` or ``-c CODE`` as the program) runs it with this interpreter:
``devtrace run -- sys.executable SCRIPT.py ARGS``."""

import os
import sys

# devtrace run's options that take a value (viewer/run.c)
_RUN_VALUE_OPTIONS = ("-o", "--output")


def command_line(args, python=None):
    """The native command's arguments for args (the wheel command's or python -m devtrace's)."""
    python = python or sys.executable
    if not args or args[0] != "run" or "--" in args:
        return list(args)
    i = 1
    while i < len(args) and args[i].startswith("-") and args[i] not in ("-m", "-c"):
        i += 2 if args[i] in _RUN_VALUE_OPTIONS else 1
    if i < len(args) and (args[i].endswith(".py") or args[i] in ("-m", "-c")):
        return list(args[:i]) + ["--", python] + list(args[i:])
    return list(args)


def main():
    from . import native

    try:
        command = native().command
    except FileNotFoundError as e:
        sys.stderr.write("%s\n" % e)
        return 127
    argv = [command] + command_line(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(command, argv)
    except OSError as e:
        sys.stderr.write("devtrace: cannot run %s: %s\n" % (command, e.strerror))
        return 126


if __name__ == "__main__":
    sys.exit(main())
