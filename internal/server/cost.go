package server

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/pld"
	"github.com/dpkit/dpkit/query"
)

// What a query costs and how it is released, by the dataset's policy (docs/service.md):
//
//	fixed          the calibrated per-query (ε0, δ0), pure-ε noise; fixed Gaussian: μ0
//	plan           the next slot's (ε, δ), pure-ε noise
//	adaptive basic/advanced   the query's "epsilon" (and "delta"); "mechanism": "gaussian"
//	               releases Gaussian noise of the μ whose curve meets that (ε, δ)
//	adaptive gaussian         the query's "mu": Gaussian noise, μ charged
//
// or, instead of a cost, an "accuracy" (the half-width of the 95% intervals): under the
// adaptive policies the cheapest cost meeting it, under fixed and plan the set cost if it
// meets it (else 400). Every check here reads the request and the policy only.

func paramErr(name string, v any, want string) error {
	return &dpkit.ParamError{Pkg: "server", Name: name, Value: v, Want: want}
}

// chooseCost checks the request's cost fields against the policy and sets q's cost and
// release options (an accuracy under an adaptive policy is resolved after planning, by
// accuracyCost).
func (q *pendingQuery) chooseCost() error {
	req, pol := q.req, q.policy
	if req.Accuracy != nil {
		if h := req.Accuracy.CI95HalfWidth; math.IsNaN(h) || math.IsInf(h, 0) || h <= 0 {
			return paramErr("accuracy.ci95_halfwidth", h, "a finite number > 0")
		}
	}
	switch req.Mechanism {
	case "", "laplace", "gaussian":
	default:
		return paramErr("mechanism", req.Mechanism, `"laplace" or "gaussian"`)
	}
	if !q.chosen {
		if name, v := req.costField(); name != "" {
			return paramErr(name, v, fmt.Sprintf("no %s: the dataset's %s policy sets the cost and the noise of every query", name, pol.Mode))
		}
		q.cost = *q.costs.PerQuery
		q.opts = query.ReleaseOptions{Budget: q.cost}
		if q.costs.PerQueryMu != nil {
			q.opts = query.ReleaseOptions{Gaussian: true, Mu: *q.costs.PerQueryMu}
		}
		return nil
	}
	if pol.Filter == "gaussian" {
		return q.chooseGaussianFilter()
	}
	if req.Mu != nil {
		return paramErr("mu", *req.Mu, `absent under the basic and advanced filters (give "epsilon", or use a dataset with the gaussian filter)`)
	}
	if req.Epsilon == nil {
		if req.Accuracy != nil {
			return nil // resolved after planning
		}
		return paramErr("epsilon", nil, "the ε of this query, or an accuracy (the dataset's policy is adaptive)")
	}
	if req.Accuracy != nil {
		return paramErr("accuracy", req.Accuracy.CI95HalfWidth, `no accuracy when "epsilon" is given (give one of them)`)
	}
	q.cost = dpkit.Budget{Epsilon: *req.Epsilon}
	if req.Delta != nil {
		q.cost.Delta = *req.Delta
	}
	if err := dpkit.CheckPositive("epsilon", q.cost.Epsilon); err != nil {
		return dpkit.InPackage("server", err)
	}
	if err := dpkit.InPackage("server", dpkit.CheckDelta("delta", q.cost.Delta)); err != nil {
		return err
	}
	q.opts = query.ReleaseOptions{Budget: q.cost}
	if req.Mechanism == "gaussian" {
		mu, err := gaussianMuOf(q.cost)
		if err != nil {
			return err
		}
		q.opts = query.ReleaseOptions{Gaussian: true, Mu: mu}
	}
	return nil
}

// chooseGaussianFilter sets the cost of a query under the Gaussian filter: its μ.
func (q *pendingQuery) chooseGaussianFilter() error {
	req := q.req
	if req.Epsilon != nil || req.Delta != nil {
		name, v := req.costField()
		return paramErr(name, v, fmt.Sprintf(`no %s under the gaussian filter: give "mu" (the query's Gaussian DP) or an accuracy`, name))
	}
	if req.Mechanism == "laplace" {
		return paramErr("mechanism", req.Mechanism, `"gaussian" (or absent) under the gaussian filter`)
	}
	switch {
	case req.Mu == nil && req.Accuracy == nil:
		return paramErr("mu", nil, "the μ of this query (Gaussian DP), or an accuracy (the dataset's gaussian filter)")
	case req.Mu != nil && req.Accuracy != nil:
		return paramErr("accuracy", req.Accuracy.CI95HalfWidth, `no accuracy when "mu" is given (give one of them)`)
	case req.Mu == nil:
		return nil // resolved after planning
	}
	mu := *req.Mu
	if math.IsNaN(mu) || math.IsInf(mu, 0) || mu <= 0 {
		return paramErr("mu", mu, "a finite number > 0")
	}
	if mu < 2*mechanism.MinGaussianMu {
		return paramErr("mu", mu, fmt.Sprintf("≥ %g (the noise's grid resolution)", 2*mechanism.MinGaussianMu))
	}
	return q.setGaussianFilterCost(mu)
}

