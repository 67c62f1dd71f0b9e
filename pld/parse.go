package pld

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpkit/dpkit"
)

// MechanismSyntax describes the text form of a mechanism read by ParseMechanism.
const MechanismSyntax = "KIND:key=value,… (KIND gaussian, laplace, geometric, rr, exponential, subsampled-gaussian, subsampled-laplace)"

// mechanismKeys lists, per KIND, the keys it takes; "count" and "sensitivity" are optional
// (default 1) everywhere they apply.
var mechanismKeys = map[string][]string{
	"gaussian":            {"sigma", "sensitivity", "count"},
	"laplace":             {"scale", "sensitivity", "count"},
	"geometric":           {"eps", "scale", "sensitivity", "count"},
	"rr":                  {"eps", "k", "count"},
	"exponential":         {"eps", "count"},
	"subsampled-gaussian": {"sigma", "q", "sensitivity", "count"},
	"subsampled-laplace":  {"scale", "q", "sensitivity", "count"},
}

// textKeys maps the parameter names of the mechanisms' Validate errors to the keys of
// the text form.
var textKeys = map[string]string{"epsilon": "eps", "categories": "k", "rate": "q"}

// ParseMechanism reads the text form KIND:key=value,… of a mechanism released count
// times (the CLI's --mechanism and the ledger's mechanism descriptions), e.g.
// "gaussian:sigma=100,sensitivity=1,count=10000". KIND is one of gaussian (sigma),
// laplace (scale), geometric (eps or scale), rr (eps, k), exponential (eps),
// subsampled-gaussian (sigma, q) and subsampled-laplace (scale, q); sensitivity and
// count are optional, default 1. Errors name the offending key and its valid range.
func ParseMechanism(s string) (Item, error) {
	kind, rest, _ := strings.Cut(strings.TrimSpace(s), ":")
	kind = strings.ToLower(strings.TrimSpace(kind))
	allowed, ok := mechanismKeys[kind]
	if !ok {
		return Item{}, fmt.Errorf("unknown mechanism %q: want %s", kind, MechanismSyntax)
	}
	vals := map[string]float64{}
	for _, kv := range strings.Split(rest, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, found := strings.Cut(kv, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !found || !slices.Contains(allowed, k) {
			return Item{}, fmt.Errorf("%s: unknown key %q: want key=value with key one of %s", kind, kv, strings.Join(allowed, ", "))
		}
		if _, dup := vals[k]; dup {
			return Item{}, fmt.Errorf("%s: key %q given twice", kind, k)
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return Item{}, fmt.Errorf("%s: %s = %q: want a finite number", kind, k, v)
		}
		vals[k] = x
	}
	get := func(k string, def float64) float64 {
		if v, ok := vals[k]; ok {
			return v
		}
		return def
	}
	need := func(keys ...string) error {
		for _, k := range keys {
			if _, ok := vals[k]; !ok {
				return fmt.Errorf("%s: missing %s=…", kind, k)
			}
		}
		return nil
	}
	count := get("count", 1)
	if count < 1 || count > float64(MaxCount) || count != math.Trunc(count) {
		return Item{}, fmt.Errorf("%s: count = %g: want an integer in [1, 10^12]", kind, count)
	}
	m, err := buildMechanism(kind, vals, get("sensitivity", 1), need)
	if err != nil {
		return Item{}, err
	}
	if err := m.Validate(); err != nil {
		var pe *dpkit.ParamError
		if errors.As(err, &pe) { // name the key as the text form spells it
			name := pe.Name
			if k, ok := textKeys[name]; ok {
				name = k
			}
			return Item{}, fmt.Errorf("%s: %s = %v: want %s", kind, name, pe.Value, pe.Want)
		}
		return Item{}, err
	}
	return Item{Mechanism: m, Count: int64(count)}, nil
}

// buildMechanism returns the mechanism of kind from its parsed keys (sens: the
// sensitivity, default 1; need reports a missing key).
func buildMechanism(kind string, vals map[string]float64, sens float64, need func(keys ...string) error) (Mechanism, error) {
	var m Mechanism
	switch kind {
	case "gaussian":
		if err := need("sigma"); err != nil {
			return nil, err
		}
		m = Gaussian{Sigma: vals["sigma"], Sensitivity: sens}
	case "laplace":
		if err := need("scale"); err != nil {
			return nil, err
		}
		m = Laplace{Scale: vals["scale"], Sensitivity: sens}
	case "geometric":
		_, hasEps := vals["eps"]
		_, hasScale := vals["scale"]
		if hasEps == hasScale {
			return nil, fmt.Errorf("geometric: give exactly one of eps=… (per unit of sensitivity) and scale=…")
		}
		if sens != math.Trunc(sens) {
			return nil, fmt.Errorf("geometric: sensitivity = %g: want an integer", sens)
		}
		scale := vals["scale"]
		if hasEps {
			if vals["eps"] <= 0 {
				return nil, fmt.Errorf("geometric: eps = %g: want a number > 0", vals["eps"])
			}
			scale = 1 / vals["eps"]
		}
		m = DiscreteLaplace{Scale: scale, Sensitivity: int64(sens)}
	case "rr":
		if err := need("eps", "k"); err != nil {
			return nil, err
		}
		if vals["k"] != math.Trunc(vals["k"]) || vals["k"] > 1<<30 {
			return nil, fmt.Errorf("rr: k = %g: want an integer in [2, 2^30]", vals["k"])
		}
		m = RandomizedResponse{Epsilon: vals["eps"], K: int(vals["k"])}
	case "exponential":
		if err := need("eps"); err != nil {
			return nil, err
		}
		m = Exponential{Epsilon: vals["eps"]}
	case "subsampled-gaussian":
		if err := need("sigma", "q"); err != nil {
			return nil, err
		}
		m = PoissonSubsampled{Base: Gaussian{Sigma: vals["sigma"], Sensitivity: sens}, Rate: vals["q"]}
	case "subsampled-laplace":
		if err := need("scale", "q"); err != nil {
			return nil, err
		}
		m = PoissonSubsampled{Base: Laplace{Scale: vals["scale"], Sensitivity: sens}, Rate: vals["q"]}
	}
	return m, nil
}
