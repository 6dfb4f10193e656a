// Package clientaddr says which client a connection comes from, as limits
// per address count it: an IPv4 address as is, an IPv6 address by its /64
// network (what one subscriber gets, so a new address in it buys no new
// budget), and, behind trusted reverse proxies, the address the proxy
// forwards for instead of the proxy's own.
package clientaddr

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Key returns the key limits per address count ip by.
func Key(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	if ip16 := ip.To16(); ip16 != nil {
		return (&net.IPNet{IP: ip16.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
	}
	return ip.String()
}

// Proxies are the trusted reverse proxies: their connections carry other
// clients', named in X-Forwarded-For.
type Proxies []*net.IPNet

// ParseProxies reads a list of addresses and networks ("10.0.0.1",
// "10.0.0.0/8", "::1").
func ParseProxies(list []string) (Proxies, error) {
	var out Proxies
	for _, item := range list {
		if !strings.Contains(item, "/") {
			ip := net.ParseIP(item)
			if ip == nil {
				return nil, fmt.Errorf("%q is not an IP address or network", item)
			}
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(item)
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address or network", item)
		}
		out = append(out, n)
	}
	return out, nil
}

// Contains reports whether ip is a trusted proxy.
func (p Proxies) Contains(ip net.IP) bool {
	for _, n := range p {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// OfConn returns the IP address of a connection's peer (nil if it has
// none).
func OfConn(c net.Conn) net.IP {
	return ipOf(c.RemoteAddr().String())
}

// OfRequest returns the key of the client a request comes from: its TCP
// peer's, or, when the peer is a trusted proxy, that of the rightmost
// X-Forwarded-For address that is not a trusted proxy itself (entries
// further left are the client's own claims, which anyone can forge). It
// reports whether the request came through a proxy.
func (p Proxies) OfRequest(r *http.Request) (key string, proxied bool) {
	peer := ipOf(r.RemoteAddr)
	if peer == nil {
		return r.RemoteAddr, false
	}
	if !p.Contains(peer) {
		return Key(peer), false
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		ip := net.ParseIP(strings.TrimSpace(hops[i]))
		if ip == nil {
			break
		}
		if !p.Contains(ip) {
			return Key(ip), true
		}
	}
	return Key(peer), true
}

func ipOf(hostport string) net.IP {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return net.ParseIP(host)
}
