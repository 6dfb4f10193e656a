package main

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// The command name may hold spaces and parentheses.
	stat := "4242 (im server) (x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 70 0 0 20 0 12 0 5000 1000000 3000 18446744073709551615\n"
	got, err := parseStatCPU([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if want := 320 * time.Second / userHZ; got != want {
		t.Fatalf("got %v, want %v (utime 250 + stime 70 ticks)", got, want)
	}
	if _, err := parseStatCPU([]byte("4242 (short) S 1 2")); err == nil {
		t.Fatal("a short stat line must fail")
	}
}

func TestParseVmRSS(t *testing.T) {
	status := "Name:\timserver\nVmPeak:\t  900000 kB\nVmRSS:\t   97812 kB\nThreads:\t12\n"
	got, err := parseVmRSS([]byte(status))
	if err != nil || got != 97812 {
		t.Fatalf("got %d, %v; want 97812", got, err)
	}
	if _, err := parseVmRSS([]byte("Name:\tx\n")); err == nil {
		t.Fatal("no VmRSS line must fail")
	}
}

func TestReadProcSelf(t *testing.T) {
	p, err := readProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.RSSKiB <= 0 {
		t.Fatalf("own RSS %d KiB", p.RSSKiB)
	}
	s := startSampler(os.Getpid(), time.Hour)
	s.sample()
	if maxRSS, err := s.close(); err != nil || maxRSS <= 0 {
		t.Fatalf("sampler: max RSS %d, %v", maxRSS, err)
	}
}
