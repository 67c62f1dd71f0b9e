package ledger_test

import (
	"context"
	"errors"
	"math"
	"math/big"
	"path/filepath"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/ledger/sqlite"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/pld"
	"gonum.org/v1/gonum/floats/scalar"
	"pgregory.net/rapid"
)

// TestGaussianMu: the μ whose curve meets the total, against 50-digit references (mpmath
// 1.3.0: findroot of Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) = δ), to 1e-9 relative and never
// above them by more than that; μ·(1 + 1e-9) no longer fits.
func TestGaussianMu(t *testing.T) {
	for _, c := range []struct{ eps, delta, mu float64 }{
		{1, 1e-5, 0.268051123211294217903},
		{0.5, 1e-6, 0.124106149030528130641},
		{3, 1e-9, 0.514476265369644121040},
		{0.1, 1e-3, 0.0574567476133322592463},
	} {
		mu, err := ledger.GaussianMu(dpkit.Budget{Epsilon: c.eps, Delta: c.delta})
		if err != nil {
			t.Fatal(err)
		}
		if !scalar.EqualWithinRel(mu, c.mu, 1e-9) || mu > c.mu*(1+1e-12) {
			t.Errorf("(%v, %v): μ = %.15g, reference %.15g", c.eps, c.delta, mu, c.mu)
		}
		if d, _ := pld.GaussianDelta(mu*(1+1e-9), c.eps); d <= c.delta {
			t.Errorf("(%v, %v): μ = %v is not the largest (1e-9 more still fits)", c.eps, c.delta, mu)
		}
	}
	var pe *dpkit.ParamError
	if _, err := ledger.GaussianMu(dpkit.Budget{Epsilon: 1}); !errors.As(err, &pe) || pe.Name != "delta" {
		t.Errorf("δ = 0: %v", err)
	}
}

func gaussianRelease(mu float64) mechanism.Descriptor {
	return mechanism.Describe(mechanism.GaussianNoise{Sigma: 1 / mu, Sensitivity: 1})
}

func openLedger(t *testing.T) *ledger.Ledger {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"), &sqlite.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return ledger.New(s)
}

// TestGaussianFilterProperty: whatever sequence of μ_i an adaptive analyst chooses (here
// each one drawn after seeing the previous decisions), the accepted releases satisfy
// Σ μ_i² ≤ μ² exactly (checked in rationals with the μ each release's descriptor
// rebuilds, rounded up as the ledger does), every refusal would have exceeded it, and
// the audit replays the log.
func TestGaussianFilterProperty(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		l := openLedger(t)
		total := dpkit.Budget{Epsilon: rapid.Float64Range(0.1, 4).Draw(rt, "eps"), Delta: rapid.SampledFrom([]float64{1e-3, 1e-6, 1e-9}).Draw(rt, "delta")}
		def, err := l.Create(ctx, ledger.Spec{ID: "g", Total: total, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.GaussianFilter}})
		if err != nil {
			rt.Fatal(err)
		}
		mu := *def.Policy.Mu
		limit := new(big.Rat).Mul(new(big.Rat).SetFloat64(mu), new(big.Rat).SetFloat64(mu))
		sum := new(big.Rat)
		lastRefused := false
		for i := range 15 {
			scale := 0.5
			if lastRefused {
				scale = 0.05 // the analyst reacts to a refusal with a smaller request
			}
			mi := mu * rapid.Float64Range(0.001, scale).Draw(rt, "mu_i")
			d := gaussianRelease(mi)
			m, _ := mechanism.FromDescriptor(d)
			pm, _ := m.PLD()
			g := pm.(pld.Gaussian)
			mr := new(big.Rat).Quo(new(big.Rat).SetFloat64(g.Sensitivity), new(big.Rat).SetFloat64(g.Sigma))
			next := new(big.Rat).Add(sum, new(big.Rat).Mul(mr, mr))
			_, err := l.Spend(ctx, ledger.Request{Budget: "g", Cost: dpkit.Budget{Epsilon: 0.1}, Mechanism: d})
			switch {
			case err == nil:
				if next.Cmp(limit) > 0 {
					rt.Fatalf("release %d (μ_i = %v) accepted with Σμ² = %s > μ² = %s", i, mi, next.FloatString(20), limit.FloatString(20))
				}
				sum = next
				lastRefused = false
			case errors.Is(err, ledger.ErrBudgetExceeded):
				// The ledger rounds μ_i up: it may refuse a release within an ulp of the limit.
				if next.Cmp(new(big.Rat).Mul(limit, big.NewRat(1<<50-1, 1<<50))) < 0 {
					rt.Fatalf("release %d (μ_i = %v) refused with Σμ² = %s well below μ² = %s", i, mi, next.FloatString(20), limit.FloatString(20))
				}
				lastRefused = true
			default:
				rt.Fatal(err)
			}
		}
		if _, err := l.Audit(ctx, "g"); err != nil {
			rt.Fatal(err)
		}
	})
}

