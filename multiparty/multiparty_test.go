package multiparty

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
)

func budgets(eps, delta []float64) []dpkit.Budget {
	b := make([]dpkit.Budget, len(eps))
	for i := range eps {
		b[i] = dpkit.Budget{Epsilon: eps[i]}
		if delta != nil {
			b[i].Delta = delta[i]
		}
	}
	return b
}

func mustProtocol(t testing.TB, eps, delta []float64) *Protocol {
	t.Helper()
	pr, err := NewProtocol(budgets(eps, delta))
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// bruteAverage evaluates KOV eq. (13)/(9) literally: 2^(−k) Σ_τ max_y Σ_{x:f(x)=y}
// P(τ|x), enumerating every transcript τ ∈ {0,1,2,3}^k (including those of probability
// zero) and every input x.
func bruteAverage(pr *Protocol, f Function) float64 {
	k := pr.Parties()
	total := 0.0
	n := 1
	for range k {
		n *= 4
	}
	tau := make([]int, k)
	for code := range n {
		c := code
		for i := range k {
			tau[i] = c % 4
			c /= 4
		}
		score := make([]float64, f.Outputs)
		for x := range 1 << k {
			p := 1.0
			for i := range k {
				p *= pr.Prob(i, tau[i], x>>i&1)
			}
			score[f.Eval(uint32(x))] += p
		}
		best := 0.0
		for _, s := range score {
			best = max(best, s)
		}
		total += best
	}
	return total / float64(int(1)<<k)
}

func randomFunction(r *rand.Rand, k, outputs int) Function {
	tab := make([]int, 1<<k)
	for i := range tab {
		tab[i] = r.IntN(outputs)
	}
	return Function{Name: "random", Outputs: outputs, Eval: func(x uint32) int { return tab[x] }}
}

func TestAverageAccuracyBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for k := 1; k <= 5; k++ {
		for rep := range 4 {
			eps := make([]float64, k)
			delta := make([]float64, k)
			for i := range k {
				eps[i] = 3 * r.Float64()
				switch rep {
				case 0:
				case 1:
					delta[i] = 0.3 * r.Float64()
				default:
					delta[i] = []float64{0, 0.05, 0.5, 1}[r.IntN(4)]
				}
			}
			pr := mustProtocol(t, eps, delta)
			for _, f := range []Function{XOR(), AND(k), OR(), Majority(k), randomFunction(r, k, 3)} {
				got, err := AverageAccuracy(pr, f)
				if err != nil {
					t.Fatal(err)
				}
				want := bruteAverage(pr, f)
				if math.Abs(got-want) > 1e-13 {
					t.Errorf("k=%d ε=%v δ=%v %s: AverageAccuracy = %.16g, brute force %.16g", k, eps, delta, f.Name, got, want)
				}
				// The rule returned by BayesRule attains it (brute force over transcripts).
				rule, _ := BayesRule(pr, f)
				acc := 0.0
				pr.Transcripts(func(tau []int) {
					d := rule.Decide(tau)
					for x := range 1 << k {
						if f.Eval(uint32(x)) == d {
							acc += pr.probTranscript(tau, uint32(x))
						}
					}
				})
				acc /= float64(int(1) << k)
				if math.Abs(acc-want) > 1e-13 {
					t.Errorf("k=%d %s: Bayes rule attains %.16g, optimum %.16g", k, f.Name, acc, want)
				}
			}
		}
	}
}

