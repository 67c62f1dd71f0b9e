package pld

import "github.com/dpkit/dpkit"

func paramErr(name string, v any, want string) error {
	return &dpkit.ParamError{Name: "pld: " + name, Value: v, Want: want}
}
