package analysis

import "github.com/kneecap/kneecap/record"

// One set of plausibility rules, live and offline (DESIGN §7): the records a results directory
// holds are held to the usage rules the live sweep applied (record.Record.Recheck) before they
// are summarized, so an edited records.jsonl, or one written by a kneecap before a rule, is not
// believed where the sweep would not have believed it.

// RecheckUsage holds every record of levels to the usage rules (record.Record.Recheck), with the
// most tokens one content chunk may carry that the sweep held the level to
// (LevelRun.TokensPerChunkBound), else perChunk (record.ChunkBound), changing in place
// the records that fail them: their tokens then come from their chunks, their prompt tokens
// from the requested length. It returns the warning that names how many failed and the first
// of them, "" when none did.
func RecheckUsage(levels []record.Level, perChunk int) string {
	n := 0
	var first *record.Record
	var firstNote string
	for i := range levels {
		bound := levels[i].Run.TokensPerChunkBound
		if bound <= 0 {
			bound = perChunk // a levels.json from before the key
		}
		for j := range levels[i].Records {
			r := &levels[i].Records[j]
			if note := r.Recheck(bound); note != "" {
				n++
				if first == nil {
					first, firstNote = r, note
				}
			}
		}
	}
	if n == 0 {
		return ""
	}
	return usageRechecked(n, first, firstNote).text
}

// usageRechecked: on reading records.jsonl, n records carried usage the live sweep's rules do
// not believe; first is the first of them and note why.
func usageRechecked(n int, first *record.Record, note string) warning {
	return newWarning(warnUsageRechecked, "", "usage: %d record(s) of records.jsonl carry usage the sweep's own rules do not believe (an edited file, or one written before a rule): their tokens are taken from their content chunks and the prompt length requested; first: level %d, worker %d, request %d: %s",
		n, first.Level, first.Worker, first.Seq, note)
}
