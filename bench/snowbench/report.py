"""Results and the files they go into: raw rows, the machine, number formats, CSV, plots.

What it provides: Results (the raw measurements each module adds, for the CSV,
and the summaries it computes, for the Markdown), machine_info() (CPU, kernel,
PostgreSQL, the installed snowflake.so and the repository's commit), fmt(),
mib() and verdict() for the tables, write_csv() and run_gnuplot().

What it may call: the standard library, servers (PG_BIN, log), and the
programs pg_config, git and gnuplot.
"""
import csv
import datetime
import hashlib
import os
import platform
import shutil
import subprocess

from .servers import PG_BIN, log

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Results:
    """Raw measurements (for the CSV) and the summaries each part computes."""

    def __init__(self):
        self.raw = []          # (part, item, clients, round, metric, value)
        self.parts = {}
        self.errors = {}

    def add(self, part, item, clients, rnd, metric, value):
        self.raw.append((part, item, clients, rnd, metric, value))


def fmt(v, spec=",.0f", none="n/a"):
    return none if v is None else format(v, spec)


def mib(pages):
    return f"{pages * 8192 / 1048576:,.1f} MiB"


def verdict(ok):
    return "n/a" if ok is None else ("**met**" if ok else "**not met**")


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def machine_info(srv):
    """The machine, the server (srv may be None) and the installed extension; "date" is added by the caller."""
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    so = os.path.join(subprocess.run([f"{PG_BIN}/pg_config", "--pkglibdir"], capture_output=True,
                                     text=True).stdout.strip(), "snowflake.so")
    with open(so, "rb") as f:
        so_hash = hashlib.sha256(f.read()).hexdigest()[:12]
    so_time = datetime.datetime.fromtimestamp(os.path.getmtime(so)).strftime("%Y-%m-%d %H:%M")
    try:
        git = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                             capture_output=True, text=True).stdout.strip()
    except FileNotFoundError:       # no git (a Debian chroot of scripts/chroot.sh has none)
        git = ""
    return dict(nproc=os.cpu_count(), cpu=cpu, pg=srv.value("SELECT version()") if srv else "unknown",
                kernel=platform.release(), so=f"{so} (sha256 {so_hash}..., installed {so_time})",
                git=git or "unknown")


def write_csv(path, res):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["part", "item", "clients", "round", "metric", "value"])
        for row in res.raw:
            w.writerow(row)


def plot_data(work, name, rows):
    """Writes rows for gnuplot (strings quoted, None as NaN) under work/plot; returns the file's path."""
    d = os.path.join(work, "plot")
    os.makedirs(d, exist_ok=True)
    fn = os.path.join(d, name)
    with open(fn, "w") as f:
        for row in rows:
            f.write(" ".join(f'"{x}"' if isinstance(x, str) else ("NaN" if x is None else f"{x}")
                             for x in row) + "\n")
    return fn


def run_gnuplot(work, name, script):
    """Runs a gnuplot script (kept under work/plot as name); logs a failure, never raises."""
    d = os.path.join(work, "plot")
    os.makedirs(d, exist_ok=True)
    sp = os.path.join(d, name)
    with open(sp, "w") as f:
        f.write(script)
    out = subprocess.run(["gnuplot", sp], capture_output=True, text=True)
    if out.returncode != 0:
        log(f"gnuplot failed: {out.stderr.strip()[-300:]}")


def have_gnuplot():
    return shutil.which("gnuplot") is not None
