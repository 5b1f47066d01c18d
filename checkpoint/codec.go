package checkpoint

import "encoding/json"

// Codec turns channel values into bytes and back. The graph encodes every
// channel value, write and Send argument with its Codec before a Saver sees
// it. JSON is the default; plug another (a faster JSON, msgpack, encryption
// over JSON) by implementing these two methods and passing it to the graph
// when compiling. A Codec must round-trip every state type exactly.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSON is the default Codec: encoding/json.
var JSON Codec = jsonCodec{}

type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
