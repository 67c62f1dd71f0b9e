package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// consoleExample is one command of a ```console block: the dpkit arguments and the
// output lines the document prints after it ("…" stands for any text).
type consoleExample struct {
	line int
	args []string
	want []string
}

// consoleExamples extracts the dpkit commands of a Markdown document's console blocks
// (fenced as console, sh or nothing):
// lines "$ dpkit …" or "$ go run ./cmd/dpkit …", continued by a trailing "\", with an
// optional "# comment"; the lines up to the next "$" or the block's end are the output.
// Commands that start a server (serve) or are not dpkit (curl) are skipped.
func consoleExamples(t *testing.T, doc string) []consoleExample {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var out []consoleExample
	fenceOpen, inBlock := false, false
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "```"):
			fenceOpen = !fenceOpen
			inBlock = fenceOpen && (l == "```" || strings.HasPrefix(l, "```console") || strings.HasPrefix(l, "```sh"))
			continue
		case !inBlock || !strings.HasPrefix(l, "$ "):
			continue
		}
		start := i + 1
		cmd := strings.TrimPrefix(l, "$ ")
		for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(lines[i])
		}
		if j := strings.Index(cmd, "  #"); j >= 0 {
			cmd = cmd[:j]
		}
		var want []string
		for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") && !strings.HasPrefix(lines[i+1], "```") {
			i++
			want = append(want, lines[i])
		}
		fields := shellFields(cmd)
		switch {
		case len(fields) > 1 && fields[0] == "dpkit":
			fields = fields[1:]
		case len(fields) > 3 && strings.Join(fields[:3], " ") == "go run ./cmd/dpkit":
			fields = fields[3:]
		default:
			continue // not a dpkit command (curl)
		}
		if fields[0] == "serve" || slices.ContainsFunc(fields, needsFile) {
			continue // a server, or an input file the document only shows
		}
		out = append(out, consoleExample{line: start, args: fields, want: want})
	}
	return out
}

// shellFields splits a command line into words as a shell would for the documents'
// examples: at spaces, except inside double quotes, which are removed ("0.6,0.4|0.3,0.7"
// is one word, without its quotes).
func shellFields(cmd string) []string {
	var out []string
	var word strings.Builder
	inWord, quoted := false, false
	for _, r := range cmd {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				out = append(out, word.String())
				word.Reset()
			}
			inWord = false
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, word.String())
	}
	return out
}

// needsFile reports whether a command-line word is an input file the test does not have
// (p0.json, salaries.csv, workload.txt).
func needsFile(arg string) bool {
	for _, ext := range []string{".json", ".csv", ".txt", ".db"} {
		if strings.HasSuffix(arg, ext) {
			return true
		}
	}
	return false
}

// outputPattern turns an expected output line into a regular expression: "…" matches any
// text, everything else itself; runs of spaces are compared as one (a table's columns
// widen with the digits a document leaves out).
func outputPattern(line string) *regexp.Regexp {
	parts := strings.Split(squeeze(line), "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

// TestDocExamples runs every dpkit command of the console blocks of README.md and
// docs/*.md (except those that read an input file the document only shows) and checks that it succeeds and prints what the document shows (a "…" in
// the document stands for digits or text it leaves out). A --plot file is written to a
// temporary directory.
func TestDocExamples(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range append([]string{"../../README.md"}, docs...) {
		examples := consoleExamples(t, doc)
		t.Logf("%s: %d examples", doc, len(examples))
		if doc == "../../README.md" && len(examples) < 8 {
			t.Fatalf("%s: found %d examples; the extraction is broken", doc, len(examples))
		}
		for _, ex := range examples {
			if testing.Short() && slices.ContainsFunc(ex.args, func(a string) bool { return strings.Contains(a, "subsampled-gaussian") }) {
				continue // DP-SGD examples take seconds under the race detector; the full suite runs them
			}
			args := append([]string(nil), ex.args...)
			want := append([]string(nil), ex.want...)
			for i := range args {
				if i > 0 && args[i-1] == "--plot" {
					file := filepath.Join(t.TempDir(), args[i])
					for j := range want {
						want[j] = strings.ReplaceAll(want[j], args[i], file)
					}
					args[i] = file
				}
			}
			r := dpkitRun(t, "", args...)
			where := doc + ":" + itoa(ex.line) + ": dpkit " + strings.Join(ex.args, " ")
			if r.code != exitOK {
				t.Errorf("%s: exit %d, %s", where, r.code, r.stderr)
				continue
			}
			if len(want) == 0 {
				continue
			}
			got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if !matchLines(want, got) {
				t.Errorf("%s: the output does not match the document.\n got:\n%s\nwant:\n%s", where, r.stdout, strings.Join(want, "\n"))
			}
		}
	}
}

// matchLines reports whether the output lines got match the document's lines want: line
// by line by outputPattern, where a line that is only "…" stands for any number of lines.
func matchLines(want, got []string) bool {
	switch {
	case len(want) == 0:
		return len(got) == 0
	case strings.TrimSpace(want[0]) == "…":
		for skip := 0; skip <= len(got); skip++ {
			if matchLines(want[1:], got[skip:]) {
				return true
			}
		}
		return false
	case len(got) == 0:
		return false
	default:
		return outputPattern(want[0]).MatchString(squeeze(got[0])) && matchLines(want[1:], got[1:])
	}
}

// squeeze replaces runs of white space by one space.
func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }
