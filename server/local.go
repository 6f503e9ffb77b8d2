package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// LocalOnly guards h, a handler that serves this machine without keys
// (insecure local mode, the E2B debug listeners), against the browsers of
// this machine: see refuseBrowsers. The server guards its own handler so
// in insecure local mode.
func LocalOnly(h http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !refuseBrowsers(w, r, cop) {
			h.ServeHTTP(w, r)
		}
	})
}

// refuseBrowsers answers 403 to, and reports, a request a keyless server
// must not serve: one whose Host is not a loopback name (localhost,
// 127.0.0.0/8, ::1), since a page that got there by DNS rebinding (its own
// domain now resolving to 127.0.0.1) names its domain there; and a
// state-changing one a browser marks as cross-origin (Sec-Fetch-Site, else
// an Origin that is not the Host), since any web page can send one without
// a preflight. Local tools send neither, and the web view served from the
// same origin passes.
func refuseBrowsers(w http.ResponseWriter, r *http.Request, cop *http.CrossOriginProtection) bool {
	if !LoopbackHost(r.Host) {
		WriteError(w, http.StatusForbidden, CodeForbidden, fmt.Sprintf("Host %q is not a loopback name: a server without keys answers requests for localhost, 127.0.0.1 or [::1] only", r.Host))
		return true
	}
	if err := cop.Check(r); err != nil {
		WriteError(w, http.StatusForbidden, CodeForbidden, fmt.Sprintf("cross-origin request refused (Origin %q): a server without keys serves this machine's tools and its own pages only", r.Header.Get("Origin")))
		return true
	}
	return false
}

// LoopbackHost reports whether host (a request's Host: a name or address,
// perhaps with a port) names this machine's loopback interface: localhost
// (or a name under .localhost), an address in 127.0.0.0/8, or ::1. An
// empty Host (HTTP/1.0) counts as loopback: the connection is.
func LoopbackHost(host string) bool {
	if host == "" {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if l := strings.ToLower(host); l == "localhost" || strings.HasSuffix(l, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
