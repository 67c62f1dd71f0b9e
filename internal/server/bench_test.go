package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkQuery measures answered queries per second over loopback HTTP on the demo
// "flu" table (same schema and rows), registered with a budget allowing 10^9 queries under
// the fixed policy, with durable ledger commits (SQLite synchronous=FULL, PostgreSQL
// synchronous_commit=on): b.N queries from 8, 16, 32 and 64 concurrent clients, on SQLite
// and (with DPKIT_TEST_POSTGRES) on PostgreSQL, the ledger and the registry in one fresh
// database each. Reported as queries/s.
func BenchmarkQuery(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, clients := range []int{8, 16, 32, 64} {
			b.Run(fmt.Sprintf("%s/clients=%d", backend, clients), func(b *testing.B) {
				db := filepath.Join(b.TempDir(), "bench.db")
				if backend == "postgres" {
					db = newSchema(b)
				}
				// The service's default time limit (the tests' short one would refuse
				// queries that wait long for their turn on a loaded machine).
				benchQuery(b, newEnvWith(b, db, smallDemo(), Options{}), clients)
			})
		}
	}
}

func benchQuery(b *testing.B, e *env, clients int) {
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
	var firstFailure atomic.Value
	b.ResetTimer()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				i := n.Add(1)
				if i > int64(b.N) {
					return
				}
				q := fmt.Sprintf(`{"sql":"SELECT COUNT(*) FROM flu_bench WHERE flu = 1","idempotency_key":"b%d"}`, i)
				req, _ := http.NewRequest("POST", e.ts.URL+"/v1/datasets/flu_bench/query", strings.NewReader(q))
				req.Header.Set("Authorization", "Bearer "+e.admin)
				res, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
					continue
				}
				raw, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%d %s", res.StatusCode, raw))
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if failed.Load() > 0 {
		b.Fatalf("%d queries failed, the first with %v", failed.Load(), firstFailure.Load())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}
