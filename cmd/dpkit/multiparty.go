package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/multiparty"
)

func init() {
	register(command{name: "multiparty", order: 70,
		summary: "accuracy of a central observer computing a function of k parties' bits\nunder the optimal randomized-response protocol",
		build:   func(s streams) *cobra.Command { return newMultipartyCommand(s.stdout, s.stderr) }})
}

// mpMaxTable is the largest decision table printed (transcripts).
const mpMaxTable = 4096

const multipartyUsage = `Usage: dpkit multiparty --eps E1,E2,… [--delta D | --delta D1,D2,…] --function F [--json]

k parties each hold a bit and broadcast it through randomized response (KOV
eq. 16), party i at (ε_i, δ_i): the protocol that is optimal for every function, every
accuracy measure and every privacy level (KOV Thm 5.1). A central observer hears every
message and answers f(x_1, …, x_k). Reported:
  average_accuracy     P(correct) for uniform inputs, with the Bayes rule (eq. 13)
  worst_case_accuracy  the best min over inputs of P(correct) (linear program, eq. 14):
                       the worst case of an explicit randomized rule, so it is
                       attained; the parity has it in closed form for any k
  worst_case_upper_bound
                       the Bayes accuracy of a prior on the inputs: no rule does
                       better, so the optimum lies between the two (their gap is
                       certified; below 1e-9 whenever the parties' budgets are equal,
                       possibly wider for 11–12 unequal parties; docs/local-dp.md)
  decision_table       the Bayes rule: transcript → answer, one symbol per party
                       (0: revealed 0, 1: noisy 0, 2: noisy 1, 3: revealed 1), for the
                       transcripts of positive probability; null above 4096 of them

Flags:
  --eps E1,E2,…    ε_i of each party, finite ≥ 0; 1 to 12 parties
  --delta D…       δ_i in [0, 1]: one value for every party, or one per party
                   (default 0)
  --function F     xor, and, or, majority (1 when more than half of the bits are 1)
  --json           print {"average_accuracy":…,"worst_case_accuracy":…,
                   "worst_case_upper_bound":…,"decision_table":{"121":1,…}}
  -h, --help       show this help

Exit status: 0 success; 1 an output that could not be written; 2 usage error (including a problem beyond the solver's size limits).

Examples:
  dpkit multiparty --eps 1,1,2 --function xor
  dpkit multiparty --eps 0.5,0.5,0.5,0.5 --delta 1e-3 --function majority --json
`

type multipartyCommand struct {
	stdout   io.Writer
	stderr   io.Writer // progress of the long solves
	eps      ldpFloats
	delta    ldpFloats
	function ldpChoice
	json     bool
}

func newMultipartyCommand(stdout, stderr io.Writer) *cobra.Command {
	c := &multipartyCommand{stdout: stdout, stderr: stderr, function: ldpChoice{choices: []string{"xor", "and", "or", "majority"}}}
	cmd := &cobra.Command{
		Use:  "multiparty",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	flags := cmd.Flags()
	flags.Var(&c.eps, "eps", "")
	flags.Var(&c.delta, "delta", "")
	flags.Var(&c.function, "function", "")
	flags.BoolVar(&c.json, "json", false, "")
	withUsage(cmd, multipartyUsage)
	return cmd
}

// Run computes the accuracies and prints them.
func (c *multipartyCommand) Run(ctx context.Context, args []string) error {
	switch {
	case len(args) > 0:
		return usagef("unexpected argument %q", args[0])
	case !c.eps.set:
		return usagef("missing --eps: one ε per party, comma-separated")
	case c.function.value == "":
		return usagef("missing --function: want xor, and, or or majority")
	}
	k := len(c.eps.values)
	if k > multiparty.MaxParties {
		return usagef("--eps lists %d parties: want 1 to %d", k, multiparty.MaxParties)
	}
	parties := make([]dpkit.Budget, k)
	for i, e := range c.eps.values {
		parties[i].Epsilon = e
		switch {
		case !c.delta.set:
		case len(c.delta.values) == 1:
			parties[i].Delta = c.delta.values[0]
		case len(c.delta.values) == k:
			parties[i].Delta = c.delta.values[i]
		default:
			return usagef("--delta lists %d values: want 1 or %d (one per party)", len(c.delta.values), k)
		}
	}
	pr, err := multiparty.NewProtocol(parties)
	if err != nil {
		return err
	}
	var f multiparty.Function
	switch c.function.value {
	case "xor":
		f = multiparty.XOR()
	case "and":
		f = multiparty.AND(k)
	case "or":
		f = multiparty.OR()
	case "majority":
		f = multiparty.Majority(k)
	}
	var avg float64
	var worst, upper *float64
	err = runJob(ctx, c.stderr, "solving", func(context.Context, progressFunc) error { // may take a minute at 12 parties
		var err error
		if avg, err = multiparty.AverageAccuracy(pr, f); err != nil {
			return err
		}
		if c.function.value == "xor" {
			w := multiparty.XORAccuracy(pr)
			worst, upper = &w, &w
			return nil
		}
		wc, err := multiparty.WorstCaseAccuracy(pr, f)
		var param *dpkit.ParamError
		switch {
		case errors.As(err, &param):
			// Too large for the solver (no symmetry and 0 < δ_i < 1): reported as null.
		case err != nil:
			return err
		default:
			worst, upper = &wc.Accuracy, &wc.UpperBound
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var table map[string]int
	var keys []string
	if pr.NumTranscripts() <= mpMaxTable {
		rule, err := multiparty.BayesRule(pr, f)
		if err != nil {
			return err
		}
		table = map[string]int{}
		pr.Transcripts(func(tau []int) {
			var b strings.Builder
			for _, s := range tau {
				b.WriteByte(byte('0' + s))
			}
			keys = append(keys, b.String())
			table[b.String()] = rule.Decide(tau)
		})
	}
	if c.json {
		return writeJSON(c.stdout, struct {
			Average float64        `json:"average_accuracy"`
			Worst   *float64       `json:"worst_case_accuracy"`
			Upper   *float64       `json:"worst_case_upper_bound"`
			Table   map[string]int `json:"decision_table"`
		}{avg, worst, upper, table})
	}
	fmt.Fprintf(c.stdout, "function: %s of %d parties\naverage accuracy: %s\n", c.function.value, k, formatFloat(avg))
	switch {
	case worst == nil:
		fmt.Fprintf(c.stdout, "worst-case accuracy: not computed (program too large, see docs/local-dp.md)\n")
	case *upper == *worst:
		fmt.Fprintf(c.stdout, "worst-case accuracy: %s\n", formatFloat(*worst))
	default:
		fmt.Fprintf(c.stdout, "worst-case accuracy: %s (attained; no rule exceeds %s, gap %.2g)\n",
			formatFloat(*worst), formatFloat(*upper), *upper-*worst)
	}
	if table == nil {
		_, err := fmt.Fprintf(c.stdout, "decision table: %d transcripts, not printed (more than %d)\n", pr.NumTranscripts(), mpMaxTable)
		return err
	}
	fmt.Fprintln(c.stdout, "decision table (0: revealed 0, 1: noisy 0, 2: noisy 1, 3: revealed 1):")
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  transcript\tanswer")
	for _, key := range keys {
		fmt.Fprintf(w, "  %s\t%s\n", key, strconv.Itoa(table[key]))
	}
	return w.Flush()
}
