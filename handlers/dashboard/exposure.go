package dashboard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"
)

// Defaults of the Config fields that bound what one connection may hold of the server.
const (
	// DefaultReadHeaderTimeout closes a connection whose request headers have not all
	// come in this long (a slowloris client trickles them to hold a connection forever).
	DefaultReadHeaderTimeout = 5 * time.Second
	// DefaultReadTimeout bounds the whole request, body included.
	DefaultReadTimeout = 15 * time.Second
	// DefaultWriteTimeout bounds the answer. Nothing the dashboard serves streams: the
	// page, its assets, its JSON and /metrics are each written at once.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a kept-alive connection that sent nothing for this long.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultMaxBodyBytes caps a request's body; the largest the dashboard takes is a
	// retry of dead-letter ids.
	DefaultMaxBodyBytes = 1 << 20
	// maxHeaderBytes caps a request's headers (net/http's default is 1 MiB).
	maxHeaderBytes = 64 << 10
)

// Serve serves h on ln with the timeouts and body cap of d's Config until ctx ends, then
// shuts the server down, giving requests in flight up to 5 s. It returns nil when ctx
// ended, else the error that stopped it. h is the dashboard's Handler, alone or beside
// other paths (the command adds /metrics).
func (d *Dashboard) Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           http.MaxBytesHandler(h, d.cfg.MaxBodyBytes),
		ReadHeaderTimeout: d.cfg.ReadHeaderTimeout,
		ReadTimeout:       d.cfg.ReadTimeout,
		WriteTimeout:      d.cfg.WriteTimeout,
		IdleTimeout:       d.cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// hostAllowed tells whether a request's Host names this server: an IP address (any:
// a browser sends the name it resolved, so a page of another site that rebinds its
// name to this address still sends that name, never an address), localhost, or one of
// allow (compared without case, port or a final dot).
func hostAllowed(host string, allow []string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(name, "["), "]"), ".")
	if name == "" {
		return false
	}
	if net.ParseIP(name) != nil || strings.EqualFold(name, "localhost") {
		return true
	}
	for _, a := range allow {
		if strings.EqualFold(name, strings.TrimSuffix(a, ".")) {
			return true
		}
	}
	return false
}

// checkHost refuses, with 421 Misdirected Request, a request whose Host is not one the
// dashboard answers to (hostAllowed): a DNS-rebound page of another site is then no
// longer of the same origin as the dashboard as far as the dashboard is concerned, and
// can neither read its dead letters nor re-queue them.
func checkHost(next http.Handler, allow []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, allow) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusMisdirectedRequest)
			_, _ = w.Write([]byte("dashboard: this server does not answer to the host " + quoteHost(r.Host) +
				"; open it by its IP address or localhost, or start it with --allow-host " + quoteHost(hostOnly(r.Host)) + "\n"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostOnly is host without its port.
func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// quoteHost quotes a Host header for the refusal's text, cut to a sane length.
func quoteHost(h string) string {
	if len(h) > 100 {
		h = h[:100] + "..."
	}
	return "\"" + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' {
			return '?'
		}
		return r
	}, h) + "\""
}

// NonLoopback tells whether addr, the address the dashboard listens on, is reachable
// from other machines (any address but loopback: 0.0.0.0 and :: are every address).
func NonLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return !ok || !tcp.IP.IsLoopback()
}
