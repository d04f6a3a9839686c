package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/streamcrawl/streamcrawl/handlers"
)

// faultEnv names the test-only fault hook: "STAGE:N" makes the process exit abruptly
// (status 137, no cleanup, like kill -9) when the stage is about to ack its Nth message,
// after that message's output is already in Redis. Tests use it to prove that such a
// crash yields a duplicate, never a loss.
const faultEnv = "STREAMCRAWL_FAULT_CRASH_BEFORE_ACK"

// The fault hook exists in test builds only: the tests run this test binary as the
// streamcrawl binary (see TestMain), and the shipped binary never reads faultEnv.
func init() { installFault = installFaultFromEnv }

// installFaultFromEnv sets the fault hook on cfg when faultEnv asks for it.
func installFaultFromEnv(cfg *handlers.Options) error {
	spec := os.Getenv(faultEnv)
	if spec == "" {
		return nil
	}
	stage, nStr, ok := strings.Cut(spec, ":")
	n, err := strconv.Atoi(nStr)
	if !ok || err != nil || n < 1 {
		return fmt.Errorf("%s=%q: want STAGE:N", faultEnv, spec)
	}
	var count atomic.Int64
	cfg.BeforeAck = func(stg string, _ *message.Message) {
		if stg == stage && count.Add(1) == int64(n) {
			fmt.Fprintf(os.Stderr, "fault hook: %s crashing before ack #%d\n", stage, n)
			os.Exit(137)
		}
	}
	return nil
}
