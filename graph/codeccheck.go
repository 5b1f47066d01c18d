package graph

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/agentgraph/agentgraph/checkpoint"
)

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkCodec fails for a key type that the codec cannot bring back as it
// was, so that a bad state type fails at Compile and not at step 37. For the
// JSON codec it walks the type: functions, channels, complex numbers,
// interfaces with methods and unexported struct fields do not survive a
// round trip. A field of type any is allowed: it comes back holding JSON's
// types (map[string]any, []any, float64, string, bool).
// Other codecs round-trip the zero value.
func checkCodec(c checkpoint.Codec, t reflect.Type) error {
	if c == checkpoint.JSON {
		return checkJSONType(t, map[reflect.Type]bool{}, t.String())
	}
	v := reflect.New(t)
	b, err := c.Marshal(v.Interface())
	if err != nil {
		return err
	}
	return c.Unmarshal(b, reflect.New(t).Interface())
}

func checkJSONType(t reflect.Type, seen map[reflect.Type]bool, path string) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
			return nil
		}
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Func, reflect.Chan, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return fmt.Errorf("%s is a %s, which JSON cannot encode", path, t.Kind())
	case reflect.Interface:
		if t.NumMethod() == 0 {
			// any holds JSON-shaped data (maps, slices, strings, numbers)
			// and comes back as JSON's types: documented, not an error.
			return nil
		}
		return fmt.Errorf("%s is an interface (%s): JSON cannot decode into it; use a concrete type, or a type with UnmarshalJSON", path, t)
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return checkJSONType(t.Elem(), seen, path+"[]")
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			if !reflect.PointerTo(t.Key()).Implements(textUnmarshaler) {
				return fmt.Errorf("%s has map keys of type %s, which JSON cannot use", path, t.Key())
			}
		}
		return checkJSONType(t.Elem(), seen, path+"[key]")
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Tag.Get("json") == "-" {
				continue
			}
			if !f.IsExported() {
				if f.Anonymous {
					if err := checkJSONType(f.Type, seen, path); err != nil {
						return err
					}
					continue
				}
				return fmt.Errorf("%s.%s is unexported: JSON would drop it; export it or tag it `json:\"-\"` if it need not be saved", path, f.Name)
			}
			if err := checkJSONType(f.Type, seen, path+"."+f.Name); err != nil {
				return err
			}
		}
	}
	return nil
}
