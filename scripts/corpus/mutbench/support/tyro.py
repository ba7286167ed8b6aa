"""A stand-in for tyro.cli (the benchmark's cleanrl programs): the dataclass with `--name value` overrides from
sys.argv (dashes or underscores), each converted to its field's default's type."""

import dataclasses
import sys


def cli(cls):
    obj = cls()
    argv = sys.argv[1:]
    for i in range(0, len(argv) - 1, 2):
        key = argv[i].lstrip("-").replace("-", "_")
        cur = getattr(obj, key)
        val = argv[i + 1]
        if isinstance(cur, bool):
            val = val.lower() in ("1", "true", "yes")
        elif cur is not None:
            val = type(cur)(val)
        setattr(obj, key, val)
    return obj


assert dataclasses  # the programs pass dataclasses; nothing else is needed here
