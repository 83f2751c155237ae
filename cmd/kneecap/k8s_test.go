package main

// The Kubernetes manifests that docs/sharding.md shows (examples/k8s): an Indexed Job of
// sharded rate-sweep pods behind a headless Service, and the Job that merges them. Decoded
// strictly (k8smanifest_test.go), then checked for what a schema cannot see: every pod's args
// parse as `kneecap sweep` flags and, with the ConfigMap's sweep.yaml, make a valid shard of
// a rate sweep; the shard count is the Job's; the clock server is pod 0's DNS name; the
// merge reads every shard's directory. Pod names and labels follow Kubernetes' documentation:
// https://kubernetes.io/docs/tasks/job/job-with-pod-to-pod-communication/ (hostname
// JOB-INDEX, subdomain a headless Service) and
// https://kubernetes.io/docs/reference/labels-annotations-taints/#batchkubernetesio-job-name.

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/config"
)

// The example manifests, from this package's directory.
const (
	rateSweepManifest = "../../examples/k8s/rate-sweep.yaml"
	rateMergeManifest = "../../examples/k8s/rate-merge.yaml"
)

// jobIndexVar is the variable an Indexed Job sets in each pod to its completion index, which
// Kubernetes substitutes for $(JOB_COMPLETION_INDEX) in args.
const jobIndexVar = "JOB_COMPLETION_INDEX"

// jobNameLabel is the label the Job controller puts on its pods, the Job's name.
const jobNameLabel = "batch.kubernetes.io/job-name"

