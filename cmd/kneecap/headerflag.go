package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/sweep/openai"
)

// header is one --header NAME:VALUE.
type header struct{ name, value string }

// headerList is the repeatable --header flag. Set refuses a value without a colon, an empty
// or invalid name, a header the client sets itself, an empty value and a name given twice,
// each in one line that never quotes the value (it may be a secret).
type headerList []header

func (l *headerList) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return errors.New("want NAME:VALUE, such as X-Tenant:acme (the value given has no colon)")
	}
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if name == "" {
		return errors.New("want NAME:VALUE: the header name before the colon is empty")
	}
	if err := openai.CheckHeader(name, value); err != nil {
		return err
	}
	canon := http.CanonicalHeaderKey(name)
	for _, h := range *l {
		if h.name == canon {
			return fmt.Errorf("header %s given twice", canon)
		}
	}
	*l = append(*l, header{canon, value})
	return nil
}

// String lists the names given; the values may be secrets.
func (l *headerList) String() string {
	if l == nil {
		return ""
	}
	var names []string
	for _, h := range *l {
		names = append(names, h.name+":…")
	}
	return strings.Join(names, ",")
}

// apply sets each header in cfg's target.headers, in place of a header of the same name in
// another case, and records that --header set it.
func (l headerList) apply(cfg *config.Config) {
	if len(l) == 0 {
		return
	}
	out := make(map[string]string, len(cfg.Target.Headers)+len(l))
	for name, v := range cfg.Target.Headers {
		out[name] = v
	}
	for _, h := range l {
		for name := range out {
			if http.CanonicalHeaderKey(name) == h.name {
				delete(out, name)
			}
		}
		out[h.name] = h.value
		cfg.Override("target.headers."+h.name, "--header")
	}
	cfg.Target.Headers = out
}
