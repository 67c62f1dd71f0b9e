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
	if !strings.Contains(budget, "1 of 20 queries used, 19 left") {
		t.Fatalf("budget text: %q", budget)
	}
	if rows != 1 || !strings.Contains(history, "SELECT COUNT(*) FROM flu WHERE flu = 1") || !strings.Contains(history, "demo analyst") {
		t.Fatalf("history (%d rows): %q", rows, history)
	}
	if strings.Count(curve, "L") < 10 {
		t.Fatalf("curve path: %q", curve)
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
}
