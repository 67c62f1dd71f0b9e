package query

import (
	"math"
	"strings"

	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/noise"
)

// The noise step of a release: each aggregate's mechanisms applied to one group's exact
// statistics. It sees the statistics of the aggregate step (exact), never rows.

// counter releases a noisy count and the half-width of its interval at a tail.
type counter struct {
	release func(n int64, src noise.Source) (int64, error)
	half    func(tail float64) float64
	name    string
	scale   float64
}

// summer releases a noisy sum and the half-width of its interval at a tail.
type summer struct {
	release func(s float64, src noise.Source) (float64, error)
	half    func(tail float64) float64
	name    string
	scale   float64
}

func newCounter(m mechanism.Mechanism) counter {
	switch m := m.(type) {
	case *mechanism.Geometric:
		return counter{
			release: func(n int64, src noise.Source) (int64, error) { return m.Release(n, src), nil },
			half:    func(tail float64) float64 { return countHalfWidth(m, tail) },
			name:    "discrete laplace", scale: 1 / m.Rate(),
		}
	case *mechanism.Gaussian:
		return counter{
			release: m.ReleaseInt,
			// the grid noise is within ±w, and rounding to an integer moves it by ≤ ½; the
			// noise is an integer, so |Z| ≤ w + ½ is |Z| ≤ ⌊w + ½⌋
			half: func(tail float64) float64 { w, _ := m.Interval(tail); return math.Floor(w + 0.5) },
			name: "discrete gaussian", scale: m.Sigma(),
		}
	}
	panic("query: not a count mechanism") // unreachable: Mechanisms builds them
}

func newSummer(m mechanism.Mechanism) summer {
	switch m := m.(type) {
	case *mechanism.Laplace:
		return summer{release: m.Release, half: func(tail float64) float64 { w, _ := m.Interval(tail); return w },
			name: "laplace (secure, snapped)", scale: m.NoiseScale()}
	case *mechanism.Gaussian:
		return summer{release: m.Release, half: func(tail float64) float64 { w, _ := m.Interval(tail); return w },
			name: "gaussian (secure, snapped)", scale: m.Sigma()}
	}
	panic("query: not a sum mechanism") // unreachable: Mechanisms builds them
}

// aggNoise is one aggregate's noise.
type aggNoise struct {
	ap    *AggregatePlan
	count counter // COUNT; AVG's count
	sum   summer  // SUM; AVG's centred sum
	quant *mechanism.Quantile
	hc    float64 // half-widths: 95% (COUNT, SUM) or 97.5% (AVG's two parts)
	hs    float64
}

// noisy holds the noise of every aggregate of one release.
type noisy struct {
	p    *Plan
	aggs []aggNoise
}

// noisy pairs the plan's aggregates with the mechanisms Mechanisms built (in component
// order).
func (p *Plan) noisy(ms []mechanism.Mechanism) *noisy {
	n := &noisy{p: p, aggs: make([]aggNoise, len(p.Aggregates))}
	k := 0
	for i := range p.Aggregates {
		ap := &p.Aggregates[i]
		an := aggNoise{ap: ap}
		switch ap.Func {
		case Count:
			an.count = newCounter(ms[k])
			an.hc = an.count.half(0.05)
		case Sum:
			an.sum = newSummer(ms[k])
			an.hs = an.sum.half(0.05)
		case Avg:
			an.sum, an.count = newSummer(ms[k]), newCounter(ms[k+1])
			an.hs, an.hc = an.sum.half(0.025), an.count.half(0.025)
		default:
			an.quant = ms[k].(*mechanism.Quantile)
		}
		k += len(ap.Components)
		n.aggs[i] = an
	}
	return n
}

// group returns the noisy values of every aggregate of group g, and their intervals.
func (n *noisy) group(g *GroupExact, src noise.Source) ([]float64, [][]float64, error) {
	vals := make([]float64, len(n.aggs))
	cis := make([][]float64, len(n.aggs))
	for i := range n.aggs {
		v, ci, err := n.release(g, i, src)
		if err != nil {
			return nil, nil, err
		}
		vals[i], cis[i] = v, ci
	}
	return vals, cis, nil
}

// release returns aggregate i's noisy value for group g and its interval.
func (n *noisy) release(g *GroupExact, i int, src noise.Source) (float64, []float64, error) {
	an, a := &n.aggs[i], &g.Aggs[i]
	switch an.ap.Func {
	case Count:
		c, err := an.count.release(g.Rows, src)
		v := float64(c)
		return v, []float64{v - an.hc, v + an.hc}, err
	case Sum:
		sum, _ := n.p.exactSum(i, a).Float64()
		v, err := an.sum.release(sum, src)
		return v, []float64{v - an.hs, v + an.hs}, err
	case Avg:
		c := an.ap.Components[0].Centre
		lo, hi := n.p.bounds(i)
		ns, err := an.sum.release(n.p.centredSum(i, a, c), src)
		if err != nil {
			return 0, nil, err
		}
		cnt, err := an.count.release(a.N, src)
		nc := float64(cnt)
		v := math.Max(lo, math.Min(hi, c+ns/math.Max(nc, 1)))
		return v, avgInterval(ns, nc, an.hs, an.hc, c, lo, hi), err
	}
	v, err := an.quant.ReleaseSorted(a.Sorted, src)
	return v, nil, err
}

// describe fills the answer's mechanism names, scale and the single-aggregate fields.
func (n *noisy) describe(a *Answer) {
	names := make([]string, len(n.aggs))
	for i, an := range n.aggs {
		switch an.ap.Func {
		case Count:
			names[i] = an.count.name
		case Sum:
			names[i] = an.sum.name
		case Avg:
			names[i] = an.sum.name + " sum / " + an.count.name + " count"
		default:
			names[i] = "exponential (quantile)"
		}
	}
	a.Mechanism = strings.Join(names, "; ")
	switch first := &n.aggs[0]; first.ap.Func {
	case Count:
		a.Scale = first.count.scale
	case Sum, Avg:
		a.Scale = first.sum.scale
	default:
		a.Scale = first.quant.Scale()
	}
	if len(n.aggs) != 1 {
		return
	}
	switch {
	case a.Groups == nil && a.Values != nil:
		v := a.Values[0]
		a.Result, a.CI95 = &v, a.Intervals[0]
	case a.Groups != nil || n.p.GroupColumns != nil:
		switch n.aggs[0].ap.Func {
		case Count:
			a.CI95 = []float64{-n.aggs[0].hc, n.aggs[0].hc}
		case Sum:
			a.CI95 = []float64{-n.aggs[0].hs, n.aggs[0].hs}
		}
	}
}
