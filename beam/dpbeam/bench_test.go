package dpbeam

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/dpkit/dpkit"
)

// genFn generates the benchmark's rows inside the pipeline: shard i of Shards emits
// Rows/Shards visits of Users users on 100 days (a unit's visits are spread over the
// shards, as in unsorted input).
type genFn struct {
	Rows, Shards, Users int
}

func (fn *genFn) ProcessElement(shard int, emit func(row)) {
	n := fn.Rows / fn.Shards
	for j := 0; j < n; j++ {
		i := shard*n + j
		u := (i * 7919) % fn.Users
		emit(row{User: fmt.Sprintf("user%07d", u), Day: (i / 3) % 100, Amount: float64(i % 50), Item: i % 10})
	}
}

func dayAmount(r row) (int, float64) { return r.Day, r.Amount }
func dayOf(r row) int                { return r.Day }
func byUser(r row) (string, row)     { return r.User, r }

// userDays reads a user's rows after the shuffle by user and emits their (day,
// amount) pairs: the non-DP pipeline with the grouping by privacy unit that
// contribution bounding needs, and no bounding.
func userDays(_ string, rows func(*row) bool, emit func(int, float64)) {
	var r row
	for rows(&r) {
		emit(r.Day, r.Amount)
	}
}

func init() {
	register.DoFn2x0[int, func(row)](&genFn{})
	register.Emitter1[row]()
	register.Function1x2(dayAmount)
	register.Function1x1(dayOf)
	register.Function1x2(byUser)
	register.Function3x0(userDays)
	register.Iter1[row]()
	register.Emitter2[int, float64]()
}

func genRows(s beam.Scope, rows int) beam.PCollection {
	const shards = 64
	idx := make([]int, shards)
	for i := range idx {
		idx[i] = i
	}
	return beam.ParDo(s, &genFn{Rows: rows, Shards: shards, Users: rows / 10}, beam.CreateList(s, idx))
}

// BenchmarkCountSum: a DP count and sum per partition (100 days, 10 rows per unit,
// max_partitions 4, max_contributions 3, partition selection; "dp") next to the same
// counts and sums without DP (Beam's stats.Count and stats.SumPerKey; "plain"), and
// the same without DP after a GroupByKey by user ("byunit": the shuffle by privacy
// unit that any contribution bounding needs), on Prism in this process.
func BenchmarkCountSum(b *testing.B) {
	for _, rows := range benchRows {
		b.Run(fmt.Sprintf("rows=%.0e/plain", float64(rows)), func(b *testing.B) {
			for b.Loop() {
				p, s := beam.NewPipelineWithRoot()
				col := genRows(s, rows)
				beam.ParDo0(s, discard2, stats.Count(s, beam.ParDo(s, dayOf, col)))
				beam.ParDo0(s, discard2, stats.SumPerKey(s, beam.ParDo(s, dayAmount, col)))
				if _, err := runBench(p); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("rows=%.0e/byunit", float64(rows)), func(b *testing.B) {
			for b.Loop() {
				p, s := beam.NewPipelineWithRoot()
				pairs := beam.ParDo(s, userDays, beam.GroupByKey(s, beam.ParDo(s, byUser, genRows(s, rows))))
				beam.ParDo0(s, discard2, stats.Count(s, beam.DropValue(s, pairs)))
				beam.ParDo0(s, discard2, stats.SumPerKey(s, pairs))
				if _, err := runBench(p); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("rows=%.0e/dp", float64(rows)), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				p, s := beam.NewPipelineWithRoot()
				spec, err := NewPrivacySpec(PrivacySpecParams{Job: fmt.Sprintf("bench-%d-%d", rows, i), Budget: dpkit.Budget{Epsilon: 4, Delta: 1e-6}})
				if err != nil {
					b.Fatal(err)
				}
				pcol, err := MakePrivate(s, genRows(s, rows), spec, "User")
				if err != nil {
					b.Fatal(err)
				}
				pp := PartitionParams{Partition: "Day", MaxPartitions: 4, MaxContributions: 3, Selection: dpkit.Budget{Epsilon: 0.5, Delta: 5e-7}}
				c, err := Count(s, pcol, CountParams{PartitionParams: pp, Budget: dpkit.Budget{Epsilon: 1}})
				if err != nil {
					b.Fatal(err)
				}
				sum, err := SumPerKey(s, pcol, SumParams{PartitionParams: pp, Value: "Amount", Min: 0, Max: 50, Budget: dpkit.Budget{Epsilon: 1}})
				if err != nil {
					b.Fatal(err)
				}
				beam.ParDo0(s, discard2, c)
				beam.ParDo0(s, discard2, sum)
				l := newBenchLedger(b)
				if _, err := spec.Reserve(context.Background(), l, "data", ReserveOptions{}); err != nil {
					b.Fatal(err)
				}
				if _, err := runBench(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func discard2(beam.X, beam.Y) {}

func init() { register.Function2x0(discard2) }

var benchRows = []int{1_000_000, 10_000_000}
