"""Where a result comes from: the commit, the tree, PostgreSQL, the machine, its load, the command.

Every results file of bench/run.sh opens with this block, so that a figure can
be traced to the code and the conditions that produced it, and a figure quoted
elsewhere checked against a run of the same commit.

What it provides: collect(srv) before the run (commit, dirty flag, PostgreSQL
version, CPU model, nproc, kernel, load average, start time, command, the
installed snowflake.so), finish(info) after it (load average and time at the
end), and header(info): the Markdown lines.

The commit is `git rev-parse HEAD` of the tree bench/ lives in; "dirty" means
uncommitted changes to tracked files outside bench/results/ (the results
themselves).  A tree without git data (the copy scripts/chroot.sh makes) reads
the commit from bench/.source-commit, which `bench/run.sh --chroot` writes
before it copies the tree, or says "not a git checkout".

What it may call: the standard library, servers (PG_BIN), and git, pg_config.
"""
import datetime
import hashlib
import os
import platform
import subprocess

from .servers import PG_BIN

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(BENCH)


def _git(*args):
    try:
        out = subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True)
    except FileNotFoundError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def source():
    """(commit, 'clean' / 'dirty' / 'unknown', a note)."""
    commit = _git("rev-parse", "HEAD")
    if commit:
        changes = _git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench/results")
        return commit, ("dirty" if changes else "clean"), \
            ("uncommitted changes outside bench/results/" if changes else "")
    marker = os.path.join(BENCH, ".source-commit")
    if os.path.exists(marker):
        with open(marker) as f:
            lines = f.read().splitlines() + [""]
        commit, _, dirty = lines[0].strip().partition(" ")
        note = "read from bench/.source-commit: a copy of that tree"
        if lines[1]:
            note += f", run by `{lines[1]}`"
        return commit, (dirty.split(":")[0] or "unknown"), note
    return "not a git checkout", "unknown", ""


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def _so():
    so = os.path.join(subprocess.run([f"{PG_BIN}/pg_config", "--pkglibdir"], capture_output=True,
                                     text=True).stdout.strip(), "snowflake.so")
    try:
        with open(so, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:12]
    except OSError:
        return f"{so} (not readable)"
    when = datetime.datetime.fromtimestamp(os.path.getmtime(so)).strftime("%Y-%m-%d %H:%M")
    return f"{so} (sha256 {digest}..., installed {when})"


def collect(command):
    """The provenance before the run (the server's version is added by add_server())."""
    commit, dirty, note = source()
    return dict(commit=commit, dirty=dirty, source_note=note, pg="unknown", pg_num=0, cpu=cpu_model(), nproc=os.cpu_count(),
                kernel=platform.release(), load_before=loadavg(), load_after=None, started=now(),
                ended=None, command=command, so=_so())


def add_server(info, srv):
    info["pg"] = srv.value("SELECT version()")
    info["pg_num"] = int(srv.value("SHOW server_version_num"))


def finish(info):
    info["load_after"] = loadavg()
    info["ended"] = now()


def header(info, title):
    """The Markdown block every results file starts with."""
    t0 = info["started"].strftime("%Y-%m-%d %H:%M:%S UTC")
    took = "" if info["ended"] is None else f", {(info['ended'] - info['started']).total_seconds() / 60:.1f} min"
    return [
        f"# {title}\n",
        "| | |", "|---|---|",
        f"| commit | `{info['commit']}` ({info['dirty']}{'; ' + info['source_note'] if info['source_note'] else ''}) |",
        f"| PostgreSQL | {info['pg']} |",
        f"| CPU | {info['cpu']}, nproc {info['nproc']}, kernel {info['kernel']} |",
        f"| load average (1, 5, 15 min) | before {info['load_before']}; after {info['load_after'] or 'n/a'} |",
        f"| date | {t0}{took} |",
        f"| command | `{info['command']}` |",
        f"| extension | {info['so']} |",
        "",
    ]
