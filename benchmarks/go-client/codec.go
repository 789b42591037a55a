package main

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// codec marshals the messages with the protobuf runtime the stubs were generated for
// (google.golang.org/protobuf). Debian's grpc 1.33 marshals through github.com/golang/protobuf,
// and bookworm's copy of that in /usr/share/gocode is 1.3.x, which predates the new runtime and
// panics on generated messages ("protobuf tag not enough fields"); forcing this codec on every
// call sidesteps it. The wire bytes are the same: both are the protobuf encoding.
type codec struct{}

func (codec) Marshal(v interface{}) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("codec: %T is not a protobuf message", v)
	}
	return proto.Marshal(m)
}

func (codec) Unmarshal(data []byte, v interface{}) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("codec: %T is not a protobuf message", v)
	}
	return proto.Unmarshal(data, m)
}

// Name is "proto": the content type on the wire stays application/grpc, as any CSI client sends.
func (codec) Name() string { return "proto" }
