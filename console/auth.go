package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
)

const (
	sessionCookie = "stead_session"
	csrfCookie    = "stead_csrf"
	csrfField     = "csrf"
)

// CheckAddr refuses to serve on an address other than loopback without a token: a console
// reachable from the network and guarded by nothing would hand the control buttons to anyone.
// An empty host (":8080") listens everywhere, so it counts as non-loopback.
func CheckAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return badRequestf("address %q: %v", addr, err)
	}
	if token != "" || IsLoopback(host) {
		return nil
	}
	return badRequestf("address %q is not loopback: give --token (or listen on 127.0.0.1)", addr)
}

// IsLoopback reports whether host is localhost or a loopback IP address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authorized reports whether r carries the token (or no token is needed): a bearer header, or
// the session cookie the login form set, compared in constant time.
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Token == "" {
		return true
	}
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return subtle.ConstantTimeCompare([]byte(auth), []byte(s.cfg.Token)) == 1
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		return subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.session)) == 1
	}
	return false
}

func isLogin(r *http.Request) bool { return r.URL.Path == "/login" }
func isStatic(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/static/")
}

func (s *Server) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Token == "" {
		http.Redirect(w, r, s.path("/"), http.StatusSeeOther)
		return
	}
	s.render(w, http.StatusOK, "login", s.page(w, r, "Log in", loginPage{}))
}

type loginPage struct{ Failed bool }

// handleLogin checks the token of the form and sets the session cookie: HttpOnly, so no script
// reads it, and SameSite=Strict, so no other site's request carries it. Its value is a MAC of
// the token under the process secret, never the token itself.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Token == "" {
		http.Redirect(w, r, s.path("/"), http.StatusSeeOther)
		return
	}
	if !s.csrfOK(r) {
		http.Error(w, "forbidden: missing or bad CSRF token, or a cross-site request", http.StatusForbidden)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("token")), []byte(s.cfg.Token)) != 1 {
		s.render(w, http.StatusUnauthorized, "login", s.page(w, r, "Log in", loginPage{Failed: true}))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.session, Path: s.cookiePath(), HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, s.path("/"), http.StatusSeeOther)
}

func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if !s.csrfOK(r) {
		http.Error(w, "forbidden: missing or bad CSRF token, or a cross-site request", http.StatusForbidden)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: s.cookiePath(), MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, s.path("/login"), http.StatusSeeOther)
}

// csrfToken returns the token forms carry: a MAC of the CSRF cookie's random value under the
// process secret (the cookie is set here when the request has none). A forged request can
// neither read the cookie nor compute the MAC without the secret.
func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	var v string
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 32 {
		v = c.Value
	} else {
		b := make([]byte, 16)
		rand.Read(b)
		v = hex.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: v, Path: s.cookiePath(), HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	}
	return s.mac("csrf", v)
}

// csrfOK checks a POST: it must come from this origin (Sec-Fetch-Site and Origin, when the
// browser sends them) and carry the token that matches its CSRF cookie.
func (s *Server) csrfOK(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	switch site {
	case "", "same-origin", "none":
	default:
		return false
	}
	// Under the pages' Referrer-Policy: no-referrer, Chromium sends "Origin: null" with a form's
	// POST to its own origin; the browser's own Sec-Fetch-Site then says where it came from.
	if o := r.Header.Get("Origin"); o != "" && !(o == "null" && site == "same-origin") {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return false
		}
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" {
		return false
	}
	got := r.PostFormValue(csrfField)
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.mac("csrf", c.Value))) == 1
}
