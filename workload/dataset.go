package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"github.com/kneecap/kneecap/record"
)

// maxDatasetLine caps one JSONL line, in bytes.
const maxDatasetLine = 64 << 20

// Dataset is a workload that replays prompts from a file. Formats, detected from the content:
//
//   - ShareGPT JSON: an array of {"conversations": [{"from": "human", "value": ...},
//     {"from": "gpt", "value": ...}, ...]};
//   - ShareGPT JSONL: one such object per line;
//   - prompt JSONL: one {"prompt": "...", "max_tokens": N} per line (max_tokens optional).
//
// For ShareGPT the first human (or user) turn is the prompt and the length in words of the
// first gpt (or assistant) reply after it is the output length. With fixed_output and an
// output_tokens distribution, the drawn length replaces the dataset's and ignore_eos is sent;
// with fixed_output alone the dataset's length is forced with ignore_eos; otherwise the
// dataset's length is only max_tokens. Entries without a prompt (none, or an empty one), or
// (unless output lengths are drawn) without an output length, are skipped and counted in
// Skipped, the first with its place in SkipReason (SkipWarning). A length past
// record.MaxTokens (max_tokens, a prompt or reply of more words, a conversation whose history
// would grow past it) is an error naming the entry (limits.go).
//
// Next picks an entry with the PCG generator of (seed, level, worker, seq): deterministic
// and lock-free.
type Dataset struct {
	// Path is the file read.
	Path string
	// Skipped counts entries that had no usable prompt or output length; SkipReason says why
	// the first was, and where ("DS:7: an empty prompt").
	Skipped    int
	SkipReason string

	cfg     WorkloadConfig
	models  modelMix
	api     record.API
	out     sampler
	drawOut bool
	entries []datasetEntry
	// tokensPerWord is the sizing fit's slope once sized (0: words): a session turn's length.
	tokensPerWord float64
}

type datasetEntry struct {
	prompt string
	// words is the prompt's number of whitespace-separated words; promptTokens its length
	// in tokens: words, or the server's tokens once sized (SizePrompts).
	words        int
	promptTokens int
	outputTokens int
	// turns are, with workload.sessions, every user turn of a ShareGPT conversation (the
	// first is prompt itself) with the length of the reply after it.
	turns []datasetTurn
}

// datasetTurn is one user turn of a conversation replayed as a session: its message, its
// length in words and in tokens (words, or the server's tokens by the sizing fit, without
// the template), and the output length of the dataset's reply after it.
type datasetTurn struct {
	prompt       string
	words        int
	promptTokens int
	outputTokens int
}

// Len returns the number of usable entries.
func (d *Dataset) Len() int { return len(d.entries) }

// LoadDataset reads cfg.Dataset. An unreadable file, a malformed entry (named by file:line
// for JSONL, by file and entry index for a JSON array) or a dataset without usable entries
// is an error naming the file.
func LoadDataset(cfg WorkloadConfig, api record.API) (*Dataset, error) {
	d := &Dataset{Path: cfg.Dataset, cfg: cfg, models: cfg.modelMix(), api: api}
	d.drawOut = cfg.FixedOutput && cfg.OutputTokens != (Dist{})
	if d.drawOut {
		if errs := cfg.OutputTokens.Validate("workload.output_tokens", "token"); len(errs) > 0 {
			return nil, fmt.Errorf("sweep: dataset %s: %w", cfg.Dataset, errors.Join(errs...))
		}
		d.out = newSampler(cfg.OutputTokens)
	}
	f, err := os.Open(cfg.Dataset)
	if err != nil {
		return nil, fmt.Errorf("sweep: dataset: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	first, err := firstNonSpace(br)
	if err != nil {
		return nil, fmt.Errorf("sweep: dataset %s: %w", cfg.Dataset, err)
	}
	if first == '[' {
		err = d.readArray(br)
	} else {
		err = d.readLines(br)
	}
	if err != nil {
		return nil, err
	}
	if len(d.entries) == 0 {
		why := ""
		if d.SkipReason != "" {
			why = ": the first " + d.SkipReason
		}
		return nil, fmt.Errorf("sweep: dataset %s: no usable entries (%d skipped%s)", cfg.Dataset, d.Skipped, why)
	}
	return d, nil
}

// firstNonSpace peeks at the first non-whitespace byte.
func firstNonSpace(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return 0, errors.New("empty file")
		}
		if err != nil {
			return 0, err
		}
		if b != ' ' && b != '\t' && b != '\n' && b != '\r' && b != 0xEF && b != 0xBB && b != 0xBF {
			return b, br.UnreadByte()
		}
	}
}

