"""Per-call cost: what one call of each generator costs the backend, in CPU time.

What it measures: for each expression, in one session per round,

    cpu0 = snowbench_cpu_ns()
    SELECT count(f) FROM (SELECT <expr> AS f FROM (SELECT generate_series(1, N) g) x) s
    cpu1 = snowbench_cpu_ns()

and per call = (cpu1 - cpu0 - baseline) / N, where the baseline is the same
query with `g` in place of a call, measured in the same round and session.
The query streams its rows (generate_series in a select list feeds the count
row by row; `FROM generate_series(...)` would first materialise N rows in a
tuplestore, which costs more per row than the calls being measured).  CPU time
of the backend (bench/clockonly's snowbench_cpu_ns(), CLOCK_THREAD_CPUTIME_ID)
is what the calls cost, whatever else shares the cores; elapsed time is not.
Every expression runs once per round, after a warm-up in the same session, the
order rotating from round to round; medians of the rounds with their range,
and every comparison a ratio per round (ours / theirs), then its median and
range.  Expressions: snowflake_nextval() (ours), snowbench_clock() (a C
function that reads the clock ours reads and nothing else: the floor of any
clock-based generator), clock_timestamp(), nextval() of a sequence with cache 1
(what bigserial uses), gen_random_uuid(), uuidv7() on PostgreSQL 18+, and
snowflake_public_id(g), the public ID of a row's ID (issue 33: 10 rounds of
HMAC-SHA-256; beside nextval() it shows what a page of public IDs costs).

The commit watermark's cost (issue 29): snowflake_nextval() publishes where
its shard stands on the first ID of a transaction and clears it at the end;
later calls pay one compare, which is inside the per-call figure.  The first
ID's extra is measured in the same rounds, as a difference of differences:
two procedures run T transactions of one call each (`PERFORM <f>(); COMMIT;`
in a loop), one calling ours and one the clock-only function, and

    watermark = (ours_tx - clock_tx) / T - (ours - clock per call, streaming)

is what the first ID of a transaction costs beyond a later one: the publish
and the clear, and any cache misses of ours after a commit (so an upper
bound on the watermark's share).

What it may call: servers (a started Server with the snowbench extension),
stats, report (Results).
"""
from .servers import log, rotated
from .stats import fmt_range, ratios, summary

SETUP_SQL = """
CREATE EXTENSION IF NOT EXISTS snowflake;
CREATE EXTENSION IF NOT EXISTS snowbench;
CREATE SEQUENCE bench_seq CACHE 1;
CREATE PROCEDURE bench_tx_ours(n int) LANGUAGE plpgsql
    AS $$BEGIN FOR i IN 1..n LOOP PERFORM snowflake_nextval(); COMMIT; END LOOP; END$$;
CREATE PROCEDURE bench_tx_clock(n int) LANGUAGE plpgsql
    AS $$BEGIN FOR i IN 1..n LOOP PERFORM snowbench_clock(); COMMIT; END LOOP; END$$;
"""
# one transaction per call: (key, procedure), measured after the streaming queries of a round
TX = [("tx_ours", "bench_tx_ours"), ("tx_clock", "bench_tx_clock")]
QUERY = "SELECT count(f) FROM (SELECT {expr} AS f FROM (SELECT generate_series(1, {n}) g) x) s;\n"
OURS = "snowflake_nextval()"
BASELINE = "g"


def expressions(pg_num):
    """(key, label, expression, share of N): the key names the figure in the summary block.
    gen_random_uuid() and uuidv7() (a getrandom() system call each) cost some 50 times a clock
    read, and snowflake_public_id() (20 SHA-256 compressions) about as much: they make N / 8
    calls, and the baseline is scaled to them, so that a round takes seconds."""
    out = [
        ("baseline", "no call (baseline)", BASELINE, 1),
        ("ours", "snowflake_nextval()", OURS, 1),
        ("clock", "snowbench_clock() (clock only)", "snowbench_clock()", 1),
        ("clock_timestamp", "clock_timestamp()", "clock_timestamp()", 1),
        ("nextval", "nextval() cache 1", "nextval('bench_seq')", 1),
        ("gen_random_uuid", "gen_random_uuid()", "gen_random_uuid()", 8),
        ("public_id", "snowflake_public_id(g)", "snowflake_public_id(g)", 8),
    ]
    if pg_num >= 180000:
        out.append(("uuidv7", "uuidv7()", "uuidv7()", 8))
    return out


