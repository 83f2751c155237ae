package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/sim"
)

// cmdSim serves the simulated engine until the first interrupt (SIGINT or SIGTERM), then
// shuts it down gracefully (streams finish within sim.ShutdownGrace, or at once at a second
// signal) and returns nil: stopping is a server's normal end (exit 0).
func cmdSim(ctx context.Context, e *env, args []string) error {
	f := newSimFlags(e)
	pos, err := parseArgs(f.fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return cmdUsageError("sim", "sim: unexpected argument %q (sim takes flags only)", pos[0])
	}
	rc, err := f.config(e)
	if err != nil {
		return err
	}
	run, err := sim.Start(rc, *f.addr)
	if err != nil {
		return prefixed("sim", err)
	}
	fmt.Fprintf(e.stderr, "kneecap sim: serving %s (%s)\n", run.URL, rc)
	select {
	case <-e.interrupt.Done():
	case <-ctx.Done():
	}
	// In-flight streams may finish for sim.ShutdownGrace; a second signal (ctx) cuts them at
	// once. Either way the server stopped as asked: exit 0.
	sctx, cancel := context.WithTimeout(ctx, sim.ShutdownGrace)
	defer cancel()
	if err := run.Shutdown(sctx); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return prefixed("sim", err)
		}
		fmt.Fprintln(e.stderr, "kneecap sim: streams still open were cut")
	}
	return nil
}

// simFlags are the flags of `kneecap sim`: where it listens, the config file, the settings
// applied before sim.Resolve (profile, gpus, power, adapters) and the engine settings that
// override the resolved configuration (apply, by flag name).
type simFlags struct {
	fs                            *flag.FlagSet
	addr, file, profile, adapters *string
	gpus                          *int
	power                         sim.Power
	apply                         map[string]func(*sim.Config)
}

