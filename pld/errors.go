package pld

import (
	"fmt"

	"github.com/dpkit/dpkit"
)

// paramErr reports an invalid parameter of package pld by its user-facing name.
func paramErr(name string, v any, want string) error {
	return &dpkit.ParamError{Pkg: "pld", Name: name, Value: v, Want: want}
}

// positive reports v unless it is finite and > 0.
func positive(name string, v float64) error {
	return dpkit.InPackage("pld", dpkit.CheckPositive(name, v))
}

// InternalError is a bug in package pld met during a composition: a panic in one of its
// goroutines (a convolution worker) or in the caller's, recovered and returned instead
// of crashing the program (a panic in a worker goroutine cannot be recovered by the
// caller). Value is what was raised and Stack the stack of the goroutine that raised it.
type InternalError struct {
	Value any
	Stack []byte
}

func (e *InternalError) Error() string {
	return fmt.Sprintf("pld: internal error: %v (please report it, with the command or call that caused it)", e.Value)
}
