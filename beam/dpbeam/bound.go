package dpbeam

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
)

// Contribution bounding (the transform every aggregation starts with).
//
// Each privacy unit keeps
//
//   - at most k = max_partitions of the partitions it has rows in, a uniformly random
//     subset: the k with the smallest priority h(key, unit, partition), h a keyed 64-bit
//     hash whose key is drawn from crypto/rand when the job is built (a random function
//     of the partition, so every k-subset is equally likely, and the same on every
//     worker and retry);
//   - in each kept partition, at most c = max_contributions rows, a uniformly random
//     subset: the c with the smallest of independent uniform 64-bit priorities drawn when
//     the row is read (reservoir sampling); for DistinctPerKey, at most c distinct
//     values, the c with the smallest h(key, unit, partition, value).
//
// Both rules are "keep the smallest priorities", so they are computed by merging
// partial results: units are put in buckets (a hash of the unit modulo Buckets), each
// bucket's accumulator holds the bounded state of its units, and accumulators merge by
// keeping the smallest priorities of the union. The DoFn that reads the rows bounds
// them as it reads, into one accumulator per bucket that it emits when the bundle ends;
// after the shuffle by bucket (a GroupByKey), a bucket's accumulators are merged. So a
// few accumulators per bucket cross the shuffle instead of every row. (Emitting them
// more often, to keep less state per bundle, cost more on Prism: 10^7 rows with
// accumulators emitted every 2^17 rows took 8 GB instead of 3.2 GB; a lifted combine in
// place of the GroupByKey, 15 % more CPU.) The bounds hold whatever the sampling does,
// which is all the privacy guarantee needs; the randomness only makes the kept rows an
// unbiased sample.
//
// For rows, the stage emits one element per (unit, kept partition): the unit's kept rows
// there (their numeric fields), from which each aggregation computes the unit's partial —
// the unit itself (partition selection counts distinct units), its rows and their sum. One
// element per unit and partition, not one per row plus one per unit, keeps the stage's
// output small and lets each aggregation combine it directly, without a Flatten: on Prism
// a Flatten is a stage of its own whose inputs are all held in memory (10^6 rows: 3.3 GB
// of heap with a Flatten of rows and unit records, 0.2 GB without; docs/benchmarks.md).
// For DistinctPerKey it emits each kept distinct value with its partition, and one unit
// record per (unit, kept partition).

// DefaultBuckets is the number of unit buckets of the bounding stage when
// PrivacySpecParams.Buckets is 0. Each bucket is one key of the shuffle; its
// accumulator holds the bounded rows of 1/Buckets of the units.
const DefaultBuckets = 1024

// boundMode says what a unit's partition sample consists of.
type boundMode int

const (
	sampleRows     boundMode = iota // c rows
	sampleDistinct                  // c distinct values of a field
)

// boundKey identifies a bounding stage: aggregations on the same private collection
// with the same key share one stage (one shuffle).
type boundKey struct {
	part   string
	k, c   int64
	mode   boundMode
	value  string // the distinct field (sampleDistinct)
	public string // identity of the public partitions ("" for none)
}

// boundStage is a bounding stage's outputs.
type boundStage struct {
	part   field
	ex     *extractFn       // its first transform, whose Numeric list grows with the aggregations' needs
	fields []string         // the names of ex.Numeric's fields, in order
	kept   beam.PCollection // KV<string, keptRows>: partition, one unit's kept rows there (sampleRows)
	values beam.PCollection // KV<string, string>: partition, a kept distinct value (sampleDistinct)
	units  beam.PCollection // KV<string, partial{Units: 1}>: one per (unit, kept partition) (sampleDistinct)
}

// column returns the position of numeric field f among the values the stage carries
// per kept row, adding it if no aggregation needed it before. Beam serializes the
// extracting DoFn when the pipeline runs, so every aggregation built on the stage is
// served by the one list.
func (st *boundStage) column(f field) int {
	for i, name := range st.fields {
		if name == f.Name {
			return i
		}
	}
	st.fields = append(st.fields, f.Name)
	st.ex.Numeric = append(st.ex.Numeric, f.Index)
	return len(st.fields) - 1
}

