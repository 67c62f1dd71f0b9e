#!/usr/bin/env python3
"""Independent high-precision reference for DP partition selection
(mechanism/partition.go).  Writes mechanism/testdata/partition.json.

Run from the repository root:   python3 mechanism/testdata/gen_partition.py
Needs mpmath (tested with 1.3.0); deterministic.

Mathematics: Desfontaines, Voss, Gipson and Mandayam, "Differentially private
partition selection" (PoPETs 2022), Theorem 1.  With per-partition parameters
e = eps/k and d = delta/k (exact reals here; the Go code rounds them down),

    pi(0) = 0,
    pi(n) = min(exp(e)*pi(n-1) + d,  1 - exp(-e)*(1 - pi(n-1) - d),  1).

The recursion is evaluated at mp.dps = 80 (it is a contraction near 1 and
multiplies relative errors by at most e^e per step below 1/2, so 80 digits
leave more than 50 correct ones for the n used here).  For each case the file
lists, for selected n, keep = pi(n) and drop = 1 - pi(n) (once pi >= 1/2 the
drop probability is carried instead, by its own recursion
rho(n) = max(1 - exp(e)*(1 - rho) - d, exp(-e)*(rho - d), 0), so that it keeps
its relative precision near 0), and "certain": the smallest n with pi(n) = 1.
"""

import json
import os

from mpmath import mp, mpf, exp, nstr

mp.dps = 80
SIG = 30

# (name, eps, delta, k, which n to record: "all" or a list)
CASES = [
    ("eps1_delta1e-5", 1.0, 1e-5, 1, "all"),
    ("ln3_delta1e-6", 1.0986122886681098, 1e-6, 1, "all"),
    ("eps0.1_delta1e-10_k10", 0.1, 1e-10, 10, "sample"),
    ("eps1e-3_delta1e-8", 1e-3, 1e-8, 1, "sample"),
    ("eps5_delta1e-300", 5.0, 1e-300, 1, "all"),
    ("eps0.5_delta0.3", 0.5, 0.3, 1, "all"),
    ("eps40_delta1e-3", 40.0, 1e-3, 1, "all"),
    ("eps2_delta1e-9_k3", 2.0, 1e-9, 3, "all"),
]


def run(eps, delta, k):
    e = mpf(eps) / k
    d = mpf(delta) / k
    ee, en = exp(e), exp(-e)
    keep, drop = [mpf(0)], [mpf(1)]
    while drop[-1] > 0:
        p, r = keep[-1], drop[-1]
        if p < mpf(1) / 2:
            p = min(ee * p + d, 1 - en * (1 - p - d), mpf(1))
            r = 1 - p
        else:  # carry 1 - pi near 1, where it has the relative precision
            r = max(1 - ee * (1 - r) - d, en * (r - d), mpf(0))
            p = 1 - r
        keep.append(p)
        drop.append(r)
        if len(keep) > 10**6:
            raise SystemExit("too many steps")
    return keep, drop


def main():
    out = []
    for name, eps, delta, k, which in CASES:
        keep, drop = run(eps, delta, k)
        certain = len(keep) - 1
        if which == "all":
            ns = list(range(0, certain + 2))
        else:
            ns = sorted(set([0, 1, 2, 3, 5, 10, 100, certain // 4, certain // 2 - 1,
                             certain // 2, certain // 2 + 1, 3 * certain // 4,
                             certain - 2, certain - 1, certain, certain + 1]))
        rows = []
        for n in ns:
            p = keep[n] if n < len(keep) else mpf(1)
            r = drop[n] if n < len(drop) else mpf(0)
            rows.append({"n": n, "keep": nstr(p, SIG, min_fixed=1, max_fixed=0),
                         "drop": nstr(r, SIG, min_fixed=1, max_fixed=0)})
        out.append({"name": name, "epsilon": eps, "delta": delta, "max_partitions": k,
                    "certain": certain, "rows": rows})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "partition.json")
    with open(path, "w") as f:
        json.dump({"source": "mechanism/testdata/gen_partition.py (mpmath, 80 digits)",
                   "cases": out}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
