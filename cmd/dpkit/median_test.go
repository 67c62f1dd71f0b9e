package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMedianCommand: a column with a clear median is released within the bounds and
// near the median (the ε = 5 heavy-tail noise has scale S*/α, with S* ≈ 0.05 here).
func TestMedianCommand(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d.csv")
	var b strings.Builder
	b.WriteString("id,salary\n")
	for i := range 1001 {
		b.WriteString(itoa(i) + "," + itoa(1000+i) + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--delta", "1e-6"}} {
		args := append([]string{"median", "--file", path, "--column", "salary", "--lower", "0", "--upper", "3000", "--eps", "5", "--json"}, extra...)
		v := decodeJSON(t, mustSucceed(t, "", args...))
		if got, want := keysOf(v), "alpha,beta,delta,epsilon,granularity,mechanism,noise,rows,value"; got != want {
			t.Fatalf("keys %s, want %s", got, want)
		}
		if number(t, v, "rows") != 1001 {
			t.Errorf("rows = %v", v["rows"])
		}
		if x := number(t, v, "value"); x < 0 || x > 3000 {
			t.Errorf("median %v outside the bounds", x)
		}
	}
	// by column number, text output
	out := mustSucceed(t, "", "median", "--file", path, "--column", "2", "--lower", "0", "--upper", "3000", "--eps", "1")
	if !strings.Contains(out, "median") || !strings.Contains(out, "rows") {
		t.Errorf("text output:\n%s", out)
	}
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("x\n1\nabc\n"), 0o600)
	for _, c := range []errorCase{
		{name: "no file", args: []string{"median", "--column", "x", "--lower", "0", "--upper", "1", "--eps", "1"}, code: exitUsage, want: []string{"--file"}},
		{name: "missing file", args: []string{"median", "--file", filepath.Join(dir, "none.csv"), "--column", "x", "--lower", "0", "--upper", "1", "--eps", "1"}, code: exitFailure, want: []string{`dpkit median: cannot read --file "` + filepath.Join(dir, "none.csv") + `": no such file or directory`}},
		{name: "bad column", args: []string{"median", "--file", path, "--column", "age", "--lower", "0", "--upper", "1", "--eps", "1"}, code: exitUsage, want: []string{"no such column"}},
		{name: "non-numeric", args: []string{"median", "--file", bad, "--column", "x", "--lower", "0", "--upper", "1", "--eps", "1"}, code: exitUsage, want: []string{"not a number"}},
		{name: "bounds", args: []string{"median", "--file", path, "--column", "x", "--lower", "1", "--upper", "1", "--eps", "1"}, code: exitUsage, want: []string{"invalid --upper 1: want > --lower, with --upper − --lower finite"}},
	} {
		r := dpkitRun(t, c.stdin, c.args...)
		if r.code != c.code {
			t.Errorf("%s: exit %d, want %d (stderr %q)", c.name, r.code, c.code, r.stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr %q lacks %q", c.name, r.stderr, w)
			}
		}
	}
}
