package mesosschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// decodeState reads a /master/state body from r as mesosstate.Decode
// reads it from bytes, to the same State and the same errors, without
// holding the body: json.Decoder buffers each value it decodes whole, so
// the state is walked token by token down to its tasks and agents, which
// are decoded one at a time, and every field DNS does not read is skipped
// a token at a time (a master's completed_tasks alone can be most of the
// body). What it holds is the State and one task's JSON.
func decodeState(r io.Reader) (*mesosstate.State, error) {
	d := &stateDecoder{in: &countingReader{r: r}}
	d.dec = json.NewDecoder(d.in)
	st, err := d.state()
	if err != nil {
		return nil, d.classify(d.drain(err))
	}
	if st.Leader == "" {
		return nil, mesosstate.ErrNoLeader
	}
	if _, err := mesosstate.ParsePID(st.Leader); err != nil {
		return nil, fmt.Errorf("%w: %w", mesosstate.ErrBadLeader, err)
	}
	return st, nil
}

// stateDecoder walks one state.
type stateDecoder struct {
	in  *countingReader
	dec *json.Decoder
	// depth is how many objects and arrays are open: after a type error,
	// whether the rest of the body is whole.
	depth int
}

// token reads the next token, counting the objects and arrays open.
func (d *stateDecoder) token() (json.Token, error) {
	tok, err := d.dec.Token()
	switch tok {
	case json.Delim('{'), json.Delim('['):
		d.depth++
	case json.Delim('}'), json.Delim(']'):
		d.depth--
	}
	return tok, err
}

// countingReader counts the bytes read, and tells whether any was not
// white space: an empty body from a truncated one.
type countingReader struct {
	r        io.Reader
	n        int64
	nonSpace bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if !c.nonSpace && strings.TrimLeft(string(p[:n]), " \t\r\n") != "" {
		c.nonSpace = true
	}
	return n, err
}

// errNotObject: the body's value is not an object.
var errNotObject = mesosstate.ErrNotObject

// state reads the whole body: one object, then nothing but white space.
func (d *stateDecoder) state() (*mesosstate.State, error) {
	tok, err := d.token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		if err := d.skipValue(tok); err != nil {
			return nil, err
		}
		return nil, errNotObject
	}
	st := &mesosstate.State{}
	err = d.object(func(key string) error {
		switch {
		case strings.EqualFold(key, "frameworks"):
			st.Frameworks = nil
			return d.array(func() error {
				f, err := d.framework()
				st.Frameworks = append(st.Frameworks, f)
				return err
			})
		case strings.EqualFold(key, "slaves"):
			return decodeEach(d, &st.Slaves)
		case strings.EqualFold(key, "leader"):
			return d.dec.Decode(&st.Leader)
		case strings.EqualFold(key, "leader_info"):
			return d.dec.Decode(&st.LeaderInfo)
		case strings.EqualFold(key, "pid"):
			return d.dec.Decode(&st.PID)
		case strings.EqualFold(key, "hostname"):
			return d.dec.Decode(&st.Hostname)
		}
		return d.skip()
	})
	if err != nil {
		return nil, err
	}
	if _, err := d.token(); err != io.EOF {
		// Whatever follows, even a value cut short, is data after the state.
		if err == nil || isSyntax(err) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w at byte %d", mesosstate.ErrTrailingData, d.dec.InputOffset())
		}
		return nil, err
	}
	return st, nil
}

// framework reads one framework, its tasks one at a time; a null one is
// zero, as json.Unmarshal leaves it.
func (d *stateDecoder) framework() (mesosstate.Framework, error) {
	var f mesosstate.Framework
	tok, err := d.token()
	if err != nil || tok == nil {
		return f, err
	}
	if tok != json.Delim('{') {
		return f, d.typeError(tok, "a framework object")
	}
	return f, d.object(func(key string) error {
		switch {
		case strings.EqualFold(key, "tasks"):
			return decodeEach(d, &f.Tasks)
		case strings.EqualFold(key, "id"):
			return d.dec.Decode(&f.ID)
		case strings.EqualFold(key, "name"):
			return d.dec.Decode(&f.Name)
		case strings.EqualFold(key, "hostname"):
			return d.dec.Decode(&f.Hostname)
		case strings.EqualFold(key, "pid"):
			return d.dec.Decode(&f.PID)
		case strings.EqualFold(key, "active"):
			return d.dec.Decode(&f.Active)
		}
		return d.skip()
	})
}

