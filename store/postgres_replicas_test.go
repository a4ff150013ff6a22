package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/store"
)

// The store contract on three replicas of one PostgreSQL schema: each call
// goes to the next replica in turn (its own pool of connections, its own
// retention loop), so the racing cases race across replicas, and every
// behaviour of one store must hold for any number of them together.
func TestPostgresContractReplicas(t *testing.T) {
	dsn := pgtest.DSN(t)
	runContract(t, func(t *testing.T, cfg contractConfig) store.Store {
		schema := pgtest.Schema(t, dsn)
		r := &replicas{}
		for range 3 {
			r.stores = append(r.stores, openPostgres(t, dsn, store.PostgresOptions{
				Schema:            schema,
				Now:               cfg.Now,
				Retention:         cfg.Retention,
				MaxWaiting:        cfg.MaxWaiting,
				AuditRetention:    cfg.AuditRetention,
				RetentionInterval: 20 * time.Millisecond,
				Logger:            failOnWarning(t),
			}))
		}
		return r
	})
}

// replicas is one Store made of several, each call sent to the next.
type replicas struct {
	stores []store.Store
	next   atomic.Uint64
}

func (r *replicas) pick() store.Store {
	return r.stores[r.next.Add(1)%uint64(len(r.stores))]
}

func (r *replicas) Put(ctx context.Context, holds []store.Hold, events ...store.Event) error {
	return r.pick().Put(ctx, holds, events...)
}
func (r *replicas) Get(ctx context.Context, id string) (store.Hold, error) {
	return r.pick().Get(ctx, id)
}
func (r *replicas) Step(ctx context.Context, stepID string) ([]store.Hold, error) {
	return r.pick().Step(ctx, stepID)
}
func (r *replicas) Claim(ctx context.Context, id string, a store.Answer, events ...store.Event) (store.Claimed, error) {
	return r.pick().Claim(ctx, id, a, events...)
}
func (r *replicas) Begin(ctx context.Context, id string) (store.Hold, error) {
	return r.pick().Begin(ctx, id)
}
func (r *replicas) Settle(ctx context.Context, id, outcome string, events ...store.Event) error {
	return r.pick().Settle(ctx, id, outcome, events...)
}
func (r *replicas) SettleWithReply(ctx context.Context, id, outcome string, reply []byte, events ...store.Event) error {
	return r.pick().SettleWithReply(ctx, id, outcome, reply, events...)
}
func (r *replicas) DropReply(ctx context.Context, id string) error {
	return r.pick().DropReply(ctx, id)
}
func (r *replicas) Unsettled(ctx context.Context, after string, limit int) ([]store.Hold, error) {
	return r.pick().Unsettled(ctx, after, limit)
}
func (r *replicas) Index(ctx context.Context, key, stepID string, expires time.Time) error {
	return r.pick().Index(ctx, key, stepID, expires)
}
func (r *replicas) Indexed(ctx context.Context, key string) ([]string, error) {
	return r.pick().Indexed(ctx, key)
}
func (r *replicas) Unindex(ctx context.Context, key, stepID string) error {
	return r.pick().Unindex(ctx, key, stepID)
}
func (r *replicas) List(ctx context.Context, f store.HoldFilter, cursor string, limit int) (store.HoldPage, error) {
	return r.pick().List(ctx, f, cursor, limit)
}
func (r *replicas) Audit(ctx context.Context, events ...store.Event) error {
	return r.pick().Audit(ctx, events...)
}
func (r *replicas) CheckSecrets(ctx context.Context, fingerprints []string) error {
	return r.pick().(store.SecretKeeper).CheckSecrets(ctx, fingerprints)
}
func (r *replicas) SyncAudit(ctx context.Context) error {
	return r.pick().SyncAudit(ctx)
}
func (r *replicas) AuditHead(ctx context.Context) (store.AuditHead, error) {
	return r.pick().AuditHead(ctx)
}
func (r *replicas) AuditEntries(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, error) {
	return r.pick().AuditEntries(ctx, q)
}
func (r *replicas) Stats(ctx context.Context) (store.Stats, error) {
	return r.pick().Stats(ctx)
}

// Close closes every replica (each one twice is harmless).
func (r *replicas) Close() error {
	for _, s := range r.stores {
		if err := s.Close(); err != nil {
			return err
		}
	}
	return nil
}
