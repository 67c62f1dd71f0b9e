package pushdown

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/pgtest"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/query"
	"github.com/dpkit/dpkit/sensitivity"
)

// BenchmarkLive measures DP COUNT(*), SUM and AVG with a WHERE clause and a GROUP BY over
// a declared domain (20 regions), computed inside PostgreSQL — Plan.ReleaseFrom with a
// live Table: the catalog check, the one statement, the noise — each next to the plain
// SQL aggregate without DP in the same run ("plain": the same WHERE and GROUP BY, no
// clamping, no domain, no bounding). "dp" declares no privacy unit (each row is a
// person); "dp-unit" declares one (uid, 8 rows each, max_rows 10), whose per-unit
// bounding needs window functions, and "plain-unit" is the plain aggregate after the
// usual bounding without DP (ROW_NUMBER() OVER (PARTITION BY uid ORDER BY random())
// ≤ 10), the cost any per-unit bounding pays.
//
// The tables are generated in the database by generate_series (dpkit_bench.events_N,
// kept for later runs: 10^8 rows take minutes and ~7 GB). Sizes come from
// DPKIT_BENCH_ROWS (default "1e6"; e.g. "1e6,1e7,1e8"), the server from
// DPKIT_BENCH_POSTGRES (default DPKIT_TEST_POSTGRES). B/op is the service's memory per
// query, which must not grow with the table; peak-rss-MB the process's peak resident set.
func BenchmarkLive(b *testing.B) {
	url := os.Getenv("DPKIT_BENCH_POSTGRES")
	if url == "" {
		url = pgtest.AdminURL(b)
	}
	ctx := context.Background()
	sizes := strings.Split(os.Getenv("DPKIT_BENCH_ROWS"), ",")
	if sizes[0] == "" {
		sizes = []string{"1e6"}
	}
	for _, size := range sizes {
		f, err := strconv.ParseFloat(size, 64)
		if err != nil || f < 1 {
			b.Fatalf("DPKIT_BENCH_ROWS: %q is not a number of rows", size)
		}
		n := int64(f)
		table := benchTable(b, url, n)
		for _, agg := range []string{"COUNT(*)", "SUM(amount)", "AVG(amount)"} {
			const where = " WHERE amount > 100 AND qty < 90 GROUP BY region"
			plain := "SELECT region, " + agg + " FROM dpkit_bench." + table + where
			plainUnit := "SELECT region, " + agg + " FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY uid ORDER BY random()) AS rn FROM dpkit_bench." +
				table + " WHERE amount > 100 AND qty < 90) b WHERE rn <= 10 GROUP BY region"
			name := strings.ToLower(agg[:strings.IndexByte(agg, '(')])
			sql := "SELECT " + agg + " FROM events" + where
			b.Run(fmt.Sprintf("rows=%s/%s/plain", size, name), func(b *testing.B) { benchPlain(b, url, plain) })
			b.Run(fmt.Sprintf("rows=%s/%s/dp", size, name), func(b *testing.B) { benchDP(b, ctx, url, table, sql, false) })
			b.Run(fmt.Sprintf("rows=%s/%s/plain-unit", size, name), func(b *testing.B) { benchPlain(b, url, plainUnit) })
			b.Run(fmt.Sprintf("rows=%s/%s/dp-unit", size, name), func(b *testing.B) { benchDP(b, ctx, url, table, sql, true) })
		}
	}
}

// benchSchema declares the benchmark table, with or without the privacy unit uid.
func benchSchema(unit bool) query.Schema {
	regions := make([]string, 20)
	for i := range regions {
		regions[i] = strconv.Itoa(i)
	}
	s := query.Schema{Columns: []query.Column{
		{Name: "uid", Type: query.Int, Min: 0, Max: 1 << 40},
		{Name: "region", Type: query.Int, Min: 0, Max: 19, Domain: regions},
		{Name: "amount", Type: query.Float, Min: 0, Max: 1000},
		{Name: "qty", Type: query.Int, Min: 0, Max: 100},
	}}
	if unit {
		s.Unit = &query.PrivacyUnit{Column: "uid", MaxRows: 10}
	}
	return s
}

// benchTable returns the name of the table of n rows in schema dpkit_bench, generating it
// if missing: uid has 8 rows each, region 20 values, amount in [0, 1000), qty in [0, 100).
func benchTable(b *testing.B, url string, n int64) string {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	name := "events_" + strconv.FormatInt(n, 10)
	var comment *string
	err = c.QueryRow(ctx, "SELECT obj_description(to_regclass($1), 'pg_class')", "dpkit_bench."+name).Scan(&comment)
	if err == nil && comment != nil && *comment == "rows="+strconv.FormatInt(n, 10) {
		return name
	}
	start := time.Now()
	for _, stmt := range []string{
		"CREATE SCHEMA IF NOT EXISTS dpkit_bench",
		"DROP TABLE IF EXISTS dpkit_bench." + name,
		fmt.Sprintf(`CREATE UNLOGGED TABLE dpkit_bench.%s AS SELECT i AS id, (i %% %d) AS uid, CAST((i * 7919) %% 20 AS integer) AS region,
			CAST((i * 104729) %% 100000 AS double precision) / 100 AS amount, CAST((i * 31) %% 100 AS integer) AS qty
			FROM generate_series(CAST(1 AS bigint), %d) AS i`, name, max(n/8, 1), n),
		"VACUUM (FREEZE, ANALYZE) dpkit_bench." + name,
		fmt.Sprintf("COMMENT ON TABLE dpkit_bench.%s IS 'rows=%d'", name, n),
	} {
		if _, err := c.Exec(ctx, stmt); err != nil {
			b.Fatalf("%s: %v", stmt, err)
		}
	}
	b.Logf("generated dpkit_bench.%s (%d rows) in %v", name, n, time.Since(start).Round(time.Second))
	return name
}

// benchPlain runs a plain SQL aggregate and reads its rows.
func benchPlain(b *testing.B, url, sql string) {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		rows, err := c.Query(ctx, sql)
		if err != nil {
			b.Fatal(err)
		}
		k := 0
		for rows.Next() {
			k++
		}
		if err := rows.Err(); err != nil || k != 20 {
			b.Fatalf("%d groups, %v", k, err)
		}
	}
	reportRSS(b)
}

// benchDP releases sql on the live table through the pushdown executor.
func benchDP(b *testing.B, ctx context.Context, url, table, sql string, unit bool) {
	s := benchSchema(unit)
	live, err := Open(ctx, Source{URL: url, Name: "dpkit_bench." + table}, s, Options{StatementTimeout: 4 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer live.Close()
	p, err := query.PrepareSchema(s, "events", sql, sensitivity.AddRemove)
	if err != nil {
		b.Fatal(err)
	}
	src := noise.Seeded(1)
	b.ReportAllocs()
	for b.Loop() {
		a, err := p.ReleaseFrom(ctx, query.ReleaseOptions{Budget: dpkit.Budget{Epsilon: 1}}, live, src)
		if err != nil {
			b.Fatal(err)
		}
		if len(a.Groups) != 20 {
			b.Fatalf("%d groups", len(a.Groups))
		}
	}
	reportRSS(b)
}

// reportRSS reports the process's peak resident set size.
func reportRSS(b *testing.B) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-rss-MB") // Linux: kilobytes
	}
}
