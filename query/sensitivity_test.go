package query

import (
	"context"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/dpkit/dpkit/sensitivity"
	"pgregory.net/rapid"
)

// TestSensitivityBoundsNeighbours is the defining property of the planned sensitivities:
// for neighbouring tables — one privacy unit's rows added (AddRemove) or replaced by a
// new unit's rows (ReplaceOne), the new unit bringing up to 2·MaxRows rows so that
// contribution bounding is exercised, at load (MaxRows) and per grouped query (random
// MaxGroups and MaxRowsPerGroup) — the exact aggregates differ by at most the stated
// ℓ1 sensitivity summed over groups (and by at most ℓ2 in the Euclidean norm); for
// MEDIAN/QUANTILE the rank utility of every candidate output differs by at most Δu.
// Differences are computed exactly (math/big), on the statistics of every group.
func TestSensitivityBoundsNeighbours(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxRows := rapid.IntRange(1, 3).Draw(t, "maxRows")
		nb := rapid.SampledFrom([]sensitivity.Neighbour{sensitivity.AddRemove, sensitivity.ReplaceOne}).Draw(t, "nb")
		rows := rapid.SliceOfN(genRow(6), 0, 40).Draw(t, "rows")
		extra := rapid.SliceOfN(genRow(1), 1, 2*maxRows).Draw(t, "extra")
		for i := range extra {
			extra[i].u = "new"
		}
		neighbour := append([]refRow(nil), rows...)
		if nb == sensitivity.ReplaceOne && len(rows) > 0 {
			gone := rows[rapid.IntRange(0, len(rows)-1).Draw(t, "gone")].u
			neighbour = neighbour[:0]
			for _, r := range rows {
				if r.u != gone {
					neighbour = append(neighbour, r)
				}
			}
		}
		// Insert the new unit's rows at random places.
		for _, r := range extra {
			i := rapid.IntRange(0, len(neighbour)).Draw(t, "at")
			neighbour = append(neighbour[:i], append([]refRow{r}, neighbour[i:]...)...)
		}
		q := genQuery.Draw(t, "query")
		// Per-query bounds of grouped queries (0: not declared).
		schema := refSchema(maxRows)
		schema.Unit.MaxGroups = rapid.IntRange(0, 3).Draw(t, "maxGroups")
		schema.Unit.MaxRowsPerGroup = rapid.IntRange(0, maxRows).Draw(t, "perGroup")
		load := func(rs []refRow) *Plan {
			tab, err := LoadCSV(strings.NewReader(refCSV(rs)), schema, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p, err := Prepare(tab, "t", q.sql(), nb)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		p, p2 := load(rows), load(neighbour)
		// Contribution bounding keyed by one seed for both tables (any seed: the
		// sensitivities hold for each).
		var seed Seed
		copy(seed[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "seed"))
		collect := func(p *Plan) []*GroupExact {
			gs, err := p.Collect(context.Background(), p.table, seed)
			if err != nil {
				t.Fatal(err)
			}
			return gs
		}
		e, e2 := collect(p), collect(p2)
		if p.Selection { // found keys: compare key by key, a key missing being empty
			e, e2 = alignKeys(p, e, e2)
		}

		// diff returns the ℓ1 and squared ℓ2 distances of f over the groups, exactly.
		diff := func(f func(g *GroupExact) *big.Rat) [2]float64 {
			s1, s2 := new(big.Rat), new(big.Rat)
			for s := range e {
				d := new(big.Rat).Sub(f(e[s]), f(e2[s]))
				s2.Add(s2, new(big.Rat).Mul(d, d))
				s1.Add(s1, d.Abs(d))
			}
			l1, _ := s1.Float64()
			l2sq, _ := s2.Float64()
			return [2]float64{l1, l2sq}
		}
		check := func(c Component, d [2]float64) {
			l1, l2sq := d[0], d[1]
			if l1 > c.L1 || l2sq > c.L2*c.L2 {
				t.Fatalf("%s (%v, maxRows %d): %s changed by ℓ1 %v, ℓ2 %v; sensitivity ℓ1 %v, ℓ2 %v",
					q.sql(), nb, maxRows, c.Quantity, l1, math.Sqrt(l2sq), c.L1, c.L2)
			}
		}
		count := func(g *GroupExact) *big.Rat { return big.NewRat(g.Rows, 1) }
		sum := func(g *GroupExact) *big.Rat { r, _ := p.exactSum(0, &g.Aggs[0]).Rat(nil); return r }
		switch q.agg {
		case "COUNT", "HISTOGRAM":
			check(p.Components[0], diff(count))
		case "SUM":
			check(p.Components[0], diff(sum))
		case "AVG":
			c := new(big.Rat).SetFloat64(p.Components[0].Centre)
			centred := func(g *GroupExact) *big.Rat {
				return new(big.Rat).Sub(sum(g), new(big.Rat).Mul(c, count(g)))
			}
			check(p.Components[0], diff(centred))
			check(p.Components[1], diff(count))
		default:
			// Rank utility u(y) = −|#{x_i < y} − p·n| at candidate outputs y: the data
			// values, the bounds and points between them.
			for _, y := range []float64{-50, -49.5, -2, -1.75, 0, 0.25, 1, 2.5, 3, 49, 99.5, 100} {
				util := func(g *GroupExact) *big.Rat {
					below := 0
					for _, v := range g.Aggs[0].Sorted {
						if v < y {
							below++
						}
					}
					u := new(big.Rat).Mul(new(big.Rat).SetFloat64(q.p), big.NewRat(g.Aggs[0].N, 1))
					u.Sub(big.NewRat(int64(below), 1), u)
					return u.Abs(u)
				}
				check(p.Components[0], diff(util))
			}
		}
	})
}

