package dpbeam

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/pgtest"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/ledger/postgres"
	"github.com/dpkit/dpkit/pld"
)

// countJob builds a job (budget ε = 2, δ = 0) counting rows per day with Laplace noise
// of the given ε, on a few rows, and returns it with its pipeline and output.
func countJob(t *testing.T, job string, eps float64) (*PrivacySpec, *beam.Pipeline, func() []kv) {
	t.Helper()
	spec, err := NewPrivacySpec(PrivacySpecParams{Job: job, Budget: dpkit.Budget{Epsilon: 2}})
	if err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	rows := []row{{User: "a", Day: 1}, {User: "b", Day: 1}, {User: "c", Day: 2}}
	pcol, err := MakePrivate(s, beam.CreateList(s, rows), spec, "User")
	if err != nil {
		t.Fatal(err)
	}
	counts, err := Count(s, pcol, CountParams{PartitionParams: PartitionParams{Partition: "Day", MaxPartitions: 1, MaxContributions: 1, PublicPartitions: []int{1, 2}}, Budget: dpkit.Budget{Epsilon: eps}})
	if err != nil {
		t.Fatal(err)
	}
	return spec, p, collect(s, t, counts, job)
}

// TestLedgerDecides: the ledger decides before any worker reads data.
func TestLedgerDecides(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, dpkit.Budget{Epsilon: 1.5})

	// A job that does not fit the ledger budget is refused; nothing is recorded, and
	// running its pipeline anyway fails before any row is processed.
	spec, p, out := countJob(t, "too-big", 2)
	if _, err := spec.Reserve(ctx, l, "data", ReserveOptions{}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("Reserve of a job over the ledger budget: %v, want ErrBudgetExceeded", err)
	}
	if st, _ := l.Status(ctx, "data"); st.Releases != 0 {
		t.Errorf("a refused job recorded %d releases", st.Releases)
	}
	if err := run(t, p); err == nil || !strings.Contains(err.Error(), ErrNotReserved.Error()) {
		t.Errorf("running an unreserved job: %v, want %q", err, ErrNotReserved)
	}
	if got := out(); len(got) != 0 {
		t.Errorf("an unreserved job released %v", got)
	}

	// A job that fits is charged once; it runs.
	spec, p, out = countJob(t, "daily", 1)
	res, err := spec.Reserve(ctx, l, "data", ReserveOptions{Analyst: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	// A pure-ε job with δ = 0 is charged its ε exactly.
	if c := res.Cost; c.Budget != (dpkit.Budget{Epsilon: 1}) || c.Method != "basic" || res.Release.Key != "dpbeam:daily" || res.Rerun {
		t.Errorf("reservation %+v", res)
	}
	if err := run(t, p); err != nil {
		t.Fatal(err)
	}
	if got := out(); len(got) != 2 {
		t.Errorf("released %v, want the 2 public partitions", got)
	}
	spent := res.Cost.Epsilon
	st, _ := l.Status(ctx, "data")
	if st.Releases != 1 || st.SpentEpsilon != spent {
		t.Errorf("ledger after one job: %d releases, ε %g; want 1, %g", st.Releases, st.SpentEpsilon, spent)
	}

	// The same job again: no charge, refused unless AllowRerun.
	spec2, _, _ := countJob(t, "daily", 1)
	if _, err := spec2.Reserve(ctx, l, "data", ReserveOptions{Analyst: "alice"}); !errors.Is(err, ErrRerun) {
		t.Errorf("second Reserve of a job: %v, want ErrRerun", err)
	}
	spec3, _, _ := countJob(t, "daily", 1)
	res3, err := spec3.Reserve(ctx, l, "data", ReserveOptions{Analyst: "alice", AllowRerun: true})
	if err != nil || !res3.Rerun || res3.Release.Seq != res.Release.Seq {
		t.Errorf("Reserve with AllowRerun: %+v, %v; want the first release, Rerun", res3, err)
	}
	if st, _ := l.Status(ctx, "data"); st.Releases != 1 || st.SpentEpsilon != spent {
		t.Errorf("a re-run was charged: %d releases, ε %g", st.Releases, st.SpentEpsilon)
	}
	// The same name for a different job is a conflict.
	spec4, _, _ := countJob(t, "daily", 0.5)
	if _, err := spec4.Reserve(ctx, l, "data", ReserveOptions{Analyst: "alice"}); !errors.Is(err, ledger.ErrIdempotencyConflict) {
		t.Errorf("another job under a used name: %v, want ErrIdempotencyConflict", err)
	}

	// A reserved job takes no more aggregations.
	s := beam.NewPipeline().Root()
	pcol, _ := MakePrivate(s, beam.CreateList(s, []row{{User: "a"}}), spec, "User")
	if _, err := Count(s, pcol, CountParams{PartitionParams: PartitionParams{Partition: "Day", MaxPartitions: 1, MaxContributions: 1, PublicPartitions: []int{1}}, Budget: dpkit.Budget{Epsilon: 0.1}}); err == nil || !strings.Contains(err.Error(), "already reserved") {
		t.Errorf("an aggregation added after Reserve: %v", err)
	}

	// A job over its own budget is refused before the ledger is asked.
	spec5, _, _ := countJob(t, "greedy", 2.5)
	if _, err := spec5.Reserve(ctx, l, "data", ReserveOptions{}); !errors.Is(err, dpkit.ErrInfeasible) || errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("a job over its own budget: %v, want ErrInfeasible", err)
	}
}

