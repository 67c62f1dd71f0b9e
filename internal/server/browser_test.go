package server

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const chromium = "/usr/bin/chromium"

// TestBrowser drives the page in a real headless Chromium (Debian's /usr/bin/chromium,
// installed by scripts/chromium.sh): it pastes the analyst key, checks the datasets and
// the budget gauge, runs a query and checks the answer, the budget text, the privacy
// curve and the release history that the page then shows. Without Chromium the test is
// skipped, unless DPKIT_REQUIRE_BROWSER=1.
func TestBrowser(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("DPKIT_REQUIRE_BROWSER") == "1" {
			t.Fatalf("%s is missing and DPKIT_REQUIRE_BROWSER=1 (run scripts/chromium.sh)", chromium)
		}
		t.Skipf("%s is missing: run scripts/chromium.sh (or set DPKIT_REQUIRE_BROWSER=1 to fail)", chromium)
	}
	e := newEnv(t)
	var out bytes.Buffer
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.CombinedOutput(&out),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer func() {
		if t.Failed() {
			t.Logf("chromium output:\n%s", out.String())
		}
	}()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()

	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	poll := func(expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v", expr, err)
		}
	}

	do(chromedp.Navigate(e.ts.URL+"/"),
		chromedp.WaitVisible("#key"),
		chromedp.SendKeys("#key", e.analyst),
		chromedp.Click("#login-form button"),
		chromedp.WaitVisible("#detail"))
	poll(`document.querySelector("#budget-text").textContent.includes("0 of 20 queries used")`)
	who, datasets := text("#who"), text("#datasets")

	// A query round trip.
	do(chromedp.SetValue("#sql", "SELECT COUNT(*) FROM flu WHERE flu = 1"),
		chromedp.Click("#run"),
		chromedp.WaitVisible("#answer-value"))
	answer := text("#answer")
	poll(`document.querySelectorAll("#releases tbody tr").length === 1 && document.querySelector("#curve-path") !== null`)
	budget, history := text("#budget-text"), text("#releases")
	curveAttr, err := chromedp.Run(ctx, chromedp.AttributeValue("#curve-path", "d"))
	if err != nil {
		t.Fatal(err)
	}
	curve := curveAttr.Value
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#releases tbody tr").length`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(who, "demo analyst") || !strings.Contains(datasets, "flu") || !strings.Contains(datasets, "salary") {
		t.Fatalf("page shows who=%q datasets=%q", who, datasets)
	}
	if !strings.Contains(answer, "laplace") || !strings.Contains(answer, "19 queries left") {
		t.Fatalf("answer box: %q", answer)
	}
	if !strings.Contains(budget, "1 of 20 queries used, 19 left") || !strings.Contains(budget, "δ = 0)") || !strings.Contains(budget, "pure ε-DP releases") {
		t.Fatalf("budget text: %q", budget)
	}
	if rows != 1 || !strings.Contains(history, "SELECT COUNT(*) FROM flu WHERE flu = 1") || !strings.Contains(history, "demo analyst") {
		t.Fatalf("history (%d rows): %q", rows, history)
	}
	// The page draws the API's curve: its points with δ > 0 and the first where δ
	// reaches 0 (one pure ε0 release: δ(ε) > 0 for ε < ε0 only).
	drawn, dropped := 0, false
	for _, pt := range e.must(200, "GET", "/v1/datasets/flu/curve", e.analyst, nil)["points"].([]any) {
		switch d := pt.(map[string]any)["delta"].(float64); {
		case d > 0:
			drawn++
		case drawn > 0 && !dropped:
			drawn, dropped = drawn+1, true
		}
	}
	if drawn < 3 || strings.Count(curve, "L") != drawn-1 {
		t.Fatalf("curve path: %q, want %d points", curve, drawn)
	}
	// What the page showed is what the API says.
	rels := e.must(200, "GET", "/v1/datasets/flu/releases", e.analyst, nil)["releases"].([]any)
	if len(rels) != 1 {
		t.Fatalf("releases: %v", rels)
	}
	if b := e.must(200, "GET", "/v1/datasets/flu/budget", e.analyst, nil); num(t, b, "releases") != 1 {
		t.Fatalf("budget: %v", b)
	}

	// A bad query shows the error and its position, and costs nothing.
	do(chromedp.SetValue("#sql", "SELECT COUNT(*) FROM flu WHERE"),
		chromedp.Click("#run"),
		chromedp.WaitVisible("#answer-error"))
	errText := text("#answer")
	if !strings.Contains(errText, "offset 30") || !strings.Contains(errText, "^") {
		t.Fatalf("error box: %q", errText)
	}

	b := &browser{t: t, ctx: ctx, do: do, text: text, poll: poll}
	checkAnswerFormats(b, e)
	checkSpentGauge(b, e)
	checkAdminView(b, e)
	checkAnalytics(b, e)
}

// browser is the page open in Chromium, with the helpers of TestBrowser.
type browser struct {
	t    *testing.T
	ctx  context.Context
	do   func(steps ...chromedp.Action[chromedp.Void])
	text func(sel string) string
	poll func(expr string)
}