// Thesis Cor. 4.5.1 (δ = 0, equal ε): ACC = Σ_i C(k,2i) λ^(k−2i) / (1+λ)^k. At
// ε = ln 3 (λ = 3) it is an exact rational, computed with math/big.
func TestXORThesisCorollary(t *testing.T) {
	for k := 1; k <= 12; k++ {
		num := new(big.Int)
		for i := 0; 2*i <= k; i++ {
			term := new(big.Int).Binomial(int64(k), int64(2*i))
			term.Mul(term, new(big.Int).Exp(big.NewInt(3), big.NewInt(int64(k-2*i)), nil))
			num.Add(num, term)
		}
		want, _ := new(big.Rat).SetFrac(num, new(big.Int).Exp(big.NewInt(4), big.NewInt(int64(k)), nil)).Float64()
		eps := make([]float64, k)
		for i := range eps {
			eps[i] = math.Log(3)
		}
		pr := mustProtocol(t, eps, nil)
		if got := XORAccuracy(pr); math.Abs(got-want) > 1e-14 {
			t.Errorf("k=%d: XORAccuracy = %.16g, Cor. 4.5.1 = %.16g", k, got, want)
		}
		got, err := AverageAccuracy(pr, XOR())
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-13 {
			t.Errorf("k=%d: Bayes accuracy = %.16g, Cor. 4.5.1 = %.16g", k, got, want)
		}
	}
}

// The closed form ½(1 + Π(δ_i + (1−δ_i) tanh(ε_i/2))) against the computed Bayes
// accuracy, heterogeneous (ε_i, δ_i), k up to 12 (δ = 0) and 7 (δ > 0).
func TestXORClosedFormVsBayes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{2, 3, 5, 7, 12} {
		eps := make([]float64, k)
		delta := make([]float64, k)
		for i := range k {
			eps[i] = 4 * r.Float64()
			if k <= 7 {
				delta[i] = 0.2 * r.Float64()
			}
		}
		pr := mustProtocol(t, eps, delta)
		got, err := AverageAccuracy(pr, XOR())
		if err != nil {
			t.Fatal(err)
		}
		if want := XORAccuracy(pr); math.Abs(got-want) > 1e-13 {
			t.Errorf("k=%d: Bayes %.16g, closed form %.16g", k, got, want)
		}
	}
}

// The worked example of docs/local-dp.md: XOR of three parties at ε = (1, 1, 2), δ = 0.
// Reference: ½(1 + tanh(½)² tanh(1)), with tanh(½) = (e−1)/(e+1) and tanh(1) =
// (e²−1)/(e²+1) evaluated from a 200-bit e (bigExp-free: e = Σ 1/n!).
func TestXORWorkedExample(t *testing.T) {
	const prec = 200
	e := new(big.Float).SetPrec(prec)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	for n := 1; n < 80; n++ {
		e.Add(e, term)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(n)))
	}
	one := new(big.Float).SetPrec(prec).SetInt64(1)
	th := func(a *big.Float) *big.Float { // (a−1)/(a+1)
		n := new(big.Float).SetPrec(prec).Sub(a, one)
		d := new(big.Float).SetPrec(prec).Add(a, one)
		return n.Quo(n, d)
	}
	t1 := th(e)
	t2 := th(new(big.Float).SetPrec(prec).Mul(e, e))
	prod := new(big.Float).SetPrec(prec).Mul(t1, t1)
	prod.Mul(prod, t2)
	prod.Add(prod, one)
	prod.Quo(prod, new(big.Float).SetPrec(prec).SetInt64(2))
	want, _ := prod.Float64()

	pr := mustProtocol(t, []float64{1, 1, 2}, nil)
	avg, err := AverageAccuracy(pr, XOR())
	if err != nil {
		t.Fatal(err)
	}
	wc, err := WorstCaseAccuracy(pr, XOR())
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]float64{"closed form": XORAccuracy(pr), "average": avg, "worst case": wc.Accuracy} {
		if math.Abs(got-want)/want > 1e-12 {
			t.Errorf("%s = %.16g, want %.16g", name, got, want)
		}
	}
	t.Logf("XOR of 3 parties at ε = (1, 1, 2): %.10f", want)
}

