#!/usr/bin/env python3
"""Independent high-precision reference for the local-DP mechanisms and utilities of
Kairouz's thesis, chapter 3.  Writes ldp/testdata/reference.json.

Run from the repository root:   python3 ldp/testdata/gen_reference.py
Needs mpmath (tested with 1.3.0).  Arithmetic at mp.dps = 50.  Deterministic, a few
seconds.

Each case fixes k, eps, (delta), a utility and its distributions, and records, from
the thesis's definitions (not from dpkit's code):

  optimum     the maximum of the staircase linear program (thesis eq. 3.12): max
              sum_j mu(S_j) theta_j subject to sum_j S_j theta_j = 1, theta >= 0, over
              the 2^k - 1 staircase patterns S_j in {1, e^eps}^k (pattern 2^k - 1 is
              pattern 0 scaled), solved by enumerating every basis of k columns
              (k <= 4 here) and keeping the best feasible one;
  binary      the binary mechanism (eq. 3.15) on T = {x : P0(x) > P1(x)} (and T with
              the ties added, whichever is larger) for divergences, on the T minimising
              |P(T) - 1/2| for mutual information (eq. 3.21);
  rr          k-ary randomized response (eq. 3.16);
  geometric   the truncated geometric baseline of section 3.4.2 with ratio
              e^(-eps/(k-1)) (docs/errata.md, thesis item 2), summed from the
              untruncated two-sided geometric over |z| <= 4000 and folded onto 1 and k;
  quaternary  for delta > 0 and k = 2: the quaternary mechanism (eq. 3.26).

Utilities (sum over outputs y of the column functions): kl = sum M0 ln(M0/M1);
tv = 1/2 sum |M0 - M1|; hellinger = sum (sqrt M0 - sqrt M1)^2; chi2 = sum (M0-M1)^2/M1;
mi = sum_x,y P(x) Q(y|x) ln(Q(y|x)/(P.Q)(y)).
"""

import itertools
import json
import os

from mpmath import mp, mpf, exp, log, sqrt, nstr

mp.dps = 50
HERE = os.path.dirname(os.path.abspath(__file__))
SIG = 30

CASES = [
    dict(name="kl-3", k=3, eps=1.0, utility="kl", p0=[0.5, 0.3, 0.2], p1=[0.2, 0.3, 0.5]),
    dict(name="kl-4-large-eps", k=4, eps=6.0, utility="kl", p0=[0.1, 0.2, 0.3, 0.4], p1=[0.4, 0.3, 0.2, 0.1]),
    dict(name="tv-3", k=3, eps=0.7, utility="tv", p0=[0.6, 0.1, 0.3], p1=[0.2, 0.5, 0.3]),
    dict(name="hellinger-4", k=4, eps=2.0, utility="hellinger", p0=[0.1, 0.2, 0.3, 0.4], p1=[0.4, 0.3, 0.2, 0.1]),
    dict(name="chi2-3", k=3, eps=1.5, utility="chi2", p0=[0.5, 0.3, 0.2], p1=[0.2, 0.3, 0.5]),
    dict(name="mi-4", k=4, eps=3.0, utility="mi", prior=[0.25, 0.25, 0.25, 0.25]),
    dict(name="mi-3-skewed", k=3, eps=0.5, utility="mi", prior=[0.6, 0.3, 0.1]),
    dict(name="quaternary-tv", k=2, eps=1.0, delta=0.01, utility="tv", p0=[0.7, 0.3], p1=[0.4, 0.6]),
    dict(name="quaternary-kl", k=2, eps=0.5, delta=0.1, utility="kl", p0=[0.7, 0.3], p1=[0.4, 0.6]),
]


def column_value(u, c, q):
    """mu(q) for the column q (a list over inputs)."""
    if u == "mi":
        p = [mpf(x) for x in c["prior"]]
        m = sum(pi * qi for pi, qi in zip(p, q))
        return sum(pi * qi * log(qi / m) for pi, qi in zip(p, q) if pi * qi > 0)
    p0 = [mpf(x) for x in c["p0"]]
    p1 = [mpf(x) for x in c["p1"]]
    m0 = sum(a * b for a, b in zip(p0, q))
    m1 = sum(a * b for a, b in zip(p1, q))
    if u == "kl":
        return m0 * log(m0 / m1) if m0 > 0 else mpf(0)
    if u == "tv":
        return abs(m0 - m1) / 2
    if u == "hellinger":
        return (sqrt(m0) - sqrt(m1)) ** 2
    if u == "chi2":
        return (m0 - m1) ** 2 / m1 if m1 > 0 else mpf(0)
    raise ValueError(u)


