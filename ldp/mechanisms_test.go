package ldp

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpkit/dpkit"
)

// Every mechanism is checked against the definition by brute force over all sets S of
// outputs (thesis eq. 3.1 and 3.25), independently of Matrix.Epsilon and Matrix.Delta.
func TestMechanismsValidByEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, eps := range []float64{0, 0.1, 1, math.Log(3), 5} {
		for k := 2; k <= 6; k++ {
			rr, err := RandomizedResponse(k, eps)
			if err != nil {
				t.Fatal(err)
			}
			p0, p1 := randDist(r, k), randDist(r, k)
			kl, _ := NewKL(p0, p1)
			mi, _ := NewMI(p0)
			bin, err := Binary(kl, eps)
			if err != nil {
				t.Fatal(err)
			}
			binMI, _ := Binary(mi, eps)
			opt, err := Optimal(kl, eps)
			if err != nil {
				t.Fatal(err)
			}
			for name, q := range map[string]Matrix{"rr": rr, "binary": bin.Matrix, "binary-mi": binMI.Matrix, "optimal": opt.Matrix} {
				if err := q.Validate(); err != nil {
					t.Fatalf("%s k=%d ε=%g: %v", name, k, eps, err)
				}
				_, ratio := subsetRatio(q, eps)
				if ratio > math.Exp(eps)*(1+1e-12) {
					t.Errorf("%s k=%d ε=%g: max Q(S|x)/Q(S|x') = %v > e^ε = %v", name, k, eps, ratio, math.Exp(eps))
				}
				got, _ := q.Epsilon()
				want := math.Log(ratio)
				if got < want || got > want+1e-12 {
					t.Errorf("%s k=%d ε=%g: Epsilon() = %v, brute force ln max ratio = %v", name, k, eps, got, want)
				}
				if !q.IsLDP(eps) {
					t.Errorf("%s k=%d ε=%g: IsLDP false", name, k, eps)
				}
			}
		}
	}
}

func TestQuaternaryRegion(t *testing.T) {
	for _, eps := range []float64{0, 0.5, 1, 3} {
		for _, delta := range []float64{0, 1e-3, 0.1, 0.5, 1} {
			q, err := Quaternary(eps, delta)
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Validate(); err != nil {
				t.Fatal(err)
			}
			// Brute force over the 16 sets: the worst set gives exactly δ at ε
			// (R(Q_QT) = R(ε, δ), thesis §3.6).
			bf, _ := subsetRatio(q, eps)
			got, _ := q.Delta(eps)
			if math.Abs(bf-delta) > 1e-15 || got < bf || got > bf*(1+1e-14)+1e-300 {
				t.Errorf("ε=%g δ=%g: brute-force δ = %v, Delta = %v, want %v", eps, delta, bf, got, delta)
			}
			// At a smaller ε' the binary part also leaks: δ(ε') = δ + (1−δ)(p − e^ε' (1−p)),
			// p = e^ε/(1+e^ε) (hockey-stick of the binary part; brute force check).
			if eps > 0 {
				e2 := eps / 2
				p := math.Exp(eps) / (1 + math.Exp(eps))
				want := delta + (1-delta)*(p-math.Exp(e2)*(1-p))
				bf2, _ := subsetRatio(q, e2)
				d2, _ := q.Delta(e2)
				checkRel(t, "brute-force δ(ε/2)", bf2, want, 1e-13)
				checkRel(t, "Delta(ε/2)", d2, want, 1e-13)
			}
		}
	}
}

func TestRandomizedResponseThesisForm(t *testing.T) {
	// Eq. 3.16 literally: e^ε/(k−1+e^ε) on the diagonal, 1/(k−1+e^ε) elsewhere.
	for _, k := range []int{2, 3, 10} {
		for _, eps := range []float64{0, 0.3, 2, 20} {
			q, _ := RandomizedResponse(k, eps)
			e := math.Exp(eps)
			checkRel(t, "diagonal", q[1][1], e/(float64(k-1)+e), 1e-15)
			checkRel(t, "off-diagonal", q[1][0], 1/(float64(k-1)+e), 1e-14)
		}
	}
}

