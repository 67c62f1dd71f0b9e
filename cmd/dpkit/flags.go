package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

// The flag values below check their range when set, so a bad value is reported with the
// flag's name before any work is done, and record whether the flag was given at all
// (several commands take exactly one of two flags).

// floatFlag is a float64 flag whose value must pass check (dpkit.CheckEpsilon,
// dpkit.CheckDelta, …).
type floatFlag struct {
	value float64
	set   bool
	check func(name string, v float64) error
}

func epsilonFlag() *floatFlag   { return &floatFlag{check: dpkit.CheckEpsilon} }
func deltaFlag() *floatFlag     { return &floatFlag{check: dpkit.CheckDelta} }
func toleranceFlag() *floatFlag { return &floatFlag{check: checkTolerance} }

func (f *floatFlag) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		v = math.NaN() // unparsable: reported with the valid range, as NaN would be
	}
	if err := f.check("", v); err != nil {
		return wantOf(err)
	}
	f.value, f.set = v, true
	return nil
}

func (f *floatFlag) String() string { return strconv.FormatFloat(f.value, 'g', -1, 64) }
func (f *floatFlag) Type() string   { return "float" }

// checkTolerance accepts compose.Options.Tolerance values: in (0, 1).
func checkTolerance(name string, v float64) error {
	if math.IsNaN(v) || v <= 0 || v >= 1 {
		return &dpkit.ParamError{Name: name, Value: v, Want: "in (0, 1)"}
	}
	return nil
}

// countFlag is a number of releases: an integer in [1, compose.MaxCount], written in
// decimal or in exponent form (1e9), as everywhere a count is read.
type countFlag struct {
	value int64
	set   bool
}

func (f *countFlag) Set(s string) error {
	k, err := parseCount("", s)
	if err != nil {
		return wantOf(err)
	}
	f.value, f.set = k, true
	return nil
}

func (f *countFlag) String() string { return strconv.FormatInt(f.value, 10) }
func (f *countFlag) Type() string   { return "int" }

// parseCount reads a count: an integer in [1, compose.MaxCount] written in decimal
// ("1000000") or in decimal exponent form exactly an integer ("1e9", "2.5e3"), the syntax
// every count of the CLI accepts (--mech's COUNT, --k, --releases, --steps, --every and
// --mechanism's count=). An out-of-range integer is reported with its value, text that
// is no integer with the text quoted; both as a *dpkit.ParamError called name.
func parseCount(name, s string) (int64, error) {
	text := strings.TrimSpace(s)
	k, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		// Decimal exponent form only: no Go literal syntax (1_000, 0x10), no inf.
		notDecimal := strings.ContainsFunc(text, func(r rune) bool { return !strings.ContainsRune("0123456789.eE+-", r) })
		x, ferr := strconv.ParseFloat(text, 64)
		if notDecimal {
			ferr = strconv.ErrSyntax
		}
		if ferr != nil || x != math.Trunc(x) || x < 1 || x > float64(compose.MaxCount) {
			return 0, &dpkit.ParamError{Name: name, Value: text, Want: fmt.Sprintf("an integer in [1, %d]", int64(compose.MaxCount))}
		}
		k = int64(x)
	}
	if err := dpkit.CheckCount(name, k, compose.MaxCount); err != nil {
		return 0, err
	}
	return k, nil
}

// theoremFlag is a composition theorem, or "all" of them.
type theoremFlag struct {
	theorem compose.Theorem
	all     bool
}

func (f *theoremFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	if s == "all" {
		f.theorem, f.all = "", true
		return nil
	}
	th, err := compose.ParseTheorem(s)
	if err != nil {
		return errors.New("want one of exact, kov, drv, basic, all")
	}
	f.theorem, f.all = th, false
	return nil
}

func (f *theoremFlag) String() string {
	if f.all {
		return "all"
	}
	return string(f.theorem)
}

func (f *theoremFlag) Type() string { return "theorem" }

// allTheorems is the order of "--theorem all" in every report (part of the CLI
// contract): loosest to tightest.
var allTheorems = []compose.Theorem{compose.Basic, compose.DRV, compose.KOV, compose.Exact}

// theorems returns the theorems to evaluate, in the order reports show them.
func (f *theoremFlag) theorems() []compose.Theorem {
	if f.all {
		return allTheorems
	}
	return []compose.Theorem{f.theorem}
}

// wantOf reduces a *dpkit.ParamError about a flag's value to "want RANGE": the flag's
// name and the value given are printed around it by flagError.
func wantOf(err error) error {
	var param *dpkit.ParamError
	if errors.As(err, &param) {
		return errors.New("want " + param.Want)
	}
	return err
}
