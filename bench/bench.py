#!/usr/bin/env python3
"""Side-by-side benchmark of the snowflake extension (run it through bench/run.sh).

Four parts, each on a scratch server started for this run (see bench/README.md):
  1. per-call cost of each generator, in ns above the same query without one;
  2. IDs per second of one backend against the layout's ceiling;
  3. pgbench TPS of `SELECT <generator>;` against `SELECT 1;`;
  4. single-row INSERT TPS, primary-key index sizes, and bulk INSERT ... SELECT.
Every figure is a median over rounds in which the generators take turns
(round-robin, the starting one rotating), so machine noise hits them alike.
Nothing is asserted: the targets are reported as met or not met.
"""
import argparse
import csv
import datetime
import glob
import hashlib
import os
import platform
import pwd
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

PG_BIN = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")
MODES = {
    # rounds: parts 1 and 2; pgbench_rounds: parts 3 and 4 (pgbench is the noisiest)
    "full":  dict(rounds=5, percall_n=2_000_000, tput_ids=28_000_000,
                  pgbench_rounds=7, pgbench_t=3, insert_t=20_000, prefill=600_000,
                  bulk_n=2_000_000, bulk_rounds=3),
    "quick": dict(rounds=3, percall_n=500_000, tput_ids=12_000_000,
                  pgbench_rounds=3, pgbench_t=1, insert_t=5_000, prefill=150_000,
                  bulk_n=500_000, bulk_rounds=1),
}
BATCH = 1_000_000              # snowflake_nextval_batch(n) size in part 2

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
"""
WIDE_LAYOUT_CONF = """
snowflake.shard_bits = 3        # wide sequence field: 2^22 IDs per ms, a ceiling that never binds
snowflake.sequence_bits = 22
snowflake.shard_ids = '2'       # a logical shard for snowflake_nextval(shard)
"""

# Instagram's next_id() (instagram-engineering.com, "Sharding & IDs at Instagram"):
# 41 bits of ms since their epoch | 13 bits of shard | 10 bits of nextval() % 1024.
SETUP_SQL = """
CREATE EXTENSION IF NOT EXISTS snowflake;
CREATE SEQUENCE bench_seq_c1 CACHE 1;
CREATE SEQUENCE bench_seq_c1000 CACHE 1000;
CREATE SEQUENCE insta_seq;
CREATE FUNCTION next_id(OUT result bigint) AS $$
DECLARE
    our_epoch bigint := 1314220021721;
    seq_id bigint;
    now_millis bigint;
    shard_id int := 5;
BEGIN
    SELECT nextval('insta_seq') % 1024 INTO seq_id;
    SELECT FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) INTO now_millis;
    result := (now_millis - our_epoch) << 23;
    result := result | (shard_id << 10);
    result := result | (seq_id);
END;
$$ LANGUAGE PLPGSQL;
-- Samples the generator's counters every 50 ms until `target` IDs have been
-- issued (or max_s has passed): IDs issued so far and the lead, with the clock
-- read just before and just after (a sample taken across a stall is dropped).
CREATE FUNCTION bench_sample(target bigint, max_s float8)
RETURNS TABLE (t_before float8, t_after float8, issued bigint, lead_ms bigint) AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    LOOP
        t_before := extract(epoch FROM clock_timestamp());
        SELECT s.ids_issued, s.current_lead_ms INTO issued, lead_ms
          FROM snowflake_stats() s
         WHERE s.shard_id = current_setting('snowflake.shard_id')::int;
        t_after := extract(epoch FROM clock_timestamp());
        RETURN NEXT;
        EXIT WHEN issued >= target OR clock_timestamp() - t0 > max_s * interval '1 second';
        PERFORM pg_sleep(0.05);
    END LOOP;
