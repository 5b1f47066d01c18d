package prebuilt

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Tool arguments are decoded on every call, and a model's arguments run to
// kilobytes (code, documents), so the common case is taken in one pass: the
// text is parsed once into the tree the validator reads, and the tree is
// assigned to the arguments struct without scanning the text again, sharing
// its strings. Anything outside the common case (a syntax error, invalid
// UTF-8, a type with its own UnmarshalJSON, a key matched only by case...)
// goes to encoding/json, so results and error messages are encoding/json's.

// parseArgs parses raw as one JSON value into the types encoding/json's
// Decoder gives with UseNumber: map[string]any, []any, string, json.Number,
// bool and nil. ok is false when raw is not something it takes on itself.
//
// With share, strings point into raw instead of being copied (see sharedArgs).
func parseArgs(raw []byte, share bool) (x any, ok bool) {
	p := argParser{b: raw, share: share}
	p.space()
	x, ok = p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	return x, p.i == len(p.b)
}

type argParser struct {
	b     []byte
	i     int
	share bool // strings may point into b
}

// maxArgDepth bounds nesting; deeper text goes to encoding/json.
const maxArgDepth = 1000

func (p *argParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *argParser) value(depth int) (any, bool) {
	if p.i >= len(p.b) || depth > maxArgDepth {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return true, p.word("true")
	case c == 'f':
		return false, p.word("false")
	case c == 'n':
		return nil, p.word("null")
	}
	return nil, false
}

func (p *argParser) word(w string) bool {
	if len(p.b)-p.i < len(w) || string(p.b[p.i:p.i+len(w)]) != w {
		return false
	}
	p.i += len(w)
	return true
}

func (p *argParser) object(depth int) (any, bool) {
	m := map[string]any{}
	ok := p.members(func(k string) bool {
		v, ok := p.value(depth + 1)
		m[k] = v
		return ok
	})
	if !ok {
		return nil, false
	}
	return m, true
}

// members parses the object at p.i (which starts with '{'), calling member
// with each key once p.i is at its value; member parses the value. It
// reports false on a syntax error or when member does.
func (p *argParser) members(member func(key string) bool) bool {
	p.i++ // {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return true
	}
	for {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return false
		}
		k, ok := p.strText()
		if !ok {
			return false
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return false
		}
		p.i++
		p.space()
		if !member(k) {
			return false
		}
		p.space()
		if p.i >= len(p.b) {
			return false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			p.space()
		case '}':
			p.i++
			return true
		default:
			return false
		}
	}
}

func (p *argParser) array(depth int) (any, bool) {
	p.i++ // [
	a := []any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return a, true
	}
	for {
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		p.space()
		if p.i >= len(p.b) {
			return nil, false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			p.space()
		case ']':
			p.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// plain marks the bytes a string can hold as they are: printable ASCII
// other than the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (p *argParser) str() (any, bool) {
	if s, ok := p.strText(); ok {
		return s, true
	}
	return "", false
}

// strText is str without the boxing: the string at p.i, which starts with
// a quote.
func (p *argParser) strText() (string, bool) {
	start := p.i + 1
	// Most strings hold no escape and no multi-byte character: find the
	// closing quote with IndexByte (vector instructions) and check the bytes
	// before it eight at a time; anything else takes the loop below.
	if q := bytes.IndexByte(p.b[start:], '"'); q >= 0 && asciiPlain(p.b[start:start+q]) && bytes.IndexByte(p.b[start:start+q], '\\') < 0 {
		p.i = start + q + 1
		return p.text(p.b[start : start+q]), true
	}
	j := start
	escaped, wide := false, false
	for {
		for j+8 <= len(p.b) && !special8(binary.LittleEndian.Uint64(p.b[j:])) {
			j += 8
		}
		for j < len(p.b) && plain[p.b[j]] {
			j++
		}
		if j >= len(p.b) {
			return "", false
		}
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			seg := p.b[start:j]
			if wide && !utf8.Valid(seg) {
				return "", false // encoding/json replaces bad bytes
			}
			if escaped {
				return unescape(seg)
			}
			return p.text(seg), true
		case c == '\\':
			escaped = true
			j += 2
		case c < 0x20:
			return "", false
		default:
			wide = true
			j++
		}
	}
}

