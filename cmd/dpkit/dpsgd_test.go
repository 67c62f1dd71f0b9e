package main

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Published values for DP-SGD at noise multiplier 1.5, sampling rate 0.04, 2250 steps
// (90 epochs), δ = 1e-5, from Opacus's test suite (meta-pytorch/opacus,
// opacus/tests/accountants_test.py at commit 399338790ff9, AccountingTest):
// the RDP accountant gives ε = 7.32911117143, the PRV accountant ε = 6.777395712150674;
// get_noise_multiplier for ε = 8 gives 1.416 (RDP) and 1.34765625 (PRV) at 90 epochs,
// 1.3562 (RDP) and 1.2915 (PRV) at 2000 steps.
const (
	opacusRDPEpsilon = 7.32911117143
	opacusPRVEpsilon = 6.777395712150674
)

// dpkit's certified ε lies below the RDP bound (RDP is a valid upper bound, looser) and
// within 1% of the PRV accountant's estimate (an approximation with its own error).
func TestDPSGDEpsilonAgainstOpacus(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", "subsampled-gaussian:sigma=1.5,q=0.04,count=2250", "--delta", "1e-5", "--json"))
	eps, lo := number(t, v, "epsilon"), number(t, v, "epsilon_lower")
	if eps > opacusRDPEpsilon {
		t.Errorf("ε = %v above Opacus's RDP bound %v", eps, opacusRDPEpsilon)
	}
	if math.Abs(eps-opacusPRVEpsilon)/opacusPRVEpsilon > 0.01 || lo > eps {
		t.Errorf("bracket [%v, %v], want within 1%% of Opacus's PRV %v", lo, eps, opacusPRVEpsilon)
	}
}

// calibrate --mechanism subsampled-gaussian: the answer carries its certificate (the
// upper ε at σ meets the target, the lower ε at 0.99σ does not), which compose confirms
// independently of the search, and it agrees with Opacus: below RDP's noise multiplier
// (RDP's σ meets the budget, so the smallest σ is at most it) and within 1% of PRV's.
func TestCalibrateDPSGD(t *testing.T) {
	for _, c := range []struct {
		steps    string
		rdp, prv float64
	}{{"2250", 1.416, 1.34765625}, {"2000", 1.3562, 1.2915}} {
		if testing.Short() && c.steps == "2000" {
			continue // one case is enough for the short (race) step
		}
		v := decodeJSON(t, mustSucceed(t, "", "calibrate", "--mechanism", "subsampled-gaussian", "--q", "0.04", "--steps", c.steps, "--eps", "8", "--delta", "1e-5", "--json"))
		if got, want := keysOf(v), "delta,epsilon,epsilon_lower_below,epsilon_upper,mechanism,q,sigma,sigma_below,steps"; got != want {
			t.Fatalf("keys %s, want %s", got, want)
		}
		sigma, below := number(t, v, "sigma"), number(t, v, "sigma_below")
		if !(number(t, v, "epsilon_upper") <= 8 && number(t, v, "epsilon_lower_below") > 8) || below != 0.99*sigma {
			t.Errorf("certificate %v", v)
		}
		if sigma > c.rdp || math.Abs(sigma-c.prv)/c.prv > 0.01 {
			t.Errorf("%s steps: σ = %v, want ≤ Opacus RDP %v and within 1%% of PRV %v", c.steps, sigma, c.rdp, c.prv)
		}
		at := func(s float64) map[string]any {
			return decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", "subsampled-gaussian:sigma="+strconv.FormatFloat(s, 'g', -1, 64)+",q=0.04,count="+c.steps,
				"--delta", "1e-5", "--json", "--tolerance", "1e-4"))
		}
		if up := number(t, at(sigma), "epsilon"); up > 8 {
			t.Errorf("compose at σ = %v: ε = %v above 8", sigma, up)
		}
		if lo := number(t, at(below), "epsilon_lower"); lo <= 8 {
			t.Errorf("compose at 0.99σ = %v: lower ε = %v, want above 8", below, lo)
		}
	}
	for _, c := range []errorCase{
		{name: "no q", args: []string{"calibrate", "--mechanism", "subsampled-gaussian", "--steps", "10", "--eps", "1", "--delta", "1e-5"}, code: exitUsage, want: []string{"missing --q"}},
		{name: "q above 1", args: []string{"calibrate", "--mechanism", "subsampled-gaussian", "--q", "1.5", "--steps", "10", "--eps", "1", "--delta", "1e-5"}, code: exitUsage, want: []string{`invalid --q "1.5": want in (0, 1]`}},
		{name: "no steps", args: []string{"calibrate", "--mechanism", "subsampled-gaussian", "--q", "0.1", "--eps", "1", "--delta", "1e-5"}, code: exitUsage, want: []string{"missing --steps"}},
		{name: "k given", args: []string{"calibrate", "--mechanism", "subsampled-gaussian", "--q", "0.1", "--k", "3", "--steps", "3", "--eps", "1", "--delta", "1e-5"}, code: exitUsage, want: []string{"not --k"}},
		{name: "pure", args: []string{"calibrate", "--mechanism", "subsampled-gaussian", "--q", "0.1", "--steps", "3", "--eps", "1", "--delta", "0"}, code: exitFailure, want: []string{"not (ε, 0)-DP"}},
	} {
		t.Run(c.name, func(t *testing.T) { checkError(t, "dpkit calibrate", c) })
	}
}

