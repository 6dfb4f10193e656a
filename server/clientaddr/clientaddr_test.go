package clientaddr

import (
	"net"
	"net/http"
	"testing"
)

func TestKey(t *testing.T) {
	for ip, want := range map[string]string{
		"192.0.2.7":               "192.0.2.7",
		"::ffff:192.0.2.7":        "192.0.2.7",
		"2001:db8:1:2:3:4:5:6":    "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1234": "2001:db8:1:2::/64",
		"::1":                     "::/64",
	} {
		if got := Key(net.ParseIP(ip)); got != want {
			t.Errorf("Key(%s) = %s, want %s", ip, got, want)
		}
	}
}

func TestOfRequest(t *testing.T) {
	proxies, err := ParseProxies([]string{"10.0.0.0/8", "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	req := func(remote string, xff ...string) *http.Request {
		r := &http.Request{RemoteAddr: remote, Header: http.Header{}}
		for _, v := range xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		return r
	}
	cases := []struct {
		r       *http.Request
		want    string
		proxied bool
	}{
		{req("198.51.100.9:5555"), "198.51.100.9", false},
		// A client that is no proxy cannot claim another address.
		{req("198.51.100.9:5555", "203.0.113.5"), "198.51.100.9", false},
		{req("10.1.2.3:443", "203.0.113.5"), "203.0.113.5", true},
		// The client's own claim (leftmost) is not believed; the address
		// the trusted proxies saw is.
		{req("10.1.2.3:443", "1.2.3.4, 203.0.113.5, 192.0.2.1"), "203.0.113.5", true},
		{req("10.1.2.3:443", "1.2.3.4", "203.0.113.5"), "203.0.113.5", true},
		// A proxy that forwards for nobody is its own client.
		{req("192.0.2.1:443"), "192.0.2.1", true},
		{req("[2001:db8::7]:443"), "2001:db8::/64", false},
	}
	for _, c := range cases {
		got, proxied := proxies.OfRequest(c.r)
		if got != c.want || proxied != c.proxied {
			t.Errorf("%s %v: %s %v, want %s %v", c.r.RemoteAddr, c.r.Header.Values("X-Forwarded-For"), got, proxied, c.want, c.proxied)
		}
	}
	if _, err := ParseProxies([]string{"not-an-ip"}); err == nil {
		t.Error("a bad proxy address accepted")
	}
}
