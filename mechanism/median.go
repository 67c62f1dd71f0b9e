package mechanism

import (
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
	"github.com/dpkit/dpkit/sensitivity"
)

// MedianOptions configures the smooth-sensitivity median.
type MedianOptions struct {
	Epsilon float64 `json:"epsilon"` // required, finite and > 0
	// Delta = 0 gives ε-DP with heavy-tailed noise ∝ 1/(1+|z|^γ); Delta in (0, 1) gives
	// (ε, δ)-DP with Laplace noise.
	Delta float64 `json:"delta"`
	// Lower and Upper are the declared bounds of the values (public); values are clamped.
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
	Gamma float64 `json:"gamma,omitempty"` // tail exponent for Delta = 0; 0 means 4 (finite variance)
}

func (MedianOptions) kind() string                { return "median" }
func (o MedianOptions) build() (Mechanism, error) { return NewMedian(o) }

// Median releases the median of values in [Lower, Upper] with noise calibrated to its
// smooth sensitivity (Nissim, Raskhodnikova and Smith 2007; the lecture slides with docs/errata.md
// 002 items 2–3), for datasets of a public size under replace-one neighbours.
//
// # Output grid (data-independent)
//
// Granularity() g = 2^k is fixed by Lower, Upper and the calibration only:
// k = max(⌊log2(U−L)⌋ − 50, ⌈log2 max(|L|,|U|)⌉ − 60, ⌈log2(U−L)⌉ − 61 − ⌊log2 α⌋), so that
// |x/g| ≤ 2^60 on [L, U] and the integer noise scale stays below 2^62. The release is
// always r·g with r an integer in [⌈L/g⌉, ⌊U/g⌋]:
//
//	j = ⌊med/g + ½⌋ (exact),   r = clamp(j + Z, ⌈L/g⌉, ⌊U/g⌋),
//
// where Z is integer noise of scale T = S̃/(αg) grid steps and
// S̃ = max(min(S*_β(D), U − L), 2^30·g) (clamping a β-smooth upper bound on the local
// sensitivity to [2^30·g, U − L] keeps it one, as LS ≤ U − L). The set of possible
// outputs is that grid for every input (Mironov 2012), and the snapped median moves by
// at most ⌈LS/g⌉ ≤ S̃/g + 1 ≤ (S̃/g)(1 + 2^−30) steps between neighbours.
//
// # δ > 0: exact discrete Laplace, proven (ε, δ)
//
// Z is sampled exactly from P(z) ∝ e^(−|z|/t), t = ⌈S̃/(αg)⌉ (noise.DiscreteLaplaceScale;
// its saturation at 2^62 is invisible after clamping). For neighbours D, D' and any set
// of outputs (then clamping, post-processing):
//
//   - sliding: p_t(z − j) ≤ e^(|j−j'|/t) p_t(z − j'), and |j−j'|/t ≤ α(1 + 2^−30)(1 + 2^−52)
//     =: ε₁ ≤ ε/2 with α = (ε/2)/(1 + 2^−29);
//   - dilation: t' = t(D') satisfies e^(−β̂) ≤ t'/t ≤ e^β̂ with β̂ = β + 2^−37 + α·2^−29
//     (the smooth bound's own 2^−40 rounding, the division and the ceiling). If t' ≥ t,
//     p_t(z)/p_t'(z) ≤ tanh(1/2t)/tanh(1/2t') ≤ t'/t ≤ e^β̂ ≤ e^ε₂. If t' < t, the ratio
//     is ≤ e^(|z|(e^β̂ − 1)/t) ≤ e^ε₂ for |z| ≤ z₀ = ε₂t/(e^β̂ − 1), and
//     P_t[|Z| > z₀] ≤ (1 + 1/2t)·e^(−ε₂/(e^β̂ − 1)) =: δ₂;
//   - so the release is (ε₁ + ε₂, e^ε₁·δ₂)-DP with ε₂ = ε/2, and β̂ is chosen as
//     ln(1 + ε₂/(ε/2 + 2^−30 + ln(1/δ))) (rounded down, ≤ ε₂), which makes e^ε₁δ₂ ≤ δ.
//
// Beta() is the β passed to the smooth sensitivity: β̂ minus the rounding allowances.
// This is the discrete counterpart of NRS Lemma 2.9 and costs a slightly smaller β than
// docs/errata.md, slides item 3's ε/(2 ln(2/δ)).
//
// # δ = 0: heavy-tailed noise; what is and is not exact
//
// Z = ⌊T·η + ½⌋ with η ∝ 1/(1+|z|^γ) (NRS Lemma 2.10, α = β = ε/(2(γ+1)) from
// sensitivity.HeavyTailCalibration, α divided by 1 + 2^−29 and β reduced by 2^−37 for
// the grid shift and the rounding of S̃). The released index is a post-processing of
// j·g + (S̃/α)η, whose ideal guarantee is ε-DP by NRS with the shift bound above.
// Guaranteed exactly: the output set is the fixed grid; with probability exactly 2^−64
// the index is instead uniform on the grid (a data-independent mixture, which cannot
// reduce privacy), so every grid point has positive probability under every input, and
// the noise tail is sampled down to uniform values of 2^−1074. Not exact: η is sampled
// by floating-point rejection (53-bit uniforms, math.Pow), so the per-output
// probabilities match the ideal ones only to about 2^−50 relative in the bulk; the
// ε-DP guarantee is that of the ideal real-valued noise. An exact sampler for this
// density on a data-dependent scale is not implemented; use Delta > 0 for a release
// whose guarantee covers the sampled distribution bit for bit.
//
// Releasing the smooth sensitivity itself is not private, so Release returns only the
// value.
type Median struct {
	eps, delta, lower, upper float64
	gamma, alpha, beta       float64
	heavy                    *noise.HeavyTail
	k                        int   // g = 2^k
	kl, ku                   int64 // index range ⌈L/g⌉, ⌊U/g⌋
}

