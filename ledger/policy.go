package ledger

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/pld"
)

// Kind names a budget's accounting policy (docs/design.md, key idea 3).
type Kind string

// The policies.
const (
	// Fixed: every release costs at most the same (ε0, δ0), calibrated at creation from
	// the total and the number of releases k; accounted by the exact optimal
	// composition (KOV Thm 3.3), valid although queries are chosen adaptively, because
	// the parameters are fixed in advance.
	Fixed Kind = "fixed"
	// Plan: a declared list of per-release costs, consumed in order; accounted by the
	// exact heterogeneous composition (docs/errata.md item 2).
	Plan Kind = "plan"
	// Adaptive: each release chooses its own cost; accounted by a privacy filter valid
	// for adaptively chosen parameters (see Filter). Optimal composition is never
	// applied to adaptively chosen parameters.
	Adaptive Kind = "adaptive"
)

// Filter names the privacy filter of an adaptive budget.
type Filter string

// The privacy filters.
const (
	// BasicFilter accepts a release while, summed exactly over all charged releases,
	//
	//	Σ ε_m ≤ ε   and   Σ δ_m ≤ δ
	//
	// Basic composition stays valid when the parameters are chosen adaptively and the
	// rule stops the interaction (Rogers, Roth, Ullman & Vadhan 2016, "Privacy odometers
	// and filters: pay-as-you-go composition", §3, filters): the privacy loss of the
	// pure parts is at most Σ ε_m ≤ ε surely, and the δ_m events add at most Σ δ_m.
	BasicFilter Filter = "basic"
	// AdvancedFilter is the privacy filter of Whitehouse, Ramdas, Rogers & Wu,
	// "Fully-adaptive composition in differential privacy" (ICML 2023,
	// arXiv:2203.05481, §3, the filter matching advanced composition): with the total δ
	// split as δ = δ' + δ'' (δ' = Policy.FilterDelta > 0), a release is accepted while,
	// including it,
	//
	//	sqrt(2 ln(1/δ') Σ ε_m²) + ½ Σ ε_m² ≤ ε   and   Σ δ_m ≤ δ''.
	//
	// The interaction stopped by this rule is (ε, δ)-DP when each release m is
	// (ε_m, δ_m)-DP conditionally on the earlier outputs, with (ε_m, δ_m) chosen from
	// them. Proof idea: the privacy loss is a martingale with increments in
	// [−ε_m, ε_m] and conditional mean ≤ ε_m²/2, so exp(λ(S_n − Σμ_m) − λ²V_n/2),
	// V_n = Σ ε_m², is a supermartingale (Hoeffding's lemma); Ville's inequality with
	// λ = sqrt(2 ln(1/δ')/V_max) bounds the loss at the stopping time by ε except with
	// probability δ'. It beats basic composition when many releases have small ε.
	AdvancedFilter Filter = "advanced"
)

// MaxPlan is the largest number of releases a plan may declare.
const MaxPlan = 100_000

