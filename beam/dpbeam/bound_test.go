package dpbeam

import (
	"bytes"
	"math"
	"reflect"
	"slices"
	"testing"
)

// canonical returns a's units sorted by name, for comparisons.
func canonical(a *bucketAcc) []any {
	names := make([]string, 0, len(a.units))
	for n := range a.units {
		names = append(names, n)
	}
	slices.Sort(names)
	out := []any{}
	for _, n := range names {
		out = append(out, n)
		for _, p := range a.us[a.units[n]].parts {
			out = append(out, p.part, p.pri)
			for _, it := range p.items {
				bits := []uint64{}
				for _, x := range it.vals {
					bits = append(bits, math.Float64bits(x))
				}
				out = append(out, it.pri, it.d, bits)
			}
		}
	}
	return out
}

// FuzzDecodeBucket: the bounding accumulator's decoder never panics on arbitrary bytes,
// and what it accepts encodes back to an accumulator that decodes to the same state.
func FuzzDecodeBucket(f *testing.F) {
	fn := &bounder{K: 2, C: 2, Key: [16]byte{1}, Seed: 3}
	a := newBucketAcc()
	for i, r := range []rec{
		{Unit: "u1", Part: "a", Vals: []float64{1, 2}},
		{Unit: "u1", Part: "b", Vals: []float64{math.NaN()}},
		{Unit: "u1", Part: "c", Vals: nil},
		{Unit: "u2", Part: "a", D: "x"},
	} {
		fn.Mode = boundMode(i / 3)
		fn.add(a, r)
	}
	good, _ := encodeBucket(a)
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{1, 2, 'u', '1', 200})
	f.Fuzz(func(t *testing.T, data []byte) {
		acc, err := decodeBucket(data)
		if err != nil {
			return
		}
		again, err := encodeBucket(acc)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeBucket(again)
		if err != nil {
			t.Fatalf("re-encoded accumulator does not decode: %v", err)
		}
		if !reflect.DeepEqual(canonical(acc), canonical(back)) {
			t.Fatalf("round trip changed the accumulator")
		}
		if len(data) == len(good) && bytes.Equal(data, good) && len(acc.units) != 2 {
			t.Fatalf("seed decoded to %d units", len(acc.units))
		}
	})
}

// TestMergeIsBounding: merging accumulators built from any split of a unit's rows keeps
// exactly the k partitions and c rows of smallest priority of all the rows, as one
// accumulator of all the rows does (the merged result does not depend on how Beam
// bundles the rows).
func TestMergeIsBounding(t *testing.T) {
	fn := &bounder{K: 3, C: 2, Key: [16]byte{9}, Seed: 11}
	var rows []rec
	for i := range 200 {
		rows = append(rows, rec{Unit: []string{"a", "b"}[i%2], Part: string(rune('A' + i%13)), Vals: []float64{float64(i % 17)}})
	}
	whole := newBucketAcc()
	for _, r := range rows {
		fn.add(whole, r)
	}
	for _, parts := range []int{2, 3, 7} {
		accs := make([]*bucketAcc, parts)
		for i := range accs {
			accs[i] = newBucketAcc()
		}
		for i, r := range rows {
			fn.add(accs[(i*7)%parts], r)
		}
		merged := accs[0]
		for _, a := range accs[1:] {
			merged = fn.merge(merged, a)
		}
		// Compare the kept (partition, value) multisets per unit.
		if got, want := keptSet(merged), keptSet(whole); !reflect.DeepEqual(got, want) {
			t.Errorf("%d-way split: kept %v, want %v", parts, got, want)
		}
	}
	for _, u := range whole.us {
		if len(u.parts) != 3 {
			t.Errorf("a unit kept %d partitions, want 3", len(u.parts))
		}
		for _, p := range u.parts {
			if len(p.items) != 2 {
				t.Errorf("a partition kept %d rows, want 2", len(p.items))
			}
		}
	}
}

func keptSet(a *bucketAcc) map[string][]string {
	out := map[string][]string{}
	for _, u := range a.us {
		for _, p := range u.parts {
			for _, it := range p.items {
				out[u.name] = append(out[u.name], p.part+":"+string(rune('0'+int(it.vals[0]))))
			}
		}
		slices.Sort(out[u.name])
	}
	return out
}
