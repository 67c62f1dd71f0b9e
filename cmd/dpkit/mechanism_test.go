package main

import (
	"math"
	"strings"
	"testing"

	"github.com/dpkit/dpkit/compose"
)

// The example: mixed Gaussian, Laplace and (ε, δ) releases by their PLDs.
func TestComposeMechanismJSON(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "compose",
		"--mechanism", "gaussian:sigma=100,sensitivity=1,count=10000",
		"--mechanism", "laplace:scale=2,sensitivity=1,count=5",
		"--mech", "0.1,1e-6,3", "--delta", "1e-5", "--json"))
	if got, want := keysOf(v), "delta,epsilon,epsilon_lower,exact,method,theorem,width"; got != want {
		t.Fatalf("keys %s, want %s", got, want)
	}
	eps, lo := number(t, v, "epsilon"), number(t, v, "epsilon_lower")
	if v["theorem"] != "pld" || v["method"] != "lattice" || v["exact"] != false || !(lo <= eps) || (eps-lo)/eps > 1e-3 {
		t.Errorf("got %v", v)
	}
	// Adding releases can only raise ε: the Gaussians alone give the closed form 4.3771780957
	// (μ = 1), below the mixed workload's lower value.
	if lo <= 4.3771780957 {
		t.Errorf("mixed ε lower %v not above the Gaussians' 4.3771780957", lo)
	}
}

// (ε, δ) pairs through the PLD path bracket the exact optimum of compose.
func TestComposeMechanismAgreesWithExact(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", "rr:eps=0.5,k=2,count=20", "--delta", "1e-4", "--json"))
	exact, err := compose.Epsilon([]compose.Mech{{Epsilon: 0.5, Delta: 0, Count: 20}}, 1e-4, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Binary randomized response at ε is the canonical (ε, 0) pair (KOV eq. 17).
	if up, lo := number(t, v, "epsilon"), number(t, v, "epsilon_lower"); up < exact.Epsilon*(1-1e-12) || lo > exact.Epsilon*(1+1e-12) {
		t.Errorf("pld bracket [%v, %v] misses exact %v", lo, up, exact.Epsilon)
	}
}

func TestComposeMechanismErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--mechanism", "foo:x=1"}, "unknown mechanism"},
		{[]string{"--mechanism", "gaussian:scale=1"}, "unknown key"},
		{[]string{"--mechanism", "gaussian:sensitivity=1"}, "missing sigma"},
		{[]string{"--mechanism", "laplace:scale=-1"}, "scale"},
		{[]string{"--mechanism", "laplace:scale=NaN"}, "finite"},
		{[]string{"--mechanism", "laplace:scale=1,count=0"}, "count"},
		{[]string{"--mechanism", "rr:eps=1,k=1"}, "k"},
		{[]string{"--mechanism", "geometric:eps=1,scale=2"}, "exactly one"},
		{[]string{"--mechanism", "subsampled-gaussian:sigma=1,q=1.5"}, "q"},
		{[]string{"--mechanism", "laplace:scale=1", "--theorem", "kov"}, "does not apply"},
	} {
		args := append([]string{"compose"}, c.args...)
		args = append(args, "--delta", "1e-5")
		r := dpkitRun(t, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// Gaussian calibration: K releases of σ are μ = S√K/σ Gaussian DP, so σ must meet the
// closed-form curve at (E, D) with equality (to 1e-9), and KOV Thm 4.3 needs more.
func TestCalibrateGaussian(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "calibrate", "--mechanism", "gaussian", "--sensitivity", "1", "--k", "10000", "--eps", "4.3771780957", "--delta", "1e-5", "--json"))
	sigma := number(t, v, "sigma")
	// σ = 100 gives μ = 1, whose ε(1e-5) is 4.3771780957 (issue 3's anchor).
	if math.Abs(sigma-100)/100 > 1e-8 || sigma < 100*(1-1e-10) {
		t.Errorf("sigma = %v, want 100", sigma)
	}
	if kov := number(t, v, "kov"); kov <= sigma {
		t.Errorf("KOV Thm 4.3 σ %v not above the exact %v", kov, sigma)
	}
}

func TestCalibrateLaplaceMeetsBudget(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "calibrate", "--mechanism", "laplace", "--sensitivity", "1", "--k", "50", "--eps", "0.5", "--delta", "1e-6", "--json"))
	scale := number(t, v, "scale")
	// Pure composition needs scale 50/0.5 = 100; the PLD calibration must need less, and
	// the Cor 4.2 scale more.
	if !(scale < 100 && scale > 10) {
		t.Errorf("scale = %v", scale)
	}
	if kov := number(t, v, "kov"); kov <= scale {
		t.Errorf("KOV Cor 4.2 scale %v not above %v", kov, scale)
	}
	r := dpkitRun(t, "", "calibrate", "--mechanism", "laplace", "--k", "5", "--eps", "1", "--delta", "0")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--sensitivity") {
		t.Errorf("missing --sensitivity: exit %d, %q", r.code, r.stderr)
	}
}

// A mechanism whose loss in one release is beyond what a lattice composes soundly (issue
// 24: laplace:scale=1e-200, ε0 = 1e200) is refused up front with exit status 2, and the
// JSON error names the flag to change, --mechanism.
func TestComposeMechanismBeyondLattice(t *testing.T) {
	for _, m := range []string{"laplace:scale=1e-200", "laplace:scale=1,sensitivity=1e250"} {
		checkError(t, "dpkit compose", errorCase{args: []string{"compose", "--mechanism", m, "--delta", "1e-6"}, code: exitUsage,
			want: []string{"invalid --mechanism \"laplace:", "within ±1e15"}})
		r := dpkitRun(t, "", "compose", "--mechanism", m, "--delta", "1e-6", "--json")
		v := decodeJSON(t, r.stdout)
		e, _ := v["error"].(map[string]any)
		if r.code != exitUsage || e == nil || e["flag"] != "--mechanism" || e["code"] != "usage" {
			t.Errorf("%s --json: exit %d, %s; want 2 and flag --mechanism", m, r.code, r.stdout)
		}
	}
}
