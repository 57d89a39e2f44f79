"""Inserts: a table keyed by snowflake_nextval() against each other key, in paired rounds.

What it measures: for each other key (the same generator into a key of the
snowflake type, bigserial, an identity column, gen_random_uuid(), and uuidv7()
on PostgreSQL 18+), two tables
`(id <key> PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), v int
NOT NULL)`, ours and theirs, prefilled with the same number of rows.  Then
paired rounds, A B A B: each round inserts into both, ours first in even
rounds and theirs first in odd ones, each run `pgbench -n -c 2 -j 2 -t T` of
`INSERT INTO t (v) VALUES (0);` after a CHECKPOINT (so every run starts alike;
full-page images of the pages it changes are in its WAL), in sessions with
synchronous_commit = off (the disk's flush latency, the same for every key,
would hide the keys' cost).  Both tables get the same number of rows in every
round, so they keep the same size.  Per run: rows/s (pgbench's rate) and WAL
bytes per row (pg_current_wal_insert_lsn() after minus before, divided by the
rows; autovacuum is off and nothing else writes).  Per round: the ratio of
rows/s, ours / theirs.  At the end: bytes per row of each primary-key index.

What it may call: servers, stats, report (Results).
"""
import os

from .servers import log, pgbench_tps, pgbench_transactions
from .stats import fmt_range, ratios, summary

CLIENTS = 2
ASYNC_COMMIT = "-c synchronous_commit=off"
OURS_COL = "id bigint PRIMARY KEY DEFAULT snowflake_nextval()"


def keys(pg_num):
    """(key, label, id column definition) of the keys compared with ours."""
    out = [("sftype", "snowflake type", "id snowflake PRIMARY KEY DEFAULT snowflake_nextval()"),
           ("bigserial", "bigserial", "id bigserial PRIMARY KEY"),
           ("identity", "identity", "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY"),
           ("gen_random_uuid", "gen_random_uuid()", "id uuid PRIMARY KEY DEFAULT gen_random_uuid()")]
    if pg_num >= 180000:
        out.append(("uuidv7", "uuidv7()", "id uuid PRIMARY KEY DEFAULT uuidv7()"))
    return out


def lsn(srv):
    return srv.value("SELECT pg_current_wal_insert_lsn()")


def one_run(srv, table, path, d, env, cfg):
    srv.psql("CHECKPOINT;")
    l0 = lsn(srv)
    out = srv.pgbench(["-c", str(CLIENTS), "-j", str(CLIENTS), "-t", str(cfg["insert_t"]), "-f", path], d, env)
    l1 = lsn(srv)
    rows = pgbench_transactions(out)
    wal = int(srv.value(f"SELECT pg_wal_lsn_diff('{l1}', '{l0}')::bigint"))
    return pgbench_tps(out), wal / rows


