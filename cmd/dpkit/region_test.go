package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// 30 × (0.1, 0.001): the 16 pairs ((30 − 2i)·0.1, δ_i) of KOV Thm 3.3, whose δ values the
// docs/errata.md KOV item 1 formula gives independently at the same ε.
func TestRegionBreakpoints(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "region", "--mech", "0.1,0.001,30", "--json"))
	if keysOf(v) != "breakpoints,exact" || v["exact"] != true {
		t.Fatalf("got keys %s, exact %v", keysOf(v), v["exact"])
	}
	bps, _ := v["breakpoints"].([]any)
	if len(bps) != 16 {
		t.Fatalf("%d breakpoints, want 16", len(bps))
	}
	for i, b := range bps {
		b := b.(map[string]any)
		if keysOf(b) != "delta,epsilon" {
			t.Fatalf("breakpoint keys %s", keysOf(b))
		}
		eps, delta := number(t, b, "epsilon"), number(t, b, "delta")
		if want := float64(30-2*i) * 0.1; math.Abs(eps-want) > 1e-12 {
			t.Errorf("breakpoint %d: epsilon = %v, want %v", i, eps, want)
		}
		want := homogeneousDelta(0.1, 0.001, 30, eps)
		if delta < want*(1-1e-14) || delta > want*(1+1e-10) {
			t.Errorf("breakpoint %d: delta(%v) = %v, want %v (docs/errata.md, KOV item 1), never below", i, eps, delta, want)
		}
	}
}

func TestRegionTable(t *testing.T) {
	out := mustSucceed(t, "", "region", "--mech", "0.5,0,4")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	// 4 × (0.5, 0): ε ∈ {2, 1, 0}.
	if len(lines) != 4 || strings.Fields(lines[0])[0] != "epsilon" || strings.Fields(lines[1])[0] != "2" || strings.Fields(lines[3])[0] != "0" {
		t.Errorf("table:\n%s", out)
	}
}

func TestRegionPlotSVG(t *testing.T) {
	file := filepath.Join(t.TempDir(), "fig3.svg")
	if out := mustSucceed(t, "", "region", "--mech", "0.1,0.001,30", "--plot", file); out != "wrote "+file+"\n" {
		t.Errorf("stdout %q, want %q", out, "wrote "+file+"\n")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("<?xml")) && !bytes.HasPrefix(b, []byte("<svg")) {
		t.Fatalf("%s starts with %q, want an SVG document", file, b[:min(len(b), 20)])
	}
	// Well-formed XML whose root element is <svg>, with the title and the legend.
	dec := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("root element <%s>, want <svg>", root)
	}
	for _, text := range []string{"30-fold composition of (0.1, 0.001)-DP", "P_MD", "P_FA", "basic", "DRV", "KOV bound (Thm 3.4)", "exact (Thm 3.3)"} {
		if !bytes.Contains(b, []byte(text)) {
			t.Errorf("SVG lacks %q", text)
		}
	}
}

func TestRegionPlotPNG(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "fig3.PNG") // the extension is case-insensitive
	v := decodeJSON(t, mustSucceed(t, "", "region", "--mech", "1,0.01,5", "--mech", "0.3,0,20", "--plot", file, "--json"))
	if _, ok := v["breakpoints"]; !ok {
		t.Errorf("--plot --json printed %v, want the breakpoints", v)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s does not start with the PNG signature", file)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width < 600 || cfg.Height < cfg.Width {
		t.Errorf("PNG is %d×%d, want at least 600 wide and not shorter than wide", cfg.Width, cfg.Height)
	}
}

func TestRegionErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []errorCase{
		{name: "pdf", args: []string{"region", "--mech", "0.1,0.001,30", "--plot", "fig.pdf"}, code: exitUsage,
			want: []string{`invalid --plot "fig.pdf": want a file name ending in .svg or .png`}},
		{name: "no extension", args: []string{"region", "--mech", "0.1", "--plot", "fig"}, code: exitUsage, want: []string{`invalid --plot "fig"`}},
		{name: "extension inside", args: []string{"region", "--mech", "0.1", "--plot", "fig.svg.bak"}, code: exitUsage, want: []string{`invalid --plot "fig.svg.bak"`}},
		{name: "bad mech", args: []string{"region", "--mech", "0.1,1.5"}, code: exitUsage, want: []string{`invalid --mech "0.1,1.5": delta = 1.5: want in [0, 1]`}},
		{name: "no workload", args: []string{"region", "--json"}, code: exitUsage, want: []string{"no mechanisms"}},
		{name: "bad mech-file line", stdin: "0.1\n\n0.1,0,0\n", args: []string{"region", "--mech-file", "-"}, code: exitUsage,
			want: []string{`invalid --mech-file "-" line 3: "0.1,0,0": count = 0`}},
		{name: "too many breakpoints", args: []string{"region", "--mech", "0.001,0,10000000", "--json"}, code: exitUsage,
			want: []string{"invalid count = 10000000: want at most"}},
		{name: "unwritable plot", args: []string{"region", "--mech", "0.1", "--plot", filepath.Join(dir, "missing", "f.svg")}, code: exitFailure,
			want: []string{"cannot write --plot", "no such file or directory"}},
	} {
		t.Run(c.name, func(t *testing.T) { checkError(t, "dpkit region", c) })
	}
}

// TestRegionDominates: --dominates (KOV Thm 2.4/2.5). Binary randomized response at
// ε' = ln 1.5 is a post-processing of the canonical (1, 0) pair (it is ε'-DP with ε' < 1),
// so the canonical pair dominates it and not conversely; (1, 0) and (0.5, 0.1) are not
// comparable (their regions cross: δ(0) = 0.462 against 0.197, and (0.5, 0.1) allows
// δ = 0.1 at ε = 1 where (1, 0) allows 0); a pair post-processed by an explicit
// stochastic map (computed here) is dominated by the original.
func TestRegionDominates(t *testing.T) {
	check := func(a, b string, fwd, rev bool) {
		t.Helper()
		v := decodeJSON(t, mustSucceed(t, "", "region", "--dominates", "--pair", a, "--pair", b, "--json"))
		if v["dominates"] != fwd || v["dominated"] != rev {
			t.Errorf("%s vs %s: dominates %v, dominated %v; want %v, %v", a, b, v["dominates"], v["dominated"], fwd, rev)
		}
	}
	check("eps=1,delta=0", "0.6,0.4|0.4,0.6", true, false)
	check("eps=1,delta=0", "eps=0.5,delta=0.1", false, false)
	check("eps=1,delta=0", "eps=1,delta=0", true, true)
	// P = (0.5, 0.3, 0.2 | 0.1, 0.3, 0.6) through T = [[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]]
	p0, p1 := []float64{0.5, 0.3, 0.2}, []float64{0.1, 0.3, 0.6}
	T := [][]float64{{0.9, 0.1}, {0.5, 0.5}, {0.2, 0.8}}
	var q0, q1 [2]float64
	for x := range 3 {
		for y := range 2 {
			q0[y] += p0[x] * T[x][y]
			q1[y] += p1[x] * T[x][y]
		}
	}
	post := fmt.Sprintf("%v,%v|%v,%v", q0[0], q0[1], q1[0], q1[1])
	check("0.5,0.3,0.2|0.1,0.3,0.6", post, true, false)
	checkErrors(t, []errorCase{
		{name: "one pair", args: []string{"region", "--dominates", "--pair", "eps=1"}, code: exitUsage, want: []string{"two --pair"}},
		{name: "pair alone", args: []string{"region", "--pair", "eps=1", "--pair", "eps=2"}, code: exitUsage, want: []string{"--dominates"}},
		{name: "bad sum", args: []string{"region", "--dominates", "--pair", "0.5,0.6|0.5,0.5", "--pair", "eps=1"}, code: exitUsage, want: []string{"--pair"}},
		{name: "bad key", args: []string{"region", "--dominates", "--pair", "eps=1,k=2", "--pair", "eps=1"}, code: exitUsage, want: []string{"eps=E,delta=D"}},
		{name: "with mech", args: []string{"region", "--dominates", "--mech", "1", "--pair", "eps=1", "--pair", "eps=1"}, code: exitUsage, want: []string{"drop --mech"}},
	})
}
