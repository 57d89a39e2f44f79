"""Contention: one backend against two on one shard, for both generators.

What it measures: on two servers, snowflake.generator = 'atomic' and
'lwlock' (wide layout, so the ceiling never binds), the CPU time per call of
snowflake_nextval() (all on shard 0) with one backend alone and with two
backends calling at the same moment, each measured like percall.py (the
streaming query between two readings of snowbench_cpu_ns(), minus the
baseline query `g` run by the same number of backends in the same round).
The two backends start together: each connects and warms up, then waits on
an advisory lock this module holds, and both go when it is released; each
also records when its query started and ended, and the overlap of the two
is reported.  Per round and generator: 1 backend, 2 backends, their ratio;
the configurations run in an order rotating from round to round.  On a
virtual machine the 2-backend figure is often bimodal (the two vCPUs share a
core, or do not), so the distribution of the per-round ratio is printed, not
only its median.

A control in the same rounds: one and two backends calling the clock-only
function snowbench_clock() on the 'atomic' server, which share nothing.  Its
2 / 1 ratio is what the machine alone does to two busy backends (two vCPUs
placed on one physical core run each other's instructions at part speed),
so (ours 2 / 1) / (clock-only 2 / 1) per round is the part of the ratio the
shared state word adds.

What it may call: servers, stats, percall (QUERY, SETUP_SQL), report (Results).
"""
import subprocess
import time

from .percall import QUERY, SETUP_SQL
from .servers import log, rotated
from .stats import fmt_range, histogram, ratios, sorted_list

GENERATORS = ("atomic", "lwlock")
CONF = """
snowflake.shard_bits = 3        # wide sequence field: 2^22 IDs per ms, a ceiling that never binds
snowflake.sequence_bits = 22
snowflake.shard_id = 0
snowflake.generator = '{generator}'
"""
LOCK = 727274                   # the advisory lock the backends wait on to start together
EXPR = "snowflake_nextval()"
CLOCK = "snowbench_clock()"     # the control: shares nothing between backends


def worker_script(expr, n, warm_n, barrier):
    sql = ["SET client_min_messages = warning;\n", QUERY.format(expr=expr, n=warm_n)]
    if barrier:
        sql.append(f"SELECT pg_advisory_lock_shared({LOCK}) IS NULL AS x \\gset\n"
                   f"SELECT pg_advisory_unlock_shared({LOCK}) IS NULL AS x \\gset\n")
    sql.append("SELECT snowbench_cpu_ns() AS c0, extract(epoch FROM clock_timestamp()) AS t0 \\gset\n")
    sql.append(QUERY.format(expr=expr, n=n))
    sql.append("SELECT 'R', snowbench_cpu_ns() - :c0, :t0, extract(epoch FROM clock_timestamp());\n")
    return "".join(sql)


def waiting(srv):
    return int(srv.value(f"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = {LOCK} "
                         "AND NOT granted"))


