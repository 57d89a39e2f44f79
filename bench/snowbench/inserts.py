"""Inserts with the ID as primary key (part 4 of the standard run).

What it measures: single-row INSERT TPS (`pgbench -c 2 -j 2 -t T` of `INSERT
INTO t (v) VALUES (0);`) into tables keyed by snowflake_nextval(), bigserial and
gen_random_uuid(), and by snowflake_nextval() into a key of the snowflake type,
prefilled, in turn by round, plus a paired run of one script inserting into
all four (per-statement latencies, -r); the size of each
primary-key index; and a bulk `INSERT ... SELECT` into fresh tables (checkpoint
before each) for bigserial, snowflake_nextval(), snowflake_nextval_batch(n) and
gen_random_uuid().  Sessions use synchronous_commit = off.  Medians over rounds.
(PostgreSQL 18's uuidv7() and identity columns are in the uuidv7 module.)

What it may call: servers (a started Server, log, median, rotated,
pgbench_tps) and report (Results, fmt, mib, plot_data).
"""
import os
import re

from .report import fmt, mib, plot_data
from .servers import log, median, pgbench_tps, rotated

TABLES = [  # (label, table, id column definition)
    ("snowflake_nextval()", "ins_snowflake", "id bigint PRIMARY KEY DEFAULT snowflake_nextval()"),
    # the same generator into a key of the snowflake type (1.3): no dearer than bigint
    ("snowflake type", "ins_sftype", "id snowflake PRIMARY KEY DEFAULT snowflake_nextval()"),
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
# sessions without a wait for the WAL flush at commit (the same for all keys)
ASYNC_COMMIT = "-c synchronous_commit=off"


def index_pages(srv, table, env):
    return int(srv.psql(f"SELECT pg_relation_size('{table}_pkey') / 8192", env).strip())


def run(srv, cfg, res, work):
    """4. Single-row INSERT TPS and index size; bulk INSERT ... SELECT."""
    env = dict(os.environ, PGOPTIONS=ASYNC_COMMIT)
    d = os.path.join(work, "pgbench")
    os.makedirs(d, exist_ok=True)
    t = cfg["insert_t"]
    pre = cfg["prefill"]
    log(f"part 4: inserts: prefill {pre:,} rows a table, pgbench -c 2 -t {t:,}, {cfg['pgbench_rounds']} rounds")
    sql = ""
    for _, table, idcol in TABLES:
        sql += f"CREATE TABLE {table} ({idcol}, v int NOT NULL);\n"
    for _, table, _ in TABLES:
        sql += f"INSERT INTO {table} (v) SELECT 0 FROM generate_series(1, {pre});\n"
    srv.psql(sql + "CHECKPOINT;\n", env)
    files = []
    for label, table, _ in TABLES:
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


def targets(p):
    """(target, measured, met) rows: INSERT TPS within 5% of bigserial's, index size."""
    r = {row[0]: row for row in p["insert"]["rows"]}
    sf, bs, uu = r["snowflake_nextval()"], r["bigserial"], r["gen_random_uuid()"]
    return [("single-row INSERT TPS within 5% of bigserial's (or better)",
             f"{fmt(sf[2], '.1%')} of it (paired: {fmt(sf[3], '.1%')})",
             None if sf[2] is None else sf[2] >= 0.95),
            ("primary-key index the size of bigserial's and far below (at most 2/3 of) UUID's",
             f"{sf[4]:,} pages vs bigserial {bs[4]:,} and UUID {uu[4]:,} ({sf[4] / uu[4]:.0%} of UUID's)",
             sf[4] == bs[4] and sf[4] <= uu[4] * 2 / 3)] + type_targets(r)


def type_targets(r):
    """The snowflake type's key against a bigint key fed by the same generator (paired rounds)."""
    if "snowflake type" not in r:
        return []
    ty, sf = r["snowflake type"], r["snowflake_nextval()"]
    ratio = ty[3] / sf[3] if ty[3] and sf[3] else None
    return [("single-row INSERT into a snowflake-typed key within 5% of a bigint key's (paired)",
             f"{fmt(ratio, '.1%')} of it; index {ty[4]:,} pages vs {sf[4]:,}",
             None if ratio is None else ratio >= 0.95)]


def notes(p):
    """Facts from the same runs that help read the targets (no judgement)."""
    r = {row[0]: row for row in p["insert"]["rows"]}
    if "bigserial" in r and "snowflake_nextval()" in r:
        return [f"Single-row INSERT: snowflake {fmt(r['snowflake_nextval()'][2], '.1%')} of bigserial's TPS in "
                f"separate runs, {fmt(r['snowflake_nextval()'][3], '.1%')} in the paired runs."]
    return []


def section(p, cfg):
    """The Markdown lines of part 4 (single-row inserts, then bulk if it ran)."""
    L = []
    add = L.append
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
    return L


def panel(p, work):
    """The gnuplot panel of part 4."""
    rows = p["insert"]["rows"]
    bs = [r for r in rows if r[0] == "bigserial"][0]
    fn = plot_data(work, "insert.dat", [(r[0], r[2] and r[2] * 100, r[3] and r[3] * 100, r[4] / bs[4] * 100)
                                        for r in rows])
    return f"""
set title "4. Inserts: % of bigserial"
set yrange [0:*]
set key top left vertical maxrows auto samplen 4
set style histogram clustered gap 1
plot '{fn}' using 2:xtic(1) title 'INSERT TPS' lc rgb '#4472c4', '' using 3 title 'INSERT, paired' lc rgb '#9dc3e6', \\
     '' using 4 title 'PK index size' lc rgb '#ed7d31', 95 with lines dt 2 lc rgb 'red' title '95%'"""
