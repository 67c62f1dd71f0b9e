package pushdown

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpkit/dpkit/internal/pgtest"
	"github.com/dpkit/dpkit/internal/testenv"
	"github.com/dpkit/dpkit/query"
	"github.com/dpkit/dpkit/sensitivity"
)

// TestExecutorsAgreeLarge: TestExecutorsAgree's property at the size of a real table —
// 10^5 rows generated inside PostgreSQL (10^6 in the long step), read back into memory,
// and a fixed set of queries (COUNT, SUM, AVG of int, float8, numeric and real columns;
// WHERE; GROUP BY declared domains, partition-selection keys, both) under a privacy
// unit of about 20 rows that each bounding cuts (max_rows, max_groups,
// max_rows_per_group), with NULLs, NaN, ±Infinity, values beyond the bounds, keys outside
// the domains, and a selection that is empty: both executors give the same statistics
// for every group, with the same fixed seed.
func TestExecutorsAgreeLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("10^5 rows: skipped under -short")
	}
	n := 100_000
	if testenv.IsLong() {
		n = 1_000_000
	}
	url := pgtest.Schema(t, "pushdown_large_")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// i % 7, i % 11, … are independent enough to reach every combination; md5 scatters
	// the float values over the grid (and its ties: multiples of 2^-40 occur).
	gen := fmt.Sprintf(`CREATE TABLE big AS SELECT
		'u' || (i %% %d) AS u,
		(ARRAY['a', 'b', 'c', 'd'])[1 + i %% 4] AS g,
		CASE WHEN i %% 13 = 0 THEN NULL ELSE CAST(i %% 9 AS integer) - 2 END AS k,
		CASE WHEN i %% 17 = 0 THEN NULL ELSE CAST(i %% 29 AS bigint) END AS h,
		CASE WHEN i %% 19 = 0 THEN NULL ELSE (ARRAY['x', 'y', 'é', '', 'a''b'])[1 + i %% 5] END AS s,
		CASE WHEN i %% 23 = 0 THEN NULL ELSE CAST(i %% 181 - 65 AS smallint) END AS x,
		CASE WHEN i %% 31 = 0 THEN NULL WHEN i %% 37 = 0 THEN CAST('NaN' AS double precision)
			WHEN i %% 41 = 0 THEN CAST('Infinity' AS double precision) WHEN i %% 43 = 0 THEN CAST('-Infinity' AS double precision)
			WHEN i %% 47 = 0 THEN 1 + 3 * 2^(-40)
			ELSE (('x' || substr(md5(CAST(i AS text)), 1, 12))::bit(48)::bigint) / 2^48 * 7 - 3 END AS f,
		CASE WHEN i %% 53 = 0 THEN NULL WHEN i %% 59 = 0 THEN CAST('NaN' AS numeric) WHEN i %% 61 = 0 THEN CAST('1e400' AS numeric)
			ELSE CAST(i %% 2500 AS numeric) - 1200.125 END AS n,
		CASE WHEN i %% 67 = 0 THEN NULL ELSE CAST((i %% 1000) / 150.0 - 2.5 AS real) END AS r
		FROM generate_series(1, %d) AS i`, n/20, n)
	if _, err := conn.Exec(ctx, gen); err != nil {
		t.Fatal(err)
	}
	rows := readRows(ctx, t, conn)
	if len(rows) != n {
		t.Fatalf("%d rows read back, want %d", len(rows), n)
	}
	unit := &query.PrivacyUnit{Column: "u", MaxRows: 12, MaxGroups: 2, MaxRowsPerGroup: 5}
	schema := schemaOf(false, unit)
	mem, live := openBoth(ctx, t, url, "big", rows, schema)
	defer live.Close()
	seed := query.Seed{1, 2, 3}
	for _, sql := range []string{
		"SELECT COUNT(*) FROM t",
		"SELECT COUNT(*), SUM(x), AVG(f) FROM t WHERE f > 0.5 GROUP BY g",
		"SELECT SUM(n), AVG(r), SUM(f) FROM t WHERE k >= 1 OR s = 'é' GROUP BY k",
		"SELECT COUNT(*), AVG(x) FROM t GROUP BY g, k",
		"SELECT COUNT(*), SUM(f) FROM t WHERE x < 0 GROUP BY h",
		"SELECT AVG(n), SUM(r) FROM t WHERE r <= 1 GROUP BY s, g",
		"SELECT COUNT(*), SUM(x) FROM t WHERE x > 1000",
		"SELECT COUNT(*), SUM(n) FROM t WHERE g = 'zz' GROUP BY g",
	} {
		p, err := query.PrepareSchema(schema, "t", sql, sensitivity.AddRemove)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if err := agree(ctx, p, mem, live, seed); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
}

// readRows reads table big back as rows (for the in-memory executor).
func readRows(ctx context.Context, t *testing.T, conn *pgx.Conn) []row {
	res, err := conn.Query(ctx, "SELECT u, g, k, h, s, x, f, CAST(n AS text), r FROM big")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	var rows []row
	for res.Next() {
		var r row
		var k *int32
		var x *int16
		var f *float64
		var n *string
		var rr *float32
		if err := res.Scan(&r.u, &r.g, &k, &r.h, &r.s, &x, &f, &n, &rr); err != nil {
			t.Fatal(err)
		}
		if k != nil {
			v := int64(*k)
			r.k = &v
		}
		if x != nil {
			v := int64(*x)
			r.x = &v
		}
		r.f = fvalOf(f)
		if rr != nil {
			v := float64(*rr)
			r.r = fvalOf(&v)
		} else {
			r.r = fval{null: true}
		}
		if n == nil {
			r.n.null = true
		} else {
			r.n.text = *n
		}
		rows = append(rows, r)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// fvalOf is a float8 as an fval.
func fvalOf(f *float64) fval {
	switch {
	case f == nil:
		return fval{null: true}
	case math.IsNaN(*f):
		return fval{nan: true}
	}
	return fval{v: *f}
}
