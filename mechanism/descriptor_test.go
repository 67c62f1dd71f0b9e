package mechanism

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/pld"
)

// allMechanisms returns one mechanism of every release kind, with non-default options
// where a kind has them.
func allMechanisms(t *testing.T) map[string]Mechanism {
	t.Helper()
	must := func(m Mechanism, err error) Mechanism {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ms := map[string]Mechanism{
		"laplace":          must(NewLaplace(LaplaceOptions{Epsilon: 0.5, Sensitivity: 2})),
		"laplace/vector":   must(NewLaplace(LaplaceOptions{Epsilon: 0.5, Sensitivity: 2, Dimension: 3})),
		"geometric":        must(NewGeometric(GeometricOptions{Epsilon: 0.7, Sensitivity: 2})),
		"gaussian":         must(NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1})),
		"gaussian/classic": must(NewGaussian(GaussianOptions{Epsilon: 0.5, Delta: 1e-5, Sensitivity: 3, Calibration: Classic})),
		"gaussian/vector":  must(NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1, Dimension: 4})),
		"exponential":      must(NewExponential(ExponentialOptions{Epsilon: 1, Sensitivity: 2, Monotonic: true})),
		"quantile":         must(NewQuantile(QuantileOptions{Epsilon: 1, Sensitivity: 2, P: 0.9, Lower: -1, Upper: 3.5, Step: 0.5})),
		"rr":               must(NewRandomizedResponse(RandomizedResponseOptions{Epsilon: 1, Categories: 5})),
		"rr4":              must(NewRandomizedResponse4(RandomizedResponse4Options{Epsilon: 1, Delta: 0.01})),
		"median":           must(NewMedian(MedianOptions{Epsilon: 1, Lower: -5, Upper: 100})),
		"median/delta":     must(NewMedian(MedianOptions{Epsilon: 1, Delta: 1e-6, Lower: 0, Upper: 1})),
		"staircase":        must(NewStaircase(StaircaseOptions{Epsilon: 2, Sensitivity: 1, Cost: CostL1})),
		"staircase_l1":     must(NewStaircaseL1(StaircaseL1Options{Epsilon: 2, Sensitivity: 1, Dimension: 2})),
		"jl_cut":           must(NewJLCut(JLCutOptions{Epsilon: 1, Delta: 1e-6, Eta: 0.1, Nu: 0.05})),
		"jl_variance":      must(NewJLVariance(JLVarianceOptions{Epsilon: 1, Delta: 1e-6, Eta: 0.1, Nu: 0.05})),
		"partition":        must(NewPartitionSelection(PartitionSelectionOptions{Epsilon: 1, Delta: 1e-6, MaxPartitions: 3})),
	}
	var parts []Mechanism
	for _, k := range []string{"laplace", "gaussian", "rr4"} {
		parts = append(parts, ms[k])
	}
	ms["composition"] = must(NewComposition(parts...))
	for _, d := range []Descriptor{
		Describe(LaplaceNoise{Scale: 3, Sensitivity: 1}),
		Describe(GaussianNoise{Sigma: 100, Sensitivity: 1}),
		Describe(GeometricNoise{Scale: 2, Sensitivity: 3}),
		Describe(EpsilonDelta{Epsilon: 0.3, Delta: 1e-9}),
		Describe(Subsampled{Rate: 0.01, Base: Describe(GaussianNoise{Sigma: 1, Sensitivity: 1})}),
	} {
		ms[d.Kind] = must(FromDescriptor(d))
	}
	return ms
}

// TestDescriptorRoundTrip: every mechanism's descriptor survives JSON and rebuilds a
// mechanism with the same guarantee, PLD and descriptor.
func TestDescriptorRoundTrip(t *testing.T) {
	for name, m := range allMechanisms(t) {
		d := m.Descriptor()
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var back Descriptor
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %s: %v", name, b, err)
		}
		if !back.Equal(d) {
			t.Errorf("%s: %s read back as %s", name, b, back)
		}
		m2, err := FromDescriptor(back)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m2.Guarantee() != m.Guarantee() || !m2.Descriptor().Equal(d) {
			t.Errorf("%s: rebuilt %v %s, want %v %s", name, m2.Guarantee(), m2.Descriptor(), m.Guarantee(), d)
		}
		p1, err1 := m.PLD()
		p2, err2 := m2.PLD()
		if err1 != nil || err2 != nil || p1.String() != p2.String() {
			t.Errorf("%s: PLD %v (%v), rebuilt %v (%v)", name, p1, err1, p2, err2)
		}
		if err := m.Guarantee().Validate(); err != nil {
			t.Errorf("%s: guarantee %v: %v", name, m.Guarantee(), err)
		}
		if err := p1.Validate(); err != nil {
			t.Errorf("%s: PLD %v: %v", name, p1, err)
		}
	}
}

