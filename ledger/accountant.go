package ledger

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/internal/numeric"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/pld"
)

// Accountant decides spends for one budget from its sufficient statistics: the
// pluggable accounting piece of the ledger. Each policy has one (NewAccountant); a
// PLD-based accountant for mechanism descriptions can be added as another policy.
// Accountants are immutable and safe for concurrent use.
type Accountant interface {
	// Charge decides whether one more release of cost c fits after the releases
	// summarised by st. It returns the cost the release is charged at (the slot it
	// takes: c itself for adaptive budgets, the calibrated or planned cost otherwise),
	// or a *BudgetExceededError. c must be valid (checked by the caller).
	Charge(st Stats, c dpkit.Budget) (dpkit.Budget, error)
	// Spent returns what the releases in st have used: a valid total ε at the budget's
	// δ and a valid total δ at the budget's ε (see Status for the adaptive filters).
	Spent(st Stats) (epsilon, delta float64, err error)
	// Remaining says what still fits after st, for releases of cost c.
	Remaining(st Stats, c dpkit.Budget) Remaining
}

// Remaining is what a budget still allows, for releases of one cost.
type Remaining struct {
	// Cost is the cost asked about.
	Cost dpkit.Budget `json:"cost"`
	// Releases is how many more releases of Cost fit, one after another. It is capped
	// at compose.MaxCount (10^12), which then means "at least that many".
	Releases int64 `json:"releases"`
	// NextAllowed reports whether one more release with δ = Cost.Delta fits at all
	// (with ε = 0); NextEpsilon is then the largest ε it may have: a spend of
	// (NextEpsilon, Cost.Delta) is accepted, and none with a larger ε.
	NextAllowed bool    `json:"next_allowed"`
	NextEpsilon float64 `json:"next_epsilon"`
}

// NewAccountant returns the accountant of a budget with the given total and resolved
// policy (as stored by Ledger.Create).
func NewAccountant(total dpkit.Budget, p Policy) (Accountant, error) {
	switch p.Kind {
	case Fixed:
		if p.Mechanism == GaussianMechanism {
			if p.PerReleaseMu == nil {
				return nil, &dpkit.ParamError{Pkg: "ledger", Name: "policy.per_release_mu", Value: nil, Want: "the calibrated μ0 of a fixed Gaussian budget"}
			}
			return &fixedGaussianAccountant{total: total, k: p.Releases, mu0: *p.PerReleaseMu}, nil
		}
		if p.PerRelease == nil {
			return nil, &dpkit.ParamError{Pkg: "ledger", Name: "policy.per_release", Value: nil, Want: "the calibrated per-release cost of a fixed budget"}
		}
		return &fixedAccountant{total: total, k: p.Releases, slot: *p.PerRelease}, nil
	case Plan:
		a := &planAccountant{total: total, plan: p.Plan}
		if p.PlanMechanisms != nil {
			ms, err := planMechanisms(p.PlanMechanisms)
			if err != nil {
				return nil, err
			}
			a.mechs, a.names = ms, p.PlanMechanisms
		}
		return a, nil
	case Adaptive:
		switch p.Filter {
		case BasicFilter:
			return &basicAccountant{total: total, eps: ratOf(total.Epsilon), delta: ratOf(total.Delta)}, nil
		case AdvancedFilter:
			return newAdvanced(total, p.FilterDelta), nil
		case GaussianFilter:
			if p.Mu == nil {
				return nil, &dpkit.ParamError{Pkg: "ledger", Name: "policy.mu", Value: nil, Want: "the μ of a Gaussian filter"}
			}
			return newGaussianAccountant(total, *p.Mu), nil
		}
	}
	return nil, &dpkit.ParamError{Pkg: "ledger", Name: "policy", Value: p.String(), Want: "fixed, plan, adaptive/basic or adaptive/advanced"}
}

func exceeded(policy string, c dpkit.Budget, reason string, left Remaining) error {
	return &BudgetExceededError{Policy: policy, Requested: c, Reason: reason, Left: left}
}

// ---- fixed ----

// fixedAccountant: k releases, each charged at the calibrated (ε0, δ0). A release of
// cost c ≤ (ε0, δ0) is (ε0, δ0)-DP, so the exact composition of k such slots (KOV
// Thm 3.3, checked at creation) bounds any k releases: the decision is count < k.
type fixedAccountant struct {
	total dpkit.Budget
	k     int64
	slot  dpkit.Budget
}

