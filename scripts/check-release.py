#!/usr/bin/env python3
"""Release checks, printed as TAP ("ok N - ...", "not ok N - ...").

The version lives in one place: snowflake.control's default_version (the SQL
surface, MAJOR.MINOR).  The release version is MAJOR.MINOR.PATCH (PATCH for
releases that change only C code); META.json, debian/changelog and the first
entry of CHANGELOG.md must all carry it.  This script checks that, validates
META.json against the PGXN Meta Spec 1.0.0 (the required keys and the type
and form of every key the spec defines; the spec's validator is not packaged
in Debian, so the rules are written out below), checks that every older
extension version has an upgrade path to the current one, and that the
install and upgrade scripts of released versions never change
(test/release/frozen.sha256).  The META.json validator is itself checked
against broken copies, so it cannot pass everything.  Every link between the
Markdown documents must land on text: the file, its heading, and not a
one-line stub that links on (scripts/doclinks.py, also checked against
broken documents).

    python3 scripts/check-release.py
"""
import copy
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import doclinks

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd",
    "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit",
    "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay",
    "sun", "zlib", "open_source", "restricted", "unrestricted", "unknown"}
TOP_KEYS = {"name", "version", "abstract", "maintainer", "license", "provides", "meta-spec",
            "description", "generated_by", "tags", "no_index", "prereqs", "release_status",
            "resources"}
REQUIRED = ["name", "version", "abstract", "maintainer", "license", "provides", "meta-spec"]
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}
RANGE = re.compile(r"^(?:(?:==|!=|>=|<=|>|<)\s*)?(\S+)$")


def custom(key):
    return re.match(r"^[xX]_.", key) is not None


def text(value, minlen=1):
    return isinstance(value, str) and len(value) >= minlen


def term(value):
    # a name: at least two characters, no whitespace, slash, backslash or colon
    return isinstance(value, str) and re.match(r"^[^\s/\\:]{2,}$", value) is not None


def rel_path(value):
    return text(value) and not value.startswith("/") and "\\" not in value


def version_range(value):
    if value == 0 or value == "0":
        return True
    if not isinstance(value, str):
        return False
    for part in value.split(","):
        m = RANGE.match(part.strip())
        if not m or not SEMVER.match(m.group(1)):
            return False
    return True


