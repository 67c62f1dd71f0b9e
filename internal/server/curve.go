package server

import (
	"math"

	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/pld"
)

// curvePoints is the number of ε values at which the curve is evaluated.
const curvePoints = 121

// spentCurve returns the privacy curve δ(ε) of the releases recorded in st. Under the
// fixed policy every release has the same cost fixed in advance, so the optimal
// composition theorem (KOV Thm 3.3) applies and the curve is exact; under the adaptive
// policy it does not (the costs were chosen adaptively), and the curve is that of the
// single guarantee the ledger's filter certifies, st.Spent. The ε grid spans
// [0, 1.5·max(total ε, spent ε)]; every δ is an upper value (never below the truth).
// Under the Gaussian policies the curve is that of the releases' GDP level st.SpentMu
// (gaussianCurve).
func spentCurve(st Status) (*CurveResponse, error) {
	resp := &CurveResponse{Total: st.Total, Points: []CurvePoint{}, Exact: true, Theorem: string(compose.Exact)}
	if st.SpentMu != nil {
		return gaussianCurve(st, resp)
	}
	var ms []compose.Mech
	if st.Policy.Mode == "adaptive" {
		resp.Theorem = "filter"
		if st.Releases > 0 {
			ms = []compose.Mech{{Epsilon: st.Spent.Epsilon, Delta: st.Spent.Delta, Count: 1}}
		}
	} else {
		for i, c := range st.Costs {
			ms = append(ms, compose.Mech{Epsilon: c.Epsilon, Delta: c.Delta, Count: st.Counts[i]})
		}
	}
	if len(ms) == 0 {
		return resp, nil
	}
	curve, err := compose.NewCurve(ms, nil)
	if err != nil {
		return nil, err
	}
	resp.Exact = curve.Exact()
	hi := 1.5 * math.Max(st.Total.Epsilon, math.Min(st.Spent.Epsilon, curve.MaxEpsilon()))
	if !(hi > 0) || math.IsInf(hi, 0) {
		hi = 1
	}
	for i := range curvePoints {
		eps := hi * float64(i) / float64(curvePoints-1)
		delta, _, err := curve.Delta(eps)
		if err != nil {
			return nil, err
		}
		resp.Points = append(resp.Points, CurvePoint{Epsilon: eps, Delta: delta})
	}
	return resp, nil
}

// gaussianCurve fills resp with the curve of μ-GDP, μ = st.SpentMu: δ(ε) = Φ(−ε/μ + μ/2)
// − e^ε Φ(−ε/μ − μ/2) (Dong, Roth and Su, "Gaussian differential privacy", Cor. 2.13;
// pld.GaussianDelta, rounded up). Fixed Gaussian releases compose to it exactly
// ("theorem": "gaussian"); under the Gaussian filter it is the level the filter has
// reached ("theorem": "filter", as for the other filters).
func gaussianCurve(st Status, resp *CurveResponse) (*CurveResponse, error) {
	if st.Policy.Mode == "adaptive" {
		resp.Theorem = "filter"
	} else {
		resp.Theorem = "gaussian"
	}
	mu := *st.SpentMu
	if mu == 0 {
		return resp, nil
	}
	hi := 1.5 * math.Max(st.Total.Epsilon, st.Spent.Epsilon)
	for i := range curvePoints {
		eps := hi * float64(i) / float64(curvePoints-1)
		delta, err := pld.GaussianDelta(mu, eps)
		if err != nil {
			return nil, err
		}
		resp.Points = append(resp.Points, CurvePoint{Epsilon: eps, Delta: delta})
	}
	return resp, nil
}
