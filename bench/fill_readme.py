#!/usr/bin/env python3
"""Fills the README's benchmark figures from the summary blocks of results files, or checks them.

    python3 bench/fill_readme.py bench/results/pg15.md bench/results/pg18.md          # fill README.md
    python3 bench/fill_readme.py --check bench/results/pg15.md bench/results/pg18.md  # compare only

Each figure in README.md stands just before its marker: `1.04 [0.98-1.10] <!-- bench: key -->`
(or `_tbd_` before a first run).  The keys are those of the summary block that bench/run.sh
writes at the top of each results file (`key = value` lines); when several files have a key,
the later file wins.  Filling replaces each figure by the run's value and says which markers
had no value in the files.  --check changes nothing: it lists, for every marker, the README's
median against the run's [min-max], and exits 1 if any lies outside (the README does not
match that run within its printed range), has no figure yet, or has no value in the files.
"""
import argparse
import os
import re
import sys

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
# a figure: _tbd_, a number with an optional unit and range, or the run line ("commit ...")
VALUE = r"(?P<value>_tbd_|commit (?:[0-9a-f]{7,40}|not a git checkout) [^<]*?|-?[0-9][0-9.,]*(?: B)?(?: \[[^\]]*\])?)"
MARKER = VALUE + r"(?P<space>\s*)<!-- bench: (?P<key>[A-Za-z0-9_.]+) -->"


def summaries(paths):
    values = {}
    for path in paths:
        with open(path) as f:
            text = f.read()
        block = re.search(r"## Summary\n.*?```text\n(.*?)```", text, re.S)
        if not block:
            sys.exit(f"{path}: no summary block")
        for line in block.group(1).splitlines():
            if " = " in line and not line.startswith("#"):
                k, v = line.split(" = ", 1)
                values[k.strip()] = v.strip()
    return values


def numbers(v):
    """(median, min, max) of a value like '1.04 [0.98-1.10]' or '189 B [188-190 B]'; None if not numeric."""
    m = re.match(r"(-?[0-9.,]+)(?: B)?(?: \[(-?[0-9.,]+)(?: B)?(?:-| to )([-+]?[0-9.,]+)(?: B)?\])?$", v)
    if not m:
        return None
    f = [None if x is None else float(x.replace(",", "")) for x in m.groups()]
    return (f[0], f[1] if f[1] is not None else f[0], f[2] if f[2] is not None else f[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--readme", default=README)
    ap.add_argument("results", nargs="+")
    args = ap.parse_args()
    values = summaries(args.results)
    with open(args.readme) as f:
        text = f.read()
    missing, bad = [], []

    def fill(m):
        key = m.group("key")
        if key not in values:
            missing.append(key)
            return m.group(0)
        return f"{values[key]}{m.group('space') or ' '}<!-- bench: {key} -->"

    if not args.check:
        new = re.sub(MARKER, fill, text)
        with open(args.readme, "w") as f:
            f.write(new)
        print(f"filled {len(re.findall(MARKER, text)) - len(missing)} figures in {args.readme}")
        for key in sorted(set(missing)):
            print(f"no value for {key} in {', '.join(args.results)}")
        return
    for m in re.finditer(MARKER, text):
        key, shown = m.group("key"), m.group("value")
        if key not in values:
            missing.append(key)
            continue
        a, b = numbers(shown), numbers(values[key])
        if shown == "_tbd_":
            bad.append(key)
            print(f"{key}: no figure yet; the run gives {values[key]}")
        elif a is None or b is None:
            print(f"{key}: README {shown!r}, run {values[key]!r} (not compared)")
        else:
            ok = b[1] <= a[0] <= b[2]
            print(f"{key}: README {a[0]:g}, run {values[key]}: {'within' if ok else 'OUTSIDE'} its range")
            if not ok:
                bad.append(key)
    for key in sorted(set(missing)):
        print(f"{key}: not in {', '.join(args.results)}")
    sys.exit(1 if bad or missing else 0)


if __name__ == "__main__":
    main()
