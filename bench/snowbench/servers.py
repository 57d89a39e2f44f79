"""Scratch PostgreSQL servers and the helpers every measurement shares.

What it provides: PG_BIN (the server's binaries, from the environment that
bench/run.sh sets), as_postgres() and free_port(), Server (initdb, start, stop,
psql sessions in the foreground or background, EXPLAIN ANALYZE timings and pgbench on one scratch server), the parsing of
pgbench's output, and the arithmetic of interleaved rounds: rotated() gives each
round's order, median() summarises the rounds (stats.py: medians with their
range, per-round ratios); log() prints progress.

What it may call: the standard library and PostgreSQL's client programs in
PG_BIN (initdb, pg_ctl, psql, pgbench).  Nothing else in this package.
"""
import os
import pwd
import re
import socket
import statistics
import subprocess
import time

PG_BIN = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")

# The configuration of every scratch server of bench/run.sh (see bench/README.md).
COMMON_CONF = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{sockdir}'
shared_preload_libraries = 'snowflake'
snowflake.shard_id = 1
shared_buffers = 16MB           # small, so that the UUID index outgrows it at a modest size
jit = off                       # no JIT compilation inside the timed queries
autovacuum = off                # no background vacuum stealing one of the cores
max_parallel_workers_per_gather = 0
max_wal_size = 4GB              # checkpoints only where the benchmark asks for them
checkpoint_timeout = 30min
# a key for snowflake_public_id() in the per-call rounds (a benchmark key, 128 bits)
snowflake.public_id_keys = '1:00112233445566778899aabbccddeeff'
"""
COMMON_HEADER = "\n# --- snowflake benchmark ---"


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def median(values):
    """The median of the values that are not None (None if there are none)."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def rotated(items, r):
    """The items in round-robin order, starting with a different one each round."""
    k = r % len(items)
    return items[k:] + items[:k]


def pgbench_tps(out):
    return float(re.search(r"tps = ([0-9.]+) \(without initial", out).group(1))


def pgbench_transactions(out):
    """The number of transactions pgbench reports as processed."""
    return int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))


def as_postgres(cmd):
    """Runs initdb/pg_ctl as the postgres user when we are root (they refuse root)."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", "env", f"PATH={PG_BIN}:{os.environ['PATH']}"] + cmd
    return cmd


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A scratch PostgreSQL server under the work folder, reached over its Unix socket.

    conf is the configuration appended to postgresql.conf ({port} and {sockdir}
    filled in), preceded by header; extra_conf follows it."""

    def __init__(self, work, name, extra_conf="", conf=COMMON_CONF, header=COMMON_HEADER):
        self.dir = os.path.join(work, name)
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.name = name
        self.running = False
        os.makedirs(self.dir)
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        subprocess.run(as_postgres([f"{PG_BIN}/initdb", "-D", self.data, "-A", "trust", "-U", "postgres"]),
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write(header + conf.format(port=self.port, sockdir=self.dir) + extra_conf)

    def start(self):
        subprocess.run(as_postgres([f"{PG_BIN}/pg_ctl", "-D", self.data, "-l",
                                    os.path.join(self.dir, "server.log"), "-w", "start"]),
                       check=True, stdout=subprocess.DEVNULL)
        self.running = True

    def stop(self):
        if self.running:
            subprocess.run(as_postgres([f"{PG_BIN}/pg_ctl", "-D", self.data, "-m", "fast", "stop"]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.running = False

    def conn_args(self):
        return ["-h", self.dir, "-p", str(self.port), "-U", "postgres"]

    def psql(self, sql, env=None):
        """Runs SQL in one session; returns its unaligned, tuples-only output."""
        out = subprocess.run([f"{PG_BIN}/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                              *self.conn_args(), "-d", "postgres"],
                             input=sql, capture_output=True, text=True, env=env)
        if out.returncode != 0:
            raise RuntimeError(f"psql on {self.name} failed: {out.stderr.strip()}")
        return out.stdout

    def value(self, sql, env=None):
        return self.psql(sql, env).strip()

    def script_background(self, sql):
        """Starts one psql session running the script sql (backslash commands allowed);
        collect it with finish_script()."""
        p = subprocess.Popen([f"{PG_BIN}/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                              *self.conn_args(), "-d", "postgres"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        p.stdin.write(sql)
        p.stdin.close()
        return p

    def finish_script(self, p):
        out, err = p.stdout.read(), p.stderr.read()
        if p.wait() != 0:
            raise RuntimeError(f"psql on {self.name} failed: {err.strip()}")
        return out

    def explain_ms(self, statements, env=None):
        """Execution times (ms) of statements run under EXPLAIN (ANALYZE, TIMING OFF) in one session
        (uuidv7.py's time-range queries; per-call costs are measured in CPU time, see percall.py)."""
        sql = "".join(f"EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) {s};\n" for s in statements)
        times = [float(m) for m in re.findall(r"Execution Time: ([0-9.]+) ms", self.psql(sql, env))]
        if len(times) != len(statements):
            raise RuntimeError("could not read the execution times")
        return times

    def tagged(self, out, tag="R"):
        """The rows of psql output whose first field is tag, split on '|' (the tag dropped)."""
        return [line.split("|")[1:] for line in out.splitlines() if line.startswith(tag + "|")]

    def pgbench(self, args, cwd, env=None):
        out = subprocess.run([f"{PG_BIN}/pgbench", "-n", *self.conn_args(), *args, "postgres"],
                             capture_output=True, text=True, cwd=cwd, env=env)
        if out.returncode != 0:
            raise RuntimeError(f"pgbench failed: {out.stderr.strip()[-500:]}")
        return out.stdout
