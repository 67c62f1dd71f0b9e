package ledger_test

import (
	"context"
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
	dir, _ := os.MkdirTemp("", "ledger-example")
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), &sqlite.Options{Create: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	l := ledger.New(store)
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
	dir, _ := os.MkdirTemp("", "ledger-example")
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), &sqlite.Options{Create: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	l := ledger.New(store)
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
