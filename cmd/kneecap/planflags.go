package main

import (
	"flag"
	"strings"

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

// planFlag is one --plan-* flag: its name, the config key it overrides and how it sets a plan.
type planFlag struct {
	name, key string
	set       func(*analysis.Plan)
}

// each lists the flags with their keys.
func (f *planFlags) each() []planFlag {
	return []planFlag{
		{"plan-users", "plan.concurrent_users", func(p *analysis.Plan) { p.ConcurrentUsers = f.users }},
		{"plan-qps", "plan.qps", func(p *analysis.Plan) { p.QPS = f.qps }},
		{"plan-output-tps", "plan.output_tps", func(p *analysis.Plan) { p.OutputTPS = f.tps }},
		{"replica-cost-per-hour", "plan.replica_cost_per_hour", func(p *analysis.Plan) { p.ReplicaCostPerHour = f.cost }},
		{"gpus-per-replica", "plan.gpus_per_replica", func(p *analysis.Plan) { p.GPUsPerReplica = f.gpus }},
		{"energy-cost-per-kwh", "plan.energy_cost_per_kwh", func(p *analysis.Plan) { p.EnergyCostPerKWh = f.energyCost }},
	}
}

// check returns a usage error of cmd for a flag value that is not a number ≥ 0: the config's
// plan validation (config.Config.ValidatePlan) of the flags' values, naming each flag, as a
// sweep's config validation names it; several bad flags give a line each, each starting
// with cmd.
func (f *planFlags) check(cmd string) error {
	var c config.Config
	all := map[string]bool{}
	for _, fl := range f.each() {
		all[fl.name] = true
	}
	f.applyConfig(&c, all)
	if err := c.ValidatePlan(); err != nil {
		lines := strings.Split(err.Error(), "\n")
		return cmdUsageError(cmd, "%s: %s", cmd, strings.Join(lines, "\n"+cmd+": "))
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
