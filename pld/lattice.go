package pld

import (
	"math"
	"math/bits"

	"gonum.org/v1/gonum/dsp/fourier"
)

// Lattice is a privacy-loss distribution supported on the grid H·(Offset + i):
// Mass[i] at loss H·(Offset+i), plus InfMass at +∞. Err bounds the total-variation
// distance between Mass and the exact lattice masses it stands for (accumulated
// floating-point error of FFT convolutions and of zeroing FFT noise): every δ(ε) read
// from Mass is within ±Err of the exact one, since 0 ≤ (1 − e^(ε−l))₊ ≤ 1.
type Lattice struct {
	H       float64
	Offset  int64
	Mass    []float64
	InfMass float64
	Err     float64
}

// Discrete returns the lattice as a Discrete bound: for upper, Err is added at +∞ (every
// δ(ε) rises by Err); for lower, it is subtracted (InfMass may then be negative, which
// only lowers every δ(ε) by Err). Losses are rounded outward by two ulps (covering the
// rounding of the spacing and of the atoms a spec places on grid points).
func (l *Lattice) Discrete(upper bool) *Discrete {
	d := &Discrete{}
	dir := math.Inf(-1)
	if upper {
		dir = math.Inf(1)
	}
	for i, m := range l.Mass {
		if m <= 0 {
			continue
		}
		d.Loss = append(d.Loss, math.Nextafter(math.Nextafter(l.H*float64(l.Offset+int64(i)), dir), dir))
		d.Mass = append(d.Mass, m)
	}
	if upper {
		d.InfMass = l.InfMass + l.Err
	} else {
		d.InfMass = l.InfMass - l.Err
	}
	return d
}

// CanonicalLattice returns the k-fold composition of the canonical (ε', δ) pair on the
// lattice of spacing h, conditioned on no δ-event, where ε' = n·h is ε rounded up to the
// lattice (upper = true) or down (upper = false). Rounding ε up is sound because an
// (ε, δ)-DP mechanism is (ε', δ)-DP for every ε' ≥ ε, so the canonical pair of ε'
// dominates that of ε (KOV Thm 2.4); rounding down gives a composition the optimum is at
// least as large as. Binomial tails beyond e^(−TailCoarse) of the mode are moved to the
// lowest bin and to +∞ (upper) or dropped (lower).
func CanonicalLattice(eps float64, k int64, h float64, upper bool) *Lattice {
	var n int64
	if upper {
		n = int64(math.Ceil(eps / h))
	} else {
		n = int64(math.Floor(eps / h))
	}
	if n == 0 {
		return &Lattice{H: h, Offset: 0, Mass: []float64{1}}
	}
	w := newBinomialWindow(float64(n)*h, k, TailCoarse)
	lo := int64(w.lo)
	l := &Lattice{H: h, Offset: (2*lo - k) * n}
	span := int64(len(w.mass)-1)*2*n + 1
	l.Mass = make([]float64, span)
	f := 1 - w.relErr
	if upper {
		f = 1 + w.relErr
	}
	for i, m := range w.mass {
		l.Mass[int64(i)*2*n] = m * f
	}
	if upper {
		l.Mass[0] += w.lowTail * f
		l.InfMass = w.highTail * f
	}
	return l
}

// Convolve returns the distribution of the sum of independent losses from a and b, which
// must share H. Small or sparse inputs are convolved directly (non-negative products,
// one rounding each); large ones by real FFT, whose error obeys
//
//	‖ĉ − c‖₂ ≤ 3·η·log₂N·(‖a‖₂‖b‖₁ + ‖a‖₁‖b‖₂ + ‖a‖₂‖b‖₂),  η = 7u
//
// (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., Thm 24.2 for each of
// the two forward and the inverse transform, with twiddle factors accurate to u; the
// pointwise product adds 3u‖a‖₂‖b‖₁; the second-order term is below the last summand for
// N ≤ 2^40), so the total-variation error of the transform is at most √size times the
// bound. Results at or below the bound (noise, or negative) are then set to 0, which
// moves the distribution by exactly the sum Z of their magnitudes; Err grows by
// √size·bound + Z. With upper = false the rest is the same; the sign of the correction is
// applied by Discrete.
func Convolve(a, b *Lattice) *Lattice {
	aTot, bTot := total(a.Mass), total(b.Mass)
	out := &Lattice{
		H:       a.H,
		Offset:  a.Offset + b.Offset,
		InfMass: a.InfMass*(b.InfMass+bTot) + aTot*b.InfMass,
		Err:     a.Err*(bTot+b.InfMass) + b.Err*(aTot+a.InfMass) + a.Err*b.Err,
	}
	na, nb := len(a.Mass), len(b.Mass)
	size := na + nb - 1
	nzA, nzB := nonzero(a.Mass), nonzero(b.Mass)
	nfft := 1 << bits.Len(uint(size-1))
	logN := float64(bits.Len(uint(nfft)))
	if float64(len(nzA))*float64(len(nzB)) <= 12*float64(nfft)*logN {
		out.Mass = make([]float64, size)
		for _, i := range nzA {
			ai := a.Mass[i]
			for _, j := range nzB {
				out.Mass[i+j] += ai * b.Mass[j]
			}
		}
		return out
	}
	fft := fourier.NewFFT(nfft)
	pa := make([]float64, nfft)
	copy(pa, a.Mass)
	pb := make([]float64, nfft)
	copy(pb, b.Mass)
	ca := fft.Coefficients(nil, pa)
	cb := fft.Coefficients(nil, pb)
	for i := range ca {
		ca[i] *= cb[i]
	}
	res := fft.Sequence(pa, ca)
	const u = 0x1p-53
	bound := 3 * 7 * u * logN * (norm2(a.Mass)*bTot + aTot*norm2(b.Mass) + norm2(a.Mass)*norm2(b.Mass))
	scale := 1 / float64(nfft)
	out.Mass = make([]float64, size)
	zeroed := 0.0
	for i := 0; i < size; i++ {
		v := res[i] * scale
		if v <= bound {
			zeroed += math.Abs(v)
			v = 0
		}
		out.Mass[i] = v
	}
	out.Err += bound*math.Sqrt(float64(size)) + zeroed
	return out
}

// Trim removes leading and trailing bins holding at most eta of mass in total on each
// side: for upper, the low tail is added to the first kept bin and the high tail to
// InfMass (δ(ε) can only rise); for lower, both are dropped (δ(ε) can only fall).
func (l *Lattice) Trim(eta float64, upper bool) {
	lo, acc := 0, 0.0
	for lo < len(l.Mass)-1 && acc+l.Mass[lo] <= eta {
		acc += l.Mass[lo]
		lo++
	}
	lowTail := acc
	hi := len(l.Mass) - 1
	acc = 0
	for hi > lo && acc+l.Mass[hi] <= eta {
		acc += l.Mass[hi]
		hi--
	}
	highTail := acc
	l.Mass = l.Mass[lo : hi+1]
	l.Offset += int64(lo)
	if upper {
		l.Mass[0] += lowTail
		l.InfMass += highTail
	}
}

func nonzero(m []float64) []int {
	var idx []int
	for i, v := range m {
		if v != 0 {
			idx = append(idx, i)
		}
	}
	return idx
}

func norm2(m []float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v * v
	}
	return math.Sqrt(s)
}
