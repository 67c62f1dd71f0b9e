package multiparty

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/dpkit/dpkit"
)

type accuracyRef struct {
	Name    string    `json:"name"`
	Bits    []int     `json:"bits"`
	Eps     []float64 `json:"eps"`
	Delta   []float64 `json:"delta"`
	Table   []int     `json:"table"`
	Measure string    `json:"measure"`
	Prior   []float64 `json:"prior"`
	Want    string    `json:"want"`
}

func refProtocol(t *testing.T, c accuracyRef) (*Protocol, Function, Accuracy) {
	t.Helper()
	parties := make([]dpkit.Budget, len(c.Eps))
	for i := range parties {
		parties[i] = dpkit.Budget{Epsilon: c.Eps[i], Delta: c.Delta[i]}
	}
	pr, err := NewBitsProtocol(parties, c.Bits)
	if err != nil {
		t.Fatal(err)
	}
	f, err := TableFunction(c.Name, c.Table)
	if err != nil {
		t.Fatal(err)
	}
	a := Accuracy{Prior: c.Prior}
	if c.Measure == "hamming" {
		a.Measure = HammingMeasure(f.Outputs)
	}
	return pr, f, a
}

// TestAccuracyReference: AverageAccuracyWith against testdata/gen_reference.py (40
// digits, every transcript enumerated from the definition of randomized response and the
// Bayes rule): the thesis's Fig. 4.2 baselines (randomized response per bit; 5/8 and
// 1.5 at ε = 0), a skewed prior with δ > 0, the Hamming measure with δ > 0. Tolerance
// 1e-13 relative. The Bayes rule's decisions, summed over the transcripts, give the
// same accuracy (1e-13).
func TestAccuracyReference(t *testing.T) {
	data, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Cases []accuracyRef }
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) < 14 {
		t.Fatalf("%d cases", len(file.Cases))
	}
	for _, c := range file.Cases {
		pr, f, a := refProtocol(t, c)
		got, err := AverageAccuracyWith(pr, f, a)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := strconv.ParseFloat(c.Want, 64)
		if math.Abs(got-want) > 1e-13*want {
			t.Errorf("%s ε=%v δ=%v: %.17g, reference %s", c.Name, c.Eps, c.Delta, got, c.Want)
		}
		rule, err := RuleWith(pr, f, a)
		if err != nil {
			t.Fatal(err)
		}
		full, _ := a.check(pr.Parties(), f.Outputs)
		tab, _ := f.table(pr.Parties())
		sum := 0.0
		pr.Transcripts(func(tau []int) {
			d := rule.Decide(tau)
			for x, y := range tab {
				sum += full.Prior[x] * pr.probTranscript(tau, uint32(x)) * full.Measure[y][d]
			}
		})
		if math.Abs(sum-want) > 1e-13*want {
			t.Errorf("%s ε=%v: the rule's decisions give %.17g, reference %s", c.Name, c.Eps, sum, c.Want)
		}
	}
}

// TestAccuracyDefaults: with Accuracy{} the generalized accuracy is AverageAccuracy's
// (1e-15), Hamming(2) is the table of the reference's Hamming case, and bad priors,
// measures, tables and bit counts are refused by name.
func TestAccuracyDefaults(t *testing.T) {
	pr := mustProtocol(t, []float64{1, 0.5, 2, 0.7}, []float64{0.1, 0, 0.3, 0})
	for _, f := range []Function{XOR(), AND(4), Majority(4)} {
		a, _ := AverageAccuracy(pr, f)
		b, _ := AverageAccuracyWith(pr, f, Accuracy{})
		if math.Abs(a-b) > 1e-15 {
			t.Errorf("%s: %v vs %v", f.Name, a, b)
		}
	}
	h := Hamming(2)
	for x := range 16 {
		want := 0
		for j := range 2 {
			if x>>j&1 != x>>(j+2)&1 {
				want++
			}
		}
		if got := h.Eval(uint32(x)); got != want {
			t.Errorf("Hamming(2)(%04b) = %d, want %d", x, got, want)
		}
	}
	bad := []Accuracy{
		{Prior: []float64{1}},
		{Prior: []float64{0.5, 0.5, 0.5, 0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{Prior: append([]float64{-0.1, 1.1}, make([]float64, 14)...)},
		{Measure: [][]float64{{1}}},
		{Measure: [][]float64{{1, math.NaN()}, {0, 1}}},
	}
	for i, a := range bad {
		if _, err := AverageAccuracyWith(pr, XOR(), a); err == nil {
			t.Errorf("bad accuracy %d accepted", i)
		}
	}
	for _, tab := range [][]int{{0}, {0, 1, 2}, {0, 256}, {-1, 0}} {
		if _, err := TableFunction("t", tab); err == nil {
			t.Errorf("table %v accepted", tab)
		}
	}
	one := []dpkit.Budget{{Epsilon: 1}, {Epsilon: 1}}
	for _, bits := range [][]int{{1}, {0, 1}, {6, 7}} {
		if _, err := NewBitsProtocol(one, bits); err == nil {
			t.Errorf("bits %v accepted", bits)
		}
	}
}
