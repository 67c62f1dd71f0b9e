package query

import (
	"fmt"
	"io"
	"strconv"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/sensitivity"
)

// genCSV is an io.Reader producing a synthetic salary table of n rows on the fly
// (columns uid,dept,salary,score), so that benchmarks need no large files.
type genCSV struct {
	n, i    int
	buf     []byte
	off     int
	rng     uint64
	regions bool // a fifth column, region: one of 20 values r0…r19
}

var benchDepts = []string{"eng", "ops", "hr", "sales", "legal"}

func newGenCSV(n int) *genCSV {
	return &genCSV{n: n, buf: []byte("uid,dept,salary,score\n"), rng: 0x9e3779b97f4a7c15}
}

func (g *genCSV) next() uint64 { // splitmix64
	g.rng += 0x9e3779b97f4a7c15
	z := g.rng
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func (g *genCSV) Read(p []byte) (int, error) {
	for g.off == len(g.buf) {
		if g.i == g.n {
			return 0, io.EOF
		}
		g.buf, g.off = g.buf[:0], 0
		for ; g.i < g.n && len(g.buf) < 64<<10; g.i++ {
			r := g.next()
			g.buf = append(g.buf, 'u')
			g.buf = strconv.AppendInt(g.buf, int64(g.i/2), 10) // two rows per unit
			g.buf = append(g.buf, ',')
			g.buf = append(g.buf, benchDepts[r%5]...)
			g.buf = append(g.buf, ',')
			g.buf = strconv.AppendInt(g.buf, int64(5000+(r>>8)%110000), 10)
			g.buf = append(g.buf, ',')
			g.buf = strconv.AppendFloat(g.buf, float64((r>>32)%20001)/10000-1, 'g', -1, 64)
			if g.regions {
				g.buf = append(g.buf, ",r"...)
				g.buf = strconv.AppendInt(g.buf, int64(r>>48)%20, 10)
			}
			g.buf = append(g.buf, '\n')
		}
	}
	n := copy(p, g.buf[g.off:])
	g.off += n
	return n, nil
}

func benchSchema() Schema {
	return Schema{
		Columns: []Column{
			{Name: "uid", Type: String},
			{Name: "dept", Type: String, Domain: []string{"eng", "ops", "hr"}},
			{Name: "salary", Type: Int, Min: 10000, Max: 100000},
			{Name: "score", Type: Float, Min: -1, Max: 1},
		},
		Unit: &PrivacyUnit{Column: "uid", MaxRows: 2},
	}
}

var benchSizes = []int{1e5, 1e6, 1e7}

// BenchmarkLoadCSV measures parse + load (clamping, dictionary encoding, contribution
// bounding) in rows per second.
func BenchmarkLoadCSV(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("rows=%.0e", float64(n)), func(b *testing.B) {
			for b.Loop() {
				if _, err := LoadCSV(newGenCSV(n), benchSchema(), LoadOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkAggregate measures exact evaluation plus the private release (the noise is a
// constant cost) in rows per second, on a table loaded once.
func BenchmarkAggregate(b *testing.B) {
	for _, n := range benchSizes {
		tab, err := LoadCSV(newGenCSV(n), benchSchema(), LoadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, sql := range []string{
			"SELECT COUNT(*) FROM t",
			"SELECT COUNT(*) FROM t WHERE salary > 50000 AND dept != 'hr'",
			"SELECT SUM(salary) FROM t WHERE score >= 0",
			"SELECT AVG(score) FROM t GROUP BY dept",
			"SELECT MEDIAN(salary) FROM t",
		} {
			p, err := Prepare(tab, "t", sql, sensitivity.AddRemove)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("rows=%.0e/%s", float64(n), sql), func(b *testing.B) {
				src := noise.Seeded(1)
				for b.Loop() {
					if _, err := p.Release(dpkit.Budget{Epsilon: 0.1}, src); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

// BenchmarkGroupedMulti measures several aggregates over two grouping columns (issue 19):
// the exact step (one pass over the selected rows per group, per-unit contribution
// bounding) plus the release, in rows per second, on a table loaded once. "declared":
// dept × region over declared domains (3 × 20 groups); "selection": region without a
// domain, released by partition selection; "gaussian": the declared groups at μ = 1.
func BenchmarkGroupedMulti(b *testing.B) {
	regions := make([]string, 20)
	for i := range regions {
		regions[i] = "r" + strconv.Itoa(i)
	}
	for _, n := range []int{1e6, 1e7} {
		for _, declared := range []bool{true, false} {
			schema := benchSchema()
			region := Column{Name: "region", Type: String}
			if declared {
				region.Domain = regions
			}
			schema.Columns = append(schema.Columns, region)
			g := newGenCSV(n)
			g.regions = true
			g.buf = []byte("uid,dept,salary,score,region\n")
			tab, err := LoadCSV(g, schema, LoadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			type run struct {
				name, sql string
				o         ReleaseOptions
			}
			multi := "SELECT COUNT(*), SUM(salary), AVG(score), QUANTILE(salary, 0.9) FROM t GROUP BY dept, region"
			noQuantile := "SELECT COUNT(*), SUM(salary), AVG(score) FROM t WHERE salary > 20000 GROUP BY dept, region"
			runs := []run{
				{"declared/4 aggregates", multi, ReleaseOptions{Budget: dpkit.Budget{Epsilon: 1}}},
				{"declared/3 aggregates", noQuantile, ReleaseOptions{Budget: dpkit.Budget{Epsilon: 1}}},
				{"gaussian/3 aggregates", noQuantile, ReleaseOptions{Gaussian: true, Mu: 1}},
			}
			if !declared {
				runs = []run{
					{"selection/4 aggregates", multi, ReleaseOptions{Budget: dpkit.Budget{Epsilon: 1, Delta: 1e-6}}},
					{"selection/3 aggregates", noQuantile, ReleaseOptions{Budget: dpkit.Budget{Epsilon: 1, Delta: 1e-6}}},
				}
			}
			for _, r := range runs {
				p, err := Prepare(tab, "t", r.sql, sensitivity.AddRemove)
				if err != nil {
					b.Fatal(err)
				}
				b.Run(fmt.Sprintf("rows=%.0e/%s", float64(n), r.name), func(b *testing.B) {
					src := noise.Seeded(1)
					for b.Loop() {
						a, err := p.ReleaseWith(r.o, src)
						if err != nil {
							b.Fatal(err)
						}
						if len(a.Groups) < 60 {
							b.Fatalf("%d groups released", len(a.Groups))
						}
					}
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				})
			}
		}
	}
}
