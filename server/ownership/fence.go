package ownership

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Fence is the fencing token of a shard's lease: the shard and the epoch
// its holder took it at. Epochs only rise, one per taking, so a write
// carrying a lower epoch than the one stored comes from a node that lost
// the shard since.
type Fence struct {
	Shard Shard
	Epoch int64
}

// ErrFenced is returned by a fenced write refused because a newer owner
// took the shard.
var ErrFenced = errors.New("ownership: refused, a newer owner took the shard")

// fencedSet sets KEYS[2] to ARGV[2] only while KEYS[1], the shard's
// epoch, is still ARGV[1]: no node took the shard after the writer.
var fencedSet = redis.NewScript(`
if tonumber(redis.call('GET', KEYS[1]) or '0') ~= tonumber(ARGV[1]) then
	return 0
end
redis.call('SET', KEYS[2], ARGV[2])
return 1`)

// SetFenced sets key to value in Redis only while f's epoch is still the
// shard's: ErrFenced when another node took the shard since. It is how
// the holder of a lease writes what lives in Redis; its check and its
// write are one step (a script), so no taking can fall between them.
func (l *Leases) SetFenced(ctx context.Context, f Fence, key, value string) error {
	ok, err := fencedSet.Run(ctx, l.rdb, []string{l.EpochKey(f.Shard), key}, strconv.FormatInt(f.Epoch, 10), value).Int()
	if err != nil {
		return fmt.Errorf("fenced write of %s: %w", key, err)
	}
	if ok == 0 {
		return ErrFenced
	}
	return nil
}
