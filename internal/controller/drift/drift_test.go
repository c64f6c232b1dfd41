package drift

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReport(t *testing.T) {
	type field struct {
		name       string
		want, have any
		opts       []cmp.Option
	}
	cases := map[string]struct {
		reason   string
		fields   []field
		differs  []bool
		upToDate bool
		diff     string
	}{
		"Nothing": {
			reason:   "A report without differences is up to date and has no diff.",
			upToDate: true,
		},
		"EmptyIsNil": {
			reason:   "Empty and nil slices compare equal; SortStrings compares slices as sets.",
			fields:   []field{{name: "tags", want: []string{}, have: []string(nil)}, {name: "groups", want: []string{"b", "a"}, have: []string{"a", "b"}, opts: []cmp.Option{SortStrings}}},
			differs:  []bool{false, false},
			upToDate: true,
		},
		"OneDiffers": {
			reason:  "A differing field is recorded by name, with cmp's diff.",
			fields:  []field{{name: "name", want: "a", have: "a"}, {name: "mtu", want: 1450, have: 1500}},
			differs: []bool{false, true},
			diff:    "mtu: " + cmp.Diff(1450, 1500),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &Report{}
			var differs []bool
			for _, f := range tc.fields {
				differs = append(differs, r.Differs(f.name, f.want, f.have, f.opts...))
			}
			if diff := cmp.Diff(tc.differs, differs); diff != "" {
				t.Errorf("%s\nDiffers(...): -want, +got:\n%s", tc.reason, diff)
			}
			if r.UpToDate() != tc.upToDate {
				t.Errorf("%s\nUpToDate() = %v, want %v", tc.reason, r.UpToDate(), tc.upToDate)
			}
			if diff := cmp.Diff(tc.diff, r.Diff()); diff != "" {
				t.Errorf("%s\nDiff(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
