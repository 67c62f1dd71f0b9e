package mechanism

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
)

// defaultSource is the shared secure source used when a release is given a nil source.
var defaultSource = noise.Secure()

func sourceOr(src noise.Source) noise.Source {
	if src == nil {
		return defaultSource
	}
	return src
}

func checkBeta(beta float64) error {
	if math.IsNaN(beta) || beta <= 0 || beta >= 1 {
		return perr("beta", beta, "in (0, 1)")
	}
	return nil
}

func checkEpsilonPositive(eps float64) error {
	if err := dpkit.InPackage("mechanism", dpkit.CheckPositive("epsilon", eps)); err != nil {
		return err
	}
	return nil
}

func checkValue(name string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return perr(name, x, "a finite number")
	}
	return nil
}

func indexName(name string, i int) string { return fmt.Sprintf("%s[%d]", name, i) }

// adder is a secure sampler that adds its noise to a value (noise.SecureLaplace,
// noise.SecureGaussian).
type adder interface {
	Add(src noise.Source, x float64) float64
}

// release adds a's noise to one finite value, for a mechanism of dimension 1.
func release(a adder, dim int, value float64, src noise.Source) (float64, error) {
	if dim != 1 {
		return 0, perr("value", value, "a vector of dimension coordinates (use ReleaseVector)")
	}
	if err := checkValue("value", value); err != nil {
		return 0, err
	}
	return a.Add(sourceOr(src), value), nil
}

// releaseVector adds independent noise from a to each of dim finite values.
func releaseVector(a adder, dim int, values []float64, src noise.Source) ([]float64, error) {
	if len(values) != dim {
		return nil, perr("values", len(values), "dimension coordinates")
	}
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) { // name built only on error (no allocation)
			return nil, checkValue(indexName("values", i), v)
		}
	}
	src = sourceOr(src)
	out := make([]float64, len(values))
	for i, v := range values {
		out[i] = a.Add(src, v)
	}
	return out, nil
}
