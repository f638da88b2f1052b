package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// strictJSON is connect-go's JSON codec except that a field the message does not
// have is an error (invalid_argument) instead of being dropped: a misspelt
// "filter" would otherwise run the search without its filters. /api/kb/chat and
// /api/chat decode their bodies the same way.
type strictJSON struct{ name string }

// jsonCodecs replace connect-go's two JSON codecs on every handler.
func jsonCodecs() []connect.HandlerOption {
	return []connect.HandlerOption{
		connect.WithCodec(strictJSON{"json"}),
		connect.WithCodec(strictJSON{"json; charset=utf-8"}),
	}
}

func (c strictJSON) Name() string { return c.name }

func (strictJSON) IsBinary() bool { return false }

func (strictJSON) Marshal(message any) ([]byte, error) {
	m, ok := message.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T is not a protobuf message", message)
	}
	return protojson.Marshal(m)
}

func (c strictJSON) MarshalAppend(dst []byte, message any) ([]byte, error) {
	b, err := c.Marshal(message)
	return append(dst, b...), err
}

// MarshalStable compacts protojson's output, whose whitespace varies on purpose.
func (c strictJSON) MarshalStable(message any) ([]byte, error) {
	b, err := c.Marshal(message)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func (strictJSON) Unmarshal(data []byte, message any) error {
	m, ok := message.(proto.Message)
	if !ok {
		return fmt.Errorf("%T is not a protobuf message", message)
	}
	if len(data) == 0 {
		return errors.New("the request body is empty: send a JSON object")
	}
	if err := protojson.Unmarshal(data, m); err != nil {
		return protoJSONError("the request body", m, err)
	}
	return nil
}

// protoJSONText is protojson's error text: "proto: [syntax error ](line L:C): what".
// The library follows "proto:" with a space or a no-break space, at random, so
// that no one compares its text; only its parts are read here.
var protoJSONText = regexp.MustCompile(`^proto:[\s\x{00a0}]*(?:syntax error )?(?:\(line (\d+):(\d+)\): )?(.*)$`)

// protoJSONError words a protojson decode error for a person: the message as the
// API names it, what is wrong (the field by its JSON name) and where, without
// the library's prefix. subject is what held the JSON ("the request body").
func protoJSONError(subject string, m proto.Message, err error) error {
	what, where := err.Error(), ""
	if g := protoJSONText.FindStringSubmatch(what); g != nil {
		what = g[3]
		if g[1] != "" {
			where = fmt.Sprintf(" (line %s, column %s)", g[1], g[2])
		}
	}
	if what == "unexpected EOF" {
		what = "it ends before the JSON does"
	}
	return fmt.Errorf("%s is not valid JSON for %s: %s%s", subject, m.ProtoReflect().Descriptor().FullName(), what, where)
}
