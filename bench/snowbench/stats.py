"""Summaries of rounds: the median with the range, per-round ratios, distributions in text.

Every figure of the benchmark is a median of rounds with the smallest and the
largest round beside it (the range is the machine's noise, shown rather than
hidden), and every comparison a ratio taken within each round (both sides
shared that round's noise), then summarised the same way.

What it may call: the standard library only.
"""
import statistics


def clean(values):
    return [v for v in values if v is not None]


def summary(values):
    """(median, min, max) of the values that are not None, or (None, None, None)."""
    v = clean(values)
    if not v:
        return (None, None, None)
    return (statistics.median(v), min(v), max(v))


def ratios(num, den):
    """Per-round ratios num[r] / den[r] (rounds where either is missing or den <= 0 are left out)."""
    return [a / b for a, b in zip(num, den) if a is not None and b is not None and b > 0]


def fmt_range(values, spec=None, unit=""):
    """'1.04 [0.98-1.10]': median [min-max] of the rounds; 'n/a' without data.  Without a spec
    (ratios): two decimals, four below 0.1."""
    m, lo, hi = summary(values)
    if m is None:
        return "n/a"
    if spec is None:
        spec = ".2f" if abs(m) >= 0.1 else ".4f"
    sep = " to " if lo < 0 else "-"           # '[-8.1 to +8.2]', not '[-8.1-+8.2]'
    return f"{m:{spec}}{unit} [{lo:{spec}}{sep}{hi:{spec}}{unit}]"


def sorted_list(values, spec=".2f"):
    return " ".join(f"{v:{spec}}" for v in sorted(clean(values)))


def histogram(values, width=None, bar="#"):
    """Text histogram lines (' 0.90- 1.00 | ### 3'), empty bins between kept; the bin width
    (0.05, 0.1, 0.2, 0.25, 0.5, 1, ...) gives at most about 15 bins unless given."""
    v = clean(values)
    if not v:
        return []
    if width is None:
        span = max(v) - min(v)
        width = next((w for w in (0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10) if span / w <= 15), 20)
    lo = int(min(v) / width)
    hi = int(max(v) / width)
    counts = {}
    for x in v:
        counts[int(x / width)] = counts.get(int(x / width), 0) + 1
    return [f"{b * width:5.2f}-{(b + 1) * width:5.2f} | {bar * counts.get(b, 0)} {counts.get(b, 0)}"
            for b in range(lo, hi + 1)]
