//go:build !linux

package launch

// clockNTPExpected: only Linux says how well its clock is synchronised.
const clockNTPExpected = false