// object reads the members of an object whose "{" was read, calling
// member with each key to read its value.
func (d *stateDecoder) object(member func(key string) error) error {
	for d.dec.More() {
		tok, err := d.token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return d.typeError(tok, "a key")
		}
		if err := member(key); err != nil {
			return err
		}
	}
	_, err := d.token() // "}"
	return err
}

// array reads an array (or null) element by element with elem.
func (d *stateDecoder) array(elem func() error) error {
	tok, err := d.token()
	if err != nil || tok == nil {
		return err
	}
	if tok != json.Delim('[') {
		return d.typeError(tok, "an array")
	}
	for d.dec.More() {
		if err := elem(); err != nil {
			return err
		}
	}
	_, err = d.token() // "]"
	return err
}

// skip passes over the next value, a token at a time.
func (d *stateDecoder) skip() error {
	tok, err := d.token()
	if err != nil {
		return err
	}
	return d.skipValue(tok)
}

// skipValue passes over the rest of the value tok begins.
func (d *stateDecoder) skipValue(tok json.Token) error {
	depth := 0
	for {
		if delim, ok := tok.(json.Delim); ok {
			if delim == '{' || delim == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
		var err error
		if tok, err = d.token(); err != nil {
			return err
		}
	}
}

// drain reads the rest of the body after a value of the wrong type, for
// the error json.Unmarshal would give: it checks the whole body's syntax
// before it decodes, so a truncated body, bad syntax or trailing data
// are reported before a wrong type.
func (d *stateDecoder) drain(err error) error {
	var typ *json.UnmarshalTypeError
	if !errors.As(err, &typ) && !errors.Is(err, errWrongType) {
		return err
	}
	for d.depth > 0 {
		if _, terr := d.token(); terr != nil {
			return terr
		}
	}
	switch _, terr := d.token(); {
	case terr == io.EOF:
		return err
	case terr == nil || isSyntax(terr) || errors.Is(terr, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w at byte %d", mesosstate.ErrTrailingData, d.dec.InputOffset())
	default:
		return terr // the reader's
	}
}

// errWrongType marks typeError's errors, for drain.
var errWrongType = errors.New("wrong type")

// typeError is a value of the wrong type, as json.Unmarshal reports one.
func (d *stateDecoder) typeError(tok json.Token, want string) error {
	return fmt.Errorf("%w: %w: %v at byte %d where %s belongs", mesosstate.ErrMalformed, errWrongType, tok, d.dec.InputOffset(), want)
}

// classify sorts a failure into mesosstate's errors, as Decode does.
func (d *stateDecoder) classify(err error) error {
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, errNotObject), errors.Is(err, mesosstate.ErrMalformed), errors.Is(err, mesosstate.ErrTrailingData):
		return err
	case err == io.EOF && !d.in.nonSpace:
		return mesosstate.ErrEmpty
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the body ends, at %d bytes, inside the JSON value", mesosstate.ErrTruncated, d.dec.InputOffset())
	case isSyntax(err), errors.As(err, &typ):
		return fmt.Errorf("%w: %w", mesosstate.ErrMalformed, err)
	}
	return err // the reader's: the body over its limit, a broken gzip stream
}

func isSyntax(err error) bool {
	var syntax *json.SyntaxError
	return errors.As(err, &syntax)
}

// decodeEach reads a JSON array into *out one element at a time, so that
// the array is never held as text (out is emptied first, as a repeated key
// replaces the earlier value).
func decodeEach[T any](d *stateDecoder, out *[]T) error {
	*out = nil
	return d.array(func() error {
		var v T
		err := d.dec.Decode(&v)
		*out = append(*out, v)
		return err
	})
}