// stage returns the bounding stage for key, building it on first use.
func (p PrivatePCollection) stage(s beam.Scope, key boundKey, part, value field, public []string) *boundStage {
	if st, ok := p.bounded[key]; ok {
		return st
	}
	s = s.Scope("dpbeam.Bound")
	bd := bounder{K: key.k, C: key.c, Mode: key.mode, Key: p.spec.key, Seed: p.spec.test.seed}
	ex := &extractFn{bounder: bd, Unit: p.unit.Index, Part: part.Index, Buckets: p.spec.buckets, Ticket: p.spec.ticket, Flush: p.spec.test.flushRows}
	for _, k := range public {
		ex.Public = append(ex.Public, []byte(k)) // []byte: JSON (the DoFn's serialization) keeps the bytes
	}
	if key.mode == sampleDistinct {
		ex.Value = value.Index
	}
	st := &boundStage{part: part, ex: ex}
	col := p.col
	if col.WindowingStrategy().Fn.Kind != window.GlobalWindows {
		// One release per partition over the whole input, as the ledger charged: rows in
		// windows are aggregated together (per-window releases would each spend the
		// budget).
		col = beam.WindowInto(s, window.NewGlobalWindows(), col)
	}
	keyed := beam.ParDo(s, ex, col)
	grouped := beam.GroupByKey(s, keyed)
	if key.mode == sampleDistinct {
		st.values, st.units = beam.ParDo2(s, &emitDistinctFn{bd}, grouped)
	} else {
		st.kept = beam.ParDo(s, &emitRowsFn{bounder: bd}, grouped)
	}
	p.bounded[key] = st
	return st
}

// publicKey returns an identity of a public partition list for boundKey.
func publicKey(public []string) string {
	if public == nil {
		return ""
	}
	var b strings.Builder
	for _, k := range public {
		fmt.Fprintf(&b, "%d:%s;", len(k), k)
	}
	return b.String()
}

// rec is a row as the bounding stage sees it.
type rec struct {
	Unit, Part string
	Vals       []float64 // the row's numeric fields that the aggregations need (sampleRows)
	D          string    // the distinct value's encoding (sampleDistinct)
}

// bounder applies the bounds (see the comment at the top of this file) to rows and
// accumulators.
type bounder struct {
	Mode boundMode
	K, C int64
	Key  [16]byte
	Seed uint64 // tests: sample rows by a seeded hash of their values

	rng    *mrand.PCG
	h0     uint64 // hashKey(Key), once hashed is set
	hashed bool
}

// add offers the row r to a.
func (b *bounder) add(a *bucketAcc, r rec) {
	if !b.hashed {
		b.h0, b.hashed = hashKey(b.Key), true
	}
	it := item{vals: r.Vals, d: r.D}
	if b.Mode == sampleDistinct {
		it.pri = hashStrings(b.h0, r.Unit, r.Part, r.D)
	} else {
		it.pri = b.rowPriority(r)
	}
	a.unit(r.Unit).offer(hashStrings(b.h0, r.Unit, r.Part, ""), r.Part, it, b.K, b.C, b.Mode)
}

// merge returns the union of x and y, bounded.
func (b *bounder) merge(x, y *bucketAcc) *bucketAcc {
	if len(x.us) < len(y.us) {
		x, y = y, x
	}
	for _, uy := range y.us {
		i, ok := x.units[uy.name]
		if !ok {
			x.units[uy.name] = int32(len(x.us))
			x.us = append(x.us, uy)
			continue
		}
		ux := &x.us[i]
		for _, p := range uy.parts {
			for _, it := range p.items {
				ux.offer(p.pri, p.part, it, b.K, b.C, b.Mode)
			}
		}
	}
	return x
}

// rowPriority is a fresh uniform 64-bit priority, or under a test seed a hash of the
// row (so that tests can recompute the sample).
func (b *bounder) rowPriority(r rec) uint64 {
	if b.Seed != 0 {
		return seededRowPriority(b.Seed, r)
	}
	if b.rng == nil {
		var seed [16]byte
		_, _ = rand.Read(seed[:]) // crypto/rand.Read does not fail (Go ≥ 1.24)
		b.rng = mrand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:]))
	}
	return b.rng.Uint64()
}

