package render

import (
	"fmt"
	"strings"
)

// A FieldError is one problem with a Gateway's spec. Path names the field
// below spec.forProvider, with tunnels, exposures and reverse exposures
// addressed by name, such as tunnels[branch-a].trafficSelectors[1].remote.
type FieldError struct {
	Path    string
	Message string
}

func (e FieldError) Error() string { return e.Path + ": " + e.Message }

// Errors are all the problems found in a spec, in the order of the spec.
type Errors []FieldError //nolint:recvcheck // add appends to the list; the others only read it

func (e Errors) Error() string {
	msgs := make([]string, len(e))
	for i, fe := range e {
		msgs[i] = fe.Error()
	}
	return strings.Join(msgs, "; ")
}

// add records a problem at path.
func (e *Errors) add(path, format string, args ...any) {
	*e = append(*e, FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// err returns e as an error, or nil when there is no problem.
func (e Errors) err() error {
	if len(e) == 0 {
		return nil
	}
	return e
}
