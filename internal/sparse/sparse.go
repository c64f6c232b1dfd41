// Package sparse trims an object converted from a Go type to what a
// client that wrote it by hand would send: the converter adds a null for
// each nil pointer or zero time without omitempty effect and an empty
// object for each struct field (a creation timestamp, a status, a
// composite's absent exposures), which server-side apply would take for
// opinions on fields the writer never set.
package sparse

// Object removes from m, at any depth, every null and every object that is
// or becomes empty, but an empty emptyDir, which is a value (a volume
// source without options). Lists stay, empty or not: an empty list is a
// value too.
func Object(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			Object(v)
			if len(v) == 0 && k != "emptyDir" {
				delete(m, k)
			}
		case []any:
			for _, e := range v {
				if e, ok := e.(map[string]any); ok {
					Object(e)
				}
			}
		}
	}
}
