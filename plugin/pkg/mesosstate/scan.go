package mesosstate

import (
	"errors"
	"fmt"
	"io"
)

// scanner reads a JSON body through a window it refills from the reader,
// so that a state of tens of megabytes is never held whole: only the
// value being read (from mark on) is kept across a refill. It knows the
// JSON grammar as encoding/json does (the same values accepted, the same
// nesting limit), so that a body is refused where json.Unmarshal refuses
// it, and tells a body cut short (io.EOF inside a value) from bad syntax.
type scanner struct {
	r io.Reader
	// buf[pos:end] are the bytes read and not yet scanned; buf[mark:pos]
	// the value being captured, when mark >= 0.
	buf            []byte
	pos, end, mark int
	// off is the body offset of buf[0], for the errors.
	off int64
	// eof: the reader has no more; err: it failed (not io.EOF).
	eof bool
	err error
	// key is the last key members read for its caller.
	key []byte
}

// scanBufSize is the window's size; it grows to the largest value
// captured (one task, a few kilobytes).
const scanBufSize = 64 << 10

// maxDepth is encoding/json's nesting limit: a body nested deeper is
// refused as it refuses it.
const maxDepth = 10000

// errCut: the body ends inside a value (see scanner.cut).
var errCut = errors.New("the body ends inside the JSON value")

func newScanner(r io.Reader, buf []byte) *scanner {
	if cap(buf) < scanBufSize {
		buf = make([]byte, scanBufSize)
	}
	return &scanner{r: r, buf: buf[:cap(buf)], mark: -1}
}

// fill reads more of the body, keeping buf[mark:] (or buf[pos:]); false
// when there is no more.
func (s *scanner) fill() bool {
	for !s.eof && s.err == nil {
		keep := s.pos
		if s.mark >= 0 {
			keep = s.mark
		}
		if keep > 0 {
			s.end = copy(s.buf, s.buf[keep:s.end])
			s.off += int64(keep)
			s.pos -= keep
			if s.mark >= 0 {
				s.mark -= keep
			}
		}
		if s.end == len(s.buf) {
			s.buf = append(s.buf, make([]byte, len(s.buf))...)
		}
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		switch {
		case err == io.EOF:
			s.eof = true
		case err != nil:
			s.err = err
		}
		if n > 0 {
			return true
		}
	}
	return false
}

// ensure tells whether n bytes from pos are in the window, reading more
// of the body if need be.
func (s *scanner) ensure(n int) bool {
	for s.end-s.pos < n {
		if !s.fill() {
			return false
		}
	}
	return true
}

// offset is the body offset of pos.
func (s *scanner) offset() int64 { return s.off + int64(s.pos) }

// cut is the error of a body that ended where more was due: the reader's
// own error if it failed, else errCut.
func (s *scanner) cut() error {
	if s.err != nil {
		return s.err
	}
	return errCut
}

// syntax is a syntax error at pos, as encoding/json words one.
func (s *scanner) syntax(what string) error {
	return fmt.Errorf("%w: invalid character %q %s at byte %d", ErrMalformed, s.buf[s.pos], what, s.offset())
}

// space skips white space and returns the next byte, not consumed; false
// at the end of the body.
func (s *scanner) space() (byte, bool) {
	for {
		for s.pos < s.end {
			switch c := s.buf[s.pos]; c {
			case ' ', '\t', '\r', '\n':
				s.pos++
			default:
				return c, true
			}
		}
		if !s.fill() {
			return 0, false
		}
	}
}

// next is the next byte after white space, or the error of a body that
// ends there.
func (s *scanner) next() (byte, error) {
	c, ok := s.space()
	if !ok {
		return 0, s.cut()
	}
	return c, nil
}

// expect consumes c, the next byte after white space.
func (s *scanner) expect(c byte, what string) error {
	got, err := s.next()
	if err != nil {
		return err
	}
	if got != c {
		return s.syntax(what)
	}
	s.pos++
	return nil
}

// value checks and skips one value; depth is the nesting of the object
// or array that holds it (0 for the body's value).
func (s *scanner) value(depth int) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	switch {
	case c == '{' || c == '[':
		if depth+1 > maxDepth {
			return s.syntax("exceeded max depth")
		}
		s.pos++
		if c == '{' {
			return s.members(depth+1, nil)
		}
		return s.elements(func() error { return s.value(depth + 1) })
	case c == '"':
		return s.str()
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.syntax("looking for beginning of value")
}

// members reads the members of an object whose '{' was consumed: member
// reads the value of each key (nil: check and skip it). key is the key's
// JSON text, quotes included, valid only until member returns.
func (s *scanner) members(depth int, member func(key []byte) error) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c == '}' {
		s.pos++
		return nil
	}
	for {
		if c != '"' {
			return s.syntax("looking for beginning of object key string")
		}
		if member != nil {
			// A key of the state's own objects, kept: the window may
			// move before member reads it.
			s.mark = s.pos
		}
		if err := s.str(); err != nil {
			return err
		}
		if member != nil {
			s.key = append(s.key[:0], s.buf[s.mark:s.pos]...)
			s.mark = -1
		}
		if err := s.expect(':', "after object key"); err != nil {
			return err
		}
		if member != nil {
			err = member(s.key)
		} else {
			err = s.value(depth)
		}
		if err != nil {
			return err
		}
		if c, err = s.next(); err != nil {
			return err
		}
		s.pos++
		switch c {
		case '}':
			return nil
		case ',':
		default:
			s.pos--
			return s.syntax("after object key:value pair")
		}
		if c, err = s.next(); err != nil {
			return err
		}
	}
}

