package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/dgraph-io/badger/v4"
)

// listScan bounds the index entries one page of List examines on Badger:
// a filter that few holds pass ends a page early, with a cursor to go on,
// rather than reading every record in one request.
const listScan = 5000

var listPrefix = []byte("t/")

// listKey files a hold by the time it was made: "t/", Created in
// nanoseconds (20 digits, so keys sort by time; 0 when it has none), "/",
// its id. It lives as long as the hold's record.
func listKey(h *Hold) []byte {
	return fmt.Appendf(bytes.Clone(listPrefix), "%020d/%s", max(createdNanos(h), 0), h.ID)
}

func cursorKey(c listCursor) []byte {
	return fmt.Appendf(bytes.Clone(listPrefix), "%020d/%s", max(c.created, 0), c.id)
}

// List walks the holds by the time they were made, newest first, from the
// cursor, reading each record and keeping those the filter passes; it
// examines at most listScan entries per page.
func (b *Badger) List(ctx context.Context, f HoldFilter, cursor string, limit int) (HoldPage, error) {
	c, from, err := listArgs(f, cursor, limit)
	if err != nil {
		return HoldPage{}, err
	}
	now := b.now()
	var page HoldPage
	err = b.view(ctx, func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: listPrefix, Reverse: true})
		defer it.Close()
		start := append(bytes.Clone(listPrefix), 0xff)
		if from {
			start = cursorKey(c)
		}
		var last listCursor
		examined := 0
		for it.Seek(start); it.Valid(); it.Next() {
			key := it.Item().Key()
			entry, ok := parseListKey(key)
			if !ok || from && bytes.Equal(key, start) {
				continue
			}
			if len(page.Holds) == limit || examined == listScan {
				page.Next = last.encode()
				return nil
			}
			examined++
			last = entry
			h, _, err := b.getHold(txn, entry.id)
			if errors.Is(err, ErrNotFound) {
				continue // its record went first
			}
			if err != nil {
				return err
			}
			if f.match(&h, now) {
				page.Holds = append(page.Holds, h)
			}
		}
		return nil
	})
	if err != nil {
		return HoldPage{}, err
	}
	return page, nil
}

// parseListKey reads a list key's time and id.
func parseListKey(key []byte) (listCursor, bool) {
	rest := key[len(listPrefix):]
	slash := bytes.IndexByte(rest, '/')
	if slash < 0 {
		return listCursor{}, false
	}
	n, err := strconv.ParseInt(string(rest[:slash]), 10, 64)
	if err != nil {
		return listCursor{}, false
	}
	return listCursor{created: n, id: string(rest[slash+1:])}, true
}
