package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The fuzz targets below send arbitrary bodies to every route that reads a JSON body,
// through the Server's handler (no network), over a fresh SQLite database in a temporary
// directory: they never touch a database or budget outside the test. Each checks the
// invariants of the API: an answer is a success of the route's shape or one of the
// expected client errors in the one JSON error shape — never a 500, a panic or another
// shape — and a request that fails charges nothing.

// fuzzEnv is a service for fuzzing: the demo datasets and keys, plus a fixed dataset
// with room for 10^5 queries and an adaptive one.
func fuzzEnv(f *testing.F) *env {
	e := newEnv(f)
	for _, spec := range []map[string]any{salarySpec("pay"), salarySpec("ad")} {
		if spec["name"] == "pay" {
			spec["budget"] = map[string]any{"epsilon": 1e6, "delta": 1e-6}
			spec["policy"] = map[string]any{"mode": "fixed", "max_queries": 100_000}
		} else {
			spec["policy"] = map[string]any{"mode": "adaptive"}
		}
		body, _ := json.Marshal(spec)
		if code, _, raw := serve(e.srv, "POST", "/v1/datasets", e.admin, body); code != 201 {
			f.Fatalf("register %s: %d %s", spec["name"], code, raw)
		}
	}
	return e
}

// serve sends one request straight to the handler.
func serve(h http.Handler, method, path, key string, body []byte) (int, map[string]any, []byte) {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var v map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &v)
	return w.Code, v, w.Body.Bytes()
}

// checkAnswer fails unless the answer has status in ok, or is an error of status in
// errs in the one error shape.
func checkAnswer(t *testing.T, code int, v map[string]any, raw []byte, ok, errs []int) {
	t.Helper()
	for _, c := range ok {
		if code == c {
			if v == nil {
				t.Fatalf("status %d with a body that is not a JSON object: %q", code, raw)
			}
			return
		}
	}
	for _, c := range errs {
		if code == c {
			msg, _ := v["error"].(string)
			if msg == "" || len(v) > 2 || len(v) == 2 && v["position"] == nil {
				t.Fatalf("status %d without the error shape: %q", code, raw)
			}
			return
		}
	}
	t.Fatalf("status %d: %s", code, raw)
}

// releases returns how many releases dataset name has recorded.
func releases(t *testing.T, e *env, name string) float64 {
	t.Helper()
	code, v, raw := serve(e.srv, "GET", "/v1/datasets/"+name+"/budget", e.admin, nil)
	if code != 200 {
		t.Fatalf("budget of %s: %d %s", name, code, raw)
	}
	return v["releases"].(float64)
}

// FuzzQueryBody: POST /v1/datasets/{name}/query on a fixed and an adaptive dataset.
// A 200 records exactly one release (none when it replays an idempotency key); anything
// else records none.
func FuzzQueryBody(f *testing.F) {
	for _, s := range []string{
		`{"sql":"SELECT COUNT(*) FROM pay"}`,
		`{"sql":"SELECT SUM(salary) FROM pay WHERE dept = 'eng' OR salary > 30000","idempotency_key":"k"}`,
		`{"sql":"SELECT AVG(salary) FROM ad","epsilon":0.001}`,
		`{"sql":"SELECT MEDIAN(salary) FROM ad","epsilon":0.01,"delta":0}`,
		`{"sql":"SELECT QUANTILE(salary, 0.9) FROM pay"}`,
		`{"sql":"SELECT COUNT(*) FROM pay GROUP BY dept"}`,
		`{"sql":"SELECT HISTOGRAM(dept) FROM pay"}`,
		`{"sql":"SELECT COUNT(*) FROM pay WHERE","epsilon":1}`,
		`{"sql":"SELECT COUNT(*) FROM ad","epsilon":-1}`,
		`{"sql":"SELECT COUNT(*) FROM ad","epsilon":1e308,"delta":2}`,
		`{"sql":"SELECT COUNT(*) FROM pay","eps":1}`,
		`{"sql":"","idempotency_key":"\u0000"}`,
		`{} {}`, `[]`, `null`, ``, `{"sql":`,
	} {
		f.Add(uint8(0), []byte(s))
		f.Add(uint8(1), []byte(s))
	}
	e := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		name := []string{"pay", "ad"}[which%2]
		before := releases(t, e, name)
		code, v, raw := serve(e.srv, "POST", "/v1/datasets/"+name+"/query", e.admin, body)
		checkAnswer(t, code, v, raw, []int{200}, []int{400, 409, 413})
		after := releases(t, e, name)
		switch {
		case code == 200 && after != before && after != before+1:
			t.Fatalf("a 200 recorded %v releases", after-before)
		case code != 200 && after != before:
			t.Fatalf("a %d recorded %v releases: %s", code, after-before, raw)
		case code == 200 && v["mechanism"] == nil:
			t.Fatalf("a 200 without a mechanism: %s", raw)
		}
	})
}

