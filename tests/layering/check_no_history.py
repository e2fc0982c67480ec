#!/usr/bin/env python3
"""Keeps history out of the code: no file of code, test, script or benchmark
names an issue ("issue 30", "Issue #31", "issues 17"). Code says what it does
and why; the issue a line came from belongs to the commit, the changelog and
the issue's own note, where a reader looks for history.

  tests/layering/check_no_history.py [REPO]              check, exit 1 on a hit
  tests/layering/check_no_history.py --self-test [REPO]  also checks a hit is caught
"""
import os
import re
import sys

FOLDERS = ("common", "proto", "storage", "server", "client", "tests", "scripts", "bench",
           "cmake", "deploy", "config")
SUFFIXES = (".cc", ".h", ".py", ".go", ".sh", ".txt", ".cmake", ".js", ".conf")
SKIP_DIRS = {"node_modules", ".git", "build"}
ISSUE = re.compile(r"\bissues?\s*#?\s*\d+", re.IGNORECASE)


def files(repo):
    yield os.path.join(repo, "CMakeLists.txt")
    for folder in FOLDERS:
        for root, dirs, names in os.walk(os.path.join(repo, folder)):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
            for name in names:
                if name.endswith(SUFFIXES) or name == "CMakeLists.txt":
                    yield os.path.join(root, name)


def hits(path, text):
    return ["%s:%d: %s" % (path, n, line.strip()[:120])
            for n, line in enumerate(text.splitlines(), 1) if ISSUE.search(line)]


def main(argv):
    self_test = "--self-test" in argv
    args = [a for a in argv if a != "--self-test"]
    repo = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), "..", ".."))
    me = os.path.abspath(__file__)
    found = []
    checked = 0
    for path in files(repo):
        if os.path.abspath(path) == me or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            found += hits(os.path.relpath(path, repo), f.read())
        checked += 1
    if self_test:
        for bad in ("// the fast path (issue 30): ...", "# Goals (Issue #18): ...",
                    '"""Resource faults (issues 32 and 33)."""'):
            if not hits("self-test", bad):
                print("no-history: the self-test line was not caught: %s" % bad)
                return 1
        if hits("self-test", "// reissue 3 tokens; tissue 4"):
            print("no-history: a word that only ends in 'issue' was caught")
            return 1
    if found:
        print("no-history: issue numbers in code (say what the code does instead):")
        print("\n".join(found))
        return 1
    print("no-history: %d files, no issue numbers" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
