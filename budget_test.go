package dpkit

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestBudgetValidate(t *testing.T) {
	good := []Budget{{0, 0}, {1, 1e-6}, {100, 1}, {0.5, 0}}
	for _, b := range good {
		if err := b.Validate(); err != nil {
			t.Errorf("%v: unexpected error %v", b, err)
		}
	}
	bad := []struct {
		b    Budget
		name string
	}{
		{Budget{math.NaN(), 0}, "epsilon"},
		{Budget{-1, 0}, "epsilon"},
		{Budget{math.Inf(1), 0}, "epsilon"},
		{Budget{1, math.NaN()}, "delta"},
		{Budget{1, -1e-9}, "delta"},
		{Budget{1, 1.5}, "delta"},
	}
	for _, c := range bad {
		err := c.b.Validate()
		var pe *ParamError
		if !errors.As(err, &pe) {
			t.Fatalf("%v: want *ParamError, got %v", c.b, err)
		}
		if pe.Name != c.name || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%v: error %q does not name %q", c.b, err, c.name)
		}
	}
}

func TestCheckCount(t *testing.T) {
	if err := CheckCount("count", 0, 10); err == nil {
		t.Error("count 0 accepted")
	}
	if err := CheckCount("count", 11, 10); err == nil {
		t.Error("count above max accepted")
	}
	if err := CheckCount("count", 10, 10); err != nil {
		t.Error(err)
	}
}

func TestInfeasibleIs(t *testing.T) {
	err := error(&InfeasibleError{Msg: "delta below floor"})
	if !errors.Is(err, ErrInfeasible) {
		t.Fatal("InfeasibleError does not match ErrInfeasible")
	}
}

func TestParamErrorMessage(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&ParamError{Name: "delta", Value: 1.5, Want: "in [0, 1]"}, "dpkit: invalid delta = 1.5: want in [0, 1]"},
		{&ParamError{Pkg: "mechanism", Name: "epsilon", Value: 0.03, Want: "> 0"}, "mechanism: invalid epsilon = 0.03: want > 0"},
		{&ParamError{Pkg: "query", Name: "columns[salary].min", Want: "a number"}, "query: missing columns[salary].min: want a number"},
		{&ParamError{Name: "name", Value: "", Want: "a name"}, `dpkit: invalid name = "": want a name`},
		{InPackage("pld", CheckDelta("delta", 2)), "pld: invalid delta = 2: want in [0, 1]"},
		{InPackage("pld", &ParamError{Pkg: "noise", Name: "rate", Value: 0.1, Want: "x"}), "noise: invalid rate = 0.1: want x"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	if InPackage("pld", nil) != nil {
		t.Error("InPackage(nil) != nil")
	}
	// 0.1+0.2 prints in its shortest round-trip form, not with 17 digits.
	a, b := 0.1, 0.2
	if got := FormatValue(a + b); got != "0.30000000000000004" {
		t.Errorf("FormatValue(0.1+0.2) = %q", got)
	}
	if got := FormatValue(0.03); got != "0.03" {
		t.Errorf("FormatValue(0.03) = %q", got)
	}
}
