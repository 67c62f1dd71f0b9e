package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
)

// The messages issue 25 found, one case each: every message names the flag the user
// typed with its value and valid range, without Go zero values, doubled prefixes or
// 17-digit floats.
func TestIssueMessages(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "l.db")
	mustSucceed(t, "", "ledger", "init", "--db", db)
	mustSucceed(t, "", "ledger", "create", "--db", db, "--budget", "flu", "--eps", "1", "--delta", "1e-6", "--policy", "fixed", "--releases", "1")
	mustSucceed(t, "", "ledger", "spend", "--db", db, "--budget", "flu", "--eps", "0.5")
	for _, c := range []struct {
		errorCase
		path    string
		notWant []string
	}{
		// "dpkit median: median: open nope.csv"
		{errorCase{name: "median missing file", args: []string{"median", "--file", filepath.Join(dir, "nope.csv"), "--column", "a", "--lower", "0", "--upper", "1", "--eps", "1"},
			code: exitFailure, want: []string{"dpkit median: cannot read --file", "nope.csv\": no such file or directory"}}, "dpkit median", []string{"median: median", "open "}},
		// "invalid Upper = 1: want > Lower" (the flags are --upper and --lower)
		{errorCase{name: "median bounds", args: []string{"median", "--file", "x.csv", "--column", "a", "--lower", "1", "--upper", "1", "--eps", "1"},
			code: exitUsage, want: []string{"invalid --upper 1: want > --lower"}}, "dpkit median", []string{"Upper", "Lower"}},
		// "invalid pld: delta = 1"
		{errorCase{name: "calibrate gaussian delta 1", args: []string{"calibrate", "--mechanism", "gaussian", "--sensitivity", "1", "--k", "10", "--eps", "1", "--delta", "1"},
			code: exitUsage, want: []string{"invalid --delta 1 for --mechanism: want in [0, 1)"}}, "dpkit calibrate", []string{"pld"}},
		// "budget exceeded: budget "flu" (fixed) exceeded"
		{errorCase{name: "refused spend", args: []string{"ledger", "spend", "--db", db, "--budget", "flu", "--eps", "0.5"},
			code: exitFailure, want: []string{`dpkit ledger spend: budget "flu" (fixed) exceeded: release (ε=0.5, δ=0) refused`}}, "dpkit ledger spend", []string{"ledger: ", "budget exceeded: budget"}},
		// floats as 0.029999999999999999
		{errorCase{name: "shortest floats", args: []string{"compose", "--mech", "0.1,0.001,30", "--delta", "0.0298", "--theorem", "basic"},
			code: exitFailure, want: []string{"Σ δ_ℓ = 0.030000000000000002 (got 0.0298)"}}, "dpkit compose", []string{"0.0299999"}},
		// "invalid epsilon = <nil>": a missing value says "missing"
		{errorCase{name: "missing eps", args: []string{"calibrate", "--delta", "1e-6", "--k", "3"},
			code: exitUsage, want: []string{"missing --eps"}}, "dpkit calibrate", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkError(t, c.path, c.errorCase)
			r := dpkitRun(t, c.stdin, c.args...)
			for _, bad := range append(c.notWant, "<nil>", "dpkit: ") {
				if strings.Contains(r.stderr, bad) {
					t.Errorf("message %q contains %q", r.stderr, bad)
				}
			}
		})
	}
	// A parameter error with no value is "missing NAME", never "= <nil>".
	err := &dpkit.ParamError{Pkg: "query", Name: "epsilon", Want: "the ε of this query"}
	if got := message(err); got != "missing epsilon: want the ε of this query" {
		t.Errorf("message = %q", got)
	}
	if got := (paramFlags{names: map[string]string{"epsilon": "--eps"}}).translate(err).Error(); got != "missing --eps: want the ε of this query" {
		t.Errorf("translated = %q", got)
	}
}

// With --json every error is one JSON object on stdout, with the flag it concerns and a
// code that goes with the unchanged exit status.
func TestJSONErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		flag any
		want string
	}{
		{[]string{"compose", "--mech", "1,x", "--delta", "0.1", "--json"}, exitUsage, "--mech", `invalid --mech "1,x": delta = "x": want in [0, 1]`},
		{[]string{"compose", "--json", "--mech", "0.1", "--delta", "2"}, exitUsage, "--delta", `invalid --delta "2": want in [0, 1]`},
		{[]string{"compose", "--json", "--mech", "0.1", "--frobnicate"}, exitUsage, "--frobnicate", "unknown flag: --frobnicate"},
		{[]string{"compose", "--json", "--mech", "0.1", "-x"}, exitUsage, "-x", "unknown shorthand flag: 'x' in -x"},
		{[]string{"compose", "--json", "--mech", "0.1"}, exitUsage, "--delta", "missing --delta or --eps"},
		{[]string{"compose", "--json", "--mech", "1,0.001,30", "--delta", "0.02"}, exitFailure, nil, "infeasible: total delta 0.02 is below the floor"},
		{[]string{"calibrate", "--json", "--eps", "1", "--delta", "1e-6", "--k", "0"}, exitUsage, "--k", `invalid --k "0": want an integer in [1, 1000000000000]`},
		{[]string{"version", "--json", "extra"}, exitUsage, nil, `unexpected argument "extra"`},
		{[]string{"compose", "--json=true", "--mech", "0.1", "--eps", "1", "--theorem", "rdp"}, exitUsage, "--theorem", `invalid --theorem "rdp"`},
	} {
		r := dpkitRun(t, "", c.args...)
		if r.code != c.code {
			t.Errorf("%v: exit %d, want %d", c.args, r.code, c.code)
		}
		e := checkJSONError(t, r, c.code, []string{c.want})
		if e["flag"] != c.flag {
			t.Errorf("%v: flag %#v, want %#v", c.args, e["flag"], c.flag)
		}
	}
}