def run(srv, cfg, res, pg_num, work):
    env = dict(os.environ, PGOPTIONS=ASYNC_COMMIT)
    d = os.path.join(work, "inserts")
    os.makedirs(d, exist_ok=True)
    ks = keys(pg_num)
    rounds = cfg["insert_rounds"]
    log(f"inserts: ours against {', '.join(k for k, _, _ in ks)}; prefill {cfg['prefill']:,} rows, "
        f"{rounds} paired rounds of pgbench -c {CLIENTS} -t {cfg['insert_t']:,} per table")
    sql = "CREATE EXTENSION IF NOT EXISTS snowflake;\n"
    for k, _, col in ks:
        for table, c in ((f"ours_vs_{k}", OURS_COL), (f"theirs_{k}", col)):
            sql += (f"CREATE TABLE {table} ({c}, created_at timestamptz NOT NULL DEFAULT now(), v int NOT NULL);\n"
                    f"INSERT INTO {table} (v) SELECT 0 FROM generate_series(1, {cfg['prefill']});\n")
    srv.psql(sql, env)
    paths = {}
    for k, _, _ in ks:
        for table in (f"ours_vs_{k}", f"theirs_{k}"):
            paths[table] = os.path.join(d, f"{table}.sql")
            with open(paths[table], "w") as f:
                f.write(f"INSERT INTO {table} (v) VALUES (0);\n")
            srv.pgbench(["-c", str(CLIENTS), "-j", str(CLIENTS), "-t", "200", "-f", paths[table]], d, env)  # warm-up
    acc = {k: dict(ours_rps=[], theirs_rps=[], ours_wal=[], theirs_wal=[]) for k, _, _ in ks}
    for r in range(rounds):
        for k, _, _ in ks:
            pair = [("ours", f"ours_vs_{k}"), ("theirs", f"theirs_{k}")]
            for side, table in (pair if r % 2 == 0 else pair[::-1]):
                rps, wal = one_run(srv, table, paths[table], d, env, cfg)
                acc[k][f"{side}_rps"].append(rps)
                acc[k][f"{side}_wal"].append(wal)
                item = "snowflake_nextval()" if side == "ours" else k
                res.add("inserts", f"{item} (pair {k})", CLIENTS, r + 1, "rows_per_s", rps)
                res.add("inserts", f"{item} (pair {k})", CLIENTS, r + 1, "wal_bytes_per_row", wal)
        log(f"  round {r + 1}: " + ", ".join(
            f"{k} {acc[k]['ours_rps'][-1] / acc[k]['theirs_rps'][-1]:.2f}" for k, _, _ in ks) + " (ours / theirs)")
    sizes = {}
    for k, _, _ in ks:
        for side, table in (("ours", f"ours_vs_{k}"), ("theirs", f"theirs_{k}")):
            count, pk = srv.value(f"SELECT count(*), pg_relation_size('{table}_pkey') FROM {table}").split("|")
            sizes[(k, side)] = int(pk) / int(count)
            res.add("inserts", table, 0, 0, "rows", int(count))
            res.add("inserts", table, 0, 0, "pk_bytes_per_row", sizes[(k, side)])
    res.parts["inserts"] = dict(
        keys=ks, rounds=rounds, t=cfg["insert_t"], prefill=cfg["prefill"], acc=acc, sizes=sizes,
        ratio={k: ratios(acc[k]["ours_rps"], acc[k]["theirs_rps"]) for k, _, _ in ks},
        pg_major=pg_num // 10000)


def summary_lines(p):
    c = p["inserts"]
    v = f"pg{c['pg_major']}"
    out = []
    ours_wal = [w for k, _, _ in c["keys"] for w in c["acc"][k]["ours_wal"]]
    ours_pk = [c["sizes"][(k, "ours")] for k, _, _ in c["keys"]]
    out.append(f"inserts.{v}.wal_per_row.ours = {fmt_range(ours_wal, '.0f', ' B')}")
    out.append(f"inserts.{v}.index_per_row.ours = {fmt_range(ours_pk, '.1f', ' B')}")
    for k, _, _ in c["keys"]:
        out.append(f"inserts.{v}.ours_over_{k} = {fmt_range(c['ratio'][k])}")
        out.append(f"inserts.{v}.wal_per_row.{k} = {fmt_range(c['acc'][k]['theirs_wal'], '.0f', ' B')}")
        out.append(f"inserts.{v}.index_per_row.{k} = {c['sizes'][(k, 'theirs')]:.1f} B")
    return out


def section(p):
    c = p["inserts"]
    L = [f"## 3. Inserts, PostgreSQL {c['pg_major']}\n",
         "Tables `(id <key> PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), v int NOT NULL)`, "
         f"ours and theirs per key, each prefilled with {c['prefill']:,} rows; {c['rounds']} paired rounds "
         "(A B, B A, ...): each round one run on ours and one on theirs, "
         f"`pgbench -n -c {CLIENTS} -j {CLIENTS} -t {c['t']:,}` of `INSERT INTO t (v) VALUES (0);`, a CHECKPOINT "
         "before each run, `synchronous_commit = off`. rows/s ratio per round (ours / theirs), WAL bytes per "
         "row per run: median [min-max]. Index: bytes of the primary key per row after the last round.\n",
         "| key | rows/s, ours / it | its rows/s | ours rows/s (same rounds) | WAL per row: it | ours | "
         "PK index per row: it | ours |",
         "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for k, label, _ in c["keys"]:
        a = c["acc"][k]
        L.append(f"| `{label}` | {fmt_range(c['ratio'][k])} | {fmt_range(a['theirs_rps'], ',.0f')} | "
                 f"{fmt_range(a['ours_rps'], ',.0f')} | {fmt_range(a['theirs_wal'], '.0f', ' B')} | "
                 f"{fmt_range(a['ours_wal'], '.0f', ' B')} | {c['sizes'][(k, 'theirs')]:.1f} B | "
                 f"{c['sizes'][(k, 'ours')]:.1f} B |")
    L.append("")
    for k, label, _ in c["keys"]:
        m = summary(c["ratio"][k])[0]
        L.append(f"ours / `{label}`, every round sorted: "
                 + " ".join(f"{x:.2f}" for x in sorted(c["ratio"][k])) + ("" if m is None else f" (median {m:.2f})"))
    L.append("")
    return L