END;
$$ LANGUAGE plpgsql;
"""

PERCALL_GENERATORS = [  # (label, SQL expression)
    ("no generator (baseline)", "g"),
    ("clock_timestamp() (floor)", "clock_timestamp()"),
    ("snowflake_nextval()", "snowflake_nextval()"),
    ("snowflake_nextval(shard)", "snowflake_nextval(2)"),
    ("nextval() cache 1", "nextval('bench_seq_c1')"),
    ("nextval() cache 1000", "nextval('bench_seq_c1000')"),
    ("gen_random_uuid()", "gen_random_uuid()"),
    ("PL/pgSQL next_id()", "next_id()"),
]
SELECT_SCRIPTS = [  # (label, pgbench script)
    ("SELECT 1 (reference)", "SELECT 1;"),
    ("clock_timestamp() (any function call: a floor)", "SELECT clock_timestamp();"),
    ("snowflake_nextval()", "SELECT snowflake_nextval();"),
    ("nextval() cache 1", "SELECT nextval('bench_seq_c1');"),
    ("gen_random_uuid()", "SELECT gen_random_uuid();"),
    ("PL/pgSQL next_id()", "SELECT next_id();"),
]
INSERT_TABLES = [  # (label, table, id column definition)
    ("snowflake_nextval()", "ins_snowflake", "id bigint PRIMARY KEY DEFAULT snowflake_nextval()"),
    ("bigserial", "ins_bigserial", "id bigserial PRIMARY KEY"),
    ("gen_random_uuid()", "ins_uuid", "id uuid PRIMARY KEY DEFAULT gen_random_uuid()"),
]
BULK_VARIANTS = [  # (label, table, id column definition, INSERT statement with {n})
    ("bigserial", "bulk_bigserial", "id bigserial PRIMARY KEY",
     "INSERT INTO bulk_bigserial (v) SELECT 0 FROM generate_series(1, {n})"),
    ("snowflake_nextval()", "bulk_snowflake", "id bigint PRIMARY KEY DEFAULT snowflake_nextval()",
     "INSERT INTO bulk_snowflake (v) SELECT 0 FROM generate_series(1, {n})"),
    ("snowflake_nextval_batch(n)", "bulk_snowflake_batch", "id bigint PRIMARY KEY",
     "INSERT INTO bulk_snowflake_batch (id, v) SELECT snowflake_nextval_batch({n}), 0"),
    ("gen_random_uuid()", "bulk_uuid", "id uuid PRIMARY KEY DEFAULT gen_random_uuid()",
     "INSERT INTO bulk_uuid (v) SELECT 0 FROM generate_series(1, {n})"),
]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def rotated(items, r):
    """The items in round-robin order, starting with a different one each round."""
    k = r % len(items)
    return items[k:] + items[:k]


# ---------------------------------------------------------------- servers

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
    """A scratch PostgreSQL server under the work folder, reached over its Unix socket."""

    def __init__(self, work, name, extra_conf=""):
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
            f.write("\n# --- snowflake benchmark ---" +
                    COMMON_CONF.format(port=self.port, sockdir=self.dir) + extra_conf)

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

    def value(self, sql):
        return self.psql(sql).strip()

    def explain_ms(self, statements, env=None):
        """Execution times (ms) of statements run under EXPLAIN (ANALYZE, TIMING OFF) in one session."""
        sql = "".join(f"EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) {s};\n" for s in statements)
        times = [float(m) for m in re.findall(r"Execution Time: ([0-9.]+) ms", self.psql(sql, env))]
        if len(times) != len(statements):
            raise RuntimeError("could not read the execution times")
        return times

    def pgbench(self, args, cwd, env=None):
        out = subprocess.run([f"{PG_BIN}/pgbench", "-n", *self.conn_args(), *args, "postgres"],
                             capture_output=True, text=True, cwd=cwd, env=env)
        if out.returncode != 0:
            raise RuntimeError(f"pgbench failed: {out.stderr.strip()[-500:]}")
        return out.stdout


# ---------------------------------------------------------------- the parts

class Results:
    """Raw measurements (for the CSV) and the summaries each part computes."""

    def __init__(self):
        self.raw = []          # (part, item, clients, round, metric, value)
        self.parts = {}
        self.errors = {}

    def add(self, part, item, clients, rnd, metric, value):
        self.raw.append((part, item, clients, rnd, metric, value))


def part_percall(srv, cfg, res):
    """1. Per-call cost: query time minus the same query without a generator, per call."""
    n = cfg["percall_n"]
    query = "SELECT count(f) FROM (SELECT {gen} AS f FROM generate_series(1, {n}) g) s"
    gens = PERCALL_GENERATORS
    log(f"part 1: per-call cost, N = {n:,}, warm-up and {cfg['rounds']} rounds")
    srv.explain_ms([query.format(gen=g, n=n // 4) for _, g in gens])          # warm-up, not kept
    times = {label: [] for label, _ in gens}
    per_call = {label: [] for label, _ in gens}
    for r in range(cfg["rounds"]):
        order = rotated(gens, r)
        ms = dict(zip([label for label, _ in order],
                      srv.explain_ms([query.format(gen=g, n=n) for _, g in order])))
        base = ms[gens[0][0]]
        for label, _ in gens:
            times[label].append(ms[label])
            per_call[label].append((ms[label] - base) * 1e6 / n)
            res.add("percall", label, 1, r + 1, "query_ms", ms[label])
        log(f"  round {r + 1}: " + ", ".join(f"{label.split(' (')[0]} {ms[label]:.0f} ms" for label, _ in gens))
    sf = "snowflake_nextval()"
    seq = "nextval() cache 1"
    ratios = [a / b for a, b in zip(per_call[sf], per_call[seq]) if b > 0]
    res.parts["percall"] = dict(
        n=n, rows=[(label, expr, median(times[label]), median(per_call[label])) for label, expr in gens],
        sf_vs_seq=median(ratios), per_call=per_call)


def drain_lead(srv, max_lead_ms):
    deadline = time.time() + max_lead_ms / 1000 + 3
    while time.time() < deadline:
        if int(srv.value("SELECT current_lead_ms FROM snowflake_stats() "
                         "WHERE shard_id = current_setting('snowflake.shard_id')::int")) == 0:
            return
        time.sleep(0.1)


def analyse_samples(samples, before, target, max_lead_ms):
    """Rates from the sampler: the steady window after the lead is used up, and the ramp before.

    samples: (clock before, clock after, IDs issued, lead in ms); a sample whose two
    clock readings are more than 5 ms apart was taken across a stall and is dropped."""
    running = [((t1 + t2) / 2, i, lead) for t1, t2, i, lead in samples
               if before < i < target and t2 - t1 < 0.005]
    if len(running) < 2:
        return dict(steady=None, window_s=0, ramp=None, lead_used=None)
    full = [k for k, (_, _, lead) in enumerate(running) if lead >= max_lead_ms - 10]
    first, last = running[0], running[-1]
    if full and last[0] - running[full[0]][0] >= 0.2:
        w0 = running[full[0]]
        steady = (last[1] - w0[1]) / (last[0] - w0[0])
        ramp = (w0[1] - first[1]) / (w0[0] - first[0]) if w0[0] > first[0] else None
        return dict(steady=steady, window_s=last[0] - w0[0], ramp=ramp, lead_used=True)
    # the lead never filled: the backend is slower than the ceiling
    rate = (last[1] - first[1]) / (last[0] - first[0])
    return dict(steady=rate, window_s=last[0] - first[0], ramp=rate, lead_used=False)


def part_throughput(srv, cfg, res):
    """2. IDs per second of one backend with the default layout, against 4,096,000 per second."""
    n = cfg["tput_ids"]
    max_lead_ms = int(srv.value("SELECT setting FROM pg_settings WHERE name = 'snowflake.max_clock_lead'"))
    per_ms = int(srv.value("SELECT ids_per_ms_per_shard FROM snowflake_layout()"))
    ceiling = per_ms * 1000
    methods = [
        # generate_series in the select list streams its rows (in FROM it would first
        # store all of them, a pause before the first ID that would count in "overall")
        ("snowflake_nextval()",
         f"SELECT count(f) FROM (SELECT snowflake_nextval() AS f FROM (SELECT generate_series(1, {n})) g) s"),
        (f"snowflake_nextval_batch({BATCH:,})",
         f"SELECT count(f) FROM (SELECT snowflake_nextval_batch({BATCH}) AS f "
         f"FROM generate_series(1, {n // BATCH}) g) s"),
    ]
    log(f"part 2: throughput, {n:,} IDs a run, {cfg['rounds']} rounds, lead {max_lead_ms} ms")
    srv.value("SELECT count(snowflake_nextval()) FROM generate_series(1, 100000)")   # warm-up
    acc = {label: dict(steady=[], ramp=[], overall=[], net=[], window=[], lead_used=[]) for label, _ in methods}
    for r in range(cfg["rounds"]):
        for label, query in rotated(methods, r):
            drain_lead(srv, max_lead_ms)       # every run starts with the whole lead unused
            before = int(srv.value("SELECT ids_issued FROM snowflake_stats() "
                                   "WHERE shard_id = current_setting('snowflake.shard_id')::int"))
            sampler = subprocess.Popen(
                [f"{PG_BIN}/psql", "-X", "-q", "-A", "-t", "-F", " ", *srv.conn_args(), "-d", "postgres",
                 "-c", f"SELECT * FROM bench_sample({before + n}, {n / ceiling * 3 + 30})"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(0.3)                    # let the sampler take its first samples
            exec_ms = srv.explain_ms([query])[0]
            out, err = sampler.communicate(timeout=600)
            samples = [tuple(float(x) for x in line.split()) for line in out.split("\n") if line.strip()]
            a = analyse_samples(samples, before, before + n, max_lead_ms)
            overall = n / (exec_ms / 1000)
            lead_ids = ceiling * max_lead_ms // 1000
            acc[label]["net"].append((n - lead_ids) / (exec_ms / 1000))
            acc[label]["steady"].append(a["steady"])
            acc[label]["ramp"].append(a["ramp"])
            acc[label]["overall"].append(overall)
            acc[label]["window"].append(a["window_s"])
            acc[label]["lead_used"].append(a.get("lead_used"))
            for metric in ("steady", "ramp"):
                res.add("throughput", label, 1, r + 1, f"{metric}_ids_per_s", a[metric])
            res.add("throughput", label, 1, r + 1, "overall_ids_per_s", overall)
            res.add("throughput", label, 1, r + 1, "window_s", a["window_s"])
            log(f"  round {r + 1} {label}: steady {a['steady'] or 0:,.0f}/s over {a['window_s']:.1f} s "
                f"({(a['steady'] or 0) / ceiling:.1%} of ceiling), overall {overall:,.0f}/s")
    res.parts["throughput"] = dict(
        n=n, ceiling=ceiling, max_lead_ms=max_lead_ms,
        rows=[(label, median(v["steady"]), median(v["ramp"]), median(v["overall"]), median(v["net"]),
               median(v["window"]), all(v["lead_used"])) for label, v in acc.items()])


def trimmed_mean(values, keep=0.99):
    """Mean of the fastest 99%: drops the rare stalls of a shared machine, which
    would otherwise land on one script or another at random."""
    if not values:
        return None
    values = sorted(values)[:max(1, int(len(values) * keep))]
    return sum(values) / len(values)


def pgbench_tps(out):
    return float(re.search(r"tps = ([0-9.]+) \(without initial", out).group(1))


def part_select(srv, cfg, res, work):
    """3. pgbench TPS of SELECT <generator>; with 1 and 2 clients, against SELECT 1;."""
    t = cfg["pgbench_t"]
    d = os.path.join(work, "pgbench")
    os.makedirs(d, exist_ok=True)
    files = []
    for k, (label, script) in enumerate(SELECT_SCRIPTS):
        path = os.path.join(d, f"select{k}.sql")
        with open(path, "w") as f:
            f.write(script + "\n")
        files.append((label, path))
    log(f"part 3: pgbench SELECT, -T {t}, clients 1 and 2, warm-up and {cfg['pgbench_rounds']} rounds")
    for _, path in files:                                                     # warm-up
        srv.pgbench(["-c", "1", "-t", "2000", "-f", path], d)
    tps = {(label, c): [] for label, _ in files for c in (1, 2)}
    paired = {(label, c): [] for label, _ in files for c in (1, 2)}
    ref = files[0][0]
    for r in range(cfg["pgbench_rounds"]):
        for c in (1, 2):
            # separate runs, one script each, in turn
            got = {}
            for label, path in rotated(files, r):
                got[label] = pgbench_tps(srv.pgbench(["-c", str(c), "-j", str(c), "-T", str(t), "-f", path], d))
                res.add("select", label, c, r + 1, "tps", got[label])
            for label, _ in files:
                tps[(label, c)].append(got[label])
            # a paired run: all scripts in one run, each transaction picks one at random,
            # mean latency per script from the per-transaction log
            for old in glob.glob(os.path.join(d, "log.*")):
                os.remove(old)
            args = ["-c", str(c), "-j", str(c), "-T", str(t), "-l", f"--log-prefix={d}/log"]
            for _, path in files:
                args += ["-f", path]
            srv.pgbench(args, d)
            latencies = [[] for _ in files]
            for logfile in glob.glob(os.path.join(d, "log.*")):
                with open(logfile) as f:
                    for line in f:
                        fields = line.split()
                        latencies[int(fields[3])].append(int(fields[2]))
            mean_us = [trimmed_mean(v) for v in latencies]
            for k, (label, _) in enumerate(files):
                paired[(label, c)].append(mean_us[0] / mean_us[k] if mean_us[k] else None)
                res.add("select", label, c, r + 1, "paired_mean_latency_us", mean_us[k])
            log(f"  round {r + 1}, {c} client(s): " +
                ", ".join(f"{label.split(' (')[0]} {got[label]:,.0f}" for label, _ in files))
    rows = []
    for label, _ in files:
        row = [label]
        for c in (1, 2):
            ratios = [a / b for a, b in zip(tps[(label, c)], tps[(ref, c)])]
            row += [median(tps[(label, c)]), median(ratios), median(paired[(label, c)])]
        rows.append(row)
    res.parts["select"] = dict(t=t, rows=rows)


def index_pages(srv, table, env):
    return int(srv.psql(f"SELECT pg_relation_size('{table}_pkey') / 8192", env).strip())


def part_insert(srv, cfg, res, work):
    """4. Single-row INSERT TPS and index size; bulk INSERT ... SELECT."""
    env = dict(os.environ, PGOPTIONS="-c synchronous_commit=off")
    d = os.path.join(work, "pgbench")
    os.makedirs(d, exist_ok=True)
    t = cfg["insert_t"]
    pre = cfg["prefill"]
    log(f"part 4: inserts: prefill {pre:,} rows a table, pgbench -c 2 -t {t:,}, {cfg['pgbench_rounds']} rounds")
    sql = ""
    for _, table, idcol in INSERT_TABLES:
        sql += f"CREATE TABLE {table} ({idcol}, v int NOT NULL);\n"
    for _, table, _ in INSERT_TABLES:
        sql += f"INSERT INTO {table} (v) SELECT 0 FROM generate_series(1, {pre});\n"
    srv.psql(sql + "CHECKPOINT;\n", env)
    files = []
    for label, table, _ in INSERT_TABLES:
        path = os.path.join(d, f"{table}.sql")
        with open(path, "w") as f:
            f.write(f"INSERT INTO {table} (v) VALUES (0);\n")
        files.append((label, table, path))
    tps = {label: [] for label, _, _ in files}
    paired = {label: [] for label, _, _ in files}
    for r in range(cfg["pgbench_rounds"]):
        got = {}
        for label, table, path in rotated(files, r):
            got[label] = pgbench_tps(srv.pgbench(["-c", "2", "-j", "2", "-t", str(t), "-f", path], d, env))
            tps[label].append(got[label])
            res.add("insert", label, 2, r + 1, "tps", got[label])
        # paired: one script inserting a row into each table, per-statement latencies (-r);
        # the statement order rotates with the rounds
        order = rotated(files, r)
        path = os.path.join(d, "ins_all.sql")
        with open(path, "w") as f:
            f.write("".join(f"INSERT INTO {table} (v) VALUES (0);\n" for _, table, _ in order))
        out = srv.pgbench(["-c", "2", "-j", "2", "-t", str(t), "-r", "-f", path], d, env)
        lat = {}
        for label, table, _ in order:
            m = re.search(r"^\s*([0-9.]+)(?:\s+\d+)?\s+INSERT INTO " + table + r" ", out, re.M)
            lat[label] = float(m.group(1)) * 1000 if m else None
            res.add("insert", label, 2, r + 1, "paired_statement_latency_us", lat[label])
        base = lat["bigserial"]
        for label, _, _ in files:
            paired[label].append(base / lat[label] if base and lat[label] else None)
        log(f"  round {r + 1}: " + ", ".join(f"{label} {got[label]:,.0f} TPS" for label, _, _ in files))
    rows_each = pre + cfg["pgbench_rounds"] * 2 * t * 2
    sizes = {label: index_pages(srv, table, env) for label, table, _ in files}
    counts = {label: int(srv.psql(f"SELECT count(*) FROM {table}", env)) for label, table, _ in files}
    sb_pages = int(srv.value("SELECT setting FROM pg_settings WHERE name = 'shared_buffers'"))
    rows = []
    for label, _, _ in files:
        ratios = [a / b for a, b in zip(tps[label], tps["bigserial"])]
        rows.append((label, median(tps[label]), median(ratios), median(paired[label]),
                     sizes[label], counts[label]))
        res.add("insert", label, 2, 0, "index_pages", sizes[label])
    res.parts["insert"] = dict(t=t, prefill=pre, rows_each=rows_each, rows=rows, shared_buffers_pages=sb_pages)

    # bulk INSERT ... SELECT into fresh tables, in turn, a checkpoint before each
    n = cfg["bulk_n"]
    log(f"part 4: bulk INSERT ... SELECT of {n:,} rows, {cfg['bulk_rounds']} round(s)")
    bulk_ms = {v[0]: [] for v in BULK_VARIANTS}
    bulk_pages = {}
    for r in range(cfg["bulk_rounds"]):
        for label, table, idcol, insert in rotated(BULK_VARIANTS, r):
            srv.psql(f"DROP TABLE IF EXISTS {table};\nCREATE TABLE {table} ({idcol}, v int NOT NULL);\n"
                     "CHECKPOINT;\n", env)
            ms = srv.explain_ms([insert.format(n=n)], env)[0]
            bulk_ms[label].append(ms)
            bulk_pages[label] = index_pages(srv, table, env)
            res.add("bulk", label, 1, r + 1, "ms", ms)
            srv.psql(f"DROP TABLE {table};\n", env)
        log(f"  round {r + 1}: " + ", ".join(f"{v[0]} {bulk_ms[v[0]][-1]:,.0f} ms" for v in BULK_VARIANTS))
    base = "bigserial"
    rows = []
    for label, *_ in BULK_VARIANTS:
        ratios = [b / a for a, b in zip(bulk_ms[label], bulk_ms[base])]
        rows.append((label, median(bulk_ms[label]), n / (median(bulk_ms[label]) / 1000), median(ratios),
                     bulk_pages[label]))
        res.add("bulk", label, 1, 0, "index_pages", bulk_pages[label])
    res.parts["bulk"] = dict(n=n, rows=rows)


# ---------------------------------------------------------------- report

def fmt(v, spec=",.0f", none="n/a"):
    return none if v is None else format(v, spec)


def mib(pages):
    return f"{pages * 8192 / 1048576:,.1f} MiB"


def machine_info(srv):
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
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    git = subprocess.run(["git", "-C", repo, "describe", "--always", "--dirty"], capture_output=True, text=True)
    return dict(nproc=os.cpu_count(), cpu=cpu, pg=srv.value("SELECT version()") if srv else "unknown",
                kernel=platform.release(), so=f"{so} (sha256 {so_hash}..., installed {so_time})",
                git=git.stdout.strip() or "unknown")


def verdict(ok):
    return "n/a" if ok is None else ("**met**" if ok else "**not met**")


def targets(res):
    """(target, measured, met) rows."""
    p = res.parts
    rows = []
    if "percall" in p:
        v = p["percall"]["sf_vs_seq"]
        pc = p["percall"]["per_call"]
        rows.append(("per-call cost of snowflake_nextval() at most 1/3 of nextval() (cache 1)",
                     f"{fmt(median(pc['snowflake_nextval()']))} ns vs {fmt(median(pc['nextval() cache 1']))} ns: "
                     f"{fmt(v, '.2f')}×", None if v is None else v <= 1 / 3))
    if "select" in p:
        for row in p["select"]["rows"]:
            if row[0] == "snowflake_nextval()":
                for c, ratio, pair in ((1, row[2], row[3]), (2, row[5], row[6])):
                    rows.append((f"pgbench `SELECT snowflake_nextval()` TPS within 5% of `SELECT 1`, {c} client(s)",
                                 f"{fmt(ratio, '.1%')} of it (paired: {fmt(pair, '.1%')})",
                                 None if ratio is None else ratio >= 0.95))
    if "throughput" in p:
        tp = p["throughput"]
        for label, steady, *_ in tp["rows"]:
            frac = None if steady is None else steady / tp["ceiling"]
            rows.append((f"default layout: one backend with {label} reaches at least 95% of "
                         f"{tp['ceiling']:,} IDs/s", f"{fmt(frac, '.1%')}", None if frac is None else frac >= 0.95))
    if "insert" in p:
        r = {row[0]: row for row in p["insert"]["rows"]}
        sf, bs, uu = r["snowflake_nextval()"], r["bigserial"], r["gen_random_uuid()"]
        rows.append(("single-row INSERT TPS within 5% of bigserial's (or better)",
                     f"{fmt(sf[2], '.1%')} of it (paired: {fmt(sf[3], '.1%')})",
                     None if sf[2] is None else sf[2] >= 0.95))
        rows.append(("primary-key index the size of bigserial's and far below (at most 2/3 of) UUID's",
                     f"{sf[4]:,} pages vs bigserial {bs[4]:,} and UUID {uu[4]:,} ({sf[4] / uu[4]:.0%} of UUID's)",
                     sf[4] == bs[4] and sf[4] <= uu[4] * 2 / 3))
    return rows


def notes(res):
    """Facts from the same runs that help read the targets (no judgement)."""
    p = res.parts
    out = []
    if "select" in p:
        r = {row[0].split(" (")[0]: row for row in p["select"]["rows"]}
        sf, ct, one = r.get("snowflake_nextval()"), r.get("clock_timestamp()"), r.get("SELECT 1")
        if sf and ct and None not in (sf[2], sf[5], ct[2], ct[5]):
            out.append(f"`SELECT clock_timestamp();`, which calls a built-in function that only reads the clock, "
                       f"reached {ct[2]:.1%} (1 client) and {ct[5]:.1%} (2 clients) of `SELECT 1`'s TPS in the same "
                       f"rounds (paired: {fmt(ct[3], '.1%')}, {fmt(ct[6], '.1%')}); `snowflake_nextval()` reached "
                       f"{sf[2] / ct[2]:.1%} and {sf[5] / ct[5]:.1%} of `clock_timestamp()`'s (paired: "
                       f"{fmt(sf[3] and ct[3] and sf[3] / ct[3], '.1%')}, {fmt(sf[6] and ct[6] and sf[6] / ct[6], '.1%')}). "
                       "The difference between `SELECT 1` and a one-function `SELECT` is what PostgreSQL spends "
                       "on any function call in a statement (name lookup when parsing, planning, executor "
                       "set-up); part 1 gives the generator's own cost.")
        if one and one[1] and one[4]:
            out.append(f"`SELECT 1` made {one[1]:,.0f} TPS with 1 client and {one[4]:,.0f} with 2 clients"
                       + (": with 1 client the wake-up of the other process on the other CPU, not the query, "
                          "sets the pace, and small differences in service time can change it disproportionately "
                          "(the paired figures share those wake-ups)." if one[4] > 3 * one[1] else "."))
    if "insert" in p:
        r = {row[0]: row for row in p["insert"]["rows"]}
        if "bigserial" in r and "snowflake_nextval()" in r:
            out.append(f"Single-row INSERT: snowflake {fmt(r['snowflake_nextval()'][2], '.1%')} of bigserial's TPS in "
                       f"separate runs, {fmt(r['snowflake_nextval()'][3], '.1%')} in the paired runs.")
    return out


def write_markdown(path, res, info, cfg, mode, elapsed):
    p = res.parts
    L = []
    add = L.append
    add("# snowflake benchmark results\n")
    add(f"Mode **{mode}**, {info['date']}, whole run {elapsed / 60:.1f} min. "
        "Every figure is a median over rounds in which the generators take turns; ratios are taken "
        "within a round and then the median is reported. See `bench/README.md` for the method.\n")
    add("| machine | |\n|---|---|")
    add(f"| CPUs (nproc) | {info['nproc']} |")
    add(f"| CPU model | {info['cpu']} |")
    add(f"| PostgreSQL | {info['pg']} |")
    add(f"| kernel | {info['kernel']} |")
    add(f"| extension | {info['so']}, repository at {info['git']} |")
    add(f"| date | {info['date']} |\n")
    add("Servers: scratch, `shared_buffers = 16MB`, `jit = off`, `autovacuum = off`, "
        "`max_parallel_workers_per_gather = 0`, `max_wal_size = 4GB`; otherwise defaults "
        "(`synchronous_commit = on` except in part 4, see there). Clients connect over the Unix socket.\n")

    add("## Targets\n")
    add("| target | measured | |\n|---|---|---|")
    for target, measured, ok in targets(res):
        add(f"| {target} | {measured} | {verdict(ok)} |")
    add("")
    for note in notes(res):
        add(f"- {note}")
    add("")

    if "percall" in p:
        pc = p["percall"]
        add("## 1. Per-call cost\n")
        add(f"`SELECT count(f) FROM (SELECT <gen> AS f FROM generate_series(1, {pc['n']:,}) g) s`, "
            "execution time from `EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON)`, one warm-up round, then "
            f"{cfg['rounds']} rounds; per call = (time − baseline of the same round) / N. "
            "Server layout `shard_bits = 3`, `sequence_bits = 22` (4,194,304 IDs per ms: the ceiling never binds).\n")
        add("| generator | expression | query (median) | per call (median) | vs nextval() cache 1 |\n"
            "|---|---|---:|---:|---:|")
        seq = median(pc["per_call"]["nextval() cache 1"])
        for label, expr, ms, ns in pc["rows"]:
            rel = "" if label.startswith("no generator") or not seq else f"{ns / seq:.2f}×"
            add(f"| {label} | `{expr}` | {ms:,.1f} ms | "
                f"{'—' if label.startswith('no generator') else f'{ns:,.0f} ns'} | {rel} |")
        add("")
    if "throughput" in p:
        tp = p["throughput"]
        add("## 2. Throughput of one backend against the layout's ceiling\n")
        add(f"Default layout (12 sequence bits: {tp['ceiling']:,} IDs/s per shard), "
            f"`snowflake.max_clock_lead = {tp['max_lead_ms']} ms`. Each run asks for {tp['n']:,} IDs "
            "in one query (`SELECT count(f) FROM (SELECT snowflake_nextval() AS f FROM (SELECT "
            f"generate_series(1, N)) g) s`, and the same with `snowflake_nextval_batch({BATCH:,})` over "
            f"N / {BATCH:,} rows), starting with the lead unused. A second session samples `snowflake_stats` every "
            "50 ms. The first part of a run goes faster than the ceiling by borrowing up to the lead (about "
            f"{tp['ceiling'] * tp['max_lead_ms'] // 1000:,} IDs); **steady** is the rate over the window after the "
            "lead is used up (where the ceiling binds), **unthrottled** the rate before that, **overall** "
            "IDs / query time including the borrowed second, and **overall minus the lead** (IDs − the lead's "
            "IDs) / query time: the rate the query would have had without the borrowed second. Samples read across a stall of the host (clock "
            "readings around the sample more than 5 ms apart) are dropped.\n")
        add("| method | steady IDs/s | of ceiling | window | unthrottled IDs/s | overall IDs/s | "
            "overall minus the lead |\n|---|---:|---:|---:|---:|---:|---:|")
        for label, steady, ramp, overall, net, window, lead_used in tp["rows"]:
            add(f"| `{label}` | {fmt(steady)} | {fmt(steady and steady / tp['ceiling'], '.1%')} | "
                f"{window:.1f} s{'' if lead_used else ' (lead never used up)'} | {fmt(ramp)} | {fmt(overall)} | "
                f"{fmt(net)} |")
        add("")
    if "select" in p:
        sp = p["select"]
        add("## 3. pgbench `SELECT <gen>;`\n")
        add(f"`pgbench -n -c C -j C -T {sp['t']}` with a one-line script, one run per script in turn, "
            f"{cfg['pgbench_rounds']} rounds after a warm-up; the ratio is to `SELECT 1` of the same round. "
            "**Paired**: one more run per round with all the scripts (each transaction picks one at random), "
            "ratio of the mean latency of `SELECT 1` to that of the script, from pgbench's per-transaction log "
            "(each script's slowest 1% dropped: stalls of the host): the same ratio, with the noise of this "
            "machine shared by all scripts. `SELECT clock_timestamp();` is not a generator: it shows what "
            "calling any function costs over `SELECT 1` (parse-time function lookup, planning, executor set-up).\n")
        add("| script | TPS, 1 client | vs SELECT 1 | paired | TPS, 2 clients | vs SELECT 1 | paired |\n"
            "|---|---:|---:|---:|---:|---:|---:|")
        for label, t1, r1, p1, t2, r2, p2 in sp["rows"]:
            add(f"| {label} | {fmt(t1)} | {fmt(r1, '.1%')} | {fmt(p1, '.1%')} | {fmt(t2)} | {fmt(r2, '.1%')} | "
                f"{fmt(p2, '.1%')} |")
        add("")
    if "insert" in p:
        ip = p["insert"]
        sb = ip["shared_buffers_pages"]
        add("## 4. Inserts\n")
        add(f"Tables `(id <generator> PRIMARY KEY, v int)`, each prefilled with {ip['prefill']:,} rows by "
            f"`INSERT ... SELECT`, then in each of {cfg['pgbench_rounds']} rounds `pgbench -c 2 -j 2 -t {ip['t']:,}` of "
            "`INSERT INTO t (v) VALUES (0);` on each table in turn, and one paired run of a script inserting "
            "a row into each table (ratio of bigserial's mean statement latency to the table's, from `-r`; "
            "the statement order rotates). All tables end with the same number of rows. These sessions use "
            "`synchronous_commit = off`, so that the disk's flush latency (the same for all) does not drown "
            f"the generators' cost. `shared_buffers` is {mib(sb)} ({sb:,} pages).\n")
        add("| primary key | INSERT TPS | vs bigserial | paired | rows | PK index | vs bigserial | "
            "index > shared_buffers |\n|---|---:|---:|---:|---:|---:|---:|---|")
        bs_pages = [r for r in ip["rows"] if r[0] == "bigserial"][0][4]
        for label, tps, ratio, pair, pages, count in ip["rows"]:
            add(f"| {label} | {fmt(tps)} | {fmt(ratio, '.1%')} | {fmt(pair, '.1%')} | {count:,} | "
                f"{pages:,} pages ({mib(pages)}) | {pages / bs_pages:.2f}× | {'yes' if pages > sb else 'no'} |")
        add("")
    if "bulk" in p:
        bp = p["bulk"]
        add(f"Bulk `INSERT ... SELECT` of {bp['n']:,} rows into a fresh table (checkpoint before each; "
            "execution time from `EXPLAIN ANALYZE`; speed relative to bigserial, higher is faster):\n")
        add("| primary key | time | rows/s | vs bigserial | PK index |\n|---|---:|---:|---:|---:|")
        for label, ms, rate, ratio, pages in bp["rows"]:
            add(f"| {label} | {ms:,.0f} ms | {rate:,.0f} | {fmt(ratio, '.2f')}× | {pages:,} pages ({mib(pages)}) |")
        add("")
    if res.errors:
        add("## Errors\n")
        for part, err in res.errors.items():
            add(f"- part {part}: `{err}`")
        add("")
    add("![plot](latest.png)\n")
    text = "\n".join(L)
    with open(path, "w") as f:
        f.write(text)
    return text


def write_csv(path, res):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["part", "item", "clients", "round", "metric", "value"])
        for row in res.raw:
            w.writerow(row)


def write_plot(path, res, work):
    if not shutil.which("gnuplot"):
        log("gnuplot missing: no plot")
        return
    p = res.parts
    d = os.path.join(work, "plot")
    os.makedirs(d, exist_ok=True)

    def data(name, rows):
        fn = os.path.join(d, name)
        with open(fn, "w") as f:
            for row in rows:
                f.write(" ".join(f'"{x}"' if isinstance(x, str) else ("NaN" if x is None else f"{x}")
                                 for x in row) + "\n")
        return fn

    panels = []
    if "percall" in p:
        fn = data("percall.dat", [(label.split(" (")[0], max(ns, 0.5)) for label, _, _, ns in p["percall"]["rows"]
                                  if not label.startswith("no generator")])
        panels.append(f"""
