package server

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
)

// BenchmarkCountError answers K COUNT queries (sensitivity 1, 1000 rows) through the
// service at the same total budget (ε, δ) = (1, 1e-6) under four policies — fixed with
// pure-ε noise (each query the KOV-calibrated (ε0, δ0), discrete Laplace), fixed Gaussian
// (μ0 = μ/√K, discrete Gaussian), the Gaussian filter (each query μ/√K, chosen by the
// client), and the basic filter with ε/K per query — and reports the answers' root mean
// squared error and the mean half-width of their 95% intervals. Run with -benchtime 1x:
// one iteration is K queries per policy. noise-sd is the noise's standard deviation
// from the reported scale (the rmse estimates it from the K answers; the service's test
// source is seeded, so policies with the same noise give the same answers).
func BenchmarkCountError(b *testing.B) {
	total := dpkit.Budget{Epsilon: 1, Delta: 1e-6}
	mu, err := ledger.GaussianMu(total)
	if err != nil {
		b.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("x\n")
	for i := range 1000 {
		fmt.Fprintf(&csv, "%d\n", i%10)
	}
	for _, k := range []int{100, 1000} {
		for _, pol := range []struct {
			name   string
			policy map[string]any
			body   map[string]any
		}{
			{"fixed-laplace", map[string]any{"mode": "fixed", "max_queries": k}, nil},
			{"fixed-gaussian", map[string]any{"mode": "fixed", "max_queries": k, "mechanism": "gaussian"}, nil},
			{"gaussian-filter", map[string]any{"mode": "adaptive", "filter": "gaussian"}, map[string]any{"mu": mu / math.Sqrt(float64(k))}},
			{"basic-filter-laplace", map[string]any{"mode": "adaptive"}, map[string]any{"epsilon": math.Nextafter(1/float64(k), 0)}},
		} {
			b.Run(fmt.Sprintf("K=%d/%s", k, pol.name), func(b *testing.B) {
				e := newEnv(b)
				var sq, half, sd float64
				n := 0
				for it := range b.N {
					name := fmt.Sprintf("c%d", it)
					e.must(201, "POST", "/v1/datasets", e.admin, map[string]any{
						"name": name, "columns": map[string]any{"x": map[string]any{"type": "int", "min": 0, "max": 9}},
						"budget": map[string]any{"epsilon": total.Epsilon, "delta": total.Delta}, "policy": pol.policy, "csv": csv.String(),
					})
					for range k {
						body := map[string]any{"sql": "SELECT COUNT(*) FROM " + name}
						for f, v := range pol.body {
							body[f] = v
						}
						v := e.must(200, "POST", "/v1/datasets/"+name+"/query", e.admin, body)
						r := v["result"].(float64)
						ci := v["ci95"].([]any)
						sq += (r - 1000) * (r - 1000)
						half += (ci[1].(float64) - ci[0].(float64)) / 2
						sd += noiseSD(v["mechanism"].(string), v["scale"].(float64))
						n++
					}
					if pol.body == nil { // fixed: exactly K
						e.mustError(409, "budget", "POST", "/v1/datasets/"+name+"/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM " + name})
					}
				}
				b.ReportMetric(math.Sqrt(sq/float64(n)), "rmse")
				b.ReportMetric(half/float64(n), "ci95-halfwidth")
				b.ReportMetric(sd/float64(n), "noise-sd")
			})
		}
	}
}

// noiseSD is the standard deviation of a count's noise from the response's mechanism and
// scale: discrete Laplace of scale 1/rate (q = e^(−rate), Var = 2q/(1−q)²), or the
// discrete Gaussian's σ (its grid noise, rounded to an integer: Var ≤ σ² + 1/4).
func noiseSD(mech string, scale float64) float64 {
	if mech == "discrete laplace" {
		q := math.Exp(-1 / scale)
		return math.Sqrt(2*q) / (1 - q)
	}
	return math.Sqrt(scale*scale + 0.25)
}
