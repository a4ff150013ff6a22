package caddymodule

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/store"
)

// appStore is the app's store as the gate sees it: the database opened in
// Start. Caddy starts its apps in no fixed order, so at a start or a
// config reload the HTTP server may hand the gate a request before Start
// has opened the store: an operation then waits for Start (up to
// startWait, or its context). After Stop, or when Start never came,
// every operation fails closed with store.ErrUnavailable.
type appStore App

// startWait bounds how long an operation waits for the app's Start: more
// than opening a store takes (PostgreSQL's open is bounded by its 10s
// timeout), less than a client gives up after.
const startWait = 15 * time.Second

func (s *appStore) get(ctx context.Context) (store.Store, error) {
	select {
	case <-s.live.started:
	default:
		t := time.NewTimer(startWait)
		defer t.Stop()
		select {
		case <-s.live.started:
		case <-t.C:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: the toolgate app has not started: %w", store.ErrUnavailable, ctx.Err())
		}
	}
	s.live.mu.RLock()
	defer s.live.mu.RUnlock()
	if s.live.db == nil {
		return nil, fmt.Errorf("%w: the toolgate app is not running", store.ErrUnavailable)
	}
	return s.live.db, nil
}

func (s *appStore) Put(ctx context.Context, holds []store.Hold, events ...store.Event) error {
	db, err := s.get(ctx)
	if err != nil {
		return err
	}
	return db.Put(ctx, holds, events...)
}

func (s *appStore) Get(ctx context.Context, id string) (store.Hold, error) {
	db, err := s.get(ctx)
	if err != nil {
		return store.Hold{}, err
	}
	return db.Get(ctx, id)
}

func (s *appStore) Step(ctx context.Context, stepID string) ([]store.Hold, error) {
	db, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	return db.Step(ctx, stepID)
}

func (s *appStore) Claim(ctx context.Context, id string, a store.Answer, events ...store.Event) (store.Claimed, error) {
	db, err := s.get(ctx)
	if err != nil {
		return store.Claimed{}, err
	}
	return db.Claim(ctx, id, a, events...)
}

func (s *appStore) Begin(ctx context.Context, id string) (store.Hold, error) {
	db, err := s.get(ctx)
	if err != nil {
		return store.Hold{}, err
	}
	return db.Begin(ctx, id)
}

func (s *appStore) Settle(ctx context.Context, id, outcome string, events ...store.Event) error {
	db, err := s.get(ctx)
	if err != nil {
		return err
	}
	return db.Settle(ctx, id, outcome, events...)
}

func (s *appStore) SettleWithReply(ctx context.Context, id, outcome string, reply []byte, events ...store.Event) error {
	db, err := s.get(ctx)
	if err != nil {
		return err
	}
	return db.SettleWithReply(ctx, id, outcome, reply, events...)
}

func (s *appStore) DropReply(ctx context.Context, id string) error {
	db, err := s.get(ctx)
	if err != nil {
		return err
	}
	return db.DropReply(ctx, id)
}

func (s *appStore) Unsettled(ctx context.Context, after string, limit int) ([]store.Hold, error) {
	db, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	return db.Unsettled(ctx, after, limit)
}

func (s *appStore) List(ctx context.Context, f store.HoldFilter, cursor string, limit int) (store.HoldPage, error) {
	db, err := s.get(ctx)
	if err != nil {
		return store.HoldPage{}, err
	}
	return db.List(ctx, f, cursor, limit)
}

func (s *appStore) Audit(ctx context.Context, events ...store.Event) error {
	db, err := s.get(ctx)
	if err != nil {
		return err
	}
	return db.Audit(ctx, events...)
}

func (s *appStore) SyncAudit(ctx context.Context) error {
	db, err := s.get(ctx)
	if err != nil {
		return err
	}
	return db.SyncAudit(ctx)
}

func (s *appStore) AuditHead(ctx context.Context) (store.AuditHead, error) {
	db, err := s.get(ctx)
	if err != nil {
		return store.AuditHead{}, err
	}
	return db.AuditHead(ctx)
}

func (s *appStore) AuditEntries(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, error) {
	db, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	return db.AuditEntries(ctx, q)
}

func (s *appStore) Stats(ctx context.Context) (store.Stats, error) {
	db, err := s.get(ctx)
	if err != nil {
		return store.Stats{}, err
	}
	return db.Stats(ctx)
}

func (s *appStore) Index(ctx context.Context, key, stepID string, expires time.Time) error {
	db, err := s.get(ctx)
	if err != nil {
		return err
	}
	return db.Index(ctx, key, stepID, expires)
}

func (s *appStore) Indexed(ctx context.Context, key string) ([]string, error) {
	db, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	return db.Indexed(ctx, key)
}

func (s *appStore) Unindex(ctx context.Context, key, stepID string) error {
	db, err := s.get(ctx)
	if err != nil {
		return err
	}
	return db.Unindex(ctx, key, stepID)
}

// Close does nothing: the app's Stop releases the pooled database.
func (s *appStore) Close() error { return nil }

var _ store.Store = (*appStore)(nil)
