// Package drift records how an external object differs from its managed
// resource's spec, for the external clients' Observe (up to date or not)
// and the reconciler's debug log (the diff).
package drift

import (
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// SortStrings compares string slices as sets of their elements (with
// duplicates counted).
var SortStrings = cmpopts.SortSlices(func(a, b string) bool { return a < b })

// A Report collects the differences found. The zero value has none.
type Report struct {
	diffs []string
}

// Differs says whether want and have differ under opts (empty and nil
// slices and maps compare equal) and records the difference of field when
// they do.
func (r *Report) Differs(field string, want, have any, opts ...cmp.Option) bool {
	opts = append(opts, cmpopts.EquateEmpty())
	if cmp.Equal(want, have, opts...) {
		return false
	}
	r.Add(field, cmp.Diff(want, have, opts...))
	return true
}

// Add records that field differs as diff says.
func (r *Report) Add(field, diff string) { r.diffs = append(r.diffs, field+": "+diff) }

// UpToDate says whether nothing differs.
func (r *Report) UpToDate() bool { return len(r.diffs) == 0 }

// Diff is every recorded difference, want (-) against have (+), one field
// after the other.
func (r *Report) Diff() string { return strings.Join(r.diffs, "\n") }