// TestDescriptorForm pins the JSON form (docs/ledger.md shows it).
func TestDescriptorForm(t *testing.T) {
	m, _ := NewLaplace(LaplaceOptions{Epsilon: 0.5, Sensitivity: 1})
	g, _ := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 2, Dimension: 3})
	c, _ := NewComposition(m, m)
	for _, tc := range []struct {
		d    Descriptor
		want string
	}{
		{m.Descriptor(), `{"kind":"laplace","version":1,"epsilon":0.5,"sensitivity":1}`},
		{g.Descriptor(), `{"kind":"gaussian","version":1,"epsilon":1,"delta":0.00001,"sensitivity":2,"dimension":3}`},
		{c.Descriptor(), `{"kind":"composition","version":1,"parts":[{"kind":"laplace","version":1,"epsilon":0.5,"sensitivity":1},{"kind":"laplace","version":1,"epsilon":0.5,"sensitivity":1}]}`},
		{Describe(Subsampled{Rate: 0.5, Base: Describe(LaplaceNoise{Scale: 2, Sensitivity: 1})}),
			`{"kind":"subsampled","version":1,"rate":0.5,"base":{"kind":"laplace_noise","version":1,"scale":2,"sensitivity":1}}`},
		{Descriptor{}, `null`},
	} {
		b, err := json.Marshal(tc.d)
		if err != nil || string(b) != tc.want {
			t.Errorf("got %s (%v), want %s", b, err, tc.want)
		}
	}
}

// TestKindsRegistered: the registry's names are the parameter types' kinds.
func TestKindsRegistered(t *testing.T) {
	for _, k := range Kinds() {
		p, err := kinds[k].decode([]byte("{}"))
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if p.kind() != k {
			t.Errorf("kind %q decodes parameters of kind %q", k, p.kind())
		}
	}
}

