package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

func TestIndex(t *testing.T) {
	db, err := store.OpenBadger(t.TempDir(), store.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	for _, step := range []string{"stepa", "stepb", "stepa"} {
		if err := db.Index(ctx, "resp:ana:resp_1", step, exp); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Index(ctx, "resp:ana:resp_12", "other", exp); err != nil {
		t.Fatal(err)
	}
	got, err := db.Indexed(ctx, "resp:ana:resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "stepa" || got[1] != "stepb" {
		t.Errorf("Indexed = %v, want [stepa stepb] (oldest first, once each, no other key's)", got)
	}
	if err := db.Unindex(ctx, "resp:ana:resp_1", "stepa"); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Indexed(ctx, "resp:ana:resp_1"); len(got) != 1 || got[0] != "stepb" {
		t.Errorf("after Unindex: %v", got)
	}
	if got, _ := db.Indexed(ctx, "nothing"); len(got) != 0 {
		t.Errorf("an unknown key gave %v", got)
	}
}