// Thesis Def. 3.3.3 prints S^(3); the columns must come out in the same order.
func TestStaircasePatternThesisS3(t *testing.T) {
	const E = -1 // placeholder for e^ε in the printed matrix
	printed := [3][8]float64{
		{1, 1, 1, 1, E, E, E, E},
		{1, 1, E, E, 1, 1, E, E},
		{1, E, 1, E, 1, E, 1, E},
	}
	eps := 0.7
	for j := range 8 {
		s, err := StaircasePattern(3, eps, j)
		if err != nil {
			t.Fatal(err)
		}
		for x := range 3 {
			want := printed[x][j]
			if want == E {
				want = math.Exp(eps)
			}
			if s[x] != want {
				t.Errorf("S^(3)[%d][%d] = %v, want %v", x, j, s[x], want)
			}
		}
	}
}

// The binary-mechanism marginals in closed form (thesis eq. 3.17, first line — the
// middle line is wrong, docs/errata.md thesis item 1):
//
//	D(M0‖M1) = Σ_{A∈{T,Tᶜ}} (1+(e^ε−1)P0(A))/(e^ε+1) · ln((1+(e^ε−1)P0(A))/(1+(e^ε−1)P1(A)))
func TestBinaryKLClosedForm(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 50 {
		k := 2 + r.IntN(6)
		p0, p1 := randDist(r, k), randDist(r, k)
		eps := 4 * r.Float64()
		u, _ := NewKL(p0, p1)
		bin, _ := Binary(u, eps)
		e := math.Exp(eps)
		pt0, pt1 := 0.0, 0.0
		for x := range k {
			if p0[x] >= p1[x] {
				pt0 += p0[x]
				pt1 += p1[x]
			}
		}
		want := 0.0
		for _, a := range [][2]float64{{pt0, pt1}, {1 - pt0, 1 - pt1}} {
			num, den := 1+(e-1)*a[0], 1+(e-1)*a[1]
			want += num / (e + 1) * math.Log(num/den)
		}
		// ln of a ratio near 1 carries an absolute error of about 2⁻⁵³ in both
		// computations: relative 1e-10 plus absolute 1e-15.
		if d := math.Abs(bin.Utility - want); d > 1e-10*want+1e-15 {
			t.Errorf("binary KL = %.17g, want %.17g (1e-10 relative + 1e-15)", bin.Utility, want)
		}
	}
}

// Errata thesis item 3: with a tie P0(x) = P1(x), the printed rule "P0(x) ≥ P1(x)"
// can be strictly suboptimal. Brute force over all splits containing the strict set.
func TestBinaryTieHandling(t *testing.T) {
	p0 := []float64{0.6, 0.3, 0.1}
	p1 := []float64{0.1, 0.3, 0.6}
	found := false
	for _, eps := range []float64{0.1, 0.5, 1, 2, 4} {
		u, _ := NewKL(p0, p1)
		bin, err := Binary(u, eps)
		if err != nil {
			t.Fatal(err)
		}
		ge, _ := BinarySplit([]bool{true, true, false}, eps)  // printed rule: tie in T
		gt, _ := BinarySplit([]bool{true, false, false}, eps) // tie out of T
		vge, _ := Value(u, ge)
		vgt, _ := Value(u, gt)
		if want := max(vge, vgt); bin.Utility != want {
			t.Errorf("ε=%g: Binary utility %v, want max(%v, %v)", eps, bin.Utility, vge, vgt)
		}
		if vgt > vge*(1+1e-6) {
			found = true
		}
	}
	if !found {
		t.Errorf("example does not show the printed ≥ rule to be suboptimal at any ε")
	}
}

// Mutual information of closed forms: randomized response with a uniform prior,
// I = ln k + p ln p + (k−1) q ln q (H(Y) = ln k, H(Y|X) = row entropy); the binary
// mechanism with P(T) = ½: I = ln 2 − h(e^ε/(1+e^ε)).
func TestMutualInformationClosedForms(t *testing.T) {
	for _, k := range []int{2, 4, 7} {
		uni := make([]float64, k)
		for i := range uni {
			uni[i] = 1 / float64(k)
		}
		for _, eps := range []float64{0.2, 1, 3} {
			q, _ := RandomizedResponse(k, eps)
			got, err := MutualInformation(uni, q)
			if err != nil {
				t.Fatal(err)
			}
			e := math.Exp(eps)
			p, o := e/(float64(k-1)+e), 1/(float64(k-1)+e)
			checkRel(t, "I(RR)", got, math.Log(float64(k))+p*math.Log(p)+float64(k-1)*o*math.Log(o), 1e-12)
		}
	}
	mi, _ := NewMI([]float64{0.25, 0.25, 0.3, 0.2})
	for _, eps := range []float64{0.2, 1, 3} {
		bin, _ := Binary(mi, eps)
		p := math.Exp(eps) / (1 + math.Exp(eps))
		checkRel(t, "I(binary)", bin.Utility, math.Log(2)+p*math.Log(p)+(1-p)*math.Log(1-p), 1e-12)
	}
}

