package tui

import (
	"image/color"
	"math"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// contrast is the WCAG contrast ratio of two colours, 1 to 21.
func contrast(a, b color.Color) float64 {
	lum := func(c color.Color) float64 {
		r, g, bl, _ := c.RGBA()
		ch := func(v uint32) float64 {
			f := float64(v>>8) / 255
			if f <= 0.03928 {
				return f / 12.92
			}
			return math.Pow((f+0.055)/1.055, 2.4)
		}
		return 0.2126*ch(r) + 0.7152*ch(g) + 0.0722*ch(bl)
	}
	la, lb := lum(a), lum(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// TestLightPaletteIsReadable checks the light theme's contrast on a light
// terminal: text at least 7:1 on every background it is drawn on (WCAG
// AAA), the secondary colours (times, ticks, marks, errors) at least 3:1.
// The dark theme's text keeps 4.5:1 (AA) on its own backgrounds.
func TestLightPaletteIsReadable(t *testing.T) {
	white := color.RGBA{0xff, 0xff, 0xff, 0xff}
	p := lightPalette
	for name, bg := range map[string]color.Color{"terminal": white, "own bubble": p.ownBg, "other bubble": p.otherBg, "bar": p.barBg, "selection": p.selBg} {
		if c := contrast(p.text, bg); c < 7 {
			t.Errorf("light: text on the %s: %.2f:1", name, c)
		}
		for fg, col := range map[string]color.Color{"dim": p.dim, "read": p.read, "accent": p.accent, "error": p.err, "warning": p.warn} {
			if c := contrast(col, bg); c < 3 {
				t.Errorf("light: %s on the %s: %.2f:1", fg, name, c)
			}
		}
	}
	d := darkPalette
	for name, bg := range map[string]color.Color{"own bubble": d.ownBg, "other bubble": d.otherBg, "bar": d.barBg, "selection": d.selBg} {
		if c := contrast(d.text, bg); c < 4.5 {
			t.Errorf("dark: text on the %s: %.2f:1", name, c)
		}
	}
}

// sgrRGB is the true-colour SGR parameters of c as a foreground (38) or
// background (48).
func sgrRGB(layer int, c color.Color) string {
	r, g, b, _ := c.RGBA()
	return strings.Join([]string{itoa(int64(layer)), "2", itoa(int64(r >> 8)), itoa(int64(g >> 8)), itoa(int64(b >> 8))}, ";")
}

// TestThemeFollowsTheTerminal checks the theme: -theme light draws with the
// light palette; without a choice the terminal's answer to the background
// query decides, a light background giving the light palette.
func TestThemeFollowsTheTerminal(t *testing.T) {
	lightBubble := sgrRGB(48, lightPalette.ownBg)
	lightText := sgrRGB(38, lightPalette.text)
	darkBubble := sgrRGB(48, darkPalette.ownBg)

	h := newHarnessOpts(t, tickFixture(), 100, 40, Options{Theme: "light"})
	openBob(h)
	if l := h.rawLineWith("read one"); !strings.Contains(l, lightBubble) || !strings.Contains(l, lightText) {
		t.Errorf("-theme light: the bubble is not drawn in the light palette: %q", l)
	}
	// A forced theme ignores the terminal's background.
	h.send(tea.BackgroundColorMsg{Color: color.Black})
	if l := h.rawLineWith("read one"); !strings.Contains(l, lightBubble) {
		t.Errorf("-theme light changed on a dark background: %q", l)
	}

	h = newHarness(t, tickFixture(), 100, 40)
	openBob(h)
	if l := h.rawLineWith("read one"); !strings.Contains(l, darkBubble) {
		t.Errorf("before the terminal answers, the theme should be dark: %q", l)
	}
	h.send(tea.BackgroundColorMsg{Color: color.RGBA{0xfa, 0xfa, 0xfa, 0xff}})
	if l := h.rawLineWith("read one"); !strings.Contains(l, lightBubble) || !strings.Contains(l, lightText) {
		t.Errorf("a light background did not give the light palette: %q", l)
	}
	h.checkGeometry()
	h.send(tea.BackgroundColorMsg{Color: color.RGBA{0x10, 0x10, 0x10, 0xff}})
	if l := h.rawLineWith("read one"); !strings.Contains(l, darkBubble) {
		t.Errorf("a dark background did not give the dark palette: %q", l)
	}
}

// TestProgramNoColorTicks runs the program in a terminal with NO_COLOR set:
// read and delivered ticks, which only their colour tells apart otherwise,
// have different glyphs.
func TestProgramNoColorTicks(t *testing.T) {
	env := []string{"TERM=xterm-256color", "TTY_FORCE=1", "NO_COLOR=1"}
	p := startProgramIn(t, tickFixture(), 100, 30, env, Options{})
	p.waitScreen("▌👥 team")
	p.press("j", "j", "enter")
	sn := p.waitScreen("pending one", "read one", glyphReadPlain)
	for body, glyph := range map[string]string{"read one": glyphReadPlain, "delivered one": glyphDelivered, "sent one": glyphSent, "pending one": glyphPending} {
		for _, l := range strings.Split(sn.screen, "\n") {
			if strings.Contains(l, body) && !strings.HasSuffix(strings.TrimRight(l, " "), " "+glyph) {
				t.Errorf("%q should end in %q: %q", body, glyph, l)
			}
		}
	}
	if glyphReadPlain == glyphDelivered {
		t.Fatal("read and delivered share a glyph")
	}
	golden.RequireEqual(t, sn.screen)
	p.f.Emit(client.TicksChanged{Conv: bob, Ticks: protocol.Ticks{DeliveredSeq: 15, ReadSeq: 15}})
	p.s.waitFor(t, "sent one read", func(sn snapshot) bool {
		for _, l := range strings.Split(sn.screen, "\n") {
			if strings.Contains(l, "sent one") {
				return strings.HasSuffix(strings.TrimRight(l, " "), glyphReadPlain)
			}
		}
		return false
	})
	p.finish()
}
