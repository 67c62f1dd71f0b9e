package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrentClients sends queries from 64 concurrent clients over loopback to one
// dataset whose fixed policy allows 50 queries: exactly 50 are answered (200), every
// other one is refused (409), and the ledger records exactly the 50 answered releases.
// The test is bounded: 64 × 4 requests, and a 60 s deadline.
func TestConcurrentClients(t *testing.T) { testConcurrentClients(t, newEnv(t)) }

func testConcurrentClients(t *testing.T, e *env) {
	const capacity, clients, perClient = 50, 64, 4
	spec := salarySpec("load")
	spec["policy"] = map[string]any{"mode": "fixed", "max_queries": capacity}
	e.must(201, "POST", "/v1/datasets", e.admin, spec)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ok, refused, other atomic.Int64
	seqs := sync.Map{}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				body, _ := json.Marshal(map[string]any{"sql": "SELECT COUNT(*) FROM load", "idempotency_key": fmt.Sprintf("c%d-%d", c, i)})
				req, _ := http.NewRequestWithContext(ctx, "POST", e.ts.URL+"/v1/datasets/load/query", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+e.admin)
				res, err := e.ts.Client().Do(req)
				if err != nil {
					other.Add(1)
					t.Error(err)
					return
				}
				raw, _ := io.ReadAll(res.Body)
				res.Body.Close()
				switch res.StatusCode {
				case 200:
					ok.Add(1)
					var v QueryResponse
					if err := json.Unmarshal(raw, &v); err != nil {
						t.Error(err)
					}
					if _, dup := seqs.LoadOrStore(v.Release, true); dup {
						t.Errorf("release %d answered twice", v.Release)
					}
				case 409:
					refused.Add(1)
				default:
					other.Add(1)
					t.Errorf("status %d: %s", res.StatusCode, raw)
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() != capacity || refused.Load() != clients*perClient-capacity || other.Load() != 0 {
		t.Fatalf("answered %d, refused %d, other %d; want %d, %d, 0", ok.Load(), refused.Load(), other.Load(), capacity, clients*perClient-capacity)
	}
	st, err := e.srv.ledger.Status(ctx, "load")
	if err != nil || st.Releases != capacity {
		t.Fatalf("ledger: %+v %v", st, err)
	}
	rels := e.must(200, "GET", "/v1/datasets/load/releases", e.admin, nil)["releases"].([]any)
	if len(rels) != capacity {
		t.Fatalf("%d releases in the audit log", len(rels))
	}
	for _, r := range rels {
		seq := int64(r.(map[string]any)["release"].(float64))
		if _, answered := seqs.Load(seq); !answered {
			t.Fatalf("release %d recorded but never answered", seq)
		}
	}
}
