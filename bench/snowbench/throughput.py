"""IDs per second of one backend against the layout's ceiling (part 2 of the standard run;
the contention run repeats it on the atomic generator).

What it measures: one query takes N IDs from snowflake_nextval(), then from
snowflake_nextval_batch(1000000), on a default-layout server (4,096 IDs per ms,
4,096,000 per s).  A second session samples snowflake_stats (IDs issued, current
lead) every 50 ms; a run starts with the lead unused.  Reported: the steady rate
over the window after the lead is used up (where the ceiling binds), the rate
before it, and the overall rate with and without the borrowed IDs; medians over
rounds, the two methods taking turns.  SETUP_SQL creates the sampler,
bench_sample().

What it may call: servers (a started Server, log, median, rotated) and report
(Results, fmt, plot_data).
"""
import time

from .report import fmt, plot_data
from .servers import log, median, rotated

BATCH = 1_000_000              # snowflake_nextval_batch(n) size

# Samples the generator's counters every 50 ms until `target` IDs have been
# issued (or max_s has passed): IDs issued so far and the lead, with the clock
# read just before and just after (a sample taken across a stall is dropped).
SETUP_SQL = """
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


def run(srv, cfg, res):
    """2. IDs per second of one backend with the default layout, against 4,096,000 per second.

    cfg: tput_ids (IDs a run) and rounds."""
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
            sampler = srv.psql_background(f"SELECT * FROM bench_sample({before + n}, {n / ceiling * 3 + 30})")
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


def targets(p):
    """(target, measured, met) rows of the standard run: at least 95% of the ceiling."""
    tp = p["throughput"]
    rows = []
    for label, steady, *_ in tp["rows"]:
        frac = None if steady is None else steady / tp["ceiling"]
        rows.append((f"default layout: one backend with {label} reaches at least 95% of "
                     f"{tp['ceiling']:,} IDs/s", f"{fmt(frac, '.1%')}", None if frac is None else frac >= 0.95))
    return rows


def section(p, cfg):
    """The Markdown lines of part 2."""
    tp = p["throughput"]
    L = []
    add = L.append
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
    return L


def panel(p, work):
    """The gnuplot panel of part 2."""
    tp = p["throughput"]
    fn = plot_data(work, "tput.dat", [(label, s and s / tp["ceiling"] * 100, r and r / tp["ceiling"] * 100)
                                      for label, s, r, *_ in tp["rows"]])
    return f"""
set title "2. One backend, default layout: % of {tp['ceiling']:,} IDs/s"
set yrange [0:*]
set style histogram clustered gap 1
plot '{fn}' using 2:xtic(1) title 'steady (lead used up)' lc rgb '#4472c4', \\
     '' using 3 title 'unthrottled (borrowing the lead)' lc rgb '#a5a5a5', \\
     95 with lines dt 2 lc rgb 'red' title '95% target'"""
