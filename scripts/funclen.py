#!/usr/bin/env python3
"""The length of each top-level function in src/**/*.cpp (make layercheck).

src/README.md asks that no function run over 150 lines: one a newcomer reads
at once, its steps named.  This lists each top-level function body (from its
opening brace to its closing one, both counted) longer than the limit;
scripts/layercheck.py runs it as one of its rules.

How it reads a file: comments, string and character literals are blanked
first; then braces are followed.  A brace block whose header (the text since
the previous ';', '{' or '}') names a namespace or is `extern "C"` is
transparent (functions inside it are top level); a block whose header ends
in ')' (after const, noexcept, override or a trailing return type) is a
function; anything else (a struct, an enum, an initializer) is skipped as a
whole.  It reads the files as text: no compiler, so it works in a release
tarball.

    python3 scripts/funclen.py [--limit N] [SRC]    # default: src/ beside this folder
    python3 scripts/funclen.py --self-test          # the counter on a known text

With a lower --limit it lists the next candidates for splitting.
"""
import os
import re
import sys

LIMIT = 150


def blank(text):
    """The text with comments and literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            # a raw string R"(...)" is not used in src/; plain literals only
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else text[i:j])
            i = j
        elif c == "#" and (i == 0 or text[i - 1] == "\n"):
            # a preprocessor line, with its continuations
            j = i
            while True:
                k = text.find("\n", j)
                k = n if k < 0 else k
                if k > 0 and text[k - 1] == "\\" and k < n:
                    j = k + 1
                    continue
                break
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
        else:
            out.append(c)
            i += 1
    return "".join(out)


FUNC_TAIL = re.compile(r"\)\s*(?:const\s*|noexcept\s*|override\s*|final\s*|->\s*[\w:<>,\s\*&]+)*$")
NAME = re.compile(r"([~\w:]+)\s*\($")


def functions(text):
    """(name, first line, last line) of each top-level function of a C++ text."""
    code = blank(text)
    found = []
    i, n, start = 0, len(code), 0

    def line_of(pos):
        return code.count("\n", 0, pos) + 1

    def skip_block(pos):
        """The position just past the brace that closes the one at pos."""
        depth = 0
        while pos < n:
            if code[pos] == "{":
                depth += 1
            elif code[pos] == "}":
                depth -= 1
                if depth == 0:
                    return pos + 1
            pos += 1
        return n

    while i < n:
        c = code[i]
        if c in ";}":
            start = i + 1
        elif c == "{":
            header = code[start:i].strip()
            if re.match(r"^(inline\s+)?namespace\b", header) or re.match(r'^extern\s+"\s*"$', header):
                start = i + 1           # transparent: what is inside is top level
            else:
                end = skip_block(i)
                if FUNC_TAIL.search(header) and not re.search(r"=\s*$", header):
                    head = header[:FUNC_TAIL.search(header).start()]
                    name = name_of(head)
                    found.append((name, line_of(i), line_of(end - 1)))
                i = end
                start = end
                continue
        i += 1
    return found


def name_of(head):
    """The function's name from its header up to the ')' of its parameters."""
    depth, j = 0, len(head)
    while j > 0:
        j -= 1
        if head[j] == ")":
            depth += 1
        elif head[j] == "(":
            if depth == 0:
                break
            depth -= 1
    m = re.search(r"([~\w:]+|operator\s*\S+)\s*$", head[:j])
    return m.group(1) if m else "?"


def long_functions(src, limit):
    """(path, name, first line, length) of each function over limit lines."""
    out = []
    for root, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith(".cpp"):
                continue
            path = os.path.join(root, f)
            text = open(path, encoding="utf-8").read()
            for name, first, last in functions(text):
                if last - first + 1 > limit:
                    out.append((os.path.relpath(path, src), name, first, last - first + 1))
    return sorted(out)


def problems(src, limit=LIMIT):
    """The check as layercheck.py runs it: one line per function over limit."""
    return [f"{path}:{first}: {name}() is {length} lines, more than {limit}: split it "
            f"into named steps" for path, name, first, length in long_functions(src, limit)]


def self_test():
    """The counter on a text whose answer is known: (name, problems) pairs."""
    body = "\n".join(["\tx++;"] * 5)
    text = (
        "/* a comment { with a brace */\n"              # 1
        "namespace\n{\n"                                # 2-3
        "struct S\n{\n\tint a;\n};\n"                   # 4-7
        "static const char *k = \"}{\";\n"              # 8
        "int\nf(int x) noexcept\n{\n" + body + "\n\treturn x;\n}\n"   # 9-18
        "}\n"                                           # 19
        "extern \"C\" void\ng(void)\n{\n\tif (1)\n\t{\n\t}\n}\n"   # 20-26
        "const int t[] = {1, 2};\n"                     # 27
        "auto h() -> int\n{\n\treturn '{';\n}\n"        # 28-31
    )
    got = [(name, last - first + 1) for name, first, last in functions(text)]
    want = [("f", 8), ("g", 5), ("h", 3)]
    return [("funclen counts the functions of a known text",
             [] if got == want else [f"got {got}, want {want}"])]


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args = sys.argv[1:]
    limit = LIMIT
    if "--limit" in args:
        k = args.index("--limit")
        limit = int(args[k + 1])
        del args[k:k + 2]
    if "--self-test" in args:
        failed = 0
        for n, (name, probs) in enumerate(self_test(), 1):
            print(f"{'not ok' if probs else 'ok'} {n} - {name}")
            for p in probs:
                print(f"#   {p}")
            failed += bool(probs)
        sys.exit(1 if failed else 0)
    src = args[0] if args else os.path.join(here, "src")
    offenders = long_functions(src, limit)
    for path, name, first, length in offenders:
        print(f"{path}:{first}: {name}() is {length} lines (limit {limit})")
    sys.exit(1 if offenders else 0)


if __name__ == "__main__":
    main()
