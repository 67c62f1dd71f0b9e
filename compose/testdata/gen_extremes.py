#!/usr/bin/env python3
"""Independent high-precision reference for the exact (KOV) composition at the extremes
(issue 24 item 7): k up to 10^12, epsilon up to 10^3, delta down to 1e-300.  Writes
compose/testdata/extremes.json (same format as reference.json; see README.md).

Run from the repository root:   python3 compose/testdata/gen_extremes.py
Needs mpmath (tested with 1.3.0).  mp.dps = 60.  Deterministic.

For k copies of (e0, 0) the loss is x_m = (2m - k) e0, m ~ Binomial(k, p), p = e^e0/(1+e^e0),
and for every target et in [x_(M-1), x_M), M the first index with x_M > et,

    delta(et) = A_M - e^et B_M,   A_M = P[Bin(k, p) >= M],   B_M = P[Bin(k, q) >= M],

because pmf_p(m) e^(-x_m) = pmf_q(m) (q = 1 - p).  With delta0 > 0 the total is
floor + keep * delta(et) (docs/errata.md item 3).  The binomial tails are regularized
incomplete beta functions, P[Bin(k, p) >= M] = I_p(M, k - M + 1), computed here by
Gauss-Legendre quadrature of the beta density at 60 digits (not by summing terms: k = 10^12
has ~10^7 relevant terms); small k is enumerated term by term, and the two methods are
checked against each other (k = 25000, k = 10^6 and k = 10^10 far in the tail) and against
the existing 60-digit reference at k = 10^9.
"""

import json
import os
import sys
import time

from mpmath import mp, mpf, exp, expm1, log, log1p, loggamma, quad, sqrt, binomial, floor as mfloor, ceil as mceil, nstr

mp.dps = 60
SIG = 22
HERE = os.path.dirname(os.path.abspath(__file__))
T0 = time.time()


def progress(msg):
    print("[%7.1fs] %s" % (time.time() - T0, msg), file=sys.stderr, flush=True)


def F(x):
    assert isinstance(x, float), x
    return mpf(x)


def fmt(v):
    return nstr(v, SIG)


def upper_tail(k, p, M):
    """P[Bin(k, p) >= M] for integers 0 <= M <= k + 1."""
    if M <= 0:
        return mpf(1)
    if M > k:
        return mpf(0)
    if k <= 20000:
        return sum((binomial(k, m) * p ** m * (1 - p) ** (k - m) for m in range(M, k + 1)), mpf(0))
    return beta_tail(k, p, M)


def beta_tail(k, p, M):
    """I_p(M, k - M + 1) by quadrature of t^(a-1) (1-t)^(b-1) / B(a, b), a = M,
    b = k - M + 1, on the side of p away from the mode (so the value is the small
    one), with break points every sigma/4 near p and the density's log evaluated at 60
    digits (its terms are ~1e12 in size: 20 digits are spent on cancellation)."""
    a, b = mpf(M), mpf(k - M + 1)
    lB = loggamma(a) + loggamma(b) - loggamma(a + b)

    def dens(t):
        if t <= 0 or t >= 1:
            return mpf(0)
        return exp((a - 1) * log(t) + (b - 1) * log1p(-t) - lB)

    mode = (a - 1) / (a + b - 2)
    sig = sqrt(mode * (1 - mode) / (a + b))
    # the decay rate of the log-density at p sets the scale of the integrand near p
    slope = abs((a - 1) / p - (b - 1) / (1 - p))
    scale = min(sig, 1 / max(slope, 1 / sig))
    # Gauss-Legendre on pieces a quarter scale wide, out to 140 scales (the integrand
    # changes by about e^(1/4) over a piece). Tanh-sinh on such pieces was off by up to
    # 7e-13 relative in far tails, whatever its degree; Gauss-Legendre agrees with direct
    # sums to better than 1e-20 (self_tests), which is the accuracy claimed.
    steps = [mpf(j) / 4 for j in range(0, 561)]
    if p < mode:   # I_p is the lower tail: integrate up to p
        pts = [p - scale * j for j in steps]
        pts = sorted(set(max(x, mpf(0)) for x in pts))
        val = quad(dens, pts, method="gauss-legendre")
        # neglected below the first point: the density is log-concave and increasing there
        lo = pts[0]
        if lo > 0:
            d = dens(lo)
            rate = (a - 1) / lo - (b - 1) / (1 - lo)
            assert d / rate < mpf(10) ** -45 * val, ("tail", k, M)
        return val
    # p above the mode: 1 - (integral from p up)
    pts = [p + scale * j for j in steps]
    pts = sorted(set(min(x, mpf(1)) for x in pts))
    val = quad(dens, pts, method="gauss-legendre")
    hi = pts[-1]
    if hi < 1:
        d = dens(hi)
        rate = (b - 1) / (1 - hi) - (a - 1) / hi
        assert d / rate < mpf(10) ** -45, ("tail", k, M)
    return 1 - val


