#!/usr/bin/env python3
"""docs_check: every file, class and function that a doc names still exists.

Reads the `code spans` of the docs given (docs/architecture.md by default) and
fails when one names
  - a path (has a `/` or a source suffix) that is neither a file nor a folder
    of the repository, nor a file name found in it;
  - an identifier (`SegmentAllocator`, `ApiRouter::Handle`, `CheckCount`,
    `id_routes`) that no source file under common/, proto/, storage/,
    server/ or client/ defines or uses outside comments; for `A::B` both
    parts must exist;
and when a code block headed `// <path>` shows a field that the file lacks.

  tests/docs/check_docs.py [--self-test] [REPO [DOC...]]
"""
import os
import re
import sys

SOURCE_DIRS = ("common", "proto", "storage", "server", "client")
SUFFIXES = (".h", ".cc", ".md", ".py", ".sh", ".yaml", ".yml", ".json", ".txt", ".cmake")
# `Name`, `A::B`, `a.b.Take`, `Take(key, count)`, `x->Y()`.
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*((::|\.|->)[A-Za-z_~][A-Za-z0-9_]*)*(\([^()]*\))?$")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return text


def index_repo(repo):
    """(words of the code, file stems, file names, {class: words of its files})."""
    words, stems, names = set(), set(), set()
    members = {}
    with open(os.path.join(repo, "CMakeLists.txt")) as fh:
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", fh.read()))
    for top in SOURCE_DIRS + ("tests", "bench", "scripts", "docs", "config", "deploy", "cmake"):
        for dirpath, _, files in os.walk(os.path.join(repo, top)):
            for f in files:
                names.add(f)
                stems.add(os.path.splitext(f)[0])
                if f == "CMakeLists.txt" or (top in SOURCE_DIRS and f.endswith((".h", ".cc"))):
                    with open(os.path.join(dirpath, f), errors="replace") as fh:
                        code = strip_comments(fh.read())
                    file_words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code))
                    words |= file_words
                    # `class X {`, `class X final : Base {`, `struct Outer::X {`
                    for name in re.findall(r"\b(?:class|struct)\s+(?:\w+\s+)?((?:\w+::)*[A-Z]\w*)"
                                           r"\s*(?:final\s*)?(?::(?!:)|\{)", code):
                        cls = name.split("::")[-1]
                        members.setdefault(cls, set()).update(file_words)
                        members[cls].add(os.path.join(dirpath, os.path.splitext(f)[0]))
    # A class's members are also in the .cc beside its header.
    for cls, ws in members.items():
        for stem in [w for w in ws if os.sep in w]:
            if os.path.isfile(stem + ".cc"):
                with open(stem + ".cc", errors="replace") as fh:
                    ws.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", strip_comments(fh.read())))
    return words, stems, names, members


def spans(doc_text):
    """(line number, text) of each inline code span outside fenced blocks."""
    out, fenced = [], False
    for n, line in enumerate(doc_text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out += [(n, s) for s in re.findall(r"`([^`\n]+)`", line)]
    return out


def check_span(repo, text, index):
    words, stems, names, members = index
    if "/" in text or text.endswith(SUFFIXES):
        if " " in text or text.startswith(("/", "-")) or "?" in text or "<" in text:
            return None  # a URL path, a command line or a pattern, not a file
        path = text.rstrip("/")
        for candidate in (path, path + ".h", path + ".cc"):
            if os.path.exists(os.path.join(repo, candidate)):
                return None
        if os.path.basename(path) in names:
            return None
        return f"no such file or folder: {text}"
    if IDENT.match(text):
        parts = re.split(r"::|\.|->", re.sub(r"\(.*\)$", "", text))
        missing = [p for p in parts if p not in words and p not in stems]
        if "::" in text and not missing and parts[0] in members and parts[1] not in members[parts[0]]:
            missing = [f"{parts[1]} in {parts[0]}'s files"]
        if missing:
            return f"names {text}, but no source defines {', '.join(missing)}"
    return None


def check_blocks(repo, doc_text):
    """A fenced block whose first line ends in `// <path>` lists fields of that file."""
    problems = []
    for block in re.findall(r"```\w*\n(.*?)```", doc_text, flags=re.S):
        m = re.search(r"//\s*(\S+\.h)\s*$", block.splitlines()[0])
        if not m:
            continue
        path = os.path.join(repo, m.group(1))
        if not os.path.isfile(path):
            problems.append(f"a code block shows {m.group(1)}, which does not exist")
            continue
        code = re.sub(r"\s+", " ", strip_comments(open(path).read()))
        for line in block.splitlines()[1:]:
            field = re.match(r"\s*([\w:<>]+[&*]?)\s+(\w+);", strip_comments(line))
            if field and not re.search(re.escape(field.group(1)) + r"\s*" + field.group(2) + r"\b",
                                       code):
                problems.append(f"the block from {m.group(1)} shows `{field.group(1)} "
                                f"{field.group(2)}`, which that file lacks")
    return problems


def check(repo, doc, doc_text, index):
    problems = []
    for n, text in spans(doc_text):
        p = check_span(repo, text, index)
        if p:
            problems.append(f"{doc}:{n}: {p}")
    problems += [f"{doc}: {p}" for p in check_blocks(repo, doc_text)]
    return problems


def main(argv):
    self_test = "--self-test" in argv
    args = [a for a in argv[1:] if a != "--self-test"]
    repo = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), "../.."))
    docs = args[1:] or ["docs/architecture.md"]
    index = index_repo(repo)
    problems, checked = [], 0
    for doc in docs:
        text = open(os.path.join(repo, doc)).read()
        checked += len(spans(text))
        problems += check(repo, doc, text, index)
    for p in problems:
        print("docs_check:", p)
    if problems:
        return 1
    if checked < 50:
        print(f"docs_check: only {checked} names found: is this the right doc?")
        return 1
    print(f"docs_check: {checked} names in {', '.join(docs)} exist")
    if self_test:
        fake = ("`server/core/gone_allocator.cc`, `NoSuchRouter::Route`, `TakeGone()`\n"
                "```cpp\nstruct Services {  // server/service/services.h\n"
                "  GoneService& gone;\n};\n```\n")
        caught = check(repo, "self-test", fake, index)
        if len(caught) != 4:
            print("docs_check self-test: expected 4 problems, got", caught)
            return 1
        print(f"docs_check self-test: caught {len(caught)} stale names, e.g. {caught[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
