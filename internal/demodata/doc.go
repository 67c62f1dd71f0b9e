// Package demodata generates the demo dataset of "dpkit serve --demo": visits, a
// synthetic table of clinic visits, the same bytes on every machine and every run (a
// fixed PCG seed), large enough (about 1.2·10^5 rows) that differentially private answers
// at the demo's budget land visibly close to the truth, with honest 95% intervals.
//
// The privacy unit is the patient: each of 60 000 patients has 1 to 4 visits (rows),
// and the demo declares max_rows = 4, so contribution bounding drops nothing and the
// exact answers are those of the generated table. Every column has declared bounds or a
// declared domain, which the generator respects (never inferred from the data).
//
// The marginals, chosen to look like a regional clinic's records (they are invented, not
// drawn from any real data):
//
//	patient    "p00001" … "p60000"
//	visits     per patient 1, 2, 3, 4 with probability 0.40, 0.30, 0.18, 0.12 (mean 2.02)
//	region     per patient: north 0.22, south 0.31, east 0.18, west 0.20, central 0.09
//	age        per patient, uniform within a band: 0–17 (0.20), 18–44 (0.35),
//	           45–64 (0.27), 65–100 (0.18)
//	month      per visit, 1–12, winter months (12, 1, 2) twice as likely as the others
//	diagnosis  per visit, from base weights checkup 25, cold 20, injury 15, flu 12,
//	           asthma 10, diabetes 10, covid 8, times a season and age factor: flu ×3 in
//	           winter and ×0.3 in summer (6–8), cold ×1.5 in winter, asthma ×2 under 18,
//	           diabetes ×2.5 from 65 and ×0.2 under 18, injury ×1.3 at 18–44
//	cost       per visit, whole dollars in [0, 5000]: log-normal around a median that
//	           depends on the diagnosis (checkup 120, cold 90, flu 180, asthma 300,
//	           diabetes 350, covid 450, injury 800; σ = 0.6), rounded, at most 5000
//	days       per visit, days in hospital in [0, 30]: 0 unless admitted, with
//	           probability covid 0.12, injury 0.08, diabetes 0.05, else 0.01; a stay
//	           lasts 1 + a geometric number of further days, 3 days on average, at
//	           most 30
package demodata
