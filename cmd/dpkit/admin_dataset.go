package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

const adminDatasetUsage = `Usage: dpkit admin dataset show NAME [--json]
       dpkit admin dataset register (--schema FILE | --name NAME --column NAME:TYPE[:MIN:MAX]…
                                     --epsilon E --delta D (--max-queries K [--pure] | --adaptive))
                                    (--csv FILE | --path SERVER_FILE | --table-url URL --table NAME [--live])
                                    [--domain COLUMN=V1,V2,…]… [--unit COLUMN:MAX_ROWS] [--json]

show prints a dataset's columns, privacy unit, budget and policy (never rows).

register registers a dataset (admin) and creates its budget. Its declaration comes from
a schema file — the JSON body of POST /v1/datasets without the data:
  {"name": "pay",
   "columns": {"name": {"type": "string"},
               "dept": {"type": "string", "domain": ["eng", "ops"]},
               "salary": {"type": "int", "min": 10000, "max": 100000}},
   "privacy_unit": {"column": "name", "max_rows": 1},
   "budget": {"epsilon": 1, "delta": 1e-6},
   "policy": {"mode": "fixed", "max_queries": 20}}
— or from the flags below (which also override the file's fields), and its rows from
exactly one of --csv (a CSV file here, sent in the request: at most the server's
--max-body), --path (a CSV file on the server's machine, which the server reads) and
--table-url/--table (a PostgreSQL table, read once into a snapshot; with --live, never
copied: every query runs inside that database, see docs/service.md "Live tables").

Bounds and domains are declared, never inferred from the data. The noise is calibrated
to the sensitivity the declared bounds imply: bounds read from the data would make the
noise, and so the answers' distribution, depend on the data — the largest salary is
itself private, and a bound equal to it reveals it — and a list of groups read from the
data would reveal that a value exists (a diagnosis held by one patient). Values outside
the bounds are clamped to them; GROUP BY releases the declared domain's keys only. A
dataset name is never reused, so a budget cannot be reset by registering again.

Flags:
  --schema FILE              the declaration (JSON, as above)
  --name NAME                the dataset's name (also its table name in SQL)
  --column NAME:TYPE[:MIN:MAX]  a column; TYPE int, float or string; numeric columns
                             need MIN and MAX (repeat the flag for each column)
  --domain COLUMN=V1,V2,…    the values a column may be grouped by
  --unit COLUMN:MAX_ROWS     the privacy unit: the column naming a person, and the most
                             rows one person contributes (more are dropped at random)
  --epsilon E, --delta D     the dataset's total budget
  --max-queries K            fixed policy: the budget is split into K equal queries,
                             each (ε0, δ0) with δ0 = D/(2K), ε0 the largest that K
                             releases compose (exactly, KOV Thm 3.3) within (E, D)
  --pure                     fixed policy: every query is pure ε-DP (δ0 = 0, the JSON
                             "pure": true), which gives a larger ε0 — for 20 queries in
                             (ε=1, δ=1e-6), 0.05695 instead of 0.05611. Queries that need
                             δ > 0 (GROUP BY a column without a declared domain: partition
                             selection) are then refused
  --adaptive                 adaptive policy: each query names its ε
  --csv FILE | --path SERVER_FILE | --table-url URL --table NAME   the rows
  --live                     with --table: a live table (queried in its database at each
                             query; the server keeps the URL to reconnect)
  --url, --key, --ca, --json as for every admin command

Example:
  dpkit admin dataset register --name pay --column name:string \
    --column dept:string --domain dept=eng,ops --column salary:int:10000:100000 \
    --unit name:1 --epsilon 1 --delta 1e-6 --max-queries 20 --csv pay.csv
`

func newAdminDatasetGroup(s streams) *cobra.Command {
	return adminGroup("dataset", adminDatasetUsage, newAdminDatasetShow(s), newAdminDatasetRegister(s))
}

func newAdminDatasetShow(s streams) *cobra.Command {
	c := &adminCommon{s: s}
	return adminLeaf("show", adminDatasetUsage, c, []string{"NAME"}, func(ctx context.Context, args []string) error {
		var d map[string]any
		if err := c.call(ctx, "GET", "/v1/datasets/"+pathEscape(args[0]), nil, &d); err != nil {
			return err
		}
		return c.print(d, func(w *tabwriter.Writer) { printDataset(w, d) })
	})
}