// Thesis eq. 3.23 (which survives the errata): the binary mechanism's mutual
// information is ½ P(T)P(Tᶜ) ε² + O(ε³).
func TestBinaryMISmallEpsilon(t *testing.T) {
	p := []float64{0.5, 0.2, 0.2, 0.1}
	mi, _ := NewMI(p)
	for _, eps := range []float64{1e-2, 1e-3} {
		bin, _ := Binary(mi, eps)
		want := 0.5 * 0.5 * 0.5 * eps * eps // P(T) = ½ is attainable: {0}
		checkRel(t, "I(binary) at small ε", bin.Utility, want, 10*eps)
	}
}

func TestChernoffInformationSymmetric(t *testing.T) {
	// Bern(p) against Bern(1−p): the minimum is at λ = ½ and C = −ln(2√(p(1−p))).
	for _, p := range []float64{0.6, 0.73, 0.99} {
		got, err := ChernoffInformation([]float64{p, 1 - p}, []float64{1 - p, p})
		if err != nil {
			t.Fatal(err)
		}
		checkRel(t, "Chernoff information", got, -math.Log(2*math.Sqrt(p*(1-p))), 1e-12)
	}
	// Chernoff information ≤ min(D(m0‖m1), D(m1‖m0)).
	m0, m1 := []float64{0.5, 0.3, 0.2}, []float64{0.1, 0.2, 0.7}
	c, _ := ChernoffInformation(m0, m1)
	d01, _ := KLDivergence(m0, m1)
	d10, _ := KLDivergence(m1, m0)
	if !(c > 0 && c <= d01 && c <= d10) {
		t.Errorf("C = %v, want in (0, min(%v, %v)]", c, d01, d10)
	}
}

func TestParameterErrors(t *testing.T) {
	var pe *dpkit.ParamError
	for name, err := range map[string]error{
		"rr k=1":     second(RandomizedResponse(1, 1)),
		"rr eps NaN": second(RandomizedResponse(3, math.NaN())),
		"rr eps -1":  second(RandomizedResponse(3, -1)),
		"rr eps Inf": second(RandomizedResponse(3, math.Inf(1))),
		"kl zero":    second(NewKL([]float64{1, 0}, []float64{0.5, 0.5})),
		"kl sum":     second(NewKL([]float64{0.5, 0.6}, []float64{0.5, 0.5})),
		"kl len":     second(NewKL([]float64{0.5, 0.5}, []float64{0.2, 0.3, 0.5})),
		"tv NaN":     second(NewTV([]float64{math.NaN(), 1}, []float64{0.5, 0.5})),
		"mi k=1":     second(NewMI([]float64{1})),
		"quat δ":     second(Quaternary(1, 1.5)),
		"matrix":     second(Matrix{{0.5, 0.6}, {0.5, 0.5}}.Epsilon()),
		"ragged":     second(Matrix{{0.5, 0.5}, {1}}.Epsilon()),
		"oracle k":   second(NewRROracle(1, 1)),
		"oracle ε":   second(NewBinaryOracle(3, -0.1)),
	} {
		if !errors.As(err, &pe) {
			t.Errorf("%s: error %v, want *dpkit.ParamError", name, err)
		}
	}
	kl14 := make([]float64, 15)
	for i := range kl14 {
		kl14[i] = 1.0 / 15
	}
	u, _ := NewMI(kl14)
	if _, err := Optimal(u, 1); !errors.As(err, &pe) {
		t.Errorf("Optimal k=15: %v, want *dpkit.ParamError", err)
	}
}

func second[T any](_ T, err error) error { return err }
