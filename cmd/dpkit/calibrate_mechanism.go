package main

import (
	"context"
	"fmt"
	"math"
	"text/tabwriter"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
	"github.com/dpkit/dpkit/pld"
)

// noiseCalibration is the answer of "dpkit calibrate --mechanism gaussian|laplace|
// geometric": the smallest noise whose K-fold composition meets the budget by the
// certified upper curve, and what KOV §4 would have required.
type noiseCalibration struct {
	Mechanism   string   `json:"mechanism"`
	Sigma       *float64 `json:"sigma,omitempty"`
	Scale       *float64 `json:"scale,omitempty"`
	Sensitivity float64  `json:"sensitivity"`
	K           int64    `json:"k"`
	Epsilon     float64  `json:"epsilon"`
	Delta       float64  `json:"delta"`
	KOV         *float64 `json:"kov"` // Thm 4.3 σ, or Cor 4.2 / Cor 4.1 scale; null where they do not hold
	KOVRule     string   `json:"kov_rule"`
}

// calibrateNoise solves for the noise of --mechanism.
func (c *calibrateCommand) calibrateNoise(ctx context.Context) error {
	if c.queryEps.set || c.queryDelta.set {
		return usagef("--query-eps and --query-delta do not apply with --mechanism")
	}
	if c.delta.value >= 1 {
		return flagErrorf("--delta", "invalid --delta 1 for --mechanism: want in [0, 1) (a total δ of 1 is met with no noise at all)")
	}
	if c.eps.value == 0 {
		return &dpkit.InfeasibleError{Msg: "total ε = 0 cannot be met by noise of finite scale"}
	}
	if c.mechanism == "subsampled-gaussian" {
		return c.calibrateSubsampledGaussian(ctx)
	}
	if c.mechanism == "staircase" {
		return c.calibrateStaircase(ctx) // staircase.go
	}
	if c.mechanism == "jl-cut" || c.mechanism == "jl-variance" {
		return c.calibrateJL(ctx) // jl.go
	}
	if c.eta.set || c.nu.set {
		return usagef("--eta and --nu apply to --mechanism jl-cut and jl-variance only")
	}
	if c.q.set || c.steps.set {
		return usagef("--q and --steps apply to --mechanism subsampled-gaussian only: give --k")
	}
	switch {
	case c.mechanism != "gaussian" && c.mechanism != "laplace" && c.mechanism != "geometric":
		return flagErrorf("--mechanism", "invalid --mechanism %q: want gaussian, laplace, geometric, staircase, jl-cut, jl-variance or subsampled-gaussian", c.mechanism)
	case !c.k.set:
		return flagErrorf("--k", "missing --k: the number of releases to calibrate the noise for")
	case !c.sensitivity.set:
		return flagErrorf("--sensitivity", "missing --sensitivity: the query's sensitivity (ℓ2 for gaussian, ℓ1 for laplace, an integer for geometric)")
	}
	out := noiseCalibration{Mechanism: c.mechanism, Sensitivity: c.sensitivity.value, K: c.k.value, Epsilon: c.eps.value, Delta: c.delta.value}
	err := runJob(ctx, c.s.stderr, "calibrating", func(ctx context.Context, _ progressFunc) error {
		if c.mechanism == "gaussian" {
			return c.gaussianNoise(&out)
		}
		return c.laplaceNoise(ctx, &out)
	})
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.s.stdout, out)
	}
	w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	name, v := "scale", out.Scale
	if out.Sigma != nil {
		name, v = "sigma", out.Sigma
	}
	fmt.Fprintf(w, "%s\t%s\t(%d releases of %s noise meet (ε=%s, δ=%s) by the certified PLD upper curve)\n",
		name, formatFloat(*v), out.K, c.mechanism, formatFloat(out.Epsilon), formatFloat(out.Delta))
	if out.KOV != nil {
		fmt.Fprintf(w, "KOV %s\t%s\t(%s; %.1f%% more noise)\n", name, formatFloat(*out.KOV), out.KOVRule, 100*(*out.KOV / *v - 1))
	} else {
		fmt.Fprintf(w, "KOV %s\tn/a\t(%s)\n", name, out.KOVRule)
	}
	return w.Flush()
}

// gaussianNoise: K releases of σ compose to μ = S·√K/σ Gaussian DP (closed form), so σ
// follows from the largest μ that meets (E, D).
func (c *calibrateCommand) gaussianNoise(out *noiseCalibration) error {
	E, D, K, S := c.eps.value, c.delta.value, c.k.value, c.sensitivity.value
	if D == 0 {
		return &dpkit.InfeasibleError{Msg: "a Gaussian mechanism is not (ε, 0)-DP for any σ: give --delta > 0"}
	}
	mu, err := pld.GaussianMu(E, D)
	if err != nil {
		return err
	}
	sigma := S * math.Sqrt(float64(K)) / mu * (1 + 1e-12)
	out.Sigma = &sigma
	out.KOVRule = "KOV Thm 4.3: σ² = 8KΔ²·ln(e + ε/δ)/ε² (only for ε ≤ 8 ln(e + ε/δ), docs/errata.md, KOV item 8)"
	if logTerm := math.Log(math.E + E/D); E <= 8*logTerm {
		v := math.Sqrt(8*float64(K)*S*S*logTerm) / E
		out.KOV = &v
	}
	return nil
}

