// Command dpkit answers composition questions about differentially private releases
// from the command line: the total (ε, δ) of a workload (compose), the per-query budget
// that fits a total (calibrate), and the privacy region of a composition (region).
//
// Every command prints one JSON object with --json, and exits with status 0 on success,
// 1 when the request is infeasible (or an output cannot be written), and 2 when the
// command line is wrong: an unknown flag, a malformed or out-of-range value, a missing
// or contradictory option, an unreadable --mech-file. Errors are one line on stderr that
// names the offending input and its valid range; usage errors add a "Try: …" hint.
//
// Run "dpkit help" for the list of commands and "dpkit help COMMAND" for each one.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dpkit/dpkit"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // infeasible request, or an output that could not be written
	exitUsage   = 2 // the command line cannot be run as given
)

const rootUsage = `Usage: dpkit COMMAND [flags]

dpkit accounts for differential privacy exactly: it composes (ε, δ)-DP releases by the
optimal composition theorem of Kairouz, Oh and Viswanath (Thm 3.3), and by the classic
closed-form theorems for comparison. A reported ε or δ is never below the exact optimum.

Commands:
%s  help        show help for a command

Exit status: 0 success; 1 infeasible request (or an output that could not be written);
2 usage error (unknown flag, malformed or out-of-range value, missing option).

Run "dpkit help COMMAND" or "dpkit COMMAND --help" for the flags of a command.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit status. Output goes to stdout,
// the one-line error message (and, for usage errors, a "Try:" hint) to stderr.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCommand(stdin, stdout, stderr)
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	path := "dpkit"
	if cmd != nil && cmd.Name() != "help" { // "dpkit help" errors point to "dpkit --help"
		path = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "%s: %s\n", path, oneLine(message(err)))
	code := exitCode(err)
	if code == exitUsage {
		fmt.Fprintf(stderr, "Try: %s --help\n", path)
	}
	return code
}

// newRootCommand builds the command tree. Cobra parses the flags; each subcommand's Run
// method does the work, and its hand-written usage text is its help.
func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "dpkit",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q: want one of %s, help", args[0], commandNames())
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error {
			return usagef("missing command: want one of %s, help", commandNames())
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(flagError)
	withUsage(root, fmt.Sprintf(rootUsage, commandList()))

	streams := streams{stdin: stdin, stdout: stdout, stderr: stderr}
	for _, c := range sortedCommands() {
		root.AddCommand(c.build(streams))
	}
	root.SetHelpCommand(&cobra.Command{
		Use: "help [COMMAND]",
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return usagef("unknown help topic %q: want one of %s", strings.Join(args, " "), commandNames())
			}
			return target.Help()
		},
	})
	return root
}

// withUsage makes text the help and usage output of cmd (on stdout).
func withUsage(cmd *cobra.Command, text string) {
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { fmt.Fprint(c.OutOrStdout(), text) })
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		_, err := fmt.Fprint(c.OutOrStdout(), text)
		return err
	})
}

// usageError reports a command line that cannot be run as given (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// flagError turns a flag-parsing error into a usage error that names the flag, the value
// given and the valid range.
func flagError(_ *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		return usagef("invalid --%s %q: %s", bad.GetFlag().Name, bad.GetValue(), describe(bad.Unwrap()))
	}
	return &usageError{msg: err.Error()}
}

// exitCode classifies err: infeasible requests and failures to write output are 1,
// malformed or invalid input is 2.
func exitCode(err error) int {
	var usage *usageError
	var param *dpkit.ParamError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, dpkit.ErrInfeasible):
		return exitFailure
	case errors.As(err, &usage), errors.As(err, &param):
		return exitUsage
	default:
		return exitFailure
	}
}

// message is the text printed after "dpkit COMMAND: ".
func message(err error) string {
	var usage *usageError
	var param *dpkit.ParamError
	if errors.As(err, &usage) {
		return usage.msg
	}
	if errors.As(err, &param) {
		return "invalid " + describe(param)
	}
	return describe(err)
}

// describe renders err without the library's "dpkit: " prefix: a *dpkit.ParamError as
// "name = value: want range", an infeasible request as "infeasible: why".
func describe(err error) string {
	var infeasible *dpkit.InfeasibleError
	var param *dpkit.ParamError
	switch {
	case errors.As(err, &infeasible):
		return "infeasible: " + infeasible.Msg
	case errors.As(err, &param):
		return fmt.Sprintf("%s = %s: want %s", param.Name, formatValue(param.Value), param.Want)
	default:
		return err.Error()
	}
}

// formatValue prints a parameter value as the user would type it: strings quoted, floats
// in the shortest form that reads back exactly.
func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}

// writeJSON prints v as one line of JSON. Numbers have full precision (the shortest form
// that reads back exactly); "<", ">" and "&" in messages are not escaped.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// formatFloat prints x in the shortest form that reads back exactly.
func formatFloat(x float64) string { return strconv.FormatFloat(unsignedZero(x), 'g', -1, 64) }

// unsignedZero maps −0 to 0, so that no output reads "-0" (the library computes the δ
// floor of a pure-DP workload as −expm1(0) = −0).
func unsignedZero(x float64) float64 {
	if x == 0 {
		return 0
	}
	return x
}

// oneLine keeps an error message on one line of stderr.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
