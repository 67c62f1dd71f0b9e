package demodata

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestVisits: the table is the same on every call, has at least 10^5 rows, at most
// MaxVisits per patient, values inside the declared bounds and domains, and marginals
// within sampling error of the documented ones.
func TestVisits(t *testing.T) {
	rows := Generate()
	if again := Generate(); !slices.Equal(rows, again) {
		t.Fatal("two calls generated different tables")
	}
	n := len(rows)
	if n < 100_000 {
		t.Fatalf("%d rows, want at least 10^5", n)
	}
	perPatient := map[string]int{}
	region := map[string]float64{}
	diag := map[string]float64{}
	var agePatients []int
	seen := map[string]bool{}
	for _, v := range rows {
		perPatient[v.Patient]++
		if v.Age < 0 || v.Age > 100 || v.Month < 1 || v.Month > 12 || v.Cost < 0 || v.Cost > 5000 || v.Days < 0 || v.Days > 30 ||
			!slices.Contains(Regions, v.Region) || !slices.Contains(Diagnoses, v.Diagnosis) {
			t.Fatalf("row outside the declared bounds or domains: %+v", v)
		}
		diag[v.Diagnosis]++
		if !seen[v.Patient] {
			seen[v.Patient] = true
			region[v.Region]++
			agePatients = append(agePatients, v.Age)
		}
	}
	if len(perPatient) != Patients {
		t.Fatalf("%d patients, want %d", len(perPatient), Patients)
	}
	counts := make([]float64, MaxVisits+1)
	for _, k := range perPatient {
		if k < 1 || k > MaxVisits {
			t.Fatalf("a patient with %d visits", k)
		}
		counts[k]++
	}
	// Proportions of Patients draws are within 5 standard errors (sqrt(p(1−p)/N) ≤
	// 0.0021) of the documented ones: a false rejection has probability below 1e-5 per
	// check.
	near := func(what string, got, want float64) {
		t.Helper()
		if se := math.Sqrt(want * (1 - want) / Patients); math.Abs(got-want) > 5*se {
			t.Errorf("%s: %.4f, documented %.2f (±%.4f)", what, got, want, 5*se)
		}
	}
	for k, want := range []float64{0.40, 0.30, 0.18, 0.12} {
		near("patients with "+strconv.Itoa(k+1)+" visits", counts[k+1]/Patients, want)
	}
	for i, want := range []float64{0.22, 0.31, 0.18, 0.20, 0.09} {
		near("region "+Regions[i], region[Regions[i]]/Patients, want)
	}
	children := 0.0
	for _, a := range agePatients {
		if a < 18 {
			children++
		}
	}
	near("patients under 18", children/Patients, 0.20)
	// Flu is a winter disease: its share of winter visits is well above its summer share.
	var fluWinter, winter, fluSummer, summer float64
	for _, v := range rows {
		switch {
		case v.Month == 12 || v.Month <= 2:
			winter++
			if v.Diagnosis == "flu" {
				fluWinter++
			}
		case v.Month >= 6 && v.Month <= 8:
			summer++
			if v.Diagnosis == "flu" {
				fluSummer++
			}
		}
	}
	if fluWinter/winter < 5*fluSummer/summer {
		t.Errorf("flu share in winter %.3f, in summer %.3f: want the winter peak", fluWinter/winter, fluSummer/summer)
	}
	if csv := CSV(); strings.Count(csv, "\n") != n+1 || !strings.HasPrefix(csv, "patient,age,region,month,diagnosis,cost,days\n") {
		t.Fatalf("CSV: %d lines", strings.Count(csv, "\n"))
	}
}