func seededRowPriority(seed uint64, r rec) uint64 {
	var k [16]byte
	binary.LittleEndian.PutUint64(k[:], seed)
	b := make([]byte, 0, 8*len(r.Vals))
	for _, x := range r.Vals {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return keyedHash(k, r.Unit, r.Part, string(b))
}

// extractFn reads a row's unit, partition and values and bounds the rows of a bundle as
// it reads them, in one accumulator per bucket of units, emitted when the bundle ends.
// Bounding in the DoFn rather than in a lifted combine spares Beam's per-row emit and
// cache lookup (docs/benchmarks.md). Rows outside the public partitions (when there are
// any) are dropped here, so that they use none of the unit's bounds.
type extractFn struct {
	bounder
	Unit, Part, Value []int
	Numeric           [][]int
	Public            [][]byte // encoded partition keys; nil: no public partitions
	Buckets           int
	Flush             int // tests: emit the accumulators every Flush rows (0: when the bundle ends)
	Ticket            *ticket

	public map[string]bool
	accs   map[int]*bucketAcc
	held   int               // rows taken in since the last flush
	parts  map[string]string // the partition keys read, interned
	slab   floatSlab         // the kept rows' fields
	buf    []byte
}

func (fn *extractFn) Setup() error {
	if err := fn.Ticket.check(); err != nil {
		return err
	}
	if fn.Public != nil {
		fn.public = make(map[string]bool, len(fn.Public))
		for _, k := range fn.Public {
			fn.public[string(k)] = true
		}
	}
	return nil
}

func (fn *extractFn) StartBundle(func(int, *bucketAcc)) {
	fn.accs, fn.parts = map[int]*bucketAcc{}, map[string]string{}
}

func (fn *extractFn) ProcessElement(row beam.T, emit func(int, *bucketAcc)) {
	v := reflect.ValueOf(row)
	fn.buf = encodeKey(fn.buf[:0], v.FieldByIndex(fn.Part))
	if fn.public != nil && !fn.public[string(fn.buf)] {
		return
	}
	r := rec{Part: fn.parts[string(fn.buf)]} // a partition key read before: no allocation
	if r.Part == "" {
		r.Part = string(fn.buf)
		fn.parts[r.Part] = r.Part
	}
	fn.buf = encodeKey(fn.buf[:0], v.FieldByIndex(fn.Unit))
	b := int(hashStrings(zeroKey, string(fn.buf), "", "") % uint64(fn.Buckets))
	a := fn.accs[b]
	if a == nil {
		a = newBucketAcc()
		fn.accs[b] = a
	}
	if i, ok := a.units[string(fn.buf)]; ok {
		r.Unit = a.us[i].name // a unit seen before in this bundle: no allocation
	} else {
		r.Unit = string(fn.buf)
	}
	if fn.Value != nil {
		r.D = string(encodeKey(nil, v.FieldByIndex(fn.Value)))
	} else if len(fn.Numeric) > 0 {
		r.Vals = fn.slab.take(len(fn.Numeric))
		for i, idx := range fn.Numeric {
			r.Vals[i] = number(v.FieldByIndex(idx))
		}
	}
	fn.add(a, r)
	if fn.held++; fn.held == fn.Flush { // tests only
		fn.flush(emit)
	}
}

func (fn *extractFn) FinishBundle(emit func(int, *bucketAcc)) {
	fn.flush(emit)
	fn.slab = floatSlab{}
}

// flush emits the bundle's accumulators and starts new ones.
func (fn *extractFn) flush(emit func(int, *bucketAcc)) {
	for b, a := range fn.accs {
		emit(b, a)
	}
	fn.accs, fn.held = map[int]*bucketAcc{}, 0
}

// floatSlab hands out room for float64s cut from shared blocks: one allocation, which
// the garbage collector need not scan, for thousands of rows. A block is never reused,
// so what was handed out stays valid.
type floatSlab struct{ free []float64 }

// take returns room for n float64s.
func (b *floatSlab) take(n int) []float64 {
	if len(b.free) < n {
		b.free = make([]float64, max(4096, n))
	}
	v := b.free[:n:n]
	b.free = b.free[n:]
	return v
}

// bucketAcc is the bounded state of the units of one bucket. Units and their kept
// partitions are held by value, in slices, not each in an object of its own: a bundle
// holds the state of all its units until it ends, and the garbage collector scans it at
// every cycle (10^7 rows: a quarter of the CPU time with one object per unit and per
// partition).
type bucketAcc struct {
	units map[string]int32 // unit → its index in us
	us    []unitAcc
}

func newBucketAcc() *bucketAcc { return &bucketAcc{units: map[string]int32{}} }

// unit returns the state of unit name, added if new. The pointer is valid until the
// next unit is added.
func (a *bucketAcc) unit(name string) *unitAcc {
	i, ok := a.units[name]
	if !ok {
		i = int32(len(a.us))
		a.units[name] = i
		a.us = append(a.us, unitAcc{name: name})
	}
	return &a.us[i]
}

// unitAcc is one unit's kept partitions: a max-heap by priority of at most K.
type unitAcc struct {
	name  string
	parts []partAcc
}

// partAcc is one kept partition of a unit: a max-heap by priority of at most C items.
type partAcc struct {
	part  string
	pri   uint64
	items []item
}

type item struct {
	pri  uint64
	vals []float64
	d    string
}

func (p partAcc) priority() uint64 { return p.pri }
func (it item) priority() uint64   { return it.pri }

// siftUp restores the max-heap h (by priority) after h[i] grew, and returns the element's
// new index.
func siftUp[T interface{ priority() uint64 }](h []T, i int) int {
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].priority() >= h[i].priority() {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
	return i
}

// siftDown restores the max-heap h after h[i] shrank, and returns the element's new
// index.
func siftDown[T interface{ priority() uint64 }](h []T, i int) int {
	for {
		big := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(h) && h[c].priority() > h[big].priority() {
				big = c
			}
		}
		if big == i {
			return i
		}
		h[big], h[i] = h[i], h[big]
		i = big
	}
}

