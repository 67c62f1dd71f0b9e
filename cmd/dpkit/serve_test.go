package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dpkit/dpkit/internal/pgtest"
)

func TestServeUsageErrors(t *testing.T) {
	for _, c := range []errorCase{
		{name: "argument", args: []string{"serve", "extra"}, code: exitUsage, want: []string{`unexpected argument "extra"`}},
		{name: "addr", args: []string{"serve", "--addr", "nope"}, code: exitUsage, want: []string{`invalid --addr "nope"`}},
		{name: "max-body", args: []string{"serve", "--max-body", "0"}, code: exitUsage, want: []string{"--max-body"}},
		{name: "db", args: []string{"serve", "--db", ""}, code: exitUsage, want: []string{"--db"}},
	} {
		t.Run(c.name, func(t *testing.T) { checkError(t, "dpkit serve", c) })
	}
	if out := mustSucceed(t, "", "serve", "--help"); !strings.Contains(out, "Usage: dpkit serve") {
		t.Fatalf("help: %q", out)
	}
}

// buildDpkit builds the real binary into a temporary directory.
func buildDpkit(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dpkit")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// daemon is a running "dpkit serve" child process.
type daemon struct {
	cmd    *exec.Cmd
	banner map[string]string
	stdout *bufio.Reader
	stderr *bytes.Buffer
}

// startServe starts bin serve with args on a free port and reads the first line.
func startServe(t *testing.T, bin string, args ...string) *daemon {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--query-timeout", "3s"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, stdout: bufio.NewReader(out), stderr: &bytes.Buffer{}}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	lineCh := make(chan string, 1)
	go func() {
		line, _ := d.stdout.ReadString('\n')
		lineCh <- line
	}()
	var line string
	select {
	case line = <-lineCh:
	case <-time.After(30 * time.Second):
		t.Fatalf("dpkit serve printed nothing in 30 s; stderr:\n%s", d.stderr)
	}
	if err := json.Unmarshal([]byte(line), &d.banner); err != nil {
		t.Fatalf("first line %q is not a JSON object: %v; stderr:\n%s", line, err, d.stderr)
	}
	go io.Copy(io.Discard, d.stdout) // keep the pipe drained
	return d
}

func (d *daemon) url() string { return d.banner["url"] }

// call sends one request and returns the status and decoded body.
func call(t *testing.T, method, url, key string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, r)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v map[string]any
	json.NewDecoder(res.Body).Decode(&v)
	return res.StatusCode, v
}

