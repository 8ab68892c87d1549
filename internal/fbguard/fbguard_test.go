package fbguard

import (
	"errors"
	"testing"
)

func TestBudget(t *testing.T) {
	b := New("test", 100)
	if err := b.Take(Factor*100, 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Take(Slack/8, 8); err != nil {
		t.Fatal(err)
	}
	if b.Used() != Factor*100+Slack {
		t.Fatalf("used %d", b.Used())
	}
	var e *Error
	if err := b.Take(1, 1); !errors.As(err, &e) || e.What != "test" {
		t.Fatalf("over budget: %v", err)
	}
	if err := b.Take(1<<62, 8); err == nil {
		t.Fatal("overflowing charge accepted")
	}
	if err := b.Take(-1, 8); err == nil {
		t.Fatal("negative charge accepted")
	}
	var none *Budget
	if err := none.Take(1<<40, 8); err != nil {
		t.Fatal(err)
	}
}
