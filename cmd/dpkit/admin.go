package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

const adminUsage = `Usage: dpkit admin COMMAND [ARGS] [--url URL] [--key KEY] [--ca FILE] [--json]

A client of the HTTP API of "dpkit serve" (docs/service.md): register datasets, list
datasets and budgets, create and revoke API keys, grant and revoke access, read the
audit log, ask queries. Every command prints a table, or with --json the API's JSON.

Commands:
  whoami                     the key's id, name and role
  datasets                   the datasets the key may see, with their budgets
  dataset show NAME          a dataset's columns, privacy unit, budget and policy
  dataset register …         register a dataset (admin; see dpkit admin dataset register --help)
  budget NAME                total, spent, releases and remaining queries of a dataset
  query NAME SQL             ask a query (any key granted the dataset); it is charged
  releases NAME              the audit log, oldest first (an analyst key: its own)
  keys                       the API keys, never their secrets (admin)
  key create --name NAME     create a key and print its secret, once (admin)
  key revoke KEY_ID          revoke a key (admin)
  grant NAME KEY_ID          let an analyst key query a dataset (admin)
  ungrant NAME KEY_ID        take that back (admin)

Flags (every command):
  --url URL    the service, e.g. http://127.0.0.1:8080 (default: $DPKIT_URL)
  --key KEY    the API key, dpk_… (default: $DPKIT_KEY)
  --ca FILE    trust this PEM certificate (or CA) for an https URL (default: $DPKIT_CA)
  --json       print JSON
  --timeout D  give up on an answer after D (default 2m; a query on a large live table
               may need more)
  -h, --help   show this help

Exit status: 0 success; 1 the service refused (401, 403, 404, 409, 413, 422) or cannot
be reached; 2 usage error, or a request the service found invalid (400).

Examples:
  export DPKIT_URL=http://127.0.0.1:8080 DPKIT_KEY=dpk_…
  dpkit admin datasets
  dpkit admin key create --name alice --dataset visits
  dpkit admin query visits "SELECT AVG(cost) FROM visits WHERE diagnosis = 'flu'"
  dpkit admin releases visits --all --json
`

func init() {
	register(command{name: "admin", order: 101,
		summary: "administer a running query service through its API: datasets, keys,\ngrants, budgets, releases, queries",
		build:   newAdminCommand})
}

// adminCommon holds the flags every admin command takes, and the client they make.
type adminCommon struct {
	s       streams
	url     string
	key     string
	ca      string
	json    bool
	timeout time.Duration
}

func (c *adminCommon) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.url, "url", os.Getenv("DPKIT_URL"), "")
	f.StringVar(&c.key, "key", os.Getenv("DPKIT_KEY"), "")
	f.StringVar(&c.ca, "ca", os.Getenv("DPKIT_CA"), "")
	f.BoolVar(&c.json, "json", false, "")
	f.DurationVar(&c.timeout, "timeout", 2*time.Minute, "")
}

// apiError is an error answer of the service.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.status, http.StatusText(e.status), e.msg)
}

// call sends one request to the API: body (if not nil) as JSON, the answer decoded into
// out (if not nil). An error answer is an *apiError, or, for a 400 (the service found
// the input invalid), a usage error.
func (c *adminCommon) call(ctx context.Context, method, path string, body, out any) error {
	if c.url == "" {
		return usagef("missing --url: the address of dpkit serve, e.g. http://127.0.0.1:8080 (or set DPKIT_URL)")
	}
	if c.key == "" {
		return usagef("missing --key: an API key dpk_… (or set DPKIT_KEY)")
	}
	base, err := url.Parse(c.url)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return usagef("invalid --url %q: want http://HOST:PORT or https://HOST:PORT", c.url)
	}
	client, err := c.client()
	if err != nil {
		return err
	}
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.url, "/")+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the service: %w", err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(raw))
		}
		if res.StatusCode == http.StatusBadRequest {
			return usagef("the service refused the request: %s", e.Error)
		}
		return &apiError{res.StatusCode, e.Error}
	}
	if out == nil || len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// client is the HTTP client: with --ca, trusting that certificate.