// TestDescriptorErrors: malformed descriptors are refused naming the problem.
func TestDescriptorErrors(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"kind":"laplace","version":1,"epsilon":1}`, "missing sensitivity"},
		{`{"kind":"laplace","version":2,"epsilon":1,"sensitivity":1}`, "version"},
		{`{"kind":"laplace","epsilon":1,"sensitivity":1}`, "version"},
		{`{"kind":"lapalce","version":1}`, "kind"},
		{`{"version":1}`, "kind"},
		{`{"kind":"laplace","version":1,"epsilon":1,"sensitivity":1,"scale":3}`, "unknown field"},
		{`{"kind":"laplace","version":1,"epsilon":"1","sensitivity":1}`, "epsilon"},
		{`"gaussian:sigma=1"`, "JSON object"},
		{`[1]`, "JSON object"},
		{`{"kind":"gaussian","version":1,"epsilon":1,"delta":0.1,"sensitivity":1,"calibration":"exact"}`, "calibration"},
	} {
		var d Descriptor
		err := json.Unmarshal([]byte(tc.json), &d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.json, err, tc.want)
		}
	}
	for _, tc := range []struct {
		d    Descriptor
		name string // ParamError.Name
	}{
		{Descriptor{}, "mechanism"},
		{Describe(LaplaceOptions{Epsilon: -1, Sensitivity: 1}), "epsilon"},
		{Describe(GaussianOptions{Epsilon: 1, Delta: 2, Sensitivity: 1}), "delta"},
		{Describe(Text{Text: "discrete laplace:scale=1"}), "mechanism"},
		{Describe(CompositionOptions{}), "parts"},
		{Describe(Subsampled{Rate: 2, Base: Describe(LaplaceNoise{Scale: 1, Sensitivity: 1})}), "rate"},
		{Describe(Subsampled{Rate: 0.5, Base: Describe(LaplaceOptions{Epsilon: 1, Sensitivity: 1})}), "base.kind"},
		{Describe(GaussianNoise{Sigma: 0, Sensitivity: 1}), "sigma"},
		{Describe(GeometricNoise{Scale: 1, Sensitivity: 0}), "sensitivity"},
		{Descriptor{Kind: "laplace", Version: 2, Params: LaplaceOptions{Epsilon: 1, Sensitivity: 1}}, "version"},
		{Descriptor{Kind: "gaussian", Version: 1, Params: LaplaceOptions{Epsilon: 1, Sensitivity: 1}}, "params"},
	} {
		_, err := FromDescriptor(tc.d)
		var pe *dpkit.ParamError
		if !errors.As(err, &pe) || pe.Name != tc.name {
			t.Errorf("%v: error %v, want a ParamError naming %q", tc.d, err, tc.name)
		}
	}
}

// TestDescribePLD: every pld mechanism of the command line's syntax has a descriptor
// whose mechanism has the same privacy loss distribution.
func TestDescribePLD(t *testing.T) {
	for _, pm := range []pld.Mechanism{
		pld.Gaussian{Sigma: 100, Sensitivity: 1},
		pld.Laplace{Scale: 2, Sensitivity: 1},
		pld.DiscreteLaplace{Scale: 3, Sensitivity: 2},
		pld.RandomizedResponse{Epsilon: 0.5, K: 4},
		pld.EpsilonDelta{Epsilon: 1, Delta: 1e-6},
		pld.PoissonSubsampled{Base: pld.Gaussian{Sigma: 2, Sensitivity: 1}, Rate: 0.01},
	} {
		d, err := DescribePLD(pm)
		if err != nil {
			t.Fatal(err)
		}
		m, err := FromDescriptor(d)
		if err != nil {
			t.Fatalf("%v: %v", d, err)
		}
		if got, _ := m.PLD(); got != pm {
			t.Errorf("%v: PLD %v, want %v", d, got, pm)
		}
	}
	// pld.Exponential is accounted by the canonical (ε, 0) pair: the same curve.
	d, _ := DescribePLD(pld.Exponential{Epsilon: 0.7})
	if m, _ := FromDescriptor(d); m.Guarantee() != (dpkit.Budget{Epsilon: 0.7}) {
		t.Errorf("exponential: %v", d)
	}
}

// TestAccountedGuarantees: the guarantees of the accounting-only kinds, against the
// values written out here.
func TestAccountedGuarantees(t *testing.T) {
	for _, tc := range []struct {
		p    Params
		want dpkit.Budget
	}{
		{LaplaceNoise{Scale: 4, Sensitivity: 2}, dpkit.Budget{Epsilon: 0.5}},
		{GeometricNoise{Scale: 0.5, Sensitivity: 3}, dpkit.Budget{Epsilon: 6}},
		{GaussianNoise{Sigma: 1, Sensitivity: 1}, dpkit.Budget{Epsilon: 0, Delta: 1}},
		// ln(1 + 0.1(e − 1)) = 0.15757..., δ: 0.1 × 0.001
		{Subsampled{Rate: 0.1, Base: Describe(EpsilonDelta{Epsilon: 1, Delta: 1e-3})}, dpkit.Budget{Epsilon: math.Log1p(0.1 * (math.E - 1)), Delta: 1e-4}},
	} {
		m, err := FromDescriptor(Describe(tc.p))
		if err != nil {
			t.Fatal(err)
		}
		g := m.Guarantee()
		if g.Epsilon < tc.want.Epsilon || g.Epsilon > tc.want.Epsilon*(1+1e-13) || g.Delta < tc.want.Delta || g.Delta > tc.want.Delta*(1+1e-13) {
			t.Errorf("%v: guarantee %v, want %v (rounded up by at most 1e-13)", tc.p, g, tc.want)
		}
	}
	// 1/3 is not a float64: the ε of scale 3 is rounded up.
	m, _ := FromDescriptor(Describe(LaplaceNoise{Scale: 3, Sensitivity: 1}))
	if g := m.Guarantee().Epsilon; g*3 < 1 {
		t.Errorf("ε of scale 3 = %v, below 1/3", g)
	}
}

// TestCompositionPLD: Gaussian parts compose to one Gaussian with μ² = Σ μ_i²; other
// parts give the canonical pair of the summed guarantee.
func TestCompositionPLD(t *testing.T) {
	a, _ := FromDescriptor(Describe(GaussianNoise{Sigma: 3, Sensitivity: 1}))
	b, _ := FromDescriptor(Describe(GaussianNoise{Sigma: 4, Sensitivity: 1}))
	c, _ := NewComposition(a, b)
	pm, _ := c.PLD()
	g, ok := pm.(pld.Gaussian)
	want := math.Sqrt(1.0/9 + 1.0/16) // 5/12
	if !ok || g.Mu() < want || g.Mu() > want*(1+1e-14) {
		t.Errorf("composed PLD %v, want μ = %v", pm, want)
	}
	l, _ := NewLaplace(LaplaceOptions{Epsilon: 0.1, Sensitivity: 1})
	c, _ = NewComposition(l, l, l)
	pm, _ = c.PLD()
	if e, ok := pm.(pld.EpsilonDelta); !ok || e.Epsilon < 0.3 || e.Epsilon > 0.3*(1+1e-15) {
		t.Errorf("three ε = 0.1: PLD %v", pm)
	}
}
