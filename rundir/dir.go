// Package rundir is the results directory of a run (DESIGN §5): creating it, appending each
// finished level durably (records.jsonl, then levels.json atomically), resuming an
// interrupted run, reading a run back, merging the directories of a sharded sweep's shards,
// and the rules for choosing and checking an output directory. It is the contract between
// measuring and analyzing: `kneecap analyze` reproduces every number from these files.
package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
	"github.com/kneecap/kneecap/sweep"
)

// Files of a results directory (DESIGN §5).
const (
	// ConfigFile is the resolved configuration, secrets redacted; --resume reads it.
	ConfigFile = "config.yaml"
	// LevelsFile lists the finished levels (LevelRun) and why the sweep stopped.
	LevelsFile = "levels.json"
	// RecordsFile holds one record.Record per line, every request of every listed level.
	RecordsFile = "records.jsonl"
	// GPUMetricsFile holds one GPU reading per line (server.GPUSample), appended as taken
	// (DESIGN §3.10).
	GPUMetricsFile = "gpu_metrics.jsonl"
	// ServerMetricsFile holds one scrape of the server's metrics per line.
	ServerMetricsFile = "server_metrics.jsonl"
	// ServerInfoFile is what the server said about itself: the bodies of the info endpoints
	// that answered, secrets redacted.
	ServerInfoFile = "server_info.json"
	// AnalysisFile is the analysis (schema kneecap.analysis/v1).
	AnalysisFile = "analysis.json"
	// summaryFile is the level-summary CSV, which `kneecap analyze` reads back.
	summaryFile = "summary.csv"
	// ReportFile and ReportHTMLFile are the Markdown report and the self-contained HTML one.
	ReportFile     = "report.md"
	ReportHTMLFile = "report.html"
	// ProbeFile is how the rates of --rates auto were planned: the probe's levels (or the
	// --from run's) as analysis.json summarizes them, its max QPS and the rates planned from
	// it (launch.Probe). Its levels are not part of the rate run's analysis.
	ProbeFile = "probe.json"
	// ScenariosFile marks a scenario grid's directory and lists its scenarios and their
	// answers (grid.Doc); the grid's directory holds ConfigFile, the report files and each
	// scenario's results directory DIR/NAME/.
	ScenariosFile = "scenarios.json"
)

// DirPerm and filePerm are the modes of a results directory and of its files, less the
// umask: only their owner reads them, as they may hold prompts, the server's details and
// its messages.
const (
	DirPerm  = 0o700
	filePerm = 0o600
)

// levelsSchema is the schema tag of levels.json.
const levelsSchema = "kneecap.levels/v1"

// maxRecordLine is the longest records.jsonl line Read accepts, in bytes (a record
// with per-chunk offsets of a 100k-token answer is about 1 MB).
const maxRecordLine = 16 << 20

// levelsDoc is the JSON document levels.json.
type levelsDoc struct {
	Schema     string `json:"schema"`
	Name       string `json:"name"`
	Model      string `json:"model"`
	Endpoint   string `json:"endpoint"`
	Start      string `json:"start"`
	StopReason string `json:"stop_reason"`
	// Shards is the number of shards `kneecap merge` combined (absent: not a merge).
	Shards int `json:"merged_shards,omitempty"`
	// Kneecap is the version of kneecap that ran the sweep; Server what the server said it
	// is (see record.ServerInfo).
	Kneecap string             `json:"kneecap,omitempty"`
	Server  *record.ServerInfo `json:"server_info,omitempty"`
	// PromptSizing is how the prompts were sized in the server's tokens (DESIGN §3.6).
	PromptSizing *record.PromptSizing `json:"prompt_sizing,omitempty"`
	// GPUIdle is the GPUs' idle reading before the first level (DESIGN §3.10); nil without
	// GPU telemetry.
	GPUIdle *record.GPUStats `json:"gpu_idle,omitempty"`
	// Trace is the trace a trace replay replayed (DESIGN §3.9).
	Trace *record.TraceInfo `json:"trace,omitempty"`
	// Measured is what config.yaml said the run measures when it started (config.Measured):
	// --resume refuses a config.yaml that now says otherwise. Absent before it was recorded.
	Measured map[string]string `json:"measured_config,omitempty"`
	Levels   []record.LevelRun `json:"levels"`
}