// FuzzCreateDatasetBody: POST /v1/datasets. A 201 registers a dataset that can be read
// back; anything else registers none. Bodies naming a server-side "path" or a
// PostgreSQL "table" are not sent: they would make the fuzzer read files of the machine
// and connect to hosts (their handling is tested by TestCreateDataset and
// TestTableDataset); nor are fixed policies of more than 10^4 queries, whose calibration
// takes up to seconds (the ledger's exact composition at k = 10^9: 1.4 s), which would
// stall the fuzzer without exercising anything else.
func FuzzCreateDatasetBody(f *testing.F) {
	for _, name := range []string{"a", "b_2"} {
		seed, _ := json.Marshal(salarySpec(name))
		f.Add(seed)
	}
	for _, s := range []string{
		`{"name":"u","columns":{"id":{"type":"string"},"x":{"type":"float","min":-1,"max":1,"domain":[0.5,"1"]}},"privacy_unit":{"column":"id","max_rows":2},"budget":{"epsilon":1,"delta":0},"csv":"id,x\na,0.5\na,2\nb,-3\n"}`,
		`{"name":"v","columns":{"x":{"type":"int","min":0,"max":1}},"budget":{"epsilon":1,"delta":1e-6},"policy":{"mode":"adaptive"},"csv":"x\n1\n"}`,
		`{"name":"w","columns":{"x":{"type":"int","min":2,"max":1}},"budget":{"epsilon":1,"delta":1e-6},"csv":"x\n1\n"}`,
		`{"name":"1x","columns":{},"budget":{"epsilon":0,"delta":1},"csv":"x\n"}`,
		`{"name":"z","columns":{"x":{"type":"int","min":0,"max":1}},"budget":{"epsilon":1,"delta":1e-6},"policy":{"mode":"fixed","max_queries":0},"csv":"x\n\"1\n"}`,
		`{}`, `{"name":"x"}`, `[1]`, `"s"`,
	} {
		f.Add([]byte(s))
	}
	e := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req CreateDatasetRequest
		if json.Unmarshal(body, &req) == nil && (req.Path != "" || req.Table != nil) {
			t.Skip("path and table registrations read the machine's files and connect to hosts")
		}
		if req.Policy != nil && req.Policy.MaxQueries > 10_000 {
			t.Skip("a long calibration")
		}
		code, v, raw := serve(e.srv, "POST", "/v1/datasets", e.admin, body)
		checkAnswer(t, code, v, raw, []int{201}, []int{400, 409, 413})
		if code != 201 {
			return
		}
		name, _ := v["name"].(string)
		if c, _, raw := serve(e.srv, "GET", "/v1/datasets/"+name, e.admin, nil); c != 200 {
			t.Fatalf("registered %q, then GET: %d %s", name, c, raw)
		}
		if r := releases(t, e, name); r != 0 {
			t.Fatalf("a new dataset has %v releases", r)
		}
	})
}

// FuzzCreateKeyBody: POST /v1/keys. A 201 returns a secret that authenticates as the
// new key, with the role asked for.
func FuzzCreateKeyBody(f *testing.F) {
	for _, s := range []string{
		`{"name":"carol","role":"analyst","datasets":["pay"]}`,
		`{"name":"root","role":"admin"}`,
		`{"name":"x","role":"analyst","datasets":["nope"]}`,
		`{"name":"","role":"analyst"}`,
		`{"name":"x","role":"owner"}`,
		`{"name":"x","role":"analyst","datasets":null,"extra":1}`,
		`{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	e := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		code, v, raw := serve(e.srv, "POST", "/v1/keys", e.admin, body)
		checkAnswer(t, code, v, raw, []int{201}, []int{400, 413})
		if code != 201 {
			return
		}
		secret, _ := v["key"].(string)
		c, who, raw := serve(e.srv, "GET", "/v1/whoami", secret, nil)
		if c != 200 || who["id"] != v["id"] || who["role"] != v["role"] || !strings.HasPrefix(secret, keyPrefix) {
			t.Fatalf("new key %s: whoami %d %s", v["id"], c, raw)
		}
	})
}
