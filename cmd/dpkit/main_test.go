package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// result is what one in-process run of dpkit produced.
type result struct {
	stdout, stderr string
	code           int
}

// dpkitRun runs dpkit with args and stdin in process.
func dpkitRun(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// mustSucceed runs dpkit and fails the test unless it exits 0 with nothing on stderr.
func mustSucceed(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	r := dpkitRun(t, stdin, args...)
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("dpkit %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// decodeJSON decodes the single JSON object on stdout.
func decodeJSON(t *testing.T, stdout string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value:\n%s", stdout)
	}
	return v
}

// number returns the JSON number v[key] as a float64.
func number(t *testing.T, v map[string]any, key string) float64 {
	t.Helper()
	n, ok := v[key].(json.Number)
	if !ok {
		t.Fatalf("key %q = %#v, want a number (in %v)", key, v[key], v)
	}
	f, err := n.Float64()
	if err != nil {
		t.Fatalf("key %q: %v", key, err)
	}
	return f
}

// keysOf returns the sorted keys of v, joined by commas.
func keysOf(v map[string]any) string {
	return strings.Join(slices.Sorted(maps.Keys(v)), ",")
}

// errorCase is a command line that must fail with status code and a message on stderr
// containing every string in want.
type errorCase struct {
	name  string
	stdin string
	args  []string
	code  int
	want  []string
}

// checkError runs c and checks the error contract. Without --json: nothing on stdout;
// stderr is one line "dpkit CMD: message", followed for usage errors (only) by
// "Try: dpkit CMD --help". With --json: nothing on stderr; stdout is one JSON object
// {"error":{"message":…,"flag":…,"code":…}} whose code goes with the exit status.
func checkError(t *testing.T, cmdPath string, c errorCase) {
	t.Helper()
	r := dpkitRun(t, c.stdin, c.args...)
	if r.code != c.code {
		t.Errorf("exit status %d, want %d (stdout %q, stderr %q)", r.code, c.code, r.stdout, r.stderr)
	}
	if wantsJSON(c.args) {
		checkJSONError(t, r, c.code, c.want)
		return
	}
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	wantLines := 1
	if c.code == exitUsage {
		wantLines = 2
	}
	if !strings.HasSuffix(r.stderr, "\n") || len(lines) != wantLines {
		t.Fatalf("stderr has %d lines, want %d:\n%s", len(lines), wantLines, r.stderr)
	}
	if !strings.HasPrefix(lines[0], cmdPath+": ") {
		t.Errorf("message %q does not start with %q", lines[0], cmdPath+": ")
	}
	for _, w := range c.want {
		if !strings.Contains(lines[0], w) {
			t.Errorf("message %q does not contain %q", lines[0], w)
		}
	}
	if c.code == exitUsage {
		if want := "Try: " + cmdPath + " --help"; lines[1] != want {
			t.Errorf("hint %q, want %q", lines[1], want)
		}
	}
}

// jsonErrorCodes is the JSON error code of each exit status.
var jsonErrorCodes = map[int][]string{
	exitFailure:     {codeInfeasible, codeFailure},
	exitUsage:       {codeUsage},
	exitInternal:    {codeInternal},
	exitInterrupted: {codeInterrupted},
}

// checkJSONError checks the --json error contract of r: one JSON object on stdout with
// exactly the keys message, flag (a string or null) and code, nothing on stderr, and a
// message containing every string in want (the command path is not part of it).
func checkJSONError(t *testing.T, r result, code int, want []string) map[string]any {
	t.Helper()
	if r.stderr != "" {
		t.Errorf("stderr %q, want nothing with --json", r.stderr)
	}
	v := decodeJSON(t, r.stdout)
	e, ok := v["error"].(map[string]any)
	if keysOf(v) != "error" || !ok || keysOf(e) != "code,flag,message" {
		t.Fatalf("JSON error %s: want {\"error\":{\"message\",\"flag\",\"code\"}}", r.stdout)
	}
	if f := e["flag"]; f != nil {
		if s, ok := f.(string); !ok || !strings.HasPrefix(s, "-") {
			t.Errorf("flag %#v: want null or a flag \"--…\" or \"-x\"", f)
		}
	}
	if !slices.Contains(jsonErrorCodes[code], e["code"].(string)) {
		t.Errorf("code %v with exit status %d, want one of %v", e["code"], code, jsonErrorCodes[code])
	}
	msg, _ := e["message"].(string)
	for _, w := range want {
		w = strings.TrimPrefix(w, "dpkit compose: ")
		if !strings.Contains(msg, w) {
			t.Errorf("message %q does not contain %q", msg, w)
		}
	}
	return e
}

func TestRootErrors(t *testing.T) {
	for _, c := range []errorCase{
		{name: "no command", args: nil, code: exitUsage, want: []string{"missing command", "compose"}},
		{name: "unknown command", args: []string{"compse"}, code: exitUsage, want: []string{`unknown command "compse"`}},
		{name: "unknown flag", args: []string{"--frobnicate"}, code: exitUsage, want: []string{"unknown flag: --frobnicate"}},
		{name: "unknown help topic", args: []string{"help", "nosuch"}, code: exitUsage, want: []string{`unknown help topic "nosuch"`}},
	} {
		t.Run(c.name, func(t *testing.T) { checkError(t, "dpkit", c) })
	}
}

func TestHelpListsCommands(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		out := mustSucceed(t, "", args...)
		for _, cmd := range []string{"compose", "calibrate", "region", "version", "help"} {
			if !strings.Contains(out, "\n  "+cmd+" ") {
				t.Errorf("dpkit %s does not list %q:\n%s", args[0], cmd, out)
			}
		}
	}
}

// Every subcommand prints its own hand-written usage, the same for --help and help CMD.
func TestCommandHelp(t *testing.T) {
	for cmd, usage := range map[string]string{
		"compose":   composeUsage,
		"calibrate": calibrateUsage,
		"region":    regionUsage,
		"version":   versionUsage,
	} {
		if got := mustSucceed(t, "", cmd, "--help"); got != usage {
			t.Errorf("dpkit %s --help printed:\n%s", cmd, got)
		}
		if got := mustSucceed(t, "", "help", cmd); got != usage {
			t.Errorf("dpkit help %s printed:\n%s", cmd, got)
		}
		if !strings.HasPrefix(usage, "Usage: dpkit "+cmd) {
			t.Errorf("usage of %s does not start with its synopsis", cmd)
		}
	}
}

func TestVersion(t *testing.T) {
	if out := mustSucceed(t, "", "version"); !strings.HasPrefix(out, "dpkit ") {
		t.Errorf("version printed %q", out)
	}
	checkError(t, "dpkit version", errorCase{args: []string{"version", "extra"}, code: exitUsage, want: []string{`unexpected argument "extra"`}})
}
