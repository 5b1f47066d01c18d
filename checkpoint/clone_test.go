package checkpoint_test

import (
	"reflect"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
)

func TestCloneSharesNothing(t *testing.T) {
	for name, cp := range sampleCheckpoints() {
		c := cp.Clone()
		if !reflect.DeepEqual(c, cp) {
			t.Fatalf("%s: clone differs\n got  %#v\n want %#v", name, c, cp)
		}
		want := sampleCheckpoints()[name]
		want.ID = cp.ID
		want.TS = cp.TS
		for _, v := range c.Values {
			if len(v) > 0 {
				v[0] ^= 0xff
			}
		}
		for _, ws := range c.Deltas {
			for _, w := range ws {
				if len(w) > 0 {
					w[0] ^= 0xff
				}
			}
		}
		for k := range c.Versions {
			c.Versions[k]++
		}
		for _, vs := range c.Seen {
			for k := range vs {
				vs[k]++
			}
		}
		for i := range c.Tasks {
			if len(c.Tasks[i].Input) > 0 {
				c.Tasks[i].Input[0] ^= 0xff
			}
		}
		if !reflect.DeepEqual(cp, want) {
			t.Fatalf("%s: changing the clone changed the original", name)
		}
	}
}

func TestCloneValuesDoNotOverlap(t *testing.T) {
	cp := &checkpoint.Checkpoint{Values: map[string][]byte{"a": []byte("AB"), "b": []byte("CD")}, Deltas: map[string][][]byte{"m": {[]byte("EF"), []byte("GH")}}}
	c := cp.Clone()
	for k := range c.Values {
		c.Values[k] = append(c.Values[k], "xyz"...)
	}
	c.Deltas["m"][0] = append(c.Deltas["m"][0], "xyz"...)
	if string(c.Values["a"]) != "ABxyz" || string(c.Values["b"]) != "CDxyz" || string(c.Deltas["m"][1]) != "GH" {
		t.Fatalf("appending to cloned values overwrote a neighbour: %q %q", c.Values, c.Deltas)
	}
}