set title "1. Per-call cost above the baseline query (ns, log scale)"
set logscale y
set yrange [1:*]
set style histogram clustered gap 1
plot '{fn}' using 2:xtic(1) title '' lc rgb '#4472c4', '' using 0:2:(sprintf('%.0f',$2)) with labels offset 0,0.7 notitle
unset logscale y
set yrange [*:*]""")
    if "throughput" in p:
        tp = p["throughput"]
        fn = data("tput.dat", [(label, s and s / tp["ceiling"] * 100, r and r / tp["ceiling"] * 100)
                               for label, s, r, *_ in tp["rows"]])
        panels.append(f"""
set title "2. One backend, default layout: % of {tp['ceiling']:,} IDs/s"
set yrange [0:*]
set style histogram clustered gap 1
plot '{fn}' using 2:xtic(1) title 'steady (lead used up)' lc rgb '#4472c4', \\
     '' using 3 title 'unthrottled (borrowing the lead)' lc rgb '#a5a5a5', \\
     95 with lines dt 2 lc rgb 'red' title '95% target'""")
    if "select" in p:
        fn = data("select.dat", [(row[0].split(" (")[0], row[2] and row[2] * 100, row[3] and row[3] * 100,
                                  row[5] and row[5] * 100, row[6] and row[6] * 100)
                                 for row in p["select"]["rows"]])
        panels.append(f"""
