package multiparty

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// kronMul against the definition: (⊗_i m_i) src summed entry by entry over every index
// pair (row-major, party 0 slowest), for random 2×2, 4×2 and 2×4 factors, with and
// without zero entries (revealed symbols; each stage has paths for both), and four
// 2×4 factors, whose first stage runs along runs of 32 (the long-run path for factors
// of more than two columns); 1e-13 relative.
func TestKronMul(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	shapes := [][][2]int{
		{{2, 2}, {2, 2}, {2, 2}},
		{{4, 2}, {2, 2}, {4, 2}},
		{{2, 4}, {2, 2}, {2, 4}},
		{{2, 4}, {2, 4}, {2, 2}, {2, 4}},
	}
	for _, zeros := range []bool{false, true} {
		for _, shape := range shapes {
			testKronMulShape(t, r, shape, zeros)
		}
	}
}

func testKronMulShape(t *testing.T, r *rand.Rand, shape [][2]int, zeros bool) {
	t.Helper()
	k := len(shape)
	var m [][]float64
	var rows, cols []int
	nIn, nOut := 1, 1
	for _, s := range shape {
		mi := make([]float64, s[0]*s[1])
		for i := range mi {
			if mi[i] = r.Float64(); zeros && i%3 == 0 {
				mi[i] = 0
			}
		}
		m = append(m, mi)
		rows, cols = append(rows, s[0]), append(cols, s[1])
		nIn *= s[1]
		nOut *= s[0]
	}
	src := make([]float64, nIn)
	for i := range src {
		src[i] = r.NormFloat64()
	}
	n := max(nIn, nOut) * 4
	got := kronMul(m, rows, cols, src, make([]float64, n), make([]float64, n))
	for o := range nOut {
		want := 0.0
		for in := range nIn {
			p, oo, ii := 1.0, o, in
			for i := k - 1; i >= 0; i-- {
				p *= m[i][(oo%rows[i])*cols[i]+ii%cols[i]]
				oo /= rows[i]
				ii /= cols[i]
			}
			want += p * src[in]
		}
		if math.Abs(got[o]-want) > 1e-13*(1+math.Abs(want)) {
			t.Errorf("shape %v (zeros %v), entry %d: %v, definition %v", shape, zeros, o, got[o], want)
		}
	}
}

// kronMul's stages split over two goroutines (by blocks, or within the single block of
// the stage on party 0) give the serial stages' result bit for bit: products that grow
// (4×2 factors, 2^9 → 4^9), shrink (2×4) and keep (2×2, 2^16) the vector.
func TestKronMulSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for _, c := range []struct{ k, rows, cols int }{{9, 4, 2}, {9, 2, 4}, {16, 2, 2}} {
		m := make([][]float64, c.k)
		rows, cols := make([]int, c.k), make([]int, c.k)
		nIn, nOut := 1, 1
		for i := range m {
			m[i] = make([]float64, c.rows*c.cols)
			for j := range m[i] {
				m[i][j] = r.Float64()
			}
			rows[i], cols[i] = c.rows, c.cols
			nIn, nOut = nIn*c.cols, nOut*c.rows
		}
		src := make([]float64, nIn)
		for i := range src {
			src[i] = r.NormFloat64()
		}
		n := max(nIn, nOut)
		split := slices.Clone(kronMul(m, rows, cols, src, make([]float64, n), make([]float64, n)))
		saved := kronSplitWork
		kronSplitWork = math.MaxInt
		serial := kronMul(m, rows, cols, src, make([]float64, n), make([]float64, n))
		kronSplitWork = saved
		if !slices.Equal(split, serial) {
			t.Errorf("%d factors %d×%d: the split stages differ from the serial ones", c.k, c.rows, c.cols)
		}
	}
}