// TestGaussianBudgets: a fixed Gaussian budget of K releases calibrates μ0 = μ/√K and
// accepts exactly K releases of at most μ0; the Gaussian filter refuses releases whose
// PLD is not Gaussian (or that name no mechanism); spent values are the closed form.
func TestGaussianBudgets(t *testing.T) {
	ctx := context.Background()
	l := openLedger(t)
	total := dpkit.Budget{Epsilon: 1, Delta: 1e-6}
	def, err := l.Create(ctx, ledger.Spec{ID: "f", Total: total, Policy: ledger.Policy{Kind: ledger.Fixed, Releases: 100, Mechanism: ledger.GaussianMechanism}})
	if err != nil {
		t.Fatal(err)
	}
	mu, mu0 := *def.Policy.Mu, *def.Policy.PerReleaseMu
	if !scalar.EqualWithinRel(mu0*10, mu, 1e-15) {
		t.Errorf("μ0 = %v, μ = %v", mu0, mu)
	}
	if _, err := l.Spend(ctx, ledger.Request{Budget: "f", Cost: *def.Policy.PerRelease, Mechanism: gaussianRelease(mu0 * 1.01)}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("a release above μ0: %v", err)
	}
	for i := range 100 {
		if _, err := l.Spend(ctx, ledger.Request{Budget: "f", Cost: *def.Policy.PerRelease, Mechanism: gaussianRelease(mu0 * 0.999)}); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
	if _, err := l.Spend(ctx, ledger.Request{Budget: "f", Cost: *def.Policy.PerRelease, Mechanism: gaussianRelease(mu0 * 0.5)}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("release 101: %v", err)
	}
	st, _ := l.Status(ctx, "f")
	want, _ := pld.GaussianEpsilon(mu0*10, total.Delta)
	if st.SpentEpsilon < want || st.SpentEpsilon > total.Epsilon*(1+1e-9) || !scalar.EqualWithinRel(st.SpentEpsilon, want, 1e-12) {
		t.Errorf("spent ε %v, closed form %v, total %v", st.SpentEpsilon, want, total.Epsilon)
	}
	if st.SpentMu == nil || *st.SpentMu < mu0*10 || !scalar.EqualWithinRel(*st.SpentMu, mu0*10, 1e-14) {
		t.Errorf("spent μ %v, want √100·μ0 = %v rounded up", st.SpentMu, mu0*10)
	}
	if _, err := l.Audit(ctx, "f"); err != nil {
		t.Error(err)
	}
	// The Gaussian budget beats KOV's composition of the same releases' (ε0, δ0) points:
	// 100 releases fit where the (ε, δ) fixed policy gives each a smaller (ε0, δ0)…
	kov, _ := l.Create(ctx, ledger.Spec{ID: "k", Total: total, Policy: ledger.Policy{Kind: ledger.Fixed, Releases: 100}})
	gsigma := 1 / mu0 // noise of a sensitivity-1 Gaussian release
	ksigma, _ := mechanism.AnalyticGaussianSigma(kov.Policy.PerRelease.Epsilon, kov.Policy.PerRelease.Delta, 1)
	if gsigma >= ksigma {
		t.Errorf("σ per release: Gaussian accounting %v, KOV %v", gsigma, ksigma)
	}
	t.Logf("100 releases within %v: σ = %.3f by Gaussian composition, %.3f by KOV on (ε0, δ0)", total, gsigma, ksigma)

	if _, err := l.Create(ctx, ledger.Spec{ID: "g", Total: total, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.GaussianFilter}}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []mechanism.Descriptor{{}, mechanism.Describe(mechanism.LaplaceNoise{Scale: 10, Sensitivity: 1})} {
		if _, err := l.Spend(ctx, ledger.Request{Budget: "g", Cost: dpkit.Budget{Epsilon: 0.1}, Mechanism: d}); !errors.Is(err, ledger.ErrBudgetExceeded) {
			t.Errorf("mechanism %s: %v", d, err)
		}
	}
	r, _ := l.Remaining(ctx, "g", dpkit.Budget{Epsilon: mu / 4})
	if r.Releases != 16 || !r.NextAllowed || !scalar.EqualWithinRel(r.NextEpsilon, mu, 1e-15) {
		t.Errorf("remaining %+v, want 16 releases of μ/4 and next μ up to %v", r, mu)
	}
	for _, m := range []float64{mu / 4, mu / 2} {
		if _, err := l.Spend(ctx, ledger.Request{Budget: "g", Cost: dpkit.Budget{Epsilon: 0.1}, Mechanism: gaussianRelease(m)}); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := l.Status(ctx, "g"); st.SpentMu == nil || *st.SpentMu < mu*math.Sqrt(5.0/16) || !scalar.EqualWithinRel(*st.SpentMu, mu*math.Sqrt(5.0/16), 1e-9) {
		t.Errorf("filter's spent μ %v, want √(μ²/16 + μ²/4) = %v", st.SpentMu, mu*math.Sqrt(5.0/16))
	}
	for _, p := range []ledger.Policy{
		{Kind: ledger.Fixed, Releases: 3, Mechanism: "laplace"},
		{Kind: ledger.Adaptive, Filter: ledger.GaussianFilter, FilterDelta: 1e-9},
		{Kind: ledger.Adaptive, Filter: ledger.BasicFilter, Mechanism: ledger.GaussianMechanism},
	} {
		if _, err := l.Create(ctx, ledger.Spec{ID: "bad", Total: total, Policy: p}); err == nil {
			t.Errorf("policy %+v accepted", p)
		}
	}
	if _, err := l.Create(ctx, ledger.Spec{ID: "bad", Total: dpkit.Budget{Epsilon: 1}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.GaussianFilter}}); err == nil {
		t.Error("a Gaussian filter with δ = 0 accepted")
	}
}