// TestServeEndToEnd runs the real binary: --demo prints the keys and URL first, an
// analyst queries over HTTP, SIGTERM stops it gracefully (exit 0), and a restart on the
// same database keeps datasets, keys and budgets without registering the demo twice.
func TestServeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := buildDpkit(t)
	db := filepath.Join(t.TempDir(), "e2e.db")
	d := startServe(t, bin, "--demo", "--db", db)
	for _, k := range []string{"admin_key", "analyst_key", "url"} {
		if d.banner[k] == "" {
			t.Fatalf("banner lacks %q: %v", k, d.banner)
		}
	}
	// A key that is not a demo key: it outlives the restart (the demo keys do not).
	code, v := call(t, "POST", d.url()+"/v1/keys", d.banner["admin_key"], map[string]any{"name": "e2e", "role": "analyst", "datasets": []string{"flu"}})
	if code != 201 {
		t.Fatalf("create key: %d %v", code, v)
	}
	analyst := v["key"].(string)
	code, v = call(t, "POST", d.url()+"/v1/datasets/flu/query", analyst, map[string]any{"sql": "SELECT COUNT(*) FROM flu WHERE flu = 1", "idempotency_key": "e2e"})
	if code != 200 || v["remaining_queries"] != 19.0 || v["mechanism"] == "" {
		t.Fatalf("query: %d %v\nstderr: %s", code, v, d.stderr)
	}
	first := v["result"]
	if code, _ := call(t, "GET", d.url()+"/", "", nil); code != 0 && code != 200 {
		// The page is HTML: call() cannot decode it, but the status must be 200.
		t.Fatalf("page: %d", code)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v\nstderr: %s", err, d.stderr)
	}

	d2 := startServe(t, bin, "--demo", "--db", db)
	code, v = call(t, "POST", d2.url()+"/v1/datasets/flu/query", analyst, map[string]any{"sql": "SELECT COUNT(*) FROM flu WHERE flu = 1", "idempotency_key": "e2e"})
	if code != 200 || v["result"] != first || v["remaining_queries"] != 19.0 {
		t.Fatalf("replay after restart with the old key: %d %v (first result %v)", code, v, first)
	}
	if code, _ := call(t, "GET", d2.url()+"/v1/datasets", d.banner["analyst_key"], nil); code != 401 {
		t.Fatalf("the demo analyst key of the first start after the restart: %d, want 401 (revoked)", code)
	}
	code, v = call(t, "GET", d2.url()+"/v1/datasets", d2.banner["admin_key"], nil)
	if code != 200 || len(v["datasets"].([]any)) != 3 {
		t.Fatalf("datasets after restart: %d %v", code, v)
	}
	d2.cmd.Process.Signal(syscall.SIGTERM)
	d2.cmd.Wait()

	// Without --demo on a fresh database: an admin key is minted and printed once.
	d3 := startServe(t, bin, "--db", filepath.Join(t.TempDir(), "fresh.db"))
	if d3.banner["admin_key"] == "" || d3.banner["analyst_key"] != "" {
		t.Fatalf("fresh banner: %v", d3.banner)
	}
	d3.cmd.Process.Signal(syscall.SIGTERM)
	d3.cmd.Wait()
}