// text returns seg as a string, sharing its bytes when the parser may.
func (p *argParser) text(seg []byte) string {
	if p.share && len(seg) > 0 {
		return unsafe.String(&seg[0], len(seg))
	}
	return string(seg)
}

// asciiPlain reports whether b holds printable ASCII only (its caller looks
// for quotes and backslashes with IndexByte).
func asciiPlain(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	le := binary.LittleEndian
	var acc uint64
	for ; len(b) >= 32; b = b[32:] {
		x0, x1, x2, x3 := le.Uint64(b), le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:])
		acc |= x0 | (x0 - ones*0x20) | x1 | (x1 - ones*0x20) | x2 | (x2 - ones*0x20) | x3 | (x3 - ones*0x20)
	}
	for ; len(b) >= 8; b = b[8:] {
		x := le.Uint64(b)
		acc |= x | (x - ones*0x20)
	}
	if acc&highs != 0 {
		return false // a control byte, a multi-byte character, or a borrow from one of them
	}
	for _, c := range b {
		if c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

// special8 reports whether any of the eight bytes in x may end a run of
// plain bytes: a quote, a backslash, a control byte or a byte of a
// multi-byte character. Borrows can flag a plain byte, but only above a
// byte that is truly special, which the byte loop then meets first.
func special8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := x ^ (ones * '"')
	b := x ^ (ones * '\\')
	return (x|(x-ones*0x20)&^x|(q-ones)&^q|(b-ones)&^b)&highs != 0
}

