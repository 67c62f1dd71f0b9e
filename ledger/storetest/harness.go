package storetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
)

// Harness describes a backend to the suite.
type Harness struct {
	// Open opens the store at loc; create allows creating a new ledger there.
	Open func(ctx context.Context, loc string, create bool) (ledger.Store, error)
	// NewLocation returns a fresh, empty location for one test (a file path, or the
	// URL of a fresh PostgreSQL schema), removed when the test ends.
	NewLocation func(t testing.TB) string
	// Preload records rels (spent on chain) in one transaction through the code path
	// of Spend, deciding each with decide; it lets benchmarks build a long history
	// quickly. Optional.
	Preload func(ctx context.Context, s ledger.Store, chain []string, rels []ledger.Release, decide ledger.Decide) error
}

// Environment of a child process.
const (
	envChild   = "DPKIT_STORETEST_CHILD" // "spend"
	envLoc     = "DPKIT_STORETEST_LOC"
	envBudget  = "DPKIT_STORETEST_BUDGET"
	envEpsilon = "DPKIT_STORETEST_EPSILON"
	envWorkers = "DPKIT_STORETEST_WORKERS"
	envPrefix  = "DPKIT_STORETEST_PREFIX"
)

// Main runs the tests, or, in a child process started by the suite, the child's work.
// Call it from the backend's TestMain: func TestMain(m *testing.M) { storetest.Main(m, h) }.
func Main(m *testing.M, h Harness) {
	if os.Getenv(envChild) == "spend" {
		os.Exit(childSpend(h))
	}
	os.Exit(m.Run())
}

// childSpend spends releases of the given ε on one budget from several goroutines until
// the budget refuses, printing "try KEY" before each spend and "ok KEY SEQ" after each
// acknowledged one, on stdout (unbuffered), and "done" at the end.
func childSpend(h Harness) int {
	ctx := context.Background()
	eps, err := strconv.ParseFloat(os.Getenv(envEpsilon), 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: bad epsilon:", err)
		return 3
	}
	workers, _ := strconv.Atoi(os.Getenv(envWorkers))
	if workers < 1 {
		workers = 1
	}
	s, err := h.Open(ctx, os.Getenv(envLoc), false)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 3
	}
	defer s.Close()
	l := ledger.New(s)
	// Start together with the other children: announce, then wait for "go" on stdin.
	fmt.Fprintln(os.Stdout, "ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "child: no go signal:", err)
		return 3
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", args...) // os.Stdout is unbuffered
		mu.Unlock()
	}
	var wg sync.WaitGroup
	var failed error
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("%s-%d-%d", os.Getenv(envPrefix), w, i)
				say("try %s", key)
				r, err := l.Spend(ctx, ledger.Request{Budget: os.Getenv(envBudget), Cost: dpkit.Budget{Epsilon: eps}, Key: key, Analyst: "child"})
				if errors.Is(err, ledger.ErrBudgetExceeded) {
					return
				}
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
				say("ok %s %d", key, r.Release.Seq)
				time.Sleep(2 * time.Millisecond) // requests arrive with gaps: let the other process in
			}
		})
	}
	wg.Wait()
	if failed != nil {
		fmt.Fprintln(os.Stderr, "child:", failed)
		return 4
	}
	say("done")
	return 0
}

// child is a running child process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

// ready waits until the child has opened the ledger.
func (c *child) ready(t *testing.T) {
	t.Helper()
	select {
	case line := <-c.lines:
		if line != "ready" {
			t.Fatalf("child said %q, want ready", line)
		}
	case <-time.After(time.Minute):
		t.Fatal("child not ready within a minute")
	}
}

// start lets the child spend.
func (c *child) start(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
}

// startChild re-executes the test binary as a spending child.
func startChild(t *testing.T, loc, budget string, eps float64, workers int, prefix string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		envChild+"=spend", envLoc+"="+loc, envBudget+"="+budget,
		envEpsilon+"="+strconv.FormatFloat(eps, 'g', -1, 64),
		envWorkers+"="+strconv.Itoa(workers), envPrefix+"="+prefix)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: in, lines: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if stderr.Len() > 0 {
			t.Logf("child %s stderr: %s", prefix, stderr.String())
		}
	})
	return c
}

// collect reads the child's lines until it exits (or until stop returns true, then the
// child is SIGKILLed), with an overall time limit.
func (c *child) collect(t *testing.T, limit time.Duration, stop func(acked int) bool) (tried, acked map[string]bool, done bool) {
	t.Helper()
	tried, acked = map[string]bool{}, map[string]bool{}
	deadline := time.After(limit)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				if err := c.cmd.Wait(); err != nil && !done {
					t.Errorf("child exited: %v", err) // (collect may run on another goroutine: no Fatal)
				}
				return tried, acked, done
			}
			f := strings.Fields(line)
			switch {
			case len(f) == 2 && f[0] == "try":
				tried[f[1]] = true
			case len(f) == 3 && f[0] == "ok":
				acked[f[1]] = true
			case line == "done":
				done = true
			}
			if stop != nil && stop(len(acked)) {
				c.cmd.Process.Kill() // SIGKILL
				c.cmd.Wait()
				for line := range c.lines { // lines written before the kill
					if f := strings.Fields(line); len(f) == 3 && f[0] == "ok" {
						acked[f[1]] = true
					} else if len(f) == 2 && f[0] == "try" {
						tried[f[1]] = true
					}
				}
				return tried, acked, false
			}
		case <-deadline:
			c.cmd.Process.Kill()
			t.Errorf("child did not finish within %v", limit)
			return tried, acked, false
		}
	}
}