class Hom:
    """k copies of (e0, d0)."""

    def __init__(self, k, e0, d0):
        self.k, self.e0, self.d0 = k, e0, d0
        self.p = 1 / (1 + exp(-e0))
        self.q = 1 / (1 + exp(e0))
        s = k * log1p(-d0)
        self.floor, self.keep = -expm1(s), exp(s)
        self.cache = {}

    def x(self, m):
        return (2 * m - self.k) * self.e0

    def AB(self, M):
        if M not in self.cache:
            self.cache[M] = (upper_tail(self.k, self.p, M), upper_tail(self.k, self.q, M))
        return self.cache[M]

    def first_above(self, et):
        """The smallest m with x_m > et."""
        m = int(mfloor((self.k + et / self.e0) / 2)) + 1
        while m > 0 and self.x(m - 1) > et:
            m -= 1
        while m <= self.k and self.x(m) <= et:
            m += 1
        return m

    def cond_delta(self, et):
        M = self.first_above(et)
        if M > self.k:
            return mpf(0)
        A, B = self.AB(M)
        return A - exp(et) * B

    def delta(self, et):
        return self.floor + self.keep * self.cond_delta(et)

    def eps_at(self, target):
        """The smallest et >= 0 with delta(et) <= target: binary search on M, then the
        closed form on the segment."""
        t = (target - self.floor) / self.keep
        assert t > 0
        if self.cond_delta(mpf(0)) <= t:
            return mpf(0)
        lo = self.first_above(mpf(0))   # delta(x_(lo-1)) > t at et = 0 side
        hi = self.k                     # delta(x_k) = 0 <= t
        while hi - lo > 0:              # find the smallest M with delta(x_M) <= t
            mid = (lo + hi) // 2
            if self.cond_delta(self.x(mid)) <= t:
                hi = mid
            else:
                lo = mid + 1
        M = lo                          # delta(x_M) <= t < delta(x_(M-1)) (or x_(M-1) < 0)
        if self.k <= 20000:
            # A - t and A - e^et B cancel when t is far below A (delta = 1e-300 at
            # eps ~ 3000): small k is solved again at 420 digits, where they do not.
            with mp.workdps(420):
                p, q = 1 / (1 + exp(-self.e0)), 1 / (1 + exp(self.e0))
                A = sum((binomial(self.k, m) * p ** m * q ** (self.k - m) for m in range(M, self.k + 1)), mpf(0))
                B = sum((binomial(self.k, m) * q ** m * p ** (self.k - m) for m in range(M, self.k + 1)), mpf(0))
                et = log((A - t) / B)
                left = max(self.x(M - 1), mpf(0))
                et = min(max(et, left), self.x(M))
                assert abs((A - exp(et) * B) - t) <= mpf(10) ** -40 * t, ("inversion", self.k)
            return +et
        A, B = self.AB(M)
        et = log((A - t) / B)
        left = max(self.x(M - 1), mpf(0))
        et = min(max(et, left), self.x(M))
        assert abs(self.cond_delta(et) - t) <= mpf(10) ** -30 * t, ("inversion", self.k)
        return et


