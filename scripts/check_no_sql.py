#!/usr/bin/env python3
"""Fails when a file of the diagnosis that is not the model runs SQL: the rules (viewer/rules/*.c) read the model
only, and the code writer (viewer/code.c) turns a fix into code from what the model loaded (issue 40: the model
and its facts, viewer/model.c and viewer/facts.c, are the only readers of the trace in the diagnosis).

usage: check_no_sql.py SOURCE_DIR
Prints each call of SQLite or of vw_prep (file:line) in those files and exits 1 when there is one.
"""

import glob
import os
import re
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__.strip().splitlines()[-3])
src = sys.argv[1]
files = [os.path.join(src, "viewer", "code.c")] + sorted(glob.glob(os.path.join(src, "viewer", "rules", "*.c")))
SQL = re.compile(r"\b(sqlite3_\w+|vw_prep)\s*\(")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
bad = 0
for path in files:
    with open(path) as f:
        text = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), f.read())
    for n, line in enumerate(text.split("\n"), 1):
        m = SQL.search(line)
        if m:
            print("%s:%d: %s: SQL outside the model" % (os.path.relpath(path, src), n, m.group(1)))
            bad = 1
if not files or not os.path.exists(files[0]):
    sys.exit("check_no_sql: no viewer/code.c under %s" % src)
print("%d files, no SQL outside the model" % len(files) if not bad else "")
sys.exit(bad)
