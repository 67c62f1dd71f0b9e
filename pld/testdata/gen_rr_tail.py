#!/usr/bin/env python3
"""Exact δ(ε) far in the tail for two k-ary randomized-response mechanisms composed:
1000 releases of ε1 = 1.32004, k = 10 and 100 of ε2 = 1.16017, k = 6 (rr_tail.json).

One release of k-ary randomized response reports the true value with probability
e^ε/(e^ε + k − 1) and each other value with 1/(e^ε + k − 1): between neighbouring
inputs x, x' its privacy loss is +ε (output x), −ε (output x') or 0 (the k − 2 others).
n releases give the loss ε·d, d = a − c, with (a, b, c) multinomial; δ(ε) is
Σ_{ε1·d1 + ε2·d2 > ε} P1(d1)·P2(d2)·(1 − e^(ε − ε1·d1 − ε2·d2)), summed exactly term by term
in 40-digit arithmetic (mpmath), no lattice. The sums start at d1 = 600 (every term with
ε1·d1 + ε2·100 < 1000 is left out, and the ε asked are at least 1000; check_rel_diff
is the change when summing from 550 instead, 0 as it must be).

Usage: python3 gen_rr_tail.py > rr_tail.json   (about a minute)
"""
import json
import sys

from mpmath import mp, mpf, exp, loggamma, log, fsum

mp.dps = 40


def dist(eps, k, n, dmin):
    """P(d) for d = dmin..n: the law of (number of +ε) − (number of −ε) in n releases."""
    e = exp(mpf(eps))
    z = e + (k - 1)
    lp, l0, lm = log(e / z), log(mpf(k - 2) / z), log(1 / z)
    out = {}
    for d in range(dmin, n + 1):
        terms = []
        c = max(0, -d)
        while d + 2 * c <= n:
            a, b = d + c, n - d - 2 * c
            lt = (loggamma(n + 1) - loggamma(a + 1) - loggamma(b + 1) - loggamma(c + 1)
                  + a * lp + c * lm + b * l0)
            terms.append(exp(lt))
            c += 1
        out[d] = fsum(terms)
    return out


def delta(p1, p2, e1, e2, eps):
    s = []
    for d1, q1 in p1.items():
        for d2, q2 in p2.items():
            loss = e1 * d1 + e2 * d2
            if loss > eps:
                s.append(q1 * q2 * -mp.expm1(eps - loss))
    return fsum(s)


def main():
    e1, e2 = mpf("1.32004"), mpf("1.16017")
    p2 = dist(e2, 6, 100, -100)
    p1 = dist(e1, 10, 1000, 600)
    check = dist(e1, 10, 1000, 550)
    cases = []
    for eps in ["1000", "1100", "1173"]:
        d = delta(p1, p2, e1, e2, mpf(eps))
        d2 = delta(check, p2, e1, e2, mpf(eps))
        cases.append({"eps": float(eps), "delta": mp.nstr(d, 20),
                      "check_rel_diff": mp.nstr(abs(d - d2) / d, 3)})
    json.dump({"generator": "pld/testdata/gen_rr_tail.py", "precision_digits": 40,
               "mechanisms": [{"kind": "rr", "eps": 1.32004, "k": 10, "count": 1000},
                              {"kind": "rr", "eps": 1.16017, "k": 6, "count": 100}],
               "cases": cases}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