func (c *adminCommon) client() (*http.Client, error) {
	if c.ca == "" {
		return http.DefaultClient, nil
	}
	pem, err := os.ReadFile(c.ca)
	if err != nil {
		return nil, usagef("invalid --ca %q: %v", c.ca, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, usagef("invalid --ca %q: no PEM certificate in it", c.ca)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr}, nil
}

// print writes v as JSON with --json, else the table text writes.
func (c *adminCommon) print(v any, text func(w *tabwriter.Writer)) error {
	if c.json {
		return writeJSON(c.s.stdout, v)
	}
	tw := tabwriter.NewWriter(c.s.stdout, 0, 4, 2, ' ', 0)
	text(tw)
	return tw.Flush()
}

// adminLeaf builds an admin command taking exactly nargs arguments (names for the
// usage error), whose run receives them.
func adminLeaf(name, usage string, c *adminCommon, argNames []string, run func(ctx context.Context, args []string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:  name,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < len(argNames) {
				return usagef("missing %s", strings.Join(argNames[len(args):], " and "))
			}
			if len(args) > len(argNames) {
				return usagef("unexpected argument %q", args[len(argNames)])
			}
			return run(cmd.Context(), args)
		},
	}
	c.register(cmd)
	withUsage(cmd, usage)
	return cmd
}

// adminGroup builds a command whose subcommands are subs.
func adminGroup(name, usage string, subs ...*cobra.Command) *cobra.Command {
	var names []string
	for _, s := range subs {
		names = append(names, s.Name())
	}
	cmd := &cobra.Command{
		Use:  name,
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown %s command %q: want one of %s", name, args[0], strings.Join(names, ", "))
			}
			return usagef("missing %s command: want one of %s", name, strings.Join(names, ", "))
		},
	}
	(&adminCommon{}).register(cmd) // accepted, so that the error is about the command
	withUsage(cmd, usage)
	cmd.AddCommand(subs...)
	return cmd
}

func newAdminCommand(s streams) *cobra.Command {
	return adminGroup("admin", adminUsage,
		newAdminWhoami(s), newAdminDatasets(s), newAdminDatasetGroup(s), newAdminBudget(s),
		newAdminQuery(s), newAdminReleases(s), newAdminKeys(s), newAdminKeyGroup(s),
		newAdminGrant(s, true), newAdminGrant(s, false))
}

// pathEscape escapes a dataset name or key id for a URL path.
func pathEscape(s string) string { return url.PathEscape(s) }

func newAdminWhoami(s streams) *cobra.Command {
	c := &adminCommon{s: s}
	return adminLeaf("whoami", "Usage: dpkit admin whoami [--url URL] [--key KEY] [--json]\n\nThe key's id, name and role.\n", c, nil,
		func(ctx context.Context, _ []string) error {
			var v map[string]any
			if err := c.call(ctx, "GET", "/v1/whoami", nil, &v); err != nil {
				return err
			}
			return c.print(v, func(w *tabwriter.Writer) {
				fmt.Fprintf(w, "id\t%v\nname\t%v\nrole\t%v\n", v["id"], v["name"], v["role"])
			})
		})
}

// budgetView is the budget of a dataset as GET …/budget returns it.
type budgetView struct {
	Total            map[string]float64 `json:"total"`
	Spent            map[string]float64 `json:"spent"`
	Releases         int64              `json:"releases"`
	Policy           map[string]any     `json:"policy"`
	RemainingQueries *int64             `json:"remaining_queries"`
	PerQuery         map[string]float64 `json:"per_query,omitempty"`
}

// remaining says what is left of b, for a table.
func (b budgetView) remaining() string {
	if b.RemainingQueries != nil {
		return strconv.FormatInt(*b.RemainingQueries, 10) + " queries"
	}
	return fmt.Sprintf("ε %.4g", b.Total["epsilon"]-b.Spent["epsilon"])
}

