package dpbeam

import (
	"fmt"
	"math"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/dpkit/dpkit"
)

// The quantile tree: a complete tree of TreeLevels levels below the root with
// TreeBranching children per node over [Min, Max], whose 16^4 = 65536 leaves split the
// range evenly. Each value adds 1 to one node per level, so a unit's c values change a
// partition's tree by at most c·TreeLevels in ℓ1 and c·√TreeLevels in ℓ2 (at most c per
// level). A quantile is found by descending from the root through noisy child counts
// (Privacy on Beam's method); noise is drawn once per visited node, which is the same as
// noising every node and post-processing.
const (
	TreeLevels    = 4
	TreeBranching = 16
	treeLeaves    = 1 << 16 // TreeBranching^TreeLevels
	branchBits    = 4       // log2(TreeBranching)
)

// QuantilesParams configures QuantilesPerKey.
type QuantilesParams struct {
	PartitionParams
	// Value names the field whose quantiles are released; required: an exported field of
	// an integer or floating-point type.
	Value string
	// Min and Max are the declared bounds of a value; required, finite, Min < Max.
	// Values are clamped to [Min, Max]; NaN values count as the midpoint.
	Min, Max float64
	// Ranks are the quantiles wanted, each in [0, 1]; required, at least one. They share
	// one noisy tree per partition (and so the budget).
	Ranks []float64
	// Noise is the kind of noise (default LaplaceNoise).
	Noise NoiseKind
	// Budget is the (ε, δ) of the noisy trees over all the partitions; required (δ = 0
	// for Laplace, δ in (0, 1) for Gaussian). Partition selection, if any, spends
	// PartitionParams.Selection on top.
	Budget dpkit.Budget
}

// QuantilesPerKey returns, per partition, the quantiles of the Value field at Ranks
// (in the order given), as a PCollection<KV<K, []float64>>, computed from a noisy
// quantile tree (see TreeLevels). The results are nondecreasing in the rank and lie in
// [Min, Max]; without noise they are exact to within one leaf, (Max − Min)/65536.
func QuantilesPerKey(s beam.Scope, pcol PrivatePCollection, p QuantilesParams) (beam.PCollection, error) {
	s = s.Scope("dpbeam.QuantilesPerKey")
	if err := checkBudget(p.Noise, p.Budget); err != nil {
		return beam.PCollection{}, err
	}
	if err := checkBounds(p.Min, p.Max); err != nil {
		return beam.PCollection{}, err
	}
	if p.Min == p.Max {
		return beam.PCollection{}, &dpkit.ParamError{Pkg: pkg, Name: "max", Value: p.Max, Want: fmt.Sprintf("> min = %g", p.Min)}
	}
	if len(p.Ranks) == 0 {
		return beam.PCollection{}, &dpkit.ParamError{Pkg: pkg, Name: "ranks", Want: "at least one rank in [0, 1]"}
	}
	for i, r := range p.Ranks {
		if !(r >= 0 && r <= 1) {
			return beam.PCollection{}, &dpkit.ParamError{Pkg: pkg, Name: fmt.Sprintf("ranks[%d]", i), Value: r, Want: "in [0, 1]"}
		}
	}
	if pcol.spec == nil {
		return beam.PCollection{}, &dpkit.ParamError{Pkg: pkg, Name: "pcol", Want: "a PrivatePCollection made by MakePrivate"}
	}
	val, err := lookupField(pcol.row, "value", p.Value, numericKinds)
	if err != nil {
		return beam.PCollection{}, err
	}
	pl, err := newPlan(s, pcol, p.PartitionParams, sampleRows, field{})
	if err != nil {
		return beam.PCollection{}, err
	}
	c := float64(p.MaxContributions)
	ns := noiseSpec{Kind: p.Noise, Budget: p.Budget, K: p.MaxPartitions, Sensitivity: c * TreeLevels, Integer: true, PureEpsilon: true}
	if p.Noise == GaussianNoise {
		ns = noiseSpec{Kind: p.Noise, Budget: p.Budget, K: p.MaxPartitions, Sensitivity: c * math.Sqrt(TreeLevels), Dim: int(p.MaxContributions) * TreeLevels}
		if ns.Dim == 1 {
			ns.Dim = 0
		}
	}
	z, err := ns.build()
	if err != nil {
		return beam.PCollection{}, err
	}
	if err := pl.register(fmt.Sprintf("quantiles(%s by %s)", p.Value, p.Partition), p.PartitionParams, z); err != nil {
		return beam.PCollection{}, err
	}
	mid := p.Min + (p.Max-p.Min)/2
	elems := beam.ParDo(s, &quantileValueFn{valueFn: valueFn{Col: pl.stage.column(val), Lo: p.Min, Hi: p.Max, NaN: mid}}, pl.stage.kept)
	if pl.public != nil {
		elems = beam.Flatten(s, elems, beam.ParDo(s, quantileZeroFn, beam.CreateList(s, pl.public)))
	}
	grouped := beam.GroupByKey(s, elems)
	out := &quantilesOutFn{release: newRelease(pl), Noise: ns, Lo: p.Min, Hi: p.Max, Ranks: slices.Clone(p.Ranks)}
	return beam.ParDo(s, out, grouped, pl.outputType()), nil
}