// elements reads the elements of an array whose '[' was consumed, elem
// reading each.
func (s *scanner) elements(elem func() error) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c == ']' {
		s.pos++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		if c, err = s.next(); err != nil {
			return err
		}
		s.pos++
		switch c {
		case ']':
			return nil
		case ',':
		default:
			s.pos--
			return s.syntax("after array element")
		}
	}
}

// strSafe marks the bytes a string holds as they are: not its quote, not
// an escape, not a control character.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str checks and skips a string whose '"' is at pos.
func (s *scanner) str() error {
	s.pos++
	for {
		for s.pos < s.end && strSafe[s.buf[s.pos]] {
			s.pos++
		}
		if s.pos == s.end {
			if !s.fill() {
				return s.cut()
			}
			continue
		}
		switch s.buf[s.pos] {
		case '"':
			s.pos++
			return nil
		case '\\':
			if err := s.escape(); err != nil {
				return err
			}
		default:
			return s.syntax("in string literal")
		}
	}
}

// escape checks and skips the escape at pos.
func (s *scanner) escape() error {
	s.pos++
	if !s.ensure(1) {
		return s.cut()
	}
	switch s.buf[s.pos] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.pos++
		return nil
	case 'u':
		s.pos++
		for range 4 {
			if !s.ensure(1) {
				return s.cut()
			}
			if !isHex(s.buf[s.pos]) {
				return s.syntax("in \\u hexadecimal character escape")
			}
			s.pos++
		}
		return nil
	}
	return s.syntax("in string escape code")
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// peek is the byte at pos, reading more if need be; false at the end.
func (s *scanner) peek() (byte, bool) {
	if !s.ensure(1) {
		return 0, false
	}
	return s.buf[s.pos], true
}

// number checks and skips a number at pos: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	if c, _ := s.peek(); c == '-' {
		s.pos++
	}
	c, ok := s.peek()
	switch {
	case !ok:
		return s.cut()
	case c == '0':
		s.pos++
	case isDigit(c):
		s.digits()
	default:
		return s.syntax("in numeric literal")
	}
	if c, ok := s.peek(); ok && c == '.' {
		s.pos++
		if err := s.someDigits(); err != nil {
			return err
		}
	}
	if c, ok := s.peek(); ok && (c == 'e' || c == 'E') {
		s.pos++
		if c, ok := s.peek(); ok && (c == '+' || c == '-') {
			s.pos++
		}
		return s.someDigits()
	}
	return nil
}

// someDigits skips one digit or more.
func (s *scanner) someDigits() error {
	c, ok := s.peek()
	if !ok {
		return s.cut()
	}
	if !isDigit(c) {
		return s.syntax("in numeric literal")
	}
	s.digits()
	return nil
}

func (s *scanner) digits() {
	for {
		if c, ok := s.peek(); !ok || !isDigit(c) {
			return
		}
		s.pos++
	}
}

// literal checks and skips true, false or null at pos.
func (s *scanner) literal(word string) error {
	for i := range len(word) {
		if !s.ensure(1) {
			return s.cut()
		}
		if s.buf[s.pos] != word[i] {
			return s.syntax("in literal " + word)
		}
		s.pos++
	}
	return nil
}

// capture checks and skips one value, and returns its text: valid until
// the scanner reads on.
func (s *scanner) capture(depth int) ([]byte, error) {
	if _, err := s.next(); err != nil {
		return nil, err
	}
	s.mark = s.pos
	defer func() { s.mark = -1 }()
	if err := s.value(depth); err != nil {
		return nil, err
	}
	return s.buf[s.mark:s.pos], nil
}

// object returns the text of the object at pos (its '{' there), which
// holds at depth: found by its strings and brackets alone, not checked,
// for the caller to hand to json.Unmarshal, which checks it, or to know
// as a copy of text checked before. Where the body ends inside it, or it
// nests too deep, the object is read again by value, for the error
// encoding/json would give first. Valid until the scanner reads on.
func (s *scanner) object(depth int) ([]byte, error) {
	s.mark = s.pos
	defer func() { s.mark = -1 }()
	nest, inStr := 0, false
	for {
		for ; s.pos < s.end; s.pos++ {
			c := s.buf[s.pos]
			if inStr {
				switch c {
				case '"':
					inStr = false
				case '\\':
					if s.pos+1 == s.end && !s.fill() {
						return nil, s.recheck(depth)
					}
					s.pos++
				}
				continue
			}
			switch c {
			case '"':
				inStr = true
			case '{', '[':
				if nest++; depth+nest > maxDepth {
					return nil, s.recheck(depth)
				}
			case '}', ']':
				if nest--; nest == 0 {
					s.pos++
					return s.buf[s.mark:s.pos], nil
				}
			}
		}
		if !s.fill() {
			return nil, s.recheck(depth)
		}
	}
}

// recheck reads again by value the object object could not delimit, all
// of which the window holds from mark on, for its first error.
func (s *scanner) recheck(depth int) error {
	s.pos = s.mark
	if err := s.value(depth); err != nil {
		return err
	}
	return fmt.Errorf("%w: an object at byte %d", ErrMalformed, s.offset()) // not reached: object found no end
}
