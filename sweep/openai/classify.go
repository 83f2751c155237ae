package openai

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kneecap/kneecap/record"
)

// classify maps a request error to an error class of sweep/record.go. streaming reports
// that the response headers had arrived (the error came from reading the stream).
// Cancellation and the request timeout are handled by the caller.
func classify(err error, streaming bool) record.ErrorClass {
	if clientLimit(err) {
		return record.ErrClient
	}
	var apiErr *goopenai.APIError
	switch status := statusOf(err); {
	case errors.Is(err, errRedirect):
		return record.ErrRedirect
	case errors.Is(err, errNoEventBody):
		return record.ErrStreamBroken
	case status > 0:
		return statusClass(status)
	case errors.As(err, &apiErr):
		// An error event inside a 200 stream: use its code when it is an HTTP status.
		if code := codeOf(apiErr.Code); code >= 400 {
			return statusClass(code)
		}
		return record.ErrStreamBroken
	case errors.Is(err, errBadChunk), errors.Is(err, errLineTooLong), errors.Is(err, errNonDataTooLong),
		errors.Is(err, goopenai.ErrTooManyEmptyStreamMessages), errors.Is(err, errBodyTooLarge),
		errors.Is(err, errBadEmbeddings), errors.Is(err, errNotStream):
		return record.ErrBadChunk
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return record.ErrTimeout
	}
	if streaming {
		return record.ErrStreamBroken
	}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.As(err, &opErr) && opErr.Op == "dial",
		errors.As(err, &dnsErr), errors.As(err, &certErr), errors.As(err, &unknownAuth),
		errors.As(err, &hostErr), errors.As(err, &recordErr),
		// net/http replaces the tls.RecordHeaderError of an https:// URL pointing at a
		// plain-HTTP port by this unexported error.
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return record.ErrConnect
	case errors.As(err, &opErr):
		// The connection broke after it was established, before a response arrived.
		return record.ErrStreamBroken
	}
	var urlErr interface{ Timeout() bool }
	if errors.As(err, &urlErr) {
		// *url.Error from the transport without a net cause (for example the server
		// closed the connection before answering: "EOF").
		return record.ErrStreamBroken
	}
	// go-openai's own validation (unsupported model for the endpoint, ...): the request
	// could not be sent as configured.
	return record.ErrHTTP4xx
}

// statusClass maps an HTTP status code to http_429, http_5xx or http_4xx.
func statusClass(code int) record.ErrorClass {
	switch {
	case code == 429:
		return record.ErrHTTP429
	case code >= 500:
		return record.ErrHTTP5xx
	}
	return record.ErrHTTP4xx
}

// codeOf reads an APIError code that is an int or a numeric string; 0 otherwise.
func codeOf(code any) int {
	switch v := code.(type) {
	case int:
		return v
	case float64:
		return int(v)
	case string:
		n, err := strconv.Atoi(v)
		if err == nil {
			return n
		}
	}
	return 0
}

// clientLimit reports whether err is the load generator running out of something of its own,
// never the server's fault (class client, DESIGN §7): file descriptors (EMFILE "too many open
// files", ENFILE for the whole system), socket buffers or memory (ENOBUFS, ENOMEM), or local
// ports to connect from (EADDRNOTAVAIL).
func clientLimit(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.EADDRNOTAVAIL} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// message renders err on one line (servers' error bodies carry newlines) without the API
// key, truncated to maxErrorLen bytes. A refused redirect is its own message: net/http's
// error around it quotes the Location unredacted.
func (c *Client) message(err error) string {
	var re *redirectError
	if errors.As(err, &re) {
		err = re
	}
	msg := c.secrets.Text(err.Error())
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > maxErrorLen {
		msg = strings.ToValidUTF8(msg[:maxErrorLen], "") + "…"
	}
	return msg
}

// maxErrorLen caps Record.Error, in bytes.
const maxErrorLen = 512