// The rate-sweep manifest decodes, and every pod of its Job is a valid shard of one sharded
// rate sweep whose clock is pod 0's.
func TestKubernetesRateSweep(t *testing.T) {
	t.Parallel()
	objs, err := readK8sObjects(rateSweepManifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkShardJob(objs, t.TempDir()) {
		t.Error(p)
	}
}

// The merge Job reads exactly the directories the shards write, on the same volume.
func TestKubernetesRateMerge(t *testing.T) {
	t.Parallel()
	shards, err := readK8sObjects(rateSweepManifest)
	if err != nil {
		t.Fatal(err)
	}
	merge, err := readK8sObjects(rateMergeManifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkMergeJob(shards, merge) {
		t.Error(p)
	}
}

// docs/sharding.md shows the manifests as they are: every YAML block of Kubernetes objects
// in it is one of the files, and each file is shown.
func TestKubernetesManifestsInDocs(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/sharding.md")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range []string{rateSweepManifest, rateMergeManifest} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		files[string(b)] = f
	}
	shown := map[string]bool{}
	for _, m := range regexp.MustCompile("(?ms)^```yaml\n(.*?)^```$").FindAllStringSubmatch(string(doc), -1) {
		if !strings.Contains(m[1], "apiVersion:") {
			continue
		}
		f, ok := files[m[1]]
		if !ok {
			t.Errorf("docs/sharding.md shows a manifest that is none of %v:\n%s", slices.Sorted(maps.Values(files)), m[1])
		}
		shown[f] = true
	}
	for _, f := range files {
		if !shown[f] {
			t.Errorf("docs/sharding.md does not show %s", f)
		}
	}
}

// A manifest with one thing wrong is refused, naming it: the strict decoding, and each rule
// of checkShardJob.
func TestKubernetesRateSweepMistakes(t *testing.T) {
	t.Parallel()
	checkMistakes(t, rateSweepManifest, []k8sMistake{
		{"  subdomain: kneecap-clock", "  subDomain: kneecap-clock", "field subDomain not found"},
		{"completionMode: Indexed", "completionmode: Indexed", "field completionmode not found"},
		{"apiVersion: batch/v1", "apiVersion: batch/v2", `apiVersion "batch/v2"`},
		{"  subdomain: kneecap-clock", "  subdomain: kneecap-rate", `subdomain "kneecap-rate": no such Service`},
		{"completions: 4", "completions: 3", "completions 3, parallelism 4: want the shard count 4"},
		{"backoffLimit: 0", "backoffLimit: 2", "backoffLimit"},
		{"publishNotReadyAddresses: true", "publishNotReadyAddresses: false", "publishNotReadyAddresses"},
		{"selector:\n    batch.kubernetes.io/job-name: kneecap-rate", "selector:\n    batch.kubernetes.io/job-name: kneecap", "selector"},
		{"matchLabels: {batch.kubernetes.io/job-name: kneecap-rate}", "matchLabels: {app: kneecap}", "topologySpreadConstraints"},
		{"kneecap-rate-0.kneecap-clock:7070", "kneecap-rate-1.kneecap-clock:7070", "want pod 0's name kneecap-rate-0.kneecap-clock"},
		{`"--serve-clock", ":7070"`, `"--serve-clock", ":7071"`, "--serve-clock :7071: port 7071"},
		{`"/config/sweep.yaml"`, `"/config/shard.yaml"`, "no key shard.yaml"},
		{"rates: [25, 50, 100, 200, 400, 800]", "rates: auto", "rates auto"},
		{"max_concurrency: 4096", "max_concurrency: 3", "max_concurrency 3"},
		{"warmup: 10s", "warmup: 10", "sweep.warmup"},
		{"/results/shard-$(JOB_COMPLETION_INDEX)", "/results/shard-$(JOB_INDEX)", "$(JOB_INDEX)"},
		{"accessModes: [ReadWriteMany]", "accessModes: [ReadWriteOnce]", "ReadWriteMany claim"},
	}, func(objs k8sObjects, dir string) []string { return checkShardJob(objs, dir) })
}

// A merge that misses a shard, or writes over one, is refused.
func TestKubernetesRateMergeMistakes(t *testing.T) {
	t.Parallel()
	shards, err := readK8sObjects(rateSweepManifest)
	if err != nil {
		t.Fatal(err)
	}
	checkMistakes(t, rateMergeManifest, []k8sMistake{
		{`"/results/shard-2",`, "", "want the shards' directories"},
		{`"-o", "/results/merged"`, `"-o", "/results/shard-3"`, "want a new directory"},
		{"claimName: kneecap-results", "claimName: kneecap-merged", "want the shards' directories"},
	}, func(objs k8sObjects, _ string) []string { return checkMergeJob(shards, objs) })
}

// k8sMistake is one change to a manifest (old replaced by new, once) and a part of the
// problem it must cause.
type k8sMistake struct{ old, new, want string }

// checkMistakes makes each mistake in the manifest file, and checks that reading it or check
// reports the problem wanted.
func checkMistakes(t *testing.T, file string, mistakes []k8sMistake, check func(objs k8sObjects, dir string) []string) {
	t.Helper()
	orig, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range mistakes {
		text := strings.Replace(string(orig), c.old, c.new, 1)
		if text == string(orig) {
			t.Errorf("%q is not in %s", c.old, file)
			continue
		}
		dir := t.TempDir()
		f := filepath.Join(dir, filepath.Base(file))
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		var problems []string
		if objs, err := readK8sObjects(f); err != nil {
			problems = []string{err.Error()}
		} else {
			problems = check(objs, dir)
		}
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }) {
			t.Errorf("%s: %q → %q: problems %q, want one with %q", file, c.old, c.new, problems, c.want)
		}
	}
}

