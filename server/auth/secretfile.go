package auth

import (
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// LoadSecretFile reads a signing secret every node of a deployment shares
// (hex, at least 16 bytes, as in the data directory's secret file). It is
// never created here: nodes that each made their own would refuse each
// other's tokens.
func LoadSecretFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("token secret file %s does not exist: create it once for every node (for instance: openssl rand -hex 32 > %s; chmod 600 %s)", path, path, path)
		}
		return nil, fmt.Errorf("read token secret: %w", err)
	}
	secret, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(secret) < 16 {
		return nil, fmt.Errorf("%s is not a valid secret (want hex, at least 16 bytes)", path)
	}
	return secret, nil
}