// newSimFlags defines the flags of `kneecap sim`.
func newSimFlags(e *env) *simFlags {
	fs := newFlagSet(e, "sim", "[--addr 127.0.0.1:8000] [--profile demo|fixed|seed-article] [-c FILE] [engine flags]")
	addr := fs.String("addr", "127.0.0.1:8000", "listen address (host:port; port 0 picks a free port)")
	file := fs.String("c", "", "config `FILE` whose simulator: section configures the engine")
	profile := fs.String("profile", "", "preset: demo, fixed or seed-article (default demo)")
	mode := fs.String("mode", "", "engine mode: batching or fixed")
	model := fs.String("model", "", "model name served")
	maxSeqs := fs.Int("max-num-seqs", 0, "decode slots S")
	compute := fs.String("compute", "", "how the batching engine spends a step: sleep (default) or spin (burn it on a CPU thread, as a CPU engine)")
	stepBase := durationFlag(fs, "step-base", 0, "fixed cost of one decode step (a `duration`)")
	stepPerSeq := durationFlag(fs, "step-per-seq", 0, "added step cost per running sequence (a `duration`)")
	prefill := fs.Float64("prefill-tps", 0, "prefill speed in prompt tokens per second")
	kv := fs.Int("kv-cache-tokens", 0, "KV-cache capacity in tokens (0 = unlimited)")
	maxLen := fs.Int("max-model-len", 0, "context limit in tokens (0 = unlimited)")
	preempt := fs.Bool("preemption", false, "evict the newest request when the KV cache is full")
	ttft := durationFlag(fs, "ttft", 0, "time to first token (fixed mode) (a `duration`)")
	itl := durationFlag(fs, "itl", 0, "inter-token latency (fixed mode) (a `duration`)")
	fixedSlots := fs.Int("fixed-slots", 0, "requests served at once in fixed mode, the rest wait FCFS (0 = unlimited)")
	outTok := fs.Int("output-tokens", 0, "mean output length in tokens when max_tokens is not forced")
	perChunk := fs.Int("tokens-per-chunk", 0, "tokens per streamed chunk")
	seed := fs.Int64("seed", 0, "seed of every random draw")
	tokenizer := fs.String("tokenizer", "", "token rule: words (one a word) or subword (⌈bytes ÷ 4⌉ a word)")
	template := fs.Int("chat-template-tokens", 0, "tokens the chat template adds to every chat prompt")
	reasoning := fs.Int("reasoning-tokens", 0, "output tokens of each chat request streamed as reasoning_content first")
	closeAfter := fs.Bool("close-after-stream", false, "close the connection after every stream while advertising keep-alive (llama-server)")
	prefixCaching := fs.Bool("prefix-caching", false, "cache prompt and output KV blocks by prefix hash (vLLM's enable_prefix_caching; batching mode)")
	blockSize := fs.Int("block-size", 0, "tokens per KV block, the unit of prefix caching (default 16)")
	prefixBlocks := fs.Int("prefix-cache-blocks", 0, "prefix-cache capacity in blocks (0 = kv-cache-tokens ÷ block-size, or 65536 with an unlimited cache)")
	gpus := fs.Int("gpus", 0, "simulated GPUs whose DCGM exporter families /metrics serves (0 = none)")
	adapters := fs.String("adapters", "", "LoRA adapters served beside the model, `NAME[:SLOWDOWN],...`: each request for one costs SLOWDOWN (≥ 1, default 1) times a base request")
	embedBatch := fs.Int("embed-batch", 0, "inputs one forward pass of the embedding engine embeds (0 = 32)")
	embedStep := durationFlag(fs, "embed-step-base", 0, "fixed cost of one embedding forward pass (a `duration`; 0 = 1ms)")
	embedToken := durationFlag(fs, "embed-per-token", 0, "added cost of an embedding forward pass per input token (a `duration`; 0 = 5us)")
	f := &simFlags{fs: fs, addr: addr, file: file, profile: profile, adapters: adapters, gpus: gpus}
	fs.Var(&powerValue{&f.power}, "power", fmt.Sprintf("each simulated GPU's power `IDLE_W:MAX_W` in watts, drawn with none and with every slot running (default %g:%g)", sim.DefaultIdleW, sim.DefaultMaxW))
	// Flags override the file exactly, zero values included (--kv-cache-tokens 0 = unlimited).
	f.apply = map[string]func(*sim.Config){
		"mode":                 func(rc *sim.Config) { rc.Mode = sim.Mode(*mode) },
		"model":                func(rc *sim.Config) { rc.Model = *model },
		"max-num-seqs":         func(rc *sim.Config) { rc.MaxNumSeqs = *maxSeqs },
		"compute":              func(rc *sim.Config) { rc.Compute = sim.Compute(*compute) },
		"step-base":            func(rc *sim.Config) { rc.StepBase = *stepBase },
		"step-per-seq":         func(rc *sim.Config) { rc.StepPerSeq = *stepPerSeq },
		"prefill-tps":          func(rc *sim.Config) { rc.PrefillTPS = *prefill },
		"kv-cache-tokens":      func(rc *sim.Config) { rc.KVCacheTokens = *kv },
		"max-model-len":        func(rc *sim.Config) { rc.MaxModelLen = *maxLen },
		"preemption":           func(rc *sim.Config) { rc.Preemption = *preempt },
		"ttft":                 func(rc *sim.Config) { rc.TTFT = *ttft },
		"itl":                  func(rc *sim.Config) { rc.ITL = *itl },
		"fixed-slots":          func(rc *sim.Config) { rc.FixedSlots = *fixedSlots },
		"output-tokens":        func(rc *sim.Config) { rc.OutputTokens = *outTok },
		"tokens-per-chunk":     func(rc *sim.Config) { rc.TokensPerChunk = *perChunk },
		"seed":                 func(rc *sim.Config) { rc.Seed = *seed },
		"tokenizer":            func(rc *sim.Config) { rc.Tokenizer = sim.Tokenizer(*tokenizer) },
		"chat-template-tokens": func(rc *sim.Config) { rc.ChatTemplateTokens = *template },
		"close-after-stream":   func(rc *sim.Config) { rc.CloseAfterStream = *closeAfter },
		"reasoning-tokens":     func(rc *sim.Config) { rc.ReasoningTokens = *reasoning },
		"prefix-caching":       func(rc *sim.Config) { rc.PrefixCaching = *prefixCaching },
		"block-size":           func(rc *sim.Config) { rc.BlockSize = *blockSize },
		"prefix-cache-blocks":  func(rc *sim.Config) { rc.PrefixCacheBlocks = *prefixBlocks },
		"embed-batch":          func(rc *sim.Config) { rc.Embed.Batch = *embedBatch },
		"embed-step-base":      func(rc *sim.Config) { rc.Embed.StepBase = *embedStep },
		"embed-per-token":      func(rc *sim.Config) { rc.Embed.PerToken = *embedToken },
	}
	return f
}