// unescape decodes the escapes of a string's body. Lone surrogates, which
// encoding/json replaces, are left to it.
func unescape(seg []byte) (string, bool) {
	var sb strings.Builder
	sb.Grow(len(seg))
	for i := 0; i < len(seg); {
		c := seg[i]
		if c != '\\' {
			k := i + 1
			for k < len(seg) && seg[k] != '\\' {
				k++
			}
			sb.Write(seg[i:k])
			i = k
			continue
		}
		if i+1 >= len(seg) {
			return "", false
		}
		switch seg[i+1] {
		case '"', '\\', '/':
			sb.WriteByte(seg[i+1])
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			r, ok := hex4(seg[i+2:])
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r >= 0xDC00 || i+1 >= len(seg) || seg[i] != '\\' || seg[i+1] != 'u' {
					return "", false
				}
				r2, ok := hex4(seg[i+2:])
				if !ok {
					return "", false
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", false
				}
				i += 6
			}
			sb.WriteRune(r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	return sb.String(), true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func (p *argParser) number() (any, bool) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return json.Number(p.b[start:p.i]), true
}

// assigner stores a parsed tree into a value of one Go type, as
// json.Unmarshal would store the text; it returns false, leaving the value
// partly set, on anything it does not take on itself.
type assigner func(x any, v reflect.Value) bool

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// assignerFor returns the assigner of t, or nil when values of t are left
// to encoding/json: interfaces, arrays, []byte, embedded structs, ",string"
// fields, and types that decode themselves.
func assignerFor(t reflect.Type) assigner {
	if decodesItself(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		return assignString
	case reflect.Bool:
		return assignBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return assignInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return assignUint
	case reflect.Float32, reflect.Float64:
		return floatAssigner(t.Bits())
	case reflect.Pointer:
		return pointerAssigner(t)
	case reflect.Slice:
		return sliceAssigner(t)
	case reflect.Map:
		return mapAssigner(t)
	case reflect.Struct:
		return structAssigner(t)
	}
	return nil
}

// decodesItself reports whether t or *t has its own JSON or text decoding,
// which encoding/json would call.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshalerType) || t.Implements(textUnmarshalerType) ||
		p.Implements(jsonUnmarshalerType) || p.Implements(textUnmarshalerType)
}

// The scalar assigners leave v as it is for a JSON null, as encoding/json
// does.

func assignString(x any, v reflect.Value) bool {
	switch x := x.(type) {
	case string:
		v.SetString(x)
		return true
	case nil:
		return true
	}
	return false
}

func assignBool(x any, v reflect.Value) bool {
	switch x := x.(type) {
	case bool:
		v.SetBool(x)
		return true
	case nil:
		return true
	}
	return false
}

func assignInt(x any, v reflect.Value) bool {
	if x == nil {
		return true
	}
	n, ok := x.(json.Number)
	if !ok {
		return false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || v.OverflowInt(i) {
		return false
	}
	v.SetInt(i)
	return true
}

func assignUint(x any, v reflect.Value) bool {
	if x == nil {
		return true
	}
	n, ok := x.(json.Number)
	if !ok {
		return false
	}
	u, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil || v.OverflowUint(u) {
		return false
	}
	v.SetUint(u)
	return true
}

func floatAssigner(bits int) assigner {
	return func(x any, v reflect.Value) bool {
		if x == nil {
			return true
		}
		n, ok := x.(json.Number)
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(string(n), bits)
		if err != nil || v.OverflowFloat(f) {
			return false
		}
		v.SetFloat(f)
		return true
	}
}

// The composite assigners set v to its zero value for a JSON null.

func pointerAssigner(t reflect.Type) assigner {
	elem := assignerFor(t.Elem())
	if elem == nil {
		return nil
	}
	return func(x any, v reflect.Value) bool {
		if x == nil {
			v.SetZero()
			return true
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return elem(x, v.Elem())
	}
}

func sliceAssigner(t reflect.Type) assigner {
	if t.Elem().Kind() == reflect.Uint8 {
		return nil // base64 text
	}
	elem := assignerFor(t.Elem())
	if elem == nil {
		return nil
	}
	return func(x any, v reflect.Value) bool {
		switch x := x.(type) {
		case nil:
			v.SetZero()
			return true
		case []any:
			s := reflect.MakeSlice(t, len(x), len(x))
			for i, e := range x {
				if !elem(e, s.Index(i)) {
					return false
				}
			}
			v.Set(s)
			return true
		}
		return false
	}
}

func mapAssigner(t reflect.Type) assigner {
	if t.Key().Kind() != reflect.String || t.Key().Implements(textUnmarshalerType) {
		return nil
	}
	elem := assignerFor(t.Elem())
	if elem == nil {
		return nil
	}
	return func(x any, v reflect.Value) bool {
		switch x := x.(type) {
		case nil:
			v.SetZero()
			return true
		case map[string]any:
			m := reflect.MakeMapWithSize(t, len(x))
			for k, e := range x {
				ev := reflect.New(t.Elem()).Elem()
				if !elem(e, ev) {
					return false
				}
				m.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), ev)
			}
			v.Set(m)
			return true
		}
		return false
	}
}

// structField is where a JSON key goes in a struct, and how.
type structField struct {
	index  int
	assign assigner
}

func structAssigner(t reflect.Type) assigner {
	fields, ok := structFields(t)
	if !ok {
		return nil
	}
	return func(x any, v reflect.Value) bool {
		switch x := x.(type) {
		case nil:
			return true
		case map[string]any:
			for k, e := range x {
				f, ok := fields[k]
				if !ok {
					return false // encoding/json matches keys ignoring case
				}
				if !f.assign(e, v.Field(f.index)) {
					return false
				}
			}
			return true
		}
		return false
	}
}

// structFields maps the JSON names of t's fields to the fields, or reports
// false when encoding/json's rules for t go beyond exact names: embedded
// structs, ",string" options, tag names it would not take, duplicates, and
// fields that have no assigner.
func structFields(t reflect.Type) (map[string]structField, bool) {
	fields := map[string]structField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil, false // promoted fields follow encoding/json's dominance rules
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",string,") {
			return nil, false
		}
		if name == "" {
			name = f.Name
		} else if !plainTagName(name) {
			return nil, false // encoding/json would fall back to the Go name
		}
		a := assignerFor(f.Type)
		if a == nil {
			return nil, false
		}
		if _, dup := fields[name]; dup {
			return nil, false
		}
		fields[name] = structField{i, a}
	}
	return fields, true
}

// plainTagName reports whether encoding/json takes name from a json tag as
// it is: letters, digits, and the punctuation it allows.
func plainTagName(name string) bool {
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case unicode.IsLetter(c) || unicode.IsDigit(c):
		default:
			return false
		}
	}
	return true
}