def max_eps_per_query(k, d0, eps, delta):
    """The largest e0 with delta_k(eps) <= delta: bisection at 60 digits to 1e-40."""
    lo, hi = eps / k, 2 * eps / k
    while Hom(k, hi, d0).delta(eps) <= delta:
        lo, hi = hi, 2 * hi
    while hi - lo > mpf(10) ** -40 * lo:
        mid = (lo + hi) / 2
        if Hom(k, mid, d0).delta(eps) <= delta:
            lo = mid
        else:
            hi = mid
    return lo


def self_tests():
    # Quadrature against term-by-term sums at k = 25000.
    k, p = 25000, 1 / (1 + exp(-mpf(0.01)))
    for M in [12600, 12700, 12900, 13200]:
        direct = sum((binomial(k, m) * p ** m * (1 - p) ** (k - m) for m in range(M, k + 1)), mpf(0))
        assert abs(beta_tail(k, p, M) - direct) < mpf(10) ** -20 * direct, M
        qd = sum((binomial(k, m) * (1 - p) ** m * p ** (k - m) for m in range(M, k + 1)), mpf(0))
        assert abs(beta_tail(k, 1 - p, M) - qd) < mpf(10) ** -20 * qd, M
    # Far tails against term-by-term sums (k = 10^6, 21 standard deviations out, where
    # coarse break points once erred by 4e-12).
    k, p = 10 ** 6, 1 / (1 + exp(-mpf(0.01)))
    for M in [500000 + 2500 + 21 * 500, 500000 + 2500 + 30 * 500]:
        direct, term, m = mpf(0), binomial(k, M) * p ** M * (1 - p) ** (k - M), M
        while term > mpf(10) ** -80 * direct or m == M:
            direct += term
            term = term * (k - m) / (m + 1) * p / (1 - p)
            m += 1
        assert abs(beta_tail(k, p, M) - direct) < mpf(10) ** -20 * direct, (M, beta_tail(k, p, M), direct)
    # k = 10^10, e0 = 1e-4 at delta = 1e-100 (26 standard deviations out): both tails
    # summed term by term from M until the terms fall below 1e-75 of the sum (~3e5 terms;
    # tanh-sinh quadrature was 7e-13 off here).
    k, e0 = 10 ** 10, F(1e-4)
    h = Hom(k, e0, mpf(0))
    M = h.first_above(mpf(262))
    for p in (h.p, h.q):
        lt = loggamma(k + 1) - loggamma(M + 1) - loggamma(k - M + 1) + M * log(p) + (k - M) * log1p(-p)
        direct, term, m = mpf(0), exp(lt), M
        while term > mpf(10) ** -75 * direct or m == M:
            direct += term
            term = term * (k - m) / (m + 1) * p / (1 - p)
            m += 1
        got = beta_tail(k, p, M)
        assert abs(got - direct) < mpf(10) ** -20 * direct, (M, got, direct)
    # The existing 60-digit reference (window sums, compose/testdata/reference.json):
    # k = 10^9, e0 = 1e-4, eps at delta = 1e-6.
    got = Hom(10 ** 9, F(1e-4), mpf(0)).eps_at(F(1e-6))
    want = mpf("19.4236563946699651982831563626")
    assert abs(got - want) < mpf(10) ** -20, got
    # k = 10^6, e0 = 0.001: 4.88654374375764913311683596081.
    got = Hom(10 ** 6, F(0.001), mpf(0)).eps_at(F(1e-6))
    assert abs(got - mpf("4.88654374375764913311683596081")) < mpf(10) ** -20, got
    progress("self-tests passed")


