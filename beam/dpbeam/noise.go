package dpbeam

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
)

// NoiseKind selects the noise an aggregation adds. Both satisfy the aggregation's
// budget; Laplace (pure ε) is the default, Gaussian is tighter under composition and
// needs δ > 0.
type NoiseKind int

const (
	// LaplaceNoise: discrete Laplace (geometric) noise for counts, secure Laplace noise
	// on a power-of-two grid for sums (package mechanism). The budget's δ must be 0.
	LaplaceNoise NoiseKind = iota
	// GaussianNoise: the secure discrete Gaussian on a grid (mechanism.Gaussian),
	// calibrated to the ℓ2 sensitivity over the max_partitions partitions of a unit.
	GaussianNoise
)

func (k NoiseKind) String() string {
	switch k {
	case LaplaceNoise:
		return "laplace"
	case GaussianNoise:
		return "gaussian"
	}
	return fmt.Sprintf("NoiseKind(%d)", int(k))
}

// noiseSpec describes the noise of one release per partition. It is a DoFn field (so
// JSON-serializable); the mechanism is rebuilt from it on the workers, by the same
// deterministic calibration as at construction.
type noiseSpec struct {
	Kind   NoiseKind
	Budget dpkit.Budget // of this release over all of a unit's partitions
	K      int64        // max_partitions
	// Sensitivity bounds one unit's change to one partition's released value: ℓ1 for
	// Laplace, ℓ2 for Gaussian (over the Dim coordinates it can change).
	Sensitivity float64
	Integer     bool // integer-valued releases (counts): exact geometric noise for Laplace
	// Dim is the number of coordinates of a partition's release one unit can change,
	// when it is a vector (the quantile tree's nodes); 0 for a scalar.
	Dim int
	// PureEpsilon accounts a vector Laplace release by its ε alone (the canonical
	// (ε', 0) pair): the ℓ1 worst case of a vector on the grid is not shown to be the
	// scalar one.
	PureEpsilon bool
}

// noiser adds the noise of a built noiseSpec.
type noiser struct {
	geo  *mechanism.Geometric
	lap  *mechanism.Laplace
	gau  *mechanism.Gaussian
	mech mechanism.Mechanism // the one of the three that is set
	pld  pld.Mechanism       // per partition, for the accounting (count K)
	// guarantee is the certified (ε, δ) of the release over a unit's K partitions.
	guarantee dpkit.Budget
}

// build calibrates the mechanism. Laplace: ε' = ε/K per partition (rounded down), so
// K partitions cost at most ε (basic composition). Gaussian: the μ of the per-partition
// mechanism's PLD (which accounts for the grid) is at most μ/√K, μ the Gaussian-DP
// parameter whose curve meets (ε, δ) (pld.GaussianMu), so K partitions compose to at
// most μ: exactly (ε, δ) or better (Gaussian-DP composition, Dong, Roth and Su 2022,
// Cor. 3.3).
func (n noiseSpec) build() (*noiser, error) {
	if n.K < 1 {
		return nil, fmt.Errorf("dpbeam: noise for %d partitions", n.K)
	}
	switch n.Kind {
	case LaplaceNoise:
		eps := divDown(n.Budget.Epsilon, n.K)
		g := dpkit.Budget{Epsilon: n.Budget.Epsilon}
		if n.Integer {
			if n.Sensitivity != math.Trunc(n.Sensitivity) || n.Sensitivity > 1<<40 {
				return nil, fmt.Errorf("dpbeam: integer sensitivity %g", n.Sensitivity)
			}
			m, err := mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: eps, Sensitivity: int64(n.Sensitivity)})
			if err != nil {
				return nil, err
			}
			p, err := m.PLD()
			if n.PureEpsilon {
				p = pld.EpsilonDelta{Epsilon: eps}
			}
			return &noiser{geo: m, mech: m, pld: p, guarantee: g}, err
		}
		m, err := mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: eps, Sensitivity: n.Sensitivity})
		if err != nil {
			return nil, err
		}
		// The secure Laplace's exact PLD is a discrete Laplace on its grid, whose
		// sensitivity and scale are around 2^40: pld composes it in seconds. It is
		// accounted by its ε' instead (the canonical (ε', 0) pair, which dominates it).
		return &noiser{lap: m, mech: m, pld: pld.EpsilonDelta{Epsilon: eps}, guarantee: g}, nil
	case GaussianNoise:
		m, p, err := gaussianPerPartition(n.Budget, n.K, n.Sensitivity, n.Dim)
		if err != nil {
			return nil, err
		}
		return &noiser{gau: m, mech: m, pld: p, guarantee: n.Budget}, nil
	}
	return nil, &dpkit.ParamError{Pkg: pkg, Name: "noise", Value: int(n.Kind), Want: "LaplaceNoise or GaussianNoise"}
}