// Worst case by the LP against exact answers: the parity (worst = average = closed
// form, heterogeneous (ε_i, δ_i)), and one party's own bit (δ + (1−δ) e^ε/(1+e^ε)).
func TestWorstCaseExactCases(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for k := 1; k <= 3; k++ {
		for range 3 {
			eps := make([]float64, k)
			delta := make([]float64, k)
			for i := range k {
				eps[i] = 3 * r.Float64()
				delta[i] = 0.3 * r.Float64()
			}
			pr := mustProtocol(t, eps, delta)
			wc, err := WorstCaseAccuracy(pr, XOR())
			if err != nil {
				t.Fatal(err)
			}
			if want := XORAccuracy(pr); math.Abs(wc.Accuracy-want) > 1e-9 {
				t.Errorf("k=%d: worst-case XOR %.12g, closed form %.12g", k, wc.Accuracy, want)
			}
		}
	}
	pr := mustProtocol(t, []float64{1.3}, []float64{0.1})
	id := Function{Name: "id", Outputs: 2, Eval: func(x uint32) int { return int(x & 1) }}
	wc, err := WorstCaseAccuracy(pr, id)
	if err != nil {
		t.Fatal(err)
	}
	if want := 0.1 + 0.9/(1+math.Exp(-1.3)); math.Abs(wc.Accuracy-want) > 1e-12 {
		t.Errorf("identity: %v, want %v", wc.Accuracy, want)
	}
}

// AND of two parties with equal ε, δ = 0: by symmetry an optimal rule answers 1 with
// probability a, b, b, c on the transcripts 22, 21, 12, 11 (noisy 1s and 0s). A grid of
// step h = 1/100 over (a, b, c) ∈ [0,1]³ gives, at its best point, a worst-case accuracy
// g attained by a rule, so g ≤ OPT; and the nearest grid point to the optimal symmetric
// rule is within h/2 in each coordinate, which moves every accuracy by at most h/2
// (the transcript probabilities sum to 1), so OPT ≤ g + h/2.
func TestWorstCaseANDGrid(t *testing.T) {
	for _, eps := range []float64{0.5, 1.5} {
		pr := mustProtocol(t, []float64{eps, eps}, nil)
		wc, err := WorstCaseAccuracy(pr, AND(2))
		if err != nil {
			t.Fatal(err)
		}
		p := math.Exp(eps) / (1 + math.Exp(eps))
		q := 1 - p
		g := 0.0
		const h = 0.01
		for ia := 0; ia <= 100; ia++ {
			for ib := 0; ib <= 100; ib++ {
				for ic := 0; ic <= 100; ic++ {
					a, b, c := float64(ia)*h, float64(ib)*h, float64(ic)*h
					acc11 := p*p*a + 2*p*q*b + q*q*c
					acc00 := 1 - (q*q*a + 2*p*q*b + p*p*c)
					acc01 := 1 - (p*q*a + (p*p+q*q)*b + p*q*c)
					g = max(g, min(acc11, acc00, acc01))
				}
			}
		}
		if wc.Accuracy < g-1e-12 || wc.Accuracy > g+h/2 {
			t.Errorf("ε=%g: LP worst case %v, grid says [%v, %v]", eps, wc.Accuracy, g, g+h/2)
		}
		avg, _ := AverageAccuracy(pr, AND(2))
		if wc.Accuracy > avg+1e-12 {
			t.Errorf("worst case %v above average %v", wc.Accuracy, avg)
		}
	}
}

// Simulation against the exact average accuracy: the fraction of n correct answers has
// standard deviation √(a(1−a)/n); a deviation beyond 5.6 of them has probability
// 2.1e-8 (normal approximation), for 4 checks below 1e-7.
func TestSimulateMatchesAverage(t *testing.T) {
	n := 200000
	if testing.Short() {
		n = 20000
	}
	src := noise.Seeded(42)
	pr := mustProtocol(t, []float64{1, 1, 2}, []float64{0, 0.1, 0.05})
	for _, f := range []Function{XOR(), AND(3), OR(), Majority(3)} {
		want, _ := AverageAccuracy(pr, f)
		got, err := Simulate(pr, f, n, src)
		if err != nil {
			t.Fatal(err)
		}
		sd := math.Sqrt(want * (1 - want) / float64(n))
		if math.Abs(got-want) > 5.6*sd {
			t.Errorf("%s: simulated %v, exact %v (%.1f sd)", f.Name, got, want, math.Abs(got-want)/sd)
		}
	}
}