def cases():
    out = []

    def hom(name, k, e0, d0, eps=(), deltas=()):
        h = Hom(k, F(e0), F(d0))
        mechs = [{"epsilon": e0, "delta": d0, "count": k}]
        for e in eps:
            out.append({"name": "%s_delta_at_eps%g" % (name, e), "kind": "delta_at_eps", "mechs": mechs, "eps": e, "want": fmt(h.delta(F(e)))})
        for d in deltas:
            out.append({"name": "%s_eps_at_delta%g" % (name, d), "kind": "eps_at_delta", "mechs": mechs, "delta": d, "want": fmt(h.eps_at(F(d)))})
        progress("  " + name)

    # k = 10^12 (issue 24: 3.13867055648 reported, truth 3.13867054858 at delta = 1e-3).
    hom("k1e12_e1e-6", 10 ** 12, 1e-6, 0.0, eps=(3.0, 5.0), deltas=(1e-3, 1e-6, 1e-10))
    hom("k1e12_e2.367e-7", 10 ** 12, 2.367043806628781e-07, 0.0, eps=(1.0,), deltas=(1e-6,))
    hom("k1e12_e1e-6_d1e-15", 10 ** 12, 1e-6, 1e-15, deltas=(2e-3,))
    hom("k1e11_e1e-5", 10 ** 11, 1e-5, 0.0, deltas=(1e-6,))
    hom("k1e10_e1e-4", 10 ** 10, 1e-4, 0.0, deltas=(1e-6, 1e-100))
    # delta down to 1e-300.
    hom("k1000_e0.1", 1000, 0.1, 0.0, eps=(60.0,), deltas=(1e-100, 1e-300))
    hom("k1e6_e0.01", 10 ** 6, 0.01, 0.0, deltas=(1e-300,))
    hom("k1e6_e0.01_d1e-12", 10 ** 6, 0.01, 1e-12, deltas=(1e-5,))
    # epsilon up to 10^3.
    hom("k2_e800", 2, 800.0, 0.0, eps=(1.0, 1599.0), deltas=(1e-6,))
    hom("k3_e1000", 3, 1000.0, 0.0, eps=(1.0,), deltas=(1e-6, 1e-300))
    hom("k10_e100", 10, 100.0, 1e-12, eps=(500.0,), deltas=(1e-6,))
    # Calibration at k = 10^12 (issue 24: 43 s, and an answer over the budget).
    e0 = max_eps_per_query(10 ** 12, mpf(0), mpf(1), F(1e-6))
    out.append({"name": "maxeps_k1e12", "kind": "max_eps_per_query", "k": 10 ** 12, "query_delta": 0.0, "total": {"epsilon": 1.0, "delta": 1e-6}, "want": fmt(e0)})
    progress("  maxeps_k1e12")
    # Issue 24 item 2: the Johnson-Lindenstrauss rows (mechanism.NewJLCut) at an extreme
    # total, k = 85533 rows of delta0 = delta / (2k) within (5e-10, 2.4e-3), where
    # calibration and composition once disagreed by 2e-6 relative.
    k, d0 = 85533, 2.4e-3 / (2 * 85533)
    e0 = max_eps_per_query(k, F(d0), F(5e-10), F(2.4e-3))
    out.append({"name": "maxeps_k85533_jl", "kind": "max_eps_per_query", "k": k, "query_delta": d0, "total": {"epsilon": 5e-10, "delta": 2.4e-3}, "want": fmt(e0)})
    progress("  maxeps_k85533_jl")
    return out


def main():
    self_tests()
    cs = cases()
    path = os.path.join(HERE, "extremes.json")
    with open(path, "w") as f:
        f.write('{"generator": "compose/testdata/gen_extremes.py", "precision_digits": 60,\n "cases": [\n')
        for i, c in enumerate(cs):
            f.write("  " + json.dumps(c, ensure_ascii=False) + ("," if i < len(cs) - 1 else "") + "\n")
        f.write(" ]}\n")
    progress("wrote %d cases to %s" % (len(cs), path))


if __name__ == "__main__":
    main()
