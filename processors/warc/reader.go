package warc

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// countingReader counts the bytes taken from a bufio.Reader; it is an io.ByteReader,
// so gzip reads members through it without buffering ahead, and the count is where
// each member ends.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// Reader reads the records of a WARC file written one gzip member per record (plain,
// uncompressed WARC is read too).
type Reader struct {
	cr   *countingReader
	zr   *gzip.Reader
	gzip bool
	end  int64 // offset just past the last whole record read
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) (*Reader, error) {
	cr := &countingReader{r: bufio.NewReaderSize(r, 64<<10)}
	head, err := cr.r.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("warc: read: %w", err)
	}
	return &Reader{cr: cr, gzip: len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b}, nil
}

// Offset is the offset just past the last whole record Next returned.
func (r *Reader) Offset() int64 { return r.end }

// Next returns the next record, io.EOF after the last one, or an error for a record cut
// short or malformed (a torn tail: Offset says where the good part ends).
func (r *Reader) Next() (*Record, error) {
	if _, err := r.cr.r.Peek(1); errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	var src io.Reader = r.cr.r
	if r.gzip {
		var err error
		if r.zr == nil {
			r.zr, err = gzip.NewReader(r.cr)
		} else {
			err = r.zr.Reset(r.cr)
		}
		if err != nil {
			return nil, fmt.Errorf("warc: gzip member at %d: %w", r.end, err)
		}
		r.zr.Multistream(false)
		src = r.zr
	} else {
		src = r.cr
	}
	br := bufio.NewReader(src)
	rec, err := readRecord(br)
	if err != nil {
		return nil, fmt.Errorf("warc: record at %d: %w", r.end, err)
	}
	if r.gzip {
		// The member must end cleanly (its trailer checked) for the record to count.
		if _, err := io.Copy(io.Discard, br); err != nil {
			return nil, fmt.Errorf("warc: gzip member at %d: %w", r.end, err)
		}
	}
	r.end = r.cr.n
	return rec, nil
}

// readRecord reads one record: version line, header fields, block, two CRLFs.
func readRecord(br *bufio.Reader) (*Record, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("version line: %w", errUnexpected(err))
	}
	if !strings.HasPrefix(line, "WARC/1.") {
		return nil, fmt.Errorf("not a WARC record: %q", strings.TrimSpace(line))
	}
	rec := &Record{Header: map[string]string{}}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("header: %w", errUnexpected(err))
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("malformed header line %q", line)
		}
		rec.Header[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	n, err := strconv.ParseInt(rec.Header[FieldContentLength], 10, 64)
	if err != nil || n < 0 || n > 1<<31 {
		return nil, fmt.Errorf("bad Content-Length %q", rec.Header[FieldContentLength])
	}
	delete(rec.Header, FieldContentLength)
	rec.Block = make([]byte, n)
	if _, err := io.ReadFull(br, rec.Block); err != nil {
		return nil, fmt.Errorf("block: %w", errUnexpected(err))
	}
	tail := make([]byte, 4)
	if _, err := io.ReadFull(br, tail); err != nil || !bytes.Equal(tail, []byte("\r\n\r\n")) {
		return nil, fmt.Errorf("record not ended by two CRLFs: %w", errUnexpected(err))
	}
	return rec, nil
}

func errUnexpected(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