func newAdminDatasets(s streams) *cobra.Command {
	c := &adminCommon{s: s}
	const usage = `Usage: dpkit admin datasets [--url URL] [--key KEY] [--json]

The datasets the key may see (an analyst key: those granted to it), each with its
budget: total (ε, δ), spent (composed, never below the truth), releases and what is
left. --json prints {"datasets":[{…dataset…, "budget_status": {…}}]}.
`
	return adminLeaf("datasets", usage, c, nil, func(ctx context.Context, _ []string) error {
		var list struct {
			Datasets []map[string]any `json:"datasets"`
		}
		if err := c.call(ctx, "GET", "/v1/datasets", nil, &list); err != nil {
			return err
		}
		budgets := make([]budgetView, len(list.Datasets))
		for i, d := range list.Datasets {
			if err := c.call(ctx, "GET", "/v1/datasets/"+pathEscape(fmt.Sprint(d["name"]))+"/budget", nil, &budgets[i]); err != nil {
				return err
			}
			d["budget_status"] = budgets[i]
		}
		return c.print(list, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "NAME\tPOLICY\tTOTAL ε, δ\tSPENT ε, δ\tRELEASES\tLEFT")
			for i, d := range list.Datasets {
				b := budgets[i]
				fmt.Fprintf(w, "%v\t%s\t%.4g, %.3g\t%.4g, %.3g\t%d\t%s\n", d["name"], policyLabel(b.Policy),
					b.Total["epsilon"], b.Total["delta"], b.Spent["epsilon"], b.Spent["delta"], b.Releases, b.remaining())
			}
		})
	})
}

// policyLabel names a policy in a few words: its mode, its filter or Gaussian noise,
// and whether its releases are pure ε ("fixed, pure ε", "adaptive/gaussian").
func policyLabel(p map[string]any) string {
	label := fmt.Sprint(p["mode"])
	if f, _ := p["filter"].(string); f != "" && f != "basic" {
		label += "/" + f
	} else if p["mechanism"] == "gaussian" {
		label += "/gaussian"
	}
	if p["pure"] == true {
		label += ", pure ε"
	}
	return label
}

func newAdminBudget(s streams) *cobra.Command {
	c := &adminCommon{s: s}
	const usage = `Usage: dpkit admin budget NAME [--url URL] [--key KEY] [--json]

A dataset's budget: total (ε, δ), spent (composed, never below the truth), the number of
releases, the policy, the queries left (fixed policy) and the per-query cost.
`
	return adminLeaf("budget", usage, c, []string{"NAME"}, func(ctx context.Context, args []string) error {
		var b budgetView
		if err := c.call(ctx, "GET", "/v1/datasets/"+pathEscape(args[0])+"/budget", nil, &b); err != nil {
			return err
		}
		return c.print(b, func(w *tabwriter.Writer) {
			fmt.Fprintf(w, "total\tε %.6g, δ %.6g\nspent\tε %.6g, δ %.6g\nreleases\t%d\npolicy\t%v\nleft\t%s\n",
				b.Total["epsilon"], b.Total["delta"], b.Spent["epsilon"], b.Spent["delta"], b.Releases, b.Policy["mode"], b.remaining())
			if b.PerQuery != nil {
				fmt.Fprintf(w, "per query\tε %.6g, δ %.6g\n", b.PerQuery["epsilon"], b.PerQuery["delta"])
			}
		})
	})
}