// offer adds it, a row (or distinct value) of partition part whose priority is pri,
// if the partition is among the unit's k of smallest priority and the item among the
// partition's c of smallest priority. A distinct value already kept is not added again.
func (u *unitAcc) offer(pri uint64, part string, it item, k, c int64, mode boundMode) {
	i := slices.IndexFunc(u.parts, func(q partAcc) bool { return q.part == part })
	if i < 0 {
		np := partAcc{part: part, pri: pri, items: make([]item, 0, min(c, 4))}
		switch {
		case int64(len(u.parts)) < k:
			if u.parts == nil {
				u.parts = make([]partAcc, 0, min(k, 4))
			}
			u.parts = append(u.parts, np)
			i = siftUp(u.parts, len(u.parts)-1)
		case pri < u.parts[0].pri: // replaces the kept partition of largest priority
			u.parts[0] = np
			i = siftDown(u.parts, 0)
		default:
			return // not among the unit's k partitions of smallest priority
		}
	}
	p := &u.parts[i]
	if mode == sampleDistinct && slices.ContainsFunc(p.items, func(q item) bool { return q.d == it.d }) {
		return
	}
	switch {
	case int64(len(p.items)) < c:
		p.items = append(p.items, it)
		siftUp(p.items, len(p.items)-1)
	case it.pri < p.items[0].pri:
		p.items[0] = it
		siftDown(p.items, 0)
	}
}

// keptRows is one unit's kept rows in one partition: N rows, and their numeric fields
// row-major in Vals (len(Vals)/N per row; none when the aggregations need no field).
type keptRows struct {
	N    int64
	Vals []float64
}

// row returns the numeric fields of kept row i.
func (k keptRows) row(i int64) []float64 {
	w := int64(len(k.Vals)) / k.N
	return k.Vals[i*w : (i+1)*w]
}

// mergeAll merges a bucket's accumulators.
func (b *bounder) mergeAll(accs func(**bucketAcc) bool) *bucketAcc {
	var a, next *bucketAcc
	for accs(&next) {
		if a == nil {
			a = next
		} else {
			a = b.merge(a, next)
		}
		next = nil
	}
	if a == nil {
		a = newBucketAcc()
	}
	return a
}

// emitRowsFn merges a bucket's accumulators and emits, for each of its units and each
// of their kept partitions, the unit's kept rows there.
type emitRowsFn struct {
	bounder
	slab floatSlab // the emitted rows' fields
}

func (fn *emitRowsFn) ProcessElement(_ int, accs func(**bucketAcc) bool, emit func(string, keptRows)) {
	for _, u := range fn.mergeAll(accs).us {
		for _, p := range u.parts {
			n := 0
			for _, it := range p.items {
				n += len(it.vals)
			}
			k := keptRows{N: int64(len(p.items)), Vals: fn.slab.take(n)[:0]}
			for _, it := range p.items {
				k.Vals = append(k.Vals, it.vals...)
			}
			emit(p.part, k)
		}
	}
}

// emitDistinctFn merges a bucket's accumulators and emits its kept distinct values and
// unit records.
type emitDistinctFn struct{ bounder }

func (fn *emitDistinctFn) ProcessElement(_ int, accs func(**bucketAcc) bool, emitValue func(string, string), emitUnit func(string, partial)) {
	for _, u := range fn.mergeAll(accs).us {
		for _, p := range u.parts {
			emitUnit(p.part, partial{Units: 1})
			for _, it := range p.items {
				emitValue(p.part, it.d)
			}
		}
	}
}