// TestServeKillRestart sends queries from 64 concurrent clients to the real binary on a
// dataset allowing 100 queries, SIGKILLs it mid-load, restarts it on the same database
// and checks that no acknowledged answer was lost (every 200 is in the audit log with its
// answer), that the ledger never exceeded the capacity, and that after the restart the
// remaining capacity is answered exactly: total accepted = capacity.
func TestServeKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	const capacity, clients = 100, 64
	bin := buildDpkit(t)
	db := filepath.Join(t.TempDir(), "kill.db")
	d := startServe(t, bin, "--demo", "--db", db)
	admin := d.banner["admin_key"]
	code, v := call(t, "POST", d.url()+"/v1/datasets", admin, map[string]any{
		"name":    "load",
		"columns": map[string]any{"x": map[string]any{"type": "int", "min": 0, "max": 10}},
		"csv":     "x\n1\n2\n3\n",
		"budget":  map[string]any{"epsilon": 1, "delta": 1e-6},
		"policy":  map[string]any{"mode": "fixed", "max_queries": capacity},
	})
	if code != 201 {
		t.Fatalf("register: %d %v", code, v)
	}

	var mu sync.Mutex
	acked := map[string]any{} // idempotency key → result of every 200
	var sent atomic.Int64
	load := func(url string, stop <-chan struct{}, prefix string, limit int) {
		var wg sync.WaitGroup
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				client := &http.Client{Timeout: 20 * time.Second}
				for i := range limit {
					select {
					case <-stop:
						return
					default:
					}
					key := fmt.Sprintf("%s-%d-%d", prefix, c, i)
					b, _ := json.Marshal(map[string]any{"sql": "SELECT SUM(x) FROM load", "idempotency_key": key})
					req, _ := http.NewRequest("POST", url+"/v1/datasets/load/query", bytes.NewReader(b))
					req.Header.Set("Authorization", "Bearer "+admin)
					sent.Add(1)
					res, err := client.Do(req)
					if err != nil {
						return // the server was killed
					}
					var body map[string]any
					err = json.NewDecoder(res.Body).Decode(&body)
					res.Body.Close()
					if res.StatusCode == 200 && err == nil {
						mu.Lock()
						acked[key] = body["result"]
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
	}

	// Phase 1: kill the server once about 30 answers were acknowledged.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { load(d.url(), stop, "p1", 10); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 30 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.cmd.Wait()
	close(stop)
	<-done
	mu.Lock()
	phase1 := len(acked)
	mu.Unlock()
	if phase1 >= capacity {
		t.Fatalf("the load finished (%d answers) before the kill", phase1)
	}

	// Phase 2: restart, check nothing acknowledged was lost, use up the rest.
	d2 := startServe(t, bin, "--db", db)
	code, v = call(t, "GET", d2.url()+"/v1/datasets/load/releases", admin, nil)
	if code != 200 {
		t.Fatalf("releases: %d %v", code, v)
	}
	rels := v["releases"].([]any)
	recorded := map[string]bool{}
	for _, r := range rels {
		r := r.(map[string]any)
		if ans, ok := r["answer"].(map[string]any); ok {
			recorded[fmt.Sprint(ans["result"])] = true
		}
	}
	if len(rels) < phase1 || len(rels) > capacity {
		t.Fatalf("%d releases recorded, %d acknowledged before the kill (capacity %d)", len(rels), phase1, capacity)
	}
	mu.Lock()
	for key, result := range acked {
		if !recorded[fmt.Sprint(result)] {
			t.Errorf("acknowledged answer %s (result %v) missing after the restart", key, result)
		}
	}
	mu.Unlock()
	before := len(rels)

	load(d2.url(), make(chan struct{}), "p2", 4)
	code, v = call(t, "GET", d2.url()+"/v1/datasets/load/budget", admin, nil)
	if code != 200 || v["releases"] != float64(capacity) || v["remaining_queries"] != 0.0 {
		t.Fatalf("budget after phase 2: %d %v", code, v)
	}
	mu.Lock()
	total := len(acked)
	mu.Unlock()
	// Every recorded release of phase 2 was acknowledged; releases recorded in phase 1
	// but cut off by the kill before their answer left are charged but never answered.
	if lost := capacity - before; total-phase1 != lost {
		t.Fatalf("phase 2 acknowledged %d answers, want %d (capacity %d − %d recorded)", total-phase1, lost, capacity, before)
	}
	d2.cmd.Process.Signal(syscall.SIGTERM)
	d2.cmd.Wait()
}

// servePostgresURL returns a URL selecting a fresh schema of the PostgreSQL test server
// (see package pgtest).
func servePostgresURL(t *testing.T) string { return pgtest.Schema(t, "dpkit_serve_") }

// TestServePostgresTwoProcesses runs two "dpkit serve" processes on one PostgreSQL
// database and sends queries from 64 concurrent clients, split evenly across them, to
// one dataset whose fixed policy allows 50 queries (registered through the first
// process): exactly 50 are answered in total, every other one is refused with 409, the
// ledger records exactly the 50 answered releases (each once, with its answer), and
// both processes report the same exhausted budget. A restart of the second process
// keeps everything (a replay returns the same answer).
func TestServePostgresTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	db := servePostgresURL(t)
	const capacity, clients, perClient = 50, 64, 4
	bin := buildDpkit(t)
	a := startServe(t, bin, "--demo", "--db", db)
	b := startServe(t, bin, "--db", db)
	if b.banner["admin_key"] != "" {
		t.Fatalf("the second process minted an admin key although the database has one: %v", b.banner)
	}
	admin := a.banner["admin_key"]
	code, v := call(t, "POST", a.url()+"/v1/datasets", admin, map[string]any{
		"name":    "shared",
		"columns": map[string]any{"x": map[string]any{"type": "int", "min": 0, "max": 10}},
		"csv":     "x\n1\n2\n3\n",
		"budget":  map[string]any{"epsilon": 1, "delta": 1e-6},
		"policy":  map[string]any{"mode": "fixed", "max_queries": capacity},
	})
	if code != 201 {
		t.Fatalf("register: %d %v", code, v)
	}
	// The second process sees the dataset registered by the first.
	if code, v := call(t, "GET", b.url()+"/v1/datasets/shared/budget", admin, nil); code != 200 || v["remaining_queries"] != float64(capacity) {
		t.Fatalf("budget through the second process: %d %v", code, v)
	}

	var mu sync.Mutex
	answered := map[float64]string{} // release seq → idempotency key
	results := map[string]any{}      // idempotency key → result
	var perServer [2]int
	var refused, other atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := range clients {
		srv := []*daemon{a, b}[c%2]
		wg.Go(func() {
			client := &http.Client{Timeout: 30 * time.Second}
			<-start
			for i := range perClient {
				key := fmt.Sprintf("c%d-%d", c, i)
				body, _ := json.Marshal(map[string]any{"sql": "SELECT SUM(x) FROM shared", "idempotency_key": key})
				req, _ := http.NewRequest("POST", srv.url()+"/v1/datasets/shared/query", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+admin)
				res, err := client.Do(req)
				if err != nil {
					other.Add(1)
					t.Error(err)
					return
				}
				var v map[string]any
				err = json.NewDecoder(res.Body).Decode(&v)
				res.Body.Close()
				switch {
				case res.StatusCode == 200 && err == nil:
					mu.Lock()
					seq, _ := v["release"].(float64)
					if prev, dup := answered[seq]; dup {
						t.Errorf("release %v answered twice (%s and %s)", seq, prev, key)
					}
					answered[seq], results[key] = key, v["result"]
					perServer[c%2]++
					mu.Unlock()
				case res.StatusCode == 409:
					refused.Add(1)
				default:
					other.Add(1)
					t.Errorf("status %d: %v (%v)", res.StatusCode, v, err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	t.Logf("answered by the first process %d, by the second %d; refused %d", perServer[0], perServer[1], refused.Load())
	if n := len(answered); n != capacity || refused.Load() != clients*perClient-capacity || other.Load() != 0 {
		t.Fatalf("answered %d, refused %d, other %d; want exactly %d, %d, 0", n, refused.Load(), other.Load(), capacity, clients*perClient-capacity)
	}
	for _, d := range []*daemon{a, b} {
		code, v := call(t, "GET", d.url()+"/v1/datasets/shared/budget", admin, nil)
		if code != 200 || v["releases"] != float64(capacity) || v["remaining_queries"] != 0.0 {
			t.Fatalf("budget after the load: %d %v", code, v)
		}
	}
	code, v = call(t, "GET", b.url()+"/v1/datasets/shared/releases", admin, nil)
	rels, _ := v["releases"].([]any)
	if code != 200 || len(rels) != capacity {
		t.Fatalf("audit log: %d, %d releases", code, len(rels))
	}
	for _, r := range rels {
		r := r.(map[string]any)
		key, ok := answered[r["release"].(float64)]
		if !ok {
			t.Fatalf("release %v recorded but never answered", r["release"])
		}
		if ans, _ := r["answer"].(map[string]any); ans == nil || ans["result"] != results[key] {
			t.Fatalf("release %v: logged answer %v, returned %v", r["release"], r["answer"], results[key])
		}
	}

	// Restart the second process: a replay through it returns the answer given before.
	b.cmd.Process.Signal(syscall.SIGTERM)
	if err := b.cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v\nstderr: %s", err, b.stderr)
	}
	b = startServe(t, bin, "--db", db)
	for key, result := range results {
		code, v := call(t, "POST", b.url()+"/v1/datasets/shared/query", admin, map[string]any{"sql": "SELECT SUM(x) FROM shared", "idempotency_key": key})
		if code != 200 || v["result"] != result {
			t.Fatalf("replay of %s after a restart: %d %v, want result %v", key, code, v, result)
		}
		break
	}
	for _, d := range []*daemon{a, b} {
		d.cmd.Process.Signal(syscall.SIGTERM)
		d.cmd.Wait()
	}
}
