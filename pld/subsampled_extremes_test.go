package pld

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/dpkit/dpkit/internal/testenv"
)

// Tolerances against testdata/subsampled_extremes_{laplace,gaussian}.json (60-digit references from
// testdata/gen_subsampled_extremes.py): Compose with its default options (adaptive, aiming
// for DefaultTolerance, as `dpkit compose` runs it) must return a bracket that holds the
// reference up to refSlack (soundness: the upper end is never below the truth), whose upper
// end is within extremesRelTol of the reference, relative to it. The adaptive default aims
// for a width of DefaultTolerance but stops refining when a round stops paying (see
// Options.Tolerance); at δ ≈ 2e-6 next to a subsampled Laplace's largest loss it stops at
// a width of ≈ 2e-5, hence 1e-4 here. For δ far in the tail after two releases it stops
// wider (extremesTailTol): ≈ 1.2e-3 for Laplace at δ ≈ 4e-7 next to the largest loss,
// and 2.6e-2 (upper 1.0e-2 above the truth) for the Gaussian at q = 0.999, δ ≈ 1e-30 —
// sound but loose, a known limit of the adaptive default (issue 24 item 3).
const (
	extremesRelTol  = 1e-4
	extremesTailTol = 2e-2
)

// TestSubsampledExtremes checks Poisson-subsampled Laplace and Gaussian releases at rates
// q = 0.5 … 0.999, one and two releases, at δ down to 1e-30 (issue 24 item 7).
func TestSubsampledExtremes(t *testing.T) {
	var cases []refCase
	for _, file := range []string{"testdata/subsampled_extremes_laplace.json", "testdata/subsampled_extremes_gaussian.json"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Generator string    `json:"generator"`
			Mpmath    string    `json:"mpmath"`
			Digits    int       `json:"precision_digits"`
			Cases     []refCase `json:"cases"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Cases) == 0 || r.Digits < 40 {
			t.Fatalf("%s (%s): %d cases at %d digits", file, r.Generator, len(r.Cases), r.Digits)
		}
		cases = append(cases, r.Cases...)
	}
	for _, c := range cases {
		for _, tg := range c.Targets {
			name := fmt.Sprintf("%s/%s_%g", c.Name, tg.Kind, tg.Eps+tg.Delta)
			t.Run(name, func(t *testing.T) {
				if c.Count > 1 {
					testenv.Long(t) // seconds to minutes each
				}
				tail := tg.Kind == "delta_at_eps" && tg.Eps > 1
				if testing.Short() && (tail || tg.Delta < 1e-20 || c.Kind == "subsampled_gaussian" && c.Rate != 0.999) {
					t.Skip("seconds each: skipped under -short")
				}
				tol := extremesRelTol
				if tail && c.Count > 1 {
					tol = extremesTailTol
				}
				want, err := strconv.ParseFloat(tg.Want, 64)
				if err != nil {
					t.Fatal(err)
				}
				opts := &Options{Delta: tg.Delta}
				if tg.Kind == "delta_at_eps" {
					opts = &Options{Epsilon: tg.Eps}
				}
				start := time.Now()
				comp, err := Compose(c.items(), opts)
				if err != nil {
					t.Fatal(err)
				}
				var up, lo float64
				if tg.Kind == "delta_at_eps" {
					up, lo, err = comp.Delta(tg.Eps)
				} else {
					up, lo, err = comp.Epsilon(tg.Delta)
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("ref %.17g  bracket [%.17g, %.17g]  (up-ref)/ref %.3g  %v", want, lo, up, (up-want)/want, time.Since(start))
				checkRefBracket(t, tg.Kind, up, lo, want)
				// Soundness without slack: the upper end against the reference's 25 digits
				// (it was an ulp below at a subsampled Laplace's largest loss, whose float64
				// was rounded to nearest).
				if ref, _, err := big.ParseFloat(tg.Want, 10, 200, big.ToNearestEven); err != nil {
					t.Fatal(err)
				} else if new(big.Float).SetFloat64(up).Cmp(ref) < 0 {
					t.Errorf("upper %.17g is below the reference %s", up, tg.Want)
				}
				if want > 0 && (up-want)/want > tol {
					t.Errorf("upper %.17g: %.3g above the reference %.17g, relative, > %g", up, (up-want)/want, want, tol)
				}
			})
		}
	}
}
