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