// checkShardJob checks the manifest's one Job as the shards of a sharded rate sweep (each
// pod's config written into dir) and returns what is wrong.
func checkShardJob(objs k8sObjects, dir string) []string {
	job, p := onlyJob(objs)
	if p != nil {
		return p
	}
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	n, err := shardCount(c.Args)
	if err != nil {
		return []string{err.Error()}
	}
	s := job.Spec
	switch {
	case s.CompletionMode != "Indexed":
		bad("Job %s: completionMode %q, want Indexed (each pod its index)", job.Metadata.Name, s.CompletionMode)
	case s.Completions == nil || s.Parallelism == nil || *s.Completions != n || *s.Parallelism != n:
		bad("Job %s: completions %s, parallelism %s: want the shard count %d (every shard runs at once)",
			job.Metadata.Name, intOrUnset(s.Completions), intOrUnset(s.Parallelism), n)
	}
	// The pod hostname is JOB-INDEX, a DNS label.
	if host := fmt.Sprintf("%s-%d", job.Metadata.Name, n-1); len(host) > 63 {
		bad("Job %s: pod hostname %s is longer than 63 characters", job.Metadata.Name, host)
	}
	labels := podLabels(job)
	for _, tsc := range pod.TopologySpreadConstraints {
		if tsc.TopologyKey != "kubernetes.io/hostname" || !selects(tsc.LabelSelector.MatchLabels, labels) ||
			(tsc.WhenUnsatisfiable != "DoNotSchedule" && tsc.WhenUnsatisfiable != "ScheduleAnyway") {
			bad("Job %s: topologySpreadConstraints %+v: want the Job's pods spread over kubernetes.io/hostname", job.Metadata.Name, tsc)
		}
	}
	if len(pod.TopologySpreadConstraints) == 0 {
		bad("Job %s: no topologySpreadConstraints: shards would share a node's CPUs", job.Metadata.Name)
	}
	problems = append(problems, checkClock(objs, job, n)...)
	for i := range n { // the first pod with problems: the others would repeat them
		if p := checkShardConfig(objs, job, i, n, dir); len(p) > 0 {
			return append(problems, p...)
		}
	}
	return problems
}

// onlyJob returns the manifest's one Job, checked as a shard's or the merge's must be: one
// container, restarts and retries off, every volume mounted one of the manifest's or named.
func onlyJob(objs k8sObjects) (k8sJob, []string) {
	if len(objs.Jobs) != 1 {
		return k8sJob{}, []string{fmt.Sprintf("%d Jobs, want 1", len(objs.Jobs))}
	}
	var job k8sJob
	for _, j := range objs.Jobs {
		job = j
	}
	var problems []string
	bad := func(format string, a ...any) {
		problems = append(problems, fmt.Sprintf("Job %s: ", job.Metadata.Name)+fmt.Sprintf(format, a...))
	}
	pod := job.Spec.Template.Spec
	if pod.RestartPolicy != "Never" {
		bad("restartPolicy %q, want Never (a restarted shard would miss its schedule)", pod.RestartPolicy)
	}
	if b := job.Spec.BackoffLimit; b == nil || *b != 0 {
		bad("backoffLimit %s, want 0 (a replacement pod would miss the schedule)", intOrUnset(b))
	}
	if len(pod.Containers) != 1 || pod.Containers[0].Image == "" || len(pod.Containers[0].Args) == 0 {
		bad("want one container with an image and args")
		return job, problems
	}
	for _, m := range pod.Containers[0].VolumeMounts {
		if !slices.ContainsFunc(pod.Volumes, func(v k8sVolume) bool { return v.Name == m.Name }) {
			bad("volumeMount %s: no such volume", m.Name)
		}
	}
	return job, problems
}