func (a *fixedAccountant) Charge(st Stats, c dpkit.Budget) (dpkit.Budget, error) {
	switch {
	case st.Count >= a.k:
		return dpkit.Budget{}, exceeded("fixed", c, fmt.Sprintf("all %d planned releases are spent", a.k), a.Remaining(st, c))
	case !fits(c, a.slot):
		return dpkit.Budget{}, exceeded("fixed", c, fmt.Sprintf("each release of this budget costs at most %v", a.slot), a.Remaining(st, c))
	}
	return a.slot, nil
}

func (a *fixedAccountant) Spent(st Stats) (float64, float64, error) {
	if st.Count == 0 {
		return 0, 0, nil
	}
	return spentOf([]compose.Mech{{Epsilon: a.slot.Epsilon, Delta: a.slot.Delta, Count: st.Count}}, a.total)
}

func (a *fixedAccountant) Remaining(st Stats, c dpkit.Budget) Remaining {
	r := Remaining{Cost: c}
	if st.Count < a.k {
		if fits(c, a.slot) {
			r.Releases = a.k - st.Count
		}
		if c.Delta <= a.slot.Delta {
			r.NextAllowed, r.NextEpsilon = true, a.slot.Epsilon
		}
	}
	return r
}

// spentOf returns the exact composition of ms: ε at total δ and δ at total ε, both
// never below the optimum (package compose).
func spentOf(ms []compose.Mech, total dpkit.Budget) (float64, float64, error) {
	re, err := compose.Epsilon(ms, total.Delta, nil)
	if err != nil {
		return 0, 0, err
	}
	rd, err := compose.Delta(ms, total.Epsilon, nil)
	if err != nil {
		return 0, 0, err
	}
	return re.Epsilon, rd.Delta, nil
}

// ---- plan ----

// planAccountant: release n (0-based) takes plan[n] and must cost at most plan[n]. The
// plan's exact heterogeneous composition was checked at creation. Consuming the slots
// in their declared order keeps the parameters fixed in advance: letting the analyst
// pick which slot to use next would choose parameters adaptively.
type planAccountant struct {
	total dpkit.Budget
	plan  []dpkit.Budget
	mechs []pld.Mechanism // per slot, nil when the slot names none; nil when none do
	names []mechanism.Descriptor
}

// releaseCharger is an Accountant that also checks the release's description (the
// mechanism a planned slot must run).
type releaseCharger interface {
	ChargeRelease(st Stats, r Release) (dpkit.Budget, error)
}

// ChargeRelease is Charge, and for a slot that names a mechanism, a check that the
// release's descriptor names a mechanism with exactly that privacy loss distribution:
// the plan was accounted by it, which says nothing of another mechanism with the same
// (ε, δ).
func (a *planAccountant) ChargeRelease(st Stats, r Release) (dpkit.Budget, error) {
	if n := st.Count; a.mechs != nil && n < int64(len(a.plan)) && a.mechs[n] != nil {
		if pm, err := mechanismPLD(r.Mechanism); err != nil || pm != a.mechs[n] {
			return dpkit.Budget{}, exceeded("plan", r.Cost, fmt.Sprintf("the next planned release (#%d) must run %s (got %s)", n+1, a.names[n], orNone(r.Mechanism)), a.Remaining(st, r.Cost))
		}
	}
	return a.Charge(st, r.Cost)
}

func orNone(d mechanism.Descriptor) string {
	if d.IsZero() {
		return "no mechanism"
	}
	return d.String()
}

func (a *planAccountant) Charge(st Stats, c dpkit.Budget) (dpkit.Budget, error) {
	n := st.Count
	switch {
	case n >= int64(len(a.plan)):
		return dpkit.Budget{}, exceeded("plan", c, fmt.Sprintf("all %d planned releases are spent", len(a.plan)), a.Remaining(st, c))
	case !fits(c, a.plan[n]):
		return dpkit.Budget{}, exceeded("plan", c, fmt.Sprintf("the next planned release (#%d) costs at most %v", n+1, a.plan[n]), a.Remaining(st, c))
	}
	return a.plan[n], nil
}

func (a *planAccountant) Spent(st Stats) (float64, float64, error) {
	if st.Count == 0 {
		return 0, 0, nil
	}
	n := min(st.Count, int64(len(a.plan)))
	if a.mechs != nil {
		return pldSpent(a.plan[:n], a.names[:n], a.total)
	}
	return spentOf(slotMechs(a.plan[:n]), a.total)
}