def utility(u, c, Q):
    k, n = len(Q), len(Q[0])
    return sum(column_value(u, c, [Q[x][y] for x in range(k)]) for y in range(n))


def solve(A):
    """Solves the augmented k x (k+1) system by Gaussian elimination with partial
    pivoting; None when singular."""
    k = len(A)
    A = [row[:] for row in A]
    for col in range(k):
        piv = max(range(col, k), key=lambda r: abs(A[r][col]))
        if abs(A[piv][col]) < mpf(10) ** -30:
            return None
        A[col], A[piv] = A[piv], A[col]
        for r in range(k):
            if r != col:
                f = A[r][col] / A[col][col]
                A[r] = [a - f * b for a, b in zip(A[r], A[col])]
    return [A[i][k] / A[i][i] for i in range(k)]


def optimum(u, c):
    k, e = c["k"], exp(mpf(c["eps"]))
    pats = []
    for j in range(2 ** k - 1):
        pats.append([e if (j >> (k - 1 - x)) & 1 else mpf(1) for x in range(k)])
    best = None
    for basis in itertools.combinations(range(len(pats)), k):
        A = [[pats[j][x] for j in basis] + [mpf(1)] for x in range(k)]
        theta = solve(A)
        if theta is None:
            continue  # not a basis
        if any(t < -mpf(10) ** -40 for t in theta):
            continue
        v = sum(theta[i] * column_value(u, c, pats[j]) for i, j in enumerate(basis))
        if best is None or v > best:
            best = v
    return best


def binary_split(inT, eps):
    hi = exp(mpf(eps)) / (1 + exp(mpf(eps)))
    lo = 1 / (1 + exp(mpf(eps)))
    return [[hi, lo] if t else [lo, hi] for t in inT]


def binary(u, c):
    k, eps = c["k"], c["eps"]
    if u == "mi":
        p = [mpf(x) for x in c["prior"]]
        best = None
        for mask in range(1, 2 ** k, 2):
            s = sum(p[x] for x in range(k) if (mask >> x) & 1)
            if best is None or abs(s - mpf(1) / 2) < best[0]:
                best = (abs(s - mpf(1) / 2), mask)
        return utility(u, c, binary_split([(best[1] >> x) & 1 == 1 for x in range(k)], eps))
    strict = [a > b for a, b in zip(c["p0"], c["p1"])]
    ties = [a >= b for a, b in zip(c["p0"], c["p1"])]
    return max(utility(u, c, binary_split(strict, eps)), utility(u, c, binary_split(ties, eps)))


def rr(c):
    k, e = c["k"], exp(mpf(c["eps"]))
    return [[e / (k - 1 + e) if x == y else 1 / (k - 1 + e) for y in range(k)] for x in range(k)]


def geometric(c):
    k, eps = c["k"], mpf(c["eps"])
    b = exp(-eps / (k - 1))
    norm = (1 - b) / (1 + b)
    Q = [[mpf(0)] * k for _ in range(k)]
    for x in range(k):
        for z in range(-4000, 4001):
            y = min(max(x + z, 0), k - 1)
            Q[x][y] += norm * b ** abs(z)
    return Q


def quaternary(c):
    eps, d = mpf(c["eps"]), mpf(c["delta"])
    hi = (1 - d) * exp(eps) / (1 + exp(eps))
    lo = (1 - d) / (1 + exp(eps))
    return [[d, 0, lo, hi], [0, d, hi, lo]]


def main():
    out = []
    for c in CASES:
        u = c["utility"]
        r = dict(c)
        r["optimum"] = nstr(optimum(u, c), SIG)
        r["binary"] = nstr(binary(u, c), SIG)
        r["rr"] = nstr(utility(u, c, rr(c)), SIG)
        r["geometric"] = nstr(utility(u, c, geometric(c)), SIG)
        if c.get("delta"):
            r["quaternary"] = nstr(utility(u, c, quaternary(c)), SIG)
        out.append(r)
    with open(os.path.join(HERE, "reference.json"), "w") as fh:
        fh.write('{"generator": "ldp/testdata/gen_reference.py", "precision_digits": 50,\n "cases": [\n')
        fh.write(",\n".join("  " + json.dumps(r, sort_keys=True) for r in out))
        fh.write("\n ]}\n")


if __name__ == "__main__":
    main()