// printDataset writes a dataset's declaration as a table.
func printDataset(w *tabwriter.Writer, d map[string]any) {
	fmt.Fprintf(w, "name\t%v\n", d["name"])
	if src, ok := d["source"]; ok {
		fmt.Fprintf(w, "source\t%v\n", src)
	}
	if u, ok := d["privacy_unit"].(map[string]any); ok {
		fmt.Fprintf(w, "privacy unit\t%v (at most %v rows each)\n", u["column"], u["max_rows"])
	}
	b, _ := d["budget"].(map[string]any)
	p, _ := d["policy"].(map[string]any)
	fmt.Fprintf(w, "budget\tε %v, δ %v\npolicy\t%v", b["epsilon"], b["delta"], p["mode"])
	if k, ok := p["max_queries"]; ok {
		fmt.Fprintf(w, ", %v queries", k)
	}
	if p["pure"] == true {
		fmt.Fprint(w, ", pure ε (δ0 = 0)")
	}
	fmt.Fprintln(w)
	cols, _ := d["columns"].(map[string]any)
	names := make([]string, 0, len(cols))
	for n := range cols {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "\nCOLUMN\tTYPE\tBOUNDS\tDOMAIN")
	for _, n := range names {
		col := cols[n].(map[string]any)
		bounds, domain := "", ""
		if lo, ok := col["min"]; ok {
			bounds = fmt.Sprintf("[%s, %s]", jsonNumber(lo), jsonNumber(col["max"]))
		}
		if dom, ok := col["domain"].([]any); ok {
			parts := make([]string, len(dom))
			for i, v := range dom {
				parts[i] = fmt.Sprint(v)
			}
			domain = strings.Join(parts, ", ")
		}
		fmt.Fprintf(w, "%s\t%v\t%s\t%s\n", n, col["type"], bounds, domain)
	}
}

// registerFlags are the flags of "dataset register".
type registerFlags struct {
	schema, name, csv, path, tableURL, table, unit string
	columns, domains                               []string
	epsilon, delta                                 float64
	maxQueries                                     int64
	adaptive, pure, live                           bool
}

func newAdminDatasetRegister(s streams) *cobra.Command {
	c := &adminCommon{s: s}
	var f registerFlags
	cmd := adminLeaf("register", adminDatasetUsage, c, nil, func(ctx context.Context, _ []string) error {
		body, err := f.body(c.s)
		if err != nil {
			return err
		}
		var d map[string]any
		if err := c.call(ctx, "POST", "/v1/datasets", body, &d); err != nil {
			return err
		}
		return c.print(d, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "registered")
			printDataset(w, d)
		})
	})
	fl := cmd.Flags()
	fl.StringVar(&f.schema, "schema", "", "")
	fl.StringVar(&f.name, "name", "", "")
	fl.StringArrayVar(&f.columns, "column", nil, "")
	fl.StringArrayVar(&f.domains, "domain", nil, "")
	fl.StringVar(&f.unit, "unit", "", "")
	fl.Float64Var(&f.epsilon, "epsilon", 0, "")
	fl.Float64Var(&f.delta, "delta", 0, "")
	fl.Int64Var(&f.maxQueries, "max-queries", 0, "")
	fl.BoolVar(&f.adaptive, "adaptive", false, "")
	fl.BoolVar(&f.pure, "pure", false, "")
	fl.StringVar(&f.csv, "csv", "", "")
	fl.StringVar(&f.path, "path", "", "")
	fl.StringVar(&f.tableURL, "table-url", "", "")
	fl.StringVar(&f.table, "table", "", "")
	fl.BoolVar(&f.live, "live", false, "")
	return cmd
}

