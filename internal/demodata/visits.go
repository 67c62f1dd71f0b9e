package demodata

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// Patients is the number of patients (privacy units) of the visits table.
const Patients = 60_000

// MaxVisits is the most visits (rows) one patient has: the declared max_rows.
const MaxVisits = 4

// Regions, Diagnoses are the declared domains of the string columns, in declared order.
var (
	Regions   = []string{"north", "south", "east", "west", "central"}
	Diagnoses = []string{"checkup", "cold", "injury", "flu", "asthma", "diabetes", "covid"}
)

// Column is one column of the visits table as the demo declares it: its type, its
// bounds for a numeric column, its domain for a grouping column.
type Column struct {
	Name     string
	Type     string // "int" or "string"
	Min, Max float64
	Domain   []string
}

// Columns are the columns of the visits table, in CSV order.
var Columns = []Column{
	{Name: "patient", Type: "string"},
	{Name: "age", Type: "int", Min: 0, Max: 100},
	{Name: "region", Type: "string", Domain: Regions},
	{Name: "month", Type: "int", Min: 1, Max: 12, Domain: months()},
	{Name: "diagnosis", Type: "string", Domain: Diagnoses},
	{Name: "cost", Type: "int", Min: 0, Max: 5000},
	{Name: "days", Type: "int", Min: 0, Max: 30},
}

func months() []string {
	m := make([]string, 12)
	for i := range m {
		m[i] = strconv.Itoa(i + 1)
	}
	return m
}

// Visit is one row of the visits table.
type Visit struct {
	Patient   string
	Age       int
	Region    string
	Month     int
	Diagnosis string
	Cost      int
	Days      int
}

// pick returns an index drawn with probability proportional to w.
func pick(r *rand.Rand, w []float64) int {
	total := 0.0
	for _, x := range w {
		total += x
	}
	u := r.Float64() * total
	for i, x := range w {
		if u < x {
			return i
		}
		u -= x
	}
	return len(w) - 1
}

// Generate returns the rows of the visits table, patient by patient: the same rows on
// every call.
func Generate() []Visit {
	r := rand.New(rand.NewPCG(20, 26))
	out := make([]Visit, 0, 125_000)
	regionW := []float64{0.22, 0.31, 0.18, 0.20, 0.09}
	ageBands := [][2]int{{0, 17}, {18, 44}, {45, 64}, {65, 100}}
	ageW := []float64{0.20, 0.35, 0.27, 0.18}
	visitsW := []float64{0.40, 0.30, 0.18, 0.12}
	for p := 1; p <= Patients; p++ {
		band := ageBands[pick(r, ageW)]
		age := band[0] + r.IntN(band[1]-band[0]+1)
		region := Regions[pick(r, regionW)]
		for range 1 + pick(r, visitsW) {
			v := Visit{Patient: fmt.Sprintf("p%05d", p), Age: age, Region: region}
			v.Month = 1 + pick(r, monthWeights)
			v.Diagnosis = Diagnoses[pick(r, diagnosisWeights(v.Month, age))]
			v.Cost = cost(r, v.Diagnosis)
			v.Days = days(r, v.Diagnosis)
			out = append(out, v)
		}
	}
	return out
}

// monthWeights: winter months (12, 1, 2) twice as likely as the others.
var monthWeights = []float64{2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2}

// diagnosisWeights are the weights of Diagnoses for a visit in month m by a patient of
// the given age.
func diagnosisWeights(m, age int) []float64 {
	w := []float64{25, 20, 15, 12, 10, 10, 8} // checkup cold injury flu asthma diabetes covid
	winter, summer := m == 12 || m <= 2, m >= 6 && m <= 8
	switch {
	case winter:
		w[3] *= 3
		w[1] *= 1.5
	case summer:
		w[3] *= 0.3
	}
	switch {
	case age < 18:
		w[4] *= 2
		w[5] *= 0.2
	case age >= 65:
		w[5] *= 2.5
	case age <= 44:
		w[2] *= 1.3
	}
	return w
}

// medianCost is the median cost of a visit by diagnosis, in dollars.
var medianCost = map[string]float64{"checkup": 120, "cold": 90, "flu": 180, "asthma": 300, "diabetes": 350, "covid": 450, "injury": 800}

func cost(r *rand.Rand, diagnosis string) int {
	c := math.Round(medianCost[diagnosis] * math.Exp(0.6*r.NormFloat64()))
	return int(math.Min(c, 5000))
}

// admission is the probability that a visit leads to a hospital stay, by diagnosis.
var admission = map[string]float64{"covid": 0.12, "injury": 0.08, "diabetes": 0.05}

func days(r *rand.Rand, diagnosis string) int {
	p, ok := admission[diagnosis]
	if !ok {
		p = 0.01
	}
	if r.Float64() >= p {
		return 0
	}
	d := 1
	for d < 30 && r.Float64() >= 1.0/3 { // 1 + a geometric number of days, mean 3
		d++
	}
	return d
}

// Rows returns the rows of Generate, generated once per process: callers must not change
// them.
func Rows() []Visit {
	once.Do(func() { rows = Generate() })
	return rows
}

// CSV returns the visits table as CSV text, header first (made once per process).
func CSV() string {
	csvOnce.Do(func() { csvText = generateCSV() })
	return csvText
}

var (
	once, csvOnce sync.Once
	rows          []Visit
	csvText       string
)

func generateCSV() string {
	var b strings.Builder
	for i, c := range Columns {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c.Name)
	}
	b.WriteByte('\n')
	for _, v := range Rows() {
		fmt.Fprintf(&b, "%s,%d,%s,%d,%s,%d,%d\n", v.Patient, v.Age, v.Region, v.Month, v.Diagnosis, v.Cost, v.Days)
	}
	return b.String()
}
