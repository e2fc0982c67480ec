#!/usr/bin/env python3
"""Checks the code's layering against the table in docs/architecture.md.

The "Folders" table of docs/architecture.md says, per folder, which other
folders its files may include. This script reads that table from the doc
itself, then fails on
  - any `#include` under common/, proto/, storage/, server/, client/ or
    bench/seqbench/ that crosses into a folder its row does not list;
  - a source file in a folder that has no row (the table must cover the code);
  - a `seqd_library(...)` in CMakeLists.txt linking a seqd library whose
    folder the table does not allow.
So the doc cannot drift from the code: change the code, or change the doc.

  tests/layering/check_layering.py [REPO]          check, exit 1 on a violation
  tests/layering/check_layering.py --self-test [REPO]
      also checks that a forbidden include and a forbidden link are caught
"""
import os
import re
import sys

SCOPES = ("common", "proto", "storage", "server", "client", "bench/seqbench")
# Where a quoted or angled include is looked up, besides the includer's folder
# (client/tools: what seqctl and seqbench share).
INCLUDE_ROOTS = ("", "client/include", "client/src", "client/tools")
EVERY_FOLDER_ABOVE = "every folder above"


def parse_table(doc_text):
    """{folder: set(allowed folders)} in table order, from the Folders table."""
    lines = doc_text.splitlines()
    try:
        start = next(i for i, l in enumerate(lines)
                     if re.match(r"\|\s*folder\s*\|.*\|\s*may include\s*\|", l))
    except StopIteration:
        raise SystemExit("layering: docs/architecture.md has no "
                         "'| folder | ... | may include |' table")
    table = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        folders = re.findall(r"`([^`]+/)`", cells[0])
        if len(folders) != 1:
            raise SystemExit(f"layering: a table row names no single folder: {line}")
        allowed = set(re.findall(r"`([^`]+/)`", cells[-1]))
        if EVERY_FOLDER_ABOVE in cells[-1]:
            allowed |= set(table)
        table[folders[0]] = allowed
    return table


def folder_of(path, table):
    """The longest table folder that holds `path`, or None."""
    best = None
    for folder in table:
        if path.startswith(folder) and (best is None or len(folder) > len(best)):
            best = folder
    return best


def source_files(repo):
    for scope in SCOPES:
        for dirpath, _, names in os.walk(os.path.join(repo, scope)):
            for name in names:
                if name.endswith((".h", ".cc", ".hpp", ".cpp")):
                    yield os.path.relpath(os.path.join(dirpath, name), repo)


INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def includes_of(repo, path):
    """(line number, resolved repo-relative path) of each include of ours."""
    out = []
    with open(os.path.join(repo, path), errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            target = resolve(repo, path, m.group(1), m.group(2))
            if target:
                out.append((n, target))
    return out


def resolve(repo, includer, bracket, name):
    candidates = []
    if bracket == '"':
        candidates.append(os.path.join(os.path.dirname(includer), name))
    candidates += [os.path.join(root, name) for root in INCLUDE_ROOTS]
    for c in candidates:
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(repo, c)):
            return c
    return None  # a system, third-party or generated header


def check_includes(repo, table, edges):
    """edges: iterable of (path, line, target). Returns violation strings."""
    problems = []
    for path, line, target in edges:
        src = folder_of(path, table)
        dst = folder_of(target, table)
        if src is None:
            problems.append(f"{path}: its folder has no row in the table")
            continue
        if dst is None or dst == src or dst in table[src]:
            continue
        problems.append(f"{path}:{line}: includes {target}: `{src}` may not include `{dst}`")
    return problems


LIBRARY_RE = re.compile(r"^seqd_library\((\w+)(.*?)\)", re.M | re.S)


def parse_libraries(cmake_text):
    """{target: (folders, deps)} from the seqd_library() calls."""
    libs = {}
    for m in LIBRARY_RE.finditer(cmake_text):
        words = m.group(2).split()
        folders, deps, mode = [], [], None
        for w in words:
            if w in ("FOLDERS", "DEPS"):
                mode = w
            elif mode == "FOLDERS":
                folders.append(w.rstrip("/") + "/")
            elif mode == "DEPS":
                deps.append(w)
        libs[m.group(1)] = (folders, deps)
    return libs


def check_links(table, libs):
    folder_of_target = {name: folders[0] for name, (folders, _) in libs.items()}
    folder_of_target.setdefault("seqd_client", "client/")
    folder_of_target.setdefault("seqd_app", "server/")
    problems = []
    for name, (folders, deps) in libs.items():
        for folder in folders:
            if folder not in table:
                problems.append(f"CMakeLists.txt: {name} builds `{folder}`, which has no row")
                continue
            for dep in deps:
                dst = folder_of_target.get(dep)
                if dst is None or dst == folder or dst in table[folder]:
                    continue
                problems.append(f"CMakeLists.txt: {name} links {dep}: "
                                f"`{folder}` may not use `{dst}`")
    return problems


def run(repo):
    table = parse_table(open(os.path.join(repo, "docs/architecture.md")).read())
    edges = [(p, n, t) for p in source_files(repo) for n, t in includes_of(repo, p)]
    libs = parse_libraries(open(os.path.join(repo, "CMakeLists.txt")).read())
    return table, edges, libs


def main(argv):
    self_test = "--self-test" in argv
    args = [a for a in argv[1:] if a != "--self-test"]
    repo = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), "../.."))
    table, edges, libs = run(repo)
    problems = check_includes(repo, table, edges) + check_links(table, libs)
    for p in problems:
        print("layering:", p)
    if problems:
        print(f"layering: {len(problems)} violation(s) of the table in docs/architecture.md")
        return 1
    if len(table) < 10 or len(edges) < 100 or len(libs) < 10:
        print(f"layering: too little found ({len(table)} rows, {len(edges)} includes, "
              f"{len(libs)} libraries): is this the repository?")
        return 1
    print(f"layering: {len(edges)} includes in {len({e[0] for e in edges})} files and "
          f"{len(libs)} libraries obey the {len(table)}-row table")
    if self_test:
        # A storage file including a server header, one backend including
        # another's, and a listener linking the allocator behind the seam
        # must all be refused.
        bad = check_includes(repo, table, edges + [
            ("storage/segment_store.h", 1, "server/core/segment_allocator.h"),
            ("storage/memory/memory_store.cc", 1, "storage/mysql/mysql_pool.h")])
        bad_links = check_links(table, dict(libs, seqd_binary=(
            ["server/binary/"], libs["seqd_binary"][1] + ["seqd_core"])))
        if len(bad) != 2 or len(bad_links) != 1:
            print("layering self-test: a forbidden edge was not caught:", bad, bad_links)
            return 1
        print("layering self-test: caught", "; ".join(bad + bad_links))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
