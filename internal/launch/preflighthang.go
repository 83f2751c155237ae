package launch

import "fmt"

// preflightHung records a preflight cut by its bound at a server that accepted the connection
// and answered nothing (server.UnreachableError.Silence; DESIGN §3.1): the results directory
// opened as a sweep's, with no levels and "preflight: " and silence as its stop reason, so
// that the silent server is analyzed and reported as any failed sweep's. It returns err (exit
// 3) as a ProbeStoppedError. A resumed run's directory keeps its stop reason: err alone.
func (s *Sweep) preflightHung(t *Target, silence string, err error) error {
	if s.Dir != nil {
		return err
	}
	if oerr := s.openDir(t.Endpoint); oerr != nil {
		return oerr
	}
	if werr := s.Dir.Finish("preflight: " + silence); werr != nil {
		return fmt.Errorf("sweep: %w", werr)
	}
	return &ProbeStoppedError{Err: err}
}
