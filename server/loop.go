package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// The loop the Scraper and the GPUSampler share: read every interval, count failures, append
// each reading to a JSON-lines file as it is taken.

// runEvery calls f now and then every interval until ctx is done.
func runEvery(ctx context.Context, interval time.Duration, f func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// startLoop runs loop in a goroutine until ctx is done or end is called; end waits for it.
func startLoop(ctx context.Context, loop func(context.Context)) (end func()) {
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop(lctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// loopErr is what a loop's stop reports: its failed reads of what ("scrapes", "GPU
// readings"), n of n + ok, the last one named, and the error that ended its recording.
func loopErr(what string, n, ok int, last, recordErr error) error {
	var errs []error
	if n > 0 {
		errs = append(errs, fmt.Errorf("%d of %d %s failed, last: %w", n, n+ok, what, last))
	}
	return errors.Join(append(errs, recordErr)...)
}

// jsonLines appends values to a writer as JSON lines, whole and in order. Its own mutex
// keeps a slow disk off the readers' lock. The first write error ends the recording and is
// kept (Err).
type jsonLines struct {
	// what names the file's content in the error ("server metrics").
	what string

	mu  sync.Mutex
	out io.Writer // the writer, or nil: not recording
	err error     // the first write error; recording stops there
}

// set makes every later write go to w.
func (j *jsonLines) set(w io.Writer) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.out = w
}

// write appends v as one JSON line, unless recording is off or has failed.
func (j *jsonLines) write(v any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.out == nil || j.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err == nil {
		_, err = j.out.Write(append(b, '\n'))
	}
	if err != nil {
		j.err = fmt.Errorf("sweep: write %s: %w", j.what, err)
	}
}

// Err returns the write error that ended the recording, or nil.
func (j *jsonLines) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}
