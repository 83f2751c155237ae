package server

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
)

// nvidiaSMIArgs query the fields a GPUValue holds, one CSV line per GPU without header or
// units (nvidia-smi --help-query-gpu names them).
var nvidiaSMIArgs = []string{
	"--query-gpu=index,uuid,name,power.draw,utilization.gpu,memory.used,clocks.sm",
	"--format=csv,noheader,nounits",
}

// smiReader runs nvidia-smi on this machine (DESIGN §3.10).
type smiReader struct {
	// cmd is the program run, "nvidia-smi" looked up on the PATH.
	cmd string
	// host names the GPUs' host (this machine's name), their Hostname label for Match.
	host    string
	match   GPUMatch
	timeout time.Duration
}

// read runs the query once, bounded by r.timeout, and parses its output.
func (r smiReader) read(ctx context.Context) ([]GPUValue, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	c := exec.CommandContext(ctx, r.cmd, nvidiaSMIArgs...)
	c.WaitDelay = time.Second // a child left holding the pipes does not hold the read
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		if msg := firstLine(stderr.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return nil, fmt.Errorf("%s: %w", r.cmd, err)
	}
	gs, err := parseNvidiaSMI(out, r.host, r.match)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.cmd, err)
	}
	return gs, nil
}

// parseNvidiaSMI parses the query's CSV: index, uuid, name, power.draw (W),
// utilization.gpu (%), memory.used (MiB), clocks.sm (MHz). A field nvidia-smi cannot give
// ("[N/A]", "[Not Supported]") is nil. The GPUs whose labels (gpu, UUID, modelName,
// Hostname) match m are returned in index order.
func parseNvidiaSMI(out []byte, host string, m GPUMatch) ([]GPUValue, error) {
	cr := csv.NewReader(bytes.NewReader(out))
	cr.TrimLeadingSpace = true
	cr.FieldsPerRecord = 7
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("parse output: %w", err)
	}
	var gs []GPUValue
	for _, row := range rows {
		for i := range row {
			row[i] = strings.TrimSpace(row[i])
		}
		g := GPUValue{GPU: clipGPU(record.GPU{Index: row[0], UUID: row[1], Model: row[2], Host: host})}
		labels := map[string]string{"gpu": g.Index, "UUID": g.UUID, "modelName": g.Model, "Hostname": host}
		if !m.matches(labels) {
			continue
		}
		g.PowerW, g.UtilPct, g.FBUsedMiB, g.SMClockMHz = smiNumber(row[3]), smiNumber(row[4]), smiNumber(row[5]), smiNumber(row[6])
		gs = append(gs, g)
	}
	if len(rows) == 0 {
		return nil, errors.New("no GPU listed")
	}
	sortGPUs(gs)
	return gs, nil
}

// smiNumber parses one of nvidia-smi's numbers; nil for "[N/A]" and the like, and for a
// value that is not finite (ParseFloat reads "NaN" and "Inf").
func smiNumber(s string) *float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// firstLine returns the first non-empty line of s, trimmed.
func firstLine(s string) string {
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
