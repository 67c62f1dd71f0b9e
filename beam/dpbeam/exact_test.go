package dpbeam

import (
	"context"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/testenv"
)

// genData returns about n rows: users with 1 to 40 visits, every 100th user with 2000
// (heavy units, bounded hard), on 30 days 0, 37, …, 1073 (keys whose encodings are not
// UTF-8), amounts in [−10, 60] (clamped to [0, 50] by the aggregations) and items 0..19.
func genData(n int, seed uint64) []row {
	r := mrand.New(mrand.NewPCG(seed, 1))
	var rows []row
	for u := 0; len(rows) < n; u++ {
		visits := 1 + r.IntN(40)
		if u%100 == 99 {
			visits = 2000
		}
		for range visits {
			rows = append(rows, row{User: fmt.Sprintf("u%06d", u), Day: 37 * r.IntN(30), Amount: float64(r.IntN(71) - 10), Item: r.IntN(20)})
		}
	}
	return rows
}

// boundedRef is the direct computation of the bounding the pipeline does under a test
// seed: per unit the k partitions of smallest keyed hash, and in each the c rows of
// smallest seeded priority (rows mode) or c distinct items of smallest keyed hash
// (distinct mode). It sorts where the pipeline keeps heaps in its accumulators.
type refPart struct {
	units  int64
	amount []float64 // the kept rows' amounts (rows mode)
	items  map[int]bool
}

func boundRef(rows []row, key [16]byte, seed uint64, k, c int, distinct bool, public map[int]bool) map[int]*refPart {
	byUnit := map[string][]row{}
	for _, r := range rows {
		if public != nil && !public[r.Day] {
			continue
		}
		byUnit[r.User] = append(byUnit[r.User], r)
	}
	out := map[int]*refPart{}
	enc := func(day int) string { return string(encodeKey(nil, reflect.ValueOf(day))) }
	for unit, rs := range byUnit {
		days := map[int][]row{}
		for _, r := range rs {
			days[r.Day] = append(days[r.Day], r)
		}
		order := make([]int, 0, len(days))
		for d := range days {
			order = append(order, d)
		}
		sort.Slice(order, func(i, j int) bool {
			return keyedHash(key, unit, enc(order[i]), "") < keyedHash(key, unit, enc(order[j]), "")
		})
		for _, d := range order[:min(k, len(order))] {
			p := out[d]
			if p == nil {
				p = &refPart{items: map[int]bool{}}
				out[d] = p
			}
			p.units++
			dr := days[d]
			if distinct {
				seen := map[int]bool{}
				var items []int
				for _, r := range dr {
					if !seen[r.Item] {
						seen[r.Item] = true
						items = append(items, r.Item)
					}
				}
				pri := func(item int) uint64 {
					return keyedHash(key, unit, enc(d), string(encodeKey(nil, reflect.ValueOf(item))))
				}
				sort.Slice(items, func(i, j int) bool { return pri(items[i]) < pri(items[j]) })
				for _, it := range items[:min(c, len(items))] {
					p.items[it] = true
				}
				continue
			}
			pri := func(r row) uint64 {
				return seededRowPriority(seed, rec{Unit: unit, Part: enc(d), Vals: []float64{r.Amount}})
			}
			sort.SliceStable(dr, func(i, j int) bool { return pri(dr[i]) < pri(dr[j]) })
			for _, r := range dr[:min(c, len(dr))] {
				p.amount = append(p.amount, r.Amount)
			}
		}
	}
	return out
}