// Policy defines how a budget accounts its releases. Privacy-relevant fields are never
// defaulted, except the documented per-release δ rule of the fixed policy.
type Policy struct {
	Kind Kind `json:"kind"`

	// Releases is the number k of releases of a fixed budget, in [1, compose.MaxCount].
	Releases int64 `json:"releases,omitempty"`
	// ReleaseDelta is the per-release δ0 of a fixed budget. When nil at creation, the
	// rule δ0 = δ/(2k) is used: the per-release δ events take at most half of the total
	// δ (1 − (1 − δ0)^k ≤ kδ0 = δ/2) and the rest pays for the composed ε.
	ReleaseDelta *float64 `json:"release_delta,omitempty"`
	// PerRelease is the calibrated per-release cost (ε0, δ0) of a fixed budget, set at
	// creation: ε0 = compose.MaxEpsilonPerQuery(k, δ0, total). Ignored in a spec.
	PerRelease *dpkit.Budget `json:"per_release,omitempty"`

	// Plan is the declared list of per-release costs of a plan budget, consumed in order.
	Plan []dpkit.Budget `json:"plan,omitempty"`
	// PlanMechanisms optionally names, slot by slot (same length as Plan, the zero
	// Descriptor — JSON null — for none), the mechanism each planned release runs, as a
	// typed descriptor of package mechanism, e.g. {"kind":"gaussian_noise","version":1,
	// "sigma":100,"sensitivity":1}. When any slot names one, the plan is accounted by the
	// mechanisms' privacy loss distributions (package pld: the certified upper curve),
	// which is far tighter than their (ε, δ); a release for such a slot must run a
	// mechanism with the same privacy loss distribution. Plan[i] stays the slot's (ε, δ)
	// cost limit.
	PlanMechanisms []mechanism.Descriptor `json:"plan_mechanisms,omitempty"`

	// Filter is the privacy filter of an adaptive budget.
	Filter Filter `json:"filter,omitempty"`
	// FilterDelta is δ' of the advanced filter, in (0, min(total δ, 1)); the releases'
	// own δ_m may sum to δ'' = δ − δ'.
	FilterDelta float64 `json:"filter_delta,omitempty"`

	// Mechanism "gaussian" makes a fixed budget one of Gaussian releases: the K releases
	// are calibrated by their exact composition, μ-GDP composing to √K·μ0 (Dong, Roth
	// and Su 2022, Cor. 3.3), instead of by KOV's (ε, δ) composition; each release must
	// then run a mechanism whose PLD is a Gaussian with μ ≤ PerReleaseMu. "" (the
	// default) is the (ε, δ) accounting above.
	Mechanism string `json:"mechanism,omitempty"`
	// PerReleaseMu is μ0 of a fixed Gaussian budget and Mu the total μ of a fixed
	// Gaussian budget or of the Gaussian filter, set at creation (GaussianMu). Ignored
	// in a spec.
	PerReleaseMu *float64 `json:"per_release_mu,omitempty"`
	Mu           *float64 `json:"mu,omitempty"`
}

// String names the policy, e.g. "fixed", "fixed/gaussian" or "adaptive/advanced".
func (p Policy) String() string {
	switch {
	case p.Kind == Adaptive:
		return string(p.Kind) + "/" + string(p.Filter)
	case p.Kind == Fixed && p.Mechanism != "":
		return string(p.Kind) + "/" + p.Mechanism
	}
	return string(p.Kind)
}

// resolve validates p against total and returns its stored form (the fixed policy's
// per-release cost calibrated). An unmeetable policy is a *dpkit.InfeasibleError.
func resolve(total dpkit.Budget, p Policy) (Policy, error) {
	if err := dpkit.InPackage("ledger", total.Validate()); err != nil {
		return Policy{}, err
	}
	switch p.Kind {
	case Fixed:
		return resolveFixed(total, p)
	case Plan:
		return resolvePlan(total, p)
	case Adaptive:
		return resolveAdaptive(total, p)
	default:
		return Policy{}, &dpkit.ParamError{Pkg: "ledger", Name: "policy", Value: string(p.Kind), Want: "fixed, plan or adaptive"}
	}
}

// resolveFixed calibrates a fixed policy: (ε0, δ0) per release, δ0 = δ/(2K) unless
// ReleaseDelta is given, ε0 the largest whose K-fold exact composition meets the total
// (or μ0 for Gaussian releases, resolveFixedGaussian).
func resolveFixed(total dpkit.Budget, p Policy) (Policy, error) {
	if err := dpkit.InPackage("ledger", dpkit.CheckCount("releases", p.Releases, compose.MaxCount)); err != nil {
		return Policy{}, err
	}
	if p.Plan != nil || p.Filter != "" || p.FilterDelta != 0 {
		return Policy{}, &dpkit.ParamError{Pkg: "ledger", Name: "policy", Value: "fixed", Want: "no plan, filter or filter delta with the fixed policy"}
	}
	switch p.Mechanism {
	case "":
	case GaussianMechanism:
		return resolveFixedGaussian(total, p)
	default:
		return Policy{}, &dpkit.ParamError{Pkg: "ledger", Name: "mechanism", Value: p.Mechanism, Want: `"" or "gaussian"`}
	}
	d0 := total.Delta / (2 * float64(p.Releases))
	if p.ReleaseDelta != nil {
		d0 = *p.ReleaseDelta
		if err := dpkit.InPackage("ledger", dpkit.CheckDelta("release_delta", d0)); err != nil {
			return Policy{}, err
		}
	}
	e0, err := compose.MaxEpsilonPerQuery(p.Releases, d0, total)
	if err != nil {
		return Policy{}, err
	}
	// Independent check: k releases of (ε0, δ0) meet the total by the exact
	// composition's upper (never below the truth) δ.
	r, err := compose.Delta([]compose.Mech{{Epsilon: e0, Delta: d0, Count: p.Releases}}, total.Epsilon, nil)
	if err != nil {
		return Policy{}, err
	}
	if r.Delta > total.Delta {
		return Policy{}, &dpkit.InfeasibleError{Msg: fmt.Sprintf("%d releases of (ε=%g, δ=%g) compose to δ=%g above the total %v", p.Releases, e0, d0, r.Delta, total)}
	}
	return Policy{Kind: Fixed, Releases: p.Releases, ReleaseDelta: &d0, PerRelease: &dpkit.Budget{Epsilon: e0, Delta: d0}}, nil
}

