// Command dpkit answers differential-privacy accounting questions from the command line:
// the total (ε, δ) of a workload (compose), the per-query budget or the noise that fits a
// total (calibrate), privacy regions and curves (region, compose --plot), a persistent
// budget ledger (ledger), and the query service (serve).
//
// Every command prints one JSON object with --json; with --json, an error is one JSON
// object too, {"error":{"message":…,"flag":…,"code":…}}, on stdout. Exit statuses:
//
//	0    success
//	1    no requested answer is feasible (e.g. a δ below the floor 1 − Π(1 − δ_ℓ), every
//	     theorem of --theorem all infeasible), a refused spend, or an output, file or
//	     database that failed (JSON code "infeasible" or "failure")
//	2    the command line is wrong: an unknown flag, a malformed or out-of-range value, a
//	     missing or contradictory option, an unreadable --mech-file (code "usage")
//	3    an internal error: a bug in dpkit, such as a panic, caught at this boundary and
//	     reported in one line instead of a stack trace (code "internal")
//	130  interrupted by Ctrl-C (code "interrupted"); a second Ctrl-C stops at once
//
// Without --json, errors are one line on stderr that names the offending flag, its value
// and its valid range; usage errors add a "Try: …" hint. Long computations show
// progress on stderr when it is a terminal, and nothing otherwise.
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
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

const rootUsage = `Usage: dpkit COMMAND [flags]
       dpkit --version

dpkit accounts for differential privacy exactly: it composes (ε, δ)-DP releases by the
optimal composition theorem of Kairouz, Oh and Viswanath (Thm 3.3), and by the classic
closed-form theorems for comparison. A reported ε or δ is never below the exact optimum.

Commands:
%s  help        show help for a command

Every command takes --json: one JSON object on stdout, also for errors
({"error":{"message":…,"flag":…,"code":…}}).

Exit status: 0 success; 1 no requested answer is feasible, a refused spend, or an output
that could not be written; 2 usage error (unknown flag, malformed or out-of-range value,
missing option); 3 internal error (a bug in dpkit); 130 interrupted (Ctrl-C).

Run "dpkit help COMMAND" or "dpkit COMMAND --help" for the flags of a command.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	go func() {
		<-ctx.Done()
		stop() // the first Ctrl-C cancels ctx; from then on a second one kills the process
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit status. Output goes to stdout;
// an error is one line on stderr ("dpkit COMMAND: message", and for usage errors a
// "Try:" hint), or with --json one JSON object on stdout. A panic anywhere in the
// command is caught here and reported as an internal error (exit status 3).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root := newRootCommand(stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := execute(ctx, root)
	if err == nil {
		return exitOK
	}
	if cmd == nil { // a panic: find the command that was running
		cmd, _, _ = root.Find(args)
	}
	path := "dpkit"
	if cmd != nil && cmd.Name() != "help" { // "dpkit help" errors point to "dpkit --help"
		path = cmd.CommandPath()
	}
	code, jsonCode := classify(err)
	msg := oneLine(message(err))
	if wantsJSON(args) {
		if werr := writeErrorJSON(stdout, msg, flagOf(err), jsonCode); werr == nil {
			return code
		}
	}
	fmt.Fprintf(stderr, "%s: %s\n", path, msg)
	if code == exitUsage {
		fmt.Fprintf(stderr, "Try: %s --help\n", path)
	}
	return code
}

// execute runs root, turning a panic into an internal error. (Long computations run in
// their own goroutine, which recovers the same way: see runJob.)
func execute(ctx context.Context, root *cobra.Command) (cmd *cobra.Command, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	return root.ExecuteContextC(ctx)
}

// panicError reports a recovered panic in one line; DPKIT_TRACEBACK=1 adds the stack
// trace on stderr for a bug report.
func panicError(p any) error {
	if os.Getenv("DPKIT_TRACEBACK") == "1" {
		os.Stderr.Write(debug.Stack())
	}
	return &internalError{msg: fmt.Sprintf("%v (a bug in dpkit: please report the command line; DPKIT_TRACEBACK=1 prints the stack)", p)}
}

// wantsJSON reports whether args ask for JSON output (--json before any "--").
func wantsJSON(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--json":
			return true
		case strings.HasPrefix(a, "--json="):
			v, err := strconv.ParseBool(strings.TrimPrefix(a, "--json="))
			return err == nil && v
		}
	}
	return false
}

// newRootCommand builds the command tree. Cobra parses the flags; each subcommand's Run
// method does the work, and its hand-written usage text is its help.
func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var version bool
	streams := streams{stdin: stdin, stdout: stdout, stderr: stderr}
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if version {
				return printVersion(stdout, false)
			}
			return usagef("missing command: want one of %s, help", commandNames())
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.CompletionOptions.DisableDefaultCmd = true // "dpkit completion" is ours (completion.go)
	root.SetFlagErrorFunc(flagError)
	root.Flags().BoolVar(&version, "version", false, "")
	withUsage(root, fmt.Sprintf(rootUsage, commandList()))

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

// writeJSON prints v as one line of JSON. Numbers have full precision (the shortest form
// that reads back exactly); "<", ">" and "&" in messages are not escaped. JSON has no
// ±Inf or NaN: a value that may be unbounded is printed by its command as null with a
// key saying so, never as a number.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		var unsupported *json.UnsupportedValueError
		if errors.As(err, &unsupported) {
			return &internalError{msg: "JSON output: " + err.Error()}
		}
		return err
	}
	return nil
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
