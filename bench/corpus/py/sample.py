#!/usr/bin/env python3
"""Seeded draw of commit SHAs (used by ../sample-commits.sh).

    sample.py --count M --seed S < shas > sample

Reads SHAs one a line, sorts them (so the draw depends on the set of commits only, not on the order
a traversal lists them in), draws M distinct ones with the seeded PRNG and prints them in draw order.
"""
import argparse
import sys

from prng import Rng


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    shas = sorted({l.strip() for l in sys.stdin if l.strip()})
    if a.count > len(shas):
        print("sample.py: only %d commits, printing all of them" % len(shas), file=sys.stderr)
    r = Rng(a.seed, stream=0x5A4D)
    sys.stdout.write("".join(s + "\n" for s in r.sample(shas, a.count)))


if __name__ == "__main__":
    main()