set title "3. pgbench SELECT <gen>: TPS as % of SELECT 1"
set yrange [0:150]
set key top center horizontal maxrows 2 samplen 2
set style histogram clustered gap 1
plot '{fn}' using 2:xtic(1) title '1 client' lc rgb '#4472c4', '' using 3 title '1 client, paired' lc rgb '#9dc3e6', \\
     '' using 4 title '2 clients' lc rgb '#ed7d31', '' using 5 title '2 clients, paired' lc rgb '#f8cbad', \\
     95 with lines dt 2 lc rgb 'red' title '95% target'""")
    if "insert" in p:
        rows = p["insert"]["rows"]
        bs = [r for r in rows if r[0] == "bigserial"][0]
        fn = data("insert.dat", [(r[0], r[2] and r[2] * 100, r[3] and r[3] * 100, r[4] / bs[4] * 100)
                                 for r in rows])
        panels.append(f"""
set title "4. Inserts: % of bigserial"
set yrange [0:*]
set key top left vertical maxrows auto samplen 4
set style histogram clustered gap 1
plot '{fn}' using 2:xtic(1) title 'INSERT TPS' lc rgb '#4472c4', '' using 3 title 'INSERT, paired' lc rgb '#9dc3e6', \\
     '' using 4 title 'PK index size' lc rgb '#ed7d31', 95 with lines dt 2 lc rgb 'red' title '95%'""")
    if not panels:
        return
    cols = 2
    rows_n = (len(panels) + 1) // 2
    script = f"""
