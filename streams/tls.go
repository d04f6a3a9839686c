package streams

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// tlsFiles are the TLS options of a Redis URL that go-redis does not read, taken out of
// the URL before go-redis parses it:
//
//	tls_ca=FILE           PEM certificates of the CAs the server's certificate must chain
//	                      to (default: the system's roots)
//	tls_cert=FILE         PEM client certificate, for a server that asks for one
//	tls_key=FILE          its PEM private key (with tls_cert)
//	tls_server_name=NAME  the name the server's certificate must carry (default: the
//	                      URL's host)
//
// They need rediss:// or rediss+cluster://.
type tlsFiles struct {
	ca, cert, key, serverName string
}

// set reports whether any option was given.
func (f tlsFiles) set() bool { return f != tlsFiles{} }

// takeTLSOptions returns raw without its tls_* options, and those options.
func takeTLSOptions(raw string) (string, tlsFiles, error) {
	base, query, ok := strings.Cut(raw, "?")
	if !ok || !strings.Contains(query, "tls_") {
		return raw, tlsFiles{}, nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", tlsFiles{}, fmt.Errorf("streams: bad redis url options: %w", err)
	}
	var f tlsFiles
	for name, field := range map[string]*string{"tls_ca": &f.ca, "tls_cert": &f.cert, "tls_key": &f.key, "tls_server_name": &f.serverName} {
		*field = q.Get(name)
		q.Del(name)
	}
	if f.set() && !strings.HasPrefix(base, "rediss://") && !strings.HasPrefix(base, "rediss+cluster://") {
		return "", tlsFiles{}, errors.New("streams: the tls_ca, tls_cert, tls_key and tls_server_name options need a rediss:// (or rediss+cluster://) url")
	}
	if (f.cert == "") != (f.key == "") {
		return "", tlsFiles{}, errors.New("streams: tls_cert and tls_key go together (a client certificate and its key)")
	}
	if len(q) > 0 {
		base += "?" + q.Encode()
	}
	return base, f, nil
}

// apply sets up cfg, the TLS configuration go-redis made for a rediss:// URL, with f.
func (f tlsFiles) apply(cfg *tls.Config) error {
	if cfg == nil || !f.set() {
		return nil
	}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return fmt.Errorf("streams: tls_ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("streams: tls_ca %s holds no PEM certificate", f.ca)
		}
		cfg.RootCAs = pool
	}
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return fmt.Errorf("streams: tls_cert and tls_key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if f.serverName != "" {
		cfg.ServerName = f.serverName
	}
	return nil
}
