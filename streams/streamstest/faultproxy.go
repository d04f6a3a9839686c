package streamstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// FaultProxy is a TCP proxy on a free loopback port (Shopify's toxiproxy, run in
// process) between the parts of a crawl: a process and its Redis, or a fetcher and a
// site. Clients dial Addr instead of the upstream; the faults it injects (Latency,
// Bandwidth, Partition, ResetAfter) apply to new and open connections alike until Heal.
type FaultProxy struct {
	// Addr is the proxy's host:port on 127.0.0.1.
	Addr string

	mu     sync.Mutex
	proxy  *toxiproxy.Proxy
	toxics []string // names of the toxics in place
	seq    int
}

// NewFaultProxy starts a proxy to upstream (host:port) on a free loopback port. Close
// stops it. For tests, StartFaultProxy closes it when the test ends.
func NewFaultProxy(upstream string) (*FaultProxy, error) {
	var lastErr error
	for try := 0; try < 5; try++ {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.New(io.Discard))
		p := toxiproxy.NewProxy(server, "proxy-"+addr, addr, upstream)
		if lastErr = p.Start(); lastErr == nil {
			return &FaultProxy{Addr: addr, proxy: p}, nil
		}
	}
	return nil, fmt.Errorf("streamstest: start fault proxy to %s: %w", upstream, lastErr)
}

// StartFaultProxy is NewFaultProxy for a test: it fails the test when the proxy does not
// start, and closes it when the test ends.
func StartFaultProxy(t testing.TB, upstream string) *FaultProxy {
	t.Helper()
	p, err := NewFaultProxy(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Close stops the proxy and closes its connections.
func (p *FaultProxy) Close() { p.proxy.Stop() }

// Latency delays every reply by d (downstream, so a request's round trip grows by d),
// with up to jitter more or less, to the microsecond (on Linux; elsewhere a wait under
// a millisecond may take one).
func (p *FaultProxy) Latency(d, jitter time.Duration) error {
	return p.add(latencyToxic, "downstream", map[string]any{"latency_us": d.Microseconds(), "jitter_us": jitter.Microseconds()})
}

// LatencyEachWay delays the data of both directions by d each: d*2 a round trip.
func (p *FaultProxy) LatencyEachWay(d time.Duration) error {
	if err := p.add(latencyToxic, "upstream", map[string]any{"latency_us": d.Microseconds()}); err != nil {
		return err
	}
	return p.add(latencyToxic, "downstream", map[string]any{"latency_us": d.Microseconds()})
}

// Bandwidth limits the replies to kbps kilobytes a second.
func (p *FaultProxy) Bandwidth(kbps int) error {
	return p.add("bandwidth", "downstream", map[string]any{"rate": kbps})
}

// Partition drops all data both ways, on open connections and new ones (which connect
// and then hear nothing), without closing any, as a network partition does: until
// Heal.
func (p *FaultProxy) Partition() error {
	if err := p.add("timeout", "upstream", map[string]any{"timeout": 0}); err != nil {
		return err
	}
	return p.add("timeout", "downstream", map[string]any{"timeout": 0})
}

// ResetAfter lets each connection's replies through for n bytes, then resets it (TCP
// RST, as a middlebox or a crashed peer does mid-reply).
func (p *FaultProxy) ResetAfter(n int64) error {
	return p.add("limit_data", "downstream", map[string]any{"bytes": n})
}

// CutConnections closes every open connection through the proxy at once; new ones go
// through.
func (p *FaultProxy) CutConnections() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.proxy.Stop()
	return p.proxy.Start()
}

// Heal removes every fault; connections closed meanwhile stay closed.
func (p *FaultProxy) Heal() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first error
	for _, name := range p.toxics {
		if err := p.proxy.Toxics.RemoveToxic(context.Background(), name); err != nil && first == nil {
			first = err
		}
	}
	p.toxics = nil
	return first
}

// add adds a toxic of kind on stream with attrs.
func (p *FaultProxy) add(kind, stream string, attrs map[string]any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	name := fmt.Sprintf("%s-%s-%d", kind, stream, p.seq)
	body, err := json.Marshal(map[string]any{"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		return err
	}
	if _, err := p.proxy.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		return fmt.Errorf("streamstest: add %s toxic: %w", kind, err)
	}
	p.toxics = append(p.toxics, name)
	return nil
}
