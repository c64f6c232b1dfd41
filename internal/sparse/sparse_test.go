package sparse

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestObject(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     map[string]any
		want   map[string]any
	}{
		"NullsAndEmptyObjects": {
			reason: "Nulls and empty objects go at any depth, and an object emptied by that goes too.",
			in: map[string]any{
				"metadata": map[string]any{"creationTimestamp": nil},
				"spec":     map[string]any{"a": "x", "b": map[string]any{"c": map[string]any{}}},
				"status":   map[string]any{},
			},
			want: map[string]any{"spec": map[string]any{"a": "x"}},
		},
		"ListsStay": {
			reason: "Lists stay, empty or not; the objects in them are trimmed but stay even when empty.",
			in:     map[string]any{"a": []any{}, "b": []any{map[string]any{"c": nil}, "d"}},
			want:   map[string]any{"a": []any{}, "b": []any{map[string]any{}, "d"}},
		},
		"Zeros": {
			reason: "False, zero and the empty string are values, not absences.",
			in:     map[string]any{"a": false, "b": int64(0), "c": ""},
			want:   map[string]any{"a": false, "b": int64(0), "c": ""},
		},
		"EmptyDir": {
			reason: "An empty emptyDir is a volume source without options: it stays.",
			in:     map[string]any{"volumes": []any{map[string]any{"name": "run", "emptyDir": map[string]any{}}}},
			want:   map[string]any{"volumes": []any{map[string]any{"name": "run", "emptyDir": map[string]any{}}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			Object(tc.in)
			if diff := cmp.Diff(tc.want, tc.in); diff != "" {
				t.Errorf("%s\nObject(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
