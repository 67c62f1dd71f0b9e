package query

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
)

// Accuracy-first releases: instead of a cost, the analyst gives the half-width H of the
// 95% interval wanted, and the smallest cost whose noise meets it is found — for queries
// of one COUNT, SUM or HISTOGRAM aggregate, grouped or not, whose interval does not
// depend on the data. AVG (its interval depends on the noisy count) and quantiles (their
// error depends on the data) are refused.

// HalfWidth returns the half-width h of the 95% interval of the plan's single count or
// sum aggregate for a release with options o: P(|noise| > h) ≤ 5% for each value (the
// interval Release reports, value ± h).
func (p *Plan) HalfWidth(o ReleaseOptions) (float64, error) {
	if err := p.accuracyAggregate(); err != nil {
		return 0, err
	}
	ms, _, err := p.Mechanisms(o)
	if err != nil {
		return 0, err
	}
	n := p.noisy(ms)
	if a := n.aggs[0]; a.ap.Func == Count {
		return a.hc, nil
	}
	return n.aggs[0].hs, nil
}

// accuracyAggregate checks that the plan has one aggregate whose interval is
// data-independent.
func (p *Plan) accuracyAggregate() error {
	if len(p.Aggregates) != 1 {
		return &dpkit.ParamError{Pkg: "query", Name: "accuracy", Value: fmt.Sprintf("%d aggregates", len(p.Aggregates)),
			Want: "a query of one aggregate (COUNT, SUM or HISTOGRAM): give a cost for several"}
	}
	switch ap := p.Aggregates[0]; ap.Func {
	case Count, Sum:
		return nil
	case Avg:
		return &dpkit.ParamError{Pkg: "query", Name: "accuracy", Value: ap.Text,
			Want: "COUNT, SUM or HISTOGRAM: AVG's interval depends on the noisy count, so no cost guarantees its width; give a cost"}
	default:
		return &dpkit.ParamError{Pkg: "query", Name: "accuracy", Value: ap.Text,
			Want: "COUNT, SUM or HISTOGRAM: a quantile's error depends on the data; give a cost"}
	}
}

// Accuracy bounds of the cost search: ε or μ in [MinAccuracyCost, MaxAccuracyCost]
// (each component's μ at least mechanism.MinGaussianMu).
const (
	MinAccuracyCost = 0x1p-25
	MaxAccuracyCost = 0x1p10
)

// CostForAccuracy returns the options of the cheapest release whose 95% interval is at
// most ±h (HalfWidth(o) ≤ h): the smallest ε (pure-ε family, with delta for partition
// selection) or μ (Gaussian), to a relative 1e-9, by bisection (internal/numeric) on the
// half-width, which decreases with the cost; the options returned were evaluated and meet
// h. No cost in [MinAccuracyCost, MaxAccuracyCost] meeting h is a *dpkit.ParamError.
func (p *Plan) CostForAccuracy(h float64, gaussian bool, delta float64) (ReleaseOptions, error) {
	if err := p.accuracyAggregate(); err != nil {
		return ReleaseOptions{}, err
	}
	if math.IsNaN(h) || math.IsInf(h, 0) || h <= 0 {
		return ReleaseOptions{}, &dpkit.ParamError{Pkg: "query", Name: "accuracy.ci95_halfwidth", Value: h, Want: "a finite number > 0"}
	}
	at := func(c float64) ReleaseOptions {
		if gaussian {
			return ReleaseOptions{Gaussian: true, Mu: c}
		}
		return ReleaseOptions{Budget: dpkit.Budget{Epsilon: c, Delta: delta}}
	}
	tooWide := func(c float64) (bool, error) {
		w, err := p.HalfWidth(at(c))
		return w > h, err
	}
	if wide, err := tooWide(MaxAccuracyCost); err != nil {
		return ReleaseOptions{}, err
	} else if wide {
		name := "epsilon"
		if gaussian {
			name = "mu"
		}
		return ReleaseOptions{}, &dpkit.ParamError{Pkg: "query", Name: "accuracy.ci95_halfwidth", Value: h,
			Want: fmt.Sprintf("a half-width some allowed cost meets (%s ≤ 2^10 gives at best ±%g)", name, p.bestHalfWidth(at(MaxAccuracyCost)))}
	}
	if wide, err := tooWide(MinAccuracyCost); err != nil {
		return ReleaseOptions{}, err
	} else if !wide {
		return at(MinAccuracyCost), nil
	}
	_, hi, err := numeric.Bisect(MinAccuracyCost, MaxAccuracyCost, tooWide, numeric.Stop{RelTol: 1e-9, Geometric: true})
	if err != nil {
		return ReleaseOptions{}, err
	}
	return at(hi), nil
}

func (p *Plan) bestHalfWidth(o ReleaseOptions) float64 {
	w, _ := p.HalfWidth(o)
	return w
}