// TestExactAggregates runs Count, SumPerKey, MeanPerKey, QuantilesPerKey and
// DistinctPerKey (with partition selection, and Count with public partitions) on Prism
// with noise switched off (a test-only option; partition selection then keeps every
// partition with a unit) and compares each output with the direct computation of the
// same bounding (boundRef): equal exactly (the values are integers, so the sums are
// exact in float64), quantiles within one leaf of the tree. 10^5 rows; 10^6 in the
// long step. The bounding DoFn emits its accumulators every 7919 rows, so that units
// are split across many of them and merged after the shuffle.
func TestExactAggregates(t *testing.T) {
	n := 100_000
	if testenv.IsLong() {
		n = 1_000_000
	}
	const seed, k, c, cd = 7, 3, 4, 2
	rows := genData(n, 1)
	spec, p, s, pcol := privateRows(t, rows, PrivacySpecParams{Job: "exact", Budget: dpkit.Budget{Epsilon: 20, Delta: 1e-4}}, testOptions{noNoise: true, seed: seed, flushRows: 7919})
	sel := dpkit.Budget{Epsilon: 1, Delta: 1e-6}
	pp := PartitionParams{Partition: "Day", MaxPartitions: k, MaxContributions: c, Selection: sel}
	publicDays := []int{0, 37, 74, 148, 185, 222, 259, 296, 1073, 5000, 5001} // 5000, 5001: empty
	pub := PartitionParams{Partition: "Day", MaxPartitions: k, MaxContributions: c, PublicPartitions: publicDays}
	lap := dpkit.Budget{Epsilon: 1}
	must := func(col beam.PCollection, err error) beam.PCollection {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return col
	}
	count := collect(s, t, must(Count(s, pcol, CountParams{PartitionParams: pp, Budget: lap})), "count")
	sum := collect(s, t, must(SumPerKey(s, pcol, SumParams{PartitionParams: pp, Value: "Amount", Min: 0, Max: 50, Budget: lap})), "sum")
	mean := collect(s, t, must(MeanPerKey(s, pcol, SumParams{PartitionParams: pp, Value: "Amount", Min: 0, Max: 50, Budget: lap})), "mean")
	quant := collect(s, t, must(QuantilesPerKey(s, pcol, QuantilesParams{PartitionParams: pp, Value: "Amount", Min: 0, Max: 50, Ranks: []float64{0.9, 0.1, 0.5}, Budget: lap})), "quantiles")
	distinct := collect(s, t, must(DistinctPerKey(s, pcol, DistinctParams{PartitionParams: PartitionParams{Partition: "Day", MaxPartitions: k, MaxContributions: cd, Selection: sel}, Value: "Item", Budget: lap})), "distinct")
	public := collect(s, t, must(Count(s, pcol, CountParams{PartitionParams: pub, Noise: GaussianNoise, Budget: dpkit.Budget{Epsilon: 1, Delta: 1e-6}})), "public")
	l := newLedger(t, dpkit.Budget{Epsilon: 100, Delta: 1e-2})
	if _, err := spec.Reserve(context.Background(), l, "data", ReserveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := run(t, p); err != nil {
		t.Fatal(err)
	}

	ref := boundRef(rows, spec.key, seed, k, c, false, nil)
	refD := boundRef(rows, spec.key, seed, k, cd, true, nil)
	pubSet := map[int]bool{}
	for _, d := range publicDays {
		pubSet[d] = true
	}
	refP := boundRef(rows, spec.key, seed, k, c, false, pubSet)
	clamp := func(x float64) float64 { return math.Min(math.Max(x, 0), 50) }

	check := func(name string, got []kv, want map[int]any) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %d partitions released, want %d", name, len(got), len(want))
		}
		for _, e := range got {
			w, ok := want[e.K.(int)]
			if !ok {
				t.Errorf("%s: unexpected partition %v", name, e.K)
				continue
			}
			if !reflect.DeepEqual(e.V, w) {
				t.Errorf("%s[%v] = %v, want %v", name, e.K, e.V, w)
			}
		}
	}
	wantCount, wantSum, wantMean, wantDistinct, wantPublic := map[int]any{}, map[int]any{}, map[int]any{}, map[int]any{}, map[int]any{}
	for d, p := range ref {
		wantCount[d] = int64(len(p.amount))
		s, cen := 0.0, 0.0
		for _, a := range p.amount {
			s += clamp(a)
			cen += clamp(a) - 25
		}
		wantSum[d] = s
		wantMean[d] = meanOf(25, cen, int64(len(p.amount)), 0, 50)
	}
	for d, p := range refD {
		wantDistinct[d] = int64(len(p.items))
	}
	for _, d := range publicDays {
		wantPublic[d] = int64(0)
		if p := refP[d]; p != nil {
			wantPublic[d] = int64(len(p.amount))
		}
	}
	check("count", count(), wantCount)
	check("sum", sum(), wantSum)
	check("mean", mean(), wantMean)
	check("distinct", distinct(), wantDistinct)
	check("public", public(), wantPublic)

	// Quantiles: within one leaf, (max − min)/65536, of the exact quantiles of the kept
	// clamped amounts (a rank r is reached at the ⌈r·n⌉-th smallest value: the tree
	// interpolates inside the leaf holding it).
	leaf := 50.0 / treeLeaves
	got := quant()
	if len(got) != len(ref) {
		t.Errorf("quantiles: %d partitions, want %d", len(got), len(ref))
	}
	for _, e := range got {
		p := ref[e.K.(int)]
		vals := make([]float64, len(p.amount))
		for i, a := range p.amount {
			vals[i] = clamp(a)
		}
		slices.Sort(vals)
		q := e.V.([]float64)
		for i, r := range []float64{0.9, 0.1, 0.5} {
			j := max(int(math.Ceil(r*float64(len(vals))))-1, 0)
			lo, hi := vals[max(j-1, 0)]-leaf, vals[j]+leaf
			if q[i] < lo || q[i] > hi {
				t.Errorf("quantiles[%v] rank %g = %g, want within [%g, %g]", e.K, r, q[i], lo, hi)
			}
		}
		if !(q[1] <= q[2] && q[2] <= q[0]) {
			t.Errorf("quantiles[%v] = %v not nondecreasing in the rank", e.K, q)
		}
	}
}

