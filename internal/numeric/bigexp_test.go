package numeric

import (
	"math/big"
	"testing"
)

// ExpBig against 50-digit values computed with mpmath 1.3.0 (mp.dps = 60, exp(mpf(x))
// of the float64 x): relative error below 2^−150.
func TestExpBig(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{1, "2.7182818284590452353602874713526624977572470937"},
		{0.01, "1.0100501670841680577524243853134843697312438993181"},
		{-30, "0.000000000000093576229688401746049158322233787067449583226889359"},
		{1e-6, "1.0000010000005000001666214563999156421266758003621"},
		{700, "1.0142320547350045094553295952312676152046795722431e+304"},
		{2.5, "12.182493960703473438070175951167966183182767790063"},
	} {
		want, _, err := big.ParseFloat(c.want, 10, 200, big.ToNearestEven)
		if err != nil {
			t.Fatal(err)
		}
		got := ExpBig(c.x, 180)
		diff := new(big.Float).Sub(got, want)
		rel, _ := new(big.Float).Quo(diff, want).Float64()
		if rel > 0x1p-150 || rel < -0x1p-150 {
			t.Errorf("ExpBig(%g) = %s, want %s (relative error %g)", c.x, got.Text('g', 50), c.want, rel)
		}
	}
}