// run selects dataset name in the list and runs sql there, and returns the answer box.
func (b *browser) run(name, sql string) (value, detail string) {
	b.t.Helper()
	b.do(chromedp.Click(`#datasets li[data-name="` + name + `"]`))
	b.poll(`document.querySelector("#ds-name").textContent === "` + name + `"`)
	b.do(chromedp.SetValue("#sql", sql), chromedp.Click("#run"))
	b.poll(`document.querySelector("#answer-detail") !== null && document.querySelector("#answer-detail").textContent !== "" && !document.querySelector("#run").disabled`)
	return b.text("#answer-value"), b.text("#answer-detail")
}

// checkAnswerFormats: answers are printed in full with digit grouping, never with an
// exponent (the audit found 1.00000e+5); the median's scale says it is in ranks.
func checkAnswerFormats(b *browser, e *env) {
	t := b.t
	value, detail := b.run("salary", "SELECT SUM(salary) FROM salary")
	if strings.ContainsAny(value, "eE") || !strings.Contains(detail, "95% interval") || strings.Contains(detail, "e+") {
		t.Fatalf("a sum prints as %q (%q): want the number in full", value, detail)
	}
	if !strings.Contains(value, ",") && len(strings.TrimLeft(value, "-")) > 3 {
		t.Fatalf("a sum prints as %q: want digit grouping", value)
	}
	value, detail = b.run("salary", "SELECT MEDIAN(salary) FROM salary")
	if !strings.Contains(detail, "ranks") || strings.ContainsAny(value, "eE") || strings.Contains(detail, "95% interval") {
		t.Fatalf("the median prints as %q (%q): want its scale in ranks and no interval", value, detail)
	}
}

// checkSpentGauge: once a dataset's budget is spent, its gauge in the list turns red and
// says so, and the budget text says that every further query is refused.
func checkSpentGauge(b *browser, e *env) {
	t := b.t
	for {
		code, v, _ := e.do("POST", "/v1/datasets/flu/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM flu"})
		if code == 409 {
			break
		}
		if code != 200 {
			t.Fatalf("spending flu: %d %v", code, v)
		}
	}
	b.do(chromedp.Click(`#datasets li[data-name="flu"]`))
	b.poll(`document.querySelector('#datasets li[data-name="flu"] .mini div').classList.contains("full")`)
	b.poll(`document.querySelector("#budget-text").textContent.includes("The budget is spent")`)
	if s := b.text(`#datasets li[data-name="flu"]`); !strings.Contains(s, "budget spent") {
		t.Fatalf("the list shows flu as %q", s)
	}
	colour, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('#datasets li[data-name="flu"] .mini div')).backgroundColor`))
	if err != nil || colour != "rgb(179, 38, 30)" { // --bad: #b3261e
		t.Fatalf("the spent gauge is %q (%v), want red", colour, err)
	}
	if s := b.text(`#datasets li[data-name="salary"]`); strings.Contains(s, "spent") {
		t.Fatalf("salary is not spent but shows %q", s)
	}
}

// checkAdminView: with an admin key the page shows every dataset with its budget and
// every key with its grants; it creates a key (showing its secret once), grants and
// revokes, and what it shows is what the API says.
func checkAdminView(b *browser, e *env) {
	t := b.t
	b.do(chromedp.Click("#logout"), chromedp.WaitVisible("#key"), chromedp.SendKeys("#key", e.admin),
		chromedp.Click("#login-form button"), chromedp.WaitVisible("#admin"))
	b.poll(`document.querySelectorAll("#admin-keys tbody tr").length === 2 && document.querySelectorAll("#admin-datasets tbody tr").length === 2`)
	if s := b.text("#admin-datasets"); !strings.Contains(s, "flu (demo)") || !strings.Contains(s, "fixed, 20 queries, pure ε") || !strings.Contains(s, "20 of") && !strings.Contains(s, "0 queries") {
		t.Fatalf("admin datasets: %q", s)
	}
	if s := b.text("#admin-keys"); !strings.Contains(s, "demo analyst") || !strings.Contains(s, "valid, demo") || !strings.Contains(s, "flu, salary") {
		t.Fatalf("admin keys: %q", s)
	}
	// Create a key for salary.
	b.do(chromedp.SendKeys("#key-name", "carol"),
		chromedp.Click(`#key-datasets input[value="salary"]`),
		chromedp.Click("#key-form button"))
	b.poll(`!document.querySelector("#key-secret").hidden && document.querySelectorAll("#admin-keys tbody tr").length === 3`)
	secret := b.text("#key-secret")
	i := strings.Index(secret, "dpk_")
	if i < 0 {
		t.Fatalf("secret: %q", secret)
	}
	key := strings.Fields(secret[i:])[0]
	id := e.must(200, "GET", "/v1/whoami", key, nil)["id"].(string)
	// Grant flu too, through the form.
	b.do(chromedp.SetValue("#grant-key", id), chromedp.SetValue("#grant-dataset", "flu"), chromedp.Click("#grant-add"))
	b.poll(`[...document.querySelectorAll("#admin-keys tbody tr")].some((r) => r.dataset.key === "` + id + `" && r.textContent.includes("flu, salary"))`)
	if list := e.must(200, "GET", "/v1/datasets", key, nil)["datasets"].([]any); len(list) != 2 {
		t.Fatalf("carol sees %v after the grant", list)
	}
	// Revoke the key with its button.
	b.do(chromedp.Click(`#admin-keys tr[data-key="` + id + `"] button`))
	b.poll(`[...document.querySelectorAll("#admin-keys tbody tr")].some((r) => r.dataset.key === "` + id + `" && r.textContent.includes("revoked"))`)
	e.mustError(401, "Bearer", "GET", "/v1/datasets", key, nil)
}

