package mesosstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// unmarshalState is what Decode was before the Decoder: json.Unmarshal of
// the whole body into a State, its failures told apart by a json.Decoder.
// The tests hold every way of reading a state to it: encoding/json's own
// reading of the struct tags.
func unmarshalState(body []byte) (*State, error) {
	var s *State
	if err := json.Unmarshal(body, &s); err != nil {
		return nil, classifyUnmarshal(body, err)
	}
	if s == nil {
		return nil, ErrNotObject
	}
	if s.Leader == "" {
		return nil, ErrNoLeader
	}
	if _, err := ParsePID(s.Leader); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadLeader, err)
	}
	return s, nil
}

// classifyUnmarshal turns json.Unmarshal's error on body into one of the
// package's, reading body again with a json.Decoder, which stops at the
// end of the first value and so tells an incomplete value from a
// complete one followed by more data.
func classifyUnmarshal(body []byte, err error) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return ErrEmpty
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage
	switch derr := dec.Decode(&v); {
	case errors.Is(derr, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the body ends inside the JSON value", ErrTruncated)
	case derr != nil:
		return fmt.Errorf("%w: %w", ErrMalformed, derr)
	case trimmed[0] != '{':
		return ErrNotObject
	}
	if _, terr := dec.Token(); terr != io.EOF {
		return fmt.Errorf("%w at byte %d", ErrTrailingData, dec.InputOffset())
	}
	return fmt.Errorf("%w: %w", ErrMalformed, err)
}
