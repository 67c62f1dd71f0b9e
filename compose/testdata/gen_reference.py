#!/usr/bin/env python3
"""Independent high-precision reference for the exact (KOV) composition of
(eps_l, delta_l)-DP mechanisms.  Writes compose/testdata/reference.json.

Run from the repository root:   python3 compose/testdata/gen_reference.py
Needs mpmath (tested with 1.3.0).  All arithmetic is at mp.dps = 60 (the lattice
dynamic programme uses integer fixed point with 2^-256 absolute resolution).
Deterministic; progress goes to stderr.

Mathematics (docs/errata.md items 1-4, 11; KOV Thm 3.3).  For any target et >= 0

    delta(et) = floor + keep * E[(1 - e^(et - L))_+],
    keep = prod_l (1 - delta_l),  floor = 1 - keep,
    L = sum_l s_l eps_l,  s_l = +1 w.p. p_l = e^eps_l / (1 + e^eps_l), else -1.

Only atoms of L with x > et contribute (see class Dist).  Every float input is
converted exactly with mpf(float), so reference and Go see the same binary inputs.
See compose/testdata/README.md for the methods and the accuracy of each kind of case.
"""

import bisect
import json
import os
import sys
import time

from mpmath import mp, mpf, exp, expm1, log, log1p, loggamma, ldexp, nstr, binomial
from mpmath import floor as mfloor

mp.dps = 60

SIG = 30                      # significant digits written to JSON
WINDOW_REL = mpf(10) ** -70   # binomial window: terms >= 1e-70 * largest term
NEGLECT_MAX = mpf(10) ** -60  # max neglected probability mass (asserted)
PRUNE_ABS = mpf(10) ** -75    # product enumeration: drop atoms below this mass
FULL_K = 20000                # binomials with k <= FULL_K are enumerated completely
FIX_BITS = 256                # lattice DP fixed point resolution 2^-256
EPS_FIN = mpf(10) ** -59      # per-operation relative error bound used in checks

T0 = time.time()
HERE = os.path.dirname(os.path.abspath(__file__))


def progress(msg):
    print("[%7.1fs] %s" % (time.time() - T0, msg), file=sys.stderr, flush=True)


def F(x):
    """Exact conversion of a Python float (the float64 Go passes in) to mpf."""
    assert isinstance(x, float), x
    return mpf(x)


def fmt(v):
    return nstr(v, SIG)


class Infeasible(Exception):
    pass


def floor_keep(groups):
    """groups: list of (eps mpf, delta mpf, count). Returns (floor, keep) with
    keep = prod (1-delta)^count and floor = 1 - keep evaluated without cancellation."""
    s = mpf(0)
    keep = mpf(1)
    for _, d, c in groups:
        s += c * log1p(-d)
        keep *= (1 - d) ** c
    return -expm1(s), keep


# ---------------------------------------------------------------------------
# Distribution of L restricted to atoms x > xmin, and the curve / inverse on it.
# ---------------------------------------------------------------------------

class Dist:
    """Atoms x_i (strictly increasing, all > xmin) with mass a_i and correction d_i.

    Contribution of atom i to E(et) = E[(1-e^(et-L))_+] for et < x_i:
        a_i * (1 - e^(et - x_i)) + d_i * e^(et - x_i)
    (d_i = 0 for ordinary atoms; the lattice DP uses d_i = P(N) - E[e^{-R}; N], which
    accounts exactly for the off-lattice parts R of the float inputs).
    On et in [x_{j-1}, x_j):  E(et) = SA_j - e^et * SB_j with suffix sums
    SA_j = sum_{i>=j} a_i, SB_j = sum_{i>=j} (a_i - d_i) e^{-x_i}.
    """

    def __init__(self, xs, a, ex, floor, keep, xmin, neglected, d=None, rmax=mpf(0), label=""):
        n = len(xs)
        for i in range(1, n):
            assert xs[i] > xs[i - 1]
        assert n == 0 or xs[0] > xmin
        self.xs, self.a, self.ex, self.d = xs, a, ex, d
        self.floor, self.keep, self.xmin = floor, keep, xmin
        self.neglected = neglected
        self.rmax = rmax
        self.label = label
        assert neglected < NEGLECT_MAX, (label, neglected)
        SA = [mpf(0)] * (n + 1)
        SB = [mpf(0)] * (n + 1)
        for i in range(n - 1, -1, -1):
            SA[i] = SA[i + 1] + a[i]
            g = a[i] if d is None else a[i] - d[i]
            SB[i] = SB[i + 1] + g * ex[i]
        self.SA, self.SB = SA, SB

    def first_above(self, et):
        return bisect.bisect_right(self.xs, et)

    def E_term(self, et):
        """Term-by-term sum (all terms >= 0 up to the tiny lattice corrections)."""
        assert et >= self.xmin
        j = self.first_above(et)
        eet = exp(et)
        s = mpf(0)
        xs, a, ex, d = self.xs, self.a, self.ex, self.d
        half = mpf(1) / 2
        for i in range(j, len(xs)):
            diff = xs[i] - et
            if diff < half:
                s += -a[i] * expm1(-diff)
                if d is not None:
                    s += d[i] * exp(-diff)
            else:
                f = eet * ex[i]
                s += a[i] * (1 - f)
                if d is not None:
                    s += d[i] * f
        return s

    def E(self, et, j=None):
        """Fast suffix-sum evaluation; falls back to E_term when cancellation could
        cost more than ~12 of the 60 digits."""
        assert et >= self.xmin
        if j is None:
            j = self.first_above(et)
        else:
            assert j == self.first_above(et)
        eet = exp(et)
        u, v = self.SA[j], eet * self.SB[j]
        fast = u - v
        err = (len(self.xs) - j + 4) * EPS_FIN * (u + v)
        if fast > err * mpf(10) ** 12:
            return fast
        return self.E_term(et)

    def delta(self, et, termwise=True):
        self.check_kink(et)
        e = self.E_term(et) if termwise else self.E(et)
        return self.floor + self.keep * e

    def check_kink(self, et):
        """Lattice atoms stand for float sums within rmax of x; none may straddle et."""
        if self.rmax == 0:
            return
        j = self.first_above(et)
        for i in (j - 1, j):
            if 0 <= i < len(self.xs):
                assert abs(self.xs[i] - et) > 10 * self.rmax, (self.label, et)

    def eps_at(self, target):
        """Smallest et >= 0 with delta(et) <= target."""
        assert self.xmin <= 0
        tgt = target
        diff = tgt - self.floor
        if abs(diff) <= mpf(10) ** -55 * self.floor:
            diff = mpf(0)  # target equals the floor (to 55 digits)
        elif diff < 0:
            raise Infeasible(self.label)
        t = diff / self.keep
        xs, SA, SB = self.xs, self.SA, self.SB
        n = len(xs)
        j0 = self.first_above(mpf(0))
        if j0 == n or self.E(mpf(0)) <= t:
            return mpf(0)
        # smallest j >= j0 with E(x_j) <= t ; E(x_{n-1}) = 0
        lo, hi = j0, n - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self.E(xs[mid], mid + 1) <= t:
                hi = mid
            else:
                lo = mid + 1
        j = lo
        left = xs[j - 1] if j > j0 else mpf(0)
        if t == 0:
            val = xs[n - 1] if self.d is None else log(SA[j] / SB[j])
            assert j == n - 1
        else:
            val = log((SA[j] - t) / SB[j])
        tol = mpf(10) ** -45 * (1 + abs(val))
        assert left - tol <= val <= xs[j] + tol, (self.label, left, val, xs[j])
        val = min(max(val, left), xs[j])
        # independent check with the term-by-term sum
        self.check_kink(val)
        e = self.E_term(val)
        assert abs(e - t) <= mpf(10) ** -40 * t + mpf(10) ** -70, (self.label, e, t)
        return val


# ---------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------

