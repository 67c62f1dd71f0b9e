package demodata_test

import (
	"fmt"

	"github.com/dpkit/dpkit/internal/demodata"
)

// The exact answers of the demo's example queries, computed from the generated rows: the
// truth that the noisy answers of "dpkit serve --demo" are close to.
func ExampleGenerate() {
	rows := demodata.Generate()
	var flu, winterFlu, costSum, ageSum, days, stays int
	for _, v := range rows {
		if v.Diagnosis == "flu" {
			flu++
			if v.Month == 12 || v.Month <= 2 {
				winterFlu++
			}
		}
		costSum += v.Cost
		ageSum += v.Age
		days += v.Days
		if v.Days > 0 {
			stays++
		}
	}
	fmt.Println("rows:", len(rows))
	fmt.Println("SELECT COUNT(*) FROM visits WHERE diagnosis = 'flu':", flu)
	fmt.Println("… AND (month = 12 OR month <= 2):", winterFlu)
	fmt.Printf("SELECT AVG(cost) FROM visits: %.2f\n", float64(costSum)/float64(len(rows)))
	fmt.Printf("SELECT AVG(age) FROM visits: %.2f\n", float64(ageSum)/float64(len(rows)))
	fmt.Println("SELECT SUM(days) FROM visits:", days)
	fmt.Println("SELECT COUNT(*) FROM visits WHERE days > 0:", stays)
	// Output:
	// rows: 121018
	// SELECT COUNT(*) FROM visits WHERE diagnosis = 'flu': 18972
	// … AND (month = 12 OR month <= 2): 12559
	// SELECT AVG(cost) FROM visits: 344.95
	// SELECT AVG(age) FROM visits: 42.13
	// SELECT SUM(days) FROM visits: 11322
	// SELECT COUNT(*) FROM visits WHERE days > 0: 3846
}