// gaussianPerPartition returns the Gaussian mechanism for one partition (Dim
// coordinates, 0 for a scalar) whose PLD, composed K times, has μ ≤ GaussianMu(b): it
// aims the per-partition calibration at μ/√K and lowers the aim until the mechanism's
// own PLD (which adds the grid's rounding) is below it.
func gaussianPerPartition(b dpkit.Budget, k int64, sens float64, dim int) (*mechanism.Gaussian, pld.Mechanism, error) {
	muTotal, err := pld.GaussianMu(b.Epsilon, b.Delta)
	if err != nil {
		return nil, nil, dpkit.InPackage(pkg, err)
	}
	rootK := math.Sqrt(float64(k))
	rootKUp := math.Nextafter(rootK, math.Inf(1))
	aim := 1.0
	for range 40 {
		mu := aim * muTotal / rootK
		eps := b.Epsilon / rootK
		delta, err := pld.GaussianDelta(mu, eps)
		if err != nil {
			return nil, nil, err
		}
		if delta < mechanism.MinDelta || delta >= 1 {
			return nil, nil, &dpkit.InfeasibleError{Msg: fmt.Sprintf("dpbeam: the Gaussian noise for %d partitions at %v needs a per-partition δ of %g, outside [1e-290, 1)", k, b, delta)}
		}
		m, err := mechanism.NewGaussian(mechanism.GaussianOptions{Epsilon: eps, Delta: delta, Sensitivity: sens, Dimension: dim})
		if err != nil {
			return nil, nil, err
		}
		p, err := m.PLD()
		if err != nil {
			return nil, nil, err
		}
		g, ok := p.(pld.Gaussian)
		if !ok {
			return nil, nil, fmt.Errorf("dpbeam: the Gaussian mechanism's PLD is a %T", p)
		}
		got := math.Nextafter(g.Mu()*rootKUp, math.Inf(1)) // ≥ √K·μ' (two roundings)
		if got <= muTotal {
			return m, p, nil
		}
		aim *= muTotal / got * (1 - 1e-9)
	}
	return nil, nil, &dpkit.InfeasibleError{Msg: fmt.Sprintf("dpbeam: no Gaussian calibration found for %d partitions at %v", k, b)}
}

// addInt returns v plus the noise, for integer releases.
func (z *noiser) addInt(v int64, src noise.Source) (int64, error) {
	switch {
	case z.geo != nil:
		return z.geo.Release(v, src), nil
	case z.gau != nil:
		x, err := z.gau.Release(float64(v), src)
		return roundInt(x), err
	}
	x, err := z.lap.Release(float64(v), src)
	return roundInt(x), err
}

// addFloat returns v plus the noise.
func (z *noiser) addFloat(v float64, src noise.Source) (float64, error) {
	switch {
	case z.gau != nil:
		return z.gau.Release(v, src)
	case z.lap != nil:
		return z.lap.Release(v, src)
	}
	return float64(z.geo.Release(roundInt(v), src)), nil
}

// addVector returns each of vs plus independent noise: for a vector Gaussian, batches
// of its Dimension coordinates (a short batch is padded and the padding's noise
// discarded: every coordinate's noise is an independent draw of the same law).
func (z *noiser) addVector(vs []float64, src noise.Source) ([]float64, error) {
	out := make([]float64, len(vs))
	if z.gau == nil || z.gau.Dimension() <= 1 {
		for i, v := range vs {
			var err error
			if z.geo != nil {
				var n int64
				n, err = z.addInt(roundInt(v), src)
				out[i] = float64(n)
			} else {
				out[i], err = z.addFloat(v, src)
			}
			if err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	d := z.gau.Dimension()
	batch := make([]float64, d)
	for i := 0; i < len(vs); i += d {
		n := copy(batch, vs[i:])
		clear(batch[n:])
		noisy, err := z.gau.ReleaseVector(batch, src)
		if err != nil {
			return nil, err
		}
		copy(out[i:], noisy[:n])
	}
	return out, nil
}

// roundInt rounds x to the nearest int64, saturating (post-processing).
func roundInt(x float64) int64 {
	switch {
	case x >= math.MaxInt64:
		return math.MaxInt64
	case x <= math.MinInt64:
		return math.MinInt64
	}
	return int64(math.Round(x))
}
