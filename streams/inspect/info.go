package inspect

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// InfoNumbers returns the numeric fields of the INFO sections asked for ("memory",
// "cpu", ...), read with go-redis's InfoMap: used_memory, maxmemory, used_cpu_user,
// total_commands_processed, ... Fields that are not numbers are left out; read those
// with InfoMap itself.
func InfoNumbers(ctx context.Context, c redis.Cmdable, sections ...string) (map[string]float64, error) {
	info, err := c.InfoMap(ctx, sections...).Result()
	if err != nil {
		return nil, fmt.Errorf("inspect: info: %w", err)
	}
	out := map[string]float64{}
	for _, fields := range info {
		for k, v := range fields {
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				out[k] = x
			}
		}
	}
	return out, nil
}