def validate_meta(meta):
    """Problems of a META.json document under PGXN Meta Spec 1.0.0."""
    problems = []
    if not isinstance(meta, dict):
        return ["META.json is not an object"]
    for key in REQUIRED:
        if key not in meta:
            problems.append(f"required key {key!r} is missing")
    for key in meta:
        if key not in TOP_KEYS and not custom(key):
            problems.append(f"unknown key {key!r} (custom keys start with x_)")
    if "name" in meta and not term(meta["name"]):
        problems.append("name must be a term: 2+ characters, no spaces, '/', '\\' or ':'")
    if "version" in meta and not (isinstance(meta["version"], str) and SEMVER.match(meta["version"])):
        problems.append(f"version {meta.get('version')!r} is not a semantic version")
    for key in ("abstract", "description", "generated_by"):
        if key in meta and not text(meta[key]):
            problems.append(f"{key} must be a non-empty string")
    m = meta.get("maintainer")
    if "maintainer" in meta and not (text(m) or (isinstance(m, list) and m and all(text(x) for x in m))):
        problems.append("maintainer must be a string or a non-empty list of strings")
    lic = meta.get("license")
    if "license" in meta:
        ok = (lic in LICENSES if isinstance(lic, str) else
              isinstance(lic, list) and lic and all(isinstance(x, str) and x in LICENSES for x in lic) or
              isinstance(lic, dict) and lic and all(text(v) and re.match(r"^[a-z][a-z0-9+.-]*:", v)
                                                    for v in lic.values()))
        if not ok:
            problems.append(f"license {lic!r} is not a known license name, a list of them, or name: URI")
    provides = meta.get("provides")
    if "provides" in meta:
        if not isinstance(provides, dict) or not provides:
            problems.append("provides must be a non-empty object")
        else:
            for ext, spec in provides.items():
                if not term(ext):
                    problems.append(f"provides: {ext!r} is not a term")
                if not isinstance(spec, dict):
                    problems.append(f"provides.{ext} must be an object")
                    continue
                for key in ("file", "version"):
                    if key not in spec:
                        problems.append(f"provides.{ext}.{key} is missing")
                for key in spec:
                    if key not in ("file", "version", "abstract", "docfile") and not custom(key):
                        problems.append(f"provides.{ext}: unknown key {key!r}")
                for key in ("file", "docfile"):
                    if key in spec and not rel_path(spec[key]):
                        problems.append(f"provides.{ext}.{key} must be a relative unix path")
                if "version" in spec and not (isinstance(spec["version"], str) and SEMVER.match(spec["version"])):
                    problems.append(f"provides.{ext}.version is not a semantic version")
                if "abstract" in spec and not text(spec["abstract"]):
                    problems.append(f"provides.{ext}.abstract must be a non-empty string")
    ms = meta.get("meta-spec")
    if "meta-spec" in meta:
        if not isinstance(ms, dict) or not re.match(r"^1\.0\.\d+$", str(ms.get("version", ""))):
            problems.append("meta-spec.version must be 1.0.x")
        elif set(ms) - {"version", "url"} - {k for k in ms if custom(k)}:
            problems.append("meta-spec has unknown keys")
    if "release_status" in meta and meta["release_status"] not in ("stable", "testing", "unstable"):
        problems.append("release_status must be stable, testing or unstable")
    tags = meta.get("tags")
    if "tags" in meta and not (isinstance(tags, list) and tags and
                               all(text(t) and len(t) <= 255 for t in tags) and
                               len(set(tags)) == len(tags)):
        problems.append("tags must be a non-empty list of distinct strings of 1-255 characters")
    ni = meta.get("no_index")
    if "no_index" in meta:
        if not isinstance(ni, dict) or not ni:
            problems.append("no_index must be a non-empty object")
        else:
            for key, value in ni.items():
                if key not in ("file", "directory") and not custom(key):
                    problems.append(f"no_index: unknown key {key!r}")
                elif not custom(key) and not (text(value) or isinstance(value, list) and value and
                                              all(text(v) for v in value)):
                    problems.append(f"no_index.{key} must be a path or a list of paths")
    prereqs = meta.get("prereqs")
    if "prereqs" in meta:
        if not isinstance(prereqs, dict) or not prereqs:
            problems.append("prereqs must be a non-empty object")
        else:
            for phase, rels in prereqs.items():
                if phase not in PHASES and not custom(phase):
                    problems.append(f"prereqs: unknown phase {phase!r}")
                    continue
                if not isinstance(rels, dict) or not rels:
                    problems.append(f"prereqs.{phase} must be a non-empty object")
                    continue
                for rel, deps in rels.items():
                    if rel not in RELATIONS and not custom(rel):
                        problems.append(f"prereqs.{phase}: unknown relationship {rel!r}")
                    elif not isinstance(deps, dict) or not deps:
                        problems.append(f"prereqs.{phase}.{rel} must be a non-empty object")
                    else:
                        for dep, rng in deps.items():
                            if not term(dep) or not version_range(rng):
                                problems.append(f"prereqs.{phase}.{rel}.{dep}: bad version range {rng!r}")
    res = meta.get("resources")
    if "resources" in meta:
        if not isinstance(res, dict) or not res:
            problems.append("resources must be a non-empty object")
        else:
            for key, value in res.items():
                if key == "homepage" and not text(value):
                    problems.append("resources.homepage must be a URI")
                elif key in ("bugtracker", "repository") and not (isinstance(value, dict) and value):
                    problems.append(f"resources.{key} must be a non-empty object")
                elif key not in ("homepage", "bugtracker", "repository") and not custom(key):
                    problems.append(f"resources: unknown key {key!r}")
    return problems


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def check(self, ok, name, detail=""):
        self.n += 1
        print(f"{'ok' if ok else 'not ok'} {self.n} - {name}")
        if not ok:
            self.failed += 1
            for line in str(detail).splitlines():
                print(f"#   {line}")
        return ok