// The interior point stage alone (from the uniform prior and the random rule) against
// the direct simplex method on the whole program, δ = 0, unequal ε, random functions
// and majority with two outputs, k = 4…8 (k ≤ 6 under -short): the certified intervals
// must overlap and the interior point one be narrower than 2e-5 (measured: below 1e-9
// at k ≤ 6, 4e-6 and 7e-6 for the random tables of 8 parties, where the crossover's
// prior is not yet the optimal one); its rule and prior are re-evaluated by enumerating
// every transcript (1e-12 absolute).
func TestInteriorPointAgainstDirect(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for _, k := range []int{4, 6, 8} {
		if testing.Short() && k > 6 {
			continue
		}
		eps := make([]float64, k)
		for i := range eps {
			eps[i] = 0.3 + 1.5*r.Float64()
		}
		pr := mustProtocol(t, eps, nil)
		for _, f := range []Function{randomFunction(r, k, 2), randomFunction(r, k, 2), Majority(k)} {
			tab, _ := f.table(k)
			g := newKronGame(pr, tab, 2)
			cert, accBuf, scBuf := uniformCertificate(g)
			ipmCertify(g, &cert, accBuf, scBuf)
			direct := solveGame(g, nil, nil)
			if cert.upper-cert.lower > 2e-5 || cert.lower > direct.upper+1e-12 || direct.lower > cert.upper+1e-12 {
				t.Errorf("k=%d %s: interior point [%.13g, %.13g], direct [%.13g, %.13g]",
					k, f.Name, cert.lower, cert.upper, direct.lower, direct.upper)
			}
			lo, up := bruteBounds(pr, tab, 2, cert.q, cert.pi)
			if math.Abs(lo-cert.lower) > 1e-12 || math.Abs(up-cert.upper) > 1e-12 {
				t.Errorf("k=%d %s: certificate [%.15g, %.15g], enumeration [%.15g, %.15g]", k, f.Name, cert.lower, cert.upper, lo, up)
			}
		}
	}
}

// The interior point stage with exact Newton solves (ipmDirect: Cholesky factors of the
// 2^k × 2^k Woodbury matrix) on protocols with 0 < δ_i < 1, some δ_i = 0 mixed in,
// followed by row and column generation from its certificate (the path WorstCaseAccuracy
// takes for two-output programs with 4^k transcripts), against the direct simplex method
// on the whole program: the certified intervals must overlap, the interior point one be
// narrower than 1e-4 and the final one than 1e-9; the final rule and prior are
// re-evaluated by enumerating every transcript (1e-12 absolute). Majority and random
// tables, k = 3–5 (and 6 without -short).
func TestInteriorPointDirectWithDelta(t *testing.T) {
	forDeltaGames(t, rand.New(rand.NewPCG(63, 64)), 0.02, func(k int, name string, g *kronGame) certificate {
		cert, accBuf, scBuf := uniformCertificate(g)
		ipmCertify(g, &cert, accBuf, scBuf)
		ipmLo, ipmUp := cert.lower, cert.upper
		generate(g, &cert, genIPMCols)
		finalize(g, &cert, accBuf, scBuf)
		direct := solveGame(g, nil, nil)
		if ipmUp-ipmLo > 1e-4 || cert.upper-cert.lower > 1e-9 || cert.lower > direct.upper+1e-12 || direct.lower > cert.upper+1e-12 ||
			ipmLo > direct.upper+1e-12 || direct.lower > ipmUp+1e-12 {
			t.Errorf("k=%d %s: interior point [%.13g, %.13g], then generation [%.13g, %.13g], direct [%.13g, %.13g]",
				k, name, ipmLo, ipmUp, cert.lower, cert.upper, direct.lower, direct.upper)
		}
		return cert
	})
}

// forDeltaGames runs solve on the two-output programs of protocols of k = 3–6 parties
// (k ≤ 5 under -short) with random ε_i ∈ [0.3, 1.8] and δ_i ∈ [deltaMin, deltaMin + 0.2]
// but party 1 at δ = 0, for the majority and two random tables each, and checks the
// certificate solve returns by enumerating every transcript (bruteBounds, 1e-12
// absolute).
func forDeltaGames(t *testing.T, r *rand.Rand, deltaMin float64, solve func(k int, name string, g *kronGame) certificate) {
	t.Helper()
	for _, k := range []int{3, 4, 5, 6} {
		if testing.Short() && k > 5 {
			continue
		}
		eps, delta := make([]float64, k), make([]float64, k)
		for i := range eps {
			eps[i] = 0.3 + 1.5*r.Float64()
			if i != 1 {
				delta[i] = deltaMin + 0.2*r.Float64()
			}
		}
		pr := mustProtocol(t, eps, delta)
		for _, f := range []Function{Majority(k), randomFunction(r, k, 2), randomFunction(r, k, 2)} {
			tab, _ := f.table(k)
			cert := solve(k, f.Name, newKronGame(pr, tab, 2))
			lo, up := bruteBounds(pr, tab, 2, cert.q, cert.pi)
			if math.Abs(lo-cert.lower) > 1e-12 || math.Abs(up-cert.upper) > 1e-12 {
				t.Errorf("k=%d %s: certificate [%.15g, %.15g], enumeration [%.15g, %.15g]", k, f.Name, cert.lower, cert.upper, lo, up)
			}
		}
	}
}