// TestSensitivityValues pins the planned sensitivities of the lecture slides' examples:
// counting flu records has sensitivity 1, and the total of salaries in
// [10000, 100000] has sensitivity 100000 under add/remove (the slide's 90000 =
// hi − lo is for replace-one), plus the documented rounding slack of 2^-18·B.
func TestSensitivityValues(t *testing.T) {
	tab := mustLoad(t, salaryCSV, salarySchema())
	slack := 0x1p-18 * 100000
	for _, tc := range []struct {
		sql    string
		nb     sensitivity.Neighbour
		l1, l2 float64
	}{
		{"SELECT COUNT(*) FROM t", sensitivity.AddRemove, 1, 1},
		{"SELECT HISTOGRAM(dept) FROM t", sensitivity.ReplaceOne, 2, math.Sqrt2},
		{"SELECT SUM(salary) FROM t", sensitivity.AddRemove, 100000 + slack, 100000 + slack},
		{"SELECT SUM(salary) FROM t", sensitivity.ReplaceOne, 90000 + slack, 90000 + slack},
		{"SELECT SUM(salary) FROM t GROUP BY dept", sensitivity.ReplaceOne, 200000 + 2*slack, 200000 + 2*slack},
		{"SELECT MEDIAN(salary) FROM t", sensitivity.AddRemove, 1, 1},
		{"SELECT MEDIAN(salary) FROM t", sensitivity.ReplaceOne, 2, 2},
	} {
		p, err := Prepare(tab, "t", tc.sql, tc.nb)
		if err != nil {
			t.Fatal(err)
		}
		c := p.Components[0]
		// ≥ the exact value, and above it by at most 2 ulps (relative 4.5e-16).
		for _, v := range [][2]float64{{c.L1, tc.l1}, {c.L2, tc.l2}} {
			if v[0] < v[1] || v[0] > v[1]*(1+4.5e-16) {
				t.Errorf("%s (%v): sensitivity %v, want %v (+2 ulps at most)", tc.sql, tc.nb, v[0], v[1])
			}
		}
	}
	p, _ := Prepare(tab, "t", "SELECT AVG(salary) FROM t", sensitivity.AddRemove)
	if c := p.Components[0]; c.Centre != 55000 || c.L1 < 45000 || c.L1 > 45000+0x1p-18*45000*1.0001 || c.Share != 0.5 {
		t.Errorf("AVG centred sum component = %+v, want centre 55000, ℓ1 45000 (+slack), share 1/2", c)
	}
}

// alignKeys returns the found groups of two executions key by key (the union of their
// keys), a key missing from one being an empty group there.
func alignKeys(p *Plan, a, b []*GroupExact) ([]*GroupExact, []*GroupExact) {
	byKey := func(gs []*GroupExact) map[string]*GroupExact {
		m := map[string]*GroupExact{}
		for _, g := range gs {
			m[strings.Join(g.Keys, "\x00")] = g
		}
		return m
	}
	ma, mb := byKey(a), byKey(b)
	var outA, outB []*GroupExact
	for k, g := range ma {
		outA = append(outA, g)
		if h, ok := mb[k]; ok {
			outB = append(outB, h)
		} else {
			outB = append(outB, p.emptyGroup(g.Keys))
		}
	}
	for k, h := range mb {
		if _, ok := ma[k]; !ok {
			outA = append(outA, p.emptyGroup(h.Keys))
			outB = append(outB, h)
		}
	}
	return outA, outB
}
