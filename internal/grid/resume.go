package grid

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/rundir"
)

// sameConfig refuses a scenario that has run (sub/config.yaml) when the grid's configuration
// of it (want) now differs in what it measures (configDiff), naming the keys.
func sameConfig(sub, name string, want config.Config) error {
	head, err := rundir.ReadMeta(sub)
	if err != nil {
		return nil
	}
	keys := configDiff(head.Config, want)
	if len(keys) == 0 {
		return nil
	}
	list := strings.Join(keys, ", ")
	if len(keys) > 6 {
		list = fmt.Sprintf("%s and %d more keys", strings.Join(keys[:6], ", "), len(keys)-6)
	}
	return exit.Usagef("sweep: --resume: scenario %s ran with another configuration than the grid's config.yaml now gives it: %s differ from %s; restore them, or start a new grid",
		name, list, filepath.Join(sub, rundir.ConfigFile))
}

// measuredKeys are the sections of a configuration that say what a sweep measures: those a
// resumed scenario's must keep (a run records the others with what it found: the simulator's
// profile filled in, the model the server serves, a new URL).
var measuredKeys = []string{"workload", "sweep", "slo"}

// configDiff lists the keys (a.b.c) of measuredKeys whose values differ between a and b.
func configDiff(a, b config.Config) []string {
	fa, fb := flatConfig(a), flatConfig(b)
	seen := map[string]bool{}
	var out []string
	measured := func(k string) bool {
		top, _, _ := strings.Cut(k, ".")
		return slices.Contains(measuredKeys, top)
	}
	for _, m := range []map[string]string{fa, fb} {
		for k := range m {
			if seen[k] || fa[k] == fb[k] || !measured(k) {
				continue
			}
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// flatConfig is c (redacted) as YAML keys to values; a list is one value.
func flatConfig(c config.Config) map[string]string {
	out := map[string]string{}
	b, err := yaml.Marshal(c.Redacted())
	if err != nil {
		return out
	}
	var v any
	if yaml.Unmarshal(b, &v) != nil {
		return out
	}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				walk(strings.TrimPrefix(prefix+"."+k, "."), x)
			}
			return
		}
		out[prefix] = fmt.Sprint(v)
	}
	walk("", v)
	return out
}

// warnStrayDirs warns on log about each results directory in the grid's dir that is no
// scenario of cfg (a scenario removed from config.yaml): left out of the grid, not removed.
func warnStrayDirs(log io.Writer, dir string, cfg config.Config) {
	names := map[string]bool{}
	for _, sc := range cfg.Scenarios {
		names[sc.Name] = true
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, en := range ents {
		n := en.Name()
		if !en.IsDir() || names[n] || strings.Contains(n, "~") {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, n, rundir.LevelsFile)); err == nil {
			fmt.Fprintf(log, "kneecap: warning: %s holds a run but is no scenario of %s: left out of the grid\n",
				filepath.Join(dir, n), filepath.Join(dir, rundir.ConfigFile))
		}
	}
}