// body builds the JSON body of POST /v1/datasets: the schema file, overridden by the
// flags, and the rows' source.
func (f *registerFlags) body(s streams) (map[string]any, error) {
	body := map[string]any{}
	if f.schema != "" {
		raw, err := os.ReadFile(f.schema)
		if err != nil {
			return nil, usagef("invalid --schema %q: %v", f.schema, err)
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			return nil, usagef("invalid --schema %q: not a JSON object: %v", f.schema, err)
		}
	}
	if f.name != "" {
		body["name"] = f.name
	}
	if err := f.declare(body); err != nil {
		return nil, err
	}
	sources := 0
	if f.csv != "" {
		text, err := os.ReadFile(f.csv)
		if err != nil {
			return nil, usagef("invalid --csv %q: %v", f.csv, err)
		}
		body["csv"] = string(text)
		sources++
	}
	if f.path != "" {
		body["path"] = f.path
		sources++
	}
	if f.tableURL != "" || f.table != "" {
		if f.tableURL == "" || f.table == "" {
			return nil, usagef("--table-url and --table go together: the database's URL and the table's name")
		}
		src := map[string]any{"url": f.tableURL, "name": f.table}
		if f.live {
			src["mode"] = "live"
		}
		body["table"] = src
		sources++
	} else if f.live {
		return nil, usagef("--live goes with --table-url URL --table NAME (a live PostgreSQL table)")
	}
	if sources != 1 {
		return nil, usagef("want exactly one of --csv FILE, --path SERVER_FILE and --table-url URL --table NAME (the dataset's rows)")
	}
	if body["name"] == nil {
		return nil, usagef("missing --name (or a \"name\" in --schema)")
	}
	return body, nil
}

// declare applies the declaration flags to body.
func (f *registerFlags) declare(body map[string]any) error {
	cols, _ := body["columns"].(map[string]any)
	if cols == nil {
		cols = map[string]any{}
	}
	for _, spec := range f.columns {
		parts := strings.Split(spec, ":")
		col := map[string]any{}
		switch {
		case len(parts) == 2 && parts[0] != "":
			col["type"] = parts[1]
		case len(parts) == 4 && parts[0] != "":
			lo, err1 := strconv.ParseFloat(parts[2], 64)
			hi, err2 := strconv.ParseFloat(parts[3], 64)
			if err1 != nil || err2 != nil {
				return usagef("invalid --column %q: MIN and MAX must be numbers", spec)
			}
			col["type"], col["min"], col["max"] = parts[1], lo, hi
		default:
			return usagef("invalid --column %q: want NAME:TYPE (string) or NAME:TYPE:MIN:MAX (int, float)", spec)
		}
		cols[parts[0]] = col
	}
	for _, spec := range f.domains {
		name, values, ok := strings.Cut(spec, "=")
		col, known := cols[name].(map[string]any)
		if !ok || values == "" {
			return usagef("invalid --domain %q: want COLUMN=V1,V2,…", spec)
		}
		if !known {
			return usagef("invalid --domain %q: declare the column %q first (--column or --schema)", spec, name)
		}
		col["domain"] = strings.Split(values, ",")
	}
	if len(cols) > 0 {
		body["columns"] = cols
	}
	if f.unit != "" {
		col, max, ok := strings.Cut(f.unit, ":")
		n, err := strconv.Atoi(max)
		if !ok || col == "" || err != nil {
			return usagef("invalid --unit %q: want COLUMN:MAX_ROWS, e.g. patient:4", f.unit)
		}
		body["privacy_unit"] = map[string]any{"column": col, "max_rows": n}
	}
	if f.epsilon != 0 || f.delta != 0 {
		body["budget"] = map[string]any{"epsilon": f.epsilon, "delta": f.delta}
	}
	switch {
	case f.adaptive && f.maxQueries != 0:
		return usagef("--adaptive and --max-queries exclude each other: the fixed policy splits the budget into --max-queries queries; under --adaptive each query names its ε")
	case f.adaptive && f.pure:
		return usagef("--pure goes with the fixed policy (--max-queries K); under --adaptive each query names its ε and δ")
	case f.adaptive:
		body["policy"] = map[string]any{"mode": "adaptive"}
	case f.maxQueries != 0:
		body["policy"] = map[string]any{"mode": "fixed", "max_queries": f.maxQueries}
	}
	if f.pure {
		p, _ := body["policy"].(map[string]any)
		if p == nil {
			return usagef("--pure goes with --max-queries K (or a fixed \"policy\" in --schema)")
		}
		p["pure"] = true
	}
	return nil
}
