package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/invopop/jsonschema"
)

// ResponseFormat asks a model to answer with one JSON value matching Schema
// instead of free text. Adapters send it as the API's structured output:
// OpenAI's response_format of type json_schema, Anthropic's
// output_config.format. Build one from a Go type with NewOutput.
type ResponseFormat struct {
	// Name identifies the format to the API: 1 to 64 letters, digits, '_'
	// or '-'.
	Name string
	// Description tells the model what the answer is for.
	Description string
	// Schema is a JSON schema object; its root must be an object.
	Schema json.RawMessage
	// Strict asks the API to constrain generation to the schema, which it
	// allows only when every object lists all its properties as required and
	// forbids others.
	Strict bool
}

var formatName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ErrInvalidOutput reports an answer that does not match the response
// format it was asked for.
var ErrInvalidOutput = errors.New("model: the answer does not match its response format")

// OutputError lists what is wrong with a structured answer, each problem
// naming the field and what it must be, so that the caller, or the model
// when given Feedback, can correct it. It matches ErrInvalidOutput with
// errors.Is.
type OutputError struct {
	// Format is the response format's name.
	Format string
	// Problems are the answer's faults in a stable order.
	Problems []string
	// Content is the answer's text as the model gave it.
	Content string
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("model: the answer is not a valid %q: %s", e.Format, strings.Join(e.Problems, "; "))
}

// Is makes errors.Is(err, ErrInvalidOutput) true.
func (e *OutputError) Is(target error) bool { return target == ErrInvalidOutput }

// Feedback returns a user message telling the model what was wrong with its
// answer and asking for a corrected one. Sent after the faulty answer, it is
// how an agent retries a structured answer.
func (e *OutputError) Feedback() Message {
	return User(fmt.Sprintf("Your answer is not a valid %q: %s. Answer again with only one JSON object that matches the schema.",
		e.Format, strings.Join(e.Problems, "; ")))
}

// Output is a structured answer of Go type T: the response format to put in
// a Request, and the decoder that checks the answer against it. It is safe
// for concurrent use.
type Output[T any] struct {
	format ResponseFormat
	schema *jsonschema.Schema
}

// NewOutput returns the structured answer of type T, which must be a struct
// (see SchemaFor for how its schema is made). name identifies the format to
// the API; description, which may be empty, tells the model what the answer
// is for.
//
// The format is strict when T allows it: every field of every object is then
// listed as required, as strict mode demands, so the model always writes
// every field and Decode requires them. A map field makes strict mode
// impossible; the format is then sent without it and Decode still checks the
// answer against the schema.
func NewOutput[T any](name, description string) (*Output[T], error) {
	if !formatName.MatchString(name) {
		return nil, fmt.Errorf("model: response format name %q: use 1 to 64 letters, digits, '_' or '-'", name)
	}
	s, err := SchemaFor(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	strict := strictable(s)
	if strict {
		strictify(s)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("model: encode the schema of %v: %w", reflect.TypeFor[T](), err)
	}
	return &Output[T]{format: ResponseFormat{Name: name, Description: description, Schema: raw, Strict: strict}, schema: s}, nil
}

// Format returns the response format to set as Request.ResponseFormat. Each
// call returns a new copy.
func (o *Output[T]) Format() *ResponseFormat {
	f := o.format
	f.Schema = bytes.Clone(f.Schema)
	return &f
}

// Decode checks that m, a model's answer, holds one JSON object matching the
// schema and returns it as a T. An answer that does not is an *OutputError
// listing every problem found. A Markdown code fence around the JSON, which
// some models add when not held to the schema, is ignored.
func (o *Output[T]) Decode(m Message) (T, error) {
	var zero T
	fail := func(problems ...string) (T, error) {
		return zero, &OutputError{Format: o.format.Name, Problems: problems, Content: m.Content}
	}
	if m.HasToolCalls() {
		return fail("the answer asks for tool calls instead of giving the result")
	}
	text := unfence(m.Content)
	if text == "" {
		return fail("the answer is empty")
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return fail(fmt.Sprintf("the answer is not JSON (%v): %s", err, brief(text)))
	}
	if dec.More() {
		return fail("the answer has text after its JSON value")
	}
	if problems := conform(o.schema, x); len(problems) > 0 {
		return fail(problems...)
	}
	var v T
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fail(fmt.Sprintf("field %q: %s does not fit %v", te.Field, te.Value, te.Type))
		}
		return fail(err.Error())
	}
	return v, nil
}

// unfence returns text without surrounding space and without a Markdown code
// fence around it.
func unfence(text string) string {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "```") || !strings.HasSuffix(text, "```") || len(text) < 6 {
		return text
	}
	body := text[3 : len(text)-3]
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		body = body[i+1:] // the fence's language tag
	} else {
		return text
	}
	return strings.TrimSpace(body)
}

// strictable reports whether s can be held strictly: an object with
// open-ended keys (a Go map) cannot.
func strictable(s *jsonschema.Schema) bool {
	if s == nil || s == jsonschema.TrueSchema || s == jsonschema.FalseSchema {
		return true
	}
	if s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties != jsonschema.FalseSchema {
		return false
	}
	for _, sub := range subschemas(s) {
		if !strictable(sub) {
			return false
		}
	}
	return true
}

// strictify makes every object of s list all its properties as required and
// forbid others.
func strictify(s *jsonschema.Schema) {
	if s == nil || s == jsonschema.TrueSchema || s == jsonschema.FalseSchema {
		return
	}
	if s.Type == "object" {
		s.AdditionalProperties = jsonschema.FalseSchema
		s.Required = s.Required[:0]
		if s.Properties != nil {
			for p := s.Properties.Oldest(); p != nil; p = p.Next() {
				s.Required = append(s.Required, p.Key)
			}
		}
	}
	for _, sub := range subschemas(s) {
		strictify(sub)
	}
}

func subschemas(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	if s.Properties != nil {
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			out = append(out, p.Value)
		}
	}
	if s.Items != nil {
		out = append(out, s.Items)
	}
	return append(append(out, s.AnyOf...), s.OneOf...)
}
