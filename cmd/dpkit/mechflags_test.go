package main

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

func TestParseMech(t *testing.T) {
	for _, c := range []struct {
		in   string
		want compose.Mech
	}{
		{"0.1", compose.Mech{Epsilon: 0.1, Delta: 0, Count: 1}},
		{"0.1,1e-6", compose.Mech{Epsilon: 0.1, Delta: 1e-6, Count: 1}},
		{"0.1,1e-6,1000", compose.Mech{Epsilon: 0.1, Delta: 1e-6, Count: 1000}},
		{" 1 , 0.001 , 30 ", compose.Mech{Epsilon: 1, Delta: 0.001, Count: 30}},
		{"\t2.5,\t0 ,7", compose.Mech{Epsilon: 2.5, Delta: 0, Count: 7}},
		{"0,0", compose.Mech{Epsilon: 0, Delta: 0, Count: 1}},
		{"0,1,1", compose.Mech{Epsilon: 0, Delta: 1, Count: 1}},
		{"-0,-0", compose.Mech{Epsilon: 0, Delta: 0, Count: 1}},
		{"1e-400", compose.Mech{Epsilon: 0, Delta: 0, Count: 1}}, // underflows to 0
		{"1E2,5e-1,+3", compose.Mech{Epsilon: 100, Delta: 0.5, Count: 3}},
		{"0.1,0,1000000000000", compose.Mech{Epsilon: 0.1, Delta: 0, Count: compose.MaxCount}},
		{"1e300,0,007", compose.Mech{Epsilon: 1e300, Delta: 0, Count: 7}},
		// Counts in exponent form, as --mechanism's count= and --k accept them (issue 25).
		{"0.1,0,1e9", compose.Mech{Epsilon: 0.1, Delta: 0, Count: 1_000_000_000}},
		{"0.1,0,2.5e3", compose.Mech{Epsilon: 0.1, Delta: 0, Count: 2500}},
		{"0.1,0,1e12", compose.Mech{Epsilon: 0.1, Delta: 0, Count: compose.MaxCount}},
		{"0.1,0,1E3", compose.Mech{Epsilon: 0.1, Delta: 0, Count: 1000}},
	} {
		got, err := parseMech(c.in)
		if err != nil || got != c.want || math.Signbit(got.Epsilon) || math.Signbit(got.Delta) {
			t.Errorf("parseMech(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestParseMechErrors(t *testing.T) {
	for _, c := range []struct {
		in, name, text string // the *dpkit.ParamError's Name, and its message after "dpkit: invalid "
	}{
		{"", "epsilon", `epsilon = "": want a finite number ≥ 0`},
		{"   ", "epsilon", `epsilon = "": want a finite number ≥ 0`},
		{"abc", "epsilon", `epsilon = "abc": want a finite number ≥ 0`},
		{"NaN", "epsilon", `epsilon = NaN: want a finite number ≥ 0`},
		{"nan,0,1", "epsilon", `epsilon = NaN: want a finite number ≥ 0`},
		{"inf", "epsilon", `epsilon = +Inf: want a finite number ≥ 0`},
		{"-Inf", "epsilon", `epsilon = -Inf: want a finite number ≥ 0`},
		{"1e400", "epsilon", `epsilon = "1e400": want a finite number ≥ 0`},
		{"-0.1", "epsilon", `epsilon = -0.1: want a finite number ≥ 0`},
		{",0,1", "epsilon", `epsilon = "": want a finite number ≥ 0`},
		{"0.1;0.001", "epsilon", `epsilon = "0.1;0.001": want a finite number ≥ 0`},
		{"0.1,", "delta", `delta = "": want in [0, 1]`},
		{"0.1,,3", "delta", `delta = "": want in [0, 1]`},
		{"0.1,2", "delta", `delta = 2: want in [0, 1]`},
		{"0.1,1.0000001", "delta", `delta = 1.0000001: want in [0, 1]`},
		{"0.1,-1e-9", "delta", `delta = -1e-09: want in [0, 1]`},
		{"0.1,nan", "delta", `delta = NaN: want in [0, 1]`},
		{"0.1,inf", "delta", `delta = +Inf: want in [0, 1]`},
		{"0.1,0.5x", "delta", `delta = "0.5x": want in [0, 1]`},
		{"0.1,0,", "count", `count = "": want an integer in [1, 1000000000000]`},
		{"0.1,0,0", "count", `count = 0: want an integer in [1, 1000000000000]`},
		{"0.1,0,-1", "count", `count = -1: want an integer in [1, 1000000000000]`},
		{"0.1,0,1.5", "count", `count = "1.5": want an integer in [1, 1000000000000]`},
		{"0.1,0,1e12.5", "count", `count = "1e12.5": want an integer in [1, 1000000000000]`},
		{"0.1,0,2.5e0", "count", `count = "2.5e0": want an integer in [1, 1000000000000]`},
		{"0.1,0,1e13", "count", `count = "1e13": want an integer in [1, 1000000000000]`},
		{"0.1,0,inf", "count", `count = "inf": want an integer in [1, 1000000000000]`},
		{"0.1,0,0x10", "count", `count = "0x10": want an integer in [1, 1000000000000]`},
		{"0.1,0,1_000", "count", `count = "1_000": want an integer in [1, 1000000000000]`},
		{"0.1,0,1000000000001", "count", `count = 1000000000001: want an integer in [1, 1000000000000]`},
		{"0.1,0,99999999999999999999", "count", `count = "99999999999999999999": want an integer in [1, 1000000000000]`},
		{"0.1,0,1,1", "parts", `parts = 4: want EPS[,DELTA[,COUNT]]: 1 to 3 comma-separated parts`},
		{",,,,", "parts", `parts = 5: want EPS[,DELTA[,COUNT]]: 1 to 3 comma-separated parts`},
	} {
		m, err := parseMech(c.in)
		var param *dpkit.ParamError
		if !errors.As(err, &param) {
			t.Errorf("parseMech(%q) = %+v, %v; want a *dpkit.ParamError", c.in, m, err)
			continue
		}
		if param.Name != c.name || describe(err) != c.text {
			t.Errorf("parseMech(%q): %s (name %q); want %s (name %q)", c.in, describe(err), param.Name, c.text, c.name)
		}
	}
}

func TestReadMechs(t *testing.T) {
	in := "# header\n\n0.1\n  0.2 , 1e-6 , 3   # trailing comment\n\t\n#0.9\n0.3,0,2#x\n"
	got, err := readMechs(context.Background(), strings.NewReader(in), "w.txt")
	want := []compose.Mech{{Epsilon: 0.1, Count: 1}, {Epsilon: 0.2, Delta: 1e-6, Count: 3}, {Epsilon: 0.3, Count: 2}}
	if err != nil || len(got) != len(want) {
		t.Fatalf("readMechs = %v, %v; want %v", got, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	_, err = readMechs(context.Background(), strings.NewReader("0.1\n# c\n\n0.1,2\n"), "w.txt")
	if want := `invalid --mech-file "w.txt" line 4: "0.1,2": delta = 2: want in [0, 1]`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	if exitCode(err) != exitUsage {
		t.Errorf("exit status %d for a bad line, want %d", exitCode(err), exitUsage)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := readMechs(ctx, strings.NewReader(strings.Repeat("0.1\n", 5000)), "big"); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled read: %v, want context.Canceled", err)
	}
}