// resolvePlan checks a plan: its slots' exact composition (or, with PlanMechanisms, their
// privacy loss distributions' composition) must meet the total.
func resolvePlan(total dpkit.Budget, p Policy) (Policy, error) {
	if len(p.Plan) < 1 || len(p.Plan) > MaxPlan {
		return Policy{}, &dpkit.ParamError{Pkg: "ledger", Name: "plan", Value: len(p.Plan), Want: fmt.Sprintf("between 1 and %d releases", MaxPlan)}
	}
	if p.Releases != 0 || p.ReleaseDelta != nil || p.Filter != "" || p.FilterDelta != 0 || p.Mechanism != "" {
		return Policy{}, &dpkit.ParamError{Pkg: "ledger", Name: "policy", Value: "plan", Want: "no releases, release delta, filter, filter delta or mechanism with the plan policy"}
	}
	for i, c := range p.Plan {
		if err := checkCost(fmt.Sprintf("plan[%d]", i), c); err != nil {
			return Policy{}, err
		}
	}
	if p.PlanMechanisms != nil {
		if len(p.PlanMechanisms) != len(p.Plan) {
			return Policy{}, &dpkit.ParamError{Pkg: "ledger", Name: "plan_mechanisms", Value: len(p.PlanMechanisms), Want: fmt.Sprintf("one entry per plan slot (%d)", len(p.Plan))}
		}
		if _, err := planMechanisms(p.PlanMechanisms); err != nil {
			return Policy{}, err
		}
		e, err := pldPlanEpsilon(p.Plan, p.PlanMechanisms, total.Delta)
		if err != nil {
			return Policy{}, err
		}
		if e > total.Epsilon {
			return Policy{}, &dpkit.InfeasibleError{Msg: fmt.Sprintf("the plan's %d releases compose (by their privacy loss distributions) to ε ≤ %g at δ=%g, above the total ε=%g", len(p.Plan), e, total.Delta, total.Epsilon)}
		}
		return Policy{Kind: Plan, Plan: append([]dpkit.Budget(nil), p.Plan...), PlanMechanisms: append([]mechanism.Descriptor(nil), p.PlanMechanisms...)}, nil
	}
	ms := slotMechs(p.Plan)
	r, err := compose.Delta(ms, total.Epsilon, nil)
	if err != nil {
		return Policy{}, err
	}
	if r.Delta > total.Delta {
		return Policy{}, &dpkit.InfeasibleError{Msg: fmt.Sprintf("the plan's %d releases compose (exactly) to δ=%g at ε=%g, above the total δ=%g", len(p.Plan), r.Delta, total.Epsilon, total.Delta)}
	}
	return Policy{Kind: Plan, Plan: append([]dpkit.Budget(nil), p.Plan...)}, nil
}