func newAdminQuery(s streams) *cobra.Command {
	c := &adminCommon{s: s}
	var eps, delta, mu, accuracy float64
	var key string
	var gaussian bool
	const usage = `Usage: dpkit admin query NAME SQL [--epsilon E [--delta D] [--gaussian] | --mu M | --accuracy H]
                         [--idempotency-key K] [--json]

Ask a query of a dataset (any key granted it). The answer is charged to the dataset's
budget, and recorded, before it is returned. Under the fixed policy every query costs
the same; under the adaptive policy --epsilon (and --delta), --mu or --accuracy say what
this one costs. Retrying with the same --idempotency-key returns the same answer and
charges nothing. Several aggregates print one value and interval column each.

Flags:
  --epsilon E            the ε of this query (adaptive policy only)
  --delta D              its δ (adaptive policy only; default 0)
  --gaussian             Gaussian noise for this (ε, δ) (basic or advanced filter; δ > 0)
  --mu M                 the μ of this query (Gaussian filter)
  --accuracy H           instead of a cost: the cheapest one whose 95% intervals are at
                         most ±H (COUNT, SUM, HISTOGRAM); under fixed, checks the set cost
  --idempotency-key K    a key for retries (default: one is made and printed)
  --url, --key, --ca, --json   as for every admin command
`
	var cmd *cobra.Command
	cmd = adminLeaf("query", usage, c, []string{"NAME", "SQL"}, func(ctx context.Context, args []string) error {
		body := map[string]any{"sql": args[1]}
		if key != "" {
			body["idempotency_key"] = key
		}
		if cmd.Flags().Changed("epsilon") {
			body["epsilon"] = eps
		}
		if cmd.Flags().Changed("delta") {
			body["delta"] = delta
		}
		if gaussian {
			body["mechanism"] = "gaussian"
		}
		if cmd.Flags().Changed("mu") {
			body["mu"] = mu
		}
		if cmd.Flags().Changed("accuracy") {
			body["accuracy"] = map[string]any{"ci95_halfwidth": accuracy}
		}
		var v map[string]any
		if err := c.call(ctx, "POST", "/v1/datasets/"+pathEscape(args[0])+"/query", body, &v); err != nil {
			return err
		}
		return c.print(v, func(w *tabwriter.Writer) { printAnswer(w, v) })
	})
	cmd.Flags().Float64Var(&eps, "epsilon", 0, "")
	cmd.Flags().Float64Var(&delta, "delta", 0, "")
	cmd.Flags().BoolVar(&gaussian, "gaussian", false, "")
	cmd.Flags().Float64Var(&mu, "mu", 0, "")
	cmd.Flags().Float64Var(&accuracy, "accuracy", 0, "")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "")
	return cmd
}

// printAnswer writes a query's answer as a table: one row per group (its key's values
// joined by ", "), with one value and one 95% interval column per aggregate when the
// query has several (the response's "values" and "ci95" lists), or VALUE and 95%
// INTERVAL for one.
func printAnswer(w *tabwriter.Writer, v map[string]any) {
	aggs, _ := v["aggregates"].([]any)
	groups, grouped := v["groups"].([]any)
	_, multi := v["values"].([]any)
	for _, g := range groups {
		if _, ok := g.(map[string]any)["values"].([]any); ok {
			multi = true
		}
	}
	switch {
	case multi && grouped:
		header := []string{"GROUP"}
		for _, a := range aggs {
			header = append(header, fmt.Sprint(a), "95% INTERVAL")
		}
		fmt.Fprintln(w, strings.Join(header, "\t"))
		for _, g := range groups {
			g := g.(map[string]any)
			fmt.Fprintln(w, groupKey(g["key"])+"\t"+valueColumns(g["values"], g["ci95"]))
		}
	case multi:
		fmt.Fprintln(w, "AGGREGATE\tVALUE\t95% INTERVAL")
		vals, _ := v["values"].([]any)
		cis, _ := v["ci95"].([]any)
		for i, a := range aggs {
			fmt.Fprintf(w, "%v\t%s\t%s\n", a, jsonNumber(at(vals, i)), interval(at(cis, i)))
		}
	case grouped:
		fmt.Fprintln(w, "GROUP\tVALUE\t95% INTERVAL")
		for _, g := range groups {
			g := g.(map[string]any)
			fmt.Fprintf(w, "%s\t%s\t%s\n", groupKey(g["key"]), jsonNumber(g["value"]), interval(g["ci95"]))
		}
	default:
		fmt.Fprintf(w, "result\t%s\n95%% interval\t%s\n", jsonNumber(v["result"]), interval(v["ci95"]))
	}
	charged, _ := v["charged"].(map[string]any)
	fmt.Fprintf(w, "mechanism\t%v\ncharged\tε %v, δ %v\n", v["mechanism"], charged["epsilon"], charged["delta"])
	if mu, ok := v["mu"].(float64); ok {
		fmt.Fprintf(w, "μ\t%v\n", mu)
	}
	fmt.Fprintf(w, "release\t%v\nidempotency key\t%v\n", v["release"], v["idempotency_key"])
	if r, ok := v["remaining_queries"].(float64); ok {
		fmt.Fprintf(w, "queries left\t%v\n", r)
	}
}

