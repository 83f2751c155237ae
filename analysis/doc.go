// Package analysis turns the records of a concurrency sweep into per-level summaries and finds
// where the service saturates. It is pure: no I/O, no clocks, no goroutines.
//
// Summarize implements the metric definitions of DESIGN §1 over each level's measurement
// window [W0, W1): latency statistics over requests sent inside the window; output tokens/s
// over tokens whose chunk arrived inside it; QPS over successful completions inside it; the
// achieved concurrency as the exact time-average of requests in flight; Little's-law error;
// goodput against the SLOs; and the validity verdict of each level.
//
// Analyze fits throughput models to the valid levels (DESIGN §4):
//
//   - the Universal Scalability Law X(N) = λN / (1 + σ(N−1) + κN(N−1)) (Gunther 1993),
//     fitted by bounded nonlinear least squares (FitUSL);
//   - a continuous linear-then-flat hinge y = a + b·min(x, c) (fitHinge), and the
//     flat-then-linear hinge y = a + b·max(0, x − c) used for the TTFT blow-up (weighted by
//     y^−1.5 in fitRampWeighted, unweighted by fitRamp as the fallback), all with the
//     breakpoint solved exactly per segment (Hudson 1966);
//   - Kneedle (Satopää, Albrecht, Irwin and Raghavan 2011), matching the Python kneed
//     package (LocateKnee; named after kneed's KneeLocator, since Kneedle is the result type).
//
// The headline knee is the onset of the throughput plateau, the breakpoint of the best fit
// when that is a sharp-knee model (the batch model's S, or the hinge breakpoint) whose rise
// and plateau were measured (RulePlateauOnset); otherwise (a smooth curve) the efficient
// point (RuleMarginalGain): the smallest concurrency where one more doubling adds less than
// Options.KneeGain throughput on the fitted curve. Both have residual-bootstrap 95% intervals.
// Percentiles everywhere use linear interpolation between closest ranks (numpy's default,
// R type 7), so numbers compare 1:1 with vLLM, SGLang and genai-bench.
//
// With GPU telemetry, Summarize gives each level its power and energy per output token and
// Analyze places energy on the curve (Result.Energy, DESIGN §4.16): the energy-optimal load,
// the minimum of J(x) = a/x + b + c·x fitted near the lowest level, with the same residual
// bootstrap interval, and J per output token at the knee, the SLO point and max TPS.
//
// Knee.Method, Blowup.Method and the keys of Knee.Others are Methods (MethodUSL, MethodBatch,
// MethodHinge, MethodKneedle, method3xBaseline), each with one display Label that reports,
// charts and warnings print. Gate checks one run against a baseline, CompareGate several (the
// regression gate of kneecap compare, compare.json).
//
// Every value that cannot be computed is NaN (null in JSON) and Result.Warnings says why
// (the warnings are built in warnings.go, one constructor per kind); no input makes these
// functions panic.
package analysis
