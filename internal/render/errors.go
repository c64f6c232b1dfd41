package render

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Errors are all the problems found in a spec, in the order of the spec:
// apimachinery's field errors, each of type Invalid, whose Field is the
// path below spec.forProvider, with tunnels, exposures and reverse
// exposures addressed by name (field.Path's Key), such as
// tunnels[branch-a].trafficSelectors[1].remote, and whose Detail says what
// is wrong and the fix. The value at fault is in Detail, where it is
// shown at all (a pre-shared key never is), so BadValue is omitted.
type Errors field.ErrorList //nolint:recvcheck // add appends to the list; the others only read it

// Error lists the problems as "<path>: <detail>", separated by "; ".
func (e Errors) Error() string {
	msgs := make([]string, len(e))
	for i, fe := range e {
		msgs[i] = fe.Field + ": " + fe.Detail
	}
	return strings.Join(msgs, "; ")
}

// add records a problem at path.
func (e *Errors) add(path *field.Path, format string, args ...any) {
	*e = append(*e, field.Invalid(path, field.OmitValueType{}, fmt.Sprintf(format, args...)))
}

// err returns e as an error, or nil when there is no problem.
func (e Errors) err() error {
	if len(e) == 0 {
		return nil
	}
	return e
}