// checkClock checks the clock flags of the Job's pods: every pod serves its clock on the
// container port the headless Service names, and measures pod 0's, JOB-0.SUBDOMAIN at the
// Service's port; the Service selects the Job's pods and publishes them before they are ready.
func checkClock(objs k8sObjects, job k8sJob, n int) []string {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	svc, ok := objs.Services[pod.Subdomain]
	if !ok {
		return []string{fmt.Sprintf("Job %s: subdomain %q: no such Service (the pods' DNS names need a headless one)", job.Metadata.Name, pod.Subdomain)}
	}
	name := "Service " + svc.Metadata.Name
	if svc.Spec.ClusterIP != "None" {
		bad("%s: clusterIP %q, want None (headless: a DNS name for each pod)", name, svc.Spec.ClusterIP)
	}
	if !svc.Spec.PublishNotReadyAddresses {
		bad("%s: publishNotReadyAddresses false: pod 0's name would resolve only once it is ready", name)
	}
	if labels := podLabels(job); !selects(svc.Spec.Selector, labels) {
		bad("%s: selector %v does not select the Job's pods (labels %v)", name, svc.Spec.Selector, labels)
	}
	serve, okServe := argValue(c.Args, "serve-clock")
	server, okServer := argValue(c.Args, "clock-server")
	if !okServe || !okServer {
		return append(problems, fmt.Sprintf("Job %s: want --serve-clock and --clock-server in every pod's args", job.Metadata.Name))
	}
	host, port, err := net.SplitHostPort(server)
	if want := fmt.Sprintf("%s-0.%s", job.Metadata.Name, pod.Subdomain); err != nil || host != want {
		bad("--clock-server %s: want pod 0's name %s and a port", server, want)
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p k8sServicePort) bool { return strconv.Itoa(p.Port) == port })
	if i < 0 {
		return append(problems, fmt.Sprintf("--clock-server %s: port %s is none of %s's", server, port, name))
	}
	sp := svc.Spec.Ports[i]
	target := -1
	for _, cp := range c.Ports {
		if cp.Name == sp.TargetPort || strconv.Itoa(cp.ContainerPort) == sp.TargetPort {
			target = cp.ContainerPort
		}
	}
	if _, sport, err := net.SplitHostPort(serve); err != nil || sport != strconv.Itoa(target) {
		bad("--serve-clock %s: port %s, want %d, the container port that %s's port %d targets", serve, sport, target, name, sp.Port)
	}
	return problems
}

// checkShardConfig checks pod i of n: its args with $(JOB_COMPLETION_INDEX) = i parse as
// `kneecap sweep` flags and, with the ConfigMap's file that -c names (written into dir),
// make a valid configuration (config.Read, the flags, Validate, as the pod would) of shard
// i/n of a rate sweep with explicit rates and room for a request in flight on every shard,
// writing its results on a ReadWriteMany claim.
func checkShardConfig(objs k8sObjects, job k8sJob, i, n int, dir string) []string {
	pod := job.Spec.Template.Spec
	args, err := expandIndex(pod.Containers[0].Args, i)
	if err != nil {
		return []string{err.Error()}
	}
	if args[0] != "sweep" {
		return []string{fmt.Sprintf("args %q: want kneecap sweep", args)}
	}
	args = args[1:]
	file, err := configMapFile(objs, pod, args, filepath.Join(dir, "shard-"+strconv.Itoa(i)))
	if err != nil {
		return []string{err.Error()}
	}
	args = setArg(args, "c", file)
	e, _, errb := testEnv()
	fl, err := parseSweepFlags(e, args)
	if err != nil {
		return []string{fmt.Sprintf("pod %d: %v", i, err)}
	}
	// As the pod would: the file and flags (sweepConfig), then Validate (launch.New).
	cfg, err := sweepConfig(e, fl)
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if err == nil {
		lines = config.Problems(cfg.Validate())
	} else if errb.Len() == 0 {
		lines = []string{err.Error()}
	}
	var problems []string
	for _, l := range lines {
		if l != "" {
			problems = append(problems, fmt.Sprintf("pod %d: %s", i, l))
		}
	}
	bad := func(format string, a ...any) {
		problems = append(problems, fmt.Sprintf("pod %d: ", i)+fmt.Sprintf(format, a...))
	}
	s := cfg.Sweep
	switch {
	case cfg.Shard.Index != i || cfg.Shard.Count != n:
		bad("shard %s, want %d/%d", cfg.Shard, i, n)
	case !s.RateMode():
		bad("sweep.mode %q: want rate", s.Mode)
	case s.Rates.Auto:
		bad("sweep.rates auto: a shard cannot probe; give the rates")
	case s.MaxConcurrency < n:
		bad("sweep.max_concurrency %d: want at least one request in flight for each of %d shards", s.MaxConcurrency, n)
	}
	if vol, _, ok := mounted(pod, cfg.Output.Dir); !ok || vol.PersistentVolumeClaim == nil ||
		!slices.Contains(objs.PVCs[vol.PersistentVolumeClaim.ClaimName].Spec.AccessModes, "ReadWriteMany") {
		bad("-o %s: want a directory on a ReadWriteMany claim of the manifest (the merge reads every shard's)", cfg.Output.Dir)
	}
	return problems
}

