package gate

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/language"

	"github.com/toolgate/toolgate/store"
)

// The inbox: everything waiting for one person's answer, in their tenant —
// their own cards and forms and the cards they may answer as an approver —
// newest first, paged. It reads two indexes, each keyed by the whole
// identity it stands for: the person's own steps (inboxKey: tenant and
// owner), filed when a step is stored, and their tenant's steps that have
// approvers (approvalsKey). Each step is read again and each hold shown
// only where rightsOn lets this person see it now. Steps with nothing
// waiting any more are taken off the index they were found in as they are
// read, so an index holds little more than what waits. Steps stored before
// the inbox existed are not on the person's own index: they show once
// they are gone (within their TTL).

// Inbox page sizes.
const (
	InboxPageSize    = 25  // the default
	MaxInboxPageSize = 100 // the most one page holds
)

// InboxPage is one page of a person's inbox.
type InboxPage struct {
	// Waiting are newest first (by Created, then hold id).
	Waiting []WaitingHold `json:"waiting"`
	// Next is the cursor of the next (older) page; "" when there is none.
	Next string `json:"next,omitempty"`
	// Now is when the inbox was read, on the gate's clock: how long each
	// hold has waited and how long it has left are told from it.
	Now time.Time `json:"now"`
}

// ErrCursor: an inbox cursor this gate did not give (400).
var ErrCursor = errors.New("not an inbox cursor")

// inboxKey files the steps of one person's own conversations, (tenant,
// owner), that wait for their answer.
func inboxKey(p Person) string {
	return indexKey("inbox", p, "waiting")
}

// fileInbox files a step, about to be stored, on its owner's inbox when
// a hold of it waits for them (in the hold's Filed: Put files it with the
// step).
func (g *Gate) fileInbox(holds []store.Hold) {
	for i := range holds {
		h := &holds[i]
		if h.State != store.Waiting || h.Kind == store.KindTicket || h.Answer == "refused" || h.Owner == "" || primaryOf(*h) != "" {
			continue
		}
		h.Filed = append(h.Filed, inboxKey(Person{Tenant: h.Tenant, Owner: h.Owner}))
		return
	}
}

// inboxCursor is a place in the inbox: the last hold of a page.
type inboxCursor struct {
	created int64
	id      string
}

func (c inboxCursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.created, 10) + "." + c.id))
}

func decodeInboxCursor(s string) (inboxCursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return inboxCursor{}, ErrCursor
	}
	n, id, ok := strings.Cut(string(b), ".")
	created, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || id == "" || len(id) > 64 {
		return inboxCursor{}, ErrCursor
	}
	return inboxCursor{created: created, id: id}, nil
}

func unixNano(n int64) time.Time { return time.Unix(0, n) }

// newer orders the inbox: newest first, then by hold id (descending).
func newer(a, b WaitingHold) int {
	if c := b.Created.Compare(a.Created); c != 0 {
		return c
	}
	return cmp.Compare(b.Hold, a.Hold)
}

// Inbox lists what waits for who's answer in their tenant, newest first:
// limit holds (InboxPageSize when 0, at most MaxInboxPageSize) after
// cursor ("" for the first page, else a page's Next). lang is an
// Accept-Language value.
func (g *Gate) Inbox(ctx context.Context, who Person, lang, cursor string, limit int) (InboxPage, error) {
	page := InboxPage{Waiting: []WaitingHold{}}
	if limit <= 0 {
		limit = InboxPageSize
	}
	limit = min(limit, MaxInboxPageSize)
	var after *inboxCursor
	if cursor != "" {
		c, err := decodeInboxCursor(cursor)
		if err != nil {
			return page, err
		}
		after = &c
	}
	if who.Owner == "" {
		return page, nil
	}
	prefs, _, _ := language.ParseAcceptLanguage(lang)
	now := g.cfg.Now()
	page.Now = now
	seen := map[string]bool{}
	var all []WaitingHold
	for _, key := range []string{inboxKey(who), approvalsKey(who.Tenant)} {
		steps, err := g.cfg.Store.Indexed(ctx, key)
		if err != nil {
			return page, err
		}
		if len(steps) > maxListSteps {
			steps = steps[len(steps)-maxListSteps:] // the newest
		}
		for _, id := range steps {
			if seen[id] {
				continue
			}
			seen[id] = true
			holds, err := g.cfg.Store.Step(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				g.unlist(ctx, key, id)
				continue
			}
			if err != nil {
				return page, err
			}
			open := false
			for _, h := range holds {
				if h.StateAt(now) != store.Waiting || h.Answer == "refused" || h.Kind == store.KindTicket {
					continue
				}
				open = true
				r := g.rightsOn(h, who)
				if !r.view || !r.confirm && !r.decline {
					continue
				}
				w := g.waitingHold(h, r, prefs)
				w.Kind = h.Kind
				w.FourEyes = !r.confirm
				all = append(all, w)
			}
			if !open {
				g.unlist(ctx, key, id)
			}
		}
	}
	slices.SortFunc(all, newer)
	if after != nil {
		at := WaitingHold{Created: unixNano(after.created), Hold: after.id}
		i, _ := slices.BinarySearchFunc(all, at, newer)
		for i < len(all) && newer(all[i], at) <= 0 {
			i++
		}
		all = all[i:]
	}
	if len(all) > limit {
		last := all[limit-1]
		page.Next = inboxCursor{created: last.Created.UnixNano(), id: last.Hold}.encode()
		all = all[:limit]
	}
	page.Waiting = append(page.Waiting, all...)
	return page, nil
}
