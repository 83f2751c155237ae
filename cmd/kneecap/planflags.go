package main

import (
	"flag"
	"fmt"
	"math"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
)

// planFlags are the --plan-* flags of analyze and sweep: a capacity plan's demand (concurrent
// users, requests/s, output tokens/s) and cost, each overriding its key of the config's plan:
// when given, so that the report counts the replicas for that demand.
type planFlags struct {
	users, gpus    int
	qps, tps, cost float64
	energyCost     float64
}

// register defines the flags on fl.
func (f *planFlags) register(fl *flag.FlagSet) {
	fl.IntVar(&f.users, "plan-users", 0, "capacity plan: concurrent users `N` to serve (overrides plan.concurrent_users)")
	fl.Float64Var(&f.qps, "plan-qps", 0, "capacity plan: requests/s to serve (overrides plan.qps)")
	fl.Float64Var(&f.tps, "plan-output-tps", 0, "capacity plan: output tokens/s to serve (overrides plan.output_tps)")
	fl.Float64Var(&f.cost, "replica-cost-per-hour", 0, "capacity plan: $ per replica-hour (overrides plan.replica_cost_per_hour)")
	fl.IntVar(&f.gpus, "gpus-per-replica", 0, "capacity plan: GPUs per replica `N` (overrides plan.gpus_per_replica)")
	fl.Float64Var(&f.energyCost, "energy-cost-per-kwh", 0, "capacity plan: $ per kWh of electricity (overrides plan.energy_cost_per_kwh)")
}

// planFlag is one --plan-* flag: its name, the config key it overrides, its value as a
// number, and how it sets a plan.
type planFlag struct {
	name, key string
	v         float64
	set       func(*analysis.Plan)
}

// each lists the flags with their keys and values.
func (f *planFlags) each() []planFlag {
	return []planFlag{
		{"plan-users", "plan.concurrent_users", float64(f.users), func(p *analysis.Plan) { p.ConcurrentUsers = f.users }},
		{"plan-qps", "plan.qps", f.qps, func(p *analysis.Plan) { p.QPS = f.qps }},
		{"plan-output-tps", "plan.output_tps", f.tps, func(p *analysis.Plan) { p.OutputTPS = f.tps }},
		{"replica-cost-per-hour", "plan.replica_cost_per_hour", f.cost, func(p *analysis.Plan) { p.ReplicaCostPerHour = f.cost }},
		{"gpus-per-replica", "plan.gpus_per_replica", float64(f.gpus), func(p *analysis.Plan) { p.GPUsPerReplica = f.gpus }},
		{"energy-cost-per-kwh", "plan.energy_cost_per_kwh", f.energyCost, func(p *analysis.Plan) { p.EnergyCostPerKWh = f.energyCost }},
	}
}

// bad returns an error naming the first flag whose value is not a number ≥ 0, or nil.
func (f *planFlags) bad() error {
	for _, p := range f.each() {
		if !(p.v >= 0) || math.IsInf(p.v, 0) {
			return fmt.Errorf("--%s %g: must be a number ≥ 0", p.name, p.v)
		}
	}
	return nil
}

// check returns a usage error of cmd for a flag value that is not a number ≥ 0.
func (f *planFlags) check(cmd string) error {
	if err := f.bad(); err != nil {
		return cmdUsageError(cmd, "%s: %v", cmd, err)
	}
	return nil
}

// apply returns p with the flags given on the command line (set) applied.
func (f *planFlags) apply(p analysis.Plan, set map[string]bool) analysis.Plan {
	for _, fl := range f.each() {
		if set[fl.name] {
			fl.set(&p)
		}
	}
	return p
}

// applyConfig sets cfg's plan: keys from the flags given (set), recording each override so
// that Validate names the flag for a bad value.
func (f *planFlags) applyConfig(cfg *config.Config, set map[string]bool) {
	cfg.Plan = f.apply(cfg.Plan, set)
	for _, fl := range f.each() {
		if set[fl.name] {
			cfg.Override(fl.key, "--"+fl.name)
		}
	}
}