// Dir is a results directory being written. It implements sweep.Sink: every finished level's
// records are appended to records.jsonl and fsynced, then levels.json is rewritten atomically,
// so a level listed in levels.json always has all its records on disk. Safe for concurrent
// use.
type Dir struct {
	path string

	mu      sync.Mutex
	doc     levelsDoc
	records *os.File
	metrics *os.File
	closed  bool
	// secrets are removed from what the Dir writes (SetSecrets).
	secrets *redact.Secrets
	// perChunk is the usage bound the sweep checks its records against
	// (SetTokensPerChunkBound), recorded with each level; 0: not set.
	perChunk int
}

var _ sweep.Sink = (*Dir)(nil)

// Create creates the results directory dir (with parents), checks that it is writable and
// holds no earlier run, and writes config.yaml (cfg.Redacted()) and an empty levels.json.
// endpoint is the URL under test (the simulator's loopback URL for in-process runs).
func Create(dir string, cfg config.Config, endpoint string, start time.Time) (*Dir, error) {
	if dir == "" {
		return nil, errors.New("create results dir: empty path")
	}
	if err := os.MkdirAll(dir, DirPerm); err != nil {
		return nil, fmt.Errorf("create results dir %s: %w", dir, err)
	}
	for _, f := range []string{LevelsFile, RecordsFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return nil, fmt.Errorf("create results dir %s: it already holds a run (%s); use --resume %s or another -o", dir, f, dir)
		}
	}
	d := &Dir{
		path: dir,
		doc: levelsDoc{
			Schema:   levelsSchema,
			Name:     cfg.Name,
			Model:    cfg.Target.Model,
			Endpoint: redact.URL(endpoint),
			Start:    start.UTC().Format(time.RFC3339Nano),
			Levels:   []record.LevelRun{},
		},
	}
	var buf bytes.Buffer
	buf.WriteString("# kneecap resolved configuration (secrets redacted); `kneecap sweep --resume` reads it.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(cfg.Redacted()); err != nil {
		return nil, fmt.Errorf("create results dir %s: encode config: %w", dir, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("create results dir %s: encode config: %w", dir, err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, ConfigFile), buf.Bytes()); err != nil {
		return nil, fmt.Errorf("create results dir %s: %w", dir, err)
	}
	// What --resume will read back (config.Read of the file just written, defaults filled in
	// as it fills them), not cfg itself.
	if back, err := config.Read(filepath.Join(dir, ConfigFile)); err == nil {
		d.doc.Measured = config.Measured(back)
	}
	if err := d.writeLevels(); err != nil {
		return nil, fmt.Errorf("create results dir %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, RecordsFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, filePerm)
	if err != nil {
		return nil, fmt.Errorf("create results dir %s: %w", dir, err)
	}
	d.records = f
	return d, nil
}

// Path returns the directory's path.
func (d *Dir) Path() string { return d.path }

// SetMerged records in levels.json (at its next write) that the directory holds n shards
// merged by `kneecap merge`.
func (d *Dir) SetMerged(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.doc.Shards = n
}

// LevelDone appends the level's records to records.jsonl, fsyncs it, then rewrites
// levels.json atomically with the level's run added.
func (d *Dir) LevelDone(l record.Level) error {
	run, records := l.Run, l.Records
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("results %s: level %d: directory closed", d.path, run.Index)
	}
	for i := range records {
		// Refused before anything is written: reading it back would refuse the file.
		if err := checkStatus(records[i].Status); err != nil {
			return fmt.Errorf("results %s: level %d: record %d (worker %d, seq %d): %w; nothing of the level written",
				d.path, run.Index, i, records[i].Worker, records[i].Seq, err)
		}
	}
	w := bufio.NewWriterSize(d.records, 256<<10)
	enc := json.NewEncoder(w)
	for i := range records {
		rec := &records[i]
		if rec.Error != "" && d.secrets != nil {
			r := *rec // the caller's records stay as they are
			r.Error = d.secrets.Text(r.Error)
			rec = &r
		}
		if err := enc.Encode(rec); err != nil {
			return fmt.Errorf("results %s: write %s: %w", d.path, RecordsFile, err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("results %s: write %s: %w", d.path, RecordsFile, err)
	}
	if err := d.records.Sync(); err != nil {
		return fmt.Errorf("results %s: sync %s: %w", d.path, RecordsFile, err)
	}
	if run.TokensPerChunkBound == 0 {
		run.TokensPerChunkBound = d.perChunk
	}
	d.doc.Levels = append(d.doc.Levels, run)
	if err := d.writeLevels(); err != nil {
		d.doc.Levels = d.doc.Levels[:len(d.doc.Levels)-1]
		return fmt.Errorf("results %s: %w", d.path, err)
	}
	return nil
}

// checkStatus refuses a record's status other than ok, error and cancelled, on write
// (LevelDone) and on read (records.jsonl:LINE): such a record's tokens would count or not by
// accident.
func checkStatus(s record.Status) error {
	if s.Known() {
		return nil
	}
	return fmt.Errorf("status %q, want %q, %q or %q", s, record.StatusOK, record.StatusError, record.StatusCancelled)
}

// Finish records why the sweep stopped in levels.json.
func (d *Dir) Finish(reason string) error {
	return d.rewrite(func(doc *levelsDoc) { doc.StopReason = reason })
}

// ServerMetrics opens server_metrics.jsonl for appending and returns it; the Dir closes it in
// Close. Repeated calls return the same writer.
func (d *Dir) ServerMetrics() (io.Writer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("results %s: directory closed", d.path)
	}
	if d.metrics != nil {
		return d.metrics, nil
	}
	f, err := os.OpenFile(filepath.Join(d.path, ServerMetricsFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, filePerm)
	if err != nil {
		return nil, fmt.Errorf("results %s: %w", d.path, err)
	}
	d.metrics = f
	return f, nil
}

// Close syncs and closes the directory's open files. Stop writers of ServerMetrics first.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	for _, f := range []*os.File{d.records, d.metrics} {
		if f == nil {
			continue
		}
		if err := f.Sync(); err != nil {
			errs = append(errs, err)
		}
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("results %s: close: %w", d.path, err)
	}
	return nil
}

// rewrite applies set to levels.json's document under d.mu and rewrites the file.
func (d *Dir) rewrite(set func(*levelsDoc)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	set(&d.doc)
	if err := d.writeLevels(); err != nil {
		return fmt.Errorf("results %s: %w", d.path, err)
	}
	return nil
}

// writeLevels rewrites levels.json atomically. d.mu is held or d is not shared yet.
func (d *Dir) writeLevels() error {
	b, err := json.MarshalIndent(&d.doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", LevelsFile, err)
	}
	if d.secrets != nil {
		b = d.secrets.Bytes(b)
	}
	return WriteFileAtomic(filepath.Join(d.path, LevelsFile), append(b, '\n'))
}

// SetProvenance records in levels.json (at its next write) the kneecap version that runs the
// sweep and what the server said it is (nil: it said nothing), and writes the server's
// redacted info bodies (RedactServerInfo) to ServerInfoFile when there are any.
func (d *Dir) SetProvenance(kneecap string, server *record.ServerInfo, infoDoc []byte) error {
	if len(infoDoc) > 0 {
		d.mu.Lock()
		if d.secrets != nil {
			infoDoc = d.secrets.Bytes(infoDoc)
		}
		d.mu.Unlock()
		if err := WriteFileAtomic(filepath.Join(d.path, ServerInfoFile), infoDoc); err != nil {
			return fmt.Errorf("results %s: %w", d.path, err)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.doc.Kneecap, d.doc.Server = kneecap, server
	return nil
}

// SetSecrets makes the Dir remove every form of secrets (redact.Secrets) from what it writes
// from now on: the error messages of records.jsonl, levels.json (notes, stop reason, server
// info, endpoint) and server_info.json. A sweep sets the API key and the configuration's
// secrets (config.Config.Secrets) before the first level.
func (d *Dir) SetSecrets(s *redact.Secrets) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.secrets = s
}

// SetTokensPerChunkBound records n, the most tokens one content chunk is believed to carry
// (record.ChunkBound), with each level LevelDone writes from now on that does not carry its
// own (LevelRun.TokensPerChunkBound), so that `kneecap analyze` holds the records to the bound
// the sweep held them to.
func (d *Dir) SetTokensPerChunkBound(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.perChunk = n
}

// SetPromptSizing records in levels.json (at its next write) how the prompts were sized.
func (d *Dir) SetPromptSizing(p *record.PromptSizing) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.doc.PromptSizing = p
}

// SetGPUIdle records in levels.json (at its next write) the GPUs' idle reading.
func (d *Dir) SetGPUIdle(g *record.GPUStats) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.doc.GPUIdle = g
}

// SetTrace records in levels.json the trace a trace replay replays, and rewrites it now: a
// run interrupted before its first level still names its trace for --resume.
func (d *Dir) SetTrace(t *record.TraceInfo) error {
	return d.rewrite(func(doc *levelsDoc) { doc.Trace = t })
}

// SetEndpoint changes the endpoint recorded in levels.json (a resumed in-process run gets a
// new loopback port). It takes effect at the next write.
func (d *Dir) SetEndpoint(endpoint string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.doc.Endpoint = redact.URL(endpoint)
}