// configMapFile writes the ConfigMap key that the -c path of args names, through the pod's
// volume mounts, into dir, and returns the file written.
func configMapFile(objs k8sObjects, pod k8sPodSpec, args []string, dir string) (string, error) {
	c, _ := argValue(args, "c")
	vol, key, ok := mounted(pod, c)
	if !ok || vol.ConfigMap == nil {
		return "", fmt.Errorf("-c %s: not on a ConfigMap volume", c)
	}
	data, ok := objs.ConfigMaps[vol.ConfigMap.Name].Data[key]
	if !ok {
		return "", fmt.Errorf("-c %s: ConfigMap %s has no key %s", c, vol.ConfigMap.Name, key)
	}
	f := filepath.Join(dir, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return f, os.WriteFile(f, []byte(data), 0o644)
}

// checkMergeJob checks the merge manifest's Job against the shards': `kneecap merge` of
// exactly the shards' directories, in index order, into another directory on their claim.
func checkMergeJob(shards, merge k8sObjects) []string {
	sj, problems := onlyJob(shards)
	mj, p := onlyJob(merge)
	if problems = append(problems, p...); len(problems) > 0 {
		return problems
	}
	n, err := shardCount(sj.Spec.Template.Spec.Containers[0].Args)
	if err != nil {
		return []string{err.Error()}
	}
	var want []string
	for i := range n {
		args, err := expandIndex(sj.Spec.Template.Spec.Containers[0].Args, i)
		if err != nil {
			return []string{err.Error()}
		}
		o, _ := argValue(args, "o")
		want = append(want, onClaim(sj.Spec.Template.Spec, o))
	}
	args := mj.Spec.Template.Spec.Containers[0].Args
	if args[0] != "merge" {
		return []string{fmt.Sprintf("merge Job args %q: want kneecap merge", args)}
	}
	e, _, _ := testEnv()
	fs := newFlagSet(e, "merge", mergeUsage)
	out := fs.String("o", "", "")
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return []string{fmt.Sprintf("merge Job args %q: %v", args, err)}
	}
	var got []string
	for _, d := range pos {
		got = append(got, onClaim(mj.Spec.Template.Spec, d))
	}
	if !slices.Equal(got, want) {
		problems = append(problems, fmt.Sprintf("merge reads %q, want the shards' directories %q", got, want))
	}
	if o := onClaim(mj.Spec.Template.Spec, *out); strings.HasPrefix(o, "?") || slices.Contains(want, o) {
		problems = append(problems, fmt.Sprintf("merge -o %s (%s): want a new directory on the shards' claim", *out, o))
	}
	return problems
}

// onClaim names the directory p of pod as "claim:relative path" ("?p" when no claim holds it).
func onClaim(pod k8sPodSpec, p string) string {
	vol, rel, ok := mounted(pod, p)
	if !ok || vol.PersistentVolumeClaim == nil {
		return "?" + p
	}
	return vol.PersistentVolumeClaim.ClaimName + ":" + rel
}

// mounted returns the volume that holds path p in pod's first container, and p within it.
func mounted(pod k8sPodSpec, p string) (k8sVolume, string, bool) {
	p = path.Clean(p)
	for _, m := range pod.Containers[0].VolumeMounts {
		rel, ok := strings.CutPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name {
				return v, rel, true
			}
		}
	}
	return k8sVolume{}, "", false
}

// podLabels are the labels of the Job's pods: the template's, and the Job's name that the
// Job controller adds.
func podLabels(job k8sJob) map[string]string {
	l := map[string]string{jobNameLabel: job.Metadata.Name, "job-name": job.Metadata.Name}
	for k, v := range job.Spec.Template.Metadata.Labels {
		l[k] = v
	}
	return l
}

// selects reports whether the label selector sel (not empty) matches labels.
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if w, ok := labels[k]; !ok || w != v {
			return false
		}
	}
	return len(sel) > 0
}

// intOrUnset formats an optional integer field.
func intOrUnset(p *int) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(*p)
}