// compose --theorem all fails (exit 1) when no theorem can reach the target, in text and
// in JSON; with one feasible theorem it succeeds and lists the others' reasons.
func TestComposeAllInfeasible(t *testing.T) {
	args := []string{"compose", "--mech", "1,0.001,30", "--delta", "0.02", "--theorem", "all"}
	checkError(t, "dpkit compose", errorCase{args: args, code: exitFailure,
		want: []string{"infeasible: no theorem of --theorem all reaches the target: total delta 0.02 is below the floor"}})
	checkError(t, "dpkit compose", errorCase{args: append(args, "--json"), code: exitFailure, want: []string{"no theorem of --theorem all reaches the target"}})
}

// Counts accept the same syntax everywhere: 1e9 in --mech, in --mechanism's count= and in
// --k, and they mean the same number.
func TestCountSyntax(t *testing.T) {
	a := decodeJSON(t, mustSucceed(t, "", "compose", "--mech", "1e-9,0,1e9", "--delta", "1e-6", "--json"))
	b := decodeJSON(t, mustSucceed(t, "", "compose", "--mech", "1e-9,0,1000000000", "--delta", "1e-6", "--json"))
	if number(t, a, "epsilon") != number(t, b, "epsilon") {
		t.Errorf("--mech count 1e9: %v, 1000000000: %v", a, b)
	}
	c := decodeJSON(t, mustSucceed(t, "", "calibrate", "--eps", "1", "--delta", "1e-6", "--k", "1e3", "--json"))
	d := decodeJSON(t, mustSucceed(t, "", "calibrate", "--eps", "1", "--delta", "1e-6", "--k", "1000", "--json"))
	if number(t, c, "epsilon_per_query") != number(t, d, "epsilon_per_query") || number(t, c, "k") != 1000 {
		t.Errorf("--k 1e3: %v, 1000: %v", c, d)
	}
	e := decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", "laplace:scale=10,count=1e3", "--delta", "1e-6", "--json"))
	f := decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", "laplace:scale=10,count=1000", "--delta", "1e-6", "--json"))
	if number(t, e, "epsilon") != number(t, f, "epsilon") {
		t.Errorf("count=1e3: %v, count=1000: %v", e, f)
	}
}

// A total δ of 1 is met at every per-query ε: calibrate says so (it used to print the
// end of its search bracket, 838860.8).
func TestCalibrateUnbounded(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "calibrate", "--eps", "1", "--delta", "1", "--k", "10", "--json"))
	if v["epsilon_per_query"] != nil || v["unbounded"] != true {
		t.Errorf("got %v, want epsilon_per_query null and unbounded true", v)
	}
	if out := mustSucceed(t, "", "calibrate", "--eps", "1", "--delta", "1", "--k", "10"); !strings.HasPrefix(out, "epsilon per query  unbounded") {
		t.Errorf("text:\n%s", out)
	}
}

func TestVersionAndCompletion(t *testing.T) {
	out := mustSucceed(t, "", "--version")
	if out != mustSucceed(t, "", "version") || !strings.HasPrefix(out, "dpkit ") {
		t.Errorf("--version %q, version %q", out, mustSucceed(t, "", "version"))
	}
	v := decodeJSON(t, mustSucceed(t, "", "version", "--json"))
	if keysOf(v) != "go,version" || !strings.HasPrefix(v["go"].(string), "go") {
		t.Errorf("version --json: %v", v)
	}
	for shell, marker := range map[string]string{"bash": "complete -o default -F __start_dpkit dpkit", "zsh": "#compdef dpkit", "fish": "complete -c dpkit"} {
		if out := mustSucceed(t, "", "completion", shell); !strings.Contains(out, marker) {
			t.Errorf("completion %s lacks %q", shell, marker)
		}
	}
	checkError(t, "dpkit completion", errorCase{args: []string{"completion", "tcsh"}, code: exitUsage, want: []string{`unknown shell "tcsh"`}})
	// The completion scripts ask dpkit itself for flag values.
	r := dpkitRun(t, "", "__complete", "compose", "--theorem", "")
	if r.code != exitOK || !strings.Contains(r.stdout, "exact\n") || !strings.Contains(r.stdout, "all\n") {
		t.Errorf("--theorem completions: exit %d\n%s", r.code, r.stdout)
	}
}

