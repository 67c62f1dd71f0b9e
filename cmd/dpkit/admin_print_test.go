package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"text/tabwriter"
)

// TestPrintAnswer: every shape of a query's answer (docs/service.md, "Query") prints its
// values and intervals — one aggregate or several, grouped by one column or several —
// and no value prints as "—" unless the service sent none.
func TestPrintAnswer(t *testing.T) {
	cases := []struct {
		name, answer string
		want         []string
	}{
		{"one aggregate", `{"aggregates":["COUNT(*)"],"result":3878,"ci95":[3668,4088],"mechanism":"discrete laplace","charged":{"epsilon":0.05,"delta":0},"release":1}`,
			[]string{"result", "3878", "[3668, 4088]", "ε 0.05, δ 0"}},
		{"grouped", `{"aggregates":["COUNT(*)"],"groups":[{"key":"eng","value":2,"ci95":[-1,5]}],"mechanism":"discrete laplace","charged":{"epsilon":0.05,"delta":0}}`,
			[]string{"GROUP", "eng", "2", "[-1, 5]"}},
		{"several aggregates", `{"aggregates":["COUNT(*)","QUANTILE(x, 0.9)"],"values":[12,7.5],"ci95":[[10,14],null],"mechanism":"m","charged":{"epsilon":1,"delta":0}}`,
			[]string{"AGGREGATE", "COUNT(*)", "12", "[10, 14]", "QUANTILE(x, 0.9)", "7.5", "depends on the data"}},
		{"several aggregates and keys", `{"aggregates":["COUNT(*)","SUM(x)"],"groups":[{"key":["north","flu"],"values":[5,1.25],"ci95":[[3,7],[0,2.5]]}],"mechanism":"m","charged":{"epsilon":1,"delta":0},"mu":0.2}`,
			[]string{"GROUP", "COUNT(*)", "SUM(x)", "north, flu", "5", "[3, 7]", "1.25", "[0, 2.5]", "μ"}},
		{"one aggregate, several keys", `{"aggregates":["COUNT(*)"],"groups":[{"key":["north","flu"],"values":[5],"ci95":[[3,7]]}],"mechanism":"m","charged":{"epsilon":1,"delta":0}}`,
			[]string{"north, flu", "5", "[3, 7]"}},
	}
	for _, c := range cases {
		var v map[string]any
		if err := json.Unmarshal([]byte(c.answer), &v); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		printAnswer(w, v)
		w.Flush()
		out := b.String()
		for _, s := range c.want {
			if !strings.Contains(out, s) {
				t.Errorf("%s: %q missing from\n%s", c.name, s, out)
			}
		}
		if strings.Count(out, "—") != strings.Count(out, "— (depends on the data)") {
			t.Errorf("%s: a value printed as —:\n%s", c.name, out)
		}
	}
}
