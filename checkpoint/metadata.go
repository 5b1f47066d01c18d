package checkpoint

import (
	"maps"
	"strconv"
)

// Matches reports whether md has every key of filter with the same value.
// The keys "source", "step" (decimal) and "run_id" match those fields; any
// other key matches Extra. An empty filter matches everything.
func (md Metadata) Matches(filter map[string]string) bool {
	for k, want := range filter {
		var got string
		var ok bool
		switch k {
		case "source":
			got, ok = string(md.Source), true
		case "step":
			got, ok = strconv.Itoa(md.Step), true
		case "run_id":
			got, ok = md.RunID, true
		default:
			got, ok = md.Extra[k]
		}
		if !ok || got != want {
			return false
		}
	}
	return true
}

// Clone returns a copy of md that shares no maps with it.
func (md Metadata) Clone() Metadata {
	md.Parents = maps.Clone(md.Parents)
	md.Extra = maps.Clone(md.Extra)
	return md
}
