package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/pld"
)

// Exit statuses (documented in main.go's package comment and in README.md).
const (
	exitOK          = 0
	exitFailure     = 1   // no requested answer is feasible, a refused spend, an output that could not be written
	exitUsage       = 2   // the command line cannot be run as given
	exitInternal    = 3   // a bug in dpkit: an internal error or panic
	exitInterrupted = 130 // stopped by Ctrl-C (128 + SIGINT, as shells report it)
)

// Error codes of the JSON error object {"error":{"message":…,"flag":…,"code":…}}; each
// goes with one exit status.
const (
	codeUsage       = "usage"       // exit 2
	codeInfeasible  = "infeasible"  // exit 1: no requested answer is feasible, or a refused spend
	codeFailure     = "failure"     // exit 1: anything else that failed (a file, a database, an unknown budget)
	codeInterrupted = "interrupted" // exit 130
	codeInternal    = "internal"    // exit 3
)

// usageError reports a command line that cannot be run as given (exit status 2). flag
// is the flag it concerns as the user typed it ("--eps"), or empty.
type usageError struct {
	msg  string
	flag string
}

func (e *usageError) Error() string { return e.msg }

// usagef is a usage error; when its message starts with a flag ("--delta …",
// "missing --delta …", "invalid --delta …"), that is the flag it concerns.
func usagef(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	flag := ""
	if m := leadingFlag.FindStringSubmatch(msg); m != nil {
		flag = m[1]
	}
	return &usageError{msg: msg, flag: flag}
}

// leadingFlag matches a message about one flag.
var leadingFlag = regexp.MustCompile(`^(?:missing |invalid |cannot read |unknown )?(--[a-z][a-z0-9-]*)\b`)

// flagErrorf is a usage error about one flag (named with its dashes, "--eps").
func flagErrorf(flag, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), flag: flag}
}

// flagFailure is a failure (exit status 1) that concerns one flag, e.g. a --tolerance
// that could not be reached.
type flagFailure struct{ flag, msg string }

func (e *flagFailure) Error() string { return e.msg }

// internalError is a bug: a panic recovered at the CLI boundary, or a state the code
// assumes cannot happen (exit status 3).
type internalError struct{ msg string }

func (e *internalError) Error() string { return "internal error: " + e.msg }

// flagError turns a flag-parsing error into a usage error that names the flag, the value
// given and the valid range.
func flagError(_ *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		name := "--" + bad.GetFlag().Name
		return flagErrorf(name, "invalid %s %q: %s", name, bad.GetValue(), describe(bad.Unwrap()))
	}
	var missing *pflag.ValueRequiredError
	if errors.As(err, &missing) {
		name := "--" + missing.GetFlag().Name
		return flagErrorf(name, "flag needs an argument: %s", name)
	}
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) && unknown.GetSpecifiedName() != "" {
		dashes := "--"
		if unknown.GetSpecifiedShortnames() != "" {
			dashes = "-"
		}
		return flagErrorf(dashes+unknown.GetSpecifiedName(), "%s", err.Error())
	}
	return &usageError{msg: err.Error()}
}

// classify returns the exit status and JSON code of err.
func classify(err error) (int, string) {
	var usage *usageError
	var param *dpkit.ParamError
	var internal *internalError
	var pldInternal *pld.InternalError // a panic recovered in pld's worker goroutines
	switch {
	case err == nil:
		return exitOK, ""
	case errors.As(err, &internal), errors.As(err, &pldInternal):
		return exitInternal, codeInternal
	case errors.Is(err, context.Canceled):
		return exitInterrupted, codeInterrupted
	case errors.Is(err, dpkit.ErrInfeasible):
		return exitFailure, codeInfeasible
	case errors.As(err, &usage), errors.As(err, &param):
		return exitUsage, codeUsage
	default:
		return exitFailure, codeFailure
	}
}

// exitCode is the exit status of err.
func exitCode(err error) int {
	code, _ := classify(err)
	return code
}

// flagOf returns the flag err concerns, as the user typed it, or "".
func flagOf(err error) string {
	var usage *usageError
	var failure *flagFailure
	switch {
	case errors.As(err, &usage):
		return usage.flag
	case errors.As(err, &failure):
		return failure.flag
	}
	return ""
}

