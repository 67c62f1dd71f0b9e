package gce

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

// Relation is the neighbouring relation of a membership analysis (HBW §V-A).
type Relation int

const (
	// Unbounded: the adversary tests whether the target contributed at all, so one
	// hypothesis is the all-zero vector (p0 = δ_0⃗) and the other any distribution over
	// the allowed vectors. The worst case compares an allowed c with 0⃗: the differing
	// steps are supp(c).
	Unbounded Relation = iota
	// Bounded: the adversary knows the target contributed but not where; both
	// hypotheses range over the allowed vectors. The worst case compares two allowed
	// vectors c, c': the differing steps are c ⊕ c'.
	Bounded
)

func (r Relation) String() string {
	if r == Bounded {
		return "bounded"
	}
	return "unbounded"
}

// MembershipResult is the guarantee of a membership constraint at total δ = Delta.
type MembershipResult struct {
	// Epsilon is a valid ε: the largest optimal composition (compose, KOV Thm 3.3) over
	// the differing sets the constraint allows, never below it. Lower is a certified
	// value that largest composition is at or above.
	Epsilon, Lower float64
	Delta          float64
	// Worst is a differing set attaining Epsilon (grouped by (ε, δ)); when the search
	// was not exhaustive it is the decoupled workload whose composition bounds every
	// allowed set.
	Worst []compose.Mech
	// Exhaustive is false when the subset search of AtMost stopped at
	// MaxSearchEvaluations and Epsilon is the decoupled bound (still valid).
	Exhaustive bool
	// Classic is the optimal composition of all k steps: the guarantee without the
	// constraint (+Inf when Delta is below the floor 1 − Π(1 − δ_ℓ) of all steps).
	Classic float64
	// Parallel is the guarantee of parallel composition (McSherry; HBW Def. 5,
	// Thm 2 and §V-A1): s · max_ℓ ε_ℓ, s the largest symmetric difference of the merged
	// databases (s = m unbounded, 2m bounded, m capped at k). It applies only to
	// pure-DP workloads (every δ_ℓ = 0); ParallelApplies is false otherwise.
	Parallel        float64
	ParallelApplies bool
}

// AtMost returns the guarantee at total δ = delta when the target can be in at most m
// of the k databases, where database ℓ is answered by one (ε_ℓ, δ_ℓ)-DP release (entry
// ms[i] stands for Count such databases; HBW §V-A, Example 1 and 2, with
// B̃ = {c : Σ_{i=1}^k c_i ≤ m}, docs/errata.md, HBW item 3).
//
// Unbounded, the differing sets are all sets of at most m steps; bounded, all sets of at
// most 2m (two vectors with m ones each at different places). Adding a step never
// lowers a composition, so the worst set has exactly min(m, k) (resp. min(2m, k)) steps:
// with identical mechanisms it is their min(m, k)-fold composition; otherwise the search
// of worstSubset (branch and bound with a decoupled bound and a dominance exchange rule)
// finds the worst selection.
//
// Reference point (HBW Example 1, corrected numbers): 1000 × (0.01, 0), δ = 1e-6:
// classic 1.3654, m = 365 unbounded 0.7901 (bounded 1.1513), parallel 3.65 (7.3
// bounded).
func AtMost(ms []compose.Mech, m int64, rel Relation, delta float64, opts *compose.Options) (MembershipResult, error) {
	k, err := validateSteps(ms, compose.MaxCount)
	if err != nil {
		return MembershipResult{}, err
	}
	if err := dpkit.InPackage("gce", dpkit.CheckCount("max-member", m, compose.MaxCount)); err != nil {
		return MembershipResult{}, err
	}
	if err := checkRelation(rel); err != nil {
		return MembershipResult{}, err
	}
	if err := dpkit.InPackage("gce", dpkit.CheckDelta("delta", delta)); err != nil {
		return MembershipResult{}, err
	}
	size := min(m, k)
	if rel == Bounded {
		size = min(2*m, k)
	}
	var kinds []kind
	for _, g := range compose.Group(ms) {
		kinds = append(kinds, kind{eps: g.Epsilon, delta: g.Delta, n: g.Count})
	}
	c := newComposer(delta, opts)
	best, worst, exhaustive := worstSubset(c, kinds, size)
	if best.err != nil {
		return MembershipResult{}, best.err
	}
	res := MembershipResult{Epsilon: best.upper, Lower: best.lower, Delta: delta, Worst: worst, Exhaustive: exhaustive}
	if res.Classic, err = classic(c, ms); err != nil {
		return MembershipResult{}, err
	}
	res.Parallel, res.ParallelApplies = parallel(ms, min(m, k), rel)
	return res, nil
}

