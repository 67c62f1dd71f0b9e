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
		return &dpkit.ParamError{Name: "beta", Value: beta, Want: "in (0, 1)"}
	}
	return nil
}

func checkEpsilonPositive(eps float64) error {
	if err := dpkit.CheckPositive("Epsilon", eps); err != nil {
		return err
	}
	return nil
}

func checkValue(name string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return &dpkit.ParamError{Name: name, Value: x, Want: "a finite number"}
	}
	return nil
}

func indexName(name string, i int) string { return fmt.Sprintf("%s[%d]", name, i) }
