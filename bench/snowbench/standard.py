"""The run of bench/run.sh: per call, contention, inserts, with their provenance.

What it measures: nothing itself.  It starts the scratch servers the parts
need (two with the wide layout, snowflake.generator = 'atomic' and 'lwlock',
for percall and contention; one with the default layout for inserts), runs
the parts asked for (all three unless --percall, --contention or --inserts
name some), and writes, in the results folder, <stem>.md and <stem>.csv,
where the stem is pg<major>, then -quick for a quick run, then the parts when
not all ran (pg15.md, pg18-inserts.md, pg15-quick.md).  The Markdown starts
with the provenance block (provenance.py) and a summary block of `key = median
[min-max]` lines, whose keys are the ones the README's `<!-- bench: key -->`
markers name; run.sh prints the same block at the end.  A part that fails is
reported and the others go on.  Nothing is asserted.

What it may call: servers, provenance, report (Results, write_csv), percall,
contention, inserts.

    python3 -m snowbench.standard --work DIR --results DIR [--quick]
        [--percall] [--contention] [--inserts] [--command "bash bench/run.sh ..."]
"""
import argparse
import os
import signal
import sys
import traceback

from . import contention, inserts, percall, provenance
from .report import Results, write_csv
from .servers import Server, log
from .stats import fmt_range, summary

MODES = {
    "full":  dict(percall_rounds=21, percall_n=2_000_000, percall_tx=100_000, contention_rounds=31, contention_n=2_000_000,
                  insert_rounds=12, insert_t=10_000, prefill=500_000),
    "quick": dict(percall_rounds=11, percall_n=500_000, percall_tx=30_000, contention_rounds=15, contention_n=500_000,
                  insert_rounds=6, insert_t=2_000, prefill=50_000),
}
PARTS = ("percall", "contention", "inserts")


def summary_block(res, info):
    lines = [f"# bench summary: commit {info['commit']} ({info['dirty']}), "
             f"{info['pg'].split(' on ')[0]}, {info['nproc']} x {info['cpu']}, "
             f"load {info['load_before']} -> {info['load_after']}, `{info['command']}`",
             f"run.pg{info['pg_num'] // 10000} = commit {info['commit'][:12]} ({info['dirty']}), "
             f"{info['pg'].split(' (')[0].split(' on ')[0]}, {info['started']:%Y-%m-%d}, {info['nproc']} x "
             f"{info['cpu']}, load {info['load_before'].split()[0]} -> {info['load_after'].split()[0]}"]
    if "percall" in res.parts:
        lines += percall.summary_lines(res.parts)
    if "contention" in res.parts:
        lines += contention.summary_lines(res.parts)
    if "inserts" in res.parts:
        lines += inserts.summary_lines(res.parts)
    return lines


def targets(res):
    """The targets of issue 27, measured in this run: (text, measured, met or not)."""
    out = []
    if "percall" in res.parts:
        v = res.parts["percall"]["ratios"]["clock"]
        m = summary(v)[0]
        out.append(("per call, snowflake_nextval() / clock-only snowbench_clock(), median <= 1.3",
                    fmt_range(v), m is not None and m <= 1.3))
    if "contention" in res.parts:
        c = res.parts["contention"]
        for g in contention.GENERATORS:
            v = c["ratio"][g]
            m = summary(v)[0]
            out.append((f"{g}: 2 backends / 1 on one shard, CPU per call, median <= 2 over {len(v)} rounds",
                        fmt_range(v), m is not None and m <= 2))
    return out


def run(args):
    mode = "quick" if args.quick else "full"
    cfg = MODES[mode]
    parts = [p for p in PARTS if getattr(args, p)] or list(PARTS)
    info = provenance.collect(args.command)
    res = Results()
    servers = {}
    if "percall" in parts or "contention" in parts:
        for g in contention.GENERATORS:
            servers[g] = Server(args.work, g, contention.CONF.format(generator=g))
    if "inserts" in parts:
        servers["default"] = Server(args.work, "default")
    try:
        for s in servers.values():
            s.start()
        provenance.add_server(info, next(iter(servers.values())))
        log(f"{mode} run of {', '.join(parts)} at {info['commit'][:12]} ({info['dirty']}), "
            f"{info['pg'].split(' on ')[0]}, load {info['load_before']}")
        for g in contention.GENERATORS:
            if g in servers:
                servers[g].psql(percall.SETUP_SQL)
        for part in parts:
            try:
                if part == "percall":
                    gen_default = servers["atomic"].value(
                        "SELECT boot_val FROM pg_settings WHERE name = 'snowflake.generator'")
                    if gen_default != "atomic":
                        log(f"note: the default generator is {gen_default}; per call runs on 'atomic'")
                    percall.run(servers["atomic"], cfg, res, info["pg_num"])
                elif part == "contention":
                    contention.run({g: servers[g] for g in contention.GENERATORS}, cfg, res)
                else:
                    inserts.run(servers["default"], cfg, res, info["pg_num"], args.work)
            except Exception as e:          # report it and go on with the next part
                res.errors[part] = str(e)[-600:]
                log(f"{part} failed: {e}")
                traceback.print_exc()
    finally:
        for s in servers.values():
            s.stop()
    provenance.finish(info)
    stem = f"pg{info['pg_num'] // 10000}" + ("-quick" if args.quick else "") + \
        ("" if parts == list(PARTS) else "-" + "-".join(parts))
    os.makedirs(args.results, exist_ok=True)
    write_csv(os.path.join(args.results, f"{stem}.csv"), res)
    block = summary_block(res, info)
    goals = [f"target: {t}: {m}: {'met' if ok else 'NOT MET'}" for t, m, ok in targets(res)]
    L = provenance.header(info, "snowflake benchmark")
    L += ["Method: [bench/README.md](../README.md). Raw rounds: "
          f"[{stem}.csv]({stem}.csv). Every figure: median [min-max] of the rounds; every ratio taken "
          "within each round, then summarised.\n",
          "## Summary\n", "The keys are those of the `<!-- bench: key -->` markers in the README.\n",
          "```text", *block, "```\n"]
    if goals:
        L += ["## Targets (issue 27)\n", "```text", *goals, "```\n"]
    for part, mod in (("percall", percall), ("contention", contention), ("inserts", inserts)):
        if part in res.parts:
            L += mod.section(res.parts)
    if res.errors:
        L.append("## Errors\n")
        L += [f"- {part}: `{err}`" for part, err in res.errors.items()]
        L.append("")
    text = "\n".join(L)
    with open(os.path.join(args.results, f"{stem}.md"), "w") as f:
        f.write(text)
    print()
    print(text)
    print()
    print("\n".join(block + goals))
    log(f"written: {args.results}/{stem}.md and {stem}.csv")
    if res.errors:
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer calls and rows; the minimum rounds")
    for p in PARTS:
        ap.add_argument(f"--{p}", action="store_true", help=f"run the {p} part (default: all parts)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--command", default=" ".join(sys.argv))
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run(args)


if __name__ == "__main__":
    main()
