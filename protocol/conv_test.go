package protocol_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
)

func TestParseConv(t *testing.T) {
	valid := []struct {
		in   string
		want protocol.Conv
	}{
		{"d:alice:bob", protocol.Conv{Kind: protocol.ConvDirect, A: "alice", B: "bob"}},
		{"d:a:b", protocol.Conv{Kind: protocol.ConvDirect, A: "a", B: "b"}},
		{"d:bob:bobby", protocol.Conv{Kind: protocol.ConvDirect, A: "bob", B: "bobby"}},
		// byte order, not numeric or alphabetic-with-punctuation order
		{"d:10:9", protocol.Conv{Kind: protocol.ConvDirect, A: "10", B: "9"}},
		{"d:a.b:a_b", protocol.Conv{Kind: protocol.ConvDirect, A: "a.b", B: "a_b"}},
		{"d:a-b:a.b", protocol.Conv{Kind: protocol.ConvDirect, A: "a-b", B: "a.b"}},
		{"d:" + strings.Repeat("a", 32) + ":" + strings.Repeat("b", 32),
			protocol.Conv{Kind: protocol.ConvDirect, A: strings.Repeat("a", 32), B: strings.Repeat("b", 32)}},
		{"g:x", protocol.Conv{Kind: protocol.ConvGroup, Name: "x"}},
		{"g:01JABC-def_G", protocol.Conv{Kind: protocol.ConvGroup, Name: "01JABC-def_G"}},
		{"g:" + strings.Repeat("G", 64), protocol.Conv{Kind: protocol.ConvGroup, Name: strings.Repeat("G", 64)}},
		{"biz:shop", protocol.Conv{Kind: protocol.ConvBiz, Name: "shop"}},
		{"biz:food.delivery-2", protocol.Conv{Kind: protocol.ConvBiz, Name: "food.delivery-2"}},
	}
	for _, tt := range valid {
		got, ok := protocol.ParseConv(tt.in)
		if !ok || got != tt.want {
			t.Errorf("ParseConv(%q) = %#v, %v; want %#v, true", tt.in, got, ok, tt.want)
			continue
		}
		if s := got.String(); s != tt.in {
			t.Errorf("ParseConv(%q).String() = %q", tt.in, s)
		}
	}
	invalid := []string{
		"",
		"d",
		"d:",
		"d:alice",
		"d:alice:",
		"d::bob",
		"d:bob:alice",
		"d:bobby:bob",
		"d:9:10",
		"d:a_b:a.b",
		"d:alice:alice",
		"d:Alice:bob",
		"d:alice:Bob",
		"d:_alice:bob",
		"d:alice:bob:carol",
		"d:alice:bob:",
		"d:alice::bob",
		"d:alice bob",
		"d: alice:bob",
		"d:alice:bob ",
		" d:alice:bob",
		"D:alice:bob",
		"dm:alice:bob",
		"d:" + strings.Repeat("a", 33) + ":b",
		"d:a:" + strings.Repeat("b", 33),
		"g:",
		"g",
		"G:x",
		"g:a b",
		"g:a:b",
		"g:a.b",
		"g:é",
		"g:" + strings.Repeat("G", 65),
		"biz:",
		"biz",
		"biz:a:b",
		"biz:_shop",
		"biz:sh op",
		"alice",
		"x:abc",
		"group:x",
		"d:alice:bob\x00",
		"g:x\n",
	}
	for _, s := range invalid {
		if c, ok := protocol.ParseConv(s); ok || c != (protocol.Conv{}) {
			t.Errorf("ParseConv(%q) = %#v, %v; want zero, false", s, c, ok)
		}
	}
}

func TestDirectConv(t *testing.T) {
	tests := []struct {
		a, b string
		want string
		ok   bool
	}{
		{"alice", "bob", "d:alice:bob", true},
		{"bob", "alice", "d:alice:bob", true},
		{"bobby", "bob", "d:bob:bobby", true},
		{"9", "10", "d:10:9", true},
		{"a_b", "a.b", "d:a.b:a_b", true},
		{"alice", "alice", "", false},
		{"", "bob", "", false},
		{"alice", "", "", false},
		{"Alice", "bob", "", false},
		{"alice", "b:c", "", false},
		{"alice", strings.Repeat("b", 33), "", false},
	}
	for _, tt := range tests {
		got, ok := protocol.DirectConv(tt.a, tt.b)
		if got != tt.want || ok != tt.ok {
			t.Errorf("DirectConv(%q, %q) = %q, %v; want %q, %v", tt.a, tt.b, got, ok, tt.want, tt.ok)
		}
	}
}

