package pld

import "github.com/dpkit/dpkit"

// paramErr reports an invalid parameter of package pld by its user-facing name.
func paramErr(name string, v any, want string) error {
	return &dpkit.ParamError{Pkg: "pld", Name: name, Value: v, Want: want}
}

// positive reports v unless it is finite and > 0.
func positive(name string, v float64) error {
	return dpkit.InPackage("pld", dpkit.CheckPositive(name, v))
}