// The sampler's symbol frequencies against eq. (16): for each symbol, the count among
// n draws is within 5.6 binomial standard deviations (false rejection ≤ 2.1e-8 per
// check, 16 checks: below 1e-6).
func TestRandomizeFrequencies(t *testing.T) {
	pr := mustProtocol(t, []float64{0.7, 2}, []float64{0.2, 0})
	src := noise.Seeded(9)
	const n = 100000
	for _, bits := range [][]int{{0, 0}, {1, 1}} {
		var counts [2][4]int
		for range n {
			tau, err := pr.Randomize(bits, src)
			if err != nil {
				t.Fatal(err)
			}
			counts[0][tau[0]]++
			counts[1][tau[1]]++
		}
		for i := range 2 {
			for s := range 4 {
				p := pr.Prob(i, s, bits[i])
				sd := math.Sqrt(n * p * (1 - p))
				if d := math.Abs(float64(counts[i][s]) - n*p); d > 5.6*sd+1e-9 {
					t.Errorf("party %d bit %d symbol %d: %d draws, expected %v", i, bits[i], s, counts[i][s], n*p)
				}
			}
		}
	}
}

// Eq. (16) gives party i the privacy region R(ε_i, δ_i): its hockey-stick divergence at
// ε_i is exactly δ_i in both directions, and the rows are distributions.
func TestProtocolPrivacy(t *testing.T) {
	for _, b := range []dpkit.Budget{{Epsilon: 0}, {Epsilon: 1, Delta: 0}, {Epsilon: 0.5, Delta: 0.1}, {Epsilon: 3, Delta: 1}} {
		pr, _ := NewProtocol([]dpkit.Budget{b})
		for _, dir := range [][2]int{{0, 1}, {1, 0}} {
			sum, hs := 0.0, 0.0
			for s := range 4 {
				a, c := pr.Prob(0, s, dir[0]), pr.Prob(0, s, dir[1])
				sum += a
				hs += max(0, a-math.Exp(b.Epsilon)*c)
			}
			if math.Abs(sum-1) > 1e-15 || math.Abs(hs-b.Delta) > 1e-15 {
				t.Errorf("%v: row sum %v, hockey-stick %v, want 1, δ", b, sum, hs)
			}
		}
	}
}

func TestErrors(t *testing.T) {
	var pe *dpkit.ParamError
	for name, err := range map[string]error{
		"none":    second(NewProtocol(nil)),
		"13":      second(NewProtocol(make([]dpkit.Budget, 13))),
		"eps NaN": second(NewProtocol([]dpkit.Budget{{Epsilon: math.NaN()}})),
		"delta":   second(NewProtocol([]dpkit.Budget{{Epsilon: 1, Delta: -0.1}})),
	} {
		if !errors.As(err, &pe) {
			t.Errorf("%s: %v, want *dpkit.ParamError", name, err)
		}
	}
	pr := mustProtocol(t, []float64{1, 1}, nil)
	if _, err := pr.Randomize([]int{0, 2}, nil); !errors.As(err, &pe) {
		t.Errorf("bit 2: %v", err)
	}
	bad := Function{Name: "bad", Outputs: 2, Eval: func(uint32) int { return 5 }}
	if _, err := AverageAccuracy(pr, bad); !errors.As(err, &pe) {
		t.Errorf("bad function: %v", err)
	}
	if _, err := WorstCaseAccuracy(pr, bad); !errors.As(err, &pe) {
		t.Errorf("bad function, worst case: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

func BenchmarkAverageAccuracy(b *testing.B) {
	for _, c := range []struct {
		name  string
		k     int
		delta float64
	}{{"k=12/delta=0", 12, 0}, {"k=12/delta=0.01", 12, 0.01}, {"k=8/delta=0.01", 8, 0.01}} {
		b.Run(c.name, func(b *testing.B) {
			eps := make([]float64, c.k)
			delta := make([]float64, c.k)
			for i := range eps {
				eps[i], delta[i] = 1+0.1*float64(i), c.delta
			}
			pr := mustProtocol(b, eps, delta)
			for b.Loop() {
				if _, err := AverageAccuracy(pr, Majority(c.k)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
