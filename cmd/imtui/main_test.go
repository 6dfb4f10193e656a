package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/imcore/im/client"
)

// TestEngineErrorsNameTheFlag checks that the reasons the client stops for
// good (a refused token, a token given to a dev server, a URL that is not
// the WebSocket endpoint) tell the user which flag to change.
func TestEngineErrorsNameTheFlag(t *testing.T) {
	o := options{server: "ws://127.0.0.1:7070/wrong", token: "v1:alice:1:x"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: answered HTTP 404", client.ErrNoEndpoint), "-server ws://127.0.0.1:7070/wrong is not imserver's WebSocket endpoint"},
		{fmt.Errorf("%w (the server said: user must be 1-32 characters)", client.ErrNeedsUser), "this server uses -user, not -token"},
		{errors.New("hello refused: unauthorized: token expired"), "the server refused this client: hello refused: unauthorized: token expired"},
	} {
		if got := engineError(tc.err, o).Error(); !strings.Contains(got, tc.want) {
			t.Errorf("engineError(%v) = %q, want it to say %q", tc.err, got, tc.want)
		}
	}
}