def measure_script(exprs, warm_n, tag="R", tx=(), tx_n=0):
    """A psql script: a warm-up of each (i, expression, n), then each measured between two CPU
    readings; prints 'tag|i|cpu ns' per expression i; then each (key, procedure) of tx called
    with tx_n transactions, printing 'T|key|cpu ns'."""
    sql = ["SET client_min_messages = warning;\n"]
    for _, expr, _ in exprs:
        sql.append(QUERY.format(expr=expr, n=warm_n))
    for _, proc in tx:
        sql.append(f"CALL {proc}({max(tx_n // 20, 100)});\n")
    for i, expr, n in exprs:
        sql.append("SELECT snowbench_cpu_ns() AS c0 \\gset\n")
        sql.append(QUERY.format(expr=expr, n=n))
        sql.append(f"SELECT '{tag}', {i}, snowbench_cpu_ns() - :c0;\n")
    for key, proc in tx:
        sql.append("SELECT snowbench_cpu_ns() AS c0 \\gset\n")
        sql.append(f"CALL {proc}({tx_n});\n")
        sql.append(f"SELECT 'T', '{key}', snowbench_cpu_ns() - :c0;\n")
    return "".join(sql)


def run(srv, cfg, res, pg_num):
    n, rounds, tx_n = cfg["percall_n"], cfg["percall_rounds"], cfg["percall_tx"]
    exprs = expressions(pg_num)
    keys = [k for k, _, _, _ in exprs]
    calls = {k: n // div for k, _, _, div in exprs}
    log(f"per call: {len(exprs)} expressions, N = {n:,}, {rounds} rounds")
    ns = {k: [] for k in keys}                     # per call above the baseline, per round
    raw = {k: [] for k in keys}                    # CPU ns of the whole query, per round
    # per round: ours - clock-only per transaction, per call in the streaming query, and the difference
    tx = {"tx_ours_over_clock_ns": [], "stream_ours_over_clock_ns": [], "watermark_ns": []}
    for r in range(rounds):
        order = rotated(list(range(len(exprs))), r)
        out = srv.psql(measure_script([(i, exprs[i][2], calls[exprs[i][0]]) for i in order], max(n // 20, 1000),
                                      tx=rotated(TX, r), tx_n=tx_n))
        cpu = {exprs[int(i)][0]: int(v) for i, v in srv.tagged(out)}
        tcpu = {k: int(v) for k, v in srv.tagged(out, "T")}
        if set(cpu) != set(keys) or set(tcpu) != {k for k, _ in TX}:
            raise RuntimeError(f"per call: could not read the CPU times of round {r + 1}")
        for k in keys:
            raw[k].append(cpu[k])
            ns[k].append(None if k == "baseline" else
                         (cpu[k] - cpu["baseline"] * calls[k] / n) / calls[k])
            res.add("percall", k, 1, r + 1, "query_cpu_ns", cpu[k])
            if k != "baseline":
                res.add("percall", k, 1, r + 1, "ns_per_call", ns[k][-1])
        tx["tx_ours_over_clock_ns"].append((tcpu["tx_ours"] - tcpu["tx_clock"]) / tx_n)
        tx["stream_ours_over_clock_ns"].append(ns["ours"][-1] - ns["clock"][-1])
        tx["watermark_ns"].append(tx["tx_ours_over_clock_ns"][-1] - tx["stream_ours_over_clock_ns"][-1])
        for k, v in tcpu.items():
            res.add("percall", k, 1, r + 1, "query_cpu_ns", v)
        res.add("percall", "watermark", 1, r + 1, "ns_per_transaction", tx["watermark_ns"][-1])
        log(f"  round {r + 1}: " + ", ".join(f"{k} {ns[k][-1]:.0f}" for k in keys if k != "baseline")
            + f" ns (baseline {cpu['baseline'] / n:.0f} ns per row); first ID of a transaction "
            f"{tx['watermark_ns'][-1]:+.0f} ns")
    base_per_row = [v / n for v in raw["baseline"]]
    cmp = {k: ratios(ns["ours"], ns[k]) for k in keys if k not in ("baseline", "ours")}
    res.parts["percall"] = dict(n=n, rounds=rounds, exprs=exprs, ns=ns, base_per_row=base_per_row, ratios=cmp,
                                tx_n=tx_n, tx=tx)


def summary_lines(p):
    """key = value lines of the summary block (keys match the README's markers)."""
    pc = p["percall"]
    out = [f"percall.ours_ns = {fmt_range(pc['ns']['ours'], '.0f')}"]
    for k, v in pc["ratios"].items():
        out.append(f"percall.ours_over_{k} = {fmt_range(v)}")
    for k, _, _, _ in pc["exprs"]:
        if k not in ("baseline", "ours"):
            out.append(f"percall.{k}_ns = {fmt_range(pc['ns'][k], '.0f')}")
    out.append(f"percall.watermark_first_id_ns = {fmt_range(pc['tx']['watermark_ns'], '.0f')}")
    return out


def section(p):
    pc = p["percall"]
    L = ["## 1. Per call\n",
         f"`SELECT count(f) FROM (SELECT <expr> AS f FROM (SELECT generate_series(1, {pc['n']:,}) g) x) s`, "
         "the backend's CPU time (`snowbench_cpu_ns()`) before and after, minus the same query with `g` "
         f"(no call) in the same round and session, divided by N. {pc['rounds']} rounds, every expression "
         "once per round after a warm-up, the order rotating; median [min-max] of the rounds. Server: "
         "`snowflake.shard_bits = 3`, `sequence_bits = 22` (4,194,304 IDs per ms: the layout's ceiling "
         "never binds, so the figure is the code's cost).\n",
         "| expression | CPU ns per call, median [min-max] | ours / it, per round: median [min-max] |",
         "|---|---:|---:|"]
    for k, label, expr, div in pc["exprs"]:
        note = "" if div == 1 else f" (N / {div} calls, the baseline scaled to them)"
        if k == "baseline":
            L.append(f"| no call: `g` (baseline, ns per row) | {fmt_range(pc['base_per_row'], '.0f')} | |")
        elif k == "ours":
            L.append(f"| **`{expr}`** (ours) | {fmt_range(pc['ns'][k], '.1f')} | 1 |")
        else:
            L.append(f"| `{expr}`{note} | {fmt_range(pc['ns'][k], '.1f')} | {fmt_range(pc['ratios'][k])} |")
    m = summary(pc["ratios"]["clock"])[0]
    L.append("")
    L.append(f"ours / clock-only (`snowbench_clock()`), per round, sorted: {' '.join(f'{v:.2f}' for v in sorted(pc['ratios']['clock']))}"
             + ("" if m is None else f" (median {m:.2f})") + "\n")
    L += ["### The commit watermark's cost\n",
          f"In the same rounds, after the queries: {pc['tx_n']:,} transactions of one call each "
          "(`CALL bench_tx_ours(T)`: `PERFORM snowflake_nextval(); COMMIT;` in a PL/pgSQL loop, and the "
          "same with `snowbench_clock()`), the order rotating. A first ID publishes where the shard "
          "stands and the commit clears it; later IDs of a transaction pay one compare, which is "
          "inside the per-call figure above.\n",
          "| per transaction of one ID, median [min-max] | CPU ns |",
          "|---|---:|",
          f"| ours - clock-only, per transaction | {fmt_range(pc['tx']['tx_ours_over_clock_ns'], '.0f')} |",
          f"| ours - clock-only, per call in one query (above) | "
          f"{fmt_range(pc['tx']['stream_ours_over_clock_ns'], '.0f')} |",
          f"| **first ID's extra** (the difference; includes cache misses after a commit) | "
          f"{fmt_range(pc['tx']['watermark_ns'], '.0f')} |",
          ""]
    return L