// medianFloorBits: S̃ ≥ 2^medianFloorBits · g.
const medianFloorBits = 30

// NewMedian validates o.
func NewMedian(o MedianOptions) (*Median, error) {
	if err := checkEpsilonPositive(o.Epsilon); err != nil {
		return nil, err
	}
	if math.IsNaN(o.Delta) || o.Delta < 0 || o.Delta >= 1 {
		return nil, perr("delta", o.Delta, "in [0, 1)")
	}
	if err := checkValue("Lower", o.Lower); err != nil {
		return nil, err
	}
	if err := checkValue("Upper", o.Upper); err != nil {
		return nil, err
	}
	if !(o.Upper > o.Lower) || math.IsInf(o.Upper-o.Lower, 0) {
		return nil, perr("upper", o.Upper, "> lower, with upper − lower finite")
	}
	m := &Median{eps: o.Epsilon, delta: o.Delta, lower: o.Lower, upper: o.Upper}
	var err error
	if o.Delta == 0 {
		m.gamma = o.Gamma
		if m.gamma == 0 {
			m.gamma = 4
		}
		if m.heavy, err = noise.NewHeavyTail(m.gamma); err != nil {
			return nil, perr("gamma", o.Gamma, "0 (meaning 4) or a finite number > 1")
		}
		var a, b float64
		if a, b, err = sensitivity.HeavyTailCalibration(o.Epsilon, m.gamma); err != nil {
			return nil, err
		}
		m.alpha = down(a / (1 + 0x1p-29))
		m.beta = down(b*(1-0x1p-40) - 0x1p-37)
	} else {
		if o.Gamma != 0 {
			return nil, perr("gamma", o.Gamma, "0 when delta > 0 (Laplace noise)")
		}
		half := o.Epsilon / 2 // exact
		m.alpha = down(half / (1 + 0x1p-29))
		ld := (half + 0x1p-30 - math.Log(o.Delta)) * (1 + 0x1p-40) // ≥ ε₁ + α/2^31 + ln(1/δ)
		bhat := math.Min(math.Log1p(half/ld)*(1-0x1p-40), half)
		m.beta = down(bhat*(1-0x1p-40) - 0x1p-37 - m.alpha*0x1p-29)
	}
	if !(m.alpha >= 0x1p-30) || !(m.beta > 0) {
		return nil, &dpkit.InfeasibleError{Msg: "mechanism: ε too small for the smooth-sensitivity median (need α ≥ 2^-30 and β > 0 after the rounding allowances)"}
	}
	m.setGrid()
	return m, nil
}

