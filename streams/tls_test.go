package streams_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// certs writes a CA, a server certificate for 127.0.0.1 and a client certificate, each
// signed by the CA, as PEM files in dir, and returns their paths by name (ca, server,
// server-key, client, client-key).
func certs(t *testing.T, dir string) map[string]string {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	paths := map[string]string{}
	write := func(name, typ string, der []byte) {
		p := filepath.Join(dir, name+".pem")
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
	}
	caKey := key()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	write("ca", "CERTIFICATE", caDER)
	for i, c := range []struct {
		name  string
		usage x509.ExtKeyUsage
	}{{"server", x509.ExtKeyUsageServerAuth}, {"client", x509.ExtKeyUsageClientAuth}} {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: c.name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{c.usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		write(c.name, "CERTIFICATE", der)
		kder, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		write(c.name+"-key", "PRIVATE KEY", kder)
	}
	return paths
}

// TestConnectOverTLS: a redis-server that serves TLS and asks for client certificates
// (mutual TLS) is reached with rediss:// and the tls_ca, tls_cert and tls_key options;
// without the client certificate, or without the CA, the connection is refused; and
// redis:// to its TLS port says the server may want rediss://, not only EOF.
func TestConnectOverTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := certs(t, dir)
	tlsAddr := streamstest.FreeAddr(t)
	_, tlsPort, _ := net.SplitHostPort(tlsAddr)
	streamstest.Start(t, "--tls-port", tlsPort, "--tls-cert-file", c["server"], "--tls-key-file", c["server-key"],
		"--tls-ca-cert-file", c["ca"], "--tls-auth-clients", "yes")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return "?" + v.Encode()
	}
	mutual := "rediss://" + tlsAddr + q("tls_ca", c["ca"], "tls_cert", c["client"], "tls_key", c["client-key"], "pool_size", "4")
	rdb, err := streams.Connect(ctx, streams.ClientOptions{URL: mutual})
	if err != nil {
		t.Fatalf("mutual TLS: %v", err)
	}
	if err := rdb.Set(ctx, "k", "over tls", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := rdb.Get(ctx, "k").Val(); got != "over tls" {
		t.Errorf("GET over TLS: %q", got)
	}
	if got := rdb.Unwrap().(*redis.Client).Options().PoolSize; got != 4 {
		t.Errorf("pool_size beside the tls options: %d, want 4", got)
	}
	rdb.Close()

	for _, c := range []struct{ what, url, want string }{
		{"no client certificate", "rediss://" + tlsAddr + q("tls_ca", c["ca"]), "certificate required"},
		{"no CA", "rediss://" + tlsAddr + q("tls_cert", c["client"], "tls_key", c["client-key"]), "certificate"},
		{"plain redis:// to the TLS port", "redis://" + tlsAddr, "rediss://"},
		{"tls options on redis://", "redis://" + tlsAddr + q("tls_ca", c["ca"]), "need a rediss://"},
		{"a certificate without its key", "rediss://" + tlsAddr + q("tls_cert", c["client"]), "tls_cert and tls_key go together"},
		{"a missing CA file", "rediss://" + tlsAddr + q("tls_ca", filepath.Join(dir, "nosuch.pem")), "tls_ca"},
	} {
		rdb, err := streams.Connect(ctx, streams.ClientOptions{URL: c.url})
		if err == nil {
			rdb.Close()
			t.Errorf("%s: connected", c.what)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q", c.what, err, c.want)
		}
	}
}
