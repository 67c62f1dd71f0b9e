package numeric

import (
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// LogNormCDF against 25-digit values of ln Φ(x) computed with mpmath 1.3.0 (mp.dps = 40,
// log(ncdf(mpf(x)))), across both sides of the switch to the series at x = −37, to the
// stated bound 8u + 4u(x² + 1) (absolute).
func TestLogNormCDF(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{
		{-0.5, -1.175911761593618608879729},
		{-5, -15.0649983939887257360837},
		{-20, -203.9171553710972639368045},
		{-36.9, -685.3328831653506121583552},
		{-37, -689.0305855768905936008722},
		{-38.3, -738.0100689858187101537917},
		{-50, -1254.831361139419901254133},
		{-1000, -500007.8266948121843098062},
		{3, -0.00135080996474819379884111},
	} {
		got := LogNormCDF(c.x)
		bound := 8*u + 4*u*(c.x*c.x+1)
		if !scalar.EqualWithinAbs(got, c.want, bound) {
			t.Errorf("LogNormCDF(%g) = %.17g, want %.17g (error %.3g > %.3g)", c.x, got, c.want, got-c.want, bound)
		}
	}
}

const u = 0x1p-53
