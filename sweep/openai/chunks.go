package openai

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
)

// streamRead is what a stream showed, from t_send: its counts, the arrival of its first
// content chunk, of its first answer chunk when reasoning came first (else 0), of its last
// content chunk, its inter-chunk gaps and, when recorded, the content chunks' offsets, on
// the record's clock (the kernel's when kernel, else the client's).
type streamRead struct {
	w          *watch        // the request's deadlines, told of every event
	off        time.Duration // t_send − the watch's start
	leaveAfter int           // content chunks after which the user leaves (0: never)
	// maxChunks is the content chunks the stream may send (chunkCap); capTokens says its
	// max_tokens set it (more are overlong, else bad_chunk).
	maxChunks           int
	capTokens           bool
	sc                  streamCounts
	first, answer, last time.Duration
	answered            bool
	itl                 record.ITLSummary
	log                 chunkLog         // records nothing when chunks are not recorded
	reply               *strings.Builder // the answer content, when KeepReply (else nil)
	// arrival is the connection's kernel arrival clock (nil: no read lag); lag the content
	// chunks' read lags; firstArrival the kernel's arrival time of the first content chunk
	// (Unix ns; 0: unstamped).
	arrival      *atomic.Int64
	lag          selfcheck.ReadLagHist
	firstArrival int64
	// The kernel's clock (DESIGN §3.3): clock and mark are the connection's (nil: none).
	// kernel reports that the first content chunk made the record a kernel one: sentAt is
	// its Sent (Unix ns; send says how it was taken), kLast the kernel time of the latest
	// content chunk (Unix ns), firstGather the chunks after the first that shared its stamp
	// (gathering while they do). cFirst and cLast are TTFT and E2E on the client's clock.
	clock         connClock
	mark          int64
	kernel        bool
	gathering     bool
	send          string
	sentAt, kLast int64
	firstGather   int
	cFirst, cLast time.Duration
}

// at returns a content chunk's offset from Sent on the record's clock: now (the client's) on
// a client record; on a kernel one its read's arrival a − Sent, never before the previous
// chunk's (a chunk after the first read without a stamp, a = 0, takes the client's reading
// t: it arrived before). The first content chunk decides the clock (startKernel).
func (sr *streamRead) at(now time.Duration, t time.Time, a int64) time.Duration {
	if sr.sc.chunks == 1 {
		sr.startKernel(a)
	}
	if !sr.kernel {
		return now
	}
	if sr.gathering && sr.sc.chunks > 1 {
		if a == sr.firstArrival {
			sr.firstGather++
		} else {
			sr.gathering = false
		}
	}
	if a == 0 {
		a = t.UnixNano()
	}
	sr.kLast = max(sr.kLast, a)
	return time.Duration(sr.kLast - sr.sentAt)
}

// startKernel makes the record a kernel one when the first content chunk's read was stamped
// (a ≠ 0) and the connection knows the send of the request's last byte, no later than a (a
// send read on the client's clock after a late write could be).
func (sr *streamRead) startKernel(a int64) {
	if a == 0 || sr.clock == nil {
		return
	}
	sent, how, ok := sr.clock.sendTime(sr.mark)
	if !ok || sent > a {
		return
	}
	sr.kernel, sr.gathering, sr.sentAt, sr.send = true, true, sent, how
}

// readChunks reads the stream's events into sr until the stream ends or fails, and returns
// why it stopped (io.EOF at its end): the per-chunk path. dec decodes the payloads of an API
// with its own events (nil: chat's and completions', scanChunk); its terminal event ends the
// stream as [DONE] does.
func (c *Client) readChunks(s *sseBody, dec eventDecoder, tSend time.Time, sr *streamRead) error {
	// The decoder of the payloads scanChunk declines (chunkDecoder.decode), allocated when
	// the first one comes: most streams never need it.
	var slow *chunkDecoder
	for {
		line, err := s.next()
		if err != nil {
			return err
		}
		// One clock read: now is monotonic (immune to a wall-clock step), t's Unix time is
		// compared with the kernel's CLOCK_REALTIME stamp of the read (read lag).
		t := time.Now()
		now := t.Sub(tSend)
		var res chunkResult
		if dec != nil {
			if res, err = dec.decode(line); err != nil {
				return err
			}
		} else {
			var ok bool
			if res, ok = scanChunk(line); !ok {
				if slow == nil {
					slow = new(chunkDecoder)
				}
				if res, err = slow.decodeSlow(line); err != nil {
					return err
				}
			}
		}
		sr.w.event(sr.off+now, res.content(), res.progress)
		sr.sc.usage.merge(res.usage)
		if res.end {
			return s.ended()
		}
		if !res.content() {
			continue
		}
		if sr.sc.chunks >= sr.maxChunks {
			// The chunk past the cap is not counted: the record's chunks and N_out stay those
			// kept.
			return sr.pastCap()
		}
		sr.sc.chunks++
		if sr.reply != nil && res.answer {
			keepReply(sr.reply, line, &res)
		}
		var a int64 // the kernel's arrival of the read that gave the chunk
		if sr.arrival != nil {
			a = sr.arrival.Load()
			sr.readLag(t.UnixNano(), a)
		}
		at := sr.at(now, t, a)
		if !res.answer {
			sr.sc.reasoningChunks++
		} else if !sr.answered {
			sr.answered = true
			if sr.sc.chunks > 1 {
				sr.answer = at // reasoning came first: TTFA
			}
		}
		if sr.sc.chunks == 1 {
			sr.first, sr.cFirst = at, now
		} else {
			gap := (at - sr.last).Microseconds()
			sr.itl.Count++
			sr.itl.SumUS += gap
			sr.itl.MaxUS = max(sr.itl.MaxUS, gap)
		}
		sr.last, sr.cLast = at, now
		sr.log.add(at.Microseconds())
		if sr.sc.chunks == sr.leaveAfter {
			return errUserCancel // workload.cancel's token rule: the stream is closed unread
		}
	}
}