// datasetRecord is one entry in any of the formats.
type datasetRecord struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
	Prompt    *string    `json:"prompt"`
	MaxTokens *jsonCount `json:"max_tokens"`
}

// add converts rec into an entry; where names it in errors.
func (d *Dataset) add(rec *datasetRecord, where string) error {
	var e datasetEntry
	human := -1 // the conversation's first human turn
	switch {
	case rec.Prompt != nil:
		e.prompt = *rec.Prompt
		if rec.MaxTokens != nil {
			n, err := tokenField("max_tokens", string(*rec.MaxTokens), 0)
			if err != nil {
				return fmt.Errorf("sweep: dataset %s: %w", where, err)
			}
			e.outputTokens = n
		}
	case rec.Conversations != nil:
		for i, t := range rec.Conversations {
			if isHuman(t.From) {
				human = i
				break
			}
		}
		if human >= 0 {
			e.prompt = rec.Conversations[human].Value
			for _, t := range rec.Conversations[human+1:] {
				if isReply(t.From) {
					e.outputTokens = wordCount(t.Value)
					break
				}
			}
			if d.cfg.Sessions != nil {
				e.turns = d.turnsOf(rec)
			}
		}
	default:
		return fmt.Errorf("sweep: dataset %s: neither \"conversations\" nor \"prompt\"", where)
	}
	e.words = wordCount(e.prompt)
	e.promptTokens = e.words
	if err := e.checkSize(); err != "" {
		return fmt.Errorf("sweep: dataset %s: %s", where, err)
	}
	switch {
	case rec.Prompt == nil && human < 0:
		d.skip(where, "a conversation without a human (or user) turn")
	case e.promptTokens == 0:
		d.skip(where, "an empty prompt")
	case e.outputTokens == 0 && !d.drawOut:
		d.skip(where, "no output length (max_tokens, or the words of a gpt reply)")
	default:
		d.entries = append(d.entries, e)
	}
	return nil
}

// skip counts an entry left out, keeping the first reason with its place (where).
func (d *Dataset) skip(where, why string) {
	if d.Skipped++; d.Skipped == 1 {
		d.SkipReason = where + ": " + why
	}
}

// checkSize returns the problem of an entry with a length past record.MaxTokens (its prompt
// or reply in words, each counted a token; a conversation's history over all its turns), ""
// when it has none.
func (e *datasetEntry) checkSize() string {
	if p := tooLong("the prompt's length in words", float64(e.words)); p != "" {
		return p
	}
	if p := tooLong("the reply's length in words (the output length)", float64(e.outputTokens)); p != "" {
		return p
	}
	history := 0.0
	for _, t := range e.turns {
		history += float64(t.words) + float64(t.outputTokens)
	}
	if p := tooLong(fmt.Sprintf("the conversation's history over its %d turns, in words", len(e.turns)), history); p != "" {
		return p
	}
	return ""
}

// SkipWarning says how many entries of a dataset workload (or its conversations) were left
// out, and the first with its reason; "" when none was, or w reads no dataset.
func SkipWarning(w Workload) string {
	d, ok := w.(*Dataset)
	if s, isSessions := w.(*Sessions); isSessions {
		d, ok = s.ds, s.ds != nil
	}
	if !ok || d.Skipped == 0 {
		return ""
	}
	return fmt.Sprintf("dataset %s: %d of %d entries left out, the first %s", d.Path, d.Skipped, d.Skipped+len(d.entries), d.SkipReason)
}

// isHuman reports a ShareGPT speaker of the user's turns.
func isHuman(from string) bool { return from == "human" || from == "user" }