// checkAnalytics: several aggregates and grouping columns show as a table; an adaptive
// query gives ε (and δ), an accuracy, or μ under the Gaussian filter; a grant may give
// the analyst a budget of its own. Run with the admin key logged in.
func checkAnalytics(b *browser, e *env) {
	t := b.t
	e.must(201, "POST", "/v1/datasets", e.admin, staffSpec("staff", 1e-6, adaptive()))
	e.must(201, "POST", "/v1/datasets", e.admin, staffSpec("gstaff", 1e-6, map[string]any{"mode": "adaptive", "filter": "gaussian"}))
	b.do(chromedp.Click("#logout"), chromedp.WaitVisible("#key"), chromedp.SendKeys("#key", e.admin),
		chromedp.Click("#login-form button"), chromedp.WaitVisible("#admin"))
	b.poll(`document.querySelector('#datasets li[data-name="gstaff"]') !== null`)

	run := func(name, sql, kind, cost, delta string) (value, detail string) {
		t.Helper()
		b.do(chromedp.Click(`#datasets li[data-name="` + name + `"]`))
		b.poll(`document.querySelector("#ds-name").textContent === "` + name + `" && !document.querySelector("#cost-row").hidden`)
		b.do(chromedp.SetValue("#sql", sql), chromedp.SetValue("#cost-kind", kind), chromedp.SetValue("#cost", cost))
		if delta != "" {
			b.do(chromedp.SetValue("#delta", delta))
		}
		b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector("#answer").replaceChildren()`), chromedp.Click("#run"))
		b.poll(`document.querySelector("#answer-detail") !== null && !document.querySelector("#run").disabled`)
		return b.text("#answer-value"), b.text("#answer-detail")
	}
	_, detail := run("staff", "SELECT COUNT(*), SUM(salary), QUANTILE(salary, 0.9) FROM staff GROUP BY dept, city", "epsilon", "3", "1e-7")
	head, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#answer-table th")].map((h) => h.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll("#answer-table tbody tr").length`))
	if err != nil {
		t.Fatal(err)
	}
	table := b.text("#answer-table")
	if strings.Join(head, "|") != "dept|city|COUNT(*)|SUM(salary)|QUANTILE(salary, 0.9)" || rows != 4 || !strings.Contains(table, "eng") || !strings.Contains(table, "paris") || !strings.Contains(detail, "charged ε = 3") {
		t.Fatalf("multi-aggregate table: head %q, %d rows, %q; %q", head, rows, table, detail)
	}
	value, detail := run("staff", "SELECT COUNT(*) FROM staff", "accuracy", "20", "")
	if strings.ContainsAny(value, "eE") || !strings.Contains(detail, "95% interval") || !strings.Contains(detail, "charged ε =") {
		t.Fatalf("accuracy query: %q %q", value, detail)
	}
	options, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('#datasets li[data-name="gstaff"]').click(), ""`))
	if err != nil {
		t.Fatal(err, options)
	}
	b.poll(`document.querySelector("#cost-kind").options[0].textContent === "μ" && document.querySelector("#budget-text").textContent.includes("Gaussian filter")`)
	if _, detail = run("gstaff", "SELECT SUM(salary) FROM gstaff", "mu", "0.5", ""); !strings.Contains(detail, "μ = 0.5 (Gaussian DP)") {
		t.Fatalf("Gaussian filter query: %q", detail)
	}

	// A grant with an own budget, through the form.
	ann := e.must(201, "POST", "/v1/keys", e.admin, map[string]any{"name": "ann", "role": "analyst"})
	b.do(chromedp.Click(`#datasets li[data-name="staff"]`)) // reloads the admin view
	b.poll(`[...document.querySelectorAll("#grant-key option")].some((o) => o.value === "` + ann["id"].(string) + `")`)
	b.do(chromedp.SetValue("#grant-key", ann["id"].(string)), chromedp.SetValue("#grant-dataset", "staff"),
		chromedp.SetValue("#grant-eps", "0.5"), chromedp.Click("#grant-add"))
	b.poll(`document.querySelector("#admin-message").textContent.includes("own budget ε = 0.5")`)
	e.mustError(409, "budget", "POST", "/v1/datasets/staff/query", ann["key"].(string), map[string]any{"sql": "SELECT COUNT(*) FROM staff", "epsilon": 0.6})
	e.must(200, "POST", "/v1/datasets/staff/query", ann["key"].(string), map[string]any{"sql": "SELECT COUNT(*) FROM staff", "epsilon": 0.4})
}
