package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer that a running command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve starts `stead serve` with args and returns its base URL and the function that stops it
// and returns its exit code.
func serve(t *testing.T, args ...string) (string, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, testConfig(), append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), &out, &errOut)
	}()
	addr := regexp.MustCompile(`console on (https?://127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			return m[1], func() int { cancel(); return <-done }
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve exited %d: %s", code, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve printed no address: %s %s", out.String(), errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func get(t *testing.T, url, bearer string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestServeTokenAndReadOnly(t *testing.T) {
	t.Parallel()
	db := newStore(t, filepath.Join(t.TempDir(), "s.db"))
	if code, _, errOut := cli(t, context.Background(), "start", "--store", db, "order", "--id", "o-1"); code != 0 {
		t.Fatalf("start: exit %d: %s", code, errOut)
	}
	base, stop := serve(t, "--store", db, "--token", "tok", "--read-only")
	defer stop()
	if code, _ := get(t, base+"/", ""); code != http.StatusSeeOther {
		t.Errorf("without the token: %d, want a redirect to the login form", code)
	}
	code, body := get(t, base+"/execution?id=o-1", "tok")
	if code != http.StatusOK || strings.Contains(body, `action="/control"`) {
		t.Errorf("read-only with the token: %d, controls shown: %v", code, strings.Contains(body, `action="/control"`))
	}
}

func TestServeRefusesOpenAddressWithoutToken(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "s.db")
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		code, _, errOut := cli(t, context.Background(), "serve", "--store", db, "--addr", addr)
		if code != exitUsage || !strings.Contains(errOut, "--token") {
			t.Errorf("serve --addr %s without a token: exit %d, %q", addr, code, errOut)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a refused serve created the store: %v", err)
	}
}

// TestServeTLS serves HTTPS with a certificate made for the test, and checks the session cookie
// is then marked Secure.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pool := writeTestCert(t, certFile, keyFile)
	db := newStore(t, filepath.Join(dir, "s.db"))
	base, stop := serve(t, "--store", db, "--token", "tok", "--tls-cert", certFile, "--tls-key", keyFile)
	defer stop()
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("serve printed %s", base)
	}
	c := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	res, err := c.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("login page over HTTPS: %d", res.StatusCode)
	}
	if len(res.Cookies()) == 0 {
		t.Fatal("the login page set no CSRF cookie")
	}
	for _, k := range res.Cookies() {
		if !k.Secure {
			t.Errorf("cookie %s over HTTPS is not Secure", k.Name)
		}
	}
	if code, _, errOut := cli(t, context.Background(), "serve", "--store", db, "--tls-cert", certFile); code != exitUsage {
		t.Errorf("--tls-cert without --tls-key: exit %d %s", code, errOut)
	}
}

// writeTestCert writes a self-signed certificate for 127.0.0.1 and its key, and returns a pool
// that trusts it.
func writeTestCert(t *testing.T, certFile, keyFile string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "stead test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// TestServeTurns serves the turn store beside the executions with --turns, and not without it.
func TestServeTurns(t *testing.T) {
	t.Parallel()
	w := seedTurns(t)
	base, stop := serve(t, "--store", w.path, "--turns")
	code, body := get(t, base+"/turns?account=acme", "")
	if code != http.StatusOK || !strings.Contains(body, w.conv.String()) || strings.Contains(body, w.foreignConv.String()) {
		t.Errorf("conversations: %d\n%.2000s", code, body)
	}
	code, body = get(t, base+"/turns/turn?account=acme&id="+w.turnID.String(), "")
	if code != http.StatusOK || !strings.Contains(body, w.second.String()) || strings.Contains(body, w.noise.String()) {
		t.Errorf("turn: %d\n%.2000s", code, body)
	}
	if code := stop(); code != 0 {
		t.Errorf("serve exited %d", code)
	}
	base, stop = serve(t, "--store", w.path)
	defer stop()
	if code, _ := get(t, base+"/turns?account=acme", ""); code != http.StatusNotFound {
		t.Errorf("without --turns: /turns answers %d", code)
	}
}

// TestServeOwnDefinition is the stock binary serving a definition whose actions it lacks: the
// chart is drawn and the buttons that need no action are offered.
func TestServeOwnDefinition(t *testing.T) {
	t.Parallel()
	db := newStore(t, filepath.Join(t.TempDir(), "s.db"))
	if code, _, errOut := cli(t, context.Background(), "start", "--store", db, "approval", "--id", "a1", "--context", `{"amount":1}`); code != 0 {
		t.Fatalf("start: exit %d: %s", code, errOut)
	}
	base, stop := serve(t, "--store", db, "--definition", approvalFile)
	defer stop()
	code, body := get(t, base+"/execution?id=a1", "")
	if code != http.StatusOK || !strings.Contains(body, `id="chart-src"`) || !strings.Contains(body, `id="op-cancel"`) {
		t.Errorf("an execution of approval: %d\n%.3000s", code, body)
	}
}