// laplaceNoise calibrates Laplace or geometric noise by the certified PLD upper curve.
func (c *calibrateCommand) laplaceNoise(ctx context.Context, out *noiseCalibration) error {
	E, D, K, S := c.eps.value, c.delta.value, c.k.value, c.sensitivity.value
	if c.mechanism == "geometric" && S != math.Trunc(S) {
		return flagErrorf("--sensitivity", "invalid --sensitivity %s: want an integer ≥ 1 for geometric noise", formatFloat(S))
	}
	mk := func(scale float64) pld.Mechanism {
		if c.mechanism == "laplace" {
			return pld.Laplace{Scale: scale, Sensitivity: S}
		}
		return pld.DiscreteLaplace{Scale: scale, Sensitivity: int64(S)}
	}
	// Pure ε: K·S/scale ≤ E always meets the budget, so scale = K·S/E is feasible.
	hi, err := pld.CalibrateScaleContext(ctx, mk, K, dpkit.Budget{Epsilon: E, Delta: D}, float64(K)*S/E)
	if err != nil {
		return err
	}
	out.Scale = &hi
	logTerm := math.Log(math.E + E/D)
	if c.mechanism == "laplace" {
		out.KOVRule = "KOV Cor 4.2: Laplace variance 8KΔ²·ln(e + ε/δ)/ε², scale = √(variance/2) (ε ≤ 0.9)"
		if E <= 0.9 && D > 0 {
			v := math.Sqrt(4*float64(K)*S*S*logTerm) / E
			out.KOV = &v
		}
		return nil
	}
	out.KOVRule = "KOV Cor 4.1: per-release ε0 = √(ε²/(4K ln(e + ε/δ))), scale = Δ/ε0 (ε ≤ 0.9)"
	if E <= 0.9 && D > 0 {
		v := S / math.Sqrt(E*E/(4*float64(K)*logTerm))
		out.KOV = &v
	}
	return nil
}

// dpsgdCalibration is the answer of "dpkit calibrate --mechanism subsampled-gaussian".
type dpsgdCalibration struct {
	Mechanism         string  `json:"mechanism"`
	Sigma             float64 `json:"sigma"`
	Q                 float64 `json:"q"`
	Steps             int64   `json:"steps"`
	Epsilon           float64 `json:"epsilon"`
	Delta             float64 `json:"delta"`
	EpsilonUpper      float64 `json:"epsilon_upper"`       // certified ε at Sigma: ≤ Epsilon
	SigmaBelow        float64 `json:"sigma_below"`         // 0.99·Sigma
	EpsilonLowerBelow float64 `json:"epsilon_lower_below"` // certified lower ε at SigmaBelow: > Epsilon
}