// message is the text printed after "dpkit COMMAND: ".
func message(err error) string {
	var usage *usageError
	var param *dpkit.ParamError
	switch {
	case errors.As(err, &usage):
		return usage.msg
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.As(err, &param):
		if param.Value == nil {
			return "missing " + param.Name + ": want " + param.Want
		}
		return "invalid " + describe(param)
	}
	return describe(err)
}

// describe renders err without the library's package prefix: a *dpkit.ParamError as
// "name = value: want range", an infeasible request as "infeasible: why", any other
// error without a leading "dpkit: ", "ledger: " or the like (the command path printed
// before the message already says where it comes from).
func describe(err error) string {
	var infeasible *dpkit.InfeasibleError
	var param *dpkit.ParamError
	switch {
	case errors.As(err, &infeasible):
		return "infeasible: " + infeasible.Msg
	case errors.As(err, &param):
		if param.Value == nil {
			return "missing " + param.Name + ": want " + param.Want
		}
		return fmt.Sprintf("%s = %s: want %s", param.Name, formatValue(param.Value), param.Want)
	default:
		return stripPackagePrefix(err.Error())
	}
}

// libraryPrefixes are the package prefixes of dpkit's library errors.
var libraryPrefixes = []string{"dpkit: ", "ledger: ", "compose: ", "pld: ", "mechanism: ", "query: ",
	"gce: ", "ldp: ", "multiparty: ", "region: ", "noise: ", "sensitivity: ", "sqlite: ", "postgres: "}

// stripPackagePrefix removes the leading library package prefixes of a message
// ("ledger: budget …" → "budget …").
func stripPackagePrefix(s string) string {
	for again := true; again; {
		again = false
		for _, p := range libraryPrefixes {
			if strings.HasPrefix(s, p) {
				s, again = s[len(p):], true
			}
		}
	}
	return s
}

// formatValue prints a parameter value as the user would type it: strings quoted, floats
// in the shortest form that reads back exactly.
func formatValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return dpkit.FormatValue(v)
}

// paramFlags says which flags of one command set the parameters a library call may
// refuse: names maps dpkit.ParamError.Name (the user-facing snake_case names, and any
// older spelling still in use) to the flag; inWant lists the words of the valid-range
// text that name other parameters and are rewritten to their flags too ("> lower" →
// "> --lower"). Words of prose such as "filter" are left alone by not listing them.
type paramFlags struct {
	names  map[string]string
	inWant []string
}

// translate rewrites a *dpkit.ParamError about a parameter that one of the command's
// flags sets as a usage error naming that flag ("invalid --upper 0: want > --lower").
// Other errors are returned as they are.
func (m paramFlags) translate(err error) error {
	var param *dpkit.ParamError
	if err == nil || !errors.As(err, &param) {
		return err
	}
	flag, ok := m.names[param.Name]
	if !ok {
		return err
	}
	want := param.Want
	for _, name := range m.inWant {
		want = replaceWord(want, name, m.names[name])
	}
	if param.Value == nil {
		return flagErrorf(flag, "missing %s: want %s", flag, want)
	}
	return flagErrorf(flag, "invalid %s %s: want %s", flag, dpkit.FormatValue(param.Value), want)
}

// replaceWord replaces the whole-word occurrences of name in s by repl.
func replaceWord(s, name, repl string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, name)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(name)
		if (i == 0 || !isWordByte(s[i-1])) && (end == len(s) || !isWordByte(s[end])) {
			b.WriteString(s[:i])
			b.WriteString(repl)
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// jsonError is the one JSON object printed for an error with --json.
type jsonError struct {
	Error struct {
		Message string  `json:"message"`
		Flag    *string `json:"flag"` // null when the error concerns no single flag
		Code    string  `json:"code"`
	} `json:"error"`
}

// writeErrorJSON prints err as {"error":{"message":…,"flag":…,"code":…}}.
func writeErrorJSON(w io.Writer, msg, flag, code string) error {
	var v jsonError
	v.Error.Message, v.Error.Code = msg, code
	if flag != "" {
		v.Error.Flag = &flag
	}
	return writeJSON(w, v)
}
