#!/usr/bin/env python3
"""Independent high-precision reference for the average accuracy of the central
observer under randomized response (Kairouz's thesis ch. 4; KOV section 5) with a prior
on the inputs, an accuracy measure and parties holding several bits.  Writes
multiparty/testdata/reference.json.

Run from the repository root:   python3 multiparty/testdata/gen_reference.py
Needs mpmath (tested with 1.3.0).  Arithmetic at mp.dps = 40.  Deterministic, seconds.

Every bit is released by its own randomized response at its party's (eps, delta)
(KOV eq. 16): with probability delta the bit itself (symbols 0 or 3), otherwise the
bit kept with probability e^eps/(1+e^eps) (symbols 1 for 0, 2 for 1).  The average
accuracy of the Bayes rule is enumerated directly from the definition:

    ACC = sum over transcripts tau of max over answers d of
          sum over inputs x of P(x) P(tau | x) w(f(x), d).

Cases: the thesis's Fig. 4.2 baselines (section 4.6) -- left: one party with a bit x and
one with two bits (y1, y2), f = y1 XOR y2 if x = 0 else y1 AND y2, 0/1 accuracy (5/8 at
eps = 0); right: two parties of two bits, f = their Hamming distance, accuracy
2 - |d - d_hat| (1.5 at eps = 0; docs/errata.md, thesis item 6) -- over a grid of eps;
and a majority of three with a skewed prior and delta > 0, and the Hamming measure with
delta > 0.

The thesis's Fig. 4.1 (section 4.3): the error region of one party's randomized response
(4.8) equals R(eps, delta).  For each (eps, delta) in FIG41 ("fig41" in the file) the
lower-left boundary of the pair's error region is computed from its two output
distributions: the tests accepting H0 on the k outputs of largest P0/P1 give the points
(P_MD, P_FA) = (P1(A_k), P0(outside A_k)); the vertices strictly inside the axes are kept.
They are compared in the Go test with region.Boundary's closed form and with
region.Pair.Region of the protocol's own probabilities.
"""

import itertools
import json
import os

from mpmath import mp, mpf, exp, nstr

mp.dps = 40
HERE = os.path.dirname(os.path.abspath(__file__))
SIG = 25


def sym_prob(s, bit, eps, delta):
    if s == 0:
        return delta if bit == 0 else mpf(0)
    if s == 3:
        return delta if bit == 1 else mpf(0)
    keep = exp(eps) / (1 + exp(eps))
    noisy = 1 if s == 2 else 0
    return (1 - delta) * (keep if noisy == bit else 1 - keep)


def accuracy(budgets, f, outputs, prior, measure):
    n = len(budgets)
    total = mpf(0)
    for tau in itertools.product(range(4), repeat=n):
        scores = [mpf(0)] * outputs
        for x in range(2 ** n):
            p = prior[x]
            for i, (e, d) in enumerate(budgets):
                p *= sym_prob(tau[i], (x >> i) & 1, e, d)
                if p == 0:
                    break
            if p == 0:
                continue
            y = f(x)
            for a in range(outputs):
                scores[a] += p * measure(y, a)
        total += max(scores)
    return total


def fig42_left(x):
    a, y1, y2 = x & 1, (x >> 1) & 1, (x >> 2) & 1
    return y1 ^ y2 if a == 0 else y1 & y2


def hamming2(x):
    return bin((x & 3) ^ ((x >> 2) & 3)).count("1")


def majority3(x):
    return 1 if bin(x).count("1") >= 2 else 0


zero_one = lambda y, a: mpf(1) if y == a else mpf(0)
hamming_measure = lambda y, a: mpf(2) - abs(y - a)


FIG41 = [("1.0986122886681098", "0.1"), ("1", "0"), ("0.5", "0.3"), ("2", "0.001"), ("0", "0.2")]


def rr_pair(eps, delta):
    """(P0, P1) over the outputs 0 (revealed 0), 1 (noisy 0), 2 (noisy 1), 3 (revealed 1)."""
    return ([sym_prob(s, 0, eps, delta) for s in range(4)], [sym_prob(s, 1, eps, delta) for s in range(4)])


def fig41(eps, delta):
    p0, p1 = rr_pair(eps, delta)
    inf = mpf("inf")
    order = sorted(range(4), key=lambda s: -(p0[s] / p1[s] if p1[s] > 0 else inf if p0[s] > 0 else 0))
    pts = []
    for k in range(5):
        inside, outside = order[:k], order[k:]
        pts.append((sum((p1[s] for s in inside), mpf(0)), sum((p0[s] for s in outside), mpf(0))))
    # drop the axis segments' inner points: keep the last point with MD = 0 and the first
    # with FA = 0, and merge points on one line (equal ratios: eps = 0)
    first = max(i for i, (m, _) in enumerate(pts) if m == 0)
    last = min(i for i, (_, f) in enumerate(pts) if f == 0)
    chain = pts[first:last + 1]
    out = [chain[0]]
    for i in range(1, len(chain) - 1):
        (m0, f0), (m1, f1), (m2, f2) = out[-1], chain[i], chain[i + 1]
        if (m1 - m0) * (f2 - f0) - (m2 - m0) * (f1 - f0) != 0:
            out.append(chain[i])
    out.append(chain[-1])
    return [[nstr(m, SIG), nstr(f, SIG)] for m, f in out]


def main():
    cases = []
    uniform = lambda n: [mpf(1) / 2 ** n] * 2 ** n
    table = lambda f, n: [f(x) for x in range(2 ** n)]
    for eps in [0.0, 0.5, 1.0, 2.0, 4.0, 8.0]:
        e = mpf(eps)
        v = accuracy([(e, mpf(0))] * 3, fig42_left, 2, uniform(3), zero_one)
        cases.append({"name": "fig4.2-left", "bits": [1, 2], "eps": [eps, eps], "delta": [0.0, 0.0],
                      "table": table(fig42_left, 3), "measure": "01", "prior": None, "want": nstr(v, SIG)})
        v = accuracy([(e, mpf(0))] * 4, hamming2, 3, uniform(4), hamming_measure)
        cases.append({"name": "fig4.2-right", "bits": [2, 2], "eps": [eps, eps], "delta": [0.0, 0.0],
                      "table": table(hamming2, 4), "measure": "hamming", "prior": None, "want": nstr(v, SIG)})
    prior = [0.3, 0.05, 0.1, 0.05, 0.2, 0.1, 0.05, 0.15]
    v = accuracy([(mpf(1), mpf(0.1)), (mpf(0.5), mpf(0.1)), (mpf(2), mpf(0.1))], majority3, 2,
                 [mpf(p) for p in prior], zero_one)
    cases.append({"name": "majority3-prior-delta", "bits": [1, 1, 1], "eps": [1.0, 0.5, 2.0], "delta": [0.1, 0.1, 0.1],
                  "table": table(majority3, 3), "measure": "01", "prior": prior, "want": nstr(v, SIG)})
    v = accuracy([(mpf(1), mpf(0.2))] * 4, hamming2, 3, uniform(4), hamming_measure)
    cases.append({"name": "hamming-delta", "bits": [2, 2], "eps": [1.0, 1.0], "delta": [0.2, 0.2],
                  "table": table(hamming2, 4), "measure": "hamming", "prior": None, "want": nstr(v, SIG)})
    figs = [{"eps": e, "delta": d, "vertices": fig41(mpf(e), mpf(d))} for e, d in FIG41]
    with open(os.path.join(HERE, "reference.json"), "w") as fh:
        fh.write('{"generator": "multiparty/testdata/gen_reference.py", "precision_digits": 40,\n "cases": [\n')
        fh.write(",\n".join("  " + json.dumps(c, sort_keys=True) for c in cases))
        fh.write("\n ],\n \"fig41\": [\n")
        fh.write(",\n".join("  " + json.dumps(c, sort_keys=True) for c in figs))
        fh.write("\n ]}\n")


if __name__ == "__main__":
    main()