// calibrateSubsampledGaussian finds the smallest noise multiplier of DP-SGD: T steps of
// a Gaussian of σ (sensitivity 1, the clipping norm) on a Poisson sample of rate q, by
// the certified upper curve of their privacy loss distribution, and certifies it: the
// upper ε at σ is at most E, and the lower ε at 0.99σ is above E (so no noise 1%
// smaller meets the budget).
//
// The search starts from a σ that meets the budget (the σ of T Gaussians without
// subsampling, which only adds privacy), halves it until it fails, then bisects the
// ratio geometrically to 1e-4 relative (internal/numeric), answering from the side seen
// to pass; it never tries a σ below half the answer.
func (c *calibrateCommand) calibrateSubsampledGaussian(ctx context.Context) error {
	switch {
	case c.k.set || c.sensitivity.set:
		return usagef("--mechanism subsampled-gaussian takes --steps and --q (σ is a noise multiplier: sensitivity 1), not --k or --sensitivity")
	case !c.q.set:
		return flagErrorf("--q", "missing --q: the sampling rate of each step, in (0, 1]")
	case !c.steps.set:
		return flagErrorf("--steps", "missing --steps: the number of steps, an integer in [1, 10^12]")
	case c.delta.value == 0:
		return &dpkit.InfeasibleError{Msg: "a Gaussian mechanism is not (ε, 0)-DP for any σ: give --delta > 0"}
	}
	E, D, q, T := c.eps.value, c.delta.value, c.q.value, c.steps.value
	mk := func(sigma float64) pld.Mechanism {
		return pld.PoissonSubsampled{Base: pld.Gaussian{Sigma: sigma, Sensitivity: 1}, Rate: q}
	}
	// epsilonAt returns the certified bracket of ε(D) at sigma.
	epsilonAt := func(sigma, tol float64) (up, lo float64, err error) {
		comp, err := pld.ComposeContext(ctx, []pld.Item{{Mechanism: mk(sigma), Count: T}}, &pld.Options{Delta: D, Tolerance: tol})
		if err != nil {
			return 0, 0, err
		}
		return comp.Epsilon(D)
	}
	out := dpsgdCalibration{Mechanism: c.mechanism, Q: q, Steps: T, Epsilon: E, Delta: D}
	err := runJob(ctx, c.s.stderr, "calibrating", func(ctx context.Context, progress progressFunc) error {
		// Without subsampling (q = 1) T steps of σ are μ = √T/σ Gaussian DP; subsampling
		// only adds privacy, so that σ meets the budget. Check it on the lattice, which
		// certifies with a little slack, and widen if needed.
		mu, err := pld.GaussianMu(E, D)
		if err != nil {
			return err
		}
		hi := math.Sqrt(float64(T)) / mu * (1 + 1e-9)
		for i := 0; ; i++ {
			up, _, err := epsilonAt(hi, 0)
			if err != nil {
				return err
			}
			if up <= E {
				break
			}
			if i == 20 {
				return &internalError{msg: fmt.Sprintf("no noise multiplier up to %s certified for (ε=%s, δ=%s)", formatFloat(hi), formatFloat(E), formatFloat(D))}
			}
			hi *= 1.5
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		sigma, err := smallestSigma(ctx, hi, progress, func(sigma float64) (bool, error) {
			up, _, err := epsilonAt(sigma, 0)
			return up <= E, err
		})
		if err != nil {
			return err
		}
		out.Sigma = sigma
		if out.EpsilonUpper, _, err = epsilonAt(sigma, 0); err != nil {
			return err
		}
		out.SigmaBelow = 0.99 * sigma
		for _, tol := range []float64{0, 1e-4, 1e-5} {
			if _, out.EpsilonLowerBelow, err = epsilonAt(out.SigmaBelow, tol); err != nil {
				return err
			}
			if out.EpsilonLowerBelow > E {
				break
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case !(out.EpsilonUpper <= E):
		return &internalError{msg: fmt.Sprintf("calibrated σ = %s has certified ε %s above the target %s", formatFloat(out.Sigma), formatFloat(out.EpsilonUpper), formatFloat(E))}
	case !(out.EpsilonLowerBelow > E):
		return &flagFailure{msg: fmt.Sprintf("σ = %s meets the budget (ε ≤ %s) but could not be certified within 1%%: the lower ε at 0.99σ is %s, not above %s",
			formatFloat(out.Sigma), formatFloat(out.EpsilonUpper), formatFloat(out.EpsilonLowerBelow), formatFloat(E))}
	}
	return c.writeDPSGD(out)
}

// writeDPSGD prints a DP-SGD calibration as JSON or text.
func (c *calibrateCommand) writeDPSGD(out dpsgdCalibration) error {
	if c.json {
		return writeJSON(c.s.stdout, out)
	}
	w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "sigma\t%s\t(noise multiplier: %d steps at sampling rate %s meet (ε=%s, δ=%s))\n",
		formatFloat(out.Sigma), out.Steps, formatFloat(out.Q), formatFloat(out.Epsilon), formatFloat(out.Delta))
	fmt.Fprintf(w, "certified\tε ≤ %s at sigma; ε ≥ %s > %s at 0.99·sigma = %s\n",
		formatFloat(out.EpsilonUpper), formatFloat(out.EpsilonLowerBelow), formatFloat(out.Epsilon), formatFloat(out.SigmaBelow))
	return w.Flush()
}

// smallestSigma returns, within 1e-4 relative and from the passing side, the smallest σ
// ≤ hi with meets(σ) true, for meets monotone (true above a threshold) and true at hi
// (not evaluated). It works on the ratio t = hi/σ: ExpandUp doubles t until meets
// fails, Bisect narrows [t_pass, t_fail] geometrically.
func smallestSigma(ctx context.Context, hi float64, progress progressFunc, meets func(sigma float64) (bool, error)) (float64, error) {
	evals := int64(0)
	ok := func(t float64) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		evals++
		progress(evals, evals+15) // ≈ 14 bisections remain once the bracket is found
		return meets(hi / t)
	}
	lo, up, found, err := numeric.ExpandUp(1, 2, 1e12, ok)
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, &internalError{msg: fmt.Sprintf("every noise multiplier down to %s meets the budget", formatFloat(hi/up))}
	}
	pass, _, err := numeric.Bisect(lo, up, ok, numeric.Stop{RelTol: 1e-4, Geometric: true})
	if err != nil {
		return 0, err
	}
	return hi / pass, nil
}