// TestLedgerPostgres reserves a job in the PostgreSQL ledger store (the server that
// scripts/test starts; skipped without DPKIT_TEST_POSTGRES).
func TestLedgerPostgres(t *testing.T) {
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.Schema(t, "dpbeam_"), &postgres.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l := ledger.New(st)
	if _, err := l.Create(ctx, ledger.Spec{ID: "data", Total: dpkit.Budget{Epsilon: 1.5}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		t.Fatal(err)
	}
	spec, p, out := countJob(t, "pg", 1)
	if _, err := spec.Reserve(ctx, l, "data", ReserveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := run(t, p); err != nil {
		t.Fatal(err)
	}
	if len(out()) != 2 {
		t.Errorf("released %v", out())
	}
	big, _, _ := countJob(t, "pg-big", 1)
	if _, err := big.Reserve(ctx, l, "data", ReserveOptions{}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("over budget on PostgreSQL: %v", err)
	}
}

// TestCostComposition: a job's cost is the PLD composition of its mechanisms when that
// is below the sum of the guarantees. Five Gaussian sums, each (1, 10^−6) over 4
// partitions per unit, compose to at most μ = √5·μ(1, 10^−6) (Gaussian-DP; each is
// calibrated, grid included, not to exceed its share): the job's ε at δ = 10^−5 is that
// Gaussian's ε (pld.GaussianEpsilon, closed form) or at most 10^−5 less, far below basic
// composition's 5.
func TestCostComposition(t *testing.T) {
	spec, mu := fiveGaussianSums(t, "five")
	c, err := spec.Cost()
	if err != nil {
		t.Fatal(err)
	}
	want, err := pld.GaussianEpsilon(math.Sqrt(5)*mu, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cost ε %.17g, Gaussian ε %.17g", c.Epsilon, want)
	if c.Method != "pld" || c.Epsilon > want*(1+1e-12) || c.Epsilon < want*(1-1e-5) || c.Delta != 1e-5 {
		t.Errorf("cost %+v, want ε = %.6g (Gaussian μ = √5·%.6g) at δ = 1e-5 by pld", c, want, mu)
	}
	for name, g := range c.Aggregations {
		if g != (dpkit.Budget{Epsilon: 1, Delta: 1e-6}) {
			t.Errorf("aggregation %s: %v", name, g)
		}
	}
	if len(c.Aggregations) != 5 {
		t.Errorf("%d aggregations named, want 5 (names made unique)", len(c.Aggregations))
	}
}

// TestParamErrors: bad input is refused at construction with a ParamError naming it.
func TestParamErrors(t *testing.T) {
	s := beam.NewPipeline().Root()
	col := beam.CreateList(s, []row{{User: "a"}})
	spec, _ := NewPrivacySpec(PrivacySpecParams{Job: "errors", Budget: dpkit.Budget{Epsilon: 1}})
	pcol, err := MakePrivate(s, col, spec, "User")
	if err != nil {
		t.Fatal(err)
	}
	good := PartitionParams{Partition: "Day", MaxPartitions: 1, MaxContributions: 1, Selection: dpkit.Budget{Epsilon: 1, Delta: 1e-6}}
	lap := dpkit.Budget{Epsilon: 1}
	with := func(f func(*PartitionParams)) PartitionParams { p := good; f(&p); return p }
	for _, c := range []struct {
		name string
		err  error
	}{
		{"job", func() error { _, err := NewPrivacySpec(PrivacySpecParams{Job: "a b", Budget: lap}); return err }()},
		{"budget.epsilon", func() error {
			_, err := NewPrivacySpec(PrivacySpecParams{Job: "j", Budget: dpkit.Budget{}})
			return err
		}()},
		{"budget.delta", func() error {
			_, err := NewPrivacySpec(PrivacySpecParams{Job: "j", Budget: dpkit.Budget{Epsilon: 1, Delta: 1}})
			return err
		}()},
		{"unit", func() error { _, err := MakePrivate(s, col, spec, "Amount"); return err }()},
		{"unit", func() error { _, err := MakePrivate(s, col, spec, "Nope"); return err }()},
		{"partition", func() error {
			_, err := Count(s, pcol, CountParams{PartitionParams: with(func(p *PartitionParams) { p.Partition = "Amount" }), Budget: lap})
			return err
		}()},
		{"max_partitions", func() error {
			_, err := Count(s, pcol, CountParams{PartitionParams: with(func(p *PartitionParams) { p.MaxPartitions = 0 }), Budget: lap})
			return err
		}()},
		{"max_contributions", func() error {
			_, err := Count(s, pcol, CountParams{PartitionParams: with(func(p *PartitionParams) { p.MaxContributions = MaxBound + 1 }), Budget: lap})
			return err
		}()},
		{"selection.delta", func() error {
			_, err := Count(s, pcol, CountParams{PartitionParams: with(func(p *PartitionParams) { p.Selection.Delta = 0 }), Budget: lap})
			return err
		}()},
		{"selection", func() error {
			_, err := Count(s, pcol, CountParams{PartitionParams: with(func(p *PartitionParams) { p.PublicPartitions = []int{1} }), Budget: lap})
			return err
		}()},
		{"public_partitions", func() error {
			_, err := Count(s, pcol, CountParams{PartitionParams: with(func(p *PartitionParams) { p.PublicPartitions = []string{"1"}; p.Selection = dpkit.Budget{} }), Budget: lap})
			return err
		}()},
		{"budget.delta", func() error {
			_, err := Count(s, pcol, CountParams{PartitionParams: good, Budget: dpkit.Budget{Epsilon: 1, Delta: 1e-6}})
			return err
		}()},
		{"budget.delta", func() error {
			_, err := Count(s, pcol, CountParams{PartitionParams: good, Noise: GaussianNoise, Budget: lap})
			return err
		}()},
		{"max", func() error {
			_, err := SumPerKey(s, pcol, SumParams{PartitionParams: good, Value: "Amount", Min: 5, Max: 1, Budget: lap})
			return err
		}()},
		{"value", func() error {
			_, err := SumPerKey(s, pcol, SumParams{PartitionParams: good, Value: "User", Min: 0, Max: 1, Budget: lap})
			return err
		}()},
		{"max", func() error {
			_, err := MeanPerKey(s, pcol, SumParams{PartitionParams: good, Value: "Amount", Min: 1, Max: 1, Budget: lap})
			return err
		}()},
		{"ranks[1]", func() error {
			_, err := QuantilesPerKey(s, pcol, QuantilesParams{PartitionParams: good, Value: "Amount", Min: 0, Max: 1, Ranks: []float64{0.5, 1.5}, Budget: lap})
			return err
		}()},
		{"value", func() error {
			_, err := DistinctPerKey(s, pcol, DistinctParams{PartitionParams: good, Value: "Missing", Budget: lap})
			return err
		}()},
	} {
		var pe *dpkit.ParamError
		if !errors.As(c.err, &pe) || pe.Name != c.name || pe.Pkg != pkg {
			t.Errorf("want a dpbeam ParamError on %s, got %v", c.name, c.err)
		}
	}
	if len(spec.aggs) != 0 {
		t.Errorf("%d refused aggregations were registered", len(spec.aggs))
	}
}

// TestRerunCost: the outputs of r runs of a job are the r-fold composition of its
// releases. A pure-ε job (Laplace counts, public partitions, δ = 0) costs exactly r·ε;
// the five Gaussian sums of TestCostComposition, run twice, compose to the Gaussian of
// μ = √10·μ(1, 10^−6) (closed form, pld.GaussianEpsilon) at δ = 2·10^−5.
func TestRerunCost(t *testing.T) {
	spec, _, _ := countJob(t, "rerun", 0.75)
	one, err := spec.Cost()
	if err != nil {
		t.Fatal(err)
	}
	if c, err := spec.RerunCost(1); err != nil || c.Budget != one.Budget {
		t.Errorf("RerunCost(1) = %v, %v; want Cost() = %v", c, err, one)
	}
	for _, r := range []int{2, 3, MaxRuns} {
		c, err := spec.RerunCost(r)
		if want := (dpkit.Budget{Epsilon: 0.75 * float64(r)}); err != nil || c.Budget != want || c.Method != "basic" {
			t.Errorf("RerunCost(%d) = %+v, %v; want %v (basic)", r, c, err, want)
		}
	}
	for _, r := range []int{0, -1, MaxRuns + 1} {
		var pe *dpkit.ParamError
		if _, err := spec.RerunCost(r); !errors.As(err, &pe) || pe.Name != "runs" {
			t.Errorf("RerunCost(%d): %v, want a ParamError on runs", r, err)
		}
	}

	g, mu := fiveGaussianSums(t, "five-twice")
	two, err := g.RerunCost(2)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pld.GaussianEpsilon(math.Sqrt(10)*mu, 2e-5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("two runs: ε %.17g, Gaussian ε %.17g", two.Epsilon, want)
	if two.Method != "pld" || two.Delta != 2e-5 || two.Epsilon > want*(1+1e-12) || two.Epsilon < want*(1-1e-5) {
		t.Errorf("RerunCost(2) = %+v, want ε = %.6g at δ = 2e-5 by pld", two, want)
	}
	if one, _ := g.Cost(); !(two.Epsilon > one.Epsilon && two.Epsilon < 2*one.Epsilon) {
		t.Errorf("two runs cost ε %g, one %g: want between one and twice", two.Epsilon, one.Epsilon)
	}
}

// fiveGaussianSums returns a job (budget (3, 10^−5)) of five Gaussian sums, each
// (1, 10^−6) over 4 partitions per unit, and μ(1, 10^−6), the Gaussian-DP parameter
// each is calibrated not to exceed.
func fiveGaussianSums(t *testing.T, job string) (*PrivacySpec, float64) {
	t.Helper()
	spec, err := NewPrivacySpec(PrivacySpecParams{Job: job, Budget: dpkit.Budget{Epsilon: 3, Delta: 1e-5}})
	if err != nil {
		t.Fatal(err)
	}
	s := beam.NewPipeline().Root()
	pcol, err := MakePrivate(s, beam.CreateList(s, []row{{User: "a"}}), spec, "User")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := SumPerKey(s, pcol, SumParams{PartitionParams: PartitionParams{Partition: "Day", MaxPartitions: 4, MaxContributions: 2, PublicPartitions: []int{1}},
			Value: "Amount", Min: 0, Max: 10, Noise: GaussianNoise, Budget: dpkit.Budget{Epsilon: 1, Delta: 1e-6}}); err != nil {
			t.Fatal(err)
		}
	}
	mu, err := pld.GaussianMu(1, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	return spec, mu
}