def read(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


def vkey(v):
    return tuple(int(x) for x in v.split("."))


def check_managed(t):
    """The SQL edition's generated artifacts (managed/install.sql, managed/pg_tle.sql)
    are what managed/build.sh makes from managed/src/ now: nobody edited them by
    hand, nobody forgot to rebuild them."""
    build = os.path.join(REPO, "managed", "build.sh")
    if not t.check(os.path.exists(build), "managed/build.sh exists"):
        return
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run(["bash", build, "--out", tmp], capture_output=True, text=True)
        if not t.check(r.returncode == 0, "managed/build.sh builds the SQL edition", r.stderr):
            return
        for name in ("install.sql", "pg_tle.sql"):
            fresh = open(os.path.join(tmp, name), encoding="utf-8").read()
            path = os.path.join(REPO, "managed", name)
            committed = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
            diff = "".join(difflib.unified_diff(committed.splitlines(True), fresh.splitlines(True),
                                                f"managed/{name} (in the tree)", "fresh build", n=1))
            t.check(committed == fresh, f"managed/{name} is what managed/build.sh makes "
                    "(run it and commit the result)", diff[:3000])
        # the comparison can fail: a source changed by one comment builds another artifact
        src = os.path.join(tmp, "src")
        shutil.copytree(os.path.join(REPO, "managed", "src"), src)
        with open(os.path.join(src, "99_drift.sql"), "w", encoding="utf-8") as f:
            f.write("-- drift\n")
        out = os.path.join(tmp, "drift")
        r = subprocess.run(["bash", build, "--src", src, "--out", out], capture_output=True, text=True)
        t.check(r.returncode == 0 and all(
            open(os.path.join(out, n), encoding="utf-8").read() !=
            open(os.path.join(tmp, n), encoding="utf-8").read() for n in ("install.sql", "pg_tle.sql")),
            "a changed source builds different artifacts (the drift check can fail)", r.stderr)


def main():
    t = Tap()
    control = read("snowflake.control")
    m = re.search(r"^default_version\s*=\s*'(\d+\.\d+)'", control, re.M)
    t.check(m is not None, "snowflake.control has default_version = 'MAJOR.MINOR'")
    ext_version = m.group(1) if m else "?"

    meta_text = read("META.json")
    try:
        meta = json.loads(meta_text)
        parsed = True
    except ValueError as e:
        meta, parsed = {}, False
        t.check(False, "META.json is valid JSON", e)
    if parsed:
        t.check(True, "META.json is valid JSON")
    problems = validate_meta(meta)
    t.check(not problems, "META.json follows the PGXN Meta Spec 1.0.0", "\n".join(problems))

    # the validator must reject broken documents, or the check above means nothing
    broken = {
        "without abstract": lambda d: d.pop("abstract"),
        "with version 1.1": lambda d: d.__setitem__("version", "1.1"),
        "with an unknown license": lambda d: d.__setitem__("license", "beerware"),
        "with an unknown key": lambda d: d.__setitem__("homepage", "x"),
        "with provides lacking file": lambda d: next(iter(d["provides"].values())).pop("file"),
        "with a bad prereq range": lambda d: d.__setitem__(
            "prereqs", {"runtime": {"requires": {"PostgreSQL": "fifteen"}}}),
        "with meta-spec 2.0.0": lambda d: d.__setitem__("meta-spec", {"version": "2.0.0"}),
    }
    if parsed:
        for what, breakit in broken.items():
            doc = copy.deepcopy(meta)
            breakit(doc)
            t.check(bool(validate_meta(doc)), f"the validator rejects META.json {what}")

    release = meta.get("version", "?")
    t.check(release.split(".")[:2] == ext_version.split("."),
            f"META.json version {release} is default_version {ext_version} with a patch number")
    provided = meta.get("provides", {}).get("snowflake", {})
    t.check(provided.get("version") == release, "META.json provides snowflake at the release version")
    t.check(provided.get("file") == "extension/snowflake.sql" and
            os.path.exists(os.path.join(REPO, provided.get("file", "-"))),
            "META.json provides file is extension/snowflake.sql (the current version's script), and it exists")
    pg = meta.get("prereqs", {}).get("runtime", {}).get("requires", {}).get("PostgreSQL")
    t.check(pg == "15.0.0", "META.json requires PostgreSQL 15.0.0 at runtime (the oldest we build)")

    changelog = read("debian/changelog")
    dm = re.match(r"^snowflake \(([^)]+)\)", changelog)
    t.check(dm is not None and dm.group(1) == release,
            f"debian/changelog's newest entry is {release}",
            f"found {dm.group(1) if dm else 'nothing'}")
    cm = re.search(r"^## (\S+)", read("CHANGELOG.md"), re.M)
    t.check(cm is not None and cm.group(1) == release, f"CHANGELOG.md's newest entry is {release}",
            f"found {cm.group(1) if cm else 'nothing'}")

    # every older version that was ever installable reaches the current one
    sql = os.listdir(os.path.join(REPO, "extension"))
    full = sorted((re.match(r"^snowflake--(\d+\.\d+)\.sql$", f).group(1) for f in sql
                   if re.match(r"^snowflake--(\d+\.\d+)\.sql$", f)), key=vkey)
    steps = {}
    for f in sql:
        um = re.match(r"^snowflake--(\d+\.\d+)--(\d+\.\d+)\.sql$", f)
        if um:
            steps.setdefault(um.group(1), []).append(um.group(2))
    # the current version's script is built from extension/snowflake.sql (DATA_built)
    t.check(os.path.exists(os.path.join(REPO, "extension", "snowflake.sql")),
            f"extension/snowflake.sql installs the current version ({ext_version})")
    full = sorted(set(full) | {ext_version}, key=vkey)
    for old in full:
        if old == ext_version:
            continue
        seen, todo = {old}, [old]
        while todo:
            for nxt in steps.get(todo.pop(), []):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        t.check(ext_version in seen, f"version {old} has an upgrade path to {ext_version}")
    newer = [v for v in full if vkey(v) > vkey(ext_version)]
    t.check(not newer, "no install script is newer than default_version", ", ".join(newer))

    # released scripts are frozen: a change to the SQL surface is a new version
    frozen = read("test/release/frozen.sha256")
    for line in frozen.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        digest, name = line.split()
        path = os.path.join(REPO, name)
        actual = hashlib.sha256(open(path, "rb").read()).hexdigest() if os.path.exists(path) else "missing"
        t.check(actual == digest, f"{name} is unchanged since its release",
                "released scripts never change: put the change in a new version and an upgrade script")

    check_links(t)
    check_fleet_grants(t)
    check_managed(t)

    print(f"1..{t.n}")
    return 1 if t.failed else 0


def check_fleet_grants(t):
    """README's fleet quick start grants what test/t/015_registry_pg_faults.pl runs."""
    ops = read("docs/operations.md")
    m = re.search(r"<!-- registry-grants[^>]*-->\s*```sql\n(.*?)```", ops, re.S)
    readme = re.sub(r"(?m)^   ", "", read("README.md"))   # the list items' code, dedented
    t.check(m is not None and m.group(1) in readme,
            "README's fleet quick start grants the block of docs/operations.md that "
            "test/t/015_registry_pg_faults.pl runs",
            "copy the registry-grants block of docs/operations.md into the README's step 2")


def check_links(t):
    """Every document's links land on text (scripts/doclinks.py), one line per document."""
    found = doclinks.links()
    for doc in doclinks.documents():
        mine = [x for x in found if x[0] == doc]
        bad = [f"line {n}: {target}: {problem}" for _, n, target, problem in mine if problem]
        t.check(not bad, f"{doc}: its {len(mine)} links to files and headings land on text",
                "\n".join(bad))
    # the checker must catch a dead anchor and a stub, or the lines above mean nothing
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(os.path.join(d, "docs"))
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write("# x\n\n[nav](#a-stub)\n\n## A stub\n\nIn brief: [the guide](docs/g.md#the-text-here).\n\n"
                    "## Text\n\nSee [the stub](#a-stub), [nothing](#no-such-heading), "
                    "[the guide](docs/g.md#the-text-here), [gone](docs/gone.md), [over two\n"
                    "lines](#nowhere-two).\n")
        with open(os.path.join(d, "docs", "g.md"), "w") as f:
            f.write("# G\n\n## The `text`: here\n\nIt is here.\n\n```\n## not a heading\n```\n"
                    "[code](#not-a-heading)\n")
        got = {(s, target): p for s, _, target, p in doclinks.links(d)}
    t.check(got.get(("README.md", "#no-such-heading"), "").startswith("no heading"),
            "the link checker finds an anchor with no heading")
    t.check("stub" in (got.get(("README.md", "#a-stub")) or ""),
            "the link checker finds a link to a one-line stub")
    t.check(got.get(("README.md", "docs/g.md#the-text-here"), "x") is None,
            "the link checker accepts a link to a heading with text (slugged as GitHub does)")
    t.check(got.get(("README.md", "docs/gone.md")) == "no such file",
            "the link checker finds a link to a missing file")
    t.check(bool(got.get(("docs/g.md", "#not-a-heading"))),
            "the link checker reads no heading inside a code block")
    t.check(bool(got.get(("README.md", "#nowhere-two"))),
            "the link checker reads a link whose text runs over two lines")


if __name__ == "__main__":
    sys.exit(main())