// setGaussianFilterCost sets a Gaussian-filter release of μ: charged μ (from its
// mechanism), shown as its (ε, δ) at the total δ.
func (q *pendingQuery) setGaussianFilterCost(mu float64) error {
	d := q.costs.Total.Delta
	e, err := pld.GaussianEpsilon(mu, d)
	if err != nil {
		return dpkit.InPackage("server", err)
	}
	q.cost = dpkit.Budget{Epsilon: e, Delta: d}
	q.opts = query.ReleaseOptions{Gaussian: true, Mu: mu}
	return nil
}

// accuracyCost resolves an accuracy: under an adaptive policy the cheapest cost meeting
// it; under fixed and plan a check that the set cost meets it.
func (q *pendingQuery) accuracyCost() error {
	h := q.req.Accuracy.CI95HalfWidth
	if !q.chosen {
		w, err := q.prepared.HalfWidth(q.opts)
		if err != nil {
			return q.explain(err)
		}
		if w > h {
			return paramErr("accuracy.ci95_halfwidth", h, fmt.Sprintf("≥ %g: the dataset's %s policy sets the cost of every query, and its 95%% intervals are ±%g", w, q.policy.Mode, w))
		}
		return nil
	}
	if q.policy.Filter == "gaussian" {
		o, err := q.prepared.CostForAccuracy(h, true, 0)
		if err != nil {
			return err
		}
		return q.setGaussianFilterCost(o.Mu)
	}
	delta := 0.0
	if q.req.Delta != nil {
		delta = *q.req.Delta
		if err := dpkit.InPackage("server", dpkit.CheckDelta("delta", delta)); err != nil {
			return err
		}
	}
	if q.req.Mechanism == "gaussian" {
		if delta == 0 {
			return paramErr("delta", 0.0, `> 0 for a Gaussian query under the basic or advanced filter (its cost is (ε, δ))`)
		}
		o, err := q.prepared.CostForAccuracy(h, true, 0)
		if err != nil {
			return err
		}
		e, err := pld.GaussianEpsilon(o.Mu, delta)
		if err != nil {
			return dpkit.InPackage("server", err)
		}
		q.cost, q.opts = dpkit.Budget{Epsilon: e, Delta: delta}, o
		return nil
	}
	o, err := q.prepared.CostForAccuracy(h, false, delta)
	if err != nil {
		return err
	}
	q.cost, q.opts = o.Budget, o
	return nil
}

// gaussianMuOf returns the μ of Gaussian noise for a query of cost (ε, δ): the largest μ
// whose curve meets it (ledger.GaussianMu), so the release is (ε, δ)-DP.
func gaussianMuOf(c dpkit.Budget) (float64, error) {
	if c.Delta == 0 {
		return 0, paramErr("delta", 0.0, `> 0 for a Gaussian query (its cost is (ε, δ))`)
	}
	mu, err := ledger.GaussianMu(c)
	if err != nil {
		return 0, dpkit.InPackage("server", err)
	}
	return mu, nil
}

// gaussianCheck is the mechanism the budget is checked with before a Gaussian release is
// computed: Gaussian noise of μ (the release's own μ is at most that). σ = 1/μ is
// rounded up, so that the ledger's μ = 1/σ (which it rounds up) is at most μ.
func gaussianCheck(mu float64) mechanism.Descriptor {
	sigma := 1 / mu
	if math.FMA(sigma, mu, -1) < 0 {
		sigma = math.Nextafter(sigma, math.Inf(1))
	}
	return mechanism.Describe(mechanism.GaussianNoise{Sigma: sigma, Sensitivity: 1})
}

// explain names, in a refusal of query's for a release that needs δ > 0 (GROUP BY by
// partition selection) under a fixed policy whose releases are pure ε-DP (δ0 = 0), the
// dataset's field that set δ = 0 — "policy.pure", or "budget.delta" when the total δ is
// 0 — instead of the query's "delta", which the caller did not give. Other errors are
// returned as they are.
func (q *pendingQuery) explain(err error) error {
	var pe *dpkit.ParamError
	if q.chosen || !q.policy.Pure || !errors.As(err, &pe) || pe.Pkg != "query" || pe.Name != "delta" {
		return err
	}
	why := strings.TrimPrefix(pe.Want, "> 0: ")
	if q.costs.Total.Delta == 0 {
		return paramErr("budget.delta", 0.0, "> 0 for this query: "+why)
	}
	return paramErr("policy.pure", true, "false for this query: the dataset's fixed policy releases every query pure ε-DP (δ0 = 0), and "+why)
}

// costField returns the name and value of the first cost field the request sets
// ("epsilon", "delta", "mu", "mechanism"), or "" if it sets none.
func (r *QueryRequest) costField() (string, any) {
	switch {
	case r.Epsilon != nil:
		return "epsilon", *r.Epsilon
	case r.Delta != nil:
		return "delta", *r.Delta
	case r.Mu != nil:
		return "mu", *r.Mu
	case r.Mechanism != "":
		return "mechanism", r.Mechanism
	}
	return "", nil
}