set terminal pngcairo size 1400,{480 * rows_n} font 'sans,10' noenhanced
set output '{path}'
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key top left
set xtics rotate by -20 scale 0
set multiplot layout {rows_n},{cols}
{''.join(panels)}
unset multiplot
"""
    sp = os.path.join(d, "plot.gp")
    with open(sp, "w") as f:
        f.write(script)
    out = subprocess.run(["gnuplot", sp], capture_output=True, text=True)
    if out.returncode != 0:
        log(f"gnuplot failed: {out.stderr.strip()[-300:]}")


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes and fewer rounds (under 2 minutes)")
    ap.add_argument("--work", required=True, help="empty temporary folder for the scratch servers")
    ap.add_argument("--results", required=True, help="folder for latest.md, latest.csv, latest.png")
    args = ap.parse_args()
    mode = "quick" if args.quick else "full"
    cfg = MODES[mode]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.time()
    res = Results()
    servers = []
    info = None
    try:
        log(f"{mode} run; scratch servers under {args.work}")
        wide = Server(args.work, "wide", WIDE_LAYOUT_CONF)
        servers.append(wide)
        default = Server(args.work, "default")
        servers.append(default)
        for s in servers:
            s.start()
            s.psql(SETUP_SQL)
        info = machine_info(default)
        info["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        for name, fn in (("1", lambda: part_percall(wide, cfg, res)),
                         ("2", lambda: part_throughput(default, cfg, res)),
                         ("3", lambda: part_select(default, cfg, res, args.work)),
                         ("4", lambda: part_insert(default, cfg, res, args.work))):
            try:
                fn()
            except Exception as e:      # report it and go on with the other parts
                res.errors[name] = str(e)[-400:]
                log(f"part {name} failed: {e}")
    finally:
        for s in servers:
            s.stop()
    elapsed = time.time() - started
    os.makedirs(args.results, exist_ok=True)
    if info is None:
        info = machine_info(None)
        info["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    write_csv(os.path.join(args.results, "latest.csv"), res)
    write_plot(os.path.join(args.results, "latest.png"), res, args.work)
    text = write_markdown(os.path.join(args.results, "latest.md"), res, info, cfg, mode, elapsed)
    print()
    print(text)
    log(f"done in {elapsed:.0f} s: {args.results}/latest.md, latest.csv, latest.png")


if __name__ == "__main__":
    main()
