"""Results and the files they go into: raw rows, number formats, CSV.

What it provides: Results (the raw measurements each module adds, for the CSV,
and the summaries it computes, for the Markdown), fmt() for the tables, and
write_csv().  Where a result comes from (commit, machine, load): provenance.py.

What it may call: the standard library.
"""
import csv


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


def write_csv(path, res):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["part", "item", "clients", "round", "metric", "value"])
        for row in res.raw:
            w.writerow(row)