// isReply reports a ShareGPT speaker of the model's replies.
func isReply(from string) bool { return from == "gpt" || from == "assistant" || from == "chatgpt" }

// turnsOf returns the user turns of rec's conversation, each with the word length of the
// reply after it (before the next user turn): up to the first turn without a usable message
// or, unless output lengths are drawn, without a reply.
func (d *Dataset) turnsOf(rec *datasetRecord) []datasetTurn {
	var turns []datasetTurn
	conv := rec.Conversations
	for i := 0; i < len(conv); i++ {
		if !isHuman(conv[i].From) {
			continue
		}
		t := datasetTurn{prompt: conv[i].Value, words: wordCount(conv[i].Value)}
		for _, r := range conv[i+1:] {
			if isHuman(r.From) {
				break
			}
			if isReply(r.From) {
				t.outputTokens = wordCount(r.Value)
				break
			}
		}
		if t.words == 0 || t.outputTokens == 0 && !d.drawOut {
			break
		}
		t.promptTokens = t.words
		turns = append(turns, t)
	}
	return turns
}

// pick returns the entry of conversation conv of worker at level (workload.sessions).
func (d *Dataset) pick(level, worker, conv int) *datasetEntry {
	return &d.entries[requestRand(d.cfg.Seed, level, worker, conv).IntN(len(d.entries))]
}

// turns returns the number of turns of e as a conversation: a prompt entry, or a ShareGPT
// entry of one turn, is a conversation of one turn.
func (d *Dataset) turns(e *datasetEntry) int { return max(1, len(e.turns)) }

// turn returns turn k of e as a conversation's user message, r drawing its output length
// when output lengths are drawn. The single turn of a prompt entry counts its words by the
// sizing's slope alone (the template is counted once per request: Sessions.Overhead).
func (d *Dataset) turn(e *datasetEntry, k int, r *rand.Rand) record.Request {
	t := datasetTurn{prompt: e.prompt, words: e.words, promptTokens: e.words, outputTokens: e.outputTokens}
	if len(e.turns) > 0 {
		t = e.turns[k]
	} else if d.tokensPerWord > 0 {
		t.promptTokens = max(1, int(math.Round(d.tokensPerWord*float64(e.words))))
	}
	req := record.Request{Prompt: t.prompt, PromptTokens: t.promptTokens, MaxTokens: t.outputTokens, IgnoreEOS: d.cfg.FixedOutput}
	if d.drawOut {
		req.MaxTokens = d.out.Draw(r)
	}
	return req
}

// readArray reads a JSON array of ShareGPT (or prompt) objects, streaming.
func (d *Dataset) readArray(r io.Reader) error {
	dec := json.NewDecoder(r)
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("sweep: dataset %s: %w", d.Path, err)
	}
	for i := 0; dec.More(); i++ {
		var rec datasetRecord
		if err := dec.Decode(&rec); err != nil {
			return fmt.Errorf("sweep: dataset %s: entry %d (byte %d): %w", d.Path, i, dec.InputOffset(), err)
		}
		if err := d.add(&rec, fmt.Sprintf("%s: entry %d", d.Path, i)); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("sweep: dataset %s: unterminated array: %w", d.Path, err)
	}
	return nil
}

// readLines reads JSONL; blank lines are ignored.
func (d *Dataset) readLines(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), maxDatasetLine)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", d.Path, line)
		var rec datasetRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("sweep: dataset %s: %w", where, err)
		}
		if err := d.add(&rec, where); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("sweep: dataset %s: %w", d.Path, err)
	}
	return nil
}

// Next returns the request worker sends as its seq-th request of level.
func (d *Dataset) Next(level, worker, seq int) record.Request {
	r := requestRand(d.cfg.Seed, level, worker, seq)
	e := &d.entries[r.IntN(len(d.entries))]
	req := record.Request{Prompt: e.prompt, PromptTokens: e.promptTokens, MaxTokens: e.outputTokens, IgnoreEOS: d.cfg.FixedOutput}
	if d.drawOut {
		req.MaxTokens = d.out.Draw(r)
	}
	return d.models.with(req, level, worker, seq)
}
