#!/usr/bin/env python3
"""sass_stalls.py — what a kernel's warps wait on, from one ncu SASS page (`ncu -i REP --page source --csv
--print-source sass`): the share of warp-stall samples by stall reason and by opcode, and the SASS lines with
the most samples. pending.sh runs it on the pages it brings back, since the device tool returns few files and
a page is megabytes. Usage: python3 tests/gpu/sass_stalls.py PAGE.csv [LINES]"""
import collections
import csv
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: sass_stalls.py PAGE.csv [LINES]")
    lines = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    rows = list(csv.reader(open(sys.argv[1], errors="replace")))
    head = next((i for i, r in enumerate(rows) if "Source" in r), None)
    if head is None:
        sys.exit(f"{sys.argv[1]}: no SASS table (ncu's page begins: {rows[:2]})")
    hdr, body = rows[head], [r for r in rows[head + 1:] if len(r) == len(rows[head])]
    src = hdr.index("Source")
    every = next(j for j, c in enumerate(hdr) if c.startswith("Warp Stall Sampling (All"))
    total = sum(number(r[every]) for r in body)
    if total == 0:
        sys.exit(f"{sys.argv[1]}: no stall samples")
    reasons = {c: sum(number(r[j]) for r in body) for j, c in enumerate(hdr)
               if c.startswith("stall_") and "Not Issued" not in c}
    print(f"{total:.0f} samples; by reason: " + ", ".join(
        f"{c[6:]} {100 * v / total:.1f}%" for c, v in sorted(reasons.items(), key=lambda x: -x[1])[:8]))
    ops = collections.Counter()
    for r in body:
        words = r[src].split()
        if words and words[0].startswith("@"):
            words = words[1:]
        ops[words[0].split(".")[0] if words else "?"] += number(r[every])
    print("by opcode: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in ops.most_common(10)))
    for r in sorted(body, key=lambda r: -number(r[every]))[:lines]:
        print(f"{100 * number(r[every]) / total:5.1f}%  {r[src][:100]}")


main()
