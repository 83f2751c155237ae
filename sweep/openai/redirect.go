package openai

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/kneecap/kneecap/redact"
)

// maxRedirects is how many same-origin redirects one request may follow.
const maxRedirects = 5

// errRedirect is the sentinel of every redirect the client refuses to follow.
var errRedirect = errors.New("openai: redirect not followed")

// redirectError is a redirect the client refused (DESIGN §7): to another origin, or one that
// would not resend the request's method and body. Its message names the status and the
// Location, redacted.
type redirectError struct {
	code     int
	location string // redacted
	why      string
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("%d %s to %s %s: redirect not followed (point target.url at the server itself)",
		e.code, http.StatusText(e.code), e.location, e.why)
}

func (e *redirectError) Unwrap() error { return errRedirect }

// checkRedirect is the http.Client redirect policy of every request to the target: a
// redirect is followed only to the origin (scheme, host and port) of the first request, and
// only when it keeps the method and the body: 307 and 308, or any redirect of a GET or HEAD
// without a body. Anything else fails the request with a *redirectError, so no request, no
// key and no configured header ever leaves for another origin (net/http would copy the
// Authorization header to another port of the same host), and a POST never silently becomes
// a GET of something else.
func checkRedirect(req *http.Request, via []*http.Request) error {
	first := via[0]
	e := &redirectError{location: redact.URL(req.URL.String())}
	if req.Response != nil {
		e.code = req.Response.StatusCode
	}
	switch {
	case !sameOrigin(first.URL, req.URL):
		e.why = "(another origin than " + origin(first.URL) + ")"
	case req.Method != first.Method || (first.Body != nil && first.Body != http.NoBody && req.Body == nil):
		e.why = fmt.Sprintf("(same origin, but it turns %s into %s and drops the body; only 307 and 308 keep them)", first.Method, req.Method)
	case len(via) > maxRedirects:
		e.why = fmt.Sprintf("(more than %d redirects)", maxRedirects)
	default:
		return nil
	}
	return e
}

// sameOrigin reports whether a and b have the same scheme, host and port (a missing port
// being the scheme's default).
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// port is u's port, or its scheme's default.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// origin renders u's scheme://host:port.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port(u)
}
