package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadSecretFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	if _, err := LoadSecretFile(missing); err == nil || !strings.Contains(err.Error(), "openssl rand -hex 32") {
		t.Fatalf("missing file: err = %v, want one saying how to create it", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a missing secret file was created: %v", err)
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abcd\n"), 0o600)
	if _, err := LoadSecretFile(short); err == nil {
		t.Fatal("a 2-byte secret was accepted")
	}
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	secret, err := LoadSecretFile(good)
	if err != nil || len(secret) != 32 || secret[0] != 0xab {
		t.Fatalf("good file: %x, %v", secret, err)
	}
}