// --every N: one row per N releases, each the same answer as composing that many alone,
// increasing with the number of releases; the last row is the full count.
func TestComposeEvery(t *testing.T) {
	mech := "subsampled-gaussian:sigma=1.5,q=0.04,count=1000"
	v := decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", mech, "--delta", "1e-5", "--every", "300", "--json"))
	steps := v["steps"].([]any)
	wantReleases := []float64{300, 600, 900, 1000}
	if keysOf(v) != "steps" || len(steps) != len(wantReleases) {
		t.Fatalf("got %v, want 4 steps", v)
	}
	prev := 0.0
	for i, s := range steps {
		row := s.(map[string]any)
		if got, want := keysOf(row), "delta,epsilon,epsilon_lower,exact,method,releases,theorem,width"; got != want {
			t.Fatalf("keys %s, want %s", got, want)
		}
		if number(t, row, "releases") != wantReleases[i] || number(t, row, "epsilon") <= prev {
			t.Errorf("row %d: %v (previous ε %v)", i, row, prev)
		}
		prev = number(t, row, "epsilon")
		k := strconv.Itoa(int(wantReleases[i]))
		alone := decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", strings.Replace(mech, "count=1000", "count="+k, 1), "--delta", "1e-5", "--json"))
		if number(t, alone, "epsilon") != prev {
			t.Errorf("row %d: ε %v, composing %s releases alone gives %v", i, prev, k, number(t, alone, "epsilon"))
		}
	}
	out := mustSucceed(t, "", "compose", "--mechanism", mech, "--delta", "1e-5", "--every", "500")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "releases  epsilon") || !strings.HasPrefix(lines[2], "1000 ") {
		t.Errorf("table:\n%s", out)
	}
	for _, c := range []errorCase{
		{name: "no mechanism", args: []string{"compose", "--mech", "0.1,0,10", "--delta", "1e-5", "--every", "2"}, code: exitUsage, want: []string{"--every needs exactly one --mechanism"}},
		{name: "two mechanisms", args: []string{"compose", "--mechanism", mech, "--mechanism", mech, "--delta", "1e-5", "--every", "2"}, code: exitUsage, want: []string{"--every needs exactly one"}},
		{name: "too many rows", args: []string{"compose", "--mechanism", strings.Replace(mech, "count=1000", "count=1e6", 1), "--delta", "1e-5", "--every", "999"},
			code: exitUsage, want: []string{"invalid --every 999: 1002 rows for count=1000000; want at most 1000 rows (--every ≥ 1000)"}},
		{name: "above count", args: []string{"compose", "--mechanism", mech, "--delta", "1e-5", "--every", "2000"}, code: exitUsage, want: []string{"want at most the mechanism's count=1000"}},
		{name: "with mech", args: []string{"compose", "--mechanism", mech, "--mech", "0.1", "--delta", "1e-5", "--every", "500"}, code: exitUsage, want: []string{"--every applies to one --mechanism alone"}},
	} {
		t.Run(c.name, func(t *testing.T) { checkError(t, "dpkit compose", c) })
	}
}

// compose --plot draws the privacy curve(s) and the target; the SVG embeds its fonts.
func TestComposePlots(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "curve.svg")
	out := mustSucceed(t, "", "compose", "--mech", "0.1,1e-9,1000", "--delta", "1e-5", "--theorem", "all", "--plot", svg)
	if !strings.HasSuffix(out, "wrote "+svg+"\n") {
		t.Errorf("stdout %q", out)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"basic (KOV Thm 3.1)", "DRV (KOV Thm 3.2)", "KOV Thm 3.4/3.5", "exact (KOV Thm 3.3)", "target δ = 1e-05", "total ε", "1e-5"} {
		if !bytes.Contains(b, []byte(text)) {
			t.Errorf("SVG lacks %q", text)
		}
	}
	checkEmbeddedFonts(t, b)

	for _, args := range [][]string{
		{"compose", "--mechanism", "gaussian:sigma=10,count=100", "--eps", "1", "--plot"},
		{"compose", "--mechanism", "subsampled-gaussian:sigma=1.5,q=0.04,count=1000", "--delta", "1e-5", "--every", "250", "--json", "--plot"},
	} {
		file := filepath.Join(dir, "p.png")
		r := dpkitRun(t, "", append(args, file)...)
		if r.code != exitOK {
			t.Fatalf("%v: exit %d, %s", args, r.code, r.stderr)
		}
		checkPNGMargin(t, file)
	}
}

// checkEmbeddedFonts checks that every font family the SVG uses is embedded in it, so
// that it renders the same without the font installed.
func checkEmbeddedFonts(t *testing.T, svg []byte) {
	t.Helper()
	used := regexp.MustCompile(`font-family:([^;"]+)`).FindAllSubmatch(svg, -1)
	if len(used) == 0 {
		t.Fatal("SVG has no text")
	}
	for _, u := range used {
		family := strings.Trim(string(u[1]), `'"`)
		if !bytes.Contains(svg, []byte(`font-family:"`+family+`";`)) || !bytes.Contains(svg, []byte("@font-face")) {
			t.Errorf("font %q is used but not embedded", family)
		}
	}
}

// checkPNGMargin decodes a PNG figure and checks that nothing is drawn in its outermost
// columns and rows: no label (such as the "1.0" tick at the right end of an axis) is cut
// by the figure's edge.
func checkPNGMargin(t *testing.T, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	white := func(x, y int) bool {
		r, g, bl, _ := img.At(x, y).RGBA()
		return r > 0xf000 && g > 0xf000 && bl > 0xf000
	}
	const edge = 3
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Max.X - edge; x < b.Max.X; x++ {
			if !white(x, y) {
				t.Fatalf("%s: pixel (%d, %d) at the right edge is drawn", file, x, y)
			}
		}
	}
}

// The region plot keeps its "1.0" labels inside the figure.
func TestRegionPlotMargin(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.png")
	mustSucceed(t, "", "region", "--mech", "0.1,0.001,30", "--plot", file)
	checkPNGMargin(t, file)
}