// down returns the float64 just below x (x > 0), or x if x ≤ 0.
func down(x float64) float64 {
	if x <= 0 {
		return x
	}
	return math.Nextafter(x, 0)
}

func (m *Median) setGrid() {
	width := m.upper - m.lower
	_, ew := math.Frexp(width) // width ∈ [2^(ew−1), 2^ew)
	_, em := math.Frexp(math.Max(math.Abs(m.lower), math.Abs(m.upper)))
	_, ea := math.Frexp(m.alpha)
	k := max(ew-1-50, em-60, ew-61-(ea-1))
	m.k = k
	m.kl = int64(math.Ceil(math.Ldexp(m.lower, -k)))
	m.ku = int64(math.Floor(math.Ldexp(m.upper, -k)))
}

// Descriptor returns {"kind":"median","version":1,"epsilon":…,"delta":…,"lower":…,
// "upper":…} (and "gamma" for δ = 0).
func (m *Median) Descriptor() Descriptor {
	o := MedianOptions{Epsilon: m.eps, Delta: m.delta, Lower: m.lower, Upper: m.upper}
	if m.heavy != nil {
		o.Gamma = m.gamma
	}
	return Describe(o)
}

// PLD returns the canonical pair of the (ε, δ) guarantee (KOV eq. 17/18), a sound
// dominating pair for every (ε, δ)-DP mechanism (KOV Thm 2.4). The median's own privacy
// curve is not known in closed form; for δ = 0 the guarantee is that of the ideal
// heavy-tailed noise (see Median).
func (m *Median) PLD() (pld.Mechanism, error) {
	return pld.EpsilonDelta{Epsilon: m.eps, Delta: m.delta}, nil
}

// Guarantee returns (ε, δ).
func (m *Median) Guarantee() dpkit.Budget { return dpkit.Budget{Epsilon: m.eps, Delta: m.delta} }

// Alpha and Beta return the calibration actually used (noise = S̃/α · η, S̃ the
// β-smooth sensitivity, clamped); Gamma the tail exponent (0 for Laplace noise).
func (m *Median) Alpha() float64 { return m.alpha }
func (m *Median) Beta() float64  { return m.beta }
func (m *Median) Gamma() float64 { return m.gamma }

// Granularity returns the spacing g of the output grid (a power of two fixed by the
// bounds and α, see Median).
func (m *Median) Granularity() float64 { return math.Ldexp(1, m.k) }

// Release returns the noisy median of values (clamped to [Lower, Upper]; NaN values are
// an error). values is not modified. The result is a multiple of Granularity() in
// [Lower, Upper].
func (m *Median) Release(values []float64, src noise.Source) (float64, error) {
	med, err := sensitivity.Median(values, m.lower, m.upper)
	if err != nil {
		return 0, err
	}
	s, err := sensitivity.SmoothMedian(values, m.lower, m.upper, m.beta)
	if err != nil {
		return 0, err
	}
	src = sourceOr(src)
	g := m.Granularity()
	s = math.Max(math.Min(s, m.upper-m.lower), math.Ldexp(g, medianFloorBits))
	scale := math.Ldexp(s, -m.k) / m.alpha // T in grid steps, ≤ 2^61
	j := snap(math.Ldexp(med, -m.k))       // exact: ⌊a + ½⌋ without forming a + ½
	var z int64
	if m.heavy == nil {
		t := uint64(math.Ceil(scale))
		z = noise.DiscreteLaplaceScale(src, t)
	} else {
		if src.Uint64() == 0 { // probability 2^−64: uniform on the grid (see Median)
			r := m.kl + int64(noise.Uniform(src, uint64(m.ku-m.kl)+1))
			return m.value(r), nil
		}
		x := math.Floor(scale*m.heavy.Sample(src) + 0.5)
		z = int64(math.Max(-0x1p62, math.Min(0x1p62, x)))
	}
	return m.value(min(max(j+z, m.kl), m.ku)), nil
}

// value returns r·g, which lies in [Lower, Upper] for r in [kl, ku] (float64(r) rounds
// to nearest, which is monotone, and L and U are float64 values).
func (m *Median) value(r int64) float64 { return math.Ldexp(float64(r), m.k) }
