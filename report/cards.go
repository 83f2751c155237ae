package report

import (
	"fmt"
	"strings"

	"github.com/kneecap/kneecap/analysis"
)

// card is one figure of report.html's header: what it is, the number, and what qualifies it
// (interval, rule, where it was read), the number's unit in Unit.
type card struct {
	Label, Value, Unit, Detail string
}

// cards are the figures report.html opens with, before the answer: maximum TPS, the knee with
// its interval, the SLO point, the TTFT blow-up and, when a plan was set, the replicas; on an
// arrival-rate run the capacity with its interval, maximum TPS, SLO point and blow-up rate,
// and the replicas; then, with GPU telemetry, energy per output token and the plan's power
// (energyCards) (DESIGN §5.2). A figure not computed reads "—" with why in Detail.
func cards(res *analysis.Result) []card {
	rate := res.Mode.IsRate()
	var cs []card
	if rate {
		cs = rateCards(res)
	} else {
		cs = []card{maxTPSCard(res, fmt.Sprintf("at concurrency %d", res.Throughput.MaxTPSConcurrency)), kneeCard(res), sloCard(res), blowupCard(res)}
	}
	if c := res.Capacity; c != nil {
		cs = append(cs, replicasCard(c, rate))
	}
	return append(cs, energyCards(res)...)
}

// maxTPSCard is the largest output throughput of a valid level; at says where it was measured.
func maxTPSCard(res *analysis.Result, at string) card {
	c := card{Label: "Max throughput", Value: dash, Detail: "no valid level"}
	if th := res.Throughput; th.MaxTPS.OK() {
		c.Value, c.Unit, c.Detail = fnum(th.MaxTPS), "tokens/s", at
		if whole(res) {
			c.Unit = "input tokens/s"
		}
	}
	return c
}

func kneeCard(res *analysis.Result) card {
	k := res.Knee
	if k == nil || !k.Concurrency.OK() {
		return card{Label: "Knee", Value: dash, Detail: "none found (see warnings)"}
	}
	var det []string
	if k.Interval[0].OK() && k.Interval[1].OK() {
		det = append(det, fmt.Sprintf("95%% interval %s–%s", fnum(k.Interval[0]), fnum(k.Interval[1])))
	}
	if k.TPS.OK() {
		det = append(det, fnum(k.TPS)+" tokens/s")
	}
	var how []string
	if k.Method != "" {
		how = append(how, k.Method.Label())
	}
	if k.Rule != "" {
		how = append(how, k.Rule.Label())
	}
	if len(how) > 0 {
		det = append(det, strings.Join(how, ", "))
	}
	return card{Label: "Knee", Value: "N ≈ " + fconc(k.Concurrency), Detail: strings.Join(det, " · ")}
}

func sloCard(res *analysis.Result) card {
	slo := res.SLO
	c := card{Label: "SLO point", Value: dash}
	names := sloNames(slo)
	if c.Detail = sloNone(slo, names, slo.MaxConcurrency.OK()); c.Detail != "" {
		return c
	}
	c.Value = "N ≤ " + sloPoint(slo)
	det := []string{names}
	if sloBeyond(slo) {
		c.Value = "N " + sloPoint(slo)
		det = append(det, "met at every valid level")
	} else if slo.Bound == "between" && len(slo.Bracket) == 2 {
		c.Value = fmt.Sprintf("%s ≤ N < %s", fconc(slo.Bracket[0]), fconc(slo.Bracket[1]))
		det = append(det, limitName(slo.Limit)+" breached at an excluded level")
	} else if l := limitName(slo.Limit); l != "" {
		det = append(det, l+" binds")
	}
	if slo.TPS.OK() {
		det = append(det, fnum(slo.TPS)+" tokens/s")
	}
	c.Detail = strings.Join(det, " · ")
	return c
}

// sloNone says why an SLO card shows no point, "" when it shows one (found): no SLO set
// (names lists those set), no level sustains its rate (an arrival-rate run's capacity
// binds), no level meets them, or they were not checked.
func sloNone(slo analysis.SLOResult, names string, found bool) string {
	switch {
	case names == "":
		return "no SLO set"
	case found:
		return ""
	case slo.Limit == "capacity":
		return "no level sustains its rate"
	case limitName(slo.Limit) != "":
		return "no level meets " + names + "; " + limitName(slo.Limit) + " binds"
	}
	return names + ": not checked (see warnings)"
}

// noBlowupCard is the blow-up card (label: "TTFT blow-up", an embeddings run's "Latency
// blow-up") when none was found.
func noBlowupCard(label string) card {
	return card{Label: label, Value: dash, Detail: "none detected in the measured range"}
}