def one_config(srv, backends, expr, n):
    """CPU ns of each backend's query, the overlap of the queries (1.0 for one backend), and the
    share of its query's wall time each backend spent on a CPU (mean of the backends)."""
    script = worker_script(expr, n, max(n // 20, 1000), backends > 1)
    if backends == 1:
        (cpu, t0, t1), = srv.tagged(srv.psql(script))
        return [int(cpu)], 1.0, int(cpu) / 1e9 / max(float(t1) - float(t0), 1e-9)
    holder = srv.script_background("SET application_name = 'snowbench_start';\n"
                                   f"SELECT pg_advisory_lock({LOCK}) IS NULL AS x \\gset\n"
                                   "SELECT pg_sleep(3600);\n")
    try:
        deadline = time.time() + 60
        while srv.value(f"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = {LOCK} "
                        "AND granted") != "1":
            if time.time() > deadline:
                raise RuntimeError("contention: the start lock was not taken")
            time.sleep(0.02)
        workers = [srv.script_background(script) for _ in range(backends)]
        while waiting(srv) < backends:
            if time.time() > deadline or any(w.poll() is not None for w in workers):
                raise RuntimeError("contention: the backends did not reach the start")
            time.sleep(0.02)
    finally:
        # ends the holder's session, which releases the lock: the backends go
        srv.value("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                  "WHERE application_name = 'snowbench_start'")
        try:
            holder.wait(timeout=30)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()
    rows = [srv.tagged(srv.finish_script(w))[0] for w in workers]
    cpu = [int(r[0]) for r in rows]
    t0 = [float(r[1]) for r in rows]
    t1 = [float(r[2]) for r in rows]
    overlap = max(0.0, min(t1) - max(t0)) / max(b - a for a, b in zip(t0, t1))
    oncpu = sum(c / 1e9 / max(b - a, 1e-9) for c, a, b in zip(cpu, t0, t1)) / len(cpu)
    return cpu, overlap, oncpu


def run(servers, cfg, res):
    n, rounds = cfg["contention_n"], cfg["contention_rounds"]
    configs = [(g, b, e) for g in GENERATORS for b in (1, 2) for e in ("g", EXPR)] + \
        [("atomic", b, CLOCK) for b in (1, 2)]
    log(f"contention: 1 and 2 backends on one shard, generators {', '.join(GENERATORS)}, N = {n:,} "
        f"per backend, {rounds} rounds")
    for s in servers.values():
        gen = s.value("SHOW snowflake.generator")
        if gen != s.name:
            raise RuntimeError(f"server {s.name} runs snowflake.generator = {gen}")
    per_call = {(g, b): [] for g in GENERATORS + ("clock",) for b in (1, 2)}
    overlap = {g: [] for g in GENERATORS}
    oncpu = {(g, b): [] for g in GENERATORS for b in (1, 2)}
    for r in range(rounds):
        cpu = {}
        for g, b, e in rotated(configs, r):
            cpu[(g, b, e)], ov, share = one_config(servers[g], b, e, n)
            if e == EXPR:
                oncpu[(g, b)].append(share)
                res.add("contention", g, b, r + 1, "on_cpu_share", share)
            if b == 2 and e == EXPR:
                overlap[g].append(ov)
                res.add("contention", g, b, r + 1, "overlap", ov)
            for i, v in enumerate(cpu[(g, b, e)]):
                what = {"g": "baseline", EXPR: "nextval", CLOCK: "clock"}[e]
                res.add("contention", f"{g} {what} backend{i + 1}", b, r + 1, "query_cpu_ns", v)
        # (key, server, expression): each generator's calls, and the control on the atomic server
        for key, g, e in [(g, g, EXPR) for g in GENERATORS] + [("clock", "atomic", CLOCK)]:
            for b in (1, 2):
                # mean over the backends of (query - baseline of the same backend count) / N
                v = (sum(cpu[(g, b, e)]) / b - sum(cpu[(g, b, "g")]) / b) / n
                per_call[(key, b)].append(v)
                res.add("contention", key, b, r + 1, "ns_per_call", v)
        log(f"  round {r + 1}: " + ", ".join(
            f"{g} {per_call[(g, 1)][-1]:.0f} -> {per_call[(g, 2)][-1]:.0f} ns" for g in GENERATORS + ("clock",)))
    res.parts["contention"] = dict(
        n=n, rounds=rounds, per_call=per_call, overlap=overlap, oncpu=oncpu,
        ratio={g: ratios(per_call[(g, 2)], per_call[(g, 1)]) for g in GENERATORS + ("clock",)})
    c = res.parts["contention"]
    # per round: ours 2 / 1 over the clock-only control's 2 / 1 (the rounds where both exist)
    c["over_clock"] = {g: [a / b for a, b in zip(c["ratio"][g], c["ratio"]["clock"]) if b > 0]
                       for g in GENERATORS}


def summary_lines(p):
    c = p["contention"]
    out = []
    for g in GENERATORS:
        out.append(f"contention.{g}.two_over_one = {fmt_range(c['ratio'][g])}")
        out.append(f"contention.{g}.one_ns = {fmt_range(c['per_call'][(g, 1)], '.0f')}")
        out.append(f"contention.{g}.two_ns = {fmt_range(c['per_call'][(g, 2)], '.0f')}")
    out.append(f"contention.clock.two_over_one = {fmt_range(c['ratio']['clock'])}")
    for g in GENERATORS:
        out.append(f"contention.{g}.two_over_one_over_clock = {fmt_range(c['over_clock'][g])}")
    out.append(f"contention.lwlock_over_atomic.two = "
               f"{fmt_range(ratios(c['per_call'][('lwlock', 2)], c['per_call'][('atomic', 2)]))}")
    return out


def section(p):
    c = p["contention"]
    L = ["## 2. Contention: one backend, and two on one shard\n",
         f"`snowflake_nextval()` on shard 0, N = {c['n']:,} calls per backend per query, CPU time per call "
         "above the baseline (the same query with `g`, run by the same number of backends in the same round), "
         "for 2 backends the mean of the two. The two backends wait on an advisory lock and start together; "
         f"{c['rounds']} rounds, the 10 configurations in an order rotating by round. Median [min-max].\n",
         "| generator | 1 backend, ns per call | 2 backends, ns per call | 2 / 1 per round | overlap of the 2 queries "
         "| on a CPU, 1 backend | on a CPU, 2 backends |",
         "|---|---:|---:|---:|---:|---:|---:|"]
    for g in GENERATORS:
        L.append(f"| `{g}` | {fmt_range(c['per_call'][(g, 1)], '.1f')} | {fmt_range(c['per_call'][(g, 2)], '.1f')} "
                 f"| {fmt_range(c['ratio'][g])} | {fmt_range(c['overlap'][g], '.0%')} "
                 f"| {fmt_range(c['oncpu'][(g, 1)], '.0%')} | {fmt_range(c['oncpu'][(g, 2)], '.0%')} |")
    L.append(f"| control: `{CLOCK}` (shares nothing) | {fmt_range(c['per_call'][('clock', 1)], '.1f')} "
             f"| {fmt_range(c['per_call'][('clock', 2)], '.1f')} | {fmt_range(c['ratio']['clock'])} | | | |")
    L.append("")
    L.append("What the shared state adds, per round (ours 2 / 1) / (clock-only 2 / 1): "
             + ", ".join(f"`{g}` {fmt_range(c['over_clock'][g])}" for g in GENERATORS)
             + ". The control's 2 / 1 is what the machine alone does to two busy backends (above 1 when "
             "the two vCPUs share a physical core).\n")
    L.append("Overlap: the part of the longer query's wall time during which both ran. On a CPU: the backend's "
             "CPU time over its query's wall time; well below 100% means other work shared the cores, and two "
             "backends then seldom ran at the same instant (less contention than on a quiet machine).\n")
    for g in GENERATORS:
        L.append(f"`{g}`, 2 backends / 1, every round sorted: {sorted_list(c['ratio'][g])}\n")
        L.append("```text")
        L += histogram(c["ratio"][g])
        L.append("```\n")
    return L
