package server_test

import (
	"net/http"
	"strconv"
	"testing"
)

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func itoa(n int) string { return strconv.Itoa(n) }