func blowupCard(res *analysis.Result) card {
	b := res.TTFTBlowup
	label := upperFirst(latencyWord(res)) + " blow-up"
	if b == nil || !b.Concurrency.OK() {
		return noBlowupCard(label)
	}
	var det []string
	if b.BaselineMS.OK() {
		det = append(det, "baseline "+b.Statistic()+" "+fnum(b.BaselineMS)+" ms")
	}
	if b.SlopeMSPerUser.OK() {
		det = append(det, "then +"+fnum(b.SlopeMSPerUser)+" ms per request")
	}
	if b.Method != "" {
		det = append(det, b.Method.Label())
	}
	return card{Label: label, Value: "N ≈ " + fconc(b.Concurrency), Detail: strings.Join(det, " · ")}
}

// replicasCard is the capacity plan's replicas at the SLO point, and where else they were
// counted: at the knee ("3 at the knee"), or at capacity on an arrival-rate run.
func replicasCard(c *analysis.Capacity, rate bool) card {
	other := fint(c.ReplicasAtKnee) + " at the knee"
	if rate {
		other = fint(c.ReplicasAtCapacity) + " at capacity"
	}
	det := []string{"at the SLO point", other}
	if t := planTargets(c, "users", "req/s", "tokens/s"); t != "" {
		det = append([]string{"for " + t}, det...)
	}
	if c.CostPerHour.OK() {
		det = append(det, fusd(c.CostPerHour)+" per hour")
	}
	return card{Label: "Replicas", Value: fint(c.ReplicasAtSLO), Detail: strings.Join(det, " · ")}
}

// rateCards are the cards of an arrival-rate run but the replicas.
func rateCards(res *analysis.Result) []card {
	rr := res.Rate
	if rr == nil {
		rr = &analysis.RateResult{CapacityRPS: analysis.NaN(), CapacityTPS: analysis.NaN(), TTFTBlowupRPS: analysis.NaN(),
			SLORPS: analysis.NaN(), SLOTPS: analysis.NaN(), SLOGoodputRPS: analysis.NaN(), MaxTPSRPS: analysis.NaN()}
	}
	return []card{capacityCard(rr), maxTPSCard(res, "at "+frate(rr.MaxTPSRPS)+" req/s offered"), sloCardRate(res, rr), blowupCardRate(rr)}
}

func capacityCard(rr *analysis.RateResult) card {
	c := card{Label: "Capacity", Value: dash, Detail: "none found (see warnings)"}
	if !rr.CapacityRPS.OK() {
		return c
	}
	c.Value, c.Unit = frate(rr.CapacityRPS), "req/s"
	var det []string
	switch rr.CapacityBound {
	case "at_least":
		c.Value = "≥ " + c.Value
		det = append(det, "every level sustained its rate")
	case "at_most":
		c.Value = "≈ " + c.Value
		det = append(det, "no level sustained its rate")
	}
	// A lower bound has no interval worth showing (the answer gives none either).
	if iv := strings.TrimSpace(rateInterval(rr.CapacityInterval)); iv != "" && rr.CapacityBound != "at_least" {
		det = append(det, strings.Trim(iv, "()"))
	}
	if rr.CapacityTPS.OK() {
		det = append(det, fnum(rr.CapacityTPS)+" tokens/s")
	}
	c.Detail = strings.Join(det, " · ")
	return c
}

func sloCardRate(res *analysis.Result, rr *analysis.RateResult) card {
	slo := res.SLO
	c := card{Label: "SLO point", Value: dash}
	names := sloNames(slo)
	if c.Detail = sloNone(slo, names, rr.SLORPS.OK()); c.Detail != "" {
		return c
	}
	c.Unit = "req/s"
	det := []string{names}
	switch slo.Limit {
	case "":
		c.Value = "≥ " + frate(rr.SLORPS)
		det = append(det, "met at every valid level")
	case "capacity":
		c.Value = "≤ " + floorConc(rr.SLORPS)
		det = append(det, "the capacity binds")
	default:
		c.Value = "≤ " + floorConc(rr.SLORPS)
		det = append(det, limitName(slo.Limit)+" binds")
	}
	if rr.SLOTPS.OK() {
		det = append(det, fnum(rr.SLOTPS)+" tokens/s")
	}
	c.Detail = strings.Join(det, " · ")
	return c
}

func blowupCardRate(rr *analysis.RateResult) card {
	if !rr.TTFTBlowupRPS.OK() {
		return noBlowupCard("TTFT blow-up")
	}
	stat := blowupStat(rr)
	det := []string{"TTFT " + stat}
	if rr.TTFTBlowupBaselineMS.OK() {
		det = append(det, "baseline "+fnum(rr.TTFTBlowupBaselineMS)+" ms")
	}
	if rr.TTFTBlowupMethod != "" {
		det = append(det, rr.TTFTBlowupMethod.Label())
	}
	return card{Label: "TTFT blow-up", Value: frate(rr.TTFTBlowupRPS), Unit: "req/s", Detail: strings.Join(det, " · ")}
}