// A panic anywhere in a command is an internal error: exit status 3, one line, in text
// and in JSON; no stack trace.
func TestPanicIsInternalError(t *testing.T) {
	saved := commands
	t.Cleanup(func() { commands = saved })
	register(command{name: "panictest", order: 9999, summary: "test", build: func(s streams) *cobra.Command {
		cmd := &cobra.Command{Use: "panictest", RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 { // in a job's goroutine, as long computations run
				return runJob(cmd.Context(), s.stderr, "x", func(context.Context, progressFunc) error { panic("boom in a job") })
			}
			i := len(args) + 3
			return fmt.Errorf("%d", []int{1}[i]) // index out of range: a runtime error
		}}
		cmd.Flags().Bool("json", false, "")
		return cmd
	}})
	for _, args := range [][]string{{"panictest"}, {"panictest", "job"}} {
		checkError(t, "dpkit panictest", errorCase{args: args, code: exitInternal, want: []string{"internal error: ", "a bug in dpkit"}})
		checkError(t, "dpkit panictest", errorCase{args: append(args, "--json"), code: exitInternal, want: []string{"internal error: "}})
	}
	r := dpkitRun(t, "", "panictest", "job")
	if !strings.Contains(r.stderr, "boom in a job") || strings.Contains(r.stderr, "goroutine") {
		t.Errorf("stderr %q: want the panic value and no stack", r.stderr)
	}
}

// Ctrl-C (a cancelled context) stops a command with exit status 130, also when the
// computation does not watch the context.
func TestInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"compose", "--mech", "0.1,0,10", "--delta", "1e-6"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitInterrupted || stderr.String() != "dpkit compose: interrupted\n" || stdout.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 130 and \"interrupted\"", code, stdout.String(), stderr.String())
	}

	ctx, cancel = context.WithCancel(context.Background())
	block := make(chan struct{})
	defer close(block)
	done := make(chan error, 1)
	go func() {
		done <- runJob(ctx, &stderr, "x", func(context.Context, progressFunc) error { <-block; return nil })
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("runJob = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("runJob did not return after cancellation")
	}
}

// Progress is drawn on a terminal only, after progressDelay, and erased at the end.
func TestProgressOnTerminalOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("waits past progressDelay")
	}
	job := func(ctx context.Context, progress progressFunc) error {
		for i := range 10 {
			progress(int64(i), 10)
			time.Sleep(progressDelay / 6)
		}
		return nil
	}
	var quiet bytes.Buffer
	if err := runJob(context.Background(), &quiet, "working", job); err != nil || quiet.Len() != 0 {
		t.Errorf("not a terminal: err %v, wrote %q", err, quiet.String())
	}
	forceProgress = true
	defer func() { forceProgress = false }()
	var tty bytes.Buffer
	if err := runJob(context.Background(), &tty, "working", job); err != nil {
		t.Fatal(err)
	}
	if out := tty.String(); !strings.Contains(out, "working") || !strings.Contains(out, "%") {
		t.Errorf("terminal output %q: want the description and a percentage", out)
	}
}

// lockedBuffer is a bytes.Buffer safe to read while a command writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A long mechanism-aware composition shows pld's progress (Options.Progress: a bar with a
// percentage, on a terminal) and stops on Ctrl-C with exit status 130 (issue 24 item 4).
func TestComposeProgressAndInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("waits past progressDelay")
	}
	forceProgress = true
	defer func() { forceProgress = false }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout bytes.Buffer
	var stderr lockedBuffer
	code := make(chan int, 1)
	go func() {
		// Minutes of work at this tolerance (it is not reached: a refinement to the end).
		code <- run(ctx, []string{"compose", "--mechanism", "subsampled-laplace:scale=2,q=0.01,count=100000",
			"--mechanism", "rr:eps=0.3,k=3,count=50", "--delta", "1e-6", "--tolerance", "1e-8"}, strings.NewReader(""), &stdout, &stderr)
	}()
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(stderr.String(), "%") {
		select {
		case c := <-code:
			t.Fatalf("finished (exit %d) before showing progress: %q", c, stderr.String())
		case <-deadline:
			t.Fatalf("no progress bar after 2 minutes: %q", stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !strings.Contains(stderr.String(), "composing") {
		t.Errorf("progress %q: want the description", stderr.String())
	}
	cancel()
	select {
	case c := <-code:
		if c != exitInterrupted || !strings.Contains(stderr.String(), "dpkit compose: interrupted") {
			t.Errorf("exit %d, stderr %q; want 130 and \"interrupted\"", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not stopped 10 s after the interrupt")
	}
}
