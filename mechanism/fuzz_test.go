package mechanism

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
)

// coreKinds are the descriptor kinds of this file's owner (the staircase, JL and
// partition-selection kinds have their own targets).
var coreKinds = map[string]bool{
	"laplace": true, "geometric": true, "gaussian": true, "exponential": true, "quantile": true,
	"randomized_response": true, "randomized_response4": true, "median": true, "composition": true,
	"laplace_noise": true, "gaussian_noise": true, "geometric_noise": true, "epsilon_delta": true,
	"subsampled": true, "text": true,
}

// FuzzDescriptor: any bytes either fail to decode, fail to build with an error, or build
// a mechanism whose guarantee is valid, whose PLD validates and does not promise more
// than the guarantee (checked in closed form, independently of the mechanism's code, for
// every PLD type with one), whose descriptor survives JSON, and whose release method
// runs. Every constructor must return quickly at any parameters (ε = 1e300, 5e-324, …).
func FuzzDescriptor(f *testing.F) {
	for _, s := range []string{
		`{"kind":"laplace","version":1,"epsilon":0.5,"sensitivity":1}`,
		`{"kind":"laplace","version":1,"epsilon":5e-20,"sensitivity":1}`,
		`{"kind":"laplace","version":1,"epsilon":1e300,"sensitivity":1e-300,"dimension":3}`,
		`{"kind":"geometric","version":1,"epsilon":3,"sensitivity":7}`,
		`{"kind":"gaussian","version":1,"epsilon":1e300,"delta":1e-290,"sensitivity":1}`,
		`{"kind":"gaussian","version":1,"epsilon":1e-4,"delta":1e-12,"sensitivity":3,"dimension":5}`,
		`{"kind":"gaussian","version":1,"epsilon":0.5,"delta":0.1,"sensitivity":1,"calibration":"classic"}`,
		`{"kind":"exponential","version":1,"epsilon":1,"sensitivity":2,"monotonic":true}`,
		`{"kind":"quantile","version":1,"epsilon":1,"sensitivity":1,"p":0.5,"lower":0,"upper":1e15,"step":1}`,
		`{"kind":"quantile","version":1,"epsilon":1e-12,"sensitivity":1e6,"p":1,"lower":-1,"upper":1,"step":0.0009765625}`,
		`{"kind":"randomized_response","version":1,"epsilon":700,"categories":1073741824}`,
		`{"kind":"randomized_response4","version":1,"epsilon":0,"delta":1}`,
		`{"kind":"median","version":1,"epsilon":1,"delta":1e-9,"lower":-1e300,"upper":1e300}`,
		`{"kind":"median","version":1,"epsilon":0.001,"delta":0,"lower":0,"upper":1,"gamma":1.5}`,
		`{"kind":"composition","version":1,"parts":[{"kind":"gaussian_noise","version":1,"sigma":2,"sensitivity":1},{"kind":"epsilon_delta","version":1,"epsilon":1,"delta":0}]}`,
		`{"kind":"subsampled","version":1,"rate":0.5,"base":{"kind":"laplace_noise","version":1,"scale":1e-200,"sensitivity":1}}`,
		`{"kind":"geometric_noise","version":1,"scale":1e-300,"sensitivity":9007199254740992}`,
		`{"kind":"text","version":1,"text":"hello"}`,
		`{"kind":"laplace","version":2}`, `null`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Descriptor
		if json.Unmarshal(data, &d) != nil || d.IsZero() || !coreKinds[d.Kind] {
			return
		}
		if c, ok := d.Params.(CompositionOptions); ok && len(c.Parts) > 8 {
			return // bounded work per input
		}
		m, err := FromDescriptor(d)
		if err != nil {
			return
		}
		checkMechanism(t, m)
	})
}

// checkMechanism is the independent acceptance check of FuzzDescriptor.
func checkMechanism(t *testing.T, m Mechanism) {
	t.Helper()
	g := m.Guarantee()
	if err := g.Validate(); err != nil {
		t.Fatalf("%s: guarantee %v: %v", m.Descriptor(), g, err)
	}
	pm, err := m.PLD()
	if err != nil {
		t.Fatalf("%s: PLD: %v", m.Descriptor(), err)
	}
	if err := pm.Validate(); err != nil {
		t.Fatalf("%s: PLD %v: %v", m.Descriptor(), pm, err)
	}
	b, err := json.Marshal(m.Descriptor())
	var back Descriptor
	if err != nil || json.Unmarshal(b, &back) != nil || !back.Equal(m.Descriptor()) {
		t.Fatalf("%s: descriptor does not survive JSON (%v)", m.Descriptor(), err)
	}
	// The PLD never promises more than the guarantee (closed forms, up to 1e-12).
	up := g.Epsilon * (1 + 1e-12)
	switch p := pm.(type) {
	case pld.Gaussian:
		if d, err := pld.GaussianDelta(p.Mu(), g.Epsilon); err == nil && d > g.Delta*(1+1e-9)+1e-300 {
			t.Fatalf("%s: Gaussian PLD δ(%v) = %v above the guarantee %v", m.Descriptor(), g.Epsilon, d, g)
		}
	case pld.Laplace:
		if p.Sensitivity/p.Scale > up {
			t.Fatalf("%s: Laplace PLD ε = %v above %v", m.Descriptor(), p.Sensitivity/p.Scale, g)
		}
	case pld.DiscreteLaplace:
		if float64(p.Sensitivity)/p.Scale > up {
			t.Fatalf("%s: discrete Laplace PLD ε = %v above %v", m.Descriptor(), float64(p.Sensitivity)/p.Scale, g)
		}
	case pld.EpsilonDelta:
		if p.Epsilon > up || p.Delta > g.Delta {
			t.Fatalf("%s: canonical PLD %v above %v", m.Descriptor(), p, g)
		}
	case pld.RandomizedResponse:
		if p.Epsilon > up {
			t.Fatalf("%s: RR PLD %v above %v", m.Descriptor(), p, g)
		}
	case pld.Exponential:
		if p.Epsilon > up {
			t.Fatalf("%s: exponential PLD %v above %v", m.Descriptor(), p, g)
		}
	}
	releaseOnce(t, m)
}

// releaseOnce runs the mechanism's release method once (it must not panic or hang).
func releaseOnce(t *testing.T, m Mechanism) {
	src := noise.Seeded(1)
	var err error
	switch m := m.(type) {
	case *Laplace:
		if m.Dimension() == 1 {
			_, err = m.Release(math.MaxFloat64, src)
		}
	case *Gaussian:
		if m.Dimension() == 1 {
			_, err = m.Release(-1e300, src)
		}
	case *Geometric:
		m.Release(math.MinInt64, src)
	case *Exponential:
		_, err = m.Select([]float64{0, -1e300, 1e300}, src)
	case *Quantile:
		_, err = m.Release([]float64{-1e308, 0, 1e308}, src)
	case *RandomizedResponse:
		_, err = m.Release(m.Categories()-1, src)
	case *RandomizedResponse4:
		_, err = m.Release(1, src)
	case *Median:
		_, err = m.Release([]float64{1, 2, 3}, src)
	}
	if err != nil {
		t.Fatalf("%s: release: %v", m.Descriptor(), err)
	}
}
