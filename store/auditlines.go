package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
)

// maxAuditLine bounds one line VerifyLines reads: an entry holds at most
// a card's rows, far below it.
const maxAuditLine = 4 << 20

// VerifyLines checks an export (JSON Lines, each an AuditEntry.Line,
// then the export's end line, ExportEnd.Line) on its own, without the
// store: each line's hash covers its body, each entry's seq follows the
// one before, each prev is the hash of the line before, and the end line
// is there, last, and names the count, the last seq and the last hash of
// the entries before it: an export cut at its tail is broken. An export
// of a time range starts anywhere in the chain, so its first line's prev
// is taken as given; the end line's head (the chain's head when it was
// written) is what to compare with a head kept elsewhere. The report's
// From and To are the first and last seq read, Head the last line's seq
// and hash. An error is returned only when r cannot be read.
func VerifyLines(r io.Reader) (AuditReport, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxAuditLine)
	var rep AuditReport
	var prevSeq uint64
	var prev []byte
	brk := func(seq uint64, format string, args ...any) (AuditReport, error) {
		rep.Broken = &AuditBreak{Seq: seq, Problem: fmt.Sprintf(format, args...)}
		return rep, nil
	}
	line := 0
	var end *ExportEnd
	for sc.Scan() {
		line++
		text := sc.Bytes()
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		if end != nil {
			return brk(prevSeq+1, "line %d follows the export's end line", line)
		}
		if bytes.HasPrefix(text, []byte(exportEndPrefix)) {
			var w struct {
				Export *ExportEnd `json:"export"`
			}
			if err := json.Unmarshal(text, &w); err != nil || w.Export == nil {
				return brk(prevSeq+1, "line %d is not the export's end line: %v", line, err)
			}
			end = w.Export
			continue
		}
		body, hash, ok := splitLine(text)
		if !ok {
			return brk(prevSeq+1, "line %d is not an audit entry (no hash at its end)", line)
		}
		e := AuditEntry{Body: body, Hash: hash}
		r, err := e.Record()
		if err != nil {
			return brk(prevSeq+1, "line %d is not an audit entry: %v", line, err)
		}
		if sum := sha256.Sum256(body); !equalBytes(sum[:], hash) {
			return brk(r.Seq, "its content does not match its hash (the entry was edited)")
		}
		if rep.Entries > 0 {
			if r.Seq != prevSeq+1 {
				return brk(prevSeq+1, "missing: the entry after seq %d is seq %d (an entry was removed or moved)", prevSeq, r.Seq)
			}
			if r.Prev != hex.EncodeToString(prev) {
				return brk(r.Seq, "its prev is not the hash of seq %d (an entry before it was edited, removed or reordered)", prevSeq)
			}
		} else {
			rep.From = r.Seq
		}
		prevSeq, prev = r.Seq, hash
		rep.Entries++
	}
	if err := sc.Err(); err != nil {
		return AuditReport{}, fmt.Errorf("reading audit lines: %w", err)
	}
	rep.To = prevSeq
	rep.Head = AuditHead{Seq: prevSeq, Hash: prev}
	switch {
	case end == nil:
		return brk(prevSeq+1, "missing: the export ends after seq %d without its end line (its tail was cut)", prevSeq)
	case end.Entries != rep.Entries || end.LastSeq != prevSeq || end.LastHash != hex.EncodeToString(prev):
		return brk(prevSeq+1, "missing: the export's end line records %d entries, the last seq %d, but %d entries to seq %d precede it (its tail was cut)",
			end.Entries, end.LastSeq, rep.Entries, prevSeq)
	}
	return rep, nil
}

// ExportEnd is an export's last line: what it holds and the chain's head
// when it was written. Without it, or when it disagrees with the entries
// before it, VerifyLines reports the export cut.
type ExportEnd struct {
	Entries  int    `json:"entries"`
	LastSeq  uint64 `json:"last_seq"`  // 0 when the export holds no entry
	LastHash string `json:"last_hash"` // hex; "" when the export holds no entry
	HeadSeq  uint64 `json:"head_seq"`  // the chain's head when the export was written
	HeadHash string `json:"head_hash"`
}

// exportEndPrefix starts an end line, and no entry's line (which starts
// with its seq).
const exportEndPrefix = `{"export":`

// Line is the end line, a JSON object of one member, "export".
func (e ExportEnd) Line() []byte {
	b, _ := json.Marshal(struct {
		Export ExportEnd `json:"export"`
	}{e})
	return append(b, '\n')
}

// splitLine takes a line apart into the body its hash covers and the
// hash: Line writes `,"hash":"<64 hex>"}` at the end of the body.
func splitLine(line []byte) (body, hash []byte, ok bool) {
	line = bytes.TrimRight(line, "\r")
	const suffixLen = len(`,"hash":""}`) + 2*sha256.Size
	if len(line) < suffixLen+2 {
		return nil, nil, false
	}
	tail := line[len(line)-suffixLen:]
	if !bytes.HasPrefix(tail, []byte(`,"hash":"`)) || !bytes.HasSuffix(tail, []byte(`"}`)) {
		return nil, nil, false
	}
	hash, err := hex.DecodeString(string(tail[len(`,"hash":"`) : len(tail)-2]))
	if err != nil {
		return nil, nil, false
	}
	body = append(bytes.Clone(line[:len(line)-suffixLen]), '}')
	return body, hash, true
}
