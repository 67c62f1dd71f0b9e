package main

import (
	"fmt"
	"math"
	"text/tabwriter"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/pld"
)

// noiseCalibration is the answer of "dpkit calibrate --mechanism": the smallest noise
// whose K-fold composition meets the budget by the certified upper curve, and what
// KOV §4 would have required.
type noiseCalibration struct {
	Mechanism string   `json:"mechanism"`
	Sigma     *float64 `json:"sigma,omitempty"`
	Scale     *float64 `json:"scale,omitempty"`
	KOV       *float64 `json:"kov,omitempty"` // Thm 4.3 σ, or Cor 4.2 / Cor 4.1 scale; null where they do not hold
	KOVRule   string   `json:"kov_rule"`
	K         int64    `json:"k"`
	Epsilon   float64  `json:"epsilon"`
	Delta     float64  `json:"delta"`
}

// calibrateNoise solves for the noise of --mechanism.
func (c *calibrateCommand) calibrateNoise() error {
	if c.queryEps.set {
		return usagef("--query-eps does not apply with --mechanism: give --k")
	}
	if !c.k.set {
		return usagef("missing --k: the number of releases to calibrate the noise for")
	}
	if !c.sensitivity.set {
		return usagef("missing --sensitivity: the query's sensitivity (ℓ2 for gaussian, ℓ1 for laplace, an integer for geometric)")
	}
	E, D, K, S := c.eps.value, c.delta.value, c.k.value, c.sensitivity.value
	if E == 0 {
		return &dpkit.InfeasibleError{Msg: "total ε = 0 cannot be met by noise of finite scale"}
	}
	out := noiseCalibration{Mechanism: c.mechanism, K: K, Epsilon: E, Delta: D}
	logTerm := math.Log(math.E + E/D)
	switch c.mechanism {
	case "gaussian":
		if D == 0 {
			return &dpkit.InfeasibleError{Msg: "a Gaussian mechanism is not (ε, 0)-DP for any σ: give --delta > 0"}
		}
		// K releases of σ compose to μ = S·√K/σ Gaussian DP: σ from the largest μ.
		mu, err := pld.GaussianMu(E, D)
		if err != nil {
			return err
		}
		sigma := S * math.Sqrt(float64(K)) / mu * (1 + 1e-12)
		out.Sigma = &sigma
		out.KOVRule = "KOV Thm 4.3: σ² = 8KΔ²·ln(e + ε/δ)/ε² (only for ε ≤ 8 ln(e + ε/δ), docs/errata.md, KOV item 8)"
		if E <= 8*logTerm {
			v := math.Sqrt(8*float64(K)*S*S*logTerm) / E
			out.KOV = &v
		}
	case "laplace", "geometric":
		if c.mechanism == "geometric" && S != math.Trunc(S) {
			return &dpkit.ParamError{Name: "sensitivity", Value: S, Want: "an integer ≥ 1 for geometric noise"}
		}
		mk := func(scale float64) pld.Mechanism {
			if c.mechanism == "laplace" {
				return pld.Laplace{Scale: scale, Sensitivity: S}
			}
			return pld.DiscreteLaplace{Scale: scale, Sensitivity: int64(S)}
		}
		// Pure ε: K·S/scale ≤ E always meets the budget, so scale = K·S/E is feasible.
		hi, err := pld.CalibrateScale(mk, K, dpkit.Budget{Epsilon: E, Delta: D}, float64(K)*S/E)
		if err != nil {
			return err
		}
		out.Scale = &hi
		if c.mechanism == "laplace" {
			out.KOVRule = "KOV Cor 4.2: Laplace variance 8KΔ²·ln(e + ε/δ)/ε², scale = √(variance/2) (ε ≤ 0.9)"
			if E <= 0.9 && D > 0 {
				v := math.Sqrt(4*float64(K)*S*S*logTerm) / E
				out.KOV = &v
			}
		} else {
			out.KOVRule = "KOV Cor 4.1: per-release ε0 = √(ε²/(4K ln(e + ε/δ))), scale = Δ/ε0 (ε ≤ 0.9)"
			if E <= 0.9 && D > 0 {
				v := S / math.Sqrt(E*E/(4*float64(K)*logTerm))
				out.KOV = &v
			}
		}
	default:
		return usagef("--mechanism %q: want gaussian, laplace or geometric", c.mechanism)
	}
	if c.json {
		return writeJSON(c.stdout, out)
	}
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	name, v := "scale", out.Scale
	if out.Sigma != nil {
		name, v = "sigma", out.Sigma
	}
	fmt.Fprintf(w, "%s\t%s\t(%d releases of %s noise meet (ε=%g, δ=%g) by the certified PLD upper curve)\n", name, formatFloat(*v), K, c.mechanism, E, D)
	if out.KOV != nil {
		fmt.Fprintf(w, "KOV %s\t%s\t(%s; %.1f%% more noise)\n", name, formatFloat(*out.KOV), out.KOVRule, 100*(*out.KOV / *v - 1))
	} else {
		fmt.Fprintf(w, "KOV %s\tn/a\t(%s)\n", name, out.KOVRule)
	}
	return w.Flush()
}
