package query

import (
	"cmp"
	"math"
	"slices"
	"strconv"
)

// bound applies the plan's contribution bounding (bounding.go) to the candidate rows —
// those whose slot is ≥ 0 — setting the slots of the rows left out to −1, and returns the
// number of distinct privacy units per group. g is the grouping (nil when ungrouped).
// Without a privacy unit each row is its own unit and every bound holds.
func (x *memExec) bound(slots []int32, ngroups int, g *grouping) []int64 {
	t, p := x.t, x.p
	units := make([]int64, ngroups)
	if t.unitOf == nil {
		for _, s := range slots {
			if s >= 0 {
				units[s]++
			}
		}
		return units
	}
	rowBound := x.rowBound()
	groupBound := x.groupBound()
	// Counting sort of the candidate rows by unit, stable (file order within a unit).
	start := make([]int32, t.units+1)
	for r, s := range slots {
		if s >= 0 {
			start[t.unitOf[r]+1]++
		}
	}
	for u := 1; u <= t.units; u++ {
		start[u] += start[u-1]
	}
	order := make([]int32, start[t.units])
	next := slices.Clone(start[:t.units])
	for r, s := range slots {
		if s >= 0 {
			u := t.unitOf[r]
			order[next[u]] = int32(r)
			next[u]++
		}
	}
	var held []int32 // the distinct groups of the current unit
	for u := 0; u < t.units; u++ {
		rows := order[start[u]:start[u+1]]
		if len(rows) == 0 {
			continue
		}
		ub := unitBound{x: x, g: g, slots: slots, unit: uint32(u), rows: rows}
		if rowBound && len(rows) > p.MaxRows {
			ub.keepRows(p.MaxRows)
		}
		if groupBound {
			ub.keepGroups(p.MaxGroups, p.MaxRowsPerGroup)
		}
		held = held[:0]
		for _, r := range ub.rows {
			if s := slots[r]; !slices.Contains(held, s) {
				held = append(held, s)
			}
		}
		for _, s := range held {
			units[s]++
		}
	}
	return units
}

// unitBound bounds the candidate rows of one unit.
type unitBound struct {
	x     *memExec
	g     *grouping
	slots []int32
	unit  uint32
	rows  []int32          // the unit's rows still kept, file order
	keys  map[int32]string // row keys, computed when first needed
}

// rowKeys computes the row key of every candidate row of the unit (bounding.go): the
// numbering j of equal rows runs over all of them.
func (ub *unitBound) rowKeys() {
	if ub.keys != nil {
		return
	}
	ub.keys = make(map[int32]string, len(ub.rows))
	seen := map[string]int64{}
	for _, r := range ub.rows {
		h := ub.start('r')
		ub.groupValues(h, ub.slots[r])
		for _, c := range ub.x.values {
			switch {
			case c.isNull(int(r)):
				h.null()
			default:
				h.int(c.units(int(r)))
			}
		}
		content := string(h.b)
		seen[content]++
		h.int(seen[content])
		ub.keys[r] = h.key()
	}
}

// start begins the text of a key of the unit.
func (ub *unitBound) start(kind byte) *hashText {
	h := newHashText(ub.x.seed, kind)
	t := ub.x.t
	id := t.unitIDs[ub.unit]
	switch c := &t.cols[t.unitCol]; c.decl.Type {
	case String:
		h.text(c.dict[id])
	case Int:
		h.int(int64(id))
	default:
		h.text(strconv.FormatFloat(math.Float64frombits(id), 'g', -1, 64))
	}
	return h
}

// groupValues appends the key values of group s (none when ungrouped).
func (ub *unitBound) groupValues(h *hashText, s int32) {
	if ub.g == nil {
		return
	}
	key := ub.g.key(int(s))
	for j, c := range ub.x.groups {
		if c.decl.Type == String {
			h.text(ub.g.text(j, key[j]))
		} else {
			h.int(ub.g.intValue(j, key[j]))
		}
	}
}

// keepRows keeps the m rows with the smallest row keys.
func (ub *unitBound) keepRows(m int) {
	ub.rowKeys()
	sorted := slices.Clone(ub.rows)
	slices.SortStableFunc(sorted, func(a, b int32) int { return cmp.Compare(ub.keys[a], ub.keys[b]) })
	for _, r := range sorted[m:] {
		ub.slots[r] = -1
	}
	ub.compact()
}

// keepGroups keeps the unit's maxGroups groups with the smallest group keys, and in each
// at most perGroup rows, those with the smallest row keys.
func (ub *unitBound) keepGroups(maxGroups, perGroup int) {
	type held struct {
		slot int32
		rows int
		key  string
	}
	var hs []held
	for _, r := range ub.rows {
		s := ub.slots[r]
		if i := slices.IndexFunc(hs, func(h held) bool { return h.slot == s }); i >= 0 {
			hs[i].rows++
		} else {
			hs = append(hs, held{slot: s, rows: 1})
		}
	}
	if slices.ContainsFunc(hs, func(h held) bool { return h.rows > perGroup }) {
		ub.rowKeys() // before any row is left out: j numbers all candidate rows
	}
	if len(hs) > maxGroups {
		for i := range hs {
			h := ub.start('g')
			ub.groupValues(h, hs[i].slot)
			hs[i].key = h.key()
		}
		slices.SortStableFunc(hs, func(a, b held) int { return cmp.Compare(a.key, b.key) })
		for _, h := range hs[maxGroups:] {
			for _, r := range ub.rows {
				if ub.slots[r] == h.slot {
					ub.slots[r] = -1
				}
			}
		}
		hs = hs[:maxGroups]
	}
	for _, h := range hs {
		if h.rows <= perGroup {
			continue
		}
		var in []int32
		for _, r := range ub.rows {
			if ub.slots[r] == h.slot {
				in = append(in, r)
			}
		}
		slices.SortStableFunc(in, func(a, b int32) int { return cmp.Compare(ub.keys[a], ub.keys[b]) })
		for _, r := range in[perGroup:] {
			ub.slots[r] = -1
		}
	}
	ub.compact()
}

// compact drops the rows left out from ub.rows.
func (ub *unitBound) compact() {
	ub.rows = slices.DeleteFunc(slices.Clone(ub.rows), func(r int32) bool { return ub.slots[r] < 0 })
}