// config returns the engine the flags and the -c file configure, validated: the file's
// simulator: section, the flags set before sim.Resolve, then the engine flags set, each
// problem on its own line (exit 2).
func (f *simFlags) config(e *env) (sim.Config, error) {
	var cfg sim.Config
	var err error
	if *f.file != "" {
		if cfg, err = loadSimConfig(e, *f.file); err != nil {
			return sim.Config{}, err
		}
	}
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if set["profile"] {
		cfg.Profile = *f.profile
	}
	// No profile sets gpus or power, so setting them before Resolve is exact, zero included,
	// and lets Resolve fill the default power of GPUs that --power leaves unset.
	if set["gpus"] {
		cfg.GPUs = *f.gpus
	}
	if set["power"] {
		cfg.Power = f.power
	}
	if set["adapters"] {
		if cfg.Adapters, err = sim.ParseAdapters(*f.adapters); err != nil {
			return sim.Config{}, cmdUsageError("sim", "sim: --adapters: %v", err)
		}
	}
	rc, err := sim.Resolve(cfg)
	if err != nil {
		return sim.Config{}, withCode(exitUsage, prefixed("sim", err))
	}
	for name, apply := range f.apply {
		if set[name] {
			apply(&rc)
		}
	}
	if err := rc.Validate(); err != nil {
		// Every problem on its own line, each "sim: FIELD: problem" from sim.Config.Validate.
		for _, p := range config.Problems(err) {
			fmt.Fprintf(e.stderr, "kneecap: %s\n", prefixed("sim", errors.New(p)))
		}
		return sim.Config{}, exit.Printed(exitUsage)
	}
	return rc, nil
}

// loadSimConfig reads the simulator section of a config file with config.Read, so that
// the file is read as `kneecap sweep -c` reads it: unknown keys, wrong types and durations
// without a unit anywhere in it, and invalid simulator values, are problems naming FILE:LINE,
// printed one per line.
func loadSimConfig(e *env, path string) (sim.Config, error) {
	c, err := config.Read(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return sim.Config{}, usageError("sim: %w", err)
		}
		return sim.Config{}, configProblems(e, "sim", err)
	}
	if err := c.SimulatorProblems(); err != nil {
		return sim.Config{}, configProblems(e, "sim", err)
	}
	return c.Simulator, nil
}

// powerValue is the --power flag: IDLE_W:MAX_W, two numbers of watts ("120:700").
type powerValue struct{ p *sim.Power }

func (v *powerValue) Set(s string) error {
	p, err := sim.ParsePower(s)
	if err == nil {
		*v.p = p
	}
	return err
}

func (v *powerValue) String() string {
	if v == nil || v.p == nil || *v.p == (sim.Power{}) {
		return ""
	}
	return fmt.Sprintf("%g:%g", v.p.IdleW, v.p.MaxW)
}