// pldSpent is spentOf for a plan with named mechanisms: the certified upper ε at the
// total δ and δ at the total ε of the slots used, by their privacy loss distributions.
func pldSpent(plan []dpkit.Budget, names []mechanism.Descriptor, total dpkit.Budget) (float64, float64, error) {
	c, err := pldPlan(plan, names, total.Delta)
	if err != nil {
		return 0, 0, err
	}
	e, _, err := c.Epsilon(total.Delta)
	if err != nil {
		return 0, 0, err
	}
	d, _, err := c.Delta(total.Epsilon)
	return e, d, err
}

func (a *planAccountant) Remaining(st Stats, c dpkit.Budget) Remaining {
	r := Remaining{Cost: c}
	n := st.Count
	if n < int64(len(a.plan)) && c.Delta <= a.plan[n].Delta {
		r.NextAllowed, r.NextEpsilon = true, a.plan[n].Epsilon
	}
	for i := n; i < int64(len(a.plan)) && fits(c, a.plan[i]); i++ {
		r.Releases++
	}
	return r
}

// ---- adaptive, basic filter ----

type basicAccountant struct {
	total      dpkit.Budget
	eps, delta *big.Rat
}

func (a *basicAccountant) ok(sumEps, sumDelta *big.Rat) bool {
	return sumEps.Cmp(a.eps) <= 0 && sumDelta.Cmp(a.delta) <= 0
}

func (a *basicAccountant) Charge(st Stats, c dpkit.Budget) (dpkit.Budget, error) {
	e := new(big.Rat).Add(st.SumEpsilon, ratOf(c.Epsilon))
	d := new(big.Rat).Add(st.SumDelta, ratOf(c.Delta))
	if !a.ok(e, d) {
		return dpkit.Budget{}, exceeded("adaptive/basic", c, fmt.Sprintf("the exact sums would be Σε=%s, Σδ=%s, above the total %v",
			e.FloatString(20), d.FloatString(20), a.total), a.Remaining(st, c))
	}
	return c, nil
}

func (a *basicAccountant) Spent(st Stats) (float64, float64, error) {
	return ratUp(st.SumEpsilon), ratUp(st.SumDelta), nil
}

func (a *basicAccountant) Remaining(st Stats, c dpkit.Budget) Remaining {
	r := Remaining{Cost: c}
	leftEps := new(big.Rat).Sub(a.eps, st.SumEpsilon)
	leftDelta := new(big.Rat).Sub(a.delta, st.SumDelta)
	if leftEps.Sign() < 0 || leftDelta.Sign() < 0 {
		return r
	}
	r.Releases = compose.MaxCount
	for _, p := range []struct {
		left *big.Rat
		cost float64
	}{{leftEps, c.Epsilon}, {leftDelta, c.Delta}} {
		if p.cost > 0 {
			r.Releases = min(r.Releases, floorQuo(p.left, ratOf(p.cost)))
		}
	}
	if leftDelta.Cmp(ratOf(c.Delta)) >= 0 {
		r.NextAllowed, r.NextEpsilon = true, ratDown(leftEps)
	}
	return r
}

// floorQuo returns ⌊x/y⌋ for x ≥ 0, y > 0, capped at compose.MaxCount.
func floorQuo(x, y *big.Rat) int64 {
	q := new(big.Rat).Quo(x, y)
	n := new(big.Int).Quo(q.Num(), q.Denom())
	if !n.IsInt64() || n.Int64() > compose.MaxCount {
		return compose.MaxCount
	}
	return n.Int64()
}

// ---- adaptive, advanced filter ----

// advancedAccountant implements the filter of AdvancedFilter with exact arithmetic:
// with V = Σ ε_m² and D = Σ δ_m (exact rationals) it accepts iff
//
//	D ≤ δ'',   R = ε − V/2 ≥ 0,   2·a·V ≤ R²,
//
// which is sqrt(2 a V) + V/2 ≤ ε squared without rounding. a is ln(1/δ') rounded up by
// three ulps (math.Log is accurate to < 1 ulp), so the rule can only be stricter than
// the theorem's, by a relative 4·2^-52 in ln(1/δ').
type advancedAccountant struct {
	total     dpkit.Budget
	eps       *big.Rat // ε
	delta2    *big.Rat // δ'' = δ − δ'
	twoA      *big.Rat // 2·a, a ≥ ln(1/δ')
	aUp       float64
	filterDel float64
}

