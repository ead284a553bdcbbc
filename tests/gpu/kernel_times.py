#!/usr/bin/env python3
# tests/gpu/kernel_times.py — a table of kernel times from ncu's CSV (`ncu --csv --metrics
# gpu__time_duration.sum ...` on stdin): per kernel name (templates kept, arguments dropped), the launches,
# the total and the mean in µs, longest total first, then the sum. ncu runs each launch alone with cold
# caches, so the times are each kernel's own, not its share of an overlapped graph: what a step would cost
# with nothing overlapped, and which kernels are far from their bytes' time.
import csv
import sys

rows = list(csv.reader(line for line in sys.stdin if line.startswith('"')))
if not rows:
    sys.exit("kernel_times: no CSV rows on stdin")
head = rows[0]
name_col, unit_col, value_col = head.index("Kernel Name"), head.index("Metric Unit"), head.index("Metric Value")
scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}
by = {}
for r in rows[1:]:
    if len(r) <= value_col:
        continue
    name = r[name_col].split("(")[0] if "<" not in r[name_col] else r[name_col].split(">(")[0] + ">"
    us = float(r[value_col].replace(",", "")) * scale[r[unit_col]]
    n, tot = by.get(name, (0, 0.0))
    by[name] = (n + 1, tot + us)
total = sum(t for _, t in by.values())
print("| kernel | launches | total µs | mean µs | share |")
print("|---|---|---|---|---|")
for name, (n, tot) in sorted(by.items(), key=lambda kv: -kv[1][1]):
    print(f"| {name[:90]} | {n} | {tot:.1f} | {tot / n:.2f} | {100 * tot / total:.1f} % |")
print(f"| all | {sum(n for n, _ in by.values())} | {total:.1f} | | |")