// groupKey prints a group's key: one value, or a list of values joined by ", ".
func groupKey(k any) string {
	parts, ok := k.([]any)
	if !ok {
		return fmt.Sprint(k)
	}
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ", ")
}

// valueColumns prints the values of a group and their intervals, tab-separated.
func valueColumns(values, cis any) string {
	vals, _ := values.([]any)
	ci, _ := cis.([]any)
	cols := make([]string, 0, 2*len(vals))
	for i := range vals {
		cols = append(cols, jsonNumber(vals[i]), interval(at(ci, i)))
	}
	return strings.Join(cols, "\t")
}

// at returns list[i], or nil past its end.
func at(list []any, i int) any {
	if i < len(list) {
		return list[i]
	}
	return nil
}

// jsonNumber prints a JSON number in full (no exponent for ordinary magnitudes).
func jsonNumber(v any) string {
	f, ok := v.(float64)
	if !ok {
		return "—"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// interval prints a JSON [lo, hi], or "— (depends on the data)" for null.
func interval(v any) string {
	ci, ok := v.([]any)
	if !ok || len(ci) != 2 {
		return "— (depends on the data)"
	}
	return "[" + jsonNumber(ci[0]) + ", " + jsonNumber(ci[1]) + "]"
}

func newAdminReleases(s streams) *cobra.Command {
	c := &adminCommon{s: s}
	var analyst, cursor string
	var limit int
	var all bool
	const usage = `Usage: dpkit admin releases NAME [--analyst KEY_ID] [--limit N] [--cursor C | --all] [--json]

The audit log of a dataset, oldest first: each release's number, time, the key that
asked, its cost, its query and the answer that was returned. An analyst key sees its
own releases only; an admin key sees all, or one key's with --analyst. The log comes in
pages of --limit releases (default 100, at most 1000); --cursor C continues after the
page whose next_cursor was C, and --all reads every page.

Flags:
  --analyst KEY_ID   only the releases of this key (admin)
  --limit N          releases per page (default 100)
  --cursor C         continue after a page (its next_cursor)
  --all              read every page
  --url, --key, --ca, --json   as for every admin command
`
	cmd := adminLeaf("releases", usage, c, []string{"NAME"}, func(ctx context.Context, args []string) error {
		var out struct {
			Releases   []map[string]any `json:"releases"`
			NextCursor *string          `json:"next_cursor"`
		}
		for {
			q := url.Values{}
			if analyst != "" {
				q.Set("analyst", analyst)
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			var page struct {
				Releases   []map[string]any `json:"releases"`
				NextCursor *string          `json:"next_cursor"`
			}
			if err := c.call(ctx, "GET", "/v1/datasets/"+pathEscape(args[0])+"/releases?"+q.Encode(), nil, &page); err != nil {
				return err
			}
			out.Releases, out.NextCursor = append(out.Releases, page.Releases...), page.NextCursor
			if !all || page.NextCursor == nil {
				break
			}
			cursor = *page.NextCursor
		}
		if out.Releases == nil {
			out.Releases = []map[string]any{}
		}
		return c.print(out, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "RELEASE\tTIME\tANALYST\tε\tQUERY\tRESULT")
			for _, r := range out.Releases {
				charged, _ := r["charged"].(map[string]any)
				answer, _ := r["answer"].(map[string]any)
				result := jsonNumber(answer["result"])
				if answer["groups"] != nil {
					result = "(groups)"
				}
				fmt.Fprintf(w, "%v\t%v\t%v\t%.4g\t%v\t%s\n", r["release"], r["time"], r["analyst"], charged["epsilon"], r["sql"], result)
			}
			if out.NextCursor != nil {
				fmt.Fprintf(w, "(more: --cursor %s, or --all)\n", *out.NextCursor)
			}
		})
	})
	f := cmd.Flags()
	f.StringVar(&analyst, "analyst", "", "")
	f.IntVar(&limit, "limit", 0, "")
	f.StringVar(&cursor, "cursor", "", "")
	f.BoolVar(&all, "all", false, "")
	return cmd
}

func newAdminKeys(s streams) *cobra.Command {
	c := &adminCommon{s: s}
	const usage = `Usage: dpkit admin keys [--url URL] [--key KEY] [--json]

The API keys (admin): id, name, role, creation time, whether revoked or a demo key.
Secrets are never shown: they are stored only hashed.
`
	return adminLeaf("keys", usage, c, nil, func(ctx context.Context, _ []string) error {
		var v struct {
			Keys []map[string]any `json:"keys"`
		}
		if err := c.call(ctx, "GET", "/v1/keys", nil, &v); err != nil {
			return err
		}
		return c.print(v, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "ID\tNAME\tROLE\tCREATED\tSTATE")
			for _, k := range v.Keys {
				state := "valid"
				if k["revoked"] == true {
					state = "revoked"
				}
				if k["demo"] == true {
					state += ", demo"
				}
				fmt.Fprintf(w, "%v\t%v\t%v\t%v\t%s\n", k["id"], k["name"], k["role"], k["created"], state)
			}
		})
	})
}