// qelem is a partition's element for the quantile tree: a unit's kept values, clamped,
// or (Zero) a public partition's marker.
type qelem struct {
	X    []float64
	Zero bool
}

type quantileValueFn struct{ valueFn }

func (fn *quantileValueFn) ProcessElement(part string, k keptRows, emit func(string, qelem)) {
	e := qelem{X: make([]float64, k.N)}
	for i := range k.N {
		e.X[i] = fn.clamp(k.row(i)[fn.Col])
	}
	emit(part, e)
}

func quantileZeroFn(part string, emit func(string, qelem)) { emit(part, qelem{Zero: true}) }

// quantilesOutFn builds a partition's tree and releases its noisy quantiles.
type quantilesOutFn struct {
	release
	Noise  noiseSpec
	Lo, Hi float64
	Ranks  []float64

	z *noiser
}

func (fn *quantilesOutFn) Setup() error {
	zs, err := fn.setup(fn.Noise)
	if err != nil {
		return err
	}
	fn.z = zs[0]
	return nil
}

func (fn *quantilesOutFn) ProcessElement(part string, elems func(*qelem) bool, emit func(beam.X, []float64)) error {
	t := tree{counts: map[int32]float64{}, lo: fn.Lo, hi: fn.Hi}
	var units int64
	var e qelem
	for elems(&e) {
		if e.Zero {
			continue
		}
		units++
		for _, x := range e.X {
			t.add(x)
		}
	}
	k, src, ok, err := fn.open(part, units)
	if !ok {
		return err
	}
	if !fn.NoNoise {
		t.noisy = map[int32]float64{}
		t.noise = func(v []float64) ([]float64, error) { return fn.z.addVector(v, src) }
	}
	out := make([]float64, len(fn.Ranks))
	order := make([]int, len(fn.Ranks))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmpFloat(fn.Ranks[a], fn.Ranks[b]) })
	prev := math.Inf(-1)
	for _, i := range order {
		q, err := t.quantile(fn.Ranks[i])
		if err != nil {
			return err
		}
		prev = math.Max(prev, q) // nondecreasing in the rank (post-processing)
		out[i] = prev
	}
	emit(k, out)
	return nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// tree is a partition's quantile tree: exact counts per node, and (when noise is on)
// the noisy counts of the nodes visited so far.
type tree struct {
	counts map[int32]float64 // node id → count
	noisy  map[int32]float64 // node id → noisy count, drawn once
	noise  func([]float64) ([]float64, error)
	lo, hi float64
}

// node returns the id of node idx at level l (1..TreeLevels): levels are stored one
// after the other.
func node(l int, idx int32) int32 {
	off := int32(0)
	for j := 1; j < l; j++ {
		off += 1 << (branchBits * j)
	}
	return off + idx
}

func (t *tree) add(x float64) {
	leaf := int32(math.Floor((x - t.lo) / (t.hi - t.lo) * treeLeaves))
	leaf = min(max(leaf, 0), treeLeaves-1)
	for l := 1; l <= TreeLevels; l++ {
		t.counts[node(l, leaf>>(branchBits*(TreeLevels-l)))]++
	}
}

// children returns the (noisy) counts of the children of node idx at level l−1,
// negative ones set to 0.
func (t *tree) children(l int, idx int32) ([]float64, error) {
	ids := make([]int32, TreeBranching)
	c := make([]float64, TreeBranching)
	for j := range c {
		ids[j] = node(l, idx*TreeBranching+int32(j))
		c[j] = t.counts[ids[j]]
	}
	if t.noise != nil {
		if _, ok := t.noisy[ids[0]]; !ok { // a set of siblings is noised together, once
			n, err := t.noise(c)
			if err != nil {
				return nil, err
			}
			for j := range c {
				t.noisy[ids[j]] = n[j]
			}
		}
		for j := range c {
			c[j] = t.noisy[ids[j]]
		}
	}
	for j := range c {
		c[j] = math.Max(c[j], 0)
	}
	return c, nil
}

// quantile descends to the leaf holding rank r of the (noisy) counts and interpolates
// linearly inside it. With no mass below a node the midpoint of its range is returned.
func (t *tree) quantile(r float64) (float64, error) {
	idx := int32(0)
	width := t.hi - t.lo
	lo := t.lo
	for l := 1; l <= TreeLevels; l++ {
		c, err := t.children(l, idx)
		if err != nil {
			return 0, err
		}
		total := 0.0
		for _, x := range c {
			total += x
		}
		width /= TreeBranching
		if total == 0 {
			return math.Min(lo+width*TreeBranching/2, t.hi), nil
		}
		target := r * total
		j := 0
		for ; j < TreeBranching-1 && target > c[j]; j++ {
			target -= c[j]
		}
		idx = idx*TreeBranching + int32(j)
		lo += float64(j) * width
		if l == TreeLevels {
			frac := 0.0
			if c[j] > 0 {
				frac = math.Min(target/c[j], 1)
			}
			return math.Min(lo+frac*width, t.hi), nil
		}
		r = 0
		if c[j] > 0 {
			r = math.Min(target/c[j], 1)
		}
	}
	return lo, nil
}