def binom_atoms(k, e0, cut, force=None, mass_check=True):
    """Atoms m with x_m = (2m-k) e0 > cut of Binomial(k, p), p = e^e0/(1+e^e0).
    Returns (xs, ps, exs, neglected).  force in {None, 'full', 'window'}."""
    assert e0 > 0 and k >= 1
    ee, emi = exp(e0), exp(-e0)
    logp = -log1p(emi)
    logq = -log1p(ee)
    p = 1 / (1 + emi)
    # smallest m with (2m-k) e0 > cut
    m_lo = int(mfloor((k + cut / e0) / 2)) + 1
    while m_lo > 0 and (2 * (m_lo - 1) - k) * e0 > cut:
        m_lo -= 1
    while m_lo <= k and (2 * m_lo - k) * e0 <= cut:
        m_lo += 1
    m_lo = max(m_lo, 0)
    mode = "full" if k <= FULL_K else "window"
    if force:
        mode = force
    pm = {}  # m -> pmf
    neglected = mpf(0)
    if mode == "full":
        if m_lo > k and not mass_check:
            return [], [], [], mpf(0)
        cur = exp(k * logp)
        m = k
        total = mpf(0)
        bottom = 0 if mass_check else min(m_lo, k)
        while True:
            if m >= m_lo:
                pm[m] = cur
            total += cur
            if m == bottom:
                break
            cur = cur * m / (k - m + 1) * emi
            m -= 1
        if mass_check:
            assert abs(total - 1) < mpf(10) ** -50, total
    else:
        md = int(mfloor((k + 1) * p))
        md = min(max(md, 0), k)
        lpm = (loggamma(k + 1) - loggamma(md + 1) - loggamma(k - md + 1)
               + md * logp + (k - md) * logq)
        top = exp(lpm)
        thr = top * WINDOW_REL
        total = top
        if md >= m_lo:
            pm[md] = top
        # upward
        m, cur, tail_up = md, top, mpf(0)
        while m < k:
            r = mpf(k - m) / (m + 1) * ee
            nxt = cur * r
            m += 1
            if nxt < thr:
                r2 = mpf(k - m) / (m + 1) * ee
                assert r2 < 1
                tail_up = nxt / (1 - r2)
                break
            if m >= m_lo:
                pm[m] = nxt
            total += nxt
            cur = nxt
        # downward
        m, cur, tail_dn = md, top, mpf(0)
        edge = 0
        while m > 0:
            r = mpf(m) / (k - m + 1) * emi
            nxt = cur * r
            m -= 1
            if nxt < thr:
                r2 = mpf(m) / (k - m + 1) * emi
                assert r2 < 1
                tail_dn = nxt / (1 - r2)
                edge = m + 1
                break
            if m >= m_lo:
                pm[m] = nxt
            elif not mass_check:
                break
            total += nxt
            cur = nxt
        neglected = tail_up + (tail_dn if edge > m_lo else mpf(0))
        assert neglected < NEGLECT_MAX, neglected
        if mass_check:
            assert abs(total + tail_up + tail_dn - 1) < mpf(10) ** -45, total
    ms = sorted(pm)
    xs, ps, exs = [], [], []
    step = exp(-2 * e0)
    prev = None
    for idx, m in enumerate(ms):
        x = (2 * m - k) * e0
        if prev is None or m != prev + 1 or idx % 512 == 0:
            ex = exp(-x)
        else:
            ex = exs[-1] * step
        xs.append(x)
        ps.append(pm[m])
        exs.append(ex)
        prev = m
    return xs, ps, exs, neglected


def hom_dist(k, e0, d0, cut=mpf(0), force=None, mass_check=True, label=""):
    """k-fold composition of (e0, d0); e0, d0 mpf."""
    fl, kp = floor_keep([(e0, d0, k)])
    xs, ps, exs, neg = binom_atoms(k, e0, cut, force=force, mass_check=mass_check)
    return Dist(xs, ps, exs, fl, kp, cut, neg, label=label)


def product_dist(groups, label=""):
    """groups: list of (eps mpf, delta mpf, count).  L = sum of independent scaled
    binomials; exact enumeration of the product of the per-group atoms."""
    fl, kp = floor_keep(groups)
    maxes = [c * e for e, _, c in groups]
    total_max = sum(maxes)
    neglected = mpf(0)
    per = []
    for gi, (e, _, c) in enumerate(groups):
        cut = -(total_max - maxes[gi])
        xs, ps, exs, neg = binom_atoms(c, e, cut)
        neglected += neg
        keep = [(x, p_, ex) for x, p_, ex in zip(xs, ps, exs) if p_ >= PRUNE_ABS]
        neglected += sum((p_ for p_ in ps if p_ < PRUNE_ABS), mpf(0))
        per.append(keep)
    cur = per[0]
    rem = total_max - maxes[0]
    for gi in range(1, len(groups)):
        rem -= maxes[gi]
        nxt = per[gi]
        nx = [t[0] for t in nxt]
        pmax = max(t[1] for t in nxt)
        out = []
        for x1, p1, e1 in cur:
            if p1 * pmax < PRUNE_ABS:
                neglected += p1
                continue
            start = bisect.bisect_right(nx, -rem - x1)
            for x2, p2, e2 in nxt[start:]:
                pp = p1 * p2
                if pp < PRUNE_ABS:
                    neglected += pp
                    continue
                out.append((x1 + x2, pp, e1 * e2))
        out.sort(key=lambda t: (float(t[0]), t[0]))
        merged = []
        for t in out:
            if merged and merged[-1][0] == t[0]:
                merged[-1] = (t[0], merged[-1][1] + t[1], merged[-1][2])
            else:
                merged.append(t)
        cur = merged
        progress("  product %s: group %d -> %d atoms" % (label, gi, len(cur)))
    if len(groups) == 1:
        cur = sorted(cur, key=lambda t: t[0])
    cur = [t for t in cur if t[0] > 0]
    xs = [t[0] for t in cur]
    ps = [t[1] for t in cur]
    exs = [t[2] for t in cur]
    return Dist(xs, ps, exs, fl, kp, mpf(0), neglected, label=label)


