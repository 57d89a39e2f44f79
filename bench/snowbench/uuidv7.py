"""Primary keys side by side on PostgreSQL 18: snowflake, uuidv7(), gen_random_uuid(),
bigserial and identity (`bash bench/run.sh --uuidv7`).

What it measures, on one default-layout scratch server (PostgreSQL 18 or later):

- inserts: tables `(id <key> PRIMARY KEY, created_at timestamptz DEFAULT now(),
  v int)`, prefilled, then in each round `pgbench -n -c 2 -j 2 -T t` of `INSERT
  INTO t (v) VALUES (0);` on each table in turn (the order rotating by round,
  sessions with synchronous_commit = off, a CHECKPOINT before each round):
  rows/s; WAL bytes per row (pg_current_wal_insert_lsn() before and after the
  run, divided by the rows it inserted) and the full-page images among them
  (pg_waldump --stats over the run's WAL); at the end, bytes per row of the
  primary-key index, of the table, and of the created_at index where there is
  one.  bigserial, identity and gen_random_uuid() run twice: with the key alone,
  and with an index on created_at, what they need for a time-range query.
- a time-range query, `SELECT count(*), sum(v)` of the rows of one second in the
  middle of a run: for snowflake on the key, `id >= snowflake_min_id(t1) AND id
  < snowflake_min_id(t2)`; for uuidv7() on the key, between UUIDs built from
  the millisecond timestamps (bench_uuidv7_bound(): 48 bits of Unix ms, every
  other bit zero, so that it sorts before every UUIDv7 of that ms); for the
  others on created_at, through its own index.  Execution time from EXPLAIN
  ANALYZE, warm cache, interleaved rounds; the rows found on the key are checked
  once against a scan that decodes each key's time.

Medians of the rounds, their min and max, and ratios to snowflake taken within
each round.  Writes uuidv7.md and uuidv7.csv.  Nothing is asserted.

What it may call: servers, report, and pg_waldump from PG_BIN.

    python3 -m snowbench.uuidv7 --work DIR --results DIR [--quick]
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import time

from . import provenance
from .report import Results, fmt, write_csv
from .servers import PG_BIN, Server, as_postgres, log, median, pgbench_tps, pgbench_transactions, rotated

MODES = {
    "full": dict(rounds=7, t=15, prefill=500_000, query_rounds=9),
    "quick": dict(rounds=2, t=3, prefill=50_000, query_rounds=3),
}
CLIENTS = 2
WINDOW_S = 1.0                  # the time range the query asks for
ASYNC_COMMIT = "-c synchronous_commit=off"

# (label, table, id column definition, index on created_at, time-range predicate with {t1} {t2} or None)
KEYS = [
    ("snowflake_nextval()", "keys_snowflake", "id bigint PRIMARY KEY DEFAULT snowflake_nextval()", False,
     "id >= snowflake_min_id('{t1}') AND id < snowflake_min_id('{t2}')"),
    ("uuidv7()", "keys_uuidv7", "id uuid PRIMARY KEY DEFAULT uuidv7()", False,
     "id >= bench_uuidv7_bound('{t1}') AND id < bench_uuidv7_bound('{t2}')"),
    ("bigserial", "keys_bigserial", "id bigserial PRIMARY KEY", False, None),
    ("identity", "keys_identity", "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", False, None),
    ("gen_random_uuid()", "keys_uuidv4", "id uuid PRIMARY KEY DEFAULT gen_random_uuid()", False, None),
    ("bigserial + created_at index", "keys_bigserial_ts", "id bigserial PRIMARY KEY", True,
     "created_at >= '{t1}' AND created_at < '{t2}'"),
    ("identity + created_at index", "keys_identity_ts", "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", True,
     "created_at >= '{t1}' AND created_at < '{t2}'"),
    ("gen_random_uuid() + created_at index", "keys_uuidv4_ts", "id uuid PRIMARY KEY DEFAULT gen_random_uuid()", True,
     "created_at >= '{t1}' AND created_at < '{t2}'"),
]
REF = KEYS[0][0]
# how each queried table's rows can be told by the time in their key (for the check)
DECODED = {
    "keys_snowflake": "snowflake_timestamp(id)",
    "keys_uuidv7": "uuid_extract_timestamp(id)",
}

# The smallest UUID of a millisecond: its Unix time in ms in the first 48 bits,
# zeros elsewhere (a UUIDv7 of that ms has at least its version bits set, so it
# sorts after it; every UUIDv7 of the ms before sorts below).  IMMUTABLE, like
# snowflake_min_id(): with a constant argument the planner folds it, and the
# primary key's index answers the range.
SETUP_SQL = """
CREATE EXTENSION IF NOT EXISTS snowflake;
CREATE FUNCTION bench_uuidv7_bound(ts timestamptz) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (lpad(to_hex(floor(extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid;
"""


def loadavg():
    """The 1-minute load average of the machine (other work competing for the cores)."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def lsn(srv):
    return srv.value("SELECT pg_current_wal_insert_lsn()")


def lsn_diff(srv, a, b):
    return int(srv.value(f"SELECT pg_wal_lsn_diff('{b}', '{a}')::bigint"))


def waldump_fpi_bytes(srv, start, end):
    """Bytes of full-page images in the WAL between two LSNs (pg_waldump --stats); None if unreadable."""
    # a transaction with an xid commits with a flush, which writes out everything before it
    srv.value("SELECT pg_current_xact_id()")
    out = subprocess.run(as_postgres([f"{PG_BIN}/pg_waldump", f"--path={srv.data}/pg_wal",
                                      f"--start={start}", f"--end={end}", "--stats"]),
                         capture_output=True, text=True)
    m = re.search(r"^Total\s+\d+\s+\d+\s+\[[^\]]*\]\s+(\d+)\s+\[", out.stdout, re.M)
    if not m:
        log(f"pg_waldump: could not read the totals: {(out.stderr or out.stdout).strip()[-300:]}")
        return None
    return int(m.group(1))


def run(args):
    mode = "quick" if args.quick else "full"
    cfg = MODES[mode]
    started = time.time()
    load = [loadavg()]
    res = Results()
    env = dict(os.environ, PGOPTIONS=ASYNC_COMMIT)
    d = os.path.join(args.work, "pgbench")
    os.makedirs(d, exist_ok=True)
    srv = Server(args.work, "keys")
    try:
        srv.start()
        version = int(srv.value("SHOW server_version_num"))
        if version < 180000:
            raise SystemExit(f"the uuidv7 comparison needs PostgreSQL 18 or later (uuidv7()); this is "
                             f"{srv.value('SHOW server_version')} in {PG_BIN} (see bench/README.md)")
        srv.psql(SETUP_SQL)
        info = provenance.collect(args.command)
        provenance.add_server(info, srv)
        log(f"{mode} run: {len(KEYS)} tables, prefill {cfg['prefill']:,} rows each, {cfg['rounds']} rounds of "
            f"pgbench -c {CLIENTS} -T {cfg['t']} per table")
        sql = ""
        for _, table, idcol, ts_index, _ in KEYS:
            sql += (f"CREATE TABLE {table} ({idcol}, created_at timestamptz NOT NULL DEFAULT now(), "
                    "v int NOT NULL);\n")
            if ts_index:
                sql += f"CREATE INDEX {table}_created_at ON {table} (created_at);\n"
        for _, table, *_ in KEYS:
            sql += f"INSERT INTO {table} (v) SELECT 0 FROM generate_series(1, {cfg['prefill']});\n"
        srv.psql(sql, env)
        files = []
        for label, table, *_ in KEYS:
            path = os.path.join(d, f"{table}.sql")
            with open(path, "w") as f:
                f.write(f"INSERT INTO {table} (v) VALUES (0);\n")
            files.append((label, table, path))
        for _, _, path in files:                                                 # warm-up
            srv.pgbench(["-c", str(CLIENTS), "-j", str(CLIENTS), "-T", "1", "-f", path], d, env)

        acc = {label: dict(rps=[], wal=[], fpi=[]) for label, _, _ in files}
        windows = {}
        mid_round = cfg["rounds"] // 2
        for r in range(cfg["rounds"]):
            srv.psql("CHECKPOINT;")
            for label, table, path in rotated(files, r):
                t0 = srv.value("SELECT clock_timestamp()")
                l0 = lsn(srv)
                out = srv.pgbench(["-c", str(CLIENTS), "-j", str(CLIENTS), "-T", str(cfg["t"]), "-f", path], d, env)
                l1 = lsn(srv)
                t1 = srv.value("SELECT clock_timestamp()")
                rows = pgbench_transactions(out)
                rps = pgbench_tps(out)
                wal = lsn_diff(srv, l0, l1) / rows
                fpi_bytes = waldump_fpi_bytes(srv, l0, l1)
                fpi = None if fpi_bytes is None else fpi_bytes / rows
                acc[label]["rps"].append(rps)
                acc[label]["wal"].append(wal)
                acc[label]["fpi"].append(fpi)
                res.add("uuidv7_insert", label, CLIENTS, r + 1, "rows_per_s", rps)
                res.add("uuidv7_insert", label, CLIENTS, r + 1, "rows", rows)
                res.add("uuidv7_insert", label, CLIENTS, r + 1, "wal_bytes_per_row", wal)
                res.add("uuidv7_insert", label, CLIENTS, r + 1, "fpi_bytes_per_row", fpi)
                if r == mid_round:
                    windows[table] = (t0, t1)
            log(f"  round {r + 1}: " + ", ".join(f"{label} {acc[label]['rps'][-1]:,.0f}/s "
                                                 f"{acc[label]['wal'][-1]:.0f} B" for label, _, _ in files))

        log("sizes, VACUUM ANALYZE")
        srv.psql("VACUUM ANALYZE;", env)
        sizes = {}
        for label, table, _, ts_index, _ in KEYS:
            count, heap, pk, tsi = srv.value(
                f"SELECT count(*), pg_relation_size('{table}'), pg_relation_size('{table}_pkey'), "
                + (f"pg_relation_size('{table}_created_at')" if ts_index else "NULL")
                + f" FROM {table}").split("|")
            count = int(count)
            sizes[label] = dict(rows=count, heap=int(heap) / count, pk=int(pk) / count,
                                ts=int(tsi) / count if tsi else None)
            for metric, v in (("rows", count), ("table_bytes_per_row", sizes[label]["heap"]),
                              ("pk_bytes_per_row", sizes[label]["pk"]),
                              ("created_at_index_bytes_per_row", sizes[label]["ts"])):
                res.add("uuidv7_size", label, 0, 0, metric, v)

        queries = query_part(srv, cfg, res, windows)
        load.append(loadavg())
    finally:
        srv.stop()
    elapsed = time.time() - started

    inserts = []
    ref = acc[REF]
    for label, _, _ in files:
        a = acc[label]
        inserts.append(dict(
            label=label, rps=a["rps"], wal=a["wal"], fpi=a["fpi"],
            rps_ratio=median([x / y for x, y in zip(a["rps"], ref["rps"])]),
            wal_ratio=median([x / y for x, y in zip(a["wal"], ref["wal"])]),
            **sizes[label]))
    res.parts["uuidv7"] = dict(inserts=inserts, queries=queries, cfg=cfg, mode=mode, load=load)
    os.makedirs(args.results, exist_ok=True)
    write_csv(os.path.join(args.results, "uuidv7.csv"), res)
    text = write_markdown(os.path.join(args.results, "uuidv7.md"), res, info, elapsed)
    print()
    print(text)
    log(f"done in {elapsed:.0f} s: {args.results}/uuidv7.md, uuidv7.csv")


QUERIES = [  # (kind, select list): the rows themselves, and the index alone (index-only after VACUUM)
    ("rows", "count(*), sum(v)"),
    ("index only", "count(*)"),
]


def query_part(srv, cfg, res, windows):
    """The time-range queries on each table that can answer them from an index; medians of interleaved rounds."""
    ranges, qs = [], []
    for label, table, _, _, pred in KEYS:
        if pred is None:
            continue
        a, b = windows[table]
        # one second in the middle of the table's run of the middle round, on ms boundaries
        t1, t2 = srv.value(
            f"SELECT to_char(m AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') || '+00' || '|' || "
            f"to_char((m + interval '{WINDOW_S} s') AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') || '+00' "
            f"FROM (SELECT date_trunc('milliseconds', '{a}'::timestamptz + ('{b}'::timestamptz - '{a}'::timestamptz) / 2"
            f" - interval '{WINDOW_S / 2} s') AS m) x").split("|")
        where = pred.format(t1=t1, t2=t2)
        found = int(srv.value(f"SELECT count(*) FROM {table} WHERE {where}"))
        check = None
        if table in DECODED:
            dec = DECODED[table]
            # a sequential scan that decodes each key: the rows the range should find
            by_decoding = int(srv.value(
                f"SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;\n"
                f"SELECT count(*) FROM {table} WHERE {dec} >= '{t1}' AND {dec} < '{t2}'"))
            check = by_decoding == found
            res.add("uuidv7_query", label, 1, 0, "rows_by_decoding", by_decoding)
        res.add("uuidv7_query", label, 1, 0, "rows", found)
        ranges.append(dict(label=label, where=where, rows=found, check=check))
        for kind, select in QUERIES:
            qs.append(dict(label=label, kind=kind, rows=found, ms=[],
                           query=f"SELECT {select} FROM {table} WHERE {where}"))
    log(f"time-range queries: {WINDOW_S:g} s of rows, warm-up and {cfg['query_rounds']} rounds")
    srv.explain_ms([q["query"] for q in qs])                                     # warm-up
    for q in qs:
        plan = srv.psql(f"EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) {q['query']};")
        q["scans"] = [re.sub(r"\s+\(cost=.*", "", line).strip(" ->") for line in plan.splitlines()
                      if "Scan" in line]
        m = re.search(r"Buffers: shared(?: hit=(\d+))?(?: read=(\d+))?", plan)  # the top node's, first
        q["buffers"] = int(m.group(1) or 0) + int(m.group(2) or 0) if m else None
        res.add("uuidv7_query", f"{q['label']} / {q['kind']}", 1, 0, "buffers", q["buffers"])
    for r in range(cfg["query_rounds"]):
        order = rotated(qs, r)
        for q, ms in zip(order, srv.explain_ms([q["query"] for q in order])):
            q["ms"].append(ms)
            res.add("uuidv7_query", f"{q['label']} / {q['kind']}", 1, r + 1, "ms", ms)
    # per row found: the windows hold the rows of one second, and the tables took rows at different rates
    for q in qs:
        ref = [x for x in qs if x["kind"] == q["kind"]][0]
        q["ratio"] = (median([(x / q["rows"]) / (y / ref["rows"]) for x, y in zip(q["ms"], ref["ms"])])
                      if q["rows"] and ref["rows"] else None)
    return dict(ranges=ranges, queries=qs)


def med_range(values, spec, unit=""):
    """'median (min–max)' of a list of rounds."""
    v = [x for x in values if x is not None]
    if not v:
        return "n/a"
    if len(v) == 1:
        return f"{format(v[0], spec)}{unit}"
    return f"{format(median(v), spec)}{unit} ({format(min(v), spec)}–{format(max(v), spec)})"


def write_markdown(path, res, info, elapsed):
    p = res.parts["uuidv7"]
    cfg = p["cfg"]
    L = []
    add = L.append
    provenance.finish(info)
    L += provenance.header(info, "Primary keys on PostgreSQL 18: snowflake, uuidv7(), gen_random_uuid(), "
                           "bigserial, identity")
    add(f"Mode **{p['mode']}**; method in `bench/README.md`. Figures are medians of interleaved rounds, with the smallest and largest "
        "round in brackets (the spread shows the machine's noise); ratios to snowflake are taken within each "
        "round, then the median. Load average (1 minute) of the machine at the start and at the end of the run: "
        f"{p['load'][0]:.1f} and {p['load'][-1]:.1f} on {info['nproc']} CPUs.\n")
    add(f"Server: scratch, default layout, `shared_buffers = 16MB`, `jit = off`, `autovacuum = off`, "
        "`max_wal_size = 4GB`. Tables `(id <key> PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), "
        f"v int NOT NULL)`, each prefilled with {cfg['prefill']:,} rows; then in each of {cfg['rounds']} rounds "
        f"(a `CHECKPOINT` first) `pgbench -n -c {CLIENTS} -j {CLIENTS} -T {cfg['t']}` of `INSERT INTO t (v) "
        "VALUES (0);` on each table in turn, the order rotating, sessions with `synchronous_commit = off`. "
        "**WAL per row**: `pg_current_wal_insert_lsn()` after the run minus before, divided by the rows it "
        "inserted; **of which full-page images**: from `pg_waldump --stats` over the same WAL (each run is "
        "the table's first after the round's checkpoint, so every page it changes is logged whole once). "
        "Sizes after the last round, per row of the table at that point. The `+ created_at index` tables are "
        "the usual way to answer time-range queries when the key carries no time.\n")
    add("## Inserts\n")
    add(f"| key | rows/s ({CLIENTS} clients) | vs snowflake | WAL per row | of which full-page images | "
        "vs snowflake | PK index per row | created_at index per row | table per row | rows |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for i in p["inserts"]:
        ts = "—" if i["ts"] is None else f"{i['ts']:.1f} B"
        add(f"| {i['label']} | {med_range(i['rps'], ',.0f')} | {fmt(i['rps_ratio'], '.2f')}× | "
            f"{med_range(i['wal'], ',.0f', ' B')} | {med_range(i['fpi'], ',.0f', ' B')} | "
            f"{fmt(i['wal_ratio'], '.2f')}× | {i['pk']:.1f} B | "
            f"{ts} | {i['heap']:.1f} B | {i['rows']:,} |")
    add("")
    add("## A time-range query\n")
    add(f"The rows of {WINDOW_S:g} s in the middle of the table's run in the middle round, after `VACUUM ANALYZE`. "
        "For snowflake and `uuidv7()` the range is on the primary key; `bench_uuidv7_bound(ts)` is the UUID with "
        "the Unix milliseconds of `ts` in its first 48 bits and zeros elsewhere, the smallest UUID of that "
        "millisecond (a condition on `uuid_extract_timestamp(id)` cannot use the primary key's index; it would "
        "need an index of its own on that expression). The other keys "
        "carry no time: their tables answer on `created_at`, through its own index. **Checked**: the rows the "
        "range found equal those a sequential scan finds by decoding each key's time "
        "(`snowflake_timestamp(id)`, `uuid_extract_timestamp(id)`).\n")
    add("| key | range | rows | checked |\n|---|---|---:|---|")
    for rg in p["queries"]["ranges"]:
        add(f"| {rg['label']} | `{rg['where']}` | {rg['rows']:,} | "
            f"{'n/a' if rg['check'] is None else ('yes' if rg['check'] else '**no**')} |")
    add("")
    add("Two queries over each range: `SELECT count(*), sum(v)` reads the rows (**rows**); `SELECT count(*)` "
        "needs only the index (**index only**: an index-only scan, the table being all-visible after "
        "`VACUUM`). Execution time from `EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON)`, one warm-up, then "
        f"{cfg['query_rounds']} rounds, the order rotating; per row found, and its ratio to snowflake's within "
        "each round (the seconds hold different numbers of rows: the tables took rows at different rates). "
        "**Buffers**: shared buffers the query touched (`EXPLAIN (ANALYZE, BUFFERS)`, once). With two clients "
        "inserting, each backend fills a heap page of its own, so rows next to each other in key (or "
        "`created_at`) order often lie on different pages, and reading the rows costs a buffer access for "
        "most rows, whatever the key.\n")
    add("| key | reads | plan | buffers | time | per row | per row vs snowflake |\n"
        "|---|---|---|---:|---:|---:|---:|")
    for q in p["queries"]["queries"]:
        per_row = [ms * 1000 / q["rows"] for ms in q["ms"]] if q["rows"] else []
        add(f"| {q['label']} | {q['kind']} | {'; '.join(q['scans'])} | {fmt(q['buffers'])} | "
            f"{med_range(q['ms'], ',.2f', ' ms')} | {fmt(median(per_row), '.3f')} µs | {fmt(q['ratio'], '.2f')}× |")
    add("")
    text = "\n".join(L)
    with open(path, "w") as f:
        f.write(text)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2 short rounds and small tables (a few minutes)")
    ap.add_argument("--work", required=True, help="empty temporary folder for the scratch server")
    ap.add_argument("--results", required=True, help="folder for uuidv7.md and uuidv7.csv")
    ap.add_argument("--command", default=" ".join(sys.argv))
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run(args)


if __name__ == "__main__":
    main()