func newAdvanced(total dpkit.Budget, filterDelta float64) *advancedAccountant {
	a := -math.Log(filterDelta)
	for range 3 {
		a = math.Nextafter(a, math.Inf(1))
	}
	return &advancedAccountant{
		total:     total,
		eps:       ratOf(total.Epsilon),
		delta2:    new(big.Rat).Sub(ratOf(total.Delta), ratOf(filterDelta)),
		twoA:      new(big.Rat).Mul(big.NewRat(2, 1), ratOf(a)),
		aUp:       a,
		filterDel: filterDelta,
	}
}

// ok is the exact acceptance rule for totals v = Σ ε_m², d = Σ δ_m.
func (a *advancedAccountant) ok(v, d *big.Rat) bool {
	if d.Cmp(a.delta2) > 0 {
		return false
	}
	r := new(big.Rat).Sub(a.eps, new(big.Rat).Quo(v, big.NewRat(2, 1)))
	if r.Sign() < 0 {
		return false
	}
	lhs := new(big.Rat).Mul(a.twoA, v)
	return lhs.Cmp(r.Mul(r, r)) <= 0
}

// after returns V and D after m more releases of cost c.
func after(st Stats, c dpkit.Budget, m int64) (v, d *big.Rat) {
	e := ratOf(c.Epsilon)
	mm := new(big.Rat).SetInt64(m)
	v = new(big.Rat).Mul(e, e)
	v.Mul(v, mm).Add(v, st.SumEpsilonSq)
	d = new(big.Rat).Mul(ratOf(c.Delta), mm)
	d.Add(d, st.SumDelta)
	return v, d
}

func (a *advancedAccountant) Charge(st Stats, c dpkit.Budget) (dpkit.Budget, error) {
	v, d := after(st, c, 1)
	if !a.ok(v, d) {
		return dpkit.Budget{}, exceeded("adaptive/advanced", c, fmt.Sprintf(
			"the filter would need sqrt(2 ln(1/%g) Σε²) + Σε²/2 ≤ %g with Σε² = %s and Σδ = %s ≤ %s",
			a.filterDel, a.total.Epsilon, v.FloatString(20), d.FloatString(20), a.delta2.FloatString(20)), a.Remaining(st, c))
	}
	return c, nil
}

// Spent returns the filter's level: f(V) = sqrt(2 ln(1/δ') V) + V/2 (rounded up by a
// relative 2^-48) and δ' + Σ δ_m (rounded up). A filter guarantees its total (ε, δ)
// whenever it stops; these are how much of it the releases so far have used, not an
// (ε, δ) guarantee of those releases on their own. Before any release that costs
// something (V = 0 and Σ δ_m = 0) nothing has been revealed: (0, 0), not δ'.
func (a *advancedAccountant) Spent(st Stats) (float64, float64, error) {
	if st.SumEpsilonSq.Sign() == 0 && st.SumDelta.Sign() == 0 {
		return 0, 0, nil
	}
	v := ratUp(st.SumEpsilonSq)
	f := (math.Sqrt(2*a.aUp*v) + v/2) * (1 + 0x1p-48)
	d := ratUp(new(big.Rat).Add(st.SumDelta, ratOf(a.filterDel)))
	return f, d, nil
}

func (a *advancedAccountant) Remaining(st Stats, c dpkit.Budget) Remaining {
	r := Remaining{Cost: c}
	// Releases: the largest m ≤ MaxCount with ok(after m); ok is monotone in m, and
	// ok(after 0) holds (the recorded state was accepted).
	fits := func(m int64) (bool, error) { v, d := after(st, c, m); return a.ok(v, d), nil }
	if ok, _ := fits(compose.MaxCount); ok {
		r.Releases = compose.MaxCount
	} else {
		r.Releases, _ = numeric.BisectInt(0, compose.MaxCount, fits)
	}
	// NextEpsilon: the largest float64 x with ok(V + x², D + δ); ok is monotone in x ≥ 0
	// and positive float64s are ordered as their bit patterns.
	next := func(x float64) bool {
		v, d := after(st, dpkit.Budget{Epsilon: x, Delta: c.Delta}, 1)
		return a.ok(v, d)
	}
	if !next(0) {
		return r
	}
	r.NextAllowed = true
	if next(a.total.Epsilon) {
		r.NextEpsilon = a.total.Epsilon // only when V = 0 and ln(1/δ') ≈ 0
		return r
	}
	// Bisection on the bit patterns: next(0) holds, next fails at the total and above.
	b, _ := numeric.BisectInt(0, int64(math.Float64bits(a.total.Epsilon))+1, func(k int64) (bool, error) {
		return next(math.Float64frombits(uint64(k))), nil
	})
	r.NextEpsilon = math.Float64frombits(uint64(b))
	return r
}
