package ledger

import (
	"encoding/json"
	"testing"

	"github.com/dpkit/dpkit/mechanism"
)

// TestLegacyMechanism: the texts an earlier ledger recorded become typed descriptors
// (the command line's KIND:key=value for one release) or notes (anything else).
func TestLegacyMechanism(t *testing.T) {
	for _, c := range []struct {
		text string
		want mechanism.Descriptor
	}{
		{"", mechanism.Descriptor{}},
		{"gaussian:sigma=100,sensitivity=1", mechanism.Describe(mechanism.GaussianNoise{Sigma: 100, Sensitivity: 1})},
		{"gaussian:sensitivity=1,sigma=100", mechanism.Describe(mechanism.GaussianNoise{Sigma: 100, Sensitivity: 1})},
		{"laplace:scale=3", mechanism.Describe(mechanism.LaplaceNoise{Scale: 3, Sensitivity: 1})},
		{"geometric:eps=0.5,sensitivity=2", mechanism.Describe(mechanism.GeometricNoise{Scale: 2, Sensitivity: 2})},
		{"rr:eps=1,k=4", mechanism.Describe(mechanism.RandomizedResponseOptions{Epsilon: 1, Categories: 4})},
		{"exponential:eps=0.7", mechanism.Describe(mechanism.EpsilonDelta{Epsilon: 0.7})},
		{"subsampled-gaussian:sigma=2,q=0.01", mechanism.Describe(mechanism.Subsampled{Rate: 0.01, Base: mechanism.Describe(mechanism.GaussianNoise{Sigma: 2, Sensitivity: 1})})},
		{"gaussian:sigma=1,count=2", mechanism.Describe(mechanism.Text{Text: "gaussian:sigma=1,count=2"})},
		{"discrete laplace:scale=2", mechanism.Describe(mechanism.Text{Text: "discrete laplace:scale=2"})},
		{"laplace", mechanism.Describe(mechanism.Text{Text: "laplace"})},
	} {
		if got := LegacyMechanism(c.text); !got.Equal(c.want) {
			t.Errorf("%q → %s, want %s", c.text, got, c.want)
		}
	}
}

// TestLegacyPolicy: plan mechanism texts become descriptors ("" → null); a policy
// without them, or with descriptors already, is left alone.
func TestLegacyPolicy(t *testing.T) {
	out, ok, err := legacyPolicy(`{"kind":"plan","plan":[{"epsilon":1,"delta":0},{"epsilon":1,"delta":0}],"plan_mechanisms":["laplace:scale=1",""]}`)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	var p Policy
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.PlanMechanisms) != 2 || !p.PlanMechanisms[0].Equal(mechanism.Describe(mechanism.LaplaceNoise{Scale: 1, Sensitivity: 1})) || !p.PlanMechanisms[1].IsZero() {
		t.Errorf("converted policy %s", out)
	}
	for _, in := range []string{`{"kind":"fixed","releases":3}`, out} {
		if _, ok, err := legacyPolicy(in); ok || err != nil {
			t.Errorf("%s: converted again (%v, %v)", in, ok, err)
		}
	}
	if _, _, err := legacyPolicy(`{"kind":"plan","plan_mechanisms":["nonsense"]}`); err == nil {
		t.Error("a plan mechanism that is not in the syntax was accepted")
	}
}

// TestSameMechanism: the idempotency rule for mechanisms.
func TestSameMechanism(t *testing.T) {
	g := mechanism.Describe(mechanism.GaussianNoise{Sigma: 1, Sensitivity: 1})
	note := mechanism.Describe(mechanism.Text{Text: "discrete laplace:scale=2"})
	other := mechanism.Describe(mechanism.Text{Text: "something else"})
	for _, c := range []struct {
		rec, req mechanism.Descriptor
		want     bool
	}{
		{g, g, true}, {note, note, true}, {note, g, true}, {mechanism.Descriptor{}, mechanism.Descriptor{}, true},
		{g, note, false}, {note, other, false}, {note, mechanism.Descriptor{}, false}, {g, mechanism.Descriptor{}, false},
	} {
		if got := sameMechanism(c.rec, c.req); got != c.want {
			t.Errorf("recorded %s, request %s: %v", c.rec, c.req, got)
		}
	}
}
