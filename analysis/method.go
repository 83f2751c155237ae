package analysis

// Method names a method of Analyze: a throughput model the headline knee is read from
// (Knee.Method), a method whose estimate is quoted beside it (the keys of Knee.Others), or
// the detector of the TTFT blow-up (Blowup.Method). Its value is what analysis.json holds;
// Label is what reports and charts print.
type Method string

// The methods (DESIGN §4).
const (
	// MethodUSL is the Universal Scalability Law fit (FitUSL); its estimate in Knee.Others is
	// the peak N*.
	MethodUSL Method = "usl"
	// MethodBatch is the batch-limited Amdahl fit (fitBatch); its estimate in Knee.Others is
	// the slot limit S.
	MethodBatch Method = "batch"
	// MethodHinge is a hinge fit: linear-then-flat on throughput (fitHinge, its estimate in
	// Knee.Others is the breakpoint), flat-then-linear on TTFT p50 for the blow-up
	// (fitRampWeighted, fitRamp).
	MethodHinge Method = "hinge"
	// MethodKneedle is Kneedle on the throughput curve (LocateKnee); its estimate in
	// Knee.Others is the knee it finds.
	MethodKneedle Method = "kneedle"
	// method3xBaseline is the fallback TTFT blow-up: the first level whose TTFT p50 exceeds
	// blowupFactor times the first level's.
	method3xBaseline Method = "3x_baseline"
)

// kneeMethods are the methods whose estimates Knee.Others may hold, in the order Analyze
// compares them with the headline knee.
var kneeMethods = []Method{MethodUSL, MethodBatch, MethodHinge, MethodKneedle}

// Label is the method's name as reports, charts and warnings print it ("USL", "batch",
// "hinge", "Kneedle", "3x_baseline"); a method this package does not know (read from an
// analysis.json of another version) is printed as it is.
func (m Method) Label() string {
	switch m {
	case MethodUSL:
		return "USL"
	case MethodKneedle:
		return "Kneedle"
	}
	return string(m)
}

// EstimateLabel names what the method's value in Knee.Others measures, built on Label: the
// estimates are not all knees by the headline's definition (the batch model's slot limit is
// where throughput stops growing at all, the USL peak where it would start to fall).
func (m Method) EstimateLabel() string {
	switch m {
	case MethodUSL:
		return m.Label() + " peak"
	case MethodBatch:
		return m.Label() + "-model slot limit"
	case MethodHinge:
		return m.Label() + " breakpoint"
	}
	return m.Label()
}

// Label is the rule's name as reports and charts print it ("plateau onset", "marginal
// gain"); a rule this package does not know is printed as it is, and none as "".
func (r KneeRule) Label() string {
	switch r {
	case RulePlateauOnset:
		return "plateau onset"
	case RuleMarginalGain:
		return "marginal gain"
	}
	return string(r)
}