// resolveAdaptive checks an adaptive policy's filter.
func resolveAdaptive(total dpkit.Budget, p Policy) (Policy, error) {
	if p.Releases != 0 || p.ReleaseDelta != nil || p.Plan != nil {
		return Policy{}, &dpkit.ParamError{Pkg: "ledger", Name: "policy", Value: "adaptive", Want: "no releases, release delta or plan with the adaptive policy"}
	}
	if p.Mechanism != "" {
		return Policy{}, &dpkit.ParamError{Pkg: "ledger", Name: "mechanism", Value: p.Mechanism, Want: `"" with the adaptive policy (choose filter "gaussian" for Gaussian releases)`}
	}
	switch p.Filter {
	case GaussianFilter:
		return resolveGaussianFilter(total, p)
	case BasicFilter:
		if p.FilterDelta != 0 {
			return Policy{}, &dpkit.ParamError{Pkg: "ledger", Name: "filter_delta", Value: p.FilterDelta, Want: "0 (unused) with the basic filter"}
		}
	case AdvancedFilter:
		fd := p.FilterDelta
		if math.IsNaN(fd) || fd <= 0 || fd > total.Delta || fd >= 1 {
			return Policy{}, &dpkit.ParamError{Pkg: "ledger", Name: "filter_delta", Value: fd, Want: fmt.Sprintf("in (0, %g] and < 1 (the share δ' of the total δ spent by the advanced filter)", total.Delta)}
		}
	default:
		return Policy{}, &dpkit.ParamError{Pkg: "ledger", Name: "filter", Value: string(p.Filter), Want: "basic, advanced or gaussian"}
	}
	return Policy{Kind: Adaptive, Filter: p.Filter, FilterDelta: p.FilterDelta}, nil
}

// checkCost validates a release cost: ε finite ≥ 0, δ in [0, 1].
func checkCost(name string, c dpkit.Budget) error {
	if err := dpkit.InPackage("ledger", dpkit.CheckEpsilon(name+".epsilon", c.Epsilon)); err != nil {
		return err
	}
	return dpkit.InPackage("ledger", dpkit.CheckDelta(name+".delta", c.Delta))
}

// slotMechs groups a list of costs into a compose workload.
func slotMechs(costs []dpkit.Budget) []compose.Mech {
	ms := make([]compose.Mech, len(costs))
	for i, c := range costs {
		ms[i] = compose.Mech{Epsilon: c.Epsilon, Delta: c.Delta, Count: 1}
	}
	return compose.Group(ms)
}

// planMechanisms builds the privacy loss distributions of a plan's named mechanisms
// (nil for a slot that names none).
func planMechanisms(ds []mechanism.Descriptor) ([]pld.Mechanism, error) {
	out := make([]pld.Mechanism, len(ds))
	for i, d := range ds {
		if d.IsZero() {
			continue
		}
		pm, err := mechanismPLD(d)
		if err != nil {
			return nil, fmt.Errorf("ledger: plan_mechanisms[%d]: %w", i, err)
		}
		out[i] = pm
	}
	return out, nil
}

// mechanismPLD returns the privacy loss distribution of the mechanism d describes.
func mechanismPLD(d mechanism.Descriptor) (pld.Mechanism, error) {
	m, err := mechanism.FromDescriptor(d)
	if err != nil {
		return nil, err
	}
	return m.PLD()
}

// pldItems is the workload of the first slots of a plan with named mechanisms: each
// slot's mechanism, or its (ε, δ) pair when it names none.
func pldItems(plan []dpkit.Budget, names []mechanism.Descriptor) ([]pld.Item, error) {
	ms, err := planMechanisms(names)
	if err != nil {
		return nil, err
	}
	items := make([]pld.Item, 0, len(plan))
	for i, c := range plan {
		m := ms[i]
		if m == nil {
			m = pld.EpsilonDelta{Epsilon: c.Epsilon, Delta: c.Delta}
		}
		items = append(items, pld.Item{Mechanism: m, Count: 1})
	}
	return items, nil
}

// pldPlan composes the plan's slots by their privacy loss distributions, with the
// bracket measured at the total δ.
func pldPlan(plan []dpkit.Budget, names []mechanism.Descriptor, delta float64) (*pld.Composition, error) {
	items, err := pldItems(plan, names)
	if err != nil {
		return nil, err
	}
	// Tolerance 1e-3: one lattice, as pld's default was when this was written (its
	// default is now adaptive, refining for up to about a second: too slow for a check).
	opts := &pld.Options{Tolerance: 1e-3}
	if delta > 0 && delta < 1 {
		opts.Delta = delta
	}
	return pld.Compose(items, opts)
}

// pldPlanEpsilon returns the certified upper ε at total δ of the plan's slots.
func pldPlanEpsilon(plan []dpkit.Budget, names []mechanism.Descriptor, delta float64) (float64, error) {
	c, err := pldPlan(plan, names, delta)
	if err != nil {
		return 0, err
	}
	e, _, err := c.Epsilon(delta)
	return e, err
}

// fits reports c ≤ slot in both ε and δ.
func fits(c, slot dpkit.Budget) bool { return c.Epsilon <= slot.Epsilon && c.Delta <= slot.Delta }
