package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/server"
)

// post sends a JSON body with a Bearer key and decodes the JSON answer.
func post(url, key, body string) (int, map[string]any) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	var v map[string]any
	json.NewDecoder(res.Body).Decode(&v)
	return res.StatusCode, v
}

// Example sets up the service as "dpkit serve --demo" does — the ledger and the
// service's registry in one SQLite file, through one connection pool — and asks the demo "flu" dataset a query over
// HTTP. The answer is noisy (its value is not printed); what it cost is exact: one of the
// fixed policy's 20 slots.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dpkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "dpkit.db")

	srv, closeDB, err := server.Open(ctx, db, server.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer closeDB()
	keys, err := srv.SetUpDemo(ctx)
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	code, v := post(ts.URL+"/v1/datasets/flu/query", keys.AnalystKey, `{"sql":"SELECT COUNT(*) FROM flu WHERE flu = 1","idempotency_key":"q-1"}`)
	fmt.Println(code, v["mechanism"], "remaining queries:", v["remaining_queries"], "release:", v["release"])
	// A retry with the same idempotency key returns the same answer and costs nothing.
	_, again := post(ts.URL+"/v1/datasets/flu/query", keys.AnalystKey, `{"sql":"SELECT COUNT(*) FROM flu WHERE flu = 1","idempotency_key":"q-1"}`)
	fmt.Println("same answer:", again["result"] == v["result"], "remaining queries:", again["remaining_queries"])
	// Bad SQL costs nothing either: 400 with the position of the problem.
	code, v = post(ts.URL+"/v1/datasets/flu/query", keys.AnalystKey, `{"sql":"SELECT COUNT(*) FROM flu WHERE"}`)
	fmt.Println(code, "position:", v["position"])
	// Output:
	// 200 discrete laplace remaining queries: 19 release: 1
	// same answer: true remaining queries: 19
	// 400 position: 30
}

// ExampleServer_Register registers a dataset from CSV text with declared bounds, a
// public GROUP BY domain and a budget under the fixed policy: the ledger calibrates the
// per-query cost so that 10 queries compose (exactly) within (ε, δ) = (1, 1e-6).
func ExampleServer_Register() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dpkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "dpkit.db")
	srv, closeDB, err := server.Open(ctx, db, server.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer closeDB()
	lo, hi := 10000.0, 100000.0
	req := server.CreateDatasetRequest{
		DatasetSpec: server.DatasetSpec{
			Name: "pay",
			Columns: map[string]server.ColumnSpec{
				"name":   {Type: "string"},
				"dept":   {Type: "string", Domain: []any{"eng", "ops"}},
				"salary": {Type: "int", Min: &lo, Max: &hi},
			},
			Budget: &dpkit.Budget{Epsilon: 1, Delta: 1e-6},
			Policy: &server.PolicySpec{Mode: "fixed", MaxQueries: 10},
		},
		CSV: "name,dept,salary\nA,eng,50000\nB,ops,20000\nC,eng,150000\n",
	}
	admin, err := srv.Bootstrap(ctx) // a fresh database: the first admin key
	if err != nil {
		log.Fatal(err)
	}
	info, err := srv.Register(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.Name, info.Policy.Mode, info.Policy.MaxQueries, info.Source)
	// The ledger's calibrated per-query cost, as the budget route reports it.
	req2, _ := http.NewRequest("GET", "/v1/datasets/pay/budget", nil)
	req2.Header.Set("Authorization", "Bearer "+admin)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req2)
	var b server.BudgetResponse
	json.NewDecoder(w.Body).Decode(&b)
	fmt.Printf("per-query δ0 = δ/(2k) = %g\n", b.PerQuery.Delta)
	// A name is never reused, so a budget cannot be reset by registering again.
	_, err = srv.Register(ctx, req)
	fmt.Println("registering again:", errors.Is(err, server.ErrExists))
	// Output:
	// pay fixed 10 csv
	// per-query δ0 = δ/(2k) = 5e-08
	// registering again: true
}