func TestConvMembers(t *testing.T) {
	c, ok := protocol.ParseConv("d:alice:bob")
	if !ok {
		t.Fatal("d:alice:bob does not parse")
	}
	for user, want := range map[string]bool{"alice": true, "bob": true, "carol": false, "": false, "alic": false, "bobb": false} {
		if got := c.HasMember(user); got != want {
			t.Errorf("%v.HasMember(%q) = %v, want %v", c, user, got, want)
		}
	}
	if p := c.Peer("alice"); p != "bob" {
		t.Errorf("Peer(alice) = %q", p)
	}
	if p := c.Peer("bob"); p != "alice" {
		t.Errorf("Peer(bob) = %q", p)
	}
	// Membership of groups and gateways lives in the store, never here.
	for _, s := range []string{"g:alice", "g:x", "biz:shop"} {
		c, ok := protocol.ParseConv(s)
		if !ok {
			t.Fatalf("%s does not parse", s)
		}
		for _, user := range []string{"", "alice", "x", "shop"} {
			if c.HasMember(user) {
				t.Errorf("%s.HasMember(%q) = true", s, user)
			}
		}
	}
	if (protocol.Conv{}).HasMember("") {
		t.Error("the zero Conv has member \"\"")
	}
}

func TestConvStringAndKinds(t *testing.T) {
	tests := []struct {
		c    protocol.Conv
		want string
	}{
		{protocol.Conv{Kind: protocol.ConvDirect, A: "alice", B: "bob"}, "d:alice:bob"},
		{protocol.Conv{Kind: protocol.ConvGroup, Name: "x"}, "g:x"},
		{protocol.Conv{Kind: protocol.ConvBiz, Name: "shop"}, "biz:shop"},
		{protocol.Conv{}, ""},
		{protocol.Conv{Kind: 99, Name: "x"}, ""},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.c, got, tt.want)
		}
	}
	kinds := map[protocol.ConvKind]string{
		protocol.ConvDirect: "direct", protocol.ConvGroup: "group", protocol.ConvBiz: "biz",
		0: "unknown", 42: "unknown",
	}
	for k, want := range kinds {
		if got := k.String(); got != want {
			t.Errorf("ConvKind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
	if g := protocol.GroupConv("01J"); g != "g:01J" {
		t.Errorf("GroupConv = %q", g)
	}
	if c, ok := protocol.ParseConv(protocol.GroupConv("team_1")); !ok || c.Kind != protocol.ConvGroup || c.Name != "team_1" {
		t.Errorf("GroupConv does not parse back: %#v, %v", c, ok)
	}
}

func randomUser(r *rand.Rand) string {
	const first = "abcdefghijklmnopqrstuvwxyz0123456789"
	const rest = first + "_.-"
	b := []byte{first[r.IntN(len(first))]}
	for range r.IntN(protocol.MaxUserLen) {
		b = append(b, rest[r.IntN(len(rest))])
	}
	return string(b)
}

// DirectConv, ParseConv, String, HasMember and Peer agree on random users.
func TestDirectConvProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for range 5000 {
		a, b := randomUser(r), randomUser(r)
		if r.IntN(8) == 0 {
			b = a[:1+r.IntN(len(a))] // shares a prefix with a, often equal
		}
		if !protocol.ValidUser(a) || !protocol.ValidUser(b) {
			t.Fatalf("generator made an invalid user: %q %q", a, b)
		}
		ab, ok1 := protocol.DirectConv(a, b)
		ba, ok2 := protocol.DirectConv(b, a)
		if ab != ba || ok1 != ok2 {
			t.Fatalf("DirectConv(%q,%q) = %q,%v but reversed %q,%v", a, b, ab, ok1, ba, ok2)
		}
		if a == b {
			if ok1 {
				t.Fatalf("DirectConv(%q,%q) accepted a self chat", a, b)
			}
			if _, ok := protocol.ParseConv("d:" + a + ":" + b); ok {
				t.Fatalf("ParseConv accepted self chat of %q", a)
			}
			continue
		}
		if !ok1 {
			t.Fatalf("DirectConv(%q,%q) failed", a, b)
		}
		c, ok := protocol.ParseConv(ab)
		if !ok || c.Kind != protocol.ConvDirect || c.String() != ab || c.A >= c.B {
			t.Fatalf("ParseConv(%q) = %#v, %v", ab, c, ok)
		}
		if !c.HasMember(a) || !c.HasMember(b) || c.Peer(a) != b || c.Peer(b) != a {
			t.Fatalf("%q: members/peers wrong for %q, %q", ab, a, b)
		}
		lo, hi := min(a, b), max(a, b)
		if _, ok := protocol.ParseConv("d:" + hi + ":" + lo); ok {
			t.Fatalf("ParseConv accepted reversed d:%s:%s", hi, lo)
		}
	}
}

func TestGatewayConv(t *testing.T) {
	conv := protocol.GatewayConv("shop")
	if conv != "biz:shop" {
		t.Fatalf("GatewayConv(shop) = %q", conv)
	}
	if name, ok := protocol.IsGateway(conv); !ok || name != "shop" {
		t.Fatalf("IsGateway(%q) = %q, %v", conv, name, ok)
	}
	if c, ok := protocol.ParseConv(conv); !ok || c.Kind != protocol.ConvBiz || c.String() != conv {
		t.Fatalf("ParseConv(%q) = %+v, %v", conv, c, ok)
	}
	for _, other := range []string{"d:alice:bob", "g:biz:x", "bizshop", ""} {
		if _, ok := protocol.IsGateway(other); ok {
			t.Errorf("IsGateway(%q) is true", other)
		}
	}
}
