package summary

import "bytes"

// pythonNumbers replaces the non-finite numbers Python's json module writes (NaN, Infinity,
// -Infinity: allow_nan, its default) outside strings with null, which JSON has, and counts
// them: vLLM's bench writes NaN for a statistic of no requests, and encoding/json refuses the
// whole file for it. b is changed in place when it holds none of them; else a copy is returned.
func pythonNumbers(b []byte) ([]byte, int) {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b, 0
	}
	out := make([]byte, 0, len(b))
	n := 0
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"': // copy the string, escapes included
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(b))
			out = append(out, b[i:j]...)
			i = j
		case bytes.HasPrefix(b[i:], []byte("NaN")):
			out, i, n = append(out, "null"...), i+3, n+1
		case bytes.HasPrefix(b[i:], []byte("-Infinity")):
			out, i, n = append(out, "null"...), i+9, n+1
		case bytes.HasPrefix(b[i:], []byte("Infinity")):
			out, i, n = append(out, "null"...), i+8, n+1
		default:
			out = append(out, c)
			i++
		}
	}
	return out, n
}
