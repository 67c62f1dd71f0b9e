package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/mechanism"
)

// Bench runs the backend benchmarks:
//
//	Spend/history=0, Spend/history=1e5: durable accepted spends (a commit each);
//	Decision/history=1e5: a refused spend at 10^5 recorded releases — the whole
//	decision (transaction, reads of the statistics, exact check) without a commit.
//
// The history is built with h.Preload (distinct costs, so that the exact sums carry
// long rationals).
func Bench(b *testing.B, h Harness) {
	for _, n := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("Spend/history=%d", n), func(b *testing.B) {
			l := benchLedger(b, h, n)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := spend(l, "bench", 1e-9, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "spends/s")
		})
	}
	b.Run("Decision/history=100000", func(b *testing.B) {
		l := benchLedger(b, h, 100_000)
		b.ResetTimer()
		for b.Loop() {
			if _, err := spend(l, "bench", 1e6, 0); !errors.Is(err, ledger.ErrBudgetExceeded) {
				b.Fatal(err)
			}
		}
	})
}

// benchLedger returns a ledger with an adaptive (basic) budget "bench" holding n
// releases of distinct small costs.
func benchLedger(b *testing.B, h Harness, n int) *ledger.Ledger {
	b.Helper()
	ctx := context.Background()
	loc := h.NewLocation(b)
	s, err := h.Open(ctx, loc, true)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	l := ledger.New(s)
	total := dpkit.Budget{Epsilon: 1000, Delta: 1e-6}
	p := ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}
	if _, err := l.Create(ctx, ledger.Spec{ID: "bench", Total: total, Policy: p}); err != nil {
		b.Fatal(err)
	}
	if n == 0 {
		return l
	}
	if h.Preload == nil {
		b.Skip("the harness cannot preload a history")
	}
	acc, err := ledger.NewAccountant(total, p)
	if err != nil {
		b.Fatal(err)
	}
	rels := make([]ledger.Release, n)
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i := range rels {
		rels[i] = ledger.Release{Budget: "bench", Cost: dpkit.Budget{Epsilon: 1e-3 * (1 + float64(i)/float64(n))}, Mechanism: mechanism.Describe(mechanism.LaplaceNoise{Scale: 1000, Sensitivity: 1}), Time: now}
	}
	decide := func(st []ledger.Stats) ([]ledger.Stats, error) {
		c, err := acc.Charge(st[0], rels[st[0].Count].Cost)
		if err != nil {
			return nil, err
		}
		return []ledger.Stats{st[0].Add(c)}, nil
	}
	if err := h.Preload(ctx, s, []string{"bench"}, rels, decide); err != nil {
		b.Fatal(err)
	}
	return l
}
