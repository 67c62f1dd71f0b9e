package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// BenchmarkQuery measures answered queries per second over loopback HTTP on the demo
// "flu" table (same schema and rows), registered with a budget allowing 10^9 queries, with
// durable (synchronous=FULL) ledger commits: b.N queries from GOMAXPROCS×8 concurrent
// clients. Reported as queries/s.
func BenchmarkQuery(b *testing.B) { benchQuery(b, newEnv(b)) }

// BenchmarkPostgresQuery is BenchmarkQuery with the ledger and the service's tables on
// PostgreSQL (DPKIT_TEST_POSTGRES; skipped without it), synchronous commits.
func BenchmarkPostgresQuery(b *testing.B) { benchQuery(b, newEnvAt(b, newSchema(b))) }

func benchQuery(b *testing.B, e *env) {
	spec := map[string]any{
		"name":    "flu_bench",
		"columns": map[string]any{"name": map[string]any{"type": "string"}, "flu": map[string]any{"type": "int", "min": 0, "max": 1, "domain": []string{"0", "1"}}},
		"budget":  map[string]any{"epsilon": 1e6, "delta": 1e-6},
		"policy":  map[string]any{"mode": "fixed", "max_queries": 1_000_000_000},
		"csv":     fluCSV,
	}
	body, _ := json.Marshal(spec)
	req, _ := http.NewRequest("POST", e.ts.URL+"/v1/datasets", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 201 {
		b.Fatalf("register: %v %v", err, res)
	}
	res.Body.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	client := &http.Client{Transport: tr}
	var n, failed atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			q := fmt.Sprintf(`{"sql":"SELECT COUNT(*) FROM flu_bench WHERE flu = 1","idempotency_key":"b%d"}`, i)
			req, _ := http.NewRequest("POST", e.ts.URL+"/v1/datasets/flu_bench/query", strings.NewReader(q))
			req.Header.Set("Authorization", "Bearer "+e.admin)
			res, err := client.Do(req)
			if err != nil {
				failed.Add(1)
				continue
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	if failed.Load() > 0 {
		b.Fatalf("%d queries failed", failed.Load())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}
