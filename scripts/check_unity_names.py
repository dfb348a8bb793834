#!/usr/bin/env python3
"""Checks that the unity builds compile the same program as one object per file.

A unity build (CMakeLists.txt: the test binaries always, the module libraries with
TRIATTN_UNITY_SOURCES) compiles several .cpp files of one module as one translation unit, so
their anonymous namespaces merge. Two files that each define `id_or` there with different
parameters then compile without a word, and a call in one file may pick the other file's
overload; a file-local function named like a public one can take that one's calls the same
way. Redefinitions with the same signature are compile errors and need no check.

So a function defined in an anonymous namespace must have a name no other file of its module
defines there, and no function declared in a header under src/ has. The scan reads the
project's clang-format layout (namespaces not indented: a definition inside an anonymous
namespace starts in column 0). Exit 1, listing every clash, or 0.
Usage: scripts/check_unity_names.py [ROOT]
"""
import collections
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "alignof", "decltype", "static_assert",
            "catch", "noexcept", "requires", "operator", "defined", "template"}


def strip_code(text):
    """The text with comments, string and character literals blanked (lengths kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i)); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)


def anonymous_functions(path):
    """Names of the functions defined at the top of the file's anonymous namespaces."""
    code = strip_code(path.read_text(errors="replace"))
    names, depth, anon_depths = set(), 0, []
    for line in code.split("\n"):
        # A definition directly inside an anonymous namespace starts in column 0; continuation
        # lines are indented.
        if anon_depths and depth == anon_depths[-1] and line[:1].strip() and "(" in line:
            head = line.split("(")[0]
            if "=" not in head and not re.match(r"(struct|class|enum|union|using|namespace|typedef|template)\b", line):
                m = re.search(r"(::\s*)?([A-Za-z_]\w*)\s*$", head)
                # Qualified names define members; all-capitals names are macros (TEST, ...).
                if m and not m.group(1) and m.group(2) not in KEYWORDS and not m.group(2).isupper():
                    names.add(m.group(2))
        for m in re.finditer(r"namespace\s*\{|[{}]", line):
            if m.group(0) != "}":
                depth += 1
                if m.group(0) != "{":
                    anon_depths.append(depth)
            else:
                if anon_depths and depth == anon_depths[-1]:
                    anon_depths.pop()
                depth -= 1
    return names


def public_functions():
    """Names declared as functions in column 0 of the headers under src/."""
    names = set()
    for h in (root / "src").rglob("*.h"):
        for line in strip_code(h.read_text(errors="replace")).split("\n"):
            if line[:1].strip() and "(" in line and not re.match(r"(#|struct|class|enum|using|namespace|typedef|template)", line):
                m = re.search(r"([A-Za-z_]\w*)\s*$", line.split("(")[0])
                if m and m.group(1) not in KEYWORDS:
                    names.add(m.group(1))
    return names


def modules():
    """(label, files): each src/<module> (with its subfolders) and tests/<module>."""
    for top in ("src", "tests"):
        for d in sorted(p for p in (root / top).iterdir() if p.is_dir()):
            files = sorted(d.rglob("*.cpp")) if top == "src" else sorted(d.glob("test_*.cpp"))
            # Files built for an instruction set are never merged (CMakeLists.txt).
            files = [f for f in files if not re.search(r"_(avx2|avx512|neon|neon_dotprod)\.cpp$", f.name)]
            if files:
                yield f"{top}/{d.name}", files


public = public_functions()
problems = []
for label, files in modules():
    where = collections.defaultdict(list)
    for f in files:
        for name in anonymous_functions(f):
            where[name].append(f.relative_to(root).as_posix())
    for name, fs in sorted(where.items()):
        if len(fs) > 1:
            problems.append(f"{label}: '{name}' is defined in the anonymous namespace of {', '.join(fs)}")
        if label.startswith("src/") and name in public:
            problems.append(f"{label}: '{name}' in the anonymous namespace of {fs[0]} has the name of a "
                            "function declared in a header")
if problems:
    print("check_unity_names: file-local functions whose names a unity build could confuse "
          "(rename one; shared helpers go in a header):")
    print("\n".join("  " + p for p in problems))
    sys.exit(1)
print("check_unity_names: every file-local function name is unique within its module")
