package main

// The args of the example manifests' containers, read as Kubernetes passes them to kneecap:
// $(JOB_COMPLETION_INDEX) substituted, flags found by name.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// shardCount returns N of the args' --shard $(JOB_COMPLETION_INDEX)/N.
func shardCount(args []string) (int, error) {
	v, _ := argValue(args, "shard")
	i, n, ok := strings.Cut(v, "/")
	count, err := strconv.Atoi(n)
	if !ok || i != "$("+jobIndexVar+")" || err != nil || count < 1 {
		return 0, fmt.Errorf("--shard %q: want $(%s)/N", v, jobIndexVar)
	}
	return count, nil
}

// expandIndex substitutes index i for $(JOB_COMPLETION_INDEX) in args, as Kubernetes does;
// another $(NAME) would be passed as it is.
func expandIndex(args []string, i int) ([]string, error) {
	out := make([]string, len(args))
	for k, a := range args {
		out[k] = strings.ReplaceAll(a, "$("+jobIndexVar+")", strconv.Itoa(i))
		if strings.Contains(out[k], "$(") {
			return nil, fmt.Errorf("arg %q: only $(%s) is substituted", a, jobIndexVar)
		}
	}
	return out, nil
}

// argValue returns the value of flag name (-name V, --name V or --name=V) in args.
func argValue(args []string, name string) (string, bool) {
	for k, a := range args {
		f, v, eq := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || f != name {
			continue
		}
		if eq {
			return v, true
		}
		if k+1 < len(args) {
			return args[k+1], true
		}
	}
	return "", false
}

// setArg returns args with flag name's value (-name V) replaced by v.
func setArg(args []string, name, v string) []string {
	out := slices.Clone(args)
	for k, a := range out {
		if strings.TrimLeft(a, "-") == name && strings.HasPrefix(a, "-") && k+1 < len(out) {
			out[k+1] = v
		}
	}
	return out
}
