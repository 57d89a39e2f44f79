#!/usr/bin/env python3
"""The layers of src/, checked from the include lines (make layercheck).

src/ has one folder a layer, lowest first (src/README.md says what each holds):

    core  settings  state  registry  sql   and src/snowflake.cpp on top

A file may include headers of its own layer and of the layers below it, never
of a layer above; a core file includes nothing of PostgreSQL (only other core
headers and the C and C++ standard library), so the core builds and is
unit-tested without a server; no files include each other in a circle; and
no function of src/ runs over 150 lines (scripts/funclen.py).
Reads the files as text: no git, no compiler, so it works in a release
tarball.  Prints TAP ("ok N - ...", "not ok N - ...") and exits 1 on any
failure.

    python3 scripts/layercheck.py [SRC]        # default: src/ beside this folder
    python3 scripts/layercheck.py --self-test  # the check refuses broken copies
"""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import funclen  # noqa: E402  (scripts/funclen.py, beside this file)

LAYERS = ["core", "settings", "state", "registry", "sql"]
TOP = len(LAYERS)  # files directly in src/: the module alone
MODULE = {"snowflake.cpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# headers of PostgreSQL and its client library, by the first part of the path
PG_DIRS = {"access", "catalog", "commands", "common", "executor", "fmgr", "funcapi",
           "lib", "libpq", "mb", "miscadmin", "nodes", "optimizer", "parser", "port",
           "postmaster", "replication", "storage", "tcop", "utils", "datatype", "jit",
           "partitioning", "rewrite", "statistics", "tsearch", "foreign", "regex",
           "snowball", "pgstat", "archive", "backup", "pg_config", "postgres",
           "postgres_fe", "postgres_ext", "c", "libpq-fe", "pg_trace", "pgtime",
           "plpgsql", "windowapi", "getopt_long", "varatt"}


def layer_of(src, path):
    """The layer number of a file under src/, or None outside it."""
    rel = os.path.relpath(path, src)
    parts = rel.split(os.sep)
    if len(parts) == 1:
        return TOP
    return LAYERS.index(parts[0]) if parts[0] in LAYERS else None


def layer_name(n):
    return LAYERS[n] if n < TOP else "the module (src/)"


def is_pg_header(name):
    first = name.split("/")[0]
    stem = re.sub(r"\.h$", "", first)
    return stem in PG_DIRS


def sources(src):
    for root, _, files in os.walk(src):
        for f in sorted(files):
            if f.endswith((".cpp", ".hpp", ".h", ".c")):
                yield os.path.join(root, f)


def check(src):
    """A list of (name, problems) pairs, one per rule."""
    files = sorted(sources(src))
    unknown, upward, impure, missing = [], [], [], []
    edges = {}
    for path in files:
        rel = os.path.relpath(path, src)
        mine = layer_of(src, path)
        if mine == TOP and os.path.basename(path) not in MODULE:
            unknown.append(f"{rel} lies directly in src/, where only {', '.join(sorted(MODULE))} belongs")
            continue
        if mine is None:
            unknown.append(f"{rel} is in no layer folder ({', '.join(LAYERS)})")
            continue
        text = open(path, encoding="utf-8").read()
        edges[rel] = []
        for kind, name in INCLUDE.findall(text):
            target = os.path.join(src, name)
            ours = kind == '"' and os.path.exists(target)
            if kind == '"' and not ours and not is_pg_header(name):
                missing.append(f"{rel} includes \"{name}\", which is neither in src/ nor PostgreSQL's")
            if ours:
                edges[rel].append(name)
                theirs = layer_of(src, target)
                if theirs is None or theirs > mine:
                    upward.append(f"{rel} ({layer_name(mine)}) includes {name} "
                                  f"({layer_name(theirs) if theirs is not None else 'no layer'})")
            if mine == 0 and not ours and (kind == '"' or is_pg_header(name)):
                impure.append(f"{rel} (core) includes PostgreSQL's <{name}>")
            if mine == 0 and ours and not name.startswith("core/"):
                impure.append(f"{rel} (core) includes {name}")
    circles = find_circles(edges)
    return [
        ("every file of src/ is in a layer folder", unknown),
        ("no file includes a header of a higher layer", upward),
        ("core files include no PostgreSQL header and nothing outside core/", impure),
        ("every quoted include is found", missing),
        ("no files include each other in a circle", circles),
        (f"no function of src/ runs over {funclen.LIMIT} lines", funclen.problems(src)),
    ]


def find_circles(edges):
    """Include cycles, each as 'a -> b -> a'."""
    found, state, stack = [], {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in edges.get(node, []):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                found.append(" -> ".join(cycle))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found


def report(results, start=1):
    failed = 0
    for n, (name, problems) in enumerate(results, start):
        if problems:
            failed += 1
            print(f"not ok {n} - {name}")
            for p in problems:
                print(f"#   {p}")
        else:
            print(f"ok {n} - {name}")
    return failed


def self_test(src):
    """The check must refuse copies of src/ broken in each way it knows."""
    breaks = {
        "a core file includes a registry header":
            ("core/layout.cpp", '#include "registry/registry.hpp"\n'),
        "a core file includes postgres.h":
            ("core/generator.cpp", '#include "postgres.h"\n'),
        "a state file includes an SQL-layer header":
            ("state/mark.cpp", '#include "sql/decode.hpp"\n'),
        "a new file lies outside the layer folders":
            ("stray.cpp", '#include "core/layout.hpp"\n'),
        "two headers include each other":
            ("core/layout.hpp", '#include "core/generator.hpp"\n'),
        f"a function runs over {funclen.LIMIT} lines":
            ("core/longest.cpp", "int\nlongest(int x)\n{\n" + "\tx++;\n" * funclen.LIMIT + "\treturn x;\n}\n"),
    }
    results = []
    for what, (rel, line) in breaks.items():
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "src")
            shutil.copytree(src, copy)
            path = os.path.join(copy, rel)
            text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
            open(path, "w", encoding="utf-8").write(line + text)
            refused = any(problems for _, problems in check(copy))
        results.append((f"layercheck refuses a copy where {what}",
                        [] if refused else ["it passed"]))
    return results


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args = [a for a in sys.argv[1:] if a != "--self-test"]
    src = args[0] if args else os.path.join(here, "src")
    results = check(src)
    if "--self-test" in sys.argv[1:]:
        results += self_test(src) + funclen.self_test()
    print(f"1..{len(results)}")
    sys.exit(1 if report(results) else 0)


if __name__ == "__main__":
    main()