// stampFn gives row i of the windowing test the time i minutes after the epoch.
func stampFn(r row) (beam.EventTime, row) {
	return mtime.FromMilliseconds(int64(r.Item) * 60_000), r
}

func init() { register.Function1x2(stampFn) }

// TestWindowsAreIgnored: the aggregations release one value per partition over the
// whole input, whatever windows the input is in — the ledger charges one release per
// partition, so per-window releases would spend more than it recorded. Rows in 20
// one-minute windows (by Item) give the counts of all the rows, one element per
// partition.
func TestWindowsAreIgnored(t *testing.T) {
	const seed, k, c = 5, 2, 3
	rows := genData(20_000, 3)
	spec, err := testSpec(PrivacySpecParams{Job: "windows", Budget: dpkit.Budget{Epsilon: 20, Delta: 1e-4}}, testOptions{noNoise: true, seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	windowed := beam.WindowInto(s, window.NewFixedWindows(time.Minute), beam.ParDo(s, stampFn, beam.CreateList(s, rows)))
	pcol, err := MakePrivate(s, windowed, spec, "User")
	if err != nil {
		t.Fatal(err)
	}
	pp := PartitionParams{Partition: "Day", MaxPartitions: k, MaxContributions: c, Selection: dpkit.Budget{Epsilon: 1, Delta: 1e-6}}
	col, err := Count(s, pcol, CountParams{PartitionParams: pp, Budget: dpkit.Budget{Epsilon: 1}})
	if err != nil {
		t.Fatal(err)
	}
	got := collect(s, t, col, "count")
	if _, err := spec.Reserve(context.Background(), newLedger(t, dpkit.Budget{Epsilon: 100, Delta: 1e-2}), "data", ReserveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := run(t, p); err != nil {
		t.Fatal(err)
	}
	ref := boundRef(rows, spec.key, seed, k, c, false, nil)
	seen := map[int]bool{}
	for _, e := range got() {
		d := e.K.(int)
		if seen[d] {
			t.Errorf("partition %d released twice", d)
		}
		seen[d] = true
		if want := int64(len(ref[d].amount)); e.V.(int64) != want {
			t.Errorf("count[%d] = %d, want %d (all windows together)", d, e.V, want)
		}
	}
	if len(seen) != len(ref) {
		t.Errorf("%d partitions released, want %d", len(seen), len(ref))
	}
}
