package mesosmaster

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
)

// partSize is the size of a wire buffer's parts: the most a body wastes,
// and what a body of unknown length grows by.
const partSize = 256 << 10

// wireBuf holds a response's bytes as they came, in parts of partSize
// (the last one maybe shorter): a body of unknown length grows without
// the copies, and the doubled capacity, of one contiguous buffer. The
// parts are kept between polls and reused.
type wireBuf struct {
	parts [][]byte
	n     int64
}

// readFrom replaces the buffer's content with r's bytes, up to limit;
// sizeHint is the Content-Length, or -1. Parts not needed this time are
// let go, so that a state that shrank gives its room back.
func (w *wireBuf) readFrom(r io.Reader, limit, sizeHint int64) error {
	w.n = 0
	used := 0
	for {
		if used == len(w.parts) {
			size := int64(partSize)
			if sizeHint >= 0 && sizeHint-w.n < size {
				size = sizeHint - w.n + 1 // EOF is met without another part
			}
			w.parts = append(w.parts, make([]byte, 0, size))
		}
		p := w.parts[used][:0]
		k, err := io.ReadFull(r, p[:cap(p)])
		w.parts[used] = p[:k]
		w.n += int64(k)
		used++
		if w.n > limit {
			w.drop()
			return fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, limit)
		}
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			clear(w.parts[used:])
			w.parts = w.parts[:used]
			return nil
		case err != nil:
			w.drop()
			return fmt.Errorf("read state: %w", err)
		}
	}
}

// drop lets every part go.
func (w *wireBuf) drop() {
	clear(w.parts)
	w.parts, w.n = w.parts[:0], 0
}

// sum hashes the content.
func (w *wireBuf) sum(seed maphash.Seed) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, p := range w.parts {
		_, _ = h.Write(p)
	}
	return h.Sum64()
}

// reader reads the content.
func (w *wireBuf) reader() io.Reader {
	readers := make([]io.Reader, 0, len(w.parts))
	for _, p := range w.parts {
		readers = append(readers, bytes.NewReader(p))
	}
	return io.MultiReader(readers...)
}

// body reads the state out of the content, decompressing it as it goes
// when encoding is gzip: the whole decompressed state is never held.
// Past limit decompressed bytes, a read fails with ErrBodyTooLarge.
func (w *wireBuf) body(encoding string, limit int64) (io.Reader, error) {
	if encoding != "gzip" {
		return w.reader(), nil
	}
	zr, err := gzip.NewReader(w.reader())
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	return &limitedReader{r: gunzipErrors{zr}, left: limit}, nil
}

// gunzipErrors says where a decompression error comes from.
type gunzipErrors struct{ r io.Reader }

func (g gunzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("gunzip: %w", err)
	}
	return n, err
}

// limitedReader fails with ErrBodyTooLarge, rather than ending quietly as
// io.LimitReader does, when r holds more than left bytes.
type limitedReader struct {
	r    io.Reader
	left int64
	read int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, err := l.r.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, l.read)
	}
	p = p[:min(int64(len(p)), l.left)]
	n, err := l.r.Read(p)
	l.left -= int64(n)
	l.read += int64(n)
	return n, err
}
