package fetch

import (
	"context"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

func TestProxyPoolRotatesLimitsAndBenches(t *testing.T) {
	p := newProxyPool(spiders.Settings{Proxies: []string{"http://a:1", "socks5://b:2"}, ProxyConcurrency: 1,
		ProxyBanAfter: 2, ProxyBanFor: time.Hour})
	ctx := context.Background()
	a, _ := p.acquire(ctx)
	b, _ := p.acquire(ctx)
	if a.u.Host != "a:1" || b.u.Host != "b:2" {
		t.Fatalf("rotation gave %s then %s", a.u.Host, b.u.Host)
	}
	// Both at their limit of 1: the next acquire waits for a release.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := p.acquire(short); err == nil {
		t.Fatal("acquired a third slot with two proxies at concurrency 1")
	}
	got := make(chan *proxyState)
	go func() { ps, _ := p.acquire(ctx); got <- ps }()
	p.release(b, false)
	if ps := <-got; ps != b {
		t.Fatalf("after b's release got %s", ps.u.Host)
	}
	// a fails twice in a row: benched; every acquire now gets b.
	if p.release(a, true) {
		t.Fatal("benched after one failure")
	}
	a2, _ := p.acquire(ctx)
	if a2 != a {
		t.Fatalf("want a again, got %s", a2.u.Host)
	}
	if !p.release(a2, true) {
		t.Fatal("not benched after two failures in a row")
	}
	p.release(b, false)
	for range 3 {
		ps, _ := p.acquire(ctx)
		if ps != b {
			t.Fatalf("benched proxy handed out")
		}
		p.release(ps, false)
	}
	// All benched: the one whose rest ends first is tried rather than stall.
	b.until = time.Now().Add(2 * time.Hour)
	if ps, _ := p.acquire(ctx); ps != a {
		t.Fatalf("all benched: got %s, want a (its rest ends first)", ps.u.Host)
	}
}