// encodeBucket is the accumulator's coder: units, their partitions and items, with
// varint lengths, strings as bytes and floats as their bits.
func encodeBucket(a *bucketAcc) ([]byte, error) {
	size := binary.MaxVarintLen64
	for _, u := range a.us {
		size += 2*binary.MaxVarintLen64 + len(u.name)
		for _, p := range u.parts {
			size += 2*binary.MaxVarintLen64 + len(p.part) + 8
			for _, it := range p.items {
				size += 2*binary.MaxVarintLen64 + 8 + len(it.d) + 8*len(it.vals)
			}
		}
	}
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(len(a.us)))
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, u := range a.us {
		str(u.name)
		b = binary.AppendUvarint(b, uint64(len(u.parts)))
		for _, p := range u.parts {
			str(p.part)
			b = binary.LittleEndian.AppendUint64(b, p.pri)
			b = binary.AppendUvarint(b, uint64(len(p.items)))
			for _, it := range p.items {
				b = binary.LittleEndian.AppendUint64(b, it.pri)
				str(it.d)
				b = binary.AppendUvarint(b, uint64(len(it.vals)))
				for _, x := range it.vals {
					b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
				}
			}
		}
	}
	return b, nil
}

var errCorrupt = errors.New("dpbeam: corrupt bounding accumulator")

func decodeBucket(data []byte) (*bucketAcc, error) {
	r := bytes.NewReader(data)
	n := func() (uint64, error) { return binary.ReadUvarint(r) }
	u64 := func() (uint64, error) {
		var x [8]byte
		if _, err := io.ReadFull(r, x[:]); err != nil {
			return 0, errCorrupt
		}
		return binary.LittleEndian.Uint64(x[:]), nil
	}
	str := func() (string, error) {
		l, err := n()
		if err != nil || l > uint64(r.Len()) {
			return "", errCorrupt
		}
		s := make([]byte, l)
		_, err = io.ReadFull(r, s)
		return string(s), err
	}
	count := func() (int, error) {
		c, err := n()
		if err != nil || c > uint64(r.Len())+1 {
			return 0, errCorrupt
		}
		return int(c), nil
	}
	nu, err := count()
	if err != nil {
		return nil, err
	}
	a := &bucketAcc{units: make(map[string]int32, nu), us: make([]unitAcc, nu)}
	var slab floatSlab // the rows' fields
	for ui := range a.us {
		name, err := str()
		if err != nil {
			return nil, err
		}
		if _, dup := a.units[name]; dup {
			return nil, errCorrupt
		}
		a.units[name] = int32(ui)
		np, err := count()
		if err != nil {
			return nil, err
		}
		u := &a.us[ui]
		u.name, u.parts = name, make([]partAcc, np)
		for i := range u.parts {
			p := &u.parts[i]
			if p.part, err = str(); err != nil {
				return nil, err
			}
			if p.pri, err = u64(); err != nil {
				return nil, err
			}
			ni, err := count()
			if err != nil {
				return nil, err
			}
			p.items = make([]item, ni)
			for j := range p.items {
				it := &p.items[j]
				if it.pri, err = u64(); err != nil {
					return nil, err
				}
				if it.d, err = str(); err != nil {
					return nil, err
				}
				nv, err := count()
				if err != nil {
					return nil, err
				}
				if nv > 0 {
					it.vals = slab.take(nv)
					for k := range it.vals {
						x, err := u64()
						if err != nil {
							return nil, err
						}
						it.vals[k] = math.Float64frombits(x)
					}
				}
			}
		}
	}
	if r.Len() != 0 {
		return nil, errCorrupt
	}
	return a, nil
}

// keyedHash is a 64-bit hash of (unit, part, val) keyed by key: FNV-1a over the key and
// the length-prefixed strings, finished by the splitmix64 mixer. It needs to look
// random to the data (it picks samples and buckets), not to resist an adversary: the
// bounds hold whatever it returns.
func keyedHash(key [16]byte, unit, part, val string) uint64 {
	return hashStrings(hashKey(key), unit, part, val)
}

// hashKey is keyedHash's state after the key (computed once per key by its callers on
// the hot path).
func hashKey(key [16]byte) uint64 {
	h := uint64(14695981039346656037)
	for _, b := range key {
		h = (h ^ uint64(b)) * fnvPrime
	}
	return h
}

const fnvPrime = 1099511628211

// zeroKey is hashKey of the all-zero key, which picks a unit's bucket.
var zeroKey = hashKey([16]byte{})

// hashStrings continues keyedHash from the state h after the key.
func hashStrings(h uint64, unit, part, val string) uint64 {
	for _, s := range [...]string{unit, part, val} {
		n := uint64(len(s))
		for i := 0; i < 8; i++ {
			h = (h ^ (n >> (8 * i) & 0xff)) * fnvPrime
		}
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * fnvPrime
		}
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