func newAdminKeyGroup(s streams) *cobra.Command {
	const usage = `Usage: dpkit admin key create --name NAME [--role analyst|admin] [--dataset NAME]… [--json]
       dpkit admin key revoke KEY_ID [--json]

Create an API key (its secret is printed once: it is stored only hashed), granting it
the datasets named; or revoke one (it stops working at once in this server, within 30 s
in others sharing the database). A key cannot revoke itself.
`
	c := &adminCommon{s: s}
	var name, role string
	var datasets []string
	create := adminLeaf("create", usage, c, nil, func(ctx context.Context, _ []string) error {
		if name == "" {
			return usagef("missing --name: a name for the key, e.g. --name alice")
		}
		var v map[string]any
		if err := c.call(ctx, "POST", "/v1/keys", map[string]any{"name": name, "role": role, "datasets": datasets}, &v); err != nil {
			return err
		}
		return c.print(v, func(w *tabwriter.Writer) {
			fmt.Fprintf(w, "id\t%v\nname\t%v\nrole\t%v\ndatasets\t%v\nkey\t%v\n(the key is shown only now)\n", v["id"], v["name"], v["role"], v["datasets"], v["key"])
		})
	})
	create.Flags().StringVar(&name, "name", "", "")
	create.Flags().StringVar(&role, "role", "analyst", "")
	create.Flags().StringArrayVar(&datasets, "dataset", nil, "")
	rc := &adminCommon{s: s}
	revoke := adminLeaf("revoke", usage, rc, []string{"KEY_ID"}, func(ctx context.Context, args []string) error {
		if err := rc.call(ctx, "DELETE", "/v1/keys/"+pathEscape(args[0]), nil, nil); err != nil {
			return err
		}
		return rc.print(map[string]any{"revoked": args[0]}, func(w *tabwriter.Writer) { fmt.Fprintf(w, "revoked %s\n", args[0]) })
	})
	return adminGroup("key", usage, create, revoke)
}

func newAdminGrant(s streams, on bool) *cobra.Command {
	c := &adminCommon{s: s}
	name, method, verb := "grant", "PUT", "granted"
	if !on {
		name, method, verb = "ungrant", "DELETE", "ungranted"
	}
	usage := fmt.Sprintf(`Usage: dpkit admin %s NAME KEY_ID [--json]

%s (admin). Granting twice, or taking back what was not granted, changes nothing.
`, name, map[bool]string{true: "Let the key KEY_ID query the dataset NAME", false: "Take back the key KEY_ID's access to the dataset NAME"}[on])
	return adminLeaf(name, usage, c, []string{"NAME", "KEY_ID"}, func(ctx context.Context, args []string) error {
		if err := c.call(ctx, method, "/v1/datasets/"+pathEscape(args[0])+"/grants/"+pathEscape(args[1]), nil, nil); err != nil {
			return err
		}
		return c.print(map[string]any{"dataset": args[0], "key_id": args[1], verb: true}, func(w *tabwriter.Writer) {
			fmt.Fprintf(w, "%s %s on %s\n", verb, args[1], args[0])
		})
	})
}