// Allowed returns the guarantee at total δ = delta when the membership vectors are
// restricted to the explicit set allowed (HBW §V-A, Example 3; comparisons computed
// generically from B̃, docs/errata.md, HBW item 4): the largest optimal composition
// over the differing sets supp(c), c ∈ allowed (Unbounded; the all-zero vector need not
// be listed), or c ⊕ c', c, c' ∈ allowed (Bounded). steps has k ≤ MaxSteps steps in all;
// every vector has length k. Every distinct differing multiset is composed once.
func Allowed(ms []compose.Mech, allowed []Vector, rel Relation, delta float64, opts *compose.Options) (MembershipResult, error) {
	k, err := validateSteps(ms, MaxSteps)
	if err != nil {
		return MembershipResult{}, err
	}
	if err := checkRelation(rel); err != nil {
		return MembershipResult{}, err
	}
	if err := dpkit.InPackage("gce", dpkit.CheckDelta("delta", delta)); err != nil {
		return MembershipResult{}, err
	}
	if len(allowed) == 0 {
		return MembershipResult{}, &dpkit.ParamError{Pkg: "gce", Name: "allowed", Value: 0, Want: "at least one membership vector"}
	}
	for i, b := range allowed {
		if len(b) != int(k) {
			return MembershipResult{}, &dpkit.ParamError{Pkg: "gce", Name: fmt.Sprintf("allowed[%d]", i), Value: b.String(), Want: fmt.Sprintf("a membership vector of length k = %d", k)}
		}
	}
	steps := expand(ms)
	zero := make(Vector, k)
	c := newComposer(delta, opts)
	res := MembershipResult{Epsilon: 0, Lower: 0, Delta: delta, Exhaustive: true}
	consider := func(a, b Vector) error {
		d := pick(steps, Differ(a, b))
		v := c.epsilon(d)
		if v.err != nil {
			return v.err
		}
		if v.upper > res.Epsilon || res.Worst == nil {
			res.Epsilon, res.Worst = v.upper, d
		}
		res.Lower = max(res.Lower, v.lower)
		return nil
	}
	maxOnes := 0
	for i, a := range allowed {
		maxOnes = max(maxOnes, a.Ones())
		if rel == Unbounded {
			if err := consider(a, zero); err != nil {
				return MembershipResult{}, err
			}
			continue
		}
		for _, b := range allowed[i+1:] {
			if err := consider(a, b); err != nil {
				return MembershipResult{}, err
			}
		}
	}
	if res.Classic, err = classic(c, ms); err != nil {
		return MembershipResult{}, err
	}
	res.Parallel, res.ParallelApplies = parallel(ms, int64(maxOnes), rel)
	return res, nil
}

func checkRelation(rel Relation) error {
	if rel != Unbounded && rel != Bounded {
		return &dpkit.ParamError{Pkg: "gce", Name: "relation", Value: int(rel), Want: "Unbounded or Bounded"}
	}
	return nil
}

// classic returns the optimal composition of the whole workload, +Inf when delta is
// below its floor.
func classic(c *composer, ms []compose.Mech) (float64, error) {
	v := c.epsilon(canonical(ms))
	if v.err != nil {
		if errors.Is(v.err, dpkit.ErrInfeasible) {
			return math.Inf(1), nil
		}
		return 0, v.err
	}
	return v.upper, nil
}

// parallel returns s · max ε_ℓ (rounded up) with s = m (unbounded) or 2m (bounded), and
// whether parallel composition applies (every δ_ℓ = 0; McSherry's Def. 5 is pure DP).
func parallel(ms []compose.Mech, m int64, rel Relation) (float64, bool) {
	maxEps := 0.0
	for _, x := range ms {
		if x.Delta != 0 {
			return 0, false
		}
		maxEps = max(maxEps, x.Epsilon)
	}
	s := float64(m)
	if rel == Bounded {
		s *= 2
	}
	return mulUp(s, maxEps), true
}