// ipmDirect's Woodbury and Sherman–Morrison solve against the operator it inverts,
// applied through the game's Kronecker products: (Aᵀ D₁ A + D₂ − b bᵀ/c) dv = r for
// random positive D₁, D₂, random b, r and c > bᵀ K⁻¹ b (so that the operator is
// positive definite), parties with δ = 0, 0 < δ < 1 and δ = 1 mixed; 1e-9 relative.
func TestIPMDirectSolve(t *testing.T) {
	r := rand.New(rand.NewPCG(65, 66))
	pr := mustProtocol(t, []float64{0.4, 1.2, 2, 0.8}, []float64{0.1, 0, 1, 0.3})
	tab := make([]int, 16)
	for x := range tab {
		tab[x] = r.IntN(2)
	}
	kg := newKronGame(pr, tab, 2)
	g := newIPMGame(kg)
	d := newIPMDirect(g)
	nx, nt := g.nx, g.nt
	d1, d2, b, rhs := make([]float64, nx), make([]float64, nt), make([]float64, nt), make([]float64, nt)
	for x := range d1 {
		d1[x] = math.Exp(4 * r.NormFloat64())
	}
	for j := range d2 {
		d2[j] = math.Exp(4*r.NormFloat64()) + 1e-3
		b[j], rhs[j] = r.NormFloat64(), r.NormFloat64()
	}
	d.factor(d1, d2, b, 1)
	if !d.ok {
		t.Fatal("factorization failed")
	}
	c := 2 * (d.bkb + 1) // positive definite: c > bᵀ K⁻¹ b
	d.factor(d1, d2, b, c)
	dv := make([]float64, nt)
	d.solve(b, rhs, dv)
	// y = Aᵀ D₁ A dv + D₂ dv − b (bᵀ dv)/c: the operator the conjugate gradients apply.
	y := make([]float64, nt)
	g.newtonMul(d1, d2, b, c, dv, y, make([]float64, nx))
	norm := 0.0
	for j := range y {
		norm = max(norm, math.Abs(rhs[j]))
	}
	for j := range y {
		if math.Abs(y[j]-rhs[j]) > 1e-9*norm {
			t.Errorf("row %d: operator gives %.15g, right side %.15g", j, y[j], rhs[j])
		}
	}
}

// uniformCertificate returns the certificate of the uniform prior and the rule answering
// each of two outputs with probability ½ (where the interior point stage starts in these
// tests), with the buffers its evaluation needs.
func uniformCertificate(g *kronGame) (cert certificate, accBuf, scBuf []float64) {
	nx, nt, _ := g.size()
	cert = certificate{pi: make([]float64, nx), q: make([]float64, 2*nt)}
	for x := range cert.pi {
		cert.pi[x] = 1 / float64(nx)
	}
	for i := range cert.q {
		cert.q[i] = 0.5
	}
	accBuf, scBuf = make([]float64, nx), make([]float64, 2*nt)
	cert.lower, cert.upper = lowerBound(g, cert.q, accBuf), upperBound(g, cert.pi, scBuf)
	return cert, accBuf, scBuf
}

// BenchmarkKronMul: the products of the largest games, 2^12 → 2^12 by 2 × 2 factors
// (δ = 0) and 2^12 → 4^12 by 4 × 2 factors with zeros (revealed symbols, δ > 0).
func BenchmarkKronMul(b *testing.B) {
	r := rand.New(rand.NewPCG(55, 56))
	for _, c := range []struct {
		name string
		rows int
	}{{"2x2", 2}, {"4x2", 4}} {
		const k = 12
		m := make([][]float64, k)
		rows, two := make([]int, k), make([]int, k)
		n := 1
		for i := range m {
			m[i] = make([]float64, 2*c.rows)
			for j := range m[i] {
				m[i][j] = r.Float64()
			}
			if c.rows == 4 {
				m[i][1], m[i][6] = 0, 0 // P(revealed 0 | 1) = P(revealed 1 | 0) = 0
			}
			rows[i], two[i] = c.rows, 2
			n *= c.rows
		}
		src, a, d := make([]float64, 1<<k), make([]float64, n), make([]float64, n)
		for i := range src {
			src[i] = r.Float64()
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				kronMul(m, rows, two, src, a, d)
			}
		})
	}
}