def lattice_dist(mechs, u, ns, label=""):
    """mechs: list of (eps mpf, delta mpf), one per mechanism; ns: integers with
    eps_l = ns_l * u + r_l, |r_l| tiny (float rounding).  Exact distribution of
    N = sum s_l n_l by dynamic programming (polynomial multiplication) in integer fixed
    point; alongside P(N) it carries G(N) = E[e^{-R}; N], R = sum s_l r_l, which makes
    the curve exact for the float inputs (as long as no atom lies within sum|r_l| of et).
    """
    fl, kp = floor_keep([(e, d, 1) for e, d in mechs])
    ONE = 1 << FIX_BITS
    order = sorted(range(len(mechs)), key=lambda i: ns[i])
    S = sum(ns)
    rmax = mpf(0)
    steps = []
    for i in order:
        e = mechs[i][0]
        n = ns[i]
        assert n >= 1
        r = e - n * u
        rmax += abs(r)
        p = 1 / (1 + exp(-e))
        q = 1 / (1 + exp(e))
        fx = lambda v: int(mfloor(ldexp(v, FIX_BITS) + mpf(1) / 2))
        steps.append((n, fx(p), fx(q), fx(p * exp(-r)), fx(q * exp(r))))
    P, G = [ONE], [ONE]
    off = 0          # index of P[0]; index i = sum of n over s=+1
    rem = S
    dropped = 0
    work = 0
    for (n, pf, qf, pgf, qgf) in steps:
        rem -= n
        L = len(P)
        Pn = [(qf * a + pf * b) >> FIX_BITS for a, b in zip(P + [0] * n, [0] * n + P)]
        Gn = [(qgf * a + pgf * b) >> FIX_BITS for a, b in zip(G + [0] * n, [0] * n + G)]
        work += L + n
        # drop indices that can no longer reach x > 0: 2 (i + rem) <= S
        cutidx = (S // 2) - rem  # i <= cutidx  <=>  2(i + rem) <= S
        ndrop = max(0, min(len(Pn), cutidx - off + 1))
        if ndrop:
            dropped += sum(Pn[:ndrop])
            Pn, Gn = Pn[ndrop:], Gn[ndrop:]
            off += ndrop
        # trim zero ends
        while Pn and Pn[-1] == 0 and Gn[-1] == 0:
            Pn.pop()
            Gn.pop()
        lead = 0
        while lead < len(Pn) and Pn[lead] == 0 and Gn[lead] == 0:
            lead += 1
        if lead:
            Pn, Gn = Pn[lead:], Gn[lead:]
            off += lead
        P, G = Pn, Gn
    total = sum(P) + dropped
    # each fixed-point op rounds down by < 1 unit: total error < 2 * work units
    neglected = ldexp(mpf(2 * work + 2 * len(steps)), -FIX_BITS)
    assert abs(ldexp(mpf(total), -FIX_BITS) - 1) <= neglected + mpf(10) ** -55
    xs, a, d, exs = [], [], [], []
    e2u = exp(-2 * u)
    for k_, (pi, gi) in enumerate(zip(P, G)):
        i = off + k_
        N = 2 * i - S
        if N <= 0 or (pi == 0 and gi == 0):
            continue
        x = N * u
        if exs and len(exs) % 512 != 0 and N == prevN + 2:
            ex = exs[-1] * e2u
        else:
            ex = exp(-x)
        prevN = N
        xs.append(x)
        a.append(ldexp(mpf(pi), -FIX_BITS))
        d.append(ldexp(mpf(pi - gi), -FIX_BITS))
        exs.append(ex)
    progress("  lattice %s: %d mechanisms, %d cell updates, %d atoms > 0, sum|r| = %s"
             % (label, len(mechs), work, len(xs), nstr(rmax, 3)))
    return Dist(xs, a, exs, fl, kp, mpf(0), neglected, d=d, rmax=rmax, label=label)


# ---------------------------------------------------------------------------
# Inversions
# ---------------------------------------------------------------------------

def max_eps_per_query(k, d0, et, tgt, label=""):
    """Largest e0 with delta_k(et; e0, d0) <= tgt (delta increasing in e0)."""
    def f(e0):
        return hom_dist(k, e0, d0, cut=et, mass_check=False, label=label).delta(et, termwise=False)
    lo = et / k
    assert f(lo) <= tgt
    hi = 2 * lo
    while f(hi) <= tgt:
        lo, hi = hi, 2 * hi
    it = 0
    while hi - lo > mpf(10) ** -42 * hi:
        mid = (lo + hi) / 2
        if f(mid) <= tgt:
            lo = mid
        else:
            hi = mid
        it += 1
    progress("  max_eps_per_query %s: %d bisection steps" % (label, it))
    return lo


MARGINS = []


def max_queries(e0, d0, et, tgt, label=""):
    """Largest integer k with delta_k(et; e0, d0) <= tgt (delta non-decreasing in k)."""
    cache = {}

    def g(k):
        if k not in cache:
            cache[k] = hom_dist(k, e0, d0, cut=et, mass_check=False).delta(et, termwise=False)
        return cache[k]
    if g(1) > tgt:
        return 0
    lo = 1
    while g(2 * lo) <= tgt:
        lo *= 2
    hi = 2 * lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if g(mid) <= tgt:
            lo = mid
        else:
            hi = mid
    assert g(lo) <= tgt < g(lo + 1)
    # exact term-by-term confirmation at the boundary
    assert hom_dist(lo, e0, d0, cut=et).delta(et) <= tgt
    assert hom_dist(lo + 1, e0, d0, cut=et).delta(et) > tgt
    MARGINS.append((label, lo, g(lo), g(lo + 1)))
    progress("  max_queries %s: k=%d  delta(k)=%s  delta(k+1)=%s"
             % (label, lo, nstr(g(lo), 8), nstr(g(lo + 1), 8)))
    return lo


# ---------------------------------------------------------------------------
# Self-tests
# ---------------------------------------------------------------------------

def kov_grid(k, e0, d0, i):
    """KOV eq. (5)/(6): total delta at et = (k-2i) e0, via floor + keep * delta_i."""
    s = mpf(0)
    for l in range(i):
        s += binomial(k, l) * (exp((k - l) * e0) - exp((k - 2 * i + l) * e0))
    di = s / (1 + exp(e0)) ** k
    fl, kp = floor_keep([(e0, d0, k)])
    return fl + kp * di


def self_tests():
    progress("self-test: KOV grid formula vs general formula")
    for e0f in (0.4, 1.0, 0.1, 2.5):
        for d0f in (0.0, 0.1, 1e-3):
            for k in list(range(1, 13)) + [30]:
                e0, d0 = F(e0f), F(d0f)
                D = hom_dist(k, e0, d0)
                for i in range(k // 2 + 1):
                    et = (k - 2 * i) * e0
                    a, b = kov_grid(k, e0, d0, i), D.delta(et)
                    assert abs(a - b) <= mpf(10) ** -50 * max(a, mpf(10) ** -300), (k, e0f, d0f, i, a, b)
                    assert abs(D.delta(et, termwise=False) - b) <= mpf(10) ** -45 * b + mpf(10) ** -80
    progress("self-test: k = 1 closed form")
    for e0f in (0.01, 0.5, 1.0, 3.0):
        for d0f in (0.0, 1e-6, 0.2):
            e0, d0 = F(e0f), F(d0f)
            D = hom_dist(1, e0, d0)
            for frac in (0, 0.1, 0.5, 0.999):
                et = e0 * frac
                want = d0 + (1 - d0) * (exp(e0) - exp(et)) / (1 + exp(e0))
                got = D.delta(et)
                assert abs(got - want) <= mpf(10) ** -55 * want
    progress("self-test: product enumeration vs brute force over sign vectors")
    import itertools
    groups = [(F(1.0), F(0.0), 1), (F(0.3), F(0.01), 3)]
    flat = [(F(1.0), F(0.0))] + [(F(0.3), F(0.01))] * 3
    D = product_dist(groups, label="brute")
    fl, kp = floor_keep(groups)
    for et in (mpf(0), F(0.5), F(0.9), F(1.3), F(1.8)):
        s = mpf(0)
        for signs in itertools.product((1, -1), repeat=len(flat)):
            pr, L = mpf(1), mpf(0)
            for sg, (e, _) in zip(signs, flat):
                pr *= (1 / (1 + exp(-e))) if sg > 0 else (1 / (1 + exp(e)))
                L += sg * e
            if L > et:
                s += pr * (1 - exp(et - L))
        want = fl + kp * s
        assert abs(D.delta(et) - want) <= mpf(10) ** -55 * want
    progress("self-test: binomial window (loggamma) vs full enumeration, k = 25000")
    e0 = F(0.01)
    Dw = hom_dist(25000, e0, F(0.0), force="window")
    Df = hom_dist(25000, e0, F(0.0), force="full")
    for et in (F(0.5), F(3.0), F(6.123)):
        a, b = Dw.delta(et), Df.delta(et)
        assert abs(a - b) <= mpf(10) ** -45 * b, (a, b)
    a, b = Dw.eps_at(F(1e-6)), Df.eps_at(F(1e-6))
    assert abs(a - b) <= mpf(10) ** -45 * b
    progress("self-test: lattice DP (with off-lattice correction) vs exact product enumeration")
    epsf = [j * 0.001 for j in range(1, 13)]
    mechs = [(F(e), F(0.0)) for e in epsf]
    Dl = lattice_dist(mechs, mpf(1) / 1000, list(range(1, 13)), label="lat-test")
    Dp = product_dist([(F(e), F(0.0), 1) for e in epsf], label="lat-test-prod")
    for et in (F(0.0105), F(0.0351), F(0.061)):
        a, b = Dl.delta(et), Dp.delta(et)
        assert abs(a - b) <= mpf(10) ** -45 * b, (a, b)
    a, b = Dl.eps_at(F(1e-3)), Dp.eps_at(F(1e-3))
    assert abs(a - b) <= mpf(10) ** -45 * b, (a, b)
    # the correction matters at the 1e-17 level: without it the lattice is off
    Dl0 = Dist(Dl.xs, Dl.a, Dl.ex, Dl.floor, Dl.keep, Dl.xmin, Dl.neglected, label="nocorr")
    assert abs(Dl0.delta(F(0.0351)) - Dp.delta(F(0.0351))) > mpf(10) ** -25 * Dp.delta(F(0.0351))
    progress("self-tests passed")


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

CASES = []


def mechs_json(groups_f):
    return [{"epsilon": e, "delta": d, "count": c} for e, d, c in groups_f]


FLOAT_EDGE = []


def add_delta(name, groups_f, dist, et_f):
    et = F(et_f)
    v = dist.delta(et)
    assert v >= dist.neglected * mpf(10) ** 32, name
    # Flag values that are sensitive to ulp-level placement of an atom next to et:
    # an atom x != et within 1e-12 of et whose mass times one float64 ulp of et would move
    # delta by more than 1e-12 relative (e.g. et = 10*0.1 = 1.0 in float64, while the
    # top atom 10*mpf(0.1) = 1.0000000000000000555 lies above it).
    j = dist.first_above(et)
    for i in (j - 1, j):
        if (0 <= i < len(dist.xs) and dist.xs[i] != et
                and abs(dist.xs[i] - et) <= mpf(10) ** -12 * max(1, abs(et))):
            sens = dist.keep * dist.a[i] * mpf(2) ** -52 * max(1, abs(et))
            if sens > mpf(10) ** -12 * v:
                name += "_float_edge"
                FLOAT_EDGE.append((name, nstr(dist.xs[i] - et, 5), nstr(v, 10)))
                progress("  float-edge case %s: atom - eps = %s" % (name, nstr(dist.xs[i] - et, 5)))
                break
    CASES.append({"name": name, "kind": "delta_at_eps", "mechs": mechs_json(groups_f),
                  "eps": et_f, "want": fmt(v)})
    return v


def add_eps(name, groups_f, dist, tgt_f):
    v = dist.eps_at(F(tgt_f))
    assert dist.neglected <= mpf(10) ** -32 * F(tgt_f) or tgt_f == 0.0, name
    CASES.append({"name": name, "kind": "eps_at_delta", "mechs": mechs_json(groups_f),
                  "delta": tgt_f, "want": fmt(v)})
    return v


def groups_mp(groups_f):
    return [(F(e), F(d), c) for e, d, c in groups_f]


def hom(k, e0f, d0f, label):
    return hom_dist(k, F(e0f), F(d0f), label=label)


def fnum(x):
    return repr(x)


def build_cases():
    # --- errata item 1 ---------------------------------------------------
    progress("errata item 1")
    g = [(1.0, 1e-3, 30)]
    D = hom(30, 1.0, 1e-3, "errata1")
    e = add_eps("errata1_k30_e1_d1e-3_eps_at_delta0.06", g, D, 0.06)
    progress("  errata1 eps(0.06) = %s" % nstr(e, 12))
    assert abs(e - mpf("21.7096")) < mpf("0.0001")
    add_delta("errata1_k30_e1_d1e-3_delta_at_eps22", g, D, 22.0)
    add_delta("errata1_k30_e1_d1e-3_delta_at_eps21.7096", g, D, 21.7096)

    # --- KOV Figure 2 ----------------------------------------------------
    progress("KOV figure 2")
    for d0f in (0.0, 0.1):
        for k in range(1, 6):
            g = [(0.4, d0f, k)]
            D = hom(k, 0.4, d0f, "fig2")
            for i in range(k // 2 + 1):
                et_f = (k - 2 * i) * 0.4
                add_delta("kov_fig2_e0.4_d%s_k%d_i%d" % (fnum(d0f), k, i), g, D, et_f)

    # --- KOV Figure 3 ----------------------------------------------------
    progress("KOV figure 3")
    g = [(0.1, 0.001, 30)]
    D = hom(30, 0.1, 0.001, "fig3")
    for i in range(16):
        add_delta("kov_fig3_k30_e0.1_d1e-3_i%d" % i, g, D, (30 - 2 * i) * 0.1)
    for t in (0.05, 0.1, 0.2):
        add_eps("kov_fig3_k30_e0.1_d1e-3_eps_at_delta%s" % fnum(t), g, D, t)

    # --- homogeneous sweep -----------------------------------------------
    configs = [(1, 1.0), (1, 0.1), (2, 1.0), (3, 1.0), (10, 1.0), (10, 0.1), (100, 0.1),
               (1000, 0.1), (1000, 0.01), (10 ** 4, 0.01), (10 ** 5, 0.01), (10 ** 5, 0.001),
               (10 ** 6, 0.001), (10 ** 6, 0.01), (10 ** 7, 0.001), (10 ** 7, 1e-4),
               (10 ** 9, 1e-4)]
    for k, e0f in configs:
        for d0f in (0.0, 1e-7):
            if d0f > 0 and not (k * d0f < 1e-3):
                continue
            tag = "hom_k%d_e%s_d%s" % (k, fnum(e0f), fnum(d0f))
            progress("homogeneous %s" % tag)
            g = [(e0f, d0f, k)]
            D = hom(k, e0f, d0f, tag)
            progress("  %d atoms above 0" % len(D.xs))
            e6 = None
            for t in (1e-3, 1e-6, 1e-10):
                if F(t) <= D.floor:
                    continue
                v = add_eps("%s_eps_at_delta%s" % (tag, fnum(t)), g, D, t)
                progress("  eps(%g) = %s" % (t, nstr(v, 15)))
                if t == 1e-6:
                    e6 = v
            if e6 is None:
                e6 = D.eps_at(F(1e-3))
            i_on = int(mfloor((k - e6 / F(e0f)) / 2 + mpf(1) / 2))
            i_on = min(max(i_on, 0), k // 2)
            ets = [(k - 2 * i_on) * e0f]
            odd = k - 2 * i_on + 1 if k - 2 * i_on + 1 <= k else k - 2 * i_on - 1
            if odd >= 0:
                ets.append(odd * e0f)
            if k <= 10:
                ets.append(0.0)
            ets = sorted(set(ets))
            for et_f in ets:
                v = add_delta("%s_delta_at_eps%s" % (tag, fnum(et_f)), g, D, et_f)
                progress("  delta(%r) = %s" % (et_f, nstr(v, 15)))

    # --- tiny delta, large epsilon ----------------------------------------
    progress("tiny delta")
    g = [(0.1, 0.0, 100)]
    D = hom(100, 0.1, 0.0, "tiny")
    for t in (1e-18, 1e-30):
        v = add_eps("tiny_k100_e0.1_eps_at_delta%s" % fnum(t), g, D, t)
        progress("  eps(%g) = %s" % (t, nstr(v, 15)))
    progress("large epsilon")
    g = [(5.0, 0.0, 10)]
    D = hom(10, 5.0, 0.0, "large")
    for t in (1e-3, 1e-6, 1e-10):
        add_eps("large_k10_e5_eps_at_delta%s" % fnum(t), g, D, t)
    for et_f in (0.0, 7.5, 10.0, 20.0, 40.0):
        add_delta("large_k10_e5_delta_at_eps%s" % fnum(et_f), g, D, et_f)

    # --- floor / zero edge cases -------------------------------------------
    progress("edge cases")
    g = [(1.0, 0.5, 3)]
    D = product_dist(groups_mp(g), label="floor_half")
    v = add_eps("edge_floor_k3_e1_d0.5_eps_at_delta0.875", g, D, 0.875)
    assert v == 3 * F(1.0)
    g = [(0.5, 0.0, 4)]
    D = product_dist(groups_mp(g), label="floor_zero")
    v = add_eps("edge_floor_k4_e0.5_d0_eps_at_delta0", g, D, 0.0)
    assert v == 4 * F(0.5)
    g = [(0.01, 0.0, 1)]
    D = product_dist(groups_mp(g), label="zero")
    v = add_eps("edge_zero_k1_e0.01_eps_at_delta0.01", g, D, 0.01)
    assert v == 0

    # --- heterogeneous, few distinct values ---------------------------------
    hets = [
        ("het_a", [(0.1, 0.0, 50), (0.5, 1e-6, 10)], (2e-5, 1e-3), 2.0),
        ("het_b", [(0.01, 0.0, 1000), (0.05, 0.0, 200), (0.2, 1e-7, 5)], (1e-6, 1e-3), 2.0),
        ("het_c", [(1.0, 0.0, 1), (0.3, 0.0, 3)], (1e-6, 1e-3), 1.0),
    ]
    for name, g, targets, et_f in hets:
        progress("heterogeneous %s" % name)
        D = product_dist(groups_mp(g), label=name)
        progress("  %d atoms above 0, floor %s" % (len(D.xs), nstr(D.floor, 6)))
        for t in targets:
            v = add_eps("%s_eps_at_delta%s" % (name, fnum(t)), g, D, t)
            progress("  eps(%g) = %s" % (t, nstr(v, 15)))
        if name == "het_a":
            try:
                D.eps_at(F(1e-6))
                raise AssertionError("het_a at 1e-6 should be infeasible")
            except Infeasible:
                pass
        v = add_delta("%s_delta_at_eps%s" % (name, fnum(et_f)), g, D, et_f)
        progress("  delta(%r) = %s" % (et_f, nstr(v, 15)))

    # --- heterogeneous, many distinct values (lattice DP) ----------------------
    lats = [
        ("lat200_j0.001", [j * 0.001 for j in range(1, 201)], list(range(1, 201)),
         mpf(1) / 1000, (1e-6, 1e-3), 3.001),
        ("lat200_dyadic_j2^-10", [j * 2.0 ** -10 for j in range(1, 201)], list(range(1, 201)),
         mpf(2) ** -10, (1e-6, 1e-3), 3.0),
        ("lat400_0.05+j0.0005", [0.05 + j * 0.0005 for j in range(400)],
         [100 + j for j in range(400)], mpf(1) / 2000, (1e-6, 1e-3), 10.0005),
    ]
    for name, epsf, ns, u, targets, et_f in lats:
        progress("lattice %s" % name)
        assert len(set(epsf)) == len(epsf)
        g = [(e, 0.0, 1) for e in epsf]
        D = lattice_dist([(F(e), F(0.0)) for e in epsf], u, ns, label=name)
        for t in targets:
            v = add_eps("%s_eps_at_delta%s" % (name, fnum(t)), g, D, t)
            progress("  eps(%g) = %s" % (t, nstr(v, 15)))
        v = add_delta("%s_delta_at_eps%s" % (name, fnum(et_f)), g, D, et_f)
        progress("  delta(%r) = %s" % (et_f, nstr(v, 15)))

    # --- inversions -----------------------------------------------------------
    progress("inversions")
    for k, d0f, tot in ((10, 0.0, (1.0, 1e-6)), (100, 0.0, (1.0, 1e-6)),
                        (1000, 0.0, (1.0, 1e-6)), (100, 1e-8, (1.0, 1e-5))):
        name = "maxeps_k%d_d%s_total%s_%s" % (k, fnum(d0f), fnum(tot[0]), fnum(tot[1]))
        v = max_eps_per_query(k, F(d0f), F(tot[0]), F(tot[1]), label=name)
        progress("  %s = %s" % (name, nstr(v, 15)))
        CASES.append({"name": name, "kind": "max_eps_per_query", "k": k, "query_delta": d0f,
                      "total": {"epsilon": tot[0], "delta": tot[1]}, "want": fmt(v)})
    for q, tot in (((0.1, 0.0), (1.0, 1e-6)), ((0.01, 0.0), (1.0, 1e-6)),
                   ((0.05, 1e-9), (2.0, 1e-5))):
        name = "maxq_e%s_d%s_total%s_%s" % (fnum(q[0]), fnum(q[1]), fnum(tot[0]), fnum(tot[1]))
        v = max_queries(F(q[0]), F(q[1]), F(tot[0]), F(tot[1]), label=name)
        CASES.append({"name": name, "kind": "max_queries",
                      "query": {"epsilon": q[0], "delta": q[1]},
                      "total": {"epsilon": tot[0], "delta": tot[1]}, "want": str(v)})


def main():
    self_tests()
    build_cases()
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    out = {"generator": "compose/testdata/gen_reference.py", "precision_digits": 60,
           "cases": CASES}
    path = os.path.join(HERE, "reference.json")
    with open(path, "w") as fh:
        # one case per line (stable, diff-friendly); floats are written with repr
        fh.write('{"generator": %s, "precision_digits": %d,\n "cases": [\n'
                 % (json.dumps(out["generator"]), out["precision_digits"]))
        fh.write(",\n".join("  " + json.dumps(c) for c in CASES))
        fh.write("\n ]}\n")
    # round-trip check of the float inputs
    with open(path) as fh:
        back = json.load(fh)
    assert back == json.loads(json.dumps(out))
    progress("wrote %s: %d cases" % (path, len(CASES)))
    for name, dx, v in FLOAT_EDGE:
        progress("  float-edge %s: atom - eps = %s, want = %s" % (name, dx, v))
    for label, k, a, b in MARGINS:
        progress("  margin %s: k=%d delta(k)=%s delta(k+1)=%s" % (label, k, nstr(a, 10), nstr(b, 10)))


if __name__ == "__main__":
    main()
