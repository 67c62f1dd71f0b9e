package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/ledger/sqlite"
	"github.com/dpkit/dpkit/mechanism"
)

// A dataset budget of ε = 1 with the basic filter: every analyst chooses each release's
// ε, and the sums are exact, so ten releases of ε = 0.1 do not fit (the float64 0.1 is
// slightly above 1/10).
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ledger-example")
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), &sqlite.Options{Create: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	l := ledger.New(store)

	_, err = l.Create(ctx, ledger.Spec{ID: "flu", Total: dpkit.Budget{Epsilon: 1},
		Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 1; ; i++ {
		_, err := l.Spend(ctx, ledger.Request{Budget: "flu", Cost: dpkit.Budget{Epsilon: 0.1},
			Mechanism: mechanism.Describe(mechanism.LaplaceNoise{Scale: 10, Sensitivity: 1}), Analyst: "alice", Key: fmt.Sprintf("q%d", i)})
		var refused *ledger.BudgetExceededError
		if errors.As(err, &refused) {
			fmt.Printf("release %d refused; next release may have ε up to %.17g\n", i, refused.Left.NextEpsilon)
			break
		}
	}
	st, _ := l.Status(ctx, "flu")
	fmt.Printf("%d releases, Σε = %.17g\n", st.Releases, st.SpentEpsilon)
	// Output:
	// release 10 refused; next release may have ε up to 0.09999999999999995
	// 9 releases, Σε = 0.90000000000000013
}

// A fixed budget: 40 releases within (ε, δ) = (1, 1e-6), calibrated by the exact
// optimal composition (KOV Thm 3.3) with δ0 = δ/(2k).
func Example_fixed() {
	ctx := context.Background()
	l, done, err := exampleLedger(ctx) // as in Example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	def, err := l.Create(ctx, ledger.Spec{ID: "tables", Total: dpkit.Budget{Epsilon: 1, Delta: 1e-6},
		Policy: ledger.Policy{Kind: ledger.Fixed, Releases: 40}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("per release: ε0 = %.6f, δ0 = %g (basic composition: ε0 = %g)\n",
		def.Policy.PerRelease.Epsilon, def.Policy.PerRelease.Delta, 1.0/40)
	r, _ := l.Remaining(ctx, "tables", *def.Policy.PerRelease)
	fmt.Println("releases left:", r.Releases)
	// Output:
	// per release: ε0 = 0.037808, δ0 = 1.25e-08 (basic composition: ε0 = 0.025)
	// releases left: 40
}

// A release recorded together with its result (Request.Payload) in one transaction:
// publishing needs one commit, and a retry with the same key gets the recorded result
// back instead of a fresh one. StatusAfter is the budget right after the release.
func ExampleLedger_Spend_payload() {
	ctx := context.Background()
	l, done, err := exampleLedger(ctx) // as in Example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	if _, err := l.Create(ctx, ledger.Spec{ID: "flu", Total: dpkit.Budget{Epsilon: 1},
		Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		fmt.Println(err)
		return
	}
	req := ledger.Request{Budget: "flu", Cost: dpkit.Budget{Epsilon: 0.25}, Mechanism: mechanism.Describe(mechanism.LaplaceNoise{Scale: 4, Sensitivity: 1}), Key: "q1",
		Payload: []byte(`{"count": 3.7}`)}
	rc, err := l.Spend(ctx, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := l.StatusAfter(ctx, rc)
	fmt.Printf("recorded %s; %d release, Σε = %g\n", rc.Release.Payload, st.Releases, st.SpentEpsilon)

	req.Payload = []byte(`{"count": 2.1}`) // a retry computed another answer: it never leaves
	again, _ := l.Spend(ctx, req)
	fmt.Printf("replayed %v: %s\n", again.Replayed, again.Release.Payload)
	// Output:
	// recorded {"count": 3.7}; 1 release, Σε = 0.25
	// replayed true: {"count": 3.7}
}

// GaussianMu converts a total (ε, δ) to the μ of Gaussian DP whose curve meets δ at ε:
// the budget of the Gaussian policies. 100 fixed Gaussian releases each get μ/10.
func ExampleGaussianMu() {
	mu, err := ledger.GaussianMu(dpkit.Budget{Epsilon: 1, Delta: 1e-6})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("μ = %.6f; 100 releases of μ0 = %.6f (σ = %.2f for a count)\n", mu, mu/10, 10/mu)
	// Output: μ = 0.236704; 100 releases of μ0 = 0.023670 (σ = 42.25 for a count)
}

// The Gaussian filter: each release spends its μ_i, and releases are accepted while
// Σ μ_i² ≤ μ² (Smith and Thakurta), whatever order and sizes the analyst chooses.
func Example_gaussianFilter() {
	ctx := context.Background()
	l, done, err := exampleLedger(ctx) // as in Example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	def, err := l.Create(ctx, ledger.Spec{ID: "visits", Total: dpkit.Budget{Epsilon: 1, Delta: 1e-6},
		Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.GaussianFilter}})
	if err != nil {
		fmt.Println(err)
		return
	}
	mu := *def.Policy.Mu
	for _, share := range []float64{0.6, 0.6, 0.5} { // Σ μ_i² = (0.36 + 0.36 + 0.25)·μ² ≤ μ²
		m, _ := mechanism.NewGaussianMu(mechanism.GaussianMuOptions{Mu: share * mu, Sensitivity: 1})
		_, err := l.Spend(ctx, ledger.Request{Budget: "visits", Mechanism: m.Descriptor(), Cost: dpkit.Budget{Epsilon: 0.1}})
		fmt.Printf("μ_i = %.1f·μ: %v\n", share, err == nil)
	}
	// (0.97 + 0.04)·μ² > μ²: refused.
	m, _ := mechanism.NewGaussianMu(mechanism.GaussianMuOptions{Mu: 0.2 * mu, Sensitivity: 1})
	_, err = l.Spend(ctx, ledger.Request{Budget: "visits", Mechanism: m.Descriptor(), Cost: dpkit.Budget{Epsilon: 0.1}})
	fmt.Println("μ_i = 0.2·μ:", errors.Is(err, ledger.ErrBudgetExceeded))
	// Output:
	// μ_i = 0.6·μ: true
	// μ_i = 0.6·μ: true
	// μ_i = 0.5·μ: true
	// μ_i = 0.2·μ: true
}

// LegacyMechanism converts the text an earlier dpkit recorded to a typed descriptor
// (what the schema-4 migration does to stored rows).
func ExampleLegacyMechanism() {
	for _, text := range []string{"gaussian:sigma=2", "laplace:scale=10", "my own notes"} {
		b, _ := json.Marshal(ledger.LegacyMechanism(text))
		fmt.Println(string(b))
	}
	// Output:
	// {"kind":"gaussian_noise","version":1,"sigma":2,"sensitivity":1}
	// {"kind":"laplace_noise","version":1,"scale":10,"sensitivity":1}
	// {"kind":"text","version":1,"text":"my own notes"}
}

// exampleLedger opens a ledger on a fresh SQLite file, as Example does; done closes it
// and removes the file.
func exampleLedger(ctx context.Context) (*ledger.Ledger, func(), error) {
	dir, err := os.MkdirTemp("", "ledger-example")
	if err != nil {
		return nil, nil, err
	}
	store, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), &sqlite.Options{Create: true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return ledger.New(store), func() { store.Close(); os.RemoveAll(dir) }, nil
}
