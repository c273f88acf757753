package server

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	cases := []struct {
		name, remote string
		xff          []string
		trusted      []netip.Prefix
		want         string
	}{
		{"no proxies configured: the peer", "192.0.2.1:1234", nil, nil, "192.0.2.1"},
		{"no proxies configured: XFF ignored", "192.0.2.1:1234", []string{"203.0.113.9"}, nil, "192.0.2.1"},
		{"untrusted peer: XFF ignored", "192.0.2.1:1234", []string{"203.0.113.9"}, trusted, "192.0.2.1"},
		{"trusted peer without XFF: the peer", "10.1.2.3:80", nil, trusted, "10.1.2.3"},
		{"trusted peer: the XFF client", "10.1.2.3:80", []string{"203.0.113.9"}, trusted, "203.0.113.9"},
		{"right-most untrusted wins over a spoofed left part", "10.1.2.3:80", []string{"1.1.1.1, 203.0.113.9"}, trusted, "203.0.113.9"},
		{"trusted hops are skipped", "10.1.2.3:80", []string{"1.1.1.1, 203.0.113.9, 10.9.9.9"}, trusted, "203.0.113.9"},
		{"several header lines read as one list", "10.1.2.3:80", []string{"1.1.1.1, 203.0.113.9", "10.9.9.9"}, trusted, "203.0.113.9"},
		{"all hops trusted: the left-most", "10.1.2.3:80", []string{"10.7.7.7, 10.9.9.9"}, trusted, "10.7.7.7"},
		{"garbage hop: the last trusted address", "10.1.2.3:80", []string{"1.1.1.1, nonsense, 10.9.9.9"}, trusted, "10.9.9.9"},
		{"hop with a port", "10.1.2.3:80", []string{"203.0.113.9:5555"}, trusted, "203.0.113.9"},
		{"IPv6 peer untrusted", "[2001:db8::1]:443", []string{"203.0.113.9"}, trusted, "2001:db8::1"},
		{"IPv6 trusted peer, IPv6 client", "[fd00::5]:443", []string{"2001:db8::7"}, trusted, "2001:db8::7"},
		{"IPv4-mapped peer is IPv4", "[::ffff:10.1.2.3]:80", []string{"203.0.113.9"}, trusted, "203.0.113.9"},
		{"unparseable peer", "pipe", []string{"203.0.113.9"}, trusted, "invalid IP"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/models", nil)
			r.RemoteAddr = c.remote
			for _, v := range c.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := clientIP(r, c.trusted).String(); got != c.want {
				t.Fatalf("clientIP = %s, want %s", got, c.want)
			}
		})
	}
}
