package numeric

import (
	"math"
	"math/big"
)

// ln2 is ln 2 to 64 significant digits (mpmath 1.3.0, mp.dps = 64).
const ln2 = "0.6931471805599453094172321214581765680755001343602552541206799777"

// ExpBig returns e^x to prec bits (prec ≤ 200), for |x| ≤ 1000: x = k·ln 2 + r with
// |r| ≤ ½ ln 2, e^r by its Taylor series (terms kept while above 2^−(prec+16) of the
// sum), times 2^k. The error is below 2^−prec relative. It is for the few constants whose
// float64 rounding must itself be known to high precision (the binomial masses of
// compose, see pld's binomial window), not for bulk work.
func ExpBig(x float64, prec uint) *big.Float {
	work := prec + 32
	l2, _, _ := big.ParseFloat(ln2, 10, work, big.ToNearestEven)
	k := math.Round(x / math.Ln2)
	r := new(big.Float).SetPrec(work).SetFloat64(x)
	r.Sub(r, new(big.Float).SetPrec(work).Mul(l2, new(big.Float).SetFloat64(k)))
	sum := new(big.Float).SetPrec(work).SetInt64(1)
	term := new(big.Float).SetPrec(work).SetInt64(1)
	eps := new(big.Float).SetMantExp(big.NewFloat(1), -int(prec)-16)
	for i := int64(1); i < 200; i++ {
		term.Mul(term, r)
		term.Quo(term, new(big.Float).SetInt64(i))
		sum.Add(sum, term)
		if new(big.Float).Abs(term).Cmp(eps) < 0 {
			break
		}
	}
	sum.SetMantExp(sum, int(k))
	return sum.SetPrec(prec)
}
