package query

import (
	"math"
	"math/big"

	"github.com/dpkit/dpkit/noise"
)

func newFloat() *big.Float { return new(big.Float).SetPrec(256) }

// quantileEM releases the p-quantile of one group's sorted values with the exponential
// mechanism at privacy eps and utility sensitivity du (see Release).
//
// Candidates are the grid points j·γ, j in [L, H] (γ = 1, [L, H] = [min, max] for Int
// columns; γ the column grid, L = ⌈min/γ⌉, H = ⌊max/γ⌋ for Float columns). With the
// values at grid indices J_1 ≤ … ≤ J_n, J_0 = L−1 and J_(n+1) = H, the c_k = J_(k+1) − J_k
// points j in (J_k, J_(k+1)] have exactly k values below them and utility
// u_k = −|k − p·n|. Run k is chosen with probability ∝ c_k·exp(ε·u_k/(2Δu)), computed
// in log space relative to the largest term; the point inside it uniformly (exactly).
func (p *Plan) quantileEM(g *groupStats, eps, du float64, src noise.Source) float64 {
	c := p.b.agg
	grid := c.unitGrid()
	var lo, hi int64
	if c.decl.Type == Int {
		lo, hi = int64(c.decl.Min), int64(c.decl.Max)
	} else {
		lo, hi = int64(math.Ceil(c.decl.Min/grid)), int64(math.Floor(c.decl.Max/grid))
	}
	vals := g.values
	n := len(vals)
	index := func(k int) int64 { // J_k
		switch {
		case k == 0:
			return lo - 1
		case k == n+1:
			return hi
		}
		return int64(vals[k-1] / grid) // exact: values are grid multiples
	}
	target := p.Query.P * float64(n)
	temp := eps / (2 * du)
	logWeight := func(k int) float64 {
		ck := index(k+1) - index(k)
		if ck <= 0 {
			return math.Inf(-1)
		}
		return math.Log(float64(ck)) - temp*math.Abs(float64(k)-target)
	}
	// Pass 1: the largest log-weight; pass 2: the total; pass 3: the inverse CDF.
	top := math.Inf(-1)
	for k := 0; k <= n; k++ {
		top = math.Max(top, logWeight(k))
	}
	total := 0.0
	for k := 0; k <= n; k++ {
		total += math.Exp(logWeight(k) - top)
	}
	u := noise.Float64(src) * total
	chosen, acc := -1, 0.0
	for k := 0; k <= n; k++ {
		w := math.Exp(logWeight(k) - top)
		if w == 0 {
			continue
		}
		chosen = k // the last run of positive weight, should rounding leave u ≥ acc at the end
		if acc += w; u < acc {
			break
		}
	}
	first := index(chosen) + 1
	j := first + int64(uniformBelow(src, uint64(index(chosen+1)-index(chosen))))
	return float64(j) * grid
}
